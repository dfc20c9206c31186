"""R9 (docs/semantics.md, "Reductions"): a test-wait whose failure only leads, through local
code, to a wait on the same phase is not taken while it would fail.

`blocking_tests` follows the local code after each test-wait symbolically: every local is an
expression over the locals at the test, and beside it an interval (from the range analysis at the
test, refined by each branch taken). A branch whose condition folds to a constant, or whose other
side the intervals rule out, is followed; any other forks, and its condition is recorded. A path
qualifies when

* with the result 0 it reaches, with no loop bound and no range-checked assignment on the way,
  a wait on the same barrier element with the same parity (the same expressions), and
* with the result 1 (the test passed), and from after that wait with the result 0, the local code
  reaches the same pc with the same value of every local live there, path for path.

The condition returned is the disjunction of the qualifying paths' branch conditions.
"""
from __future__ import annotations

from ..syncir.flat import Bound, Branch, FlatProcess, Goto, Let, Op
from ..syncir.ir import eval_expr
from ..syncir.ir import BinOp, Const, Expr, Select, UnOp, Var, expr_vars
from ..syncir.ops import MbarTestWait, MbarWait
from ..syncir.rules import all_of, any_of
from .analysis import _refine, interval

MAX_STEPS = 512  # local instructions followed per path
MAX_PATHS = 16   # paths followed per walk


def substitute(e: Expr, env: dict[str, Expr]) -> Expr:
    """`e` with every local of `env` replaced by its expression, constants folded."""
    if isinstance(e, Var):
        return env.get(e.name, e)
    if isinstance(e, UnOp):
        out = UnOp(e.op, substitute(e.arg, env))
    elif isinstance(e, BinOp):
        out = BinOp(e.op, substitute(e.lhs, env), substitute(e.rhs, env))
    elif isinstance(e, Select):
        c = substitute(e.cond, env)
        if isinstance(c, Const):
            return substitute(e.then if c.value != 0 else e.else_, env)
        out = Select(c, substitute(e.then, env), substitute(e.else_, env))
    else:
        return e
    if not expr_vars(out):
        try:
            return Const(eval_expr(out, {}))
        except Exception:  # noqa: BLE001 - a division by zero stays symbolic (and unequal)
            return out
    return out


def _walk(code, start: int, env: dict, ienv: dict, conds: dict, checked: set[str]):
    """The feasible paths of local code from `start` under the branch conditions `conds`: a list
    of (pc of the op it rests at, env, intervals, conditions {expr: truth}), or None when a path
    meets a loop bound or a range-checked assignment, runs too long or forks too often."""
    out, todo = [], [(start, dict(env), dict(ienv), dict(conds), 0)]
    while todo:
        if len(out) + len(todo) > MAX_PATHS:
            return None
        pc, env, ienv, conds, steps = todo.pop()
        while pc is not None:
            steps += 1
            if steps > MAX_STEPS or pc >= len(code):
                return None
            ins = code[pc]
            if isinstance(ins, Op):
                out.append((pc, env, ienv, conds))
                break
            if isinstance(ins, Bound) or (isinstance(ins, Let) and ins.var in checked):
                return None
            if isinstance(ins, Let):
                ienv = {**ienv, ins.var: interval(ins.value, ienv)}
                env = {**env, ins.var: substitute(ins.value, env)}
                pc += 1
            elif isinstance(ins, Goto):
                pc = ins.target
            elif isinstance(ins, Branch):
                c = substitute(ins.cond, env)
                sides = {True: _refine(ins.cond, ienv, True), False: _refine(ins.cond, ienv, False)}
                if isinstance(c, Const):
                    sides = {c.value != 0: sides[c.value != 0]}
                elif c in conds:
                    sides = {conds[c]: sides[conds[c]]}
                sides = {t: e for t, e in sides.items() if e is not None}
                if not sides:
                    pc = None  # infeasible: no state at the test takes this path
                    continue
                if len(sides) == 2 and not isinstance(c, Const):
                    todo.append((ins.target, env, sides[False], {**conds, c: False}, steps))
                    pc, ienv, conds = pc + 1, sides[True], {**conds, c: True}
                else:
                    (truth, ienv), = sides.items()
                    pc = pc + 1 if truth else ins.target
            else:
                return None
    return out


def _same_ends(passed, after, live, w: int) -> bool:
    """Every path of `passed` has a path of `after` under the same branch conditions, and the
    other way round, and the two rest at the same pc (not the wait w) with the same value of
    every local live there."""
    ends = {frozenset(c.items()): (pc, env) for pc, env, _, c in after}
    if len(ends) != len(after) or len(passed) != len(after):
        return False
    for r1, env1, _, c in passed:
        r0, env2 = ends.get(frozenset(c.items()), (None, None))
        if r0 != r1 or r1 == w:
            return False
        if any(substitute(Var(v), env1) != substitute(Var(v), env2) for v in live[r1]):
            return False
    return True


def _condition(conds: dict) -> Expr:
    return all_of(*(BinOp("!=" if truth else "==", c, Const(0)) for c, truth in conds.items()))


def blocking_tests(fp: FlatProcess, live: list[frozenset[str]], checked: set[str],
                   intervals: list) -> dict[int, Expr]:
    """{pc of a test-wait: the condition, over the locals there, under which its failure only
    leads to a wait on the same phase (see the module docstring)}. `intervals`: per pc, the
    intervals of the locals and launch parameters on entry (analysis.pc_states)."""
    code = fp.code
    out = {}
    for a, ins in fp.ops():
        test = ins.stmt
        if (not isinstance(test, MbarTestWait) or test.bar.cta is not None
                or intervals[a] is None):
            continue
        at = lambda v: {**intervals[a], test.dest: (v, v)}  # noqa: E731
        failed = _walk(code, a + 1, {test.dest: Const(0)}, at(0), {}, checked)
        if not failed:
            continue
        qualifying = []
        for w, env0, ienv0, conds in failed:
            wait = code[w].stmt
            if not (isinstance(wait, MbarWait) and wait.bar.name == test.bar.name
                    and wait.bar.cta is None and w != a
                    and substitute(wait.bar.index, env0) == test.bar.index
                    and substitute(wait.parity, env0) == test.parity):
                continue
            passed = _walk(code, a + 1, {test.dest: Const(1)}, at(1), conds, checked)
            after = _walk(code, w + 1, env0, ienv0, conds, checked)
            if passed and after and _same_ends(passed, after, live, w):
                qualifying.append(_condition(conds))
        if qualifying:
            out[a] = any_of(*qualifying)
    return out
