"""Differential tests: SPIN on the lowered model against the reference interpreter, and the reduced
encoding against the plain one, on random small protocols (tests/protocol_gen.py) and on the
reference ring and cluster examples.

For every protocol: SPIN finds a violation iff the interpreter's exhaustive search reaches one;
SPIN's kind is one of the kinds the interpreter can reach; SPIN's trail replays in
`interp.replay` to that kind and is as long as the interpreter's shortest counterexample.
"""
import os
import shutil

import pytest

from warpspin.syncir.flat import VISIBLE, flatten
from hypothesis import HealthCheck, given, settings

from protocol_gen import protocols
from warpspin.engine import REDUCTION_UNSOUND, check, lower_and_check
from warpspin.lower import lower
from warpspin.syncir import interp
from warpspin.syncir.ir import (ClusterArrive, ClusterWait, Const, Elect, Kernel, MBarRef,
                                MBarrierDecl, MbarArriveExpectTx, MbarInit, MbarInitFence, MbarWait,
                                Process, TmaLoad)
from warpspin.syncir.protocols import RING_BUGS, ring

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")

EXAMPLES = int(os.environ.get("WARPSPIN_DIFF_EXAMPLES", "200"))
ENGINE_KINDS = {"deadlock"}  # SPIN reports deadlocks unclassified; every other kind is its own


def spin_agrees(k, reduce: bool, max_states: int = 50_000, fuse: bool = False):
    """With `fuse` (R6): a `reduction-unsound` run is re-checked unfused (lower_and_check) and
    that result is compared; a fused counterexample may be longer in trace events than the
    interpreter's shortest (a fused block is one step of the model but two events)."""
    kinds, complete = interp.violation_kinds(k, max_states=max_states)
    if not complete:
        return None
    _, r = lower_and_check(k, reduce=reduce, fuse=fuse, timeout_s=60, memory_mb=512)
    assert r.truncated == (), r.truncated
    assert r.kind != REDUCTION_UNSOUND
    if not kinds:
        assert r.kind is None and r.complete, (r.kind, r.trail_output[-2000:])
        return r
    assert r.kind is not None, f"interpreter reaches {kinds}, SPIN nothing"
    assert r.kind in kinds, (r.kind, kinds)
    rp = interp.replay(k, r.events, expect_kind=r.kind)
    assert rp.ok, rp.error
    ref = interp.explore(k, max_states=max_states)
    got = len([e for e in r.events if type(e).__name__ != "ParamChoice"])
    want = len([e for e in ref.trace if type(e).__name__ != "ParamChoice"])
    if fuse and not r.refused and any(x.startswith("R6") for x in r.reductions):
        assert got >= want
    else:
        # a process encoded as its own proctype whose code starts with local computation spends
        # one (invisible) SPIN step on it, so BFS is shortest in SPIN steps: at most that many
        # visible steps longer than the interpreter's shortest (docs/spin.md, "Trails")
        hidden = sum(fp.process.instances for fp in flatten(k)
                     if not isinstance(fp.code[0], VISIBLE))
        assert want <= got <= want + hidden, (got, want, hidden)
    return r


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(protocols())
def test_reduced_spin_matches_interpreter(k):
    spin_agrees(k, reduce=True)


@settings(max_examples=max(20, EXAMPLES // 2), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(protocols())
def test_fused_spin_matches_interpreter(k):
    """R6: reduced + fused (falling back to unfused on reduction-unsound) against the
    interpreter: a violation iff the interpreter reaches one, a kind it reaches, a trail that
    replays to that kind."""
    spin_agrees(k, reduce=True, fuse=True)


def test_fusion_refusal_falls_back():
    """The monitor fires on a ring whose empty barrier completes a phase while the producer's
    passing wait is pending (two-behind): the unfused model then decides (parity-aliasing)."""
    k = ring(2, 4, 2, bug="two-behind")
    r = check(lower(k, fuse=True))
    assert r.kind == REDUCTION_UNSOUND
    m, r = lower_and_check(k)
    assert r.refused and r.kind == "parity-aliasing" and m.fused == ()
    assert interp.replay(k, r.events, expect_kind=r.kind).ok


@settings(max_examples=max(20, EXAMPLES // 5), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(protocols())
def test_plain_and_reduced_agree(k):
    red = spin_agrees(k, reduce=True)
    plain = spin_agrees(k, reduce=False)
    if red is not None:
        assert (red.kind is None) == (plain.kind is None)
        assert plain.states >= red.states or red.kind is not None


def cluster_kernel(mask=3, wait=True, expect=64):
    """Two CTAs: each initializes b, fences and joins the cluster barrier (relaxed arrive + wait);
    CTA 0 multicasts one TMA load into b of the CTAs in `mask`; consumers wait on b."""
    b = MBarRef("b")
    prod = (Elect((MbarInit(b, 1), MbarInitFence())), ClusterArrive(True),
            *((ClusterWait(),) if wait else ()), Elect((MbarArriveExpectTx(b, expect),)))
    lead = prod + (Elect((TmaLoad(b, 64, multicast=Const(mask)),)),)
    procs = []
    for c in range(2):
        procs.append(Process("p", lead if c == 0 else prod, cta=c, threads=32))
        procs.append(Process("c", (ClusterArrive(), ClusterWait(), MbarWait(b, 0)), cta=c,
                             threads=32, instances=2, warps=(1, 3)))
    return Kernel("cluster", tuple(procs), (MBarrierDecl("b"),), num_ctas=2)


@pytest.mark.parametrize("args,kind", [
    (dict(), None), (dict(mask=1), "deadlock"), (dict(mask=4), "scope"),
    (dict(wait=False), "uninitialized-barrier"), (dict(expect=32), "deadlock")])
@pytest.mark.parametrize("reduce", [True, False])
def test_cluster_barrier_and_multicast(args, kind, reduce):
    k = cluster_kernel(**args)
    r = spin_agrees(k, reduce)
    assert r.kind == kind
    assert lower(k, reduce=reduce).cta_procs == ()  # the CTAs interact: no split


@pytest.mark.parametrize("bug", (None,) + RING_BUGS)
def test_independent_ctas_are_exact(bug):
    """Two identical CTAs that never interact: one is checked; the verdict, the kind and the
    trail length (deadlocks: completed by the other CTA's shortest path to a terminal state)
    are those of the whole kernel."""
    k = ring(2, 3 if bug != "two-behind" else 2, 2 if bug == "two-behind" else 1, ctas=2, bug=bug)
    m = lower(k)
    assert m.cta_procs == ((0, 1), (2, 3)) and m.checked.num_ctas == 1
    assert any(r.startswith("independent-ctas") for r in m.reductions)
    r = spin_agrees(k, reduce=True, max_states=100_000)
    assert r is not None, "the interpreter's search did not complete"
    if bug is None:
        assert r.kind is None
