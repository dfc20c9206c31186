"""Extractor: traced CuTe DSL kernels -> SyncIR, checked with the reference interpreter."""
from __future__ import annotations

import os
import sys

import pytest

from sourcelines import line_of

pytestmark = pytest.mark.dsl
cutlass = pytest.importorskip("cutlass")

import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402

from warpspin.extract import ExtractError, extract  # noqa: E402
from warpspin.frontend import trace  # noqa: E402
from warpspin.syncir import (ClusterArrive, ClusterWait, For, Lanes, MbarArrive, MbarArriveExpectTx, MbarInit, MbarWait,  # noqa: E402
                             TmaLoad, Unsupported, unsupported_ops, validate, walk_stmts)
from warpspin.syncir.interp import explore  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)

import hopper_pipeline as hp  # noqa: E402
import raw_mbarrier as rm  # noqa: E402


from warpspin.syncir.passes import without_load_races  # noqa: E402


def sk_of(make, params=None, **kw):
    fn, args = make(**kw)
    (k,) = trace(fn, *args)
    sk = extract(k, params=params)
    assert validate(sk) == []
    return sk


def stmts(sk, cls):
    return [s for p in sk.processes for s in walk_stmts(p.body) if isinstance(s, cls)]


def verdict(sk, max_states=100_000):
    """The interpreter's verdict on the model a default check covers (stages TMA loads fill
    are checked only with --load-races: tests/test_buffers.py)."""
    o = explore(without_load_races(sk), max_states=max_states)
    assert o.complete
    return o.violation.kind if o.violation else "ok"


# ---- raw mbarrier ring ---------------------------------------------------------------------------
def test_raw_ring_shape():
    sk = sk_of(rm.correct)
    assert [(p.warps, p.threads, p.instances) for p in sk.processes] == [((0, 1), 32, 1),
                                                                       ((1, 2), 32, 1)]
    assert sorted((m.name, m.size) for m in sk.mbarriers) == [("empty", 2), ("full", 2)]
    inits = stmts(sk, MbarInit)
    assert len(inits) == 4 and {i.count.value for i in inits} == {32}
    # init sits under elect.sync: one lane
    assert isinstance(sk.processes[0].body[0], Lanes) and sk.processes[0].body[0].count == 1
    loops = stmts(sk, For)
    assert [l.stop.value for l in loops] == [6, 6]
    (arr,) = [s for s in stmts(sk, MbarArrive) if s.bar.name == "full"]
    assert arr.loc.file.endswith("raw_mbarrier.py")
    assert arr.loc.line == line_of(rm.__file__, "cute.arch.mbarrier_arrive(full + s)")
    assert arr.loc.frame == "mbarrier_arrive"


@pytest.mark.parametrize("name,kind", [
    ("correct", "ok"),
    ("wrong_init_count", "arrival-mismatch"),
    ("wrong_parity", "race"),  # it reads the slot before the data lands, then hangs
    ("missing_arrive", "deadlock"),
    ("no_init_sync", "uninitialized-barrier"),
    ("read_before_wait", "race"),
])
def test_raw_ring_verdicts(name, kind):
    assert verdict(sk_of(rm.VARIANTS[name])) == kind


# ---- Hopper PipelineTmaAsync ---------------------------------------------------------------------
SMALL = dict(stages=2, k_tiles=3, consumer_wgs=1)


def test_pipeline_shape():
    sk = sk_of(hp.correct, **SMALL)
    # warp 0 (also initializes), warps 1-3 (consumers), warp 4 (producer)
    assert [(p.warps, p.instances) for p in sk.processes] == [((0, 1), 1), ((1, 4), 3), ((4, 5), 1)]
    assert [(m.name, m.size) for m in sk.mbarriers] == [("bars", 4)]
    counts = sorted(i.count.value for i in stmts(sk, MbarInit))
    assert counts == [1, 1, 4, 4]  # full: 1 producer thread; empty: one lane per consumer warp
    (tma,) = stmts(sk, TmaLoad)
    assert tma.bytes.value == 64 * 64 * 4
    assert tma.loc.line == line_of(hp.__file__, "cute.copy(atom, tAgA[None, k]")
    (etx,) = stmts(sk, MbarArriveExpectTx)
    assert etx.bytes.value == 64 * 64 * 4 and etx.loc.frame == "PipelineTmaAsync.producer_acquire"
    assert etx.bar == tma.bar
    tail = [w for w in stmts(sk, MbarWait) if w.loc.frame == "PipelineAsync.producer_tail"]
    assert len(tail) == 2
    assert not unsupported_ops(sk)


@pytest.mark.parametrize("name,kind", [
    ("correct", "ok"),
    ("missing_release", "deadlock"),
    ("wrong_arrive_count", "deadlock"),
    ("phase_not_flipped", "parity-aliasing"),
    ("trip_count_mismatch", "deadlock"),
    ("wrong_tx_bytes", "deadlock"),
])
def test_pipeline_verdicts(name, kind):
    assert verdict(sk_of(hp.VARIANTS[name], **SMALL)) == kind


def test_role_exits_early_drops_a_warpgroup():
    sk = sk_of(hp.role_exits_early, stages=2, k_tiles=2, consumer_wgs=2)
    consumers = [p for p in sk.processes if any(isinstance(s, For) for s in walk_stmts(p.body))]
    assert sum(p.instances for p in consumers) == 4 + 1  # one warpgroup + the producer warp
    assert {i.count.value for i in stmts(sk, MbarInit)} == {1, 8}  # but 8 warps expected


def test_dynamic_trip_count_needs_param():
    fn, args = hp.correct_dynamic_k(**{k: v for k, v in SMALL.items() if k != "k_tiles"})
    (k,) = trace(fn, *args)
    with pytest.raises(ExtractError, match="--param size_in_kernel=N"):
        extract(k)
    (name,) = {p for p in _param_names(k)}
    sk = extract(k, params={name: 3})
    assert [p.name for p in sk.params] == [name] and sk.params[0].lo == 3
    assert verdict(sk) == "ok"


def _param_names(k):
    try:
        extract(k)
    except ExtractError as e:
        import re
        return re.findall(r"--param (\w+)=", str(e))
    return []


# ---- cluster barrier, multicast TMA, remote arrives -----------------------------------------------
@cute.kernel
def _cluster_kernel(n: Int32):
    bar = cutlass.memory.SmemAllocator().allocate_array(Int64, 1)
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()  # @cluster-arrive
    cute.arch.cluster_wait()
    cute.arch.mbarrier_wait(bar, cute.arch.lane_idx() % 2)  # @unsupported


@cute.jit
def _cluster_host(n: Int32):
    _cluster_kernel(n).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))


def test_cluster_barrier():
    (k,) = trace(_cluster_host, Int32(1))
    sk = extract(k)
    assert sk.num_ctas == 2 and {p.cta for p in sk.processes} == {0, 1}
    (arrive, _) = [s for s in stmts(sk, ClusterArrive)]
    assert arrive.relaxed and arrive.loc.line == line_of(__file__, "# @cluster-arrive")
    assert len(stmts(sk, ClusterWait)) == 2
    # a wait whose parity differs between the lanes of a warp is not modelled: explicit marker
    uns = unsupported_ops(sk)
    assert uns and all(u.loc.line == line_of(__file__, "# @unsupported") for u in uns)
    assert "lane" in uns[0].what


import hopper_multicast as hm  # noqa: E402


def test_multicast_shape():
    sk = sk_of(hm.VARIANTS["correct"])
    assert sk.num_ctas == 2
    loads = stmts(sk, TmaLoad)
    assert len(loads) == 2 and {(t.bytes.value, t.multicast.value) for t in loads} == {(8192, 3)}
    # consumer_release: lane 0 arrives on its own CTA's empty barrier, lane 1 on the peer's
    remote = [s for s in stmts(sk, MbarArrive)]
    assert {s.bar.cta.value for s in remote} == {0, 1}
    assert not unsupported_ops(sk)


@pytest.mark.parametrize("name,kind", [
    ("correct", "ok"),
    ("no_multicast_wait", "uninitialized-barrier"),
    ("local_mask", "deadlock"),
])
def test_multicast_verdicts(name, kind):
    assert verdict(sk_of(hm.VARIANTS[name]), max_states=200_000) == kind


# ---- host example arguments become concrete params ------------------------------------------------
@cute.kernel
def _count_kernel(n: Int32, m: Int32):
    bar = cutlass.memory.SmemAllocator().allocate_array(Int64, 1)
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.sync_threads()
    for i in cutlass.range(n, unroll=1):
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_wait(bar, i % m)


@cute.jit
def _count_host(steps: Int32, period: Int32):
    _count_kernel(steps + 1, period).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_example_args_become_params():
    (k,) = trace(_count_host, Int32(3), Int32(2))
    sk = extract(k)
    assert {(p.name, p.lo, p.hi) for p in sk.params} == {("arg0", 4, 4), ("period", 2, 2)}
    assert verdict(sk) == "ok"
    sk = extract(k, params={"period": (1, 2)})  # the explicit route overrides the example
    assert {(p.name, p.lo, p.hi) for p in sk.params} == {("arg0", 4, 4), ("period", 1, 2)}
    assert verdict(sk) == "deadlock"  # period 1: every wait asks for parity 0; the 2nd blocks
