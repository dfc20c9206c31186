"""R13: `fence.mbarrier_init`s that change nothing are not steps (syncir/passes.py,
docs/semantics.md "Reductions"). Which fences go and which stay; that the interpreter reaches the
same violation kinds, deadlocks and terminal states with and without them, on generated
protocols with fences put anywhere; and the pipeline end to end (a fence bug still found and
replayed, the reduction listed)."""
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol_gen import protocols
from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import interp
from warpspin.syncir.ir import (Assign, Const, Elect, For, If, Kernel, Loc, MBarRef, MBarrierDecl, Process, Var, stmt_bodies, walk_stmts, with_bodies)
from warpspin.syncir.ops import BarSync, MbarArrive, MbarInit, MbarInitFence, MbarWait
from warpspin.syncir.passes import without_noop_fences

b = MBarRef("b")
F = lambda line: MbarInitFence(Loc("k.py", line))  # noqa: E731


def fence_lines(p: Process) -> list[int]:
    return [s.loc.line for s in walk_stmts(p.body) if isinstance(s, MbarInitFence)]


def kernel(*bodies) -> Kernel:
    return Kernel("k", tuple(Process(f"w{i}", body, warps=(i, i + 1))
                             for i, body in enumerate(bodies)), (MBarrierDecl("b"),))


def test_which_fences_go():
    initializer = (Elect((MbarInit(b, 1), F(1))), F(2), BarSync(), F(3))
    other = (F(4), BarSync(), Elect((F(5),)), MbarWait(b, Const(0)))
    looped = (F(6), For("i", 0, 2, (F(7), Elect((MbarInit(b, 1),)), F(8))), F(9))
    branch = (MbarInit(b, 1), If(Var("x") == 0, (F(10),), (Assign("y", Const(1)),)), F(11))
    k, n = without_noop_fences(kernel(initializer, other, looped, branch))
    # the initializer keeps the fence after its init (the later two change nothing); the
    # process with no init keeps none (its elect block goes with its fence); in the loop the
    # fence before the init stays (the next iteration reaches it after an init) and so does
    # the one after it; after the loop an init may have run: 9 stays; in the branch process
    # the fence on one path only leaves 11 needed on the other
    assert [fence_lines(p) for p in k.processes] == [[1], [], [6, 7, 8, 9], [10, 11]]
    assert n == 4
    assert not any(isinstance(s, type(Elect(()))) and not s.body
                   for p in k.processes for s in walk_stmts(p.body))
    same, none = without_noop_fences(kernel((MbarInit(b, 1), F(1), MbarArrive(b))))
    assert none == 0 and same == kernel((MbarInit(b, 1), F(1), MbarArrive(b)))


def test_a_fence_after_an_init_that_follows_a_fence_stays():
    k, n = without_noop_fences(kernel((MbarInit(b, 1), F(1), MbarInit(MBarRef("c"), 1), F(2))))
    assert n == 0 and fence_lines(k.processes[0]) == [1, 2]


@st.composite
def with_fences(draw):
    """A generated protocol with fence.mbarrier_init put before statements of any process
    (initializers and others, in loops and branches too)."""
    k = draw(protocols())

    def put(body):
        out = []
        for s in body:
            if stmt_bodies(s):
                s = with_bodies(s, tuple(put(x) for x in stmt_bodies(s)))
            if draw(st.integers(0, 3)) == 0:
                out.append(MbarInitFence(Loc("fences.py", 1)))
            out.append(s)
        if draw(st.integers(0, 3)) == 0:
            out.append(MbarInitFence(Loc("fences.py", 2)))
        return tuple(out)
    from dataclasses import replace
    return replace(k, processes=tuple(replace(p, body=put(p.body)) for p in k.processes))


@settings(max_examples=60, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(with_fences())
def test_the_interpreter_reaches_the_same_outcomes_without_them(k):
    reduced, n = without_noop_fences(k)
    before = interp.outcomes(k, max_states=60_000)
    after = interp.outcomes(reduced, max_states=60_000)
    if not (before.complete and after.complete):
        return
    assert after.violations == before.violations
    assert after.terminals == before.terminals
    assert after.states <= before.states
    if n:
        first, second = interp.explore(k, 60_000), interp.explore(reduced, 60_000)
        assert (first.violation is None) == (second.violation is None)


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
def test_the_pipeline_lists_it_and_still_finds_an_unfenced_init():
    """Consumers fence (no-ops: they initialize nothing) but the initializer does not: the
    consumer's wait on the unpublished barrier is still found and replayed, and the
    reduction is named in the verdict; with the initializer's fence the kernel verifies."""
    def make(fenced: bool) -> Kernel:
        init = (Elect((MbarInit(b, 1),) + ((F(1),) if fenced else ())), BarSync(),
                Elect((MbarArrive(b),)))
        cons = (F(2), BarSync(), F(3), MbarWait(b, Const(0)))
        return Kernel("k", (Process("init", init, warps=(0, 1)),
                            Process("cons", cons, warps=(1, 3), instances=2)),
                      (MBarrierDecl("b"),))
    bad = verify_kernel(make(False), opts=CheckOptions(timeout_s=60, engine="spin"))
    assert bad.verdict == "violation" and bad.violations[0].kind == "uninitialized-barrier"
    assert bad.violations[0].replayed
    assert "R13 no-op-fences" in bad.config["reductions"]
    good = verify_kernel(make(True), opts=CheckOptions(timeout_s=60, engine="spin"))
    assert good.verdict == "verified", str(good)
    plain = verify_kernel(make(False), opts=CheckOptions(timeout_s=60, reduce=False, engine="spin"))
    assert plain.violations[0].kind == "uninitialized-barrier"
    assert "R13 no-op-fences" not in plain.config["reductions"]
