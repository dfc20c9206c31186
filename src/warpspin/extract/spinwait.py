"""A spin loop on an mbarrier's test-wait is its blocking wait.

    ok = test_wait(b, p); <assignments>; while c: { ok' = test_wait(b, p); <the same> }

(`done = cute.arch.mbarrier_try_wait(b, p)` then `while not done: done = ...try_wait(b, p)`, or
`while not cute.arch.mbarrier_test_wait(b, p): pass`) becomes `mbarrier.wait b, p` followed by
`ok = 1` and the assignments. So does a loop that constants assigned before it enter, whose body
is the test and the assignments (`done = 0; while done == 0: done = test(b, p)`, as inline
PTX's test is written). Exact: a failed test changes nothing but its local, which the
next trip overwrites, so the loop's effect is its passing test; the wait is enabled exactly in
the states where that test passes, and a test's checks (parity aliasing, visibility, scope)
are the wait's on the same element (docs/semantics.md, "Spin loops on a test-wait"). A spin
that never ends is then the wait's deadlock, not a loop running past the model's bound.
"""
from __future__ import annotations

from dataclasses import replace

from ..syncir.ir import (Assign, Const, For, If, Lanes, Stmt, Var, While, expr_vars, stmt_exprs,
                         walk_stmts)
from ..syncir.ops import MbarTestWait, MbarWait
from .values import Folder, subst


def _trip(body: tuple[Stmt, ...]):
    """(test, assignments) when `body` is one test-wait then assignments only."""
    if not body or not isinstance(body[0], MbarTestWait) or \
            not all(isinstance(s, Assign) for s in body[1:]):
        return None
    return body[0], body[1:]


def _cond_of(cond, assigns, dest: str, result: int):
    """`cond` after `assigns` with the test's result `result`, folded (None: not a constant)."""
    env = {dest: Const(result)}
    f = Folder()
    for a in assigns:
        env[a.var] = subst(a.value, env, f)
    v = subst(cond, env, f)
    return v.value if isinstance(v, Const) else None


def _reads(body, name: str) -> int:
    return sum(name in expr_vars(e) for s in walk_stmts(body) for e in stmt_exprs(s))


def _spin(pre: tuple[Stmt, ...], loop: While, reads: dict):
    """The statements replacing `pre` + `loop`, or None when they are not a spin loop."""
    inner, outer = _trip(loop.body), _trip(pre)
    if inner is None or outer is None:
        return None
    (t1, a1), (t2, a2) = outer, inner
    if t1.bar != t2.bar or t1.parity != t2.parity:
        return None
    same = len(a1) == len(a2) and all(
        x.var == y.var and x.value == subst(y.value, {t2.dest: Var(t1.dest)}, Folder())
        for x, y in zip(a1, a2))
    if not same:
        return None
    written = {a.var for a in a1} | {t1.dest, t2.dest}
    bar = (t1.bar.index, t1.bar.cta) if t1.bar.cta is not None else (t1.bar.index,)
    read = set().union(*(expr_vars(e) for e in (t1.parity, *bar)))
    if read & written or any(expr_vars(a.value) - written for a in a1):
        return None  # the phase must be the same at every trip; the condition the test's alone
    if _cond_of(loop.cond, a1, t1.dest, 0) not in (1, True) or \
            _cond_of(loop.cond, a1, t1.dest, 1) not in (0, False):
        return None
    inside = _reads(loop.body, t2.dest) + (_reads(a1, t2.dest) if t2.dest == t1.dest else 0)
    if reads.get(t2.dest, 0) != inside:
        return None  # (the loop's own result read outside it: not this form)
    if t1.dest != t2.dest and reads.get(t1.dest, 0) != _reads(a1, t1.dest) + _reads(a2, t1.dest):
        return None  # (the first test's result, which may be 0 after the loop, read elsewhere)
    return (MbarWait(t1.bar, t1.parity, t1.loc), Assign(t1.dest, Const(1), t1.loc), *a1)


def _entered_spin(pre: tuple[Stmt, ...], loop: While, reads: dict):
    """`v = c; ...; while cond: { t = test_wait(b, p); <assignments> }` where the constants
    assigned before make `cond` true (the loop is entered: `done = 0; while done == 0: done =
    test(...)`): the statements replacing the loop (`pre` stays), or None."""
    inner = _trip(loop.body)
    if inner is None or not pre or not all(isinstance(a, Assign) for a in pre):
        return None
    test, assigns = inner
    env = {}
    f = Folder()
    for a in pre:
        env[a.var] = subst(a.value, env, f)
    entered = subst(loop.cond, env, f)
    if not isinstance(entered, Const) or entered.value in (0, False):
        return None
    read = set().union(*(expr_vars(e) for e in (test.parity, test.bar.index,
                                                 *((test.bar.cta,) if test.bar.cta else ()))))
    written = {a.var for a in assigns} | {test.dest}
    if read & written or any(expr_vars(a.value) - written for a in assigns):
        return None
    if _cond_of(loop.cond, assigns, test.dest, 0) not in (1, True) or \
            _cond_of(loop.cond, assigns, test.dest, 1) not in (0, False):
        return None
    return (MbarWait(test.bar, test.parity, test.loc), Assign(test.dest, Const(1), test.loc),
            *assigns)


def spin_waits(body: tuple[Stmt, ...], reads: dict | None = None) -> tuple[Stmt, ...]:
    """`body` with every spin loop on a test-wait (nested bodies too) made its blocking wait;
    `reads`: how often each local is read in the whole process body."""
    body = tuple(body)
    if reads is None:
        reads = {}
        for st in walk_stmts(body):
            for e in stmt_exprs(st):
                for v in expr_vars(e):
                    reads[v] = reads.get(v, 0) + 1
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, If):
            s = replace(s, then=spin_waits(s.then, reads), else_=spin_waits(s.else_, reads))
        elif isinstance(s, (For, While, Lanes)):
            s = replace(s, body=spin_waits(s.body, reads))
        if isinstance(s, While):
            start = next((j for j in range(len(out) - 1, -1, -1)
                          if isinstance(out[j], MbarTestWait)), None)
            new = None if start is None else _spin(tuple(out[start:]), s, reads)
            if new is not None:
                del out[start:]
                out.extend(new)
                continue
            first = len(out)
            while first > 0 and isinstance(out[first - 1], Assign):
                first -= 1
            new = _entered_spin(tuple(out[first:]), s, reads)
            if new is not None:
                out.extend(new)
                continue
        out.append(s)
    return tuple(out)
