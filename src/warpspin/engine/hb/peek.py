"""Test-waits that peek: `ok = test_wait(b, p)`, other ops, then `if not ok: wait(b, p)`.

A test-wait decides whether its warp waits later. The engine runs the kernel
without it (T(K): the test is taken as failed and changes nothing, so the later wait always
runs) and follows, beside the execution, the warp as it would have run had the test passed. The
two must execute the same ops, with the same effects, until the failed path's wait on the same
barrier element and parity, and then reach the same pc with the same locals. Then, with the
conditions engine/hb/conditions.py adds for a peek (the wait's phase completes after the
warp's event before the test, that phase's previous one completed before it, and the warp
touches the barrier in neither between), every execution of the kernel is one of T(K) with
the wait moved to where the test passed: docs/semantics.md, "Happens-before", peeking
test-waits. Anything else is outside the class.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...syncir.interp import Machine, ModelError, Violation
from ...syncir.ir import Loc
from ...syncir.ops import MbarTestWait, MbarWait
from ...syncir.trace import Step


@dataclass
class Peek:
    gid: int
    before: int                  # events of the instance before the test
    element: int                 # the mbarrier element it tests, and the parity
    parity: int
    pc: int
    loc: Loc
    wait: tuple[int, int] | None = None  # (actor, count) of the wait that stands in for it


class PeekError(Exception):
    def __init__(self, why: str, loc: Loc | None = None):
        super().__init__(why)
        self.why, self.loc = why, loc


class Shadow:
    """The instance as it would run had the test passed: its pc and locals."""

    def __init__(self, m: Machine, gid: int, peek: Peek, v: list):
        self.m, self.gid, self.peek = m, gid, peek
        sl = m.sl
        self.idx = [sl.base[gid], *sl.local[gid].values()]
        self.slice = [v[i] for i in self.idx]
        self.waited = False
        self.names = list(sl.local[gid])
        self.live = live_locals(m, m.instances[gid].process)

    def mine(self, v) -> list:
        return [v[i] for i in self.idx]

    def same(self, t) -> bool:
        """The instance and its shadow are at the same pc with the same value of every local
        live there."""
        if t[self.idx[0]] != self.slice[0]:
            return False
        live = self.live[t[self.idx[0]]] if t[self.idx[0]] < len(self.live) else ()
        return all(t[i] == x for n, i, x in zip(self.names, self.idx[1:], self.slice[1:])
                   if n in live)

    def follow(self, s: tuple, t: tuple, ev: Step, actor: int, count: int) -> bool:
        """The instance took `ev` from `s` to `t`: the shadow takes it too, or skips the wait
        it stands for. True once the two have merged."""
        m, op_loc = self.m, self.peek.loc
        pc = s[self.idx[0]]
        if self.slice[0] != pc:
            op = m.flat[m.instances[self.gid].process].code[pc].stmt
            if (self.waited or not isinstance(op, MbarWait)
                    or m.element_of(op.bar, s, self.gid) != self.peek.element
                    or m.eval(op.parity, s, self.gid) & 1 != self.peek.parity):
                raise PeekError("a test-wait whose result changes which ops its warp executes "
                                "(more than skipping a later wait on the same phase)", op_loc)
            self.waited = True
            self.peek.wait = (actor, count)
        else:
            u = list(s)
            for i, x in zip(self.idx, self.slice):
                u[i] = x
            try:
                tb = m.step(tuple(u), ev)
            except (Violation, ModelError):
                raise PeekError("a test-wait whose result changes what a later op of its warp "
                                "does", op_loc) from None
            mine = set(self.idx)
            if any(a != b for i, (a, b) in enumerate(zip(t, tb)) if i not in mine):
                raise PeekError("a test-wait whose result changes what a later op of its warp "
                                "does", op_loc)
            self.slice = self.mine(tb)
        if self.same(t):
            if not self.waited:
                raise PeekError("a test-wait whose result is never used (the model follows one "
                                "that only decides a later wait)", op_loc)
            return True
        return False


_LIVE: dict = {}


def live_locals(m: Machine, process: int) -> list:
    """Per pc of the process, the locals live on entry (lower.analysis.liveness)."""
    key = (id(m), process)
    if key not in _LIVE:
        from ...lower.analysis import liveness
        _LIVE[key] = liveness(m.layout, process)[0]
    return _LIVE[key]


def take_peek(m: Machine, v: list, gid: int, before: int) -> tuple[Peek, Shadow]:
    """The instance rests at a test-wait: T(K) takes it as failed, changing
    nothing but its result (0); the shadow takes it as passed. `v` is updated in place."""
    inst = m.instances[gid]
    at = m.sl.base[gid]
    pc = v[at]
    op = m.flat[inst.process].code[pc].stmt
    assert isinstance(op, MbarTestWait)
    s = tuple(v)
    peek = Peek(gid, before, m.element_of(op.bar, s, gid), m.eval(op.parity, s, gid) & 1, pc,
                op.loc)
    passed = list(v)
    for w, ok in ((v, 0), (passed, 1)):
        w[m.sl.local[gid][op.dest]] = ok
        w[at] = pc + 1
        try:
            m.run_local(w, gid)
        except Violation:
            raise PeekError("the local code after a peeking test-wait hits a model bound",
                            op.loc) from None
    return peek, Shadow(m, gid, peek, passed)


def to_plain(m: Machine, start: tuple, events: list, peeks: list[Peek], end: str):
    """The T(K) execution `events` as an execution of the kernel itself: each peeking test-wait
    taken where its warp reached it, a wait it stood for dropped when the test passed. None
    when that does not replay."""
    from ...syncir.trace import Complete
    s = start
    out = []
    sites = {(m.instances[p.gid].process, p.pc) for p in peeks}

    def take_tests(gid):
        nonlocal s
        inst = m.instances[gid]
        while not m.ended(s, gid):
            pc = m.pc(s, gid)
            if (inst.process, pc) not in sites:
                return
            ev = Step(inst.process, inst.index, pc)
            s = m.step(s, ev)
            out.append(ev)

    try:
        for inst in m.instances:
            take_tests(inst.gid)
        for ev in events:
            if isinstance(ev, Step):
                gid = m.gid[(ev.process, ev.instance)]
                take_tests(gid)
                if m.pc(s, gid) != ev.pc:
                    op = m.flat[ev.process].code[ev.pc].stmt
                    if isinstance(op, MbarWait):
                        continue  # the test passed: the kernel skips the wait it stood for
                    return None
            elif not isinstance(ev, Complete):
                return None
            try:
                s = m.step(s, ev)
            except Violation:
                out.append(ev)
                return out
            out.append(ev)
            if isinstance(ev, Step):
                take_tests(m.gid[(ev.process, ev.instance)])
    except (Violation, ModelError):
        return None
    return out
