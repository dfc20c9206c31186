"""quack-kernels' SM90 GEMM, traced on the CPU through the library's own compile, extracted and
checked end to end.  Needs: pip install torch==2.13.0 quack-kernels triton (CPU torch)."""
from __future__ import annotations

import os
import shutil

import pytest

pytestmark = pytest.mark.dsl
pytest.importorskip("cutlass")
try:
    import quack.gemm as qg  # noqa: E402
except Exception as e:  # not installed, or its imports (torch, triton) are missing
    if os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs it: never skip there
        raise
    pytest.skip(f"quack-kernels is not importable ({type(e).__name__}: {e}); "
                "pip install torch==2.13.0 quack-kernels triton", allow_module_level=True)

from fixtures import catalog as C  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.extract import ExtractError, extract  # noqa: E402
from warpspin.syncir import (Const, MbarArrive, MbarArriveExpectTx, SmemLoad, SmemStore, StAsync, TmaLoad,  # noqa: E402
                             Var, unsupported_ops, walk_stmts)
from verdicts import verified_but_global_memory  # noqa: E402


def quack_sm90_gemm(variant: str = ""):
    """quack.gemm's SM90 kernel for bf16 A/B/D (K-major A and B), traced through the library's
    own compile (``catalog.quack_sm90_gemm``: ``__wrapped__``, ``device_capacity=(9, 0)``), once
    per test session."""
    return C.traced("quack.gemm_sm90" + (f".{variant}" if variant else ""))


K_TILES = "ceil_div_in_kernel"  # cute.ceil_div(len_k, tile_k) at quack/gemm_sm90.py:1292 (dynamic K)


def test_extract_shape():
    k = quack_sm90_gemm()
    sk = extract(k, params={K_TILES: 2})
    assert [(p.warps, p.instances) for p in sk.processes] == [((0, 1), 1), ((1, 4), 3), ((4, 5), 1),
                                                            ((5, 8), 3)]
    loads = [s for p in sk.processes for s in walk_stmts(p.body) if isinstance(s, TmaLoad)]
    etx = [s for p in sk.processes for s in walk_stmts(p.body) if isinstance(s, MbarArriveExpectTx)]
    # one A tile (64x64 bf16) and one B tile (128x64 bf16) per stage, announced together
    assert sorted(t.bytes.value for t in loads) == [8192, 16384]
    assert [e.bytes.value for e in etx] == [8192 + 16384]
    assert all(t.loc.file.endswith("quack/copy_utils.py") for t in loads)
    assert not unsupported_ops(sk)


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
def test_verified():
    k = quack_sm90_gemm()
    sk = extract(k, params={K_TILES: 2})
    r = verify_kernel(sk, opts=CheckOptions(timeout_s=300, memory_mb=2048))
    assert verified_but_global_memory(r), str(r)


def test_persistent_scheduler_hands_tiles_through_shared_words():
    """The persistent tile scheduler hands the next tile to the other warps through shared memory
    (4 words: m, n, batch, valid): the words are modelled (st.shared by the scheduler warp,
    ld.shared by every role), the FastDivmod that decodes the tile is a division under a stated
    assumption, and nothing is Unsupported once the scheduler's launch values are given."""
    from fixtures.catalog import SCHEDULER_ONE
    k = quack_sm90_gemm("persistent")
    with pytest.raises(ExtractError) as e:       # the scheduler's values are launch values
        extract(k, params={K_TILES: 2, "size_in__delinearize_work_idx": 2, "clusterid_z": 0})
    assert "nclusterid_z" in str(e.value)
    sk = extract(k, params={K_TILES: 2, "size_in__delinearize_work_idx": 2, "clusterid_z": 0, **SCHEDULER_ONE})
    assert not unsupported_ops(sk)
    assert [w.size for w in sk.words] == [4]
    stmts = [(p.role, s) for p in sk.processes for s in walk_stmts(p.body)]
    storers = {r for r, s in stmts if isinstance(s, SmemStore)}
    loaders = {r for r, s in stmts if isinstance(s, SmemLoad)}
    assert storers and loaders - storers   # the scheduler warp stores, the other roles load
    assert any("FastDivmod" in a for a in sk.assumptions)


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
def test_persistent_verified():
    """quack's default SM90 GEMM (persistent tile scheduler, cluster 1), through the library's
    own compile: VERIFIED by the happens-before engine for every tile count 0..2 (0: the CTA
    gets no tile), grid 1..2 and each CTA of it, and 1..2 k-tiles, the scheduler's divisors
    those of a 1x1x1 problem in clusters (tile counts 0..3 are a row of docs/coverage.md,
    `quack.gemm_sm90.persistent.ranges`). SPIN's proof of the same kernel is
    `test_persistent_verified_by_spin` (exhaustive: bench/exhaustive.py)."""
    from fixtures.catalog import PERSISTENT_RANGES
    ranges = dict(PERSISTENT_RANGES, size_in__delinearize_work_idx=(0, 2))
    sk = extract(quack_sm90_gemm("persistent"), params=ranges)
    assert {p.name: (p.lo, p.hi) for p in sk.params if p.lo != p.hi} == \
        {"size_in__delinearize_work_idx": (0, 2), K_TILES: (1, 2), "clusterid_z": (0, 1), "nclusterid_z": (1, 2)}
    h = verify_kernel(sk)  # the default engine: one execution per launch choice, load races too
    assert verified_but_global_memory(h) and h.stats.engine == "happens-before", str(h)
    from warpspin.syncir.interp import Machine
    assert h.stats.hb_runs == len(Machine(sk).initial_states())  # one per launch choice
    assert any("FastDivmod" in a for a in h.config["assumptions"])
    assert "size_in__delinearize_work_idx" in str(h.config) and "0..2" in str(h.config), h.config


@pytest.mark.exhaustive
def test_persistent_verified_by_spin():
    """SPIN's proof of the persistent GEMM for deadlocks and the staged buffers it follows,
    without load races (its state count), with one k-tile: 3.3 M states, 75-120 s on one core
    of the CI container (SPIN over k-tiles 1..3 is measured on 16 cores in bench/parallel.md)."""
    from fixtures.catalog import PERSISTENT_RANGES
    ranges = dict(PERSISTENT_RANGES, size_in__delinearize_work_idx=(0, 2))
    one = extract(quack_sm90_gemm("persistent"), params=dict(ranges, **{K_TILES: 1}))
    r = verify_kernel(one, opts=CheckOptions(timeout_s=1200, memory_mb=12288, engine="spin",
                                             load_races=False, properties=("deadlock",)))
    assert r.verdict == "verified", str(r)
    assert r.stats.states > 2_000_000
    assert any("FastDivmod" in a for a in r.config["assumptions"])


def test_persistent_cluster2_words_wait_for_st_async():
    """The persistent GEMM with a 2-CTA cluster: CTA 0's scheduler warp st.async's each tile's
    four words into both CTAs (`store_shared_remote_x4`, inline PTX at utils.py:79, one lane per
    CTA), which complete 16 bytes on that CTA's scheduler barrier; the consumers load them after
    their wait. The words are modelled (syncir StAsync): nothing is UNSUPPORTED, the peer's tile
    is the scheduler's plus its rank, and its relaxed cluster arrive at pipeline init precedes
    every word write, so it does not drop them."""
    sk = extract(quack_sm90_gemm("persistent_cluster2"),
                 params=C.entry("quack.gemm_sm90.persistent_cluster2").params)
    assert not unsupported_ops(sk)
    assert [w.size for w in sk.words] == [4]
    _scheduler_st_asyncs(sk)


def test_pingpong_cluster2_words_in_two_stages():
    """The pingpong GEMM with a 2-CTA cluster: its scheduler has two stages, so the st.async's
    address is a slice of the (4,2):(1,4) words at a dynamic stage (`cute.slice` with a dynamic
    coordinate); the words are modelled at 4 * stage, the barrier at the stage."""
    sk = extract(quack_sm90_gemm("pingpong_cluster2"),
                 params=C.entry("quack.gemm_sm90.pingpong_cluster2").params)
    assert not unsupported_ops(sk)
    assert [w.size for w in sk.words] == [8]
    stores = _scheduler_st_asyncs(sk)
    assert all(not isinstance(s.ref.index, Const) and s.ref.index.lhs == Const(4)
               and s.ref.index.rhs == s.bar.index for s in stores), [s.ref for s in stores]


def _scheduler_st_asyncs(sk):
    """The scheduler's st.async's: one per CTA, the peer's tile being its own plus the rank."""
    stores = [s for p in sk.processes for s in walk_stmts(p.body) if isinstance(s, StAsync)]
    assert sorted(s.bar.cta.value for s in stores) in ([0, 1], [0, 0, 1, 1])
    assert all(s.loc.file.endswith("quack/utils.py") and s.loc.line == 79 for s in stores)
    for a in stores:
        if a.bar.cta.value == 1:  # its CTA-0 twin: the same store of the same code path
            b = next(b for b in stores if b.bar.cta.value == 0 and b.values[1:] == a.values[1:])
            assert a.values[0] == b.values[0] + 1
    assert {s.ref.name for s in stores} == {sk.words[0].name}
    return stores


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
def test_two_consumer_warpgroups_verified():
    """Tile 128x192: two consumer warpgroups, whose first warp initializes every barrier and
    stores the epilogue's staging buffer with TMA (so its code is not the other seven's: R12,
    which would merge it with them, does not apply), VERIFIED with the buffer's races checked."""
    sk = extract(quack_sm90_gemm("tile128x192"), params={K_TILES: 1})
    (buf,) = [b for b in sk.buffers if b.storers]
    assert buf.label == "sD" and len(buf.storers) == 1
    assert sorted(b.label for b in sk.buffers if not b.storers) == ["sA", "sB"]
    r = verify_kernel(sk, opts=CheckOptions(timeout_s=300, memory_mb=4096))
    assert verified_but_global_memory(r), str(r)
    assert "sD" in r.config["buffers"], r.config


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
def test_persistent_dynamic_verified():
    """quack's dynamic persistent GEMM: its scheduler warp takes each next tile from a global
    semaphore (lane 0's atom.inc, shuffled to the warp) that the grid's other CTAs take tiles
    from too. It extracts completely and is VERIFIED for grid 1..2 and every way the other
    CTAs can take tiles between two fetches, with one k-tile, by the happens-before engine for
    every property for tile counts 0..2 (0..3 are a row of docs/coverage.md,
    `quack.gemm_sm90.persistent_dynamic.ranges`), one run per sequence of tiles the other CTAs
    leave. SPIN's proof is `test_persistent_dynamic_verified_by_spin` (exhaustive)."""
    from fixtures.catalog import DYNAMIC_RANGES
    sk = extract(quack_sm90_gemm("persistent_dynamic"), params=dict(DYNAMIC_RANGES,
                                                                    size_in__delinearize_work_idx=(0, 2)))
    assert not unsupported_ops(sk)
    (decl,) = sk.counters
    assert decl.label == "tile_count_semaphore"
    assert decl.limit == Var("size_in__delinearize_work_idx") - 1
    hb = verify_kernel(sk, opts=CheckOptions(timeout_s=300))
    assert verified_but_global_memory(hb) and hb.stats.engine == "happens-before", str(hb)
    assert hb.stats.hb_runs > 1
    assert any("tile_count_semaphore" in a for a in hb.config["assumptions"])


@pytest.mark.exhaustive
def test_persistent_dynamic_verified_by_spin():
    """SPIN agrees for deadlocks, tile counts 0..1: 1.2 M states, 35-90 s on one core of the
    CI container (0..2 is 5.5 M states)."""
    from fixtures.catalog import DYNAMIC_RANGES
    small = extract(quack_sm90_gemm("persistent_dynamic"),
                    params=dict(DYNAMIC_RANGES, size_in__delinearize_work_idx=(0, 1)))
    r = verify_kernel(small, opts=CheckOptions(timeout_s=900, memory_mb=4096,
                                               properties=("deadlock",), engine="spin"))
    assert r.verdict == "verified", str(r)
    assert any("tile_count_semaphore" in a for a in r.config["assumptions"])


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
@pytest.mark.parametrize("name", ["quack.softmax.cluster", "quack.cross_entropy.cluster",
                                  "quack.rmsnorm.cluster2", "quack.layernorm.cluster2"])
def test_cluster_reduction_verified(name):
    """The cluster-2 softmax and cross-entropy at N = 32768 (16 warps; every warp st.async's its
    partial into both CTAs' reduction buffer), and RMSNorm / LayerNorm with a cluster of 2 from
    quack's autotuning space: VERIFIED with every property by the default engine (the partials
    and the row buffer `sX` checked for races, the output rows and rstd / mean / loss proven
    apart between the threads of the grid), and by SPIN for deadlocks on one core with merged
    completions (R7) and early issues (R8, into the peer CTA too): 40-79 k states, about 1 s
    (without R8 into the peer: 0.78-1.7 M; without R7 and R8: more than 24 M states). SPIN is
    given the barrier protocol alone: the cells of the partials go when races are not asked for
    (the pipeline does that), and here the row copies too (each warp's own cp.async group, which
    multiplies SPIN's interleavings; the default engine checks them)."""
    from dataclasses import replace

    from warpspin.syncir import CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn, rewrite_stmts
    k = C.extracted(name)
    r = verify_kernel(k, opts=CheckOptions(timeout_s=600))
    assert r.verdict == "verified" and r.stats.engine == "happens-before", str(r)
    row_copies = (CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn)
    barriers_only = replace(k, buffers=(), processes=tuple(
        replace(p, body=rewrite_stmts(p.body, lambda s: () if isinstance(s, row_copies) else (s,)))
        for p in k.processes))
    r = verify_kernel(barriers_only, opts=CheckOptions(timeout_s=600, memory_mb=4096,
                                                       engine="spin", properties=("deadlock",)))
    assert r.verdict == "verified", str(r)
    assert {"R7", "R8"} <= set(r.config["reductions"]), r.config["reductions"]


def test_cluster2_multicast_extracts():
    """Cluster (2,1,1): B is multicast to both CTAs (the block-copy API's multicast_layout), each
    consumer warp releases the stage in both CTAs (get_hier_coord on the cluster layout, mapa)."""
    k = quack_sm90_gemm("cluster2")
    sk = extract(k, params={K_TILES: 2})
    assert sk.num_ctas == 2 and not unsupported_ops(sk)
    loads = {(t.bytes.value, None if t.multicast is None else t.multicast.value)
             for p in sk.processes for t in walk_stmts(p.body) if isinstance(t, TmaLoad)}
    assert loads == {(8192, None), (16384 // 2, 3)}  # own A tile; half of B, to both CTAs
    ctas = {s.bar.cta.value for p in sk.processes for s in walk_stmts(p.body)
            if isinstance(s, MbarArrive) and s.bar.cta is not None}
    assert ctas == {0, 1}


def test_epilogue_c_release_depends_on_the_elected_lane():
    """With a C input the epilogue's C pipeline releases inside ``elect_one()`` a stage that
    PipelineTmaAsync's ``consumer_release`` guards with ``lane < cluster size`` (canonicalize
    merges the two ifs: ``elect.sync & lane < 1``).  Whether the elected lane satisfies that
    depends on which lane elect.sync elects, which PTX leaves unspecified: the model takes the
    lowest executing lane (what the H200 elects, litmus ElectWhichLane) and the kernel's
    assumptions say so at that line."""
    sk = extract(quack_sm90_gemm("c"), params={K_TILES: 2})
    assert not unsupported_ops(sk)
    assert any(a.startswith("elect.sync before pipeline.py:102") and "lowest executing lane" in a
               for a in sk.assumptions), sk.assumptions
    # per mbarrier array: the TMA loads of one stage bring what its expect-tx announces (A and B
    # on the mainloop's full barriers, one C epilogue tile on the C pipeline's)
    loads, etx = {}, {}
    for p in sk.processes:
        for t in walk_stmts(p.body):
            if isinstance(t, TmaLoad):
                loads.setdefault(t.bar.name, []).append(t.bytes.value)
            elif isinstance(t, MbarArriveExpectTx):
                etx.setdefault(t.bar.name, set()).add(t.bytes.value)
    assert len(loads) == 2 and loads.keys() == etx.keys()
    assert all(etx[b] == {sum(v)} for b, v in loads.items()), (loads, etx)
