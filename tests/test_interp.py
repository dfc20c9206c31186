"""The reference interpreter on its own: semantics rules, exploration, replay, diagnosis."""
import pytest

from warpspin.syncir import (BarSync, Const, Elect, Kernel, Loc, MBarRef, MBarrierDecl, MbarArrive,
                             MbarInit, MbarInitFence, MbarWait, Process, TmaLoad, fmt_kernel,
                             validate)
from warpspin.syncir.diagnose import diagnose_deadlock
from warpspin.syncir.interp import Machine, explore, replay, violation_kinds
from warpspin.syncir.protocols import LINE, RING_BUG_EXPECT, RING_BUGS, exchange, ring
from warpspin.syncir.trace import Step


def final_kind(kernel):
    out = explore(kernel)
    if out.violation is None:
        assert out.complete
        return None, None
    r = replay(kernel, out.trace, out.violation.kind)
    assert r.ok, r.error
    if out.violation.kind == "deadlock":
        d = diagnose_deadlock(r)
        return d.kind, d.loc
    return out.violation.kind, out.violation.loc


@pytest.mark.parametrize("stages,trips,consumers", [(2, 0, 1), (2, 1, 1), (2, 3, 2), (3, 4, 1),
                                                     (4, 5, 2), (2, 2, 3)])
def test_correct_ring_verifies(stages, trips, consumers):
    assert validate(ring(stages, trips, consumers)) == []
    assert final_kind(ring(stages, trips, consumers)) == (None, None)


def test_warpgroup_consumers_verify():
    """A warpgroup (128 threads) is four warp instances, each releasing once (PipelineTmaAsync)."""
    k = ring(2, 2, consumers=1, consumer_threads=128)
    assert k.processes[1].instances == 4 and k.processes[1].threads == 32
    assert final_kind(k) == (None, None)


@pytest.mark.parametrize("bug", RING_BUGS)
def test_ring_bug_kind_and_line(bug):
    kind, loc = final_kind(ring(2, 3, consumers=2, bug=bug))
    want_kind, want_line = RING_BUG_EXPECT[bug]
    assert kind == want_kind
    if want_line:
        assert loc.line == LINE[want_line]


def test_exchange():
    assert final_kind(exchange(4)) == (None, None)
    assert final_kind(exchange(4, flip=False))[0] is not None


def _one(*body, count=1, threads=32, extra=()):
    return Kernel("k", (Process("p", tuple(body), threads=threads),) + tuple(extra),
                  (MBarrierDecl("m", 1),))


L = Loc("t.py", 7)


def test_reinit_is_flagged():
    k = _one(Elect((MbarInit(MBarRef("m"), 1), MbarInit(MBarRef("m"), 1, L))))
    assert final_kind(k) == ("barrier-reinit", L)


def test_tma_before_fence_is_flagged():
    k = _one(Elect((MbarInit(MBarRef("m"), 1), TmaLoad(MBarRef("m"), 16, L))))
    assert final_kind(k) == ("uninitialized-barrier", L)


def test_other_process_needs_published_init():
    init = Elect((MbarInit(MBarRef("m"), 1), MbarInitFence()))
    waiter = Process("w", (MbarWait(MBarRef("m"), 0, L),), warps=(1, 2))
    assert final_kind(_one(init, extra=(waiter,)))[0] == "uninitialized-barrier"
    published = _one(init, BarSync(), Elect((MbarArrive(MBarRef("m")),)),
                     extra=(Process("w", (BarSync(), MbarWait(MBarRef("m"), 0, L)), warps=(1, 2)),))
    assert final_kind(published) == (None, None)


def test_whole_warp_over_arrival():
    k = _one(Elect((MbarInit(MBarRef("m"), 4),)), MbarArrive(MBarRef("m"), 1, L))
    assert final_kind(k) == ("arrival-mismatch", L)


def test_exit_releases_cta_barrier_but_not_named_barrier():
    leaver = Process("leaver", (), warps=(1, 2))
    stayer = Process("stayer", (BarSync(loc=L),), warps=(0, 1))
    assert final_kind(Kernel("k", (stayer, leaver))) == (None, None)
    named = Process("stayer", (BarSync(Const(3), Const(64), L),), warps=(0, 1))
    # 64 threads counted, only the 32 of "stayer" ever arrive
    assert final_kind(Kernel("k", (named, leaver))) == ("arrival-mismatch", L)


def test_divergent_named_barrier():
    k = _one(Elect((BarSync(Const(1), Const(32), L),)))
    assert final_kind(k) == ("divergent-barrier", L)


def test_pending_at_exit():
    k = _one(Elect((MbarInit(MBarRef("m"), 1), MbarInitFence())),
             Elect((TmaLoad(MBarRef("m"), 16, L),)))
    # the TMA may complete before the exit (tx goes negative: no error) or after (the error)
    kinds, complete = violation_kinds(k)
    assert complete and kinds == {"pending-at-exit"}


def test_replay_rejects_a_disabled_step():
    k = ring(2, 1, 1)
    m = Machine(k)
    # the consumer cannot pass its wait on full[0] before the producer has filled it
    consumer_wait = next(pc for pc, ins in enumerate(m.flat[1].code)
                         if getattr(getattr(ins, "stmt", None), "loc", None) == Loc("ring.py", LINE["consumer_wait"]))
    r = replay(k, [Step(1, 0, 0), Step(1, 0, 1), Step(1, 0, consumer_wait)])
    assert not r.ok and "not enabled" in r.error


def test_param_range_explores_every_value():
    k = ring(2, 0, 1, trips_range=(0, 3))
    assert final_kind(k) == (None, None)
    bad = ring(2, 0, 1, bug="trip-mismatch", trips_range=(0, 2))
    assert final_kind(bad)[0] == "deadlock"


def test_printer_mentions_every_op():
    text = fmt_kernel(ring(2, 3, 2))
    for word in ("mbarrier.init", "fence.mbarrier_init", "bar.sync", "mbarrier.wait",
                 "mbarrier.arrive.expect_tx", "tma.load", "mbarrier.arrive empty"):
        assert word in text


def test_constant_operands_out_of_range_are_invalid():
    b = MBarRef("m", 3)
    k = _one(Elect((MbarInit(b, 1),)))
    assert any("outside the array" in p.message for p in validate(k))
    k = _one(Elect((MbarArrive(MBarRef("m", 0, cta=2), 1),)))
    assert any("outside the cluster" in p.message for p in validate(k))
