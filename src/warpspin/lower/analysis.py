"""Static analyses of flat SyncIR code for the reduced lowering (docs/semantics.md, "Reductions").

* `liveness`: the locals (and waited barrier arrays, for `obs`) that may still be read from each
  pc on. A dead local is reset to 0 when an instance reaches a visible pc (dead-variable reset).
* `ranges`: an interval for every local over every reachable pc (abstract interpretation with
  widening), so locals get the narrowest Promela type that holds every value they can take.
Both are conservative: an unknown value is the full `int` range, an unknown use is a use.
"""
from __future__ import annotations

import math

from ..syncir.flat import (CLUSTER_ARRIVED, CLUSTER_GEN, BarResume, Bound, Branch, End,
                           FlatProcess, Goto, Let, Op)
from ..syncir.ir import (stmt_exprs, BinOp, ClusterArrive, ClusterWait, Const, Expr, MbarTestWait, MbarWait,
                         Select, UnOp, Var, expr_vars)

INF = math.inf
TOP = (-INF, INF)


def _succ(code, pc: int) -> list[int]:
    ins = code[pc]
    if isinstance(ins, End):
        return []
    if isinstance(ins, Goto):
        return [ins.target]
    if isinstance(ins, Branch):
        return [pc + 1, ins.target]
    return [pc + 1]


def uses_defs(ins) -> tuple[set[str], set[str]]:
    """Locals (and parameters: callers ignore those) read and written by one instruction."""
    if isinstance(ins, Let):
        return expr_vars(ins.value), {ins.var}
    if isinstance(ins, Branch):
        return expr_vars(ins.cond), set()
    if isinstance(ins, Bound):
        return {ins.counter}, {ins.counter}
    if isinstance(ins, BarResume):
        return {ins.snap} | expr_vars(ins.stmt.barrier_id), set()
    if isinstance(ins, Op):
        st = ins.stmt
        uses = set().union(set(), *(expr_vars(e) for e in stmt_exprs(st)))
        defs = set()
        if isinstance(st, MbarTestWait):
            defs.add(st.dest)
        if isinstance(st, ClusterArrive):
            uses.add(CLUSTER_ARRIVED)
            defs |= {CLUSTER_ARRIVED, CLUSTER_GEN}
        if isinstance(st, ClusterWait):
            uses |= {CLUSTER_ARRIVED, CLUSTER_GEN}
            defs.add(CLUSTER_ARRIVED)
        return uses, defs
    return set(), set()


def liveness(fp: FlatProcess) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    """(live locals on entry to each pc, waited barrier arrays still reachable from each pc).
    A BarSync's snapshot is written by the Op and read by the BarResume that follows it."""
    code = fp.code
    n = len(code)
    pred: list[list[int]] = [[] for _ in range(n)]
    for pc in range(n):
        for s in _succ(code, pc):
            if s < n:
                pred[s].append(pc)
    ud = [uses_defs(code[pc]) for pc in range(n)]
    for pc, ins in enumerate(code):  # the BarSync op writes the snapshot its BarResume reads
        if isinstance(ins, BarResume) and pc > 0:
            ud[pc - 1] = (ud[pc - 1][0], ud[pc - 1][1] | {ins.snap})
    waits = [{ins.stmt.bar.name} if isinstance(ins, Op)
             and isinstance(ins.stmt, (MbarWait, MbarTestWait)) else set() for ins in code]
    live = [set() for _ in range(n)]
    arr = [set() for _ in range(n)]
    work = list(range(n))
    while work:
        pc = work.pop()
        out, out_a = set(), set()
        for s in _succ(code, pc):
            if s < n:
                out |= live[s]
                out_a |= arr[s]
        u, d = ud[pc]
        new = u | (out - d)
        new_a = waits[pc] | out_a
        if new != live[pc] or new_a != arr[pc]:
            live[pc], arr[pc] = new, new_a
            work += pred[pc]
    return [frozenset(x) for x in live], [frozenset(x) for x in arr]


# ----------------------------------------------------------------------------- intervals

def _join(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return (min(a[0], b[0]), max(a[1], b[1]))


def _bits_hull(a, b):
    """Result range of ^ & | on non-negative operands."""
    if a[0] < 0 or b[0] < 0 or a[1] == INF or b[1] == INF:
        return TOP
    hi = max(a[1], b[1])
    return (0, (1 << int(hi).bit_length()) - 1)


def interval(e: Expr, env: dict) -> tuple:
    if isinstance(e, Const):
        return (e.value, e.value)
    if isinstance(e, Var):
        return env.get(e.name, TOP)
    if isinstance(e, UnOp):
        a = interval(e.arg, env)
        return (-a[1], -a[0]) if e.op == "-" else (0, 1)
    if isinstance(e, Select):
        return _join(interval(e.then, env), interval(e.else_, env))
    assert isinstance(e, BinOp)
    a, b = interval(e.lhs, env), interval(e.rhs, env)
    op = e.op
    if op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"):
        return (0, 1)
    if op in ("+", "-", "*"):
        if op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if INF in (abs(a[0]), abs(a[1]), abs(b[0]), abs(b[1])):
            return TOP
        c = [x * y for x in a for y in b]
        return (min(c), max(c))
    if op == "min":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if op == "max":
        return (max(a[0], b[0]), max(a[1], b[1]))
    if op == "%":
        return (0, b[1] - 1) if b[0] > 0 else TOP
    if op == "//":
        if b[0] <= 0 or INF in (abs(a[0]), abs(a[1]), b[1]):
            return TOP
        c = [x // y for x in a for y in b]
        return (min(c), max(c))
    if op == "&":
        if a[0] >= 0 and b[0] >= 0:
            return (0, min(a[1], b[1]))
        return _bits_hull(a, b)
    return _bits_hull(a, b)  # ^ |


def _refine(cond: Expr, env: dict, truth: bool) -> dict | None:
    """env restricted to the states where `cond` is `truth` (None: none); only `var op expr`."""
    if not (isinstance(cond, BinOp) and cond.op in ("<", "<=", ">", ">=", "==", "!=")):
        return env
    op, lhs, rhs = cond.op, cond.lhs, cond.rhs
    if not isinstance(lhs, Var) and isinstance(rhs, Var):
        lhs, rhs = rhs, lhs
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
    if not isinstance(lhs, Var) or lhs.name not in env:
        return env
    if not truth:
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[op]
    x, r = env[lhs.name], interval(rhs, env)
    lo, hi = x
    if op == "<":
        hi = min(hi, r[1] - 1)
    elif op == "<=":
        hi = min(hi, r[1])
    elif op == ">":
        lo = max(lo, r[0] + 1)
    elif op == ">=":
        lo = max(lo, r[0])
    elif op == "==":
        lo, hi = max(lo, r[0]), min(hi, r[1])
    elif op == "!=" and r[0] == r[1]:
        if lo == r[0]:
            lo += 1
        if hi == r[0]:
            hi -= 1
    if lo > hi:
        return None
    out = dict(env)
    out[lhs.name] = (lo, hi)
    return out


_UP = (1, 255, 32767, INF)
_DOWN = (0, -32768, -INF)


def _up(x):
    return next(t for t in _UP if x <= t)


def _down(x):
    return next(t for t in _DOWN if x >= t)


def ranges(fp: FlatProcess, params: dict[str, tuple[int, int]]) -> dict[str, tuple]:
    """Interval of every local over every reachable pc."""
    code = fp.code
    init = dict(fp.process.init)
    start = {**params, **{n: (init.get(n, 0), init.get(n, 0)) for n in fp.locals}}
    state: list[dict | None] = [None] * (len(code) + 1)
    state[0] = start
    visits = [0] * (len(code) + 1)
    work = [0]
    heads = {ins.target for pc, ins in enumerate(code)
             if isinstance(ins, (Goto, Branch)) and ins.target <= pc}

    def push(pc, env):
        if env is None or pc >= len(code):
            return
        old = state[pc]
        if old is None:
            state[pc] = env
            work.append(pc)
            return
        new = {k: _join(old[k], env[k]) for k in old}
        if new != old:
            visits[pc] += 1
            if pc in heads and visits[pc] > 4:  # widen the bounds that still move, to the next type bound
                new = {k: (old[k][0] if new[k][0] >= old[k][0] else _down(new[k][0]),
                           old[k][1] if new[k][1] <= old[k][1] else _up(new[k][1])) for k in old}
            state[pc] = new
            work.append(pc)

    while work:
        pc = work.pop()
        env = state[pc]
        ins = code[pc]
        if isinstance(ins, Let):
            push(pc + 1, {**env, ins.var: interval(ins.value, env)})
        elif isinstance(ins, Branch):
            push(pc + 1, _refine(ins.cond, env, True))
            push(ins.target, _refine(ins.cond, env, False))
        elif isinstance(ins, Goto):
            push(ins.target, env)
        elif isinstance(ins, Bound):
            c = env[ins.counter]
            push(pc + 1, {**env, ins.counter: (c[0] + 1, min(c[1] + 1, ins.limit))})
        elif isinstance(ins, End):
            pass
        else:
            out = dict(env)
            if isinstance(ins, Op):
                st = ins.stmt
                if isinstance(st, MbarTestWait):
                    out[st.dest] = _join(env[st.dest], (0, 1))
                if isinstance(st, ClusterArrive):
                    out[CLUSTER_ARRIVED] = _join(env[CLUSTER_ARRIVED], (1, 1))
                    out[CLUSTER_GEN] = TOP
                if isinstance(st, ClusterWait):
                    out[CLUSTER_ARRIVED] = _join(env[CLUSTER_ARRIVED], (0, 0))
            if isinstance(code[pc + 1] if pc + 1 < len(code) else None, BarResume):
                out[code[pc + 1].snap] = TOP
            push(pc + 1, out)
    result = {n: None for n in fp.locals}
    for env in state:
        if env is not None:
            for n in fp.locals:
                result[n] = _join(result[n], env[n])
    # a local that is never reachable keeps its initial value; dead resets write 0
    return {n: _join(r if r is not None else start[n], (0, 0)) for n, r in result.items()}


def ctype(r: tuple) -> str:
    """The narrowest Promela integer type holding the interval."""
    lo, hi = r
    if lo >= 0 and hi <= 255:
        return "byte"
    if lo >= -32768 and hi <= 32767:
        return "short"
    return "int"
