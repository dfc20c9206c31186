"""Per-warp abstract evaluation of a traced kernel into SyncIR statements.

One ``WarpWalker`` runs the kernel body for one warp of one CTA with the thread ids folded
(``tid.x = 32*warp + lane``), so warp-uniform role predicates resolve to constants and the
untaken branches vanish.  What remains dynamic (loop counters, pipeline state, launch
parameters) becomes SyncIR ``Expr``s over locals and parameters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Optional

from ..frontend.mlir_data import Block, Op
from ..frontend.trace import describe_host
from ..syncir.ops import (CpAsync, CpAsyncCommit, CpAsyncWait, FenceProxyAsync, SmemOwn, SmemRead,
                          TmaStore, WgmmaCommit, WgmmaRead, MmaRead, WgmmaWait, WgmmaAcc, AccAccess,
                          WgmmaFence, TmemAccess, ADD_SEMANTICS, MEMORY_SCOPES, WAIT_SEMANTICS,
                          GlobalAdd, GlobalWait)
from ..syncir.ir import (Unchecked, AtomInc, Assign, CounterDecl, Const, Expr, For, If, Lanes, Loc,
                         MBarRef, Stmt, TmaLoad, Unsupported, Var, While, expr_vars, walk_stmts)
from . import cute_types as ct
from . import tmem
from .accumulators import accessed, wgmma_acc
from .cleanup import reads_var, subst_stmts
from .names import host_name, value_name
from .partitions import thread_partition
from .values import (ELECT, LANE, Atom, Folder, Region, SliceCoord, Stage, Unknown, Value, View,
                     lane_values, opaque_reasons, opaque)
from .context import (INT_TYPES, _memory_reader, MAX_LANE_SPLIT, to_loc, _pointer_name,
                      cluster_coord, Context)
from .rules.integers import CMP, ARITH, PASS_THROUGH
from .rules.views import _assigned_name
from .rules.asm import _one_st_async, tcgen05_mma_asm
from .rules.tensormaps import LANE_SUBSET
from .rules.tcgen05 import tmem_copy
from .rules import (integers, views, words, stages, mbarrier, barriers, asm, dsmem, tensormaps, clc,
                    tcgen05)

# re-exported: other modules and tests import these from here
__all__ = ["WarpWalker", "Active", "HANDLERS", "Context", "cluster_coord", "to_loc", "LANE_SUBSET",
           "_assigned_name", "tmem_copy", "tcgen05_mma_asm", "_one_st_async"]


# No effect in the SyncIR model (see docs/dsl-ir.md for why each is safe to drop).
IGNORED = {"nvvm.setmaxregister", "nvvm.bar.warp.sync",
           "cute_nvgpu.prefetch_tma_desc",
           "cute_nvgpu.arch.prefetch_tma_desc", "cuda.return", "func.return", "nvvm.nanosleep",
           # griddepcontrol waits for the previous grid, outside this kernel (assumed to finish)
           "nvvm.griddepcontrol"}
# Sync-relevant families the SyncIR cannot express yet: always an explicit Unsupported.
UNSUPPORTED_PREFIXES = (
    "nvvm.cluster.", "nvvm.cp.async", "nvvm.tcgen05", "cute_nvgpu.arch.sm100",
    "nvvm.clusterlaunchcontrol", "nvvm.store.async", "cute_nvgpu.update_tma_desc",
    "cute_nvgpu.copy_tma_desc", "nvvm.griddepcontrol", "nvvm.mbarrier.", "nvvm.barrier",
    "nvvm.fence.", "nvvm.elect", "cute_nvgpu.arch.alloc_smem", "cute_nvgpu.arch.get_dyn_smem",
)


# ops that may write global memory; one whose global operand shares a kernel argument with a
# descriptor pointer and that is not a tensormap op the extractor reads is Unsupported
GLOBAL_WRITE = re.compile(r"store|copy|atomic|\bred\b|inline_asm|inline_ptx|memset|memcpy")
TENSORMAP_OPS = {"cute_nvgpu.copy_tma_desc", "cute_nvgpu.update_tma_desc"}


# ops with a shared::cluster operand whose handler follows what they do to it
DSMEM_FOLLOWED = {"nvvm.store.async", "nvvm.mapa", "llvm.inline_asm", "nvvm.inline_ptx"}


# ops whose shared-memory result is a part of their staged operand's stage (a view, partition,
# tile or slice of it): the result keeps the stage (extract/values.py Stage)
STAGE_KEEPING = {"cute.get_iter", "cute.make_view", "cute.group_modes", "cute.slice",
                 "cute.mma.make_fragment", "cute_nvgpu.atom.tma_partition", "cute.filter_zeros",
                 "cute.logical_divide", "cute.zipped_divide", "cute.tiled_divide",
                 "cute.flat_divide", "cute.local_tile", "cute.local_partition",
                 "cute.tiled.copy.partition_D", "cute.tiled.copy.partition_S",
                 "cute.tiled.copy.retile", "cute.recast_iter"}


# global reads modelled as launch choices: at most this many elements one load may read, each in
# this range unless --param says otherwise
MAX_READ_ELEMENTS = 16
READ_RANGE = (0, 3)


def _subscripted_name(loc: Loc) -> Optional[str]:
    """`counts` for a load written `n = counts[e]` on its source line (one subscript there)."""
    import linecache

    names = re.findall(r"([A-Za-z_]\w*)\s*\[", linecache.getline(loc.file, loc.line)) if loc.file else []
    return names[0] if len(set(names)) == 1 else None


# llvm.fence's `ordering` (LLVM's AtomicOrdering numbers)
LLVM_ORDERINGS = {"2": "relaxed", "4": "acquire", "5": "release", "6": "acq_rel", "7": "seq_cst"}
UNSIGNED_PREDICATES = (6, 7, 8, 9)  # arith.cmpi ult, ule, ugt, uge
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _memory_order(op: Op, attr: str, default: str) -> str:
    """`relaxed`, `release`, ... of an nvvm memory-order attribute (#nvvm.mem_order<release>)."""
    m = re.search(r"<(\w+)>", str(op.attrs.get(attr) or ""))
    return m.group(1) if m else default


def _memory_scope(op: Op, attr: str) -> str:
    """`cta`, `cluster`, `gpu` or `sys` of an nvvm scope (#nvvm.mem_scope<gpu>) or an LLVM sync
    scope (block, cluster, device, or none: system); PTX's default for atomics is gpu."""
    raw = str(op.attrs.get(attr) or "")
    m = re.search(r"<(\w+)>", raw)
    if m:
        return m.group(1)
    if attr == "syncscope" and op.name == "llvm.fence":
        return {"block": "cta", "cluster": "cluster", "device": "gpu", "": "sys"}.get(
            raw.strip('"'), raw)
    return "gpu" if not raw else raw


def _narrower(a: str, b: str) -> str:
    return min(a, b, key=MEMORY_SCOPES.index) if a in MEMORY_SCOPES and b in MEMORY_SCOPES else a


@dataclass(frozen=True)
class Active:
    """Which lanes of the warp execute the statements being extracted: ``count`` of the lanes
    in ``lanes``.  ``count == len(lanes)``: exactly those lanes (a lane predicate);
    ``count < len(lanes)``: some of them, which ones unknown (inside ``elect.sync``, whose
    leader PTX leaves unspecified: "the same leader for the same member mask")."""

    lanes: frozenset
    count: int
    leader: Optional[int] = None  # inside elect.sync: the lane the model takes as elected

    @property
    def exact(self) -> bool:
        return self.count == len(self.lanes)


class WarpWalker(integers.IntegerRules, views.ViewRules, words.WordRules, stages.StageRules,
                 mbarrier.MbarrierRules, barriers.BarrierRules, asm.AsmRules, dsmem.DsmemRules,
                 tensormaps.TensormapRules, clc.ClcRules, tcgen05.Tcgen05Rules):
    def __init__(self, ctx: Context, warp: int, lanes: int, cta: int = 0,
                 grid_block: Optional[tuple[int, int, int]] = None):
        self.ctx, self.k = ctx, ctx.kernel
        self.warp, self.lanes, self.cta = warp, lanes, cta
        # in a grid model (CTAs of clusters of one), CTA `cta` of the model is block `grid_block`
        self.grid_block = grid_block
        self.rank = cta if grid_block is None else 0  # %cluster_ctarank
        self.fence_scope: Optional[str] = None  # a fence.acq_rel since the last global write
        self.f = Folder(lanes)
        self.active = Active(frozenset(range(lanes)), lanes)  # the whole warp
        self.env: dict[int, Value] = {}
        self.labels: list[str] = []
        self.ptr_stages: dict = {}  # pointer value -> (Stage, bytes) of the staged view it came from
        self.counters: dict[str, tuple[Expr, Expr]] = {}  # enclosing for-loop counters: bounds
        # the arguments named by identity first: a host-named one never takes their names
        for a in sorted(self.k.args, key=lambda a: a.host is not None and a.host[0] == "op"
                        and not (a.name and re.fullmatch(r"\w+", a.name))):
            if a.type in INT_TYPES:
                what = f"kernel argument {a.index} ({a.type})"
                if a.name:
                    what += f" = host `{a.name}`"
                elif a.host is not None:
                    what += f" = host `{describe_host(a.host)}`"
                ex = getattr(a, "example", None)
                default = None if ex is None else (ex, ex)
                if a.name and re.fullmatch(r"\w+", a.name):
                    self.env[a.value] = ctx.param(a.name, what, to_loc(self.k.loc), default)
                elif a.host is not None and a.host[0] == "op":
                    # named after the host's line; never merged with another argument
                    self.env[a.value] = ctx.param(host_name(a.host), what, to_loc(self.k.loc),
                                                  default, same_as=("arg", a.index),
                                                  alias=f"arg{a.index}")
                else:
                    self.env[a.value] = ctx.param(f"arg{a.index}", what, to_loc(self.k.loc),
                                                  default)
            else:
                self.env[a.value] = Unknown(f"arg{a.index}", uniform=True)

    # -- values ----------------------------------------------------------------------------
    def val(self, vid: int) -> Value:
        v = self.env.get(vid)
        return v if v is not None else Unknown(f"%{vid}")

    def expr(self, vid: int) -> Expr:
        v = self.val(vid)
        if isinstance(v, Expr):
            return v
        if v is ELECT:
            return opaque("elect.sync value")
        if isinstance(v, Unknown):
            return opaque(v.reason)
        return opaque(type(v).__name__.lower())

    def is_uniform(self, v: Value) -> bool:
        if isinstance(v, Expr):
            return all(n in self.ctx.params for n in expr_vars(v))
        if isinstance(v, SliceCoord):
            return all(self.is_uniform(x) for x in v.dynamic)
        return isinstance(v, Unknown) and v.uniform

    def loc(self, op: Op) -> Loc:
        return to_loc(op.loc)

    def origin(self, op: Op, leaf: int | None = None) -> str:
        """The name of the launch value `op` computes (leaf `leaf` of a shape): see names.py."""
        what = op.loc.lib_frame or op.name.split(".")[-1]
        return value_name(what, op.loc.func, leaf)

    def set_unknown_results(self, op: Op) -> None:
        """Results of an op we do not model: static ints from types, launch-uniform ints as
        parameters, everything else opaque."""
        operands = [self.val(o) for o in op.operands]
        uniform = all(self.is_uniform(v) for v in operands) and self.ctx.launch_uniform(op)
        parent = next((v for v in operands if isinstance(v, (View, Region))), None)
        for i, (r, t) in enumerate(zip(op.results, op.result_types)):
            static = ct.static_int(t)
            if parent is not None and ((ct.is_smem(t) and t.startswith(("!cute.memref", "!cute.ptr")))
                                       or t.startswith("!cute_nvgpu.smem_desc_view")):
                # a partition, tile or slice of a tensor stays inside the tensor's bytes
                lo, hi = parent.byte_range if isinstance(parent, View) else (parent.lo, parent.hi)
                alloc = parent.ptr.alloc.uid if isinstance(parent, View) else parent.alloc
                stage = parent.stage if op.name in STAGE_KEEPING else None
                self.env[r] = Region(alloc, lo, hi, stage)
            elif static is not None:
                self.env[r] = Const(static)
            elif (t in INT_TYPES or ct.is_dynamic_scalar(t)) and uniform and operands:
                self.env[r] = self.ctx.param(self.origin(op), f"{op.name} at {op.loc.short()}",
                                             self.loc(op), same_as=self.ctx.vkey(r) or ("op", op.uid, i))
            elif t in INT_TYPES or ct.is_dynamic_scalar(t):
                self.env[r] = opaque(self.why_unknown(op, operands))
            else:
                self.env[r] = Unknown(f"{op.name}@{op.loc.short()}", uniform)

    def why_unknown(self, op: Op, operands: list[Value]) -> str:
        """Why an integer result of ``op`` is not modelled, naming the root cause: an operand
        that is itself not modelled, or what makes this op's value unknown."""
        where = f"@{op.loc.short()}"
        if op.uid in self.ctx.impure_ops or not operands:  # a load, a shuffle, a vote ...
            return op.name + where
        inner = sorted({r for v in operands if isinstance(v, Expr) for r in opaque_reasons(v)})
        if inner:  # pure arithmetic on something unknown: that is the cause
            return ", ".join(inner)
        if any(isinstance(v, Expr) and expr_vars(v) - set(self.ctx.params) for v in operands):
            return f"{op.name} of a loop or branch variable{where}"
        if not all(self.is_uniform(v) for v in operands):
            return f"{op.name} of a value computed in the kernel{where}"
        return f"{op.name} of a value that differs between threads{where}"

    # -- blocks ----------------------------------------------------------------------------
    def block(self, b: Block, args: list[Value]) -> tuple[list[Stmt], Optional[Op]]:
        for a, v in zip(b.args, args):
            self.env[a] = v
        out: list[Stmt] = []
        for op in b.ops:
            if op.name in ("scf.yield", "scf.condition"):
                return out, op
            self.op(op, out)
        return out, None

    def op(self, op: Op, out: list[Stmt]) -> None:
        self.smem_mark = len(self.ctx.smem_writes)
        self.use_mark = len(self.ctx.smem_uses)
        self.smem_writes_of(op)
        self.smem_uses_of(op)
        if op.name not in TENSORMAP_OPS and GLOBAL_WRITE.search(op.name) and \
                self.ctx.writes_descriptor_memory(op) and not self.tensormap_asm(op):
            out.append(Unsupported(f"{op.name}: a write into the memory a TMA descriptor pointer "
                                   "is computed from, not read as a tensormap write",
                                   self.loc(op)))
        acc = accessed(self.ctx.accumulators, op)
        if acc is not None:
            out.append(AccAccess(acc, loc=self.loc(op)))
        if tmem.propagate(self, op):  # a view, part or address of a followed TMEM tensor
            return
        h = HANDLERS.get(op.name)
        if (op.name == "cute.memref.store" or not _memory_reader(op.name)) and \
                op.name not in DSMEM_FOLLOWED and not op.name.startswith("nvvm.mbarrier.") and \
                any(ct.is_cluster_smem(t) for t in op.operand_types):
            # a write into some CTA's shared memory through a cluster address: st.shared::cluster
            # (inline PTX, `st_cluster`; llvm.store and a universal cute.copy through a mapa
            # address, `dsmem_store`) and st.async are followed
            store = self.dsmem_store(op)
            if store is None:
                out.append(Unsupported(f"{op.name}: a store into distributed shared memory the "
                                       "model does not follow", self.loc(op)))
            else:
                self.dsmem_write(op, *store, out)
                self.fence_scope = None
                return
        fenced = self.fence_scope
        if h is not None:
            h(self, op, out)
            if GLOBAL_WRITE.search(op.name):
                self.fence_scope = None
            elif op.regions and self.fence_scope != fenced:
                # a fence or a write in a branch or loop body that may not run: after it, no
                # fence is known to precede what follows
                self.fence_scope = None
        elif op.name in ARITH:
            self.arith(op, out)
        elif op.name in PASS_THROUGH:
            self.env[op.results[0]] = self.val(op.operands[0]) if op.operands else Unknown(op.name)
            for r in op.results[1:]:
                self.env[r] = Unknown(op.name)
        elif op.name.startswith("nvvm.read.ptx.sreg."):
            self.sreg(op)
        elif op.name in IGNORED:
            pass
        elif op.name in ("llvm.inline_asm", "nvvm.inline_ptx"):
            self.asm(op, out)
        elif op.name.startswith(UNSUPPORTED_PREFIXES):
            out.append(Unsupported(op.name, self.loc(op)))
            self.set_unknown_results(op)
        elif op.regions:
            out.append(Unsupported(f"{op.name} (region op)", self.loc(op)))
            self.set_unknown_results(op)
        else:
            self.set_unknown_results(op)

    def memref_load(self, op: Op, out) -> None:
        """``cute.memref.load`` of one element of a global tensor the kernel never writes (a
        count, an offset, a sequence length): every reader of an element sees the same value,
        chosen at launch.  Each element of the tensor that can be read is a launch parameter
        (``READ_RANGE`` by default: empty, one and many; ``--param`` sets it), and the load is
        the select of the element its index names.  Anything else stays a per-thread value."""
        t = op.operand_types[0]
        m = self.val(op.operands[0]) if op.operands else None
        if isinstance(m, Region) and m.stage is not None:
            self.staged_read(op, op.operands[0], out)
            self.set_unknown_results(op)
            return
        if isinstance(m, View) and len(op.operands) == 2 and op.results:
            # a read of a stage (the view is one, or its coordinate names one) is a staged read;
            # the value may still be a word the model follows (build.py keeps one or the other)
            stage = m.stage or self.element_stage(m, op.operands[1]) or self.plain_stage(m)
            if stage is not None:
                name = self.claim(op, stage)
                out.append(SmemRead(((name, stage.index),), self.loc(op)))
            self.smem_load(op, m, out)
            return
        if "gmem" not in t or len(op.operands) != 2 or not op.results:
            self.set_unknown_results(op)
            return
        root = self.ctx.gmem_root(op.operands[0])
        shape = ct.layout_shape(t)
        n = ct.size(shape) if shape is not None else None
        idx = self.expr(op.operands[1])
        written, unknown = self.ctx.written_gmem()
        why = None
        if root is None:
            why = "a global tensor that is not a kernel argument"
        elif root in written:
            why = f"kernel argument {root}, which the kernel writes"
        elif unknown:
            why = f"global memory, which {unknown[0]} may write"
        elif op.result_types[0] not in INT_TYPES:
            why = f"{op.result_types[0]} values (integers are modelled)"
        elif n is None or len(shape) != 1:
            why = f"a tensor of shape {shape} (a static one-dimensional shape is modelled)"
        elif opaque_reasons(idx) or LANE in expr_vars(idx):
            why = "an index that differs between threads or is not modelled"
        if why is not None:
            self.env[op.result] = opaque(f"cute.memref.load of {why}@{op.loc.short()}")
            return
        lo, hi = self.index_range(idx)
        if lo is None or lo < 0 or hi >= n:
            self.env[op.result] = opaque(f"cute.memref.load whose index is not shown to lie in "
                                         f"0..{n - 1}@{op.loc.short()}")
            return
        if hi - lo + 1 > MAX_READ_ELEMENTS:
            self.env[op.result] = opaque(f"cute.memref.load of any of {hi - lo + 1} elements (at "
                                         f"most {MAX_READ_ELEMENTS} are modelled)@{op.loc.short()}")
            return
        name = _subscripted_name(self.loc(op)) or f"arg{root}"
        self.ctx.assumptions.add("values read from global memory: nothing else writes the tensors "
                                 "they come from while the kernel runs, and kernel arguments "
                                 "(and the tensors TMA descriptor arguments were made from) do "
                                 "not alias")
        elems = {i: self.ctx.param(f"{name}_{i}", f"{name}[{i}]: element {i} of kernel argument "
                                   f"{root} (global memory, read at {op.loc.short()}; the kernel "
                                   f"does not write it)", self.loc(op), default=READ_RANGE,
                                   same_as=("gmem", root, i))
                 for i in range(lo, hi + 1)}
        e = elems[hi]
        for i in reversed(range(lo, hi)):
            e = self.f.select(self.f.binop("==", idx, Const(i)), elems[i], e)
        self.bind(op, e, out)

    def index_range(self, idx: Expr) -> tuple[Optional[int], Optional[int]]:
        """Bounds of an index: a constant, or the counter of an enclosing `for` with constant
        bounds (lo..hi inclusive); (None, None) otherwise."""
        if isinstance(idx, Const):
            return idx.value, idx.value
        if isinstance(idx, Var) and idx.name in self.counters:
            lb, ub = self.counters[idx.name]
            if isinstance(lb, Const) and isinstance(ub, Const) and ub.value > lb.value:
                return lb.value, ub.value - 1
        return None, None

    # -- TMA -------------------------------------------------------------------------------
    def make_exec(self, op, out):
        self.env[op.result] = Atom(op.result_types[0], src=op.operands[0] if op.operands else None)

    def set_value(self, op, out):
        a = self.val(op.operands[0])
        if not isinstance(a, Atom) and op.operand_types[0].startswith("!cute_nvgpu.atom."):
            a = Atom(op.operand_types[0])
        m = re.search(r"<(\w+)>", str(op.attrs.get("field", "")))
        if isinstance(a, Atom) and m:
            # the descriptor pointer is kept as its value id (WarpWalker.tensormap follows it)
            v = op.operands[1] if m.group(1) == "tma_descriptor_ptr" else self.val(op.operands[1])
            self.env[op.result] = Atom(op.result_types[0], a.fields + ((m.group(1), v),), a.src)
        else:
            self.set_unknown_results(op)

    def copy(self, op: Op, out) -> None:
        atom = self.val(op.operands[0])
        t = op.operand_types[0]
        kind = ct.atom_kind(t)
        if kind == "universal_copy" and len(op.operands) > 2 and self.clc_response_load(op, out):
            return
        if kind == "tma_load":
            self.tma_load(op, atom, out)
        elif kind == "bulk_copy_g2s":  # not elected: every executing thread issues it
            self.tma_load(op, atom, out, per_thread=True)
        elif kind in ("tma_store", "tma_reduce", "bulk_copy_s2g"):
            self.tma_store(op, kind, out, atom)
        elif kind == "simt_async_copy":
            self.cp_async(op, out)
        elif kind == "tma_load_im2col":
            out.append(Unsupported(f"cute.copy with {kind} atom", self.loc(op)))
        elif (what := tmem_copy(op.operand_types)) is not None:
            self.tmem_copy(op, what, out)
        elif "tma_bar" in t or "mbar" in t:
            out.append(Unsupported(f"cute.copy with {kind or t[:40]} atom", self.loc(op)))
        elif len(op.operands) > 2:  # a copy from / into a buffer stage reads / writes it
            if not self.own_access(op, op.operands[1], False, out) and \
                    not self.shared_cp_read(op, op.operands[1], out):
                self.staged_read(op, op.operands[1], out)
            if not self.own_access(op, op.operands[2], True, out):
                self.staged_write(op, op.operands[2], out)

    def own_buffer(self, op: Op, vid: int) -> Optional[str]:
        """The buffer `vid` is the executing thread's own part of (a one-to-one tiled-copy
        partition at the thread index, extract/partitions.py), with `op`'s recorded accesses of
        it attributed; None if it is no such view."""
        # one-to-one among the threads that use it: this warp's (each warp's walk checks its own)
        part = thread_partition(self.ctx.kernel, vid, max_tid=32 * self.warp + self.lanes - 1)
        if part is None:
            return None
        parent = self.val(self.ctx.kernel.value_info[part].op.operands[1])
        if not isinstance(parent, View) or parent.ptr.lin:
            return None
        lo, hi = parent.byte_range
        name = self.claim(op, Stage(Const(0), 1, hi - lo, parent.ptr.alloc.uid, lo, hi))
        self.ctx.cp_partitions.setdefault(name, set()).add(part)
        self._own_part = part
        return name

    def cp_async(self, op: Op, out) -> None:
        """A cp.async (non-bulk) of the executing threads into their own part of a buffer; one
        into anything else is not followed (the verdict says so)."""
        name = self.own_buffer(op, op.operands[2]) if len(op.operands) > 2 else None
        if name is None:
            self.ctx.unchecked.append(Unchecked(
                "race", "the cp.async's destination", "not a thread's own part of a shared-memory "
                "tensor (a one-to-one tiled-copy partition at the thread index)", self.loc(op)))
            return
        self.ctx.cp_uses.setdefault(name, []).append((self._own_part, "copy", self.loc(op)))
        out.append(CpAsync(name, Const(0), self.loc(op)))

    def own_access(self, op: Op, vid: int, write: bool, out) -> bool:
        """A read or write by the executing threads of their own part of a buffer."""
        name = self.own_buffer(op, vid)
        if name is not None:
            self.ctx.cp_uses.setdefault(name, []).append(
                (self._own_part, "write" if write else "read", self.loc(op)))
            out.append(SmemOwn(name, Const(0), write, loc=self.loc(op)))
        return name is not None

    def shared_cp_read(self, op: Op, vid: int, out) -> bool:
        """A read by the executing threads of bytes of a buffer that cp.async copies write
        through another partition (a vector each thread copies a part of and every thread reads
        whole, through a broadcast layout): the buffer's one stage, read `shared` (every
        thread's copies must be retired and ordered before it; build.py keeps it only if the
        buffer's copies and writes all go through one partition)."""
        where = self._bytes(self.val(vid))
        if where is None:
            return False
        alloc, lo, hi = where
        for key, (name, _, _) in list(self.ctx.buffers.items()):
            if name in self.ctx.cp_partitions and key[0] == alloc and key[1] <= lo and \
                    hi <= key[2]:
                self.claim(op, Stage(Const(0), 1, key[2] - key[1], alloc, key[1], key[2]))
                self.ctx.cp_uses.setdefault(name, []).append((None, "read", self.loc(op)))
                out.append(SmemOwn(name, Const(0), False, loc=self.loc(op), shared=True))
                return True
        return False

    def cp_async_commit(self, op: Op, out) -> None:
        out.append(CpAsyncCommit(loc=self.loc(op)))

    def cp_async_wait(self, op: Op, out) -> None:
        self.group_wait(op, "n", CpAsyncWait, out)

    def group_wait(self, op: Op, attr: str, make, out) -> None:
        """A wait for all but the N newest groups (`attr` = N), or Unsupported if N is not a
        constant."""
        n = op.attrs.get(attr)
        if n is None or not re.fullmatch(r"\d+", str(n)):
            out.append(Unsupported(f"{op.name} with {attr} {n!r}", self.loc(op)))
            return
        out.append(make(int(str(n)), loc=self.loc(op)))

    def fence_proxy(self, op: Op, out) -> None:
        """``fence.proxy.async`` (all state spaces) and ``fence.proxy.async.shared::cta`` order
        generic-proxy writes of shared memory before async-proxy accesses (build.py keeps them
        only in kernels with a staged buffer the model follows); other proxy kinds do not."""
        if re.search(r"proxy_kind<async(\.shared)?>", str(op.attrs.get("kind", ""))):
            out.append(FenceProxyAsync(self.loc(op)))

    def make_fragment(self, op: Op, out) -> None:
        """``cute.mma.make_fragment`` of a shared-memory partition: the wgmma operand
        descriptors over it (a view of the same bytes, in 16-byte descriptor units)."""
        v = self.val(op.operands[1]) if len(op.operands) > 1 else None
        if isinstance(v, (View, Region)) and op.result_types and \
                op.result_types[0].startswith("!cute_nvgpu.smem_desc_view"):
            lo, hi = v.byte_range if isinstance(v, View) else (v.lo, v.hi)
            alloc = v.ptr.alloc.uid if isinstance(v, View) else v.alloc
            self.env[op.result] = Region(alloc, lo, hi)
        else:
            self.set_unknown_results(op)

    def gemm(self, op: Op, out) -> None:
        """``cute.gemm(atom, d, a, b, c)``: a warpgroup MMA whose shared-memory operands (a, b:
        descriptor views) it reads asynchronously until a wgmma.wait_group retires its group;
        a tcgen05 MMA (an sm100 atom; cta_group::2 with num_cta = 2) until the arrive of the
        warp's next tcgen05.commit lands, and its accumulator is a TMEM access."""
        sm100 = bool(op.operand_types) and "sm100" in op.operand_types[0]
        two = sm100 and re.search(r"sm100\.mma\w*<[^>]*num_cta = 2", op.operand_types[0]) is not None
        reads = []
        if sm100:
            acc = self.tmem_operands(op)
            out.append(TmemAccess("tcgen05.mma", self.loc(op), pair=two, data=acc is not None))
            reads += acc or []
        for vid in op.operands[2:4]:
            stage = self.staged(vid)
            if stage is None:
                continue
            name = self.claim(op, stage)
            reads.append((name, stage.index))
        if reads and sm100:
            out.append(MmaRead(tuple(reads), self.loc(op), pair=two))
        elif reads:
            out.append(WgmmaRead(tuple(reads), self.loc(op)))
        out += [WgmmaAcc(acc, self.loc(op)) for acc in wgmma_acc(self.ctx.accumulators, op)]

    def wgmma_commit(self, op: Op, out) -> None:
        out.append(WgmmaCommit(loc=self.loc(op)))

    def wgmma_fence(self, op: Op, out) -> None:
        out.append(WgmmaFence(loc=self.loc(op)))

    def wgmma_wait(self, op: Op, out) -> None:
        self.group_wait(op, "group", WgmmaWait, out)

    def tma_store(self, op: Op, kind: str, out, atom=None) -> None:
        """A TMA store (or bulk reduce / S2G copy) reads its shared-memory source until a
        wait_group.read of the issuing threads retires its bulk group. Executed by the active
        lanes (PTX has no elect for it; one per executing thread). A store through a descriptor
        in global memory is Unsupported: the model orders a kernel's rewrites of a descriptor
        (release, acquire, the drain of the reads) only against TMA loads."""
        if isinstance(atom, Atom) and atom.get("tma_descriptor_ptr") is not None:
            desc = self.tensormap(op, atom.get("tma_descriptor_ptr"), out)
            if desc is not None:
                where = next(t[1] for t in self.ctx.tensormaps.values() if t[0] == desc)
                out.append(Unsupported(
                    f"{kind} through the {where}: a TMA store's descriptor read (the "
                    "tensormap acquire it needs after a rewrite, the drain before the next "
                    "rewrite) is not modelled; only TMA loads are", self.loc(op)))
            return
        stage = self.staged(op.operands[1]) if len(op.operands) > 1 else None
        if stage is None:
            source = self.val(op.operands[1]) if len(op.operands) > 1 else None
            where = self._bytes(source) if isinstance(source, (View, Region)) and \
                source.stage is None else None
            if where is not None:  # a second walk follows it (build.py)
                self.ctx.plain_found.add(where)
            self.ctx.unstaged_stores.append((self.loc(op), f"{kind} whose source is not a stage "
                                             "of a staged buffer the model follows"))
            return
        name = self.claim(op, stage)
        out.append(TmaStore(name, stage.index, self.loc(op)))

    def tma_load(self, op: Op, atom: Value, out, per_thread: bool = False) -> None:
        if not isinstance(atom, Atom) or atom.get("tma_bar") is None:
            out.append(Unsupported("TMA load without a traced tma_bar", self.loc(op)))
            return
        pair = "num_cta = 2" in atom.type and not per_thread
        if "num_cta = 1" not in atom.type and not pair and not per_thread:
            out.append(Unsupported("TMA load for a CTA group other than 1 or 2", self.loc(op)))
            return
        bits = ct.copy_bits(atom.type)
        reps = ct.rest_size(op.operand_types[2]) if len(op.operand_types) > 2 else 1
        if bits is not None and reps is not None and len(op.operand_types) > 2:
            reps *= ct.atom_repeats(op.operand_types[2], bits)
        if bits is None or reps is None:
            out.append(Unsupported("TMA load with unknown byte count", self.loc(op)))
            return
        ref = self._ref_of(atom.get("tma_bar"), op)
        if isinstance(ref, str):
            out.append(Unsupported(f"TMA load: {ref}", self.loc(op)))
            return
        nbytes = bits // 8 * reps
        mask: Optional[Expr] = None
        if pair:
            # .cta_group::2: the lowering clears the peer bit of the barrier's address, so the
            # bytes complete on the barrier at the same offset in the pair's leader (even rank)
            if ref.cta is not None or atom.get("mcast_mask") is not None:
                out.append(Unsupported("TMA load for a CTA pair through a remote barrier or an "
                                       "explicit multicast mask", self.loc(op)))
                return
            group = [self.rank]
            if isinstance(op.attrs.get("multicast_layout"), str):
                group = self.block_mcast(op.attrs["multicast_layout"],
                                         pair_split="use_2cta" in op.attrs)
                if group is None:
                    out.append(Unsupported(f"TMA load for a CTA pair with multicast_layout "
                                           f"{op.attrs['multicast_layout']}", self.loc(op)))
                    return
            leaders = sorted({r - r % 2 for r in group})
            if len(leaders) != len(group):
                out.append(Unsupported("TMA load for a CTA pair multicast into both CTAs of a "
                                       "pair (two completions on one leader barrier)",
                                       self.loc(op)))
                return
            nbytes //= len(group)
            if len(group) > 1:
                mask = Const(sum(1 << r for r in leaders))
            elif leaders[0] != self.rank:
                ref = MBarRef(ref.name, ref.index, Const(leaders[0]))
        elif atom.get("mcast_mask") is not None:
            # the box is split among the CTAs of tma_partition's cta_layout (num_multicast)
            mask = self.expr_of(atom.get("mcast_mask"))
            nbytes //= self.ctx.tma_split.get(atom.src, 1)
        elif isinstance(op.attrs.get("multicast_layout"), str):
            group = self.block_mcast(op.attrs["multicast_layout"])
            if group is None:
                out.append(Unsupported(f"TMA load with multicast_layout "
                                       f"{op.attrs['multicast_layout']}", self.loc(op)))
                return
            if len(group) > 1:
                mask = Const(sum(1 << r for r in group))
                nbytes //= len(group)
        desc = None
        if atom.get("tma_descriptor_ptr") is not None:
            desc = self.tensormap(op, atom.get("tma_descriptor_ptr"), out)
            if desc is None:
                return
        stmt = TmaLoad(ref, Const(nbytes), self.loc(op), mask, desc,
                       self.fill(op, ref, pair)
                       if len(op.operands) > 2 and not (pair and mask is not None) else None)
        if per_thread:  # one copy per executing thread: the enclosing lanes give the count
            out.append(stmt)
        elif self.whole_warp():  # the lowering elects one lane of the warp: one copy per warp
            out.append(Lanes(1, (stmt,), self.loc(op)))
        else:
            out.append(Unsupported(
                "TMA load by a subset of the warp's lanes (its lowering wraps it in an "
                "elect.sync over all 32 lanes, which waits for every one of them)", self.loc(op)))

    def fill(self, op: Op, ref: MBarRef, pair: bool = False) -> Optional[str]:
        """The staged buffer a TMA load fills: its destination is a stage whose index is its
        barrier's (the stage of `full[s]`); else none (a load into a stage by another index is
        not followed: build.py sees its write as not attributed). A cta_group::2 load of the
        pair's other CTA fills its own stage and completes on the leader's barrier."""
        stage = self.staged(op.operands[2])
        if stage is None and ref.cta is None and ref.index == Const(0):
            dst = self.val(op.operands[2])
            where = self._bytes(dst) if isinstance(dst, (View, Region)) and \
                dst.stage is None else None
            if where is not None:  # a plain tensor filled through barrier 0: a second walk
                self.ctx.plain_found.add(where)
        if stage is None or (ref.cta is not None and not pair) or (
                stage.index != ref.index and self.f.binop("-", stage.index, ref.index) != Const(0)):
            return None
        name = self.claim(op, stage)
        return name

    def block_mcast(self, attr: str, pair_split: bool = False) -> Optional[list[int]]:
        """CTA ranks sharing this CTA's tile for ``cute.copy {multicast_layout = (cm,cn):(dm,dn)}``
        (the block-copy API; the compiler slices the box and builds the mask): direction (1,0)
        ("M") shares among the CTAs of the same m, (0,1) ("N") among those of the same n.
        `pair_split` (``use_2cta``: the operand is split between the CTAs of a 2-CTA MMA pair,
        ranks 2k and 2k+1 along m): only CTAs of the same position in their pair share it."""
        m = re.search(r'"\((\d+),(\d+)\):\((\d+),(\d+)\)"', attr)
        if not m:
            return None
        cm, cn, dm, dn = (int(x) for x in m.groups())
        if (dm, dn) not in ((1, 0), (0, 1)) or cm * cn != self.k.cluster_size:
            return None
        me_m, me_n = self.rank % cm, self.rank // cm
        if (dm, dn) == (1, 0):
            return [me_m + n * cm for n in range(cn)]
        if pair_split and cm % 2:
            return None
        return [m_ + me_n * cm for m_ in range(cm) if not pair_split or m_ % 2 == me_m % 2]

    def expr_of(self, value: Value) -> Expr:
        if isinstance(value, Expr):
            return value
        return opaque(getattr(value, "reason", type(value).__name__.lower()))

    # -- control flow ----------------------------------------------------------------------
    def region(self, op: Op, i: int, args: list[Value]) -> tuple[list[Stmt], list[Value]]:
        if i >= len(op.regions) or not op.regions[i].blocks:
            return [], []
        stmts, term = self.block(op.regions[i].blocks[0], args)
        ys = [self.val(v) for v in term.operands] if term is not None else []
        return stmts, ys

    def scf_if(self, op: Op, out: list) -> None:
        c = self.val(op.operands[0])
        loc = self.loc(op)
        if isinstance(c, Const):
            stmts, ys = self.region(op, 0 if c.value else 1, [])
            out.extend(stmts)
            self._bind(op, ys)
            return
        if c is ELECT:
            self._elect_if(op, out, loc)
            return
        cond = c if isinstance(c, Expr) else self.expr(op.operands[0])
        if expr_vars(cond) == {LANE}:
            vals = lane_values(cond, self.lanes)
            if vals is not None:
                self._lane_if(op, out, vals, loc, cond)
                return
        then, ty = self.region(op, 0, [])
        else_, ey = self.region(op, 1, [])
        tvars, evars = [], []
        self._merge_results(op, ty, ey, cond, tvars, evars)
        if (then or else_) and not tvars and not evars and \
                all(isinstance(s, AccAccess) for s in then + else_):
            # accumulator checks only (a masking branch of the softmax): checked as if the
            # branch ran, whatever its condition; a check changes no state
            out.extend(dict.fromkeys(then + else_))
            return
        if then or else_ or tvars:
            out.append(If(cond, tuple(then + tvars), tuple(else_ + evars), loc))

    def whole_warp(self) -> bool:
        return self.active.count == self.lanes

    def tma_lane(self) -> bool:
        """Whether the executing lanes include the lane a TMA copy of this warp elects: the
        whole warp, or one lane elected over the whole warp (elect.sync: the same leader for the
        same member mask). A lane predicate names lanes the leader may not be among."""
        a = self.active
        if a.lanes == frozenset(range(self.lanes)) and (a.count == self.lanes or
                                                        (a.count == 1 and not a.exact)):
            return True
        if a.exact and a.lanes == frozenset({0}):
            # the TMA copy runs in the whole warp (elect.sync in a lane subset is Unsupported),
            # and the H200 elects the lowest lane (litmus ElectWhichLane)
            self.ctx.assumptions.add(
                "elect.sync in the DSL's TMA copies elects lane 0, the lowest lane (as the H200 "
                "does); a bulk group or tensormap fence under `lane == 0` is then on the lane "
                "that issued the copies (PTX only says the same lane is elected every time)")
            return True
        return False

    def _region_as(self, op: Op, i: int, active: Active) -> tuple[list[Stmt], list[Value]]:
        saved, self.active = self.active, active
        try:
            return self.region(op, i, [])
        finally:
            self.active = saved

    def _unsupported_if(self, op: Op, out: list, what: str) -> None:
        out.append(Unsupported(what, self.loc(op)))
        for r in op.results:
            self.env[r] = opaque(f"{what}@{op.loc.short()}")

    def _elect_if(self, op: Op, out: list, loc: Loc) -> None:
        """``if elect.sync():``: one lane of the executing lanes runs the then-branch, the others
        the else-branch.  The DSL's elect.sync names all 32 lanes in its member mask and waits
        for every one of them (PTX ISA, elect.sync), so it is only modelled for the whole warp."""
        a = self.active
        if not self.whole_warp():
            self._unsupported_if(op, out, "elect.sync executed by a subset of the warp's lanes "
                                          "(its member mask names all lanes, which it waits for)")
            return
        then, ty = self._region_as(op, 0, Active(a.lanes, 1, min(a.lanes)))
        else_, ey = self._region_as(op, 1, Active(a.lanes, a.count - 1)) if a.count > 1 else ([], [])
        if then:
            out.append(Lanes(1, tuple(then), loc))
        if else_:
            out.append(Lanes(a.count - 1, tuple(else_), loc))
        self._merge_results(op, ty, ey, None, [], [])

    def _assume_leader(self, op: Op, leader: int) -> None:
        """A lane predicate decides what the elected lane does: the model takes the lowest
        executing lane as elected (the H200 does: litmus ElectWhichLane) and says so."""
        self.ctx.assumptions.add(
            f"elect.sync before {op.loc.short()}: the elected lane is the lowest executing lane "
            f"(lane {leader}); PTX only says the same lane is elected for the same member mask, "
            "and a lane predicate there decides what it does")

    def _lane_if(self, op: Op, out: list, vals: list[int], loc: Loc, cond: Expr) -> None:
        """An ``if`` on a predicate over the lane index (``vals``: its value for every lane).
        A result that differs between the branches is a per-lane value: ``select(cond, then,
        else)`` over the lane index, which a shuffle from a constant lane makes uniform
        (``shfl_sync``) and anything else reports as depending on the lane index."""
        a = self.active
        tl = frozenset(l for l in a.lanes if vals[l])
        fl = a.lanes - tl
        if not a.exact and tl and fl:
            if a.leader is None:
                self._unsupported_if(op, out, "lane predicate inside an elect.sync branch (which "
                                              "lane elect.sync elects is unspecified in PTX)")
                return
            self._assume_leader(op, a.leader)
            tl, fl = (a.lanes, frozenset()) if vals[a.leader] else (frozenset(), a.lanes)
        if not tl or not fl:  # every executing lane takes the same branch
            stmts, ys = self.region(op, 0 if tl else 1, [])
            out.extend(stmts)
            self._bind(op, ys)
            return
        then, ty = self._region_as(op, 0, Active(tl, len(tl)))
        else_, ey = self._region_as(op, 1, Active(fl, len(fl)))
        out.extend(self._lanes(sorted(tl), then, loc))
        out.extend(self._lanes(sorted(fl), else_, loc))
        self._merge_results(op, ty, ey, None, [], [])
        # a branch run by several lanes whose code depends on the lane is split into one copy
        # per lane (`_lanes`): a local it writes holds the last copy's value, not each lane's
        if (len(tl) > 1 and reads_var(then, LANE)) or (len(fl) > 1 and reads_var(else_, LANE)):
            return
        for i, r in enumerate(op.results):
            a = ty[i] if i < len(ty) else None
            b = ey[i] if i < len(ey) else None
            if isinstance(a, Expr) and isinstance(b, Expr) and a != b \
                    and not opaque_reasons(a) and not opaque_reasons(b):
                self.env[r] = self.f.select(cond, a, b)

    def _lanes(self, lanes: list[int], body: list[Stmt], loc: Loc) -> list[Stmt]:
        """``body`` run by the given lanes (a proper subset of the executing lanes):
        ``Lanes(k)``; when the body still depends on the lane index (e.g. a remote arrive at CTA
        ``lane % n``), one ``Lanes(1)`` copy per lane with the lane substituted (serializing the
        lanes only adds interleavings).  A lane-dependent body that itself runs on a subset of
        these lanes cannot be split that way (the inner subset is a count, not lane numbers)."""
        if not body:
            return []
        if reads_var(body, LANE):
            if any(isinstance(s, Lanes) for s in walk_stmts(tuple(body))):
                return [Unsupported("lane-dependent statements under nested lane subsets", loc)]
            if len(lanes) <= MAX_LANE_SPLIT:
                return [Lanes(1, subst_stmts(tuple(body), {LANE: l}, self.f), loc) for l in lanes]
        return [Lanes(len(lanes), tuple(body), loc)]

    def atomic_rmw(self, op: Op, out: list) -> None:
        """``atom.inc`` by one thread on a word of global memory that is a kernel argument: a
        global work counter (a dynamic tile scheduler's semaphore), which the grid's other CTAs
        take values from too (syncir ``AtomInc``, ``Kernel.counters``).  Any other atomic, or one
        by more threads, is not modelled."""
        loc = self.loc(op)
        kind = str(op.attrs.get("op", ""))
        pointer = op.operands[0] if op.operands else None
        root = self.argument_root(pointer)
        limit = self.expr(op.operands[1]) if len(op.operands) > 1 else None
        why = None
        if kind.rstrip(">").endswith(" add"):
            self.flag_add(op, pointer, op.operands[1] if len(op.operands) > 1 else None,
                          out, bool(op.results) and self.ctx.used(op.results[0]))
            return
        if not kind.rstrip(">").endswith(" inc"):
            why = f"atomic {kind or '?'} (atom.inc on a counter and atom.add on a flag are modelled)"
        elif root is None:
            why = "atom.inc on global memory that is not a kernel argument"
        elif limit is None or opaque_reasons(limit) or expr_vars(limit) - set(self.ctx.params):
            why = "atom.inc whose limit is not a launch value"
        elif self.active.count != 1 or not self.active.exact and self.active.leader is None:
            why = f"atom.inc by {self.active.count} threads (each gets its own value)"
        else:
            why = self.ctx.other_writer(root, "counter", "atom.inc")
        if why is not None:
            out.append(Unsupported(f"{op.name}: {why}", loc))
            self.set_unknown_results(op)
            return
        name = f"sem{root}"
        decl = self.ctx.counters.get(name)
        if decl is None:
            label = _pointer_name(self.k, pointer) or f"kernel argument {root}"
            decl = self.ctx.counters[name] = CounterDecl(name, limit, loc, label,
                                                         others=self._other_clusters())
            self.ctx.assumptions.add(
                f"global counter {label} (atom.inc at {op.loc.short()}): it holds 0 when the "
                "kernel starts, only atom.inc changes it, no other kernel argument (nor the "
                "tensor a TMA descriptor argument was made from) aliases it, and the CTAs of the grid outside the "
                "model (any number of them) may take any of its values between two steps")
        elif decl.limit != limit:
            out.append(Unsupported(f"{op.name}: atom.inc on {decl.label} with two different "
                                   "limits", loc))
            self.set_unknown_results(op)
            return
        dest = f"a{op.uid}"
        out.append(AtomInc(dest, name, limit, loc))
        self.env[op.results[0]] = Var(dest)

    def argument_root(self, pointer: Optional[int]) -> Optional[int]:
        """The kernel argument a global pointer (an LLVM pointer cast from a cute pointer) points
        into, or None."""
        vid = pointer
        while vid is not None:  # through casts of the pointer
            info = self.k.value_info.get(vid)
            if info is None or info.is_block_arg or info.op is None \
                    or info.op.name != "builtin.unrealized_conversion_cast":
                break
            vid = info.op.operands[0]
        return self.ctx.gmem_root(vid) if vid is not None else None

    def flag_root(self, op: Op, pointer: Optional[int]) -> tuple[Optional[int], Optional[str]]:
        """(kernel argument, None) of the global flag `pointer` points at, or (None, why not)."""
        if self.ctx.grid_why is not None:
            return None, ("flags are modelled only when the model holds every CTA of the grid, "
                          f"and here {self.ctx.grid_why}")
        root = self.argument_root(pointer)
        if root is None:
            return None, "its address is not a kernel argument"
        why = self.ctx.other_writer(root, "flag", "atomics")
        if why is not None:
            return None, why
        if f"sem{root}" in self.ctx.counters:
            return None, f"kernel argument {root} is also an atom.inc counter"
        return root, None

    def flag_add(self, op: Op, pointer, delta_vid, out: list, result_used: bool) -> None:
        """``atom.add`` / ``red.add`` on a global flag (syncir ``GlobalAdd``); a pending
        ``fence.acq_rel`` of the thread makes a relaxed add a release (PTX 8.7 release pattern)."""
        loc = self.loc(op)
        root, why = self.flag_root(op, pointer)
        delta = self.expr(delta_vid) if delta_vid is not None else None
        if why is None and result_used and not self._one_lane():
            why = (f"its old value is used by {self.active.count} threads (each gets its own; "
                   "one lane's is modelled)")
        if why is None and (delta is None or opaque_reasons(delta)):
            why = "the value added is not one the model follows"
        elif why is None and self._per_lane(delta):
            why = "the value added differs between the lanes that add"
        sem = _memory_order(op, "memOrder", "relaxed")
        scope = _memory_scope(op, "memScope" if op.name == "nvvm.red" else "syncscope")
        if why is None and (sem not in ADD_SEMANTICS or scope not in MEMORY_SCOPES):
            why = f"memory order {sem}, scope {scope}"
        if why is not None:
            out.append(Unsupported(f"{op.name}: an atomic add on a global flag: {why}", loc))
            self.set_unknown_results(op)
            return
        if sem in ("relaxed", "acquire") and self.fence_scope is not None:  # fence; add
            sem = "release" if sem == "relaxed" else "acq_rel"
            scope = _narrower(scope, self.fence_scope)
        dest = f"a{op.uid}" if result_used else None
        out.append(GlobalAdd(self.ctx.flag(root, pointer, loc), delta, sem, scope, loc, dest))
        for r in op.results:
            self.env[r] = Var(dest) if dest else opaque(f"{op.name}@{op.loc.short()}")

    def _one_lane(self) -> bool:
        """One lane executes, and which one is known (a lane predicate, or elect.sync whose lane
        the model takes): a per-lane value there is that lane's."""
        return self.active.count == 1 and (self.active.exact or self.active.leader is not None)

    def _per_lane(self, e: Expr) -> bool:
        """`e` reads the lane index where no single known lane executes."""
        return LANE in expr_vars(e) and not self._one_lane()

    def red(self, op: Op, out: list) -> None:
        """``red.add`` (``cute.arch.red``): an add on a global flag; other reductions are not
        modelled."""
        if not re.search(r"[ <]add>?$", str(op.attrs.get("op", ""))) or len(op.operands) < 2:
            out.append(Unsupported(f"{op.name}: reduction {op.attrs.get('op', '?')} (red.add on a "
                                   "flag is modelled)", self.loc(op)))
            return
        self.flag_add(op, op.operands[0], op.operands[1], out, False)

    def llvm_fence(self, op: Op, out: list) -> None:
        """``fence`` with release (acq_rel, sc) at a scope: a relaxed add on a flag after it is a
        release; with acquire, a relaxed spin loop just before it is an acquire (PTX 8.7).  It has no
        other effect in the model (barriers and proxies are ordered by their own ops)."""
        order = str(op.attrs.get("ordering", ""))
        order = LLVM_ORDERINGS.get(order, order)  # the enum's number, or its name
        scope = _memory_scope(op, "syncscope")
        if order in ("release", "acq_rel", "seq_cst"):
            self.fence_scope = scope
        if order in ("acquire", "acq_rel", "seq_cst") and out:  # spin loop / add; fence
            last = out[-1]
            if isinstance(last, GlobalWait) and last.sem != "acquire":
                out[-1] = replace(last, sem="acquire", scope=_narrower(last.scope, scope))
            elif isinstance(last, GlobalAdd) and last.dest and last.sem in ("relaxed", "release"):
                out[-1] = replace(last, sem="acquire" if last.sem == "relaxed" else "acq_rel",
                                  scope=_narrower(last.scope, scope))

    def flag_spin(self, op: Op, out: list) -> bool:
        """``while ld(flag) <cmp> target: pass`` (nothing carried, an empty body): a
        ``GlobalWait`` until the negated condition holds.  False when the loop is not that."""
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        loads = [o for o in before.ops if o.name == "nvvm.load.ext"]
        if op.operands or op.results or len(loads) != 1 or \
                any(o.name not in ("scf.yield", "nvvm.nanosleep") for o in after.ops):
            return False
        load = loads[0]
        rest = [o for o in before.ops if o is not load and o.name not in PASS_THROUGH]
        if [o.name for o in rest] != ["arith.cmpi", "scf.condition"]:
            return False
        cmp, cterm = rest
        predicate = cmp.attrs.get("predicate")
        rel = CMP.get(predicate)
        if rel is None or list(cterm.operands) != list(cmp.results):
            return False
        unsigned = predicate in UNSIGNED_PREDICATES
        for o in before.ops:  # the casts of the pointer
            if o.name in PASS_THROUGH:
                self.op(o, [])
        value = load.results[0]
        if cmp.operands[1] == value:
            lhs, rhs, rel = cmp.operands[1], cmp.operands[0], SWAPPED[rel]
        else:
            lhs, rhs = cmp.operands
        if lhs != value or rhs == value:
            return False
        rhs = self.expr(rhs)
        loc = self.loc(op)
        root, why = self.flag_root(load, load.operands[0] if load.operands else None)
        if why is None and unsigned:
            why = "an unsigned comparison (the model compares signed values)"
        if why is None and opaque_reasons(rhs):
            why = "the value it compares with is not one the model follows"
        elif why is None and self._per_lane(rhs):
            why = "the value it compares with differs between the lanes that spin"
        sem = _memory_order(load, "order", "weak")
        scope = _memory_scope(load, "scope")
        if why is None and (sem not in WAIT_SEMANTICS or scope not in MEMORY_SCOPES):
            why = f"memory order {sem}, scope {scope}"
        if why is not None:
            out.append(Unsupported(f"a spin loop on {load.name} (a global flag): {why}", loc))
            return True
        out.append(GlobalWait(self.ctx.flag(root, load.operands[0], loc), NEGATED[rel], rhs,
                              sem, scope, loc))
        return True

    def _other_clusters(self) -> Expr:
        """1 when the grid may have clusters besides the modelled one, 0 when its static shape
        says it has none; a dynamic grid may have any number."""
        if self.k.grid_dim is None:
            return Const(1)
        if self.grid_block is not None:
            return Const(0)
        n = 1
        for d in "xyz":
            n *= self.num_clusters(d, None).value  # a Const: the grid is static
        return Const(1 if n > 1 else 0)

    def _merge_results(self, op: Op, ty, ey, cond, tassign: list, eassign: list) -> None:
        """Results of a two-way if: equal values pass through; integers under a modelled
        condition become locals assigned in both branches; the rest is opaque."""
        for i, r in enumerate(op.results):
            a = ty[i] if i < len(ty) else None
            b = ey[i] if i < len(ey) else None
            if a is not None and a == b:
                self.env[r] = a
            elif cond is not None and isinstance(a, Expr) and isinstance(b, Expr):
                name = f"r{op.uid}_{i}"
                tassign.append(Assign(name, a, self.loc(op)))
                eassign.append(Assign(name, b, self.loc(op)))
                self.env[r] = Var(name)
            elif isinstance(a, Expr) or isinstance(b, Expr):
                self.env[r] = opaque(f"value chosen per lane@{op.loc.short()}")
            else:
                self.env[r] = Unknown(f"scf.if result@{op.loc.short()}")

    def _bind(self, op: Op, ys: list[Value]) -> None:
        for r, v in zip(op.results, ys):
            self.env[r] = v

    def _carry(self, op: Op, name: str, inits: list[int], block: Block, yield_ops: list[int],
               out: list, offset: int) -> list[Optional[str]]:
        """Bind loop-carried block arguments; returns the local name per carried value (None
        when the value is loop-invariant or not an integer)."""
        names: list[Optional[str]] = []
        for i, init in enumerate(inits):
            arg = block.args[offset + i]
            t = block.arg_types[offset + i]
            if i < len(yield_ops) and yield_ops[i] == arg:
                self.env[arg] = self.val(init)
                names.append(None)
            elif t in INT_TYPES:
                var = f"{name}{op.uid}_{i}"
                out.append(Assign(var, self.expr(init), self.loc(op)))
                self.env[arg] = Var(var)
                names.append(var)
            else:
                self.env[arg] = Unknown(f"loop-carried {t[:30]}@{op.loc.short()}")
                names.append(None)
        return names

    def _update(self, names: list[Optional[str]], ys: list[Value], loc: Loc) -> list[Stmt]:
        """Simultaneous assignment names := ys (through temporaries only when an update reads
        another variable of the same update)."""
        pairs = [(n, y if isinstance(y, Expr) else opaque("non-integer loop value"))
                 for n, y in zip(names, ys) if n is not None]
        pairs = [(n, e) for n, e in pairs if e != Var(n)]
        targets = {n for n, _ in pairs}
        if not any(expr_vars(e) & (targets - {n}) for n, e in pairs):
            return [Assign(n, e, loc) for n, e in pairs]
        return ([Assign(f"{n}_next", e, loc) for n, e in pairs]
                + [Assign(n, Var(f"{n}_next"), loc) for n, _ in pairs])

    def scf_for(self, op: Op, out: list) -> None:
        lb, ub, step = (self.expr(v) for v in op.operands[:3])
        body = op.regions[0].blocks[0]
        term = body.ops[-1] if body.ops and body.ops[-1].name == "scf.yield" else None
        yops = term.operands if term is not None else []
        iv = f"k{op.uid}"
        self.env[body.args[0]] = Var(iv)
        names = self._carry(op, "c", op.operands[3:], body, yops, out, 1)
        self.counters[iv] = (lb, ub)  # the counter's range inside the body (for index bounds)
        stmts, term = self.block(body, [self.val(a) for a in body.args])
        del self.counters[iv]
        ys = [self.val(v) for v in term.operands] if term is not None else []
        stmts += self._update(names, ys, self.loc(op))
        for r, n, y in zip(op.results, names, ys):
            self.env[r] = Var(n) if n else y
        if not isinstance(step, Const) or step.value <= 0:
            out.append(Unsupported(f"scf.for with step {step!r:.40}", self.loc(op)))
            return
        out.append(For(iv, lb, ub, tuple(stmts), step.value, self.loc(op)))

    def scf_while(self, op: Op, out: list) -> None:
        if self.flag_spin(op, out):
            return
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        names = self._carry(op, "w", op.operands, before, [], out, 0)
        pre, cterm = self.block(before, [self.val(a) for a in before.args])
        cond = self.expr(cterm.operands[0]) if cterm is not None else opaque("while condition")
        fwd = [self.val(v) for v in cterm.operands[1:]] if cterm is not None else []
        cvar = f"wc{op.uid}"
        fnames = []
        head: list[Stmt] = list(pre) + [Assign(cvar, cond, self.loc(op))]
        for i, (v, t) in enumerate(zip(fwd, after.arg_types)):
            if isinstance(v, Expr):
                fnames.append(f"wf{op.uid}_{i}")
                head.append(Assign(fnames[-1], v, self.loc(op)))
            else:
                fnames.append(None)
        fvals = [Var(n) if n else v for n, v in zip(fnames, fwd)]
        body, term = self.block(after, fvals)
        ys = [self.val(v) for v in term.operands] if term is not None else []
        body += self._update(names, ys, self.loc(op))
        body += head  # re-evaluate the condition for the next iteration
        out.extend(head)
        out.append(While(Var(cvar), tuple(body), loc=self.loc(op)))
        for r, v in zip(op.results, fvals):
            self.env[r] = v


HANDLERS: dict[str, Callable[[WarpWalker, Op, list], None]] = {
    **integers.HANDLERS,
    **views.HANDLERS,
    **words.HANDLERS,
    **mbarrier.HANDLERS,
    **barriers.HANDLERS,
    **dsmem.HANDLERS,
    **tensormaps.HANDLERS,
    **clc.HANDLERS,
    **tcgen05.HANDLERS,
    "cute.memref.load": WarpWalker.memref_load,
    "cute_nvgpu.atom.make_exec_tma": WarpWalker.make_exec,
    "cute_nvgpu.atom.set_value": WarpWalker.set_value,
    "cute.copy": WarpWalker.copy,
    "nvvm.fence.proxy": WarpWalker.fence_proxy,
    "cute.mma.make_fragment": WarpWalker.make_fragment,
    "cute.gemm": WarpWalker.gemm,
    "nvvm.wgmma.commit.group.sync.aligned": WarpWalker.wgmma_commit,
    "nvvm.wgmma.fence.aligned": WarpWalker.wgmma_fence,
    "nvvm.wgmma.wait.group.sync.aligned": WarpWalker.wgmma_wait,
    "nvvm.cp.async.commit.group": WarpWalker.cp_async_commit,
    "nvvm.cp.async.wait.group": WarpWalker.cp_async_wait,
    "nvvm.atomicrmw": WarpWalker.atomic_rmw,
    "nvvm.red": WarpWalker.red,
    "llvm.fence": WarpWalker.llvm_fence,
    "scf.if": WarpWalker.scf_if,
    "scf.for": WarpWalker.scf_for,
    "scf.while": WarpWalker.scf_while,
}
