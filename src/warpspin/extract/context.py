"""State shared by the walkers of one kernel (`Context`: launch parameters, mbarrier arrays,
shared words, buffers, global counters and flags, what a verdict assumes) and the
kernel-wide analyses it starts from (values that vary between threads, kernel arguments
written), with the helpers the walker and its rules share.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

from ..frontend.locations import SYNC_LABEL
from ..frontend.mlir_data import Op, SourceLoc, TracedKernel
from ..syncir.ir import FlagDecl, Expr, Loc, Var
from . import cute_types as ct
from .accumulators import accumulators
from .values import Alloc, Stage, View


INT_TYPES = {"i1", "i8", "i16", "i32", "i64", "index"}


def _may_be_gmem(t: str) -> bool:
    """A global tensor or pointer, or a generic pointer (which may point to global memory)."""
    return "gmem" in t or t.startswith("!llvm.ptr<1>") or t == "!llvm.ptr" or "generic" in t


# ops that keep the memory a global tensor or pointer views (for `Context.gmem_root`)
GMEM_VIEWS = {"cute.get_iter", "cute.add_offset", "cute.make_view", "cute.slice", "cute.local_tile",
              "cute.recast_iter", "cute.derefine", "cute.assume", "cute.make_ptr", "cute.recast_layout",
              "cute.composition", "cute.logical_divide", "cute.zipped_divide", "cute.tiled_divide",
              "cute.flat_divide", "cute.group_modes", "cute.domain_offset"}
# a thread's part of a tensor (its operand 1): the same memory
THREAD_PARTITIONS = {"cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D",
                     "cute.tiled.mma.partition"}
# ops that compute addresses or layouts of global memory without accessing it
# (`Context.global_data_why`)
GLOBAL_ADDRESS_OPS = {"builtin.unrealized_conversion_cast", "cute.ptrtoint", "llvm.ptrtoint",
                      "cute.get_layout", "cute.get_shape", "cute.get_stride",
                      "cute_nvgpu.atom.set_value"}  # (an atom's field: a descriptor's address)
GLOBAL_ADDRESS_PREFIXES = ("cute.get_", "cute.size", "cute.cosize")
# op names that may write global memory (besides stores and copies, which are attributed)
GMEM_WRITERS = re.compile(r"atomic|\batom|\bred\b|store|st_bulk|cp\.async\.bulk\.global|"
                          r"tma_store|reduce\.async|tensormap")


MAX_LANE_SPLIT = 8  # a lane-dependent body run by at most this many lanes is expanded per lane


def to_loc(sl: SourceLoc) -> Loc:
    return Loc(sl.file or "<unknown>", sl.line or 0, sl.lib_frame, sync_label(sl))


_DSL_LABEL = re.compile(r"^([\w.]+\.\w+):\w+$")       # "ab.full:wait" (pipeline name=)


def sync_label(sl: SourceLoc) -> Optional[str]:
    """The pipeline barrier an op names, as the user's code names it: the pipeline's own label
    ("ab.full", from `name="ab"`), else the pipeline class and role the frontend found in the
    library's call chain ("PipelineTmaAsync(full)", frontend.locations.sync_object)."""
    for lab in sl.labels:
        m = _DSL_LABEL.match(lab)
        if m:
            return m.group(1)
    for lab in sl.labels:
        if lab.startswith(SYNC_LABEL):
            return lab[len(SYNC_LABEL):]
    return None


# the names the walker gives locals (loop counters, carried state, bound values, if results,
# while state, probe results); a param never takes one of them
LOCAL_NAME = re.compile(r"(k|c|v|r|w|wc|wf|t)\d+(_\d+)?(_next)?")


def _pointer_name(k: TracedKernel, vid: int) -> Optional[str]:
    """`tile_count_semaphore` for a pointer made on a line `params.tile_count_semaphore.llvm_ptr`."""
    import linecache

    info = k.value_info.get(vid)
    op = info.op if info is not None and not info.is_block_arg else None
    if op is None or not op.loc.file:
        return None
    m = re.search(r"([A-Za-z_]\w*)\.(?:llvm_ptr|iterator)\b", linecache.getline(op.loc.file, op.loc.line))
    return m.group(1) if m else None


def _ident(s: str) -> str:
    s = re.sub(r"\W+", "_", s).strip("_")
    return s if s and not s[0].isdigit() and not LOCAL_NAME.fullmatch(s) else f"p_{s}"


# special registers with one value in every thread of the modelled cluster
UNIFORM_SREGS = re.compile(r"(ntid|nctaid|nclusterid|clusterid|cluster\.nctaid)\.[xyz]|"
                           r"cluster\.nctarank|warpsize")
# ops whose results are launch values when their operands are: no memory, no warp-collective, no
# thread identity, no clock.  Everything else (loads, atomics, shuffles, votes, other nvvm ops)
# is a per-thread, per-moment value.
PURE_PREFIXES = ("arith.", "math.", "index.", "vector.", "cute.", "cute_nvgpu.", "builtin.",
                 "llvm.", "scf.")
IMPURE_NAMES = re.compile(r"load|store|atomic|\batom|rmw|cmpxchg|shfl|vote|match|redux|"
                          r"alloc|copy|memref|prefetch|tma|ldmatrix|stmatrix|smem|tmem|gemm")
ASM_PURE_BLOCKERS = re.compile(r"\bld\.|\bst\.|\batom|\bred\.|shfl|vote|match|redux|%clock|"
                               r"%globaltimer|%smid|%warpid|%laneid|%tid|%ctaid|%cluster|"
                               r"activemask|lanemask|mbarrier|\bbar\.|barrier|fence|cp\.|"
                               r"tensormap|elect|setmaxnreg|exit|tcgen05|wgmma|griddep|ldmatrix|"
                               r"stmatrix|mapa|getctarank", re.I)


def _impure(op: Op, cluster: tuple[int, int, int]) -> bool:
    if op.name in ("llvm.inline_asm", "nvvm.inline_ptx"):
        return bool(ASM_PURE_BLOCKERS.search(str(op.attrs.get("asm_string")
                                                 or op.attrs.get("ptxCode") or "")))
    if op.name.startswith("nvvm.read.ptx.sreg."):
        reg = op.name[len("nvvm.read.ptx.sreg."):]
        if UNIFORM_SREGS.fullmatch(reg):
            return False
        # the block index (and the CTA's place in its cluster) in a dimension where the cluster
        # has one CTA is the same for every CTA of the modelled cluster
        m = re.fullmatch(r"(ctaid|cluster\.ctaid)\.([xyz])", reg)
        if m and cluster["xyz".index(m.group(2))] == 1:
            return False
        return not (reg == "cluster.ctarank" and cluster == (1, 1, 1))
    if not op.name.startswith(PURE_PREFIXES) or op.name == "nvvm.elect.sync":
        return True
    return bool(IMPURE_NAMES.search(op.name)) and op.name not in ("cute.memref.alloca",)


def varying_values(k: TracedKernel) -> tuple[set[int], set[int]]:
    """(values that may differ between the threads of the modelled cluster, uids of impure ops).

    Sources: the results of impure ops (thread identity, memory, collectives, clocks).  A value
    varies when any value it is computed from varies; through regions, an op's results and its
    regions' block arguments depend on its operands and on what its regions yield."""
    ops = list(k.walk())
    cluster = k.cluster_dim or (1, 1, 1)
    impure = {o.uid for o in ops if _impure(o, cluster)}
    varying: set[int] = set()
    for o in ops:
        if o.uid in impure:
            varying.update(o.results)
    # edges: value -> values computed from it
    succ: dict[int, list[int]] = {}

    def edge(a: int, b: int) -> None:
        succ.setdefault(a, []).append(b)

    for o in ops:
        outs = list(o.results)
        for r in o.regions:
            for b in r.blocks:
                outs.extend(b.args)
        for a in o.operands:
            for b in outs:
                edge(a, b)
        for r in o.regions:
            for b in r.blocks:
                for t in b.ops:
                    if t.name in ("scf.yield", "scf.condition"):
                        for a in t.operands:
                            for x in outs:
                                edge(a, x)
    todo = list(varying)
    while todo:
        v = todo.pop()
        for w in succ.get(v, ()):
            if w not in varying:
                varying.add(w)
                todo.append(w)
    return varying, impure


def cluster_coord(k: TracedKernel, cta: int, d: str) -> int:
    """%cluster_ctaid.d of the CTA of rank ``cta``; the cluster rank is x-fastest:
    x + y*cx + z*cx*cy."""
    cx, cy, _ = k.cluster_dim or (1, 1, 1)
    return {"x": cta % cx, "y": (cta // cx) % cy, "z": cta // (cx * cy)}[d]


@dataclass
class ParamInfo:
    name: str
    what: str
    loc: Loc
    default: Optional[tuple[int, int]] = None
    at_least: Optional[int] = None   # a divisor: a value below this is no launch the model covers
    alias: Optional[str] = None      # another name a value may be given by (argN: its position)


# names a launch parameter is given by identity (a kernel argument's position, the cluster
# index, the CLC pool); a computed value is never named so
IDENTITY_NAME = re.compile(r"arg\d+|n?clusterid_[xyz]|clc_pool")


@dataclass
class Context:
    """State shared by the walkers of one kernel: launch parameters and mbarrier arrays."""

    kernel: TracedKernel
    params: dict[str, ParamInfo] = field(default_factory=dict)
    given: Mapping = field(default_factory=dict)  # the launch values given (--param)
    arrays: dict[tuple[int, int], tuple[str, int, Loc]] = field(default_factory=dict)
    tma_split: dict[int, int] = field(default_factory=dict)  # TMA atom value -> CTAs sharing a box
    _by_key: dict = field(default_factory=dict)
    _operands: Optional[set] = None
    _written: Optional[tuple] = None
    # shared words: allocation uid -> [name, label, lowest word, end word, loc] of the words the
    # kernel loads and stores as values; every other write into shared memory, as
    # (allocation uid or None: unknown, byte range or None: anywhere, what)
    word_arrays: dict = field(default_factory=dict)
    smem_writes: list = field(default_factory=list)
    assumptions: set = field(default_factory=set)  # what a verdict on the kernel assumes
    counters: dict = field(default_factory=dict)  # global work counters (atom.inc): name -> decl
    clc_loads: set = field(default_factory=set)  # locals of CLC response loads (their first word)
    flags: dict = field(default_factory=dict)  # global flags (atom.add, spin loops): name -> decl
    # why the grid is not modelled CTA by CTA (None when it is: a grid model, build.py)
    grid_why: Optional[str] = "the model is one cluster"
    # relaxed arrives (which order no earlier store), and whether a write was placed only by the
    # bytes of the tensor it was derived from
    relaxed_arrives: list = field(default_factory=list)  # (warp, what)
    derived_view_writes: bool = False
    # tensormaps rewritten in global memory: root pointer value -> (name, label, loc, address)
    tensormaps: dict = field(default_factory=dict)
    # staged buffers: Stage.buffer -> [name, label, loc]; which entries of smem_writes are the
    # staged accesses of which buffer; TMA stores whose source is no stage the model follows
    buffers: dict = field(default_factory=dict)
    staged_writes: dict = field(default_factory=dict)  # smem_writes index -> buffer name
    # every access (read or write) of shared memory by an op that is not a view of it:
    # (allocation uid, byte range, what); which of them are staged accesses of which buffer
    smem_uses: list = field(default_factory=list)
    staged_uses: dict = field(default_factory=dict)  # smem_uses index -> buffer name
    unstaged_stores: list = field(default_factory=list)  # (loc, why)
    # writes of data into shared memory by threads: (index in smem_writes, loc)
    data_writes: list = field(default_factory=list)
    # plain shared tensors (no stage mode) that TMA stores read or TMA loads fill through element
    # 0 of their barrier array: (allocation uid, lo, hi) found by a first walk, and the ones a
    # second walk follows as buffers of one stage
    plain_found: set = field(default_factory=set)
    data_explained: set = field(default_factory=set)  # smem_writes indices of followed shared data
    data_why: dict = field(default_factory=dict)  # allocation uid -> why its data is not followed
    plain_buffers: frozenset = frozenset()
    unchecked: list = field(default_factory=list)  # Unchecked: properties not followed
    # outside grid models: the element accesses of written kernel arguments placed for
    # extract/ownership.py, and the ops writing global memory whose rule modelled or placed
    # the write (the other writers walked: op uid -> (kernel argument or None, what, loc))
    global_accesses: list = field(default_factory=list)
    gmem_settled: set = field(default_factory=set)
    gmem_recorded: set = field(default_factory=set)  # ops that recorded a GlobalAccess
    gmem_unplaced: dict = field(default_factory=dict)
    gmem_writers: dict = field(default_factory=dict)  # written_gmem: op uid -> argument or None
    flag_roots: dict = field(default_factory=dict)  # global flag name -> its kernel argument
    _flag_words: Optional[set] = None
    cp_partitions: dict = field(default_factory=dict)  # buffer name -> thread partitions used
    # buffer name -> (partition, "copy" | "read" | "write", loc) of each access through one
    cp_uses: dict = field(default_factory=dict)
    cp_shared: dict = field(default_factory=dict)  # buffer name -> locs of its shared reads
    alloc_fields: dict = field(default_factory=dict)  # allocation uid -> its struct fields
    alloc_names: dict = field(default_factory=dict)  # allocation uid -> `sX` of `sX = ...alloc...`
    # TMEM buffers (extract/tmem.py): TmemStage.buffer -> [name, label, loc]; the TMEM accesses
    # not attributed to one of their stages (why, in order)
    tmem_buffers: dict = field(default_factory=dict)
    tmem_unattributed: list = field(default_factory=list)

    def buffer(self, stage: Stage, loc: Loc) -> str:
        """The name of the staged buffer `stage` is a stage of (declared at its first access)."""
        if stage.buffer not in self.buffers:
            name = f"buf{len(self.buffers)}"
            field_name = next((f for f, size, off in self.alloc_fields.get(stage.alloc, ())
                               if off <= stage.lo < off + size), None)
            self.buffers[stage.buffer] = [name, field_name or self.alloc_names.get(stage.alloc)
                                          or f"smem[{stage.lo}:{stage.hi}]", loc]
        return self.buffers[stage.buffer][0]

    def __post_init__(self):
        self.varying, self.impure_ops = varying_values(self.kernel)
        self.accumulators = accumulators(self.kernel)  # wgmma register accumulators
        self.descriptor_args = self._descriptor_args()
        self._reaches: dict = {}
        # tma_partition(atom, cta_coord, cta_layout, ...): each CTA of cta_layout loads its slice
        for op in self.kernel.ops_named("cute_nvgpu.atom.tma_partition"):
            shape = ct.layout_shape(op.operand_types[2]) if len(op.operand_types) > 2 else None
            n = ct.size(shape) if shape is not None else None
            if n and n > 1:
                self.tma_split[op.operands[0]] = n

    def _descriptor_args(self) -> frozenset:
        """The kernel arguments the kernel's TMA descriptor pointers are computed from (the
        pointers of tensormap ops and of TMA loads through a descriptor pointer)."""
        k, ptrs = self.kernel, []
        for op in k.walk():
            if op.name in ("cute_nvgpu.copy_tma_desc", "cute_nvgpu.update_tma_desc") and op.operands:
                ptrs.append(op.operands[-1])
            elif op.name == "cute_nvgpu.atom.set_value" and "tma_descriptor_ptr" in \
                    str(op.attrs.get("field", "")) and len(op.operands) > 1:
                ptrs.append(op.operands[1])
            elif op.name in ("llvm.inline_asm", "nvvm.inline_ptx") and "tensormap" in \
                    str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or ""):
                ptrs += op.operands
        return frozenset(a for v in ptrs for a in self.arguments_of(v))

    def arguments_of(self, v, limit: int = 2000) -> set:
        """The kernel arguments in the backward slice of value `v`."""
        k, out, todo, seen = self.kernel, set(), [v], set()
        while todo and len(seen) < limit:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            if k.arg_index(x) is not None:
                out.add(x)
            info = k.value_info.get(x)
            if info is not None and not info.is_block_arg and info.op is not None:
                todo += info.op.operands
        return out

    def writes_descriptor_memory(self, op: Op) -> bool:
        """Whether an op that may write global memory (a store, a copy, an atomic, inline PTX)
        has a global-memory operand computed from an argument a TMA descriptor pointer comes
        from: it may rewrite the descriptor in a way the model does not follow."""
        if not self.descriptor_args:
            return False
        for v, t in zip(op.operands, op.operand_types):
            if ", gmem" not in t and "llvm.ptr" not in t and not t.startswith("i64"):
                continue
            if v not in self._reaches:
                self._reaches[v] = bool(self.arguments_of(v) & self.descriptor_args)
            if self._reaches[v]:
                return True
        return False

    def param(self, key: str, what: str, loc: Loc, default=None, same_as=None,
              alias: Optional[str] = None) -> Var:
        """The launch parameter named after ``key``.  Without ``same_as`` the name is the
        identity (a kernel argument, the cluster index).  With it (a computed launch value),
        ``same_as`` is the identity: the same computation in two places (a producer and a
        consumer branch) is one parameter, and two different computations never share one even
        when they come from the same source line (the second gets a suffix)."""
        if same_as is None:
            name = _ident(key)
            if name in self._by_key.values():
                from .build import ExtractorBug
                raise ExtractorBug(self.kernel.name, [
                    f"launch parameter {name} ({what}) would merge with the computed value of "
                    f"that name ({self.params[name].what})"])
            if name not in self.params:
                self.params[name] = ParamInfo(name, what, loc, default)
            return Var(name)
        if same_as in self._by_key:
            return Var(self._by_key[same_as])
        base = name = _ident(key)
        if IDENTITY_NAME.fullmatch(base):
            base = name = f"{base}_value"
        n = 1
        while name in self.params or name in self.identities:
            n += 1
            name = f"{base}_{n}"
        self.params[name] = ParamInfo(name, what, loc, default, alias=alias)
        self._by_key[same_as] = name
        return Var(name)

    @property
    def identities(self) -> set[str]:
        """The names kernel arguments are given by (registered before any computed value)."""
        return {_ident(a.name) for a in self.kernel.args
                if a.type in INT_TYPES and a.name and re.fullmatch(r"\w+", a.name)}

    def divisor(self, d: Expr) -> None:
        """`d` divides: a launch parameter in it must be given values of at least 1."""
        if isinstance(d, Var) and d.name in self.params:
            self.params[d.name].at_least = 1

    def gmem_root(self, vid: int, depth: int = 0) -> Optional[int]:
        """The kernel argument a global memref or pointer value views (through view ops that
        keep the memory: iterators, offsets, slices, tiles), or None."""
        info = self.kernel.value_info.get(vid)
        if info is None or depth > 30:
            return None
        if info.is_block_arg:
            return info.index if info.region == -1 else None
        op = info.op
        if op is not None and op.operands and op.name in GMEM_VIEWS:
            return self.gmem_root(op.operands[0], depth + 1)
        if op is not None and len(op.operands) > 1 and op.name in THREAD_PARTITIONS:
            return self.gmem_root(op.operands[1], depth + 1)  # (operand 0: the tiled copy or MMA)
        return None

    def pointer_root(self, vid: Optional[int]) -> Optional[int]:
        """The kernel argument a global tensor or pointer views, through casts of the pointer
        (an LLVM pointer cast from a cute pointer), or None."""
        while vid is not None:
            info = self.kernel.value_info.get(vid)
            if info is None or info.is_block_arg or info.op is None \
                    or info.op.name != "builtin.unrealized_conversion_cast":
                break
            vid = info.op.operands[0]
        return self.gmem_root(vid) if vid is not None else None

    def global_data_why(self, root: int, settled: frozenset = frozenset(),
                        recorded: frozenset = frozenset()) -> Optional[str]:
        """Why kernel argument `root` is not followed as global data in a grid model (None: it
        may be): an op other than an element store or load (`cute.memref.store` / `load`) may
        access it, or an op may access global memory not attributed to an argument. Views and
        address computations access nothing; a flag's atomics and spin loads access the flag's
        argument; `settled`: ops whose rules modelled what they write (a DSMEM store through an
        address no argument roots), exempt from the second clause only; `recorded`: ops that
        recorded their accesses for extract/ownership.py (copies of a thread partition), as
        element stores and loads are. An allow-list."""
        for op in self.kernel.walk():
            mem = [vid for vid, t in zip(op.operands, op.operand_types) if _may_be_gmem(t)]
            if not mem or op.name in GMEM_VIEWS or op.name in THREAD_PARTITIONS or \
                    op.name in GLOBAL_ADDRESS_OPS or \
                    op.name.startswith(GLOBAL_ADDRESS_PREFIXES):
                continue
            roots = {self.pointer_root(v) for v in mem}
            where = f"{op.name}@{op.loc.short()}"
            if None in roots and op.uid not in settled:
                return f"{where} accesses global memory not attributed to a kernel argument"
            if root in roots and op.name not in ("cute.memref.store", "cute.memref.load") and \
                    op.uid not in recorded:
                return f"{where} may access it and is not an element store or load"
        return None

    def other_writer(self, root: int, what: str, changes: str) -> Optional[str]:
        """Why a word of kernel argument `root` that only the kernel's atomics may change (a
        counter or a flag: `what`, changed only by `changes`) is not modelled: the kernel stores
        to or copies into that argument, or writes global memory it cannot place (atomics
        aside: on an argument they are counters or flags, the others are Unsupported
        themselves); None when neither."""
        written, _ = self.written_gmem()
        if root in written:
            return (f"the kernel also stores to or copies into kernel argument {root} (only "
                    f"{changes} may change a {what})")
        unknown = self.unplaced_writers()
        if unknown:
            return (f"the kernel writes global memory it cannot place ({unknown[0]}), which may "
                    f"be the {what} (only {changes} may change a {what})")
        return None

    def descriptor_argument(self, atom: int) -> Optional[int]:
        """The kernel argument a TMA store's atom is (its descriptor, passed by value: the kernel
        cannot change it, so it writes the tensor the host made it from), or None (a
        descriptor read from memory, which the kernel may rewrite)."""
        info = self.kernel.value_info.get(atom)
        while info is not None and info.op is not None and \
                info.op.name == "cute_nvgpu.atom.make_exec_tma" and info.op.operands:
            info = self.kernel.value_info.get(info.op.operands[0])
        if info is not None and info.is_block_arg and info.region == -1 and \
                "non_exec_tiled_tma_" in info.type:
            return info.index
        return None

    def written_gmem(self) -> tuple[set[int], list[str]]:
        """(kernel arguments the kernel may write, ops that may write global memory we cannot
        attribute to an argument).  An allow-list: every op with an operand that may be global
        memory and is not a known reader (a load, a view, an address computation) may write it.
        Cached."""
        if self._written is None:
            from .walker import effects_of
            args: set[int] = set()
            unknown: list[str] = []
            writers = self.gmem_writers = {}
            for op in self.kernel.walk():
                where = f"{op.name}@{op.loc.short()}"
                dst = None
                if op.name == "cute.memref.store":
                    if not self._global_dst(op.operand_types[0]):
                        continue
                    dst = op.operands[0]
                elif op.name == "cute.memref.store_vec" and len(op.operands) > 1:
                    if ct.memref_space(op.operand_types[1]) in ("rmem", "smem"):
                        continue  # a vector into registers or shared memory
                    dst = op.operands[1]
                elif op.name == "cute.copy" and len(op.operands) > 2:
                    kind = ct.atom_kind(op.operand_types[0])
                    if kind in ("tma_store", "tma_reduce"):
                        desc = self.descriptor_argument(op.operands[0])
                        writers[op.uid] = desc
                        if desc is None:
                            unknown.append(where)
                        else:
                            args.add(desc)
                        continue
                    if kind == "bulk_copy_s2g":
                        writers[op.uid] = None
                        unknown.append(where)
                        continue
                    if len(op.operand_types) < 3 or \
                            not self._global_dst(op.operand_types[2]):
                        continue
                    dst = op.operands[2]
                elif op.name in ("llvm.inline_asm", "nvvm.inline_ptx"):
                    text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
                    if re.search(r"\bst\.|\batom|\bred\.|cp\.async\.bulk|tensormap", text):
                        writers[op.uid] = None
                        unknown.append(f"inline PTX@{op.loc.short()}")
                    continue
                elif effects_of(op).reads_only:
                    continue
                elif GMEM_WRITERS.search(op.name) or any(_may_be_gmem(t) for t in op.operand_types):
                    writers[op.uid] = None
                    unknown.append(where)
                    continue
                else:
                    continue
                root = self.gmem_root(dst)
                writers[op.uid] = root
                if root is None:
                    unknown.append(where)
                else:
                    args.add(root)
            self._written = (args, unknown)
        return self._written

    @staticmethod
    def _global_dst(type_str: str) -> bool:
        """A store's destination that may be global memory: a gmem tensor, or a generic one (a
        kernel argument's, or one the extractor cannot root: a write it cannot place)."""
        return "gmem" in type_str or ct.memref_space(type_str) == "generic"

    def flag_words(self) -> set:
        """(kernel argument, element offset) of every word a flag op names at a static offset:
        an atomic other than atom.inc, red, a load with a memory order (a spin loop's)."""
        if self._flag_words is None:
            words = set()
            for op in self.kernel.walk():
                kind = str(op.attrs.get("op", "")).rstrip(">")
                if op.name == "nvvm.atomicrmw" and not kind.endswith(" inc") or \
                        op.name == "nvvm.red" or \
                        op.name == "nvvm.load.ext" and op.attrs.get("order") is not None:
                    ptr = op.operands[0] if op.operands else None
                    root, at = self.pointer_root(ptr), self.word_offset(ptr)
                    if root is not None and at is not None:
                        words.add((root, at))
            self._flag_words = words
        return self._flag_words

    def only_data_atomics(self, root: int) -> bool:
        """Whether every op that touches kernel argument `root` is an element load or store, or
        an atom.add at a place that is no static word of it (an allow-list: a spin load, a lock,
        a counter's atom.inc, a flag's add at a static word, a copy, inline PTX: False), views
        and address computations aside: then no word of it is a flag or a counter."""
        for op in self.kernel.walk():
            if op.name in GMEM_VIEWS or op.name in GLOBAL_ADDRESS_OPS or \
                    op.name.startswith(GLOBAL_ADDRESS_PREFIXES):
                continue
            if not any(self.pointer_root(v) == root for v in op.operands):
                continue
            if op.name in ("cute.memref.load", "cute.memref.store"):
                continue
            kind = str(op.attrs.get("op", "")).rstrip(">")
            if op.name == "nvvm.atomicrmw" and kind.endswith(" add") and \
                    self.word_offset(op.operands[0]) is None:
                continue
            return False
        return True

    def flag_store_word(self, op: Op) -> Optional[tuple[int, int]]:
        """The flag word (`flag_words`) an `nvvm.store.ext` stores into, or None."""
        if op.name != "nvvm.store.ext" or len(op.operands) < 2:
            return None
        ptr = op.operands[1]
        word = (self.pointer_root(ptr), self.word_offset(ptr))
        return word if word in self.flag_words() else None

    def unplaced_writers(self, reader: Optional[int] = None) -> list[str]:
        """`written_gmem`'s writers it cannot attribute, as `op@line`, less the atomics and the
        stores into flag words (their own rules model or refuse them). With `reader`: those
        that may write kernel argument `reader`, less only the atomics and flag stores whose
        address is an element of another argument (they write only the word they name)."""
        self.written_gmem()
        out = []
        for op in self.kernel.walk():
            if self.gmem_writers.get(op.uid, 0) is not None:
                continue
            atomic = op.name in ("nvvm.atomicrmw", "nvvm.red")
            word = self.flag_store_word(op)
            if reader is None and (atomic or word is not None):
                continue
            elsewhere = atomic and op.operands and \
                self.pointer_root(op.operands[0]) not in (None, reader)
            if reader is not None and (elsewhere or word is not None and word[0] != reader):
                continue
            out.append(f"{op.name}@{op.loc.short()}")
        return out

    def word_array(self, view: View, loc: Loc) -> str:
        """The word array of `view`'s allocation, grown to cover the view."""
        if view.ptr.lin:
            lo, hi = view.byte_range
            return self.word_array_at(view.ptr.alloc, lo // 4, -(-hi // 4), loc)
        lo = view.ptr.const // 4
        return self.word_array_at(view.ptr.alloc, lo, lo + view.cosize, loc)

    def word_array_at(self, alloc: Alloc, lo: int, hi: int, loc: Loc) -> str:
        """The word array of `alloc`, grown to cover its words lo..hi-1."""
        info = self.word_arrays.get(alloc.uid)
        if info is None:
            label = next((f for f, size, off in alloc.fields if off <= 4 * lo < off + size), "")
            info = self.word_arrays[alloc.uid] = [f"sw{len(self.word_arrays)}", label, lo, hi, loc]
        info[2], info[3] = min(info[2], lo), max(info[3], hi)
        return info[0]

    def used(self, vid: int) -> bool:
        """Whether any op reads value `vid`."""
        if self._operands is None:
            self._operands = {o for op in self.kernel.walk() for o in op.operands}
        return vid in self._operands

    def word_offset(self, vid: Optional[int]) -> Optional[int]:
        """The element offset from its kernel argument's first element of a global pointer made
        by `get_iter` and `add_offset`s of static offsets (through casts), or None (another
        view, a dynamic offset, another element type)."""
        off, elem = 0, None
        for _ in range(40):
            info = self.kernel.value_info.get(vid) if vid is not None else None
            if info is None:
                return None
            if info.is_block_arg:
                return off if info.region == -1 else None
            op = info.op
            if op.name == "builtin.unrealized_conversion_cast" and op.operands:
                vid = op.operands[0]
                continue
            if op.name == "cute.get_iter" and op.operands:
                mine = re.match(r"!cute\.ptr<(\w+)", op.result_types[0] or "")
                return off if mine and elem in (None, mine.group(1)) else None
            if op.name != "cute.add_offset" or len(op.operands) != 2:
                return None
            step = re.fullmatch(r'!cute\.int_tuple<"(-?\d+)">', op.operand_types[1] or "")
            mine = re.match(r"!cute\.ptr<(\w+)", op.operand_types[0] or "")
            if step is None or mine is None or elem not in (None, mine.group(1)):
                return None
            elem = mine.group(1)
            off += int(step.group(1))
            vid = op.operands[0]
        return None

    def flag(self, root: int, pointer: int, loc: Loc) -> str:
        """The global flag at kernel argument `root`, element `word_offset(pointer)` (declared
        at its first use; the caller checked that the offset is static)."""
        at = self.word_offset(pointer)
        name = f"flag{root}" if not at else f"flag{root}_{at}"
        self.flag_roots[name] = root
        if name not in self.flags:
            label = _pointer_name(self.kernel, pointer) or f"kernel argument {root}"
            label = f"{label}[{at}]" if at else label
            self.flags[name] = FlagDecl(name, loc, label)
            self.assumptions.add(
                f"global flag {label} ({loc}): it holds 0 when the kernel starts, only this "
                "kernel's atomics and stores into it change it and no other kernel argument "
                "(nor the tensor a TMA descriptor argument was made from) aliases it; every CTA "
                "of the grid is resident at once (a CTA that spins on it while a CTA it waits "
                "for has no SM would wait forever)")
        return name

    def launch_uniform(self, op: Op) -> bool:
        """The op's results are the same in every thread of the modelled cluster: a pure op whose
        operands do not depend on which thread, warp or CTA computes them."""
        return op.uid not in self.impure_ops and not any(o in self.varying for o in op.operands)

    def vkey(self, vid: int, depth: int = 0):
        """Structural key of a value: kernel argument index, or (op, attributes, operand keys);
        None for block arguments other than the kernel's and for deep chains."""
        info = self.kernel.value_info.get(vid)
        if info is None or depth > 40:
            return None
        if info.is_block_arg:
            return ("arg", info.index) if info.region == -1 else None
        op = info.op
        keys = tuple(self.vkey(o, depth + 1) for o in op.operands)
        if any(k is None for k in keys):
            return None
        attrs = tuple(sorted((k, repr(v)) for k, v in op.attrs.items()))
        return (op.name, attrs, tuple(op.result_types), keys, info.index)

    def array(self, alloc: Alloc, byte_off: int, loc: Loc) -> Optional[tuple[str, int, int]]:
        """(array name, field offset, field size) holding ``byte_off`` of ``alloc``."""
        field_ = None
        for name, size, off in alloc.fields:
            if off <= byte_off < off + size:
                field_ = (name, off, size)
        if field_ is None:
            if alloc.fields or not alloc.size:
                return None
            field_ = (f"smem{alloc.uid}", 0, alloc.size)
        fname, off, size = field_
        key = (alloc.uid, off)
        if key not in self.arrays:
            taken = {n for n, _, _ in self.arrays.values()}
            name = _ident(fname)
            if name in taken:
                name = f"{name}_{alloc.uid}"
            self.arrays[key] = (name, size // 8, loc)
        return self.arrays[key][0], off, size
