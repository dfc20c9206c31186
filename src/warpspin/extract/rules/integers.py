"""Integer values: arith and int-tuple arithmetic, comparisons and selects, shifts, FastDivmod,
special registers and the launch geometry (this CTA in its cluster, the cluster in the grid),
elect.sync's value and shfl.sync.
"""
from __future__ import annotations

import re
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ir import Assign, BinOp, Const, Expr, Select, UnOp, Var, expr_vars
from .. import cute_types as ct
from ..values import (split_lane, ELECT, LANE, FastQuot, MulHi, Unknown, lane_values,
                      opaque_reasons, opaque, subst)
from ..context import INT_TYPES, cluster_coord
from ..effects import NONE, rule


CMP = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
ARITH = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divsi": "//",
         "arith.divui": "//", "arith.floordivsi": "//", "arith.remsi": "%", "arith.remui": "%",
         "arith.andi": "&", "arith.ori": "|", "arith.xori": "^", "arith.minsi": "min",
         "arith.maxsi": "max", "arith.minui": "min", "arith.maxui": "max"}
# scalar int-tuple arithmetic (cute.tuple_div/mod: floor semantics, as for arith.floordivsi)
TUPLE_ARITH = {"cute.tuple_add": "+", "cute.tuple_sub": "-", "cute.tuple_mul": "*",
               "cute.tuple_div": "//", "cute.tuple_mod": "%"}
PASS_THROUGH = {"arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast",
                "arith.index_castui", "builtin.unrealized_conversion_cast",
                "cute_nvgpu.arch.make_warp_uniform", "cute.recast_iter", "cute.derefine",
                "cute.assume", "cute.get_scalars", "cute.to_int_tuple", "llvm.ptrtoint", "cute.ptrtoint",
    "cute.inttoptr"}


BIG_EXPR = 6  # expression nodes kept inline before a value gets its own local


def _size(e: Expr) -> int:
    if isinstance(e, BinOp):
        return 1 + _size(e.lhs) + _size(e.rhs)
    if isinstance(e, Select):
        return 1 + _size(e.cond) + _size(e.then) + _size(e.else_)
    if isinstance(e, UnOp):
        return 1 + _size(e.arg)
    return 1


class IntegerRules:
    """The walker's rules for integer values (mixed into `WarpWalker`)."""

    # -- integers --------------------------------------------------------------------------
    def constant(self, op: Op, out) -> None:
        v = op.attrs.get("value")
        t = op.result_types[0]
        if isinstance(v, bool) or (isinstance(v, int) and t in INT_TYPES):
            self.env[op.result] = Const(int(v))
        else:
            self.env[op.result] = Unknown(f"constant {t}", uniform=True)

    def arith(self, op: Op, out: list) -> None:
        if op.result_types[0] not in INT_TYPES:
            self.set_unknown_results(op)
            return
        if op.name == "arith.andi" and ELECT in (self.val(o) for o in op.operands[:2]):
            self.elect_and(op)
            return
        a, b = self.expr(op.operands[0]), self.expr(op.operands[1])
        self.bind(op, self.f.binop(ARITH[op.name], a, b), out)

    def elect_and(self, op: Op) -> None:
        """``elect.sync() & p`` (canonicalize merges ``if elect: if p:`` into one ``if``): the
        elected lane when ``p`` holds for every executing lane, nothing when it holds for none.
        Otherwise it depends on which lane is elected: PTX only says the choice is the same for
        the same membermask every time; the model takes the lowest executing lane (what sm_90
        elects) and the verdict states that assumption."""
        a, b = (self.val(o) for o in op.operands[:2])
        p = b if a is ELECT else a
        if p is ELECT:
            self.env[op.result] = ELECT
            return
        if isinstance(p, Expr) and expr_vars(p) <= {LANE}:
            lv = lane_values(p, self.lanes)
            seen = None if lv is None else {bool(lv[l]) for l in self.active.lanes}
            if seen is not None and len(seen) > 1:
                leader = min(self.active.lanes)
                self._assume_leader(op, leader)
                seen = {bool(lv[leader])}
            if seen == {True}:
                self.env[op.result] = ELECT
            elif seen == {False}:
                self.env[op.result] = Const(0)
            else:
                self.env[op.result] = opaque(
                    f"elect.sync and a lane predicate the model cannot evaluate per lane"
                    f"@{op.loc.short()}")
            return
        self.env[op.result] = opaque(f"elect.sync combined with another condition"
                                     f"@{op.loc.short()}")

    def bind(self, op: Op, e: Expr, out: list, result: Optional[int] = None) -> None:
        """Result of integer arithmetic (`op`'s result, or its result `result` of several): kept
        inline while small, else a local (so repeated state updates, e.g. an unrolled
        producer_tail, do not nest without bound)."""
        if _size(e) > BIG_EXPR and expr_vars(e) - set(self.ctx.params) - {LANE}:
            name = f"v{op.uid}" if result is None else f"v{op.uid}_{result}"
            split = split_lane(e) if LANE in expr_vars(e) else None
            if split is None and LANE in expr_vars(e):  # each lane's value in a local of its own
                self.env[op.result if result is None else result] = self.lane_table(op, e, out,
                                                                                    name)
                return
            self.local_defs[name] = split[0] if split is not None else e
            if split is not None:  # the local holds the lane-free part; the lane's stays inline
                out.append(Assign(name, split[0], self.loc(op)))
                e = self.f.binop("+", Var(name), split[1])
            else:
                out.append(Assign(name, e, self.loc(op)))
                e = Var(name)
        self.env[op.result if result is None else result] = e

    def tuple_arith(self, op: Op, out) -> None:
        """``cute.tuple_add/sub/mul/div/mod`` on scalar int tuples: integer arithmetic."""
        if len(op.operands) != 2 or not (ct.is_dynamic_scalar(op.result_types[0])
                                         or ct.static_int(op.result_types[0]) is not None):
            self.set_unknown_results(op)
            return
        a, b = self.val(op.operands[0]), self.val(op.operands[1])
        if not (isinstance(a, Expr) and isinstance(b, Expr)):
            self.set_unknown_results(op)
            return
        self.bind(op, self.f.binop(TUPLE_ARITH[op.name], a, b), out)

    def ceildiv(self, op: Op, out) -> None:
        a, b = self.expr(op.operands[0]), self.expr(op.operands[1])
        self.env[op.result] = self.f.binop("//", self.f.binop("+", a, self.f.binop("-", b, Const(1))), b)

    def fast_divmod_compute(self, op: Op, out) -> None:
        """``cute.fast_divmod.compute(n, divisor)`` -> (quotient, remainder), where the divisor is
        a kernel argument of type ``!cute.fast_divmod_divisor`` (the host packs the divisor with
        its multiplier and shift): exactly ``n // d`` and ``n % d`` under the FastDivmod contract
        (a dividend in 0..2^31-1), an assumption the verdict states. ``d`` is a launch parameter
        named after the argument (``argN``: the divisor itself, e.g. the number of heads)."""
        n = self.val(op.operands[0])
        idx = self.kernel_arg(op.operands[1])
        if not isinstance(n, Expr) or idx is None or len(op.results) != 2 \
                or not op.operand_types[1].startswith("!cute.fast_divmod_divisor"):
            self.set_unknown_results(op)
            return
        d = self.ctx.param(f"arg{idx}", f"the divisor of a cute.FastDivmodDivisor (kernel "
                           f"argument {idx}, at least 1)", self.loc(op))
        self.ctx.divisor(d)
        self.ctx.assumptions.add(f"FastDivmod at {op.loc.short()}: its dividend lies in 0..2^31-1 "
                                 f"and the host packed divisor arg{idx} with its multiplier and "
                                 "shift")
        self.bind(op, self.f.binop("//", n, d), out, op.results[0])
        self.bind(op, self.f.binop("%", n, d), out, op.results[1])

    def cute_ceil_div(self, op: Op, out) -> None:
        """``cute.ceil_div`` of scalars. Of launch values it stays one launch parameter (named
        after it: the user sets the block count, as before). Of a loop or branch variable (a
        scheduler's tile index) it is ``(a + b - 1) // b`` for a positive constant ``b``: the
        ceiling for every ``a``; since the lowering's rounding of a negative ``a`` (not a shape)
        is not documented, that the dividend is not negative is a stated assumption."""
        operands = [self.val(o) for o in op.operands]
        scalar = (len(op.operands) == 2 and len(op.results) == 1
                  and ct.is_dynamic_scalar(op.result_types[0]))
        if scalar and not isinstance(operands[1], Const):
            tile = re.fullmatch(r'!cute\.tile<"(\d+)(?::\d+)?">', op.operand_types[1])
            if tile:  # a static 1-D tiler: divide by its size
                operands[1] = Const(int(tile.group(1)))
        if (not scalar or all(self.is_uniform(v) for v in operands)
                or not all(isinstance(v, Expr) for v in operands)
                or not isinstance(operands[1], Const) or operands[1].value <= 0):
            self.set_unknown_results(op)
            return
        a, b = operands
        self.ctx.assumptions.add(f"cute.ceil_div at {op.loc.short()}: its dividend is not "
                                 "negative (a shape)")
        self.bind(op, self.f.binop("//", self.f.binop("+", a, Const(b.value - 1)), b), out)

    def kernel_arg(self, vid: int) -> Optional[int]:
        info = self.k.value_info.get(vid)
        return info.index if info is not None and info.is_block_arg and info.region == -1 else None

    def shift(self, op: Op, out) -> None:
        hi = self.val(op.operands[0])
        if op.name == "arith.shrui" and isinstance(hi, MulHi):
            s_arg, m_arg = self.kernel_arg(op.operands[1]), self.kernel_arg(hi.m)
            if s_arg is not None and m_arg == s_arg - 1:
                self.env[op.result] = FastQuot(hi.n, m_arg)
                return
        a, b = self.expr(op.operands[0]), self.expr(op.operands[1])
        if isinstance(b, Const) and b.value >= 0:
            k = Const(1 << b.value)
            self.env[op.result] = self.f.binop("*" if op.name == "arith.shli" else "//", a, k)
        else:
            self.env[op.result] = opaque(f"{op.name}@{op.loc.short()}")

    def cmpi(self, op: Op, out) -> None:
        pred = op.attrs.get("predicate")
        sym = CMP.get(pred) if isinstance(pred, int) else None
        if sym is None:
            self.set_unknown_results(op)
            return
        a, b = (self.val(o) for o in op.operands[:2])
        if sym == "!=" and (a is ELECT and b == Const(0) or b is ELECT and a == Const(0)):
            self.env[op.result] = ELECT  # `elect != 0`: elect.sync's value as an integer
            return
        self.bind(op, self.f.binop(sym, self.expr(op.operands[0]), self.expr(op.operands[1])), out)

    def select(self, op: Op, out) -> None:
        c = self.val(op.operands[0])
        t, e = self.val(op.operands[1]), self.val(op.operands[2])
        if isinstance(e, FastQuot):
            self.fast_divmod(op, e, out)
            return
        if isinstance(c, Expr) and isinstance(t, Expr) and isinstance(e, Expr):
            self.bind(op, self.f.select(c, t, e), out)
        elif isinstance(c, Const):
            self.env[op.result] = t if c.value else e
        elif t == e:
            self.env[op.result] = t
        else:
            self.set_unknown_results(op)

    def fast_divmod(self, op: Op, q: FastQuot, out) -> None:
        """``select(magic == 0, n, mul.hi(n, magic) >> shift)``: the quotient of a FastDivmod
        (quack's fast_math, CUTLASS's FastDivmod), whose magic, shift and divisor are three
        consecutive kernel arguments computed by the host for the divisor. Under its contract
        (a dividend in 0..2^31-1) it is exactly ``n // divisor``; that contract is an assumption
        the verdict states."""
        args = self.k.args
        d_index = q.magic + 2
        cond = self.val(op.operands[0])
        want = self.f.binop("==", self.expr(args[q.magic].value), Const(0)) \
            if q.magic < len(args) else None
        if op.operands[1] != q.n or cond != want or d_index >= len(args) \
                or args[d_index].type != "i32":
            self.env[op.result] = opaque(f"mul.hi.u32 and a shift@{op.loc.short()}")
            return
        n, d = self.expr(q.n), self.expr(args[d_index].value)
        self.ctx.divisor(d)
        self.ctx.assumptions.add(f"FastDivmod at {op.loc.short()}: its dividend lies in 0..2^31-1 "
                                 f"and the host computed its multiplier and shift for the divisor "
                                 f"(kernel arguments {q.magic}..{d_index})")
        self.bind(op, self.f.binop("//", n, d), out)

    def sreg(self, op: Op) -> None:
        reg = op.name[len("nvvm.read.ptx.sreg."):]
        bx, by, bz = self.k.block_dim or (None, None, None)
        lin = Const(32 * self.warp) + Var(LANE)
        d = reg[-1] if reg[-2:] in (".x", ".y", ".z") else None
        if reg == "laneid":
            v: Expr = Var(LANE)
        elif reg == "tid.x" and bx:
            v = lin if by in (None, 1) and bz in (None, 1) else self.f.binop("%", lin, Const(bx))
        elif reg == "tid.y" and bx:
            v = self.f.binop("%", self.f.binop("//", lin, Const(bx)), Const(by or 1))
        elif reg == "tid.z" and bx:
            v = self.f.binop("//", lin, Const(bx * (by or 1)))
        elif reg.startswith("ntid.") and bx:
            v = Const({"x": bx, "y": by, "z": bz}[d])
        elif reg == "cluster.ctarank":
            v = Const(self.rank)
        elif reg == "cluster.nctarank":
            v = Const(self.k.cluster_size)
        elif reg.startswith("cluster.nctaid.") and d:  # CTAs per cluster in d (cluster shape)
            v = Const(self.cluster_dim(d))
        elif reg.startswith("cluster.ctaid.") and d:  # this CTA's coordinate in its cluster
            v = Const(self.cluster_coord(d))
        elif reg.startswith("clusterid.") and d:
            v = self.cluster_id(d, op)
        elif reg.startswith("nclusterid.") and d:
            v = self.num_clusters(d, op)
        elif reg.startswith("ctaid.") and d:
            # the CTAs of a cluster have consecutive block indices in every dimension
            v = self.f.binop("+", self.f.binop("*", self.cluster_id(d, op),
                                               Const(self.cluster_dim(d))),
                             Const(self.cluster_coord(d)))
        elif reg.startswith("nctaid.") and d:
            v = self.f.binop("*", self.num_clusters(d, op), Const(self.cluster_dim(d)))
        else:
            v = opaque(f"sreg {reg}")
        self.env[op.result] = v

    # -- launch geometry: this CTA within its cluster, the cluster within the grid ------------
    def cluster_dim(self, d: str) -> int:
        return (self.k.cluster_dim or (1, 1, 1))["xyz".index(d)]

    def cluster_coord(self, d: str) -> int:
        return cluster_coord(self.k, self.rank, d)

    def num_clusters(self, d: str, op: Op) -> Expr:
        """%nclusterid.d: clusters in the grid in d (grid / cluster shape); a param when the grid
        is dynamic."""
        grid = self.k.grid_dim
        if grid is not None:
            return Const(grid["xyz".index(d)] // self.cluster_dim(d))
        c = self.cluster_dim(d)
        return self.ctx.param(f"nclusterid_{d}",
                              f"clusters in the grid in {d} (grid size {d} = nclusterid_{d}"
                              + (f" * {c}" if c != 1 else "") + ")", self.loc(op))

    def cluster_id(self, d: str, op: Op) -> Expr:
        """%clusterid.d: which cluster of the grid is modelled (one param for every CTA of the
        cluster); over every cluster of a static grid."""
        if self.grid_block is not None:
            return Const(self.grid_block["xyz".index(d)] // self.cluster_dim(d))
        grid, c = self.k.grid_dim, self.cluster_dim(d)
        rng = None if grid is None else (0, grid["xyz".index(d)] // c - 1)
        what = f"cluster index {d} (which cluster of the grid; block index {d} = clusterid_{d}"
        what += f" * {c} + the CTA's rank in {d})" if c != 1 else ")"
        return self.ctx.param(f"clusterid_{d}", what, self.loc(op), rng)

    def elect(self, op, out):
        self.env[op.result] = ELECT

    def shfl_sync(self, op: Op, out: list) -> None:
        """``shfl.sync`` by the whole warp of a 32-lane width (PTX 9.7.8.6: the source lane j of
        idx ``b``, up ``lane - b``, down ``lane + b``, bfly ``lane ^ b``; out of range against
        the clamp value c, a lane keeps its own value): lane j's value of a per-lane value (an
        expression over the lane), a select over the 32 lanes where j is not a constant. Other
        shuffles (a narrower width, a partial mask or warp) are values the model does not
        follow."""
        m = re.search(r"shfl_kind (\w+)", str(op.attrs.get("kind", "")))
        if m is None or len(op.operands) < 4 or not self.whole_warp() or self.lanes != 32:
            self.set_unknown_results(op)
            return
        mask, value, b, c = (self.val(o) for o in op.operands[:4])
        if not (isinstance(mask, Const) and mask.value & 0xffffffff == 0xffffffff
                and isinstance(c, Const) and (c.value >> 8) & 0x1f == 0
                and isinstance(value, Expr) and isinstance(b, Expr)) \
                or opaque_reasons(value) or opaque_reasons(b):  # a value not followed: name it
            self.set_unknown_results(op)
            return
        clamp, lane, f = c.value & 0x1f, Var(LANE), self.f
        b = f.binop("&", b, Const(31))  # (PTX reads b[4:0] in every mode)
        j = {"idx": b, "up": f.binop("-", lane, b), "down": f.binop("+", lane, b),
             "bfly": f.binop("^", lane, b)}.get(m.group(1))
        if j is None:
            self.set_unknown_results(op)
            return
        ok = f.binop(">=" if m.group(1) == "up" else "<=", j, Const(clamp))
        if isinstance(j, Const) or m.group(1) in ("up", "down") and isinstance(b, Const):
            got = subst(value, {LANE: j}, f)
        else:  # a source lane computed at run time: the select of the lanes' values
            got = subst(value, {LANE: 31}, f)
            for src in reversed(range(31)):
                got = f.select(f.binop("==", j, Const(src)), subst(value, {LANE: src}, f), got)
        if m.group(1) == "idx" and clamp == 31:  # (j = b & 31 is always in range)
            ok = Const(1)
        self.env[op.result] = self.lane_table(op, f.select(ok, got, value), out)

    def lane_table(self, op: Op, value: Expr, out: list, name: str = "") -> Expr:
        """A value per lane held as 32 locals, one per lane (`s<op>_<lane>`), and read as the
        select of the executing lane's: a warp scan's shuffles substitute lanes into the
        value again and again, which would grow the expression without bound."""
        if LANE not in expr_vars(value):
            return value
        names = self.lane_locals(name or f"s{op.uid}")
        for lane, n in enumerate(names):
            mine = subst(value, {LANE: lane}, self.f)
            self.local_defs[n] = mine  # (what the ownership proof reads back)
            out.append(Assign(n, mine, self.loc(op)))
        return self.lane_select(names)

    def lane_locals(self, base: str) -> list[str]:
        """The names of a lane table's locals, one per lane."""
        return [f"{base}_l{lane}" for lane in range(self.lanes)]

    def lane_select(self, names: list[str]) -> Expr:
        """The executing lane's local of a lane table."""
        got: Expr = Var(names[-1])
        for lane in reversed(range(len(names) - 1)):
            got = self.f.select(self.f.binop("==", Var(LANE), Const(lane)), Var(names[lane]), got)
        return got

    def vote_sync(self, op: Op, out: list) -> None:
        """``vote.sync`` by the whole warp of a per-lane predicate: ``any`` / ``all`` of the 32
        lanes' values; a ``ballot``'s bits are followed through ``popc`` (math.ctpop) only, as
        the number of lanes whose predicate holds."""
        m = re.search(r"vote_sync_kind (\w+)", str(op.attrs.get("kind", "")))
        mask, pred = (self.val(o) for o in op.operands[:2]) if len(op.operands) >= 2 else (0, 0)
        if m is None or not self.whole_warp() or self.lanes != 32 or not (
                isinstance(mask, Const) and mask.value & 0xffffffff == 0xffffffff
                and isinstance(pred, Expr) and not opaque_reasons(pred)):
            self.set_unknown_results(op)
            return
        f = self.f
        count = Const(0)
        for lane in range(32):
            count = f.binop("+", count, f.binop("!=", subst(pred, {LANE: lane}, f), Const(0)))
        if m.group(1) == "ballot":
            self.ballots[op.result] = count
            self.set_unknown_results(op)
        elif m.group(1) in ("any", "all"):
            self.bind(op, f.binop(">" if m.group(1) == "any" else "==", count,
                                  Const(0 if m.group(1) == "any" else 32)), out)
        else:
            self.set_unknown_results(op)

    def popc(self, op: Op, out: list) -> None:
        """``popc`` of a ballot: the number of lanes whose predicate holds."""
        if op.operands and op.operands[0] in self.ballots:
            self.bind(op, self.ballots[op.operands[0]], out)
        else:
            self.set_unknown_results(op)

HANDLERS = {
    "arith.constant": rule(IntegerRules.constant, NONE),
    "arith.cmpi": rule(IntegerRules.cmpi, NONE),
    "arith.select": rule(IntegerRules.select, NONE),
    "cute.ceil_div": rule(IntegerRules.cute_ceil_div, NONE),
    "cute.fast_divmod.compute": rule(IntegerRules.fast_divmod_compute, NONE),
    "arith.ceildivsi": rule(IntegerRules.ceildiv, NONE),
    "arith.ceildivui": rule(IntegerRules.ceildiv, NONE),
    "arith.shli": rule(IntegerRules.shift, NONE),
    "arith.shrsi": rule(IntegerRules.shift, NONE),
    "arith.shrui": rule(IntegerRules.shift, NONE),
    "cute.tuple_add": rule(IntegerRules.tuple_arith, NONE),
    "cute.tuple_sub": rule(IntegerRules.tuple_arith, NONE),
    "cute.tuple_mul": rule(IntegerRules.tuple_arith, NONE),
    "cute.tuple_div": rule(IntegerRules.tuple_arith, NONE),
    "cute.tuple_mod": rule(IntegerRules.tuple_arith, NONE),
    "nvvm.elect.sync": rule(IntegerRules.elect, NONE),
    "nvvm.shfl.sync": rule(IntegerRules.shfl_sync, NONE),
    "nvvm.vote.sync": rule(IntegerRules.vote_sync, NONE),
    "math.ctpop": rule(IntegerRules.popc, NONE),
}
