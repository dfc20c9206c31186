"""Regression tests for the extractor's part of issue 7, on small real DSL kernels
(``fixtures/kernels.py``) traced on the CPU and checked with the reference interpreter.

* hole 1: the CTAs of a cluster get consecutive block indices (``ctaid = clusterid * 2 + rank``);
* async copies count once per executing thread: a TMA load (elected by its lowering) is
  ``Lanes(1)``, a bulk copy by 32 lanes is 32 copies;
* lane subsets: ``elect.sync`` with a lane predicate, ``exit`` by some lanes, a TMA load by one
  lane are ``Unsupported`` naming the line;
* hole 4: values the model does not know (a trip count loaded from memory, a value that differs
  between warps) make what depends on them ``Unsupported``, and the SyncIR stays valid.
"""
from __future__ import annotations

import pytest

from sourcelines import line_of

pytestmark = pytest.mark.dsl
pytest.importorskip("cutlass")

from fixtures import catalog as C  # noqa: E402
from fixtures import kernels as K  # noqa: E402
from warpspin.extract import ExtractError, ExtractorBug, extract  # noqa: E402
from warpspin.extract.values import Folder, subst  # noqa: E402
from warpspin.frontend import trace  # noqa: E402
from warpspin.syncir import (BarSync, Const, Exit, Lanes, MbarArrive, MbarInit, TmaLoad,  # noqa: E402
                             unsupported_ops, validate, walk_stmts)
from warpspin.syncir.interp import explore  # noqa: E402

KFILE = K.__file__


def verdict(sk, max_states=200_000):
    o = explore(sk, max_states=max_states)
    assert o.complete
    return o.violation.kind if o.violation else "ok"


def value(e, **env) -> int:
    v = subst(e, env, Folder())
    assert isinstance(v, Const), v
    return v.value


def stmts(p, cls):
    return [s for s in walk_stmts(p.body) if isinstance(s, cls)]


def traced_sk(name, params=None):
    return extract(C.traced(name), params=params)


# ---- hole 1: CTA identity inside a cluster --------------------------------------------------------
def test_cluster_ctas_get_block_indices_2c_and_2c_plus_1():
    sk = traced_sk("cluster_identity.rank")
    assert sk.num_ctas == 2
    assert [(p.name, p.lo, p.hi) for p in sk.params] == [("clusterid_x", 0, 1)]  # grid 4 / 2
    for p in sk.processes:
        (init,) = stmts(p, MbarInit)  # mbarrier_init(bar, bidx + 1)
        (arrive,) = stmts(p, MbarArrive)  # arrive_count = bidx + 1
        assert init.loc.line == line_of(KFILE, "# @init")
        for c in (0, 1):
            assert value(init.count, clusterid_x=c) == 2 * c + p.cta + 1
            assert value(arrive.count, clusterid_x=c) == 2 * c + p.cta + 1
    # every CTA's `bidx % 2 == rank` holds: verified for every cluster of the grid
    assert verdict(sk) == "ok"
    # the kernel states each CTA's block index, for reports
    assert [[value(x, clusterid_x=c) for x in b] for c in (0, 1) for b in sk.cta_blocks] == [
        [0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]]


def test_cluster_ctas_disagreeing_on_the_block_index_deadlock():
    """``if bidx % 2 == 0`` is false in the second CTA of every cluster: it never arrives.
    (One block index shared by both CTAs, as before, hid this for an even index.)"""
    sk = traced_sk("cluster_identity.zero")
    assert verdict(sk) == "deadlock"


def test_cluster_special_registers_agree():
    """ctaid = clusterid * cluster_nctaid + cluster_ctaid, nctaid = nclusterid * cluster_nctaid,
    cluster_ctarank, cluster_nctarank and the y/z indices of a 1-D grid: any disagreement skips
    the arrivals (deadlock)."""
    sk = traced_sk("cluster_identity.registers")
    assert {(p.name, p.lo, p.hi) for p in sk.params} == {("clusterid_x", 0, 1),
                                                         ("clusterid_y", 0, 0),
                                                         ("clusterid_z", 0, 0)}
    assert verdict(sk) == "ok"


def test_dynamic_grid_needs_the_cluster_index_and_count():
    k = C.traced("dynamic_grid_cluster")
    with pytest.raises(ExtractError) as ei:
        extract(k)
    assert "--param clusterid_x" in str(ei.value) and "--param nclusterid_x" in str(ei.value)
    sk = extract(k, params={"clusterid_x": (0, 2), "nclusterid_x": 3})
    assert verdict(sk) == "ok"
    # values no launch has (the cluster index is below the cluster count): the user's error,
    # said as such (it was an ExtractorBug)
    with pytest.raises(ExtractError) as ei:
        extract(k, params={"clusterid_x": 3, "nclusterid_x": 3})
    assert "satisfy the launch constraints" in str(ei.value) and "--param" in str(ei.value)
    # `bidx + 1 < nctaid`: CTA r of cluster c arrives iff 2c + r + 1 < 2 * nclusterid
    conds = {p.cta: next(s for s in walk_stmts(p.body) if hasattr(s, "cond")).cond
             for p in sk.processes}
    for r, cond in conds.items():
        for c in range(3):
            for n in (2, 3):
                assert value(cond, clusterid_x=c, nclusterid_x=n) == int(2 * c + r + 1 < 2 * n)


# ---- async copies: one per executing thread --------------------------------------------------------
def _async(mode, expect):
    (k,) = trace(*_pair(K.async_copies(mode, expect)))
    return extract(k)


def _pair(fa):
    fn, args = fa
    return (fn, *args)


def test_tma_load_is_one_copy_per_warp():
    sk = traced_sk("async_copies.tma")
    (p,) = sk.processes
    (lanes,) = [s for s in walk_stmts(p.body) if isinstance(s, Lanes) and
                any(isinstance(t, TmaLoad) for t in s.body)]
    assert lanes.count == 1 and lanes.body[0].bytes == Const(128)
    assert lanes.loc.line == line_of(KFILE, "# @tma")
    assert verdict(sk) == "ok"  # expect_tx(128): one 128-byte box
    assert verdict(_async("tma", 32 * 128)) != "ok"  # not one copy per thread


def test_bulk_copy_is_one_copy_per_thread():
    sk = traced_sk("async_copies.bulk")
    (p,) = sk.processes
    (tma,) = stmts(p, TmaLoad)
    assert p.threads == 32 and tma in p.body  # bare: every thread of the warp issues one
    assert tma.bytes == Const(16) and tma.loc.line == line_of(KFILE, "# @bulk")
    assert verdict(sk) == "ok"  # 32 x 16 bytes = expect_tx(512)
    assert verdict(_async("bulk", 16)) != "ok"  # not one copy per warp


def test_bulk_copy_by_the_elected_lane():
    sk = traced_sk("async_copies.bulk_elected")
    (p,) = sk.processes
    (lanes,) = [s for s in walk_stmts(p.body) if isinstance(s, Lanes) and
                any(isinstance(t, TmaLoad) for t in s.body)]
    assert lanes.count == 1
    assert verdict(sk) == "ok"


def test_tma_load_by_one_lane_is_unsupported():
    """The TMA lowering elects a lane with elect.sync over all 32 lanes; inside elect_one() only
    one lane reaches it (the DSL documents this can deadlock)."""
    sk = traced_sk("async_copies.tma_elected")
    (u,) = unsupported_ops(sk)
    assert "TMA load by a subset of the warp's lanes" in u.what
    assert u.loc.line == line_of(KFILE, "# @tma-elected")
    assert not [s for p in sk.processes for s in stmts(p, TmaLoad)]


# ---- lane subsets ------------------------------------------------------------------------------
def test_elect_with_a_lane_predicate_takes_the_lowest_lane():
    """Which lane elect.sync elects is unspecified (PTX: "the same leader for the same member
    mask"): `elect_one(): if lane < 1:` arrives or not depending on it. The model takes the
    lowest executing lane (what the H200 elects: litmus ElectWhichLane), so lane 0 arrives, and
    the kernel's assumptions name the line."""
    sk = traced_sk("lane_subsets.elect_lane0")
    assert not unsupported_ops(sk)
    (p,) = sk.processes
    (arrive,) = stmts(p, MbarArrive)
    assert [a for a in sk.assumptions if "lowest executing lane (lane 0)" in a
            and f"kernels.py:{line_of(KFILE, '@pred')}" in a], sk.assumptions
    assert verdict(sk) == "ok"


def test_elect_with_a_predicate_every_lane_satisfies():
    sk = traced_sk("lane_subsets.elect_all")
    assert not unsupported_ops(sk)
    (p,) = sk.processes
    (arrive,) = stmts(p, MbarArrive)
    assert verdict(sk) == "ok"


def test_exit_by_some_lanes_is_unsupported():
    sk = traced_sk("lane_subsets.exit_some")
    (u,) = unsupported_ops(sk)
    assert u.what == "exit by a subset of the warp's lanes"
    assert u.loc.line == line_of(KFILE, "# @exit")
    assert not [s for p in sk.processes for s in stmts(p, Exit)]


def test_aligned_barrier_by_some_lanes_is_divergent():
    """An aligned bar.sync by half of a warp is undefined (PTX .aligned): the op stays, inside
    its 16 lanes, and the model reports divergent-barrier there."""
    sk = traced_sk("lane_subsets.barrier_some")
    assert not unsupported_ops(sk)
    (lanes,) = [s for p in sk.processes for s in walk_stmts(p.body)
                if isinstance(s, Lanes) and s.count == 16]
    (bar,) = [s for s in walk_stmts(lanes.body) if isinstance(s, BarSync)]
    assert bar.loc.line == line_of(KFILE, "@bar-some")
    assert verdict(sk) == "divergent-barrier"


def test_exit_by_the_whole_warp():
    sk = traced_sk("lane_subsets.exit_all")
    assert not unsupported_ops(sk)
    (p,) = sk.processes
    (ex,) = stmts(p, Exit)
    assert ex in p.body and ex.loc.line == line_of(KFILE, "# @exit-all")


# ---- hole 4: what the model does not know stays Unsupported, the SyncIR stays valid ----------------
def test_trip_count_loaded_from_global_memory():
    """Both warps' loops run `t[0]` times. The kernel never writes `t`, so every reader sees the
    same value: `t[0]` is a launch choice (`t_0`, 0..3 by default), checked for every value, and
    nothing is Unsupported (docs/semantics.md, values read from global memory)."""
    sk = traced_sk("loaded_trip_count")
    assert validate(sk) == []
    assert not unsupported_ops(sk)
    assert [(p.name, p.lo, p.hi) for p in sk.params] == [("t_0", 0, 3)]


def test_value_that_differs_between_warps_is_not_a_launch_param():
    """`ceil_div(n + warp, 2)` differs between the two warps (n = 2: 1 and 2 trips, and the
    second bar.sync deadlocks); it used to become one launch parameter shared by both warps."""
    sk = traced_sk("per_warp_trip_count")
    assert [p.name for p in sk.params] == []
    (u,) = {(u.what, u.loc.line) for u in unsupported_ops(sk)}
    assert "differs between threads" in u[0] and u[1] == line_of(KFILE, "# @per-warp-loop")


def test_invalid_syncir_is_an_extractor_bug(monkeypatch):
    """The last guard: SyncIR that does not validate is never returned."""
    import warpspin.extract.build as build
    from warpspin.syncir import MbarWait, MBarRef, Var

    k = C.traced("raw_mbarrier.correct")
    bogus = (MbarWait(MBarRef("full", Const(0)), Var("never_assigned")),)
    monkeypatch.setattr(build, "finish", lambda stmts: bogus)
    with pytest.raises(ExtractorBug, match="never_assigned"):
        extract(k)
