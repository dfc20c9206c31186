"""Per-warp abstract evaluation of a traced kernel into SyncIR statements.

One ``WarpWalker`` runs the kernel body for one warp of one CTA with the thread ids folded
(``tid.x = 32*warp + lane``), so warp-uniform role predicates resolve to constants and the
untaken branches vanish.  What remains dynamic (loop counters, pipeline state, launch
parameters) becomes SyncIR ``Expr``s over locals and parameters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..frontend.mlir_data import Block, Op
from ..frontend.trace import describe_host
from ..syncir.ops import AccAccess, GlobalRead
from ..syncir.ir import (Assign, Const, Expr, For, If, Lanes, Loc, Stmt, Var, While, expr_vars, walk_stmts)
from ..syncir.ops import Unsupported
from . import cute_types as ct
from . import tmem
from .accumulators import accessed
from .cleanup import reads_var, subst_stmts
from .names import host_name, value_name
from .partitions import CASTS
from .values import (ELECT, LANE, Folder, Region, SliceCoord, Unknown, Value, View, lane_values,
                     opaque_reasons, opaque, subst)
from .context import INT_TYPES, MAX_LANE_SPLIT, to_loc, cluster_coord, Context
from .effects import CONTROL, NONE, READS, UNKNOWN, VIEW_PREFIXES, Effects, Rule, rule
from .rules.integers import ARITH, PASS_THROUGH
from .rules.views import _assigned_name
from .rules.asm import _one_st_async, tcgen05_mma_asm
from .rules.tensormaps import LANE_SUBSET
from .rules.tcgen05 import tmem_copy
from .rules import (integers, views, words, stages, mbarrier, barriers, asm, dsmem, tensormaps, clc,
                    copies, tcgen05, mma, globals as globals_)

# re-exported: other modules and tests import these from here
__all__ = ["WarpWalker", "Active", "HANDLERS", "Context", "cluster_coord", "to_loc", "LANE_SUBSET",
           "_assigned_name", "tmem_copy", "tcgen05_mma_asm", "_one_st_async"]


# No effect in the SyncIR model (see docs/dsl-ir.md for why each is safe to drop).
IGNORED = {"nvvm.setmaxregister",
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


# An op no table above names is Unsupported (naming it) unless it is one of these: its results
# are then values the model does not follow (anything that decides synchronization with them is
# Unsupported in turn, cleanup.mark_unsupported), and what it does to memory the cross-cutting
# pass of `WarpWalker.op` records from its declared effects (effects.py). An allow-list, by
# construction:
# * dialects with no side effects (arith, math);
# * cute ops with no memory operand (layout, shape and atom algebra), or that only view memory
#   (`VIEW_PREFIXES`);
# * these, each known to touch no synchronization (ops of other dialects by name), with the
#   effects each declares:
_STORE = Effects("write", "may")
VALUE_OPS: dict[str, Effects] = {
    # stores whose bytes smem_writes_of / Context.written_gmem record (by operand type)
    "llvm.store": _STORE, "cute.memref.store_vec": _STORE,
    # loads (an acquire, if any, only orders more: dropping it can hide no race)
    "nvvm.load.ext": READS, "llvm.load": READS,
    # warp votes and arithmetic intrinsics
    **dict.fromkeys((
        "nvvm.match.sync", "nvvm.fmax", "nvvm.fmin", "nvvm.rcp.approx.ftz.f", "nvvm.add.packed.f32x2",
        "nvvm.fma.packed.f32x2", "nvvm.mul.packed.f32x2", "nvvm.sub.packed.f32x2",
        "nvvm.fabs", "nvvm.ex2.approx.f", "nvvm.ex2.approx.ftz.f", "nvvm.lg2.approx.f",
        "nvvm.rsqrt.approx.f", "nvvm.rsqrt.approx.ftz.f", "nvvm.sqrt.approx.f",
        "nvvm.sin.approx.f", "nvvm.cos.approx.f", "nvvm.redux.sync",
        # LLVM values and address arithmetic (an address's uses are checked where they touch
        # memory)
        "llvm.mlir.undef", "llvm.mlir.poison", "llvm.mlir.constant", "llvm.mlir.zero",
        "llvm.extractvalue", "llvm.insertvalue", "llvm.extractelement", "llvm.insertelement",
        "llvm.shufflevector", "llvm.bitcast", "llvm.zext", "llvm.sext", "llvm.trunc", "llvm.icmp",
        "llvm.fcmp", "llvm.select", "llvm.add", "llvm.sub", "llvm.mul", "llvm.and", "llvm.or",
        "llvm.xor", "llvm.shl", "llvm.lshr", "llvm.ashr", "llvm.fadd", "llvm.fsub", "llvm.fmul",
        "llvm.fdiv", "llvm.fneg", "llvm.fptrunc", "llvm.fpext", "llvm.sitofp", "llvm.uitofp",
        "llvm.fptosi", "llvm.fptoui", "llvm.getelementptr", "llvm.inttoptr",
        "llvm.addrspacecast",
        "cf.assert", "iket.range_push", "iket.range_pop",
        "vector.bitcast", "vector.broadcast", "vector.from_elements", "vector.reduction",
        "vector.to_elements", "vector.insert", "vector.extractelement",
        "vector.insertelement", "vector.shuffle", "vector.splat", "vector.fma",
        "cute_nvgpu.atom.make_tmem_copy", "cute_nvgpu.atom.tma_partition"), NONE),
}
PURE_DIALECTS = ("arith.", "math.")
MEMORY_TYPE = re.compile(r"memref|ptr|smem_desc|tmem")


def unknown_op_why(op: Op) -> Optional[str]:
    """None when `op`, which no rule table names, is a value op (VALUE_OPS); else why it is
    Unsupported."""
    if op.name in VALUE_OPS or op.name.startswith(PURE_DIALECTS) or \
            op.name.startswith(VIEW_PREFIXES):
        return None
    if op.name.startswith("cute.") and not any(MEMORY_TYPE.search(t) for t in op.operand_types):
        return None
    return f"{op.name}: an op with no extraction rule (what it does is not known)"


def effects_of(op: Op) -> Effects:
    """What `op` may do to memory (effects.py): its family's declaration, or a value op's, or
    UNKNOWN (an op with no rule, Unsupported unless a value op)."""
    r = HANDLERS.get(op.name)
    if r is not None:
        return r.of(op)
    if op.name in VALUE_OPS:
        return VALUE_OPS[op.name]
    if op.name in ("llvm.inline_asm", "nvvm.inline_ptx"):
        return asm.asm_effects(op)
    if op.name in ARITH or op.name in PASS_THROUGH or op.name in IGNORED or \
            op.name.startswith(("nvvm.read.ptx.sreg.", *PURE_DIALECTS, *VIEW_PREFIXES)):
        return NONE
    if op.name.startswith("cute.") and not any(MEMORY_TYPE.search(t) for t in op.operand_types):
        return NONE
    return UNKNOWN


def _models_write(s: Stmt) -> bool:
    """`s` is what a rule made of an op that may write global memory: the write modelled (a
    counter's atom.inc, a tensormap write or fence, a store into shared memory through a
    cluster address) or refused (Unsupported, which the verdict says)."""
    from ..syncir.ops import (AtomInc, DsmemStore, SmemStore, StAsync, TensormapAcquire,
                              TensormapRelease, TensormapWrite, TmaLoad)
    from .data import DataAccess
    return isinstance(s, (AtomInc, DsmemStore, SmemStore, StAsync, TensormapWrite, TmaLoad,
                          TensormapAcquire, TensormapRelease, Unsupported)) or \
        isinstance(s, DataAccess) and s.alloc >= 0 and s.write  # (a read: a copy's source)


# ops whose shared-memory result is a part of their staged operand's stage (a view, partition,
# tile or slice of it): the result keeps the stage (extract/values.py Stage)
STAGE_KEEPING = {"cute.get_iter", "cute.make_view", "cute.group_modes", "cute.slice",
                 "cute.mma.make_fragment", "cute_nvgpu.atom.tma_partition", "cute.filter_zeros",
                 "cute.logical_divide", "cute.zipped_divide", "cute.tiled_divide",
                 "cute.flat_divide", "cute.local_tile", "cute.local_partition",
                 "cute.tiled.copy.partition_D", "cute.tiled.copy.partition_S",
                 "cute.tiled.copy.retile", "cute.recast_iter"}


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
                 tensormaps.TensormapRules, clc.ClcRules, copies.CopyRules, tcgen05.Tcgen05Rules,
                 mma.MmaRules, globals_.GlobalRules):
    """One warp's walk: the value environment, the executing lanes (`Active`), op
    dispatch (`op`) and structured control flow; the rules for each op family come from
    the mixins of extract/rules/."""

    def __init__(self, ctx: Context, warp: int, lanes: int, cta: int = 0,
                 grid_block: Optional[tuple[int, int, int]] = None):
        self.ctx, self.k = ctx, ctx.kernel
        self.warp, self.lanes, self.cta = warp, lanes, cta
        # in a grid model (every CTA of the grid, numbered cluster by cluster), CTA `cta` of the
        # model is block `grid_block`
        self.grid_block = grid_block
        self.rank = cta if grid_block is None else cta % ctx.kernel.cluster_size  # %cluster_ctarank
        # the model's number of rank 0 of this CTA's cluster (a peer CTA of rank r is this + r)
        self.cluster_base = cta - self.rank
        self.fence_scope: Optional[str] = None  # a fence.acq_rel since the last global write
        self.f = Folder(lanes)
        self.active = Active(frozenset(range(lanes)), lanes)  # the whole warp
        # the lanes that may run the statements being extracted, as far as the conditions of
        # the enclosing branches that also read other values show (the ownership proof's)
        self.may_lanes = frozenset(range(lanes))
        self.coord_values: dict = {}  # value id -> a coordinate tensor's leaf (ViewRules)
        self.ballots: dict = {}  # vote.ballot value id -> how many lanes' predicates hold
        self.lane_conds: list = []  # the conditions over the lane of the enclosing branches
        self.env: dict[int, Value] = {}
        self.labels: list[str] = []
        self.ptr_stages: dict = {}  # pointer value -> (Stage, bytes) of the staged view it came from
        self.gmem_tiles: dict = {}  # global tile value -> GlobalRules.gmem_base of it
        self.gmem_ctiles: dict = {}  # global tile value -> (origin, extents): GlobalRules.coord_tile
        self.counters: dict[str, tuple[Expr, Expr]] = {}  # enclosing for-loop counters: bounds
        self.local_defs: dict[str, Expr] = {}  # integers.bind's locals: the value each holds
        self.once_loops: set[int] = set()  # scf.while ops shown to run at most once
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
        eff = effects_of(op)
        mark = len(out)
        if self.effects(op, eff, out):
            self.global_write_placed(op, out[mark:])
            return
        r = HANDLERS.get(op.name)
        fenced = self.fence_scope
        if r is not None:
            r.handle(self, op, out)
            if eff.control and self.fence_scope != fenced:
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
            why = unknown_op_why(op)
            if why is not None:
                out.append(Unsupported(why, self.loc(op)))
            self.set_unknown_results(op)
        if eff.global_write != "none":
            self.fence_scope = None  # a global write after the fence: the fence precedes it only
        self.global_write_placed(op, out[mark:])  # (written_gmem's list, not the declaration)

    def global_write_placed(self, op: Op, made: list[Stmt]) -> None:
        """Outside grid models, an op that may write global memory (`Context.written_gmem`) is
        placed when its rule modelled the write (a counter, a tensormap, a store into shared
        memory through a cluster address) or recorded it for extract/ownership.py; any other
        is remembered, and races on what it writes are NOT CHECKED (build.py)."""
        if self.ctx.grid_why is None:
            return
        self.ctx.written_gmem()
        if op.uid not in self.ctx.gmem_writers or op.uid in self.ctx.gmem_settled:
            return
        if any(_models_write(s) for s in made):
            self.ctx.gmem_settled.add(op.uid)
            return
        name = "inline PTX" if op.name in ("llvm.inline_asm", "nvvm.inline_ptx") else op.name
        if op.name == "cute.copy" and op.operand_types:
            name = {"tma_store": "TMA store", "tma_reduce": "TMA reduction",
                    "bulk_copy_s2g": "bulk copy"}.get(ct.atom_kind(op.operand_types[0]), name)
        self.ctx.gmem_unplaced.setdefault(op.uid, (self.ctx.gmem_writers[op.uid], name,
                                                   self.loc(op)))

    def effects(self, op: Op, eff: Effects, out: list[Stmt]) -> bool:
        """The cross-cutting pass over the effects `op` declares (effects.py), before its rule
        runs: the shared-memory writes and uses it may make are recorded; a write into the
        memory a TMA descriptor pointer is computed from, by an op that is not a tensormap
        rule, is Unsupported; an access of a wgmma fragment is an `acc.access`; a store
        through a cluster address is a DSMEM store or Unsupported. True when that settles
        the op (a TMEM view, a DSMEM store)."""
        self.smem_mark = len(self.ctx.smem_writes)
        self.use_mark = len(self.ctx.smem_uses)
        if eff.shared == "write":
            self.smem_writes_of(op)
        if eff.shared != "none":
            self.smem_uses_of(op)
        if eff.global_write == "may" and self.ctx.writes_descriptor_memory(op) and \
                not self.tensormap_asm(op):
            out.append(Unsupported(f"{op.name}: a write into the memory a TMA descriptor pointer "
                                   "is computed from, not read as a tensormap write",
                                   self.loc(op)))
        acc = accessed(self.ctx.accumulators, op)
        if acc is not None:
            out.append(AccAccess(acc, loc=self.loc(op)))
        if tmem.propagate(self, op):  # a view, part or address of a followed TMEM tensor
            return True
        if eff.shared == "none" or eff.cluster == "own" or \
                not any(ct.is_cluster_smem(t) for t in op.operand_types):
            return False
        if eff.shared == "read":  # ld.shared::cluster of a peer's bytes: not modelled
            out.append(Unsupported(f"{op.name}: a load from distributed shared memory the "
                                   "model does not follow", self.loc(op)))
            return False
        # a write into some CTA's shared memory through a cluster address: st.shared::cluster
        # (inline PTX, `st_cluster`; llvm.store and a universal cute.copy through a mapa
        # address, `dsmem_store`) and st.async are followed
        store = self.dsmem_store(op)
        if store is None:
            out.append(Unsupported(f"{op.name}: a store into distributed shared memory the "
                                   "model does not follow", self.loc(op)))
            return False
        self.dsmem_write(op, *store, out)
        self.fence_scope = None
        return True

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
        then, ty = self._region_may(op, 0, cond)
        else_, ey = self._region_may(op, 1, cond)
        tvars, evars = [], []
        self._merge_results(op, ty, ey, cond, tvars, evars)
        if (then or else_) and not tvars and not evars and \
                all(isinstance(s, AccAccess) for s in then + else_):
            # accumulator checks only (a masking branch of the softmax): checked as if the
            # branch ran, whatever its condition; a check changes no state
            out.extend(dict.fromkeys(then + else_))
            return
        if (then or else_) and not tvars and not evars and all(
                _lane_read_check(s) or isinstance(s, Assign) and LANE in expr_vars(cond)
                for s in then + else_):
            # the checks of a per-lane load's indices, each under its lane's conditions
            # (GlobalRules._lane_read_checks), and, under a condition that differs between
            # lanes, the locals of the values each lane computes (fresh, lane-free: the
            # results are their per-lane select): they change no other state
            out.extend(then + else_)
            return
        if then or else_ or tvars:
            out.append(If(cond, tuple(then + tvars), tuple(else_ + evars), loc))

    def _region_may(self, op: Op, i: int, cond: Expr) -> tuple[list[Stmt], list[Value]]:
        """Branch `i` of an ``if`` whose condition the model does not decide per lane: outside
        grid models, only the lanes for which the condition as the ownership proof reads it
        (`side_expr`), with their lane put in, does not fold to the other branch's truth value
        may run it (`may_lanes`)."""
        saved = self.may_lanes
        self.lane_conds.append(cond if i == 0 else self.f.binop("==", cond, Const(0)))
        cond = self.side_expr(op.operands[0])
        if self.ctx.grid_why is not None:
            from .ownership import CLUSTER_VARS, cluster_counts
            # (a grid of one cluster along a dimension: its cluster index there is 0)
            env = {v: 0 for v, n in zip(CLUSTER_VARS, cluster_counts(self.ctx.kernel)) if n == 1}
            self.may_lanes = frozenset(
                l for l in saved
                if not (isinstance(v := subst(cond, {**env, LANE: l}, self.f), Const)
                        and bool(v.value) == bool(i)))
        try:
            return self.region(op, i, [])
        finally:
            self.may_lanes = saved
            self.lane_conds.pop()

    SIDE_OPS = {"arith.andi": "&", "arith.ori": "|", "arith.addi": "+", "arith.subi": "-",
                "arith.muli": "*"}
    SIDE_CMP = {"0": "==", "1": "!=", "2": "<", "3": "<=", "4": ">", "5": ">="}  # (signed)

    def side_expr(self, vid: int, depth: int = 0) -> Expr:
        """`vid` as the ownership proof reads it: the model's value, but with the leaves of
        coordinate tensors (`coord_values`) in place of what the model holds for them,
        through integer arithmetic, comparisons and casts."""
        if vid in self.coord_values:
            return self.coord_values[vid]
        info = self.ctx.kernel.value_info.get(vid)
        op = info.op if info is not None and not info.is_block_arg else None
        if op is not None and depth < 16:
            if op.name in self.SIDE_OPS and len(op.operands) == 2:
                return self.f.binop(self.SIDE_OPS[op.name], self.side_expr(op.operands[0], depth + 1),
                                    self.side_expr(op.operands[1], depth + 1))
            pred = str(op.attrs.get("predicate", ""))
            if op.name == "arith.cmpi" and len(op.operands) == 2 and pred in self.SIDE_CMP:
                return self.f.binop(self.SIDE_CMP[pred], self.side_expr(op.operands[0], depth + 1),
                                    self.side_expr(op.operands[1], depth + 1))
            if op.name in ("cute.get_scalars", *CASTS) and len(op.operands) == 1:
                return self.side_expr(op.operands[0], depth + 1)
            if op.name == "scf.if" and len(op.regions) == 2 and op.operands:
                # a short-circuit `a and b` in the DSL: the branches yield the value
                ys = [r.blocks[0].ops[-1] if r.blocks and r.blocks[0].ops else None
                      for r in op.regions]
                if all(y is not None and y.name == "scf.yield" and
                       len(y.operands) == len(op.results) for y in ys):
                    k = info.index
                    return self.f.select(self.side_expr(op.operands[0], depth + 1),
                                         self.side_expr(ys[0].operands[k], depth + 1),
                                         self.side_expr(ys[1].operands[k], depth + 1))
        return self.expr(vid)

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

    def _one_lane(self) -> bool:
        """One lane executes, and which one is known (a lane predicate, or elect.sync whose lane
        the model takes): a per-lane value there is that lane's."""
        return self.active.count == 1 and (self.active.exact or self.active.leader is not None)

    def _per_lane(self, e: Expr) -> bool:
        """`e` reads the lane index where no single known lane executes."""
        return LANE in expr_vars(e) and not self._one_lane()

    def _merge_results(self, op: Op, ty, ey, cond, tassign: list, eassign: list) -> None:
        """Results of a two-way if: equal values pass through; integers under a modelled
        condition become locals assigned in both branches (the select of the two, where one
        differs between lanes); the rest is opaque."""
        for i, r in enumerate(op.results):
            a = ty[i] if i < len(ty) else None
            b = ey[i] if i < len(ey) else None
            if a is not None and a == b:
                self.env[r] = a
            elif cond is not None and isinstance(a, Expr) and isinstance(b, Expr) and \
                    LANE in expr_vars(cond) | expr_vars(a) | expr_vars(b) and \
                    not (opaque_reasons(cond) or opaque_reasons(a) or opaque_reasons(b)):
                # a value per lane: an expression over the lane (a local holds one value)
                self.env[r] = self.f.select(cond, a, b)
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
                e = self.expr(init)
                if LANE in expr_vars(e) and not opaque_reasons(e) and self.whole_warp():
                    # a value per lane (a warp scan's): one local per lane, a lane table
                    self.env[arg] = self.lane_table(op, e, out, var)
                    names.append(var + LANE_TABLE)
                    continue
                out.append(Assign(var, e, self.loc(op)))
                self.env[arg] = Var(var)
                names.append(var)
            else:
                self.env[arg] = Unknown(f"loop-carried {t[:30]}@{op.loc.short()}")
                names.append(None)
        return names

    def _carried(self, n: str) -> Expr:
        """A carried local's value after the loop (a lane table's: the select of its lanes)."""
        if not n.endswith(LANE_TABLE):
            return Var(n)
        return self.lane_select(self.lane_locals(n[:-len(LANE_TABLE)]))

    def _update(self, names: list[Optional[str]], ys: list[Value], loc: Loc) -> list[Stmt]:
        """Simultaneous assignment names := ys (through temporaries only when an update reads
        another variable of the same update)."""
        pairs = [(n, y if isinstance(y, Expr) else opaque("non-integer loop value"))
                 for n, y in zip(names, ys) if n is not None]
        # a lane table's locals, each its lane's value
        pairs = [q for n, e in pairs for q in (
            [(ln, subst(e, {LANE: lane}, self.f))
             for lane, ln in enumerate(self.lane_locals(n[:-len(LANE_TABLE)]))]
            if n.endswith(LANE_TABLE) else [(n, e)])]
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
            self.env[r] = self._carried(n) if n else y
        if not isinstance(step, Const) or step.value <= 0:
            out.append(Unsupported(f"scf.for with step {step!r:.40}", self.loc(op)))
            return
        out.append(For(iv, lb, ub, tuple(stmts), step.value, self.loc(op)))

    def scf_while(self, op: Op, out: list) -> None:
        if self.flag_spin(op, out):
            return
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        if _runs_once(before, after, self.ctx.kernel):
            self.once_loops.add(op.uid)
        names = self._carry(op, "w", op.operands, before, [], out, 0)
        pre, cterm = self.block(before, [self.val(a) for a in before.args])
        cond = self.expr(cterm.operands[0]) if cterm is not None else opaque("while condition")
        fwd = [self.val(v) for v in cterm.operands[1:]] if cterm is not None else []
        cvar = f"wc{op.uid}"
        fnames = []
        head: list[Stmt] = list(pre) + [Assign(cvar, cond, self.loc(op))]
        for i, (v, t) in enumerate(zip(fwd, after.arg_types)):
            if isinstance(v, Expr) and LANE in expr_vars(v) and not opaque_reasons(v) and \
                    self.whole_warp():
                fnames.append(f"wf{op.uid}_{i}" + LANE_TABLE)
                head += [Assign(ln, subst(v, {LANE: lane}, self.f), self.loc(op))
                         for lane, ln in enumerate(self.lane_locals(f"wf{op.uid}_{i}"))]
            elif isinstance(v, Expr):
                fnames.append(f"wf{op.uid}_{i}")
                head.append(Assign(fnames[-1], v, self.loc(op)))
            else:
                fnames.append(None)
        fvals = [self._carried(n) if n else v for n, v in zip(fnames, fwd)]
        first: dict[str, Expr] = {}
        if op.uid in self.once_loops:  # in its one trip the loop's values are the first ones
            first = {n: self.expr(o) for n, o in zip(names, op.operands)
                     if n is not None and not n.endswith(LANE_TABLE)}
            first.update({n: v for n, v in zip(fnames, fwd)
                          if n is not None and not n.endswith(LANE_TABLE)})
            self.local_defs.update(first)
        body, term = self.block(after, fvals)
        for n in first:  # (after the loop they hold what the last condition computed)
            self.local_defs.pop(n, None)
        ys = [self.val(v) for v in term.operands] if term is not None else []
        body += self._update(names, ys, self.loc(op))
        body += head  # re-evaluate the condition for the next iteration
        out.extend(head)
        out.append(While(Var(cvar), tuple(body), loc=self.loc(op)))
        for r, v in zip(op.results, fvals):
            self.env[r] = v


def _runs_once(before, after, kernel) -> bool:
    """A `scf.while` whose condition is a carried value every trip sets to a constant false
    (a single-tile scheduler's `is_valid_tile`): it runs at most once."""
    cond = before.ops[-1] if before.ops else None
    yield_ = after.ops[-1] if after.ops else None
    if cond is None or cond.name != "scf.condition" or not cond.operands or yield_ is None or \
            cond.operands[0] not in before.args:
        return False
    i = before.args.index(cond.operands[0])
    info = kernel.value_info.get(yield_.operands[i]) if i < len(yield_.operands) else None
    return info is not None and info.op is not None and info.op.name == "arith.constant" and \
        str(info.op.attrs.get("value")) in ("0", "false", "False")


LANE_TABLE = "@lanes"  # (a carried value's name suffix: one local per lane)

# structured control flow: the walker's own table
def _lane_read_check(s) -> bool:
    """A check of one lane's index of a per-lane load (GlobalRules._lane_read_checks: a
    GlobalRead of 0 into its LANE_CHECK local, maybe under its lane's conditions)."""
    if isinstance(s, If) and len(s.then) == 1 and not s.else_:
        s = s.then[0]
    return isinstance(s, GlobalRead) and s.dest is not None and \
        s.dest.startswith(globals_.LANE_CHECK) and s.value == Const(0)


CONTROL_FLOW = {
    "scf.if": rule(WarpWalker.scf_if, CONTROL),
    "scf.for": rule(WarpWalker.scf_for, CONTROL),
    "scf.while": rule(WarpWalker.scf_while, CONTROL),
}
# the op tables of the rule families (rules/*.py) and the walker's own; no op is in two
# of them (tests/test_extract_rules.py)
FAMILIES: dict[str, dict] = {
    "integers": integers.HANDLERS,
    "views": views.HANDLERS,
    "words": words.HANDLERS,
    "stages": stages.HANDLERS,
    "mbarrier": mbarrier.HANDLERS,
    "barriers": barriers.HANDLERS,
    "asm": asm.HANDLERS,
    "dsmem": dsmem.HANDLERS,
    "tensormaps": tensormaps.HANDLERS,
    "clc": clc.HANDLERS,
    "copies": copies.HANDLERS,
    "tcgen05": tcgen05.HANDLERS,
    "mma": mma.HANDLERS,
    "globals": globals_.HANDLERS,
    "control flow": CONTROL_FLOW,
}
HANDLERS: dict[str, Rule] = {
    name: r for table in FAMILIES.values() for name, r in table.items()}
