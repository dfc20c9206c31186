"""SPIN end to end: verdicts on rings, counterexamples that replay in the reference interpreter,
and searches that hit a limit coming back as not complete."""
import shutil

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir.protocols import RING_BUGS, RING_BUG_EXPECT, ring
from warpspin.engine import check, lower_and_check
from warpspin.engine.spin import parse_pan, parse_trail
from warpspin.lower import lower
from warpspin.syncir import interp
from warpspin.syncir.ir import Assign, Kernel, MBarRef, MBarrierDecl, Process, Var, While
from warpspin.syncir.ops import MbarInit, MbarWait, TmaLoad, MbarInitFence, BarSync
from warpspin.syncir.trace import Complete, ParamChoice, Step

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")


def agree_with_interpreter(k, reduce=True):
    """SPIN's verdict equals the interpreter's; its counterexample replays to the same kind and
    is as short as the interpreter's breadth-first one."""
    _, r = lower_and_check(k, reduce=reduce, timeout_s=120)  # R6 falls back when refused
    ref = interp.explore(k)
    assert ref.complete
    if ref.violation is None:
        assert r.kind is None and r.complete and r.truncated == ()
        return r
    assert r.kind == ref.violation.kind and not r.complete
    rp = interp.replay(k, r.events, expect_kind=r.kind)
    assert rp.ok, rp.error
    if any(x.startswith("R6") for x in r.reductions):
        assert len(r.events) >= len(ref.trace)  # shortest in fused steps (semantics.md R6)
    else:
        assert len(r.events) == len(ref.trace)
    return r


def test_correct_ring_verifies():
    r = agree_with_interpreter(ring(stages=2, trips=4, consumers=2))
    assert r.states > 0 and r.transitions >= r.states and r.events == []


@pytest.mark.parametrize("bug", RING_BUGS)
@pytest.mark.parametrize("reduce", [True, False])
def test_broken_rings_agree_with_interpreter(bug, reduce):
    agree_with_interpreter(ring(stages=2, trips=3, consumers=2, bug=bug), reduce)


@pytest.mark.parametrize("bug", RING_BUGS)
@pytest.mark.parametrize("reduce", [True, False])
def test_ring_bug_expectations(bug, reduce):
    """The canonical ring's bugs, classified by the pipeline, in both encodings."""
    k = ring(stages=2, trips=3, consumers=2, bug=bug)
    if reduce:  # R6's fallback, until report/verify.py does it (test_scale.reported_kind)
        from test_scale import reported_kind
        assert reported_kind(k)[0] == RING_BUG_EXPECT[bug][0]
        return
    res = verify_kernel(k, opts=CheckOptions(reduce=reduce, timeout_s=120, engine="spin"))
    assert res.verdict == "violation", res.reasons
    assert res.violations[0].kind == RING_BUG_EXPECT[bug][0]


def test_trace_events_are_sensible():
    k = ring(stages=2, trips="K", trips_range=(1, 3), consumers=2, bug="missing-release")
    r = check(lower(k))
    assert r.kind == "deadlock"
    params = [e for e in r.events if isinstance(e, ParamChoice)]
    assert {p.name for p in params} == {"K"} and r.events[:len(params)] == params
    # the producer blocks on empty[0] at trip 3 (the first reuse of stage 0): K = 3 is shortest
    assert next(p.value for p in params if p.name == "K") == 3
    steps = [e for e in r.events if isinstance(e, Step)]
    flat = lower(k).flat[0].code
    first = [type(flat[s.pc].stmt).__name__ for s in steps if s.process == 0][:2]
    assert first == ["MbarInit", "MbarInit"]  # the producer's inits
    assert {s.instance for s in steps if s.process == 1} == {0, 1}
    completes = [e for e in r.events if isinstance(e, Complete)]
    assert completes and all(c.process == 0 and c.cta == 0 for c in completes)


def test_symmetric_encoding_is_smaller_and_equivalent():
    k = ring(stages=2, trips=4, consumers=3)
    sym, plain = check(lower(k, reduce=True)), check(lower(k, reduce=False))
    assert sym.complete and plain.complete
    assert sym.states < plain.states
    assert plain.states <= interp.explore(k).states + 10  # one SPIN state per interpreter state


def test_memory_limit_is_not_complete():
    r = check(lower(ring(stages=4, trips=16, consumers=4), reduce=False), memory_mb=16)
    assert not r.complete and "memory" in r.truncated and r.kind is None
    assert r.truncation == ["memory limit reached"]


def test_timeout_is_not_complete():
    r = check(lower(ring(stages=4, trips=16, consumers=8), reduce=False), timeout_s=3)
    assert not r.complete and "timeout" in r.truncated


def test_depth_limit_is_not_complete():
    r = check(lower(ring(stages=2, trips=4, consumers=1)), search="dfs", max_depth=10)
    assert not r.complete and "depth" in r.truncated


def test_loop_bound_is_reported():
    b = MBarRef("b")
    k = Kernel("spin", (Process("p", (MbarInit(b, 1), Assign("i", 0), While(Var("i").lt(10), (
        Assign("i", Var("i") + 1),), max_iters=4)), threads=32),), (MBarrierDecl("b"),))
    r = check(lower(k))
    assert r.kind == "loop-bound" and not r.complete
    assert interp.replay(k, r.events, expect_kind="loop-bound").ok


def test_pending_at_exit():
    b = MBarRef("b")
    k = Kernel("leak", (Process("p", (MbarInit(b, 1), MbarInitFence(), BarSync(0),
                                      TmaLoad(b, 64)), threads=32),), (MBarrierDecl("b"),))
    r = agree_with_interpreter(k)
    assert r.kind == "pending-at-exit"


@pytest.mark.parametrize("search", ["dfs", "dfs-shortest"])
def test_dfs_searches(search):
    k = ring(stages=2, trips=3, consumers=2, bug="trip-mismatch")
    r = check(lower(k), search=search)
    assert r.kind == "deadlock"
    assert interp.replay(k, r.events, expect_kind="deadlock").ok


def test_parse_pan_statistics():
    out = """pan:1: invalid end state (at depth 12)
State-vector 228 byte, depth reached 303, errors: 1
 1.4599613e+07 states, stored
      419 states, matched
      753 transitions (= stored+matched)
  133.536	total actual memory usage
"""
    r = parse_pan(out)
    assert (r.states, r.transitions, r.depth, r.state_vector) == (14599613, 753, 303, 228)
    assert r.memory_mb == pytest.approx(133.536) and r.pan_error.startswith("invalid end state")
    assert not r.complete and r.truncated == ()
    assert parse_pan("pan: reached -DMEMLIM bound\n").truncated == ("memory",)


def test_parse_trail_follows_record_moves():
    m = lower(ring(consumers=3))
    text = "\n".join(["WS|P|K|2", "WS|S|0|0|0", "WS|s|1|2|5", "WS|M|1|2|0", "WS|s|1|0|6",
                      "WS|s|1|1|5", "WS|C|0|14|0|1", "WS|V|arrival-mismatch|1|1|5"])
    events, kind = parse_trail(text, m)
    assert events == [ParamChoice("K", 2), Step(0, 0, 0), Step(1, 2, 5), Step(1, 2, 6),
                      Step(1, 0, 5), Complete(0, 14, 0, 1)]
    assert kind == "arrival-mismatch"
