"""Bench: what race checking costs over deadlock checking alone, on the same kernels, in SPIN and
in the happens-before engine side by side. Each kernel with tensormaps rewritten in global
memory, staged buffers, cp.async copies or shared data is checked with its race model (as by
default: tensormap and buffer state, the per-thread bulk groups, the stages TMA loads fill, the
cells of shared data) and with the race model taken out (loads through a plain descriptor;
tensormap writes and fences, buffer writes and reads, TMA stores, proxy fences, bulk and wgmma
groups, cp.async copies, groups and accesses, shared-data cells dropped: the deadlock and
barrier-protocol model alone), by SPIN (`--engine spin`) and by the happens-before engine
(`--engine hb`).

    python bench/races.py [SUBSTRING]   # only the kernels whose name contains it

One row per kernel: SPIN's states and seconds without and with races and their ratio, then the
engine's events and seconds without and with races. Seconds are this machine's, one core;
nothing here asserts on them.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace

from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import TmaLoad
from warpspin.syncir.ir import rewrite_stmts
from warpspin.syncir.ops import (BulkCommit, BulkWaitRead, CpAsync, CpAsyncCommit, CpAsyncWait,
                                 FenceProxyAsync, SmemOwn, SmemRead, SmemWrite, TensormapAcquire,
                                 TensormapRelease, TensormapWrite, TmaStore, WgmmaCommit,
                                 WgmmaRead, WgmmaWait, WgmmaReadData, WgmmaAcc, AccAccess,
                                 WgmmaFence)
from warpspin.syncir.passes import without_data_cells
from warpspin.syncir.protocols import epilogue, kgrouped, mainloop

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RACE_OPS = (BulkCommit, BulkWaitRead, TensormapAcquire, TensormapRelease, TensormapWrite,
            SmemWrite, TmaStore, FenceProxyAsync, WgmmaRead, SmemRead, WgmmaCommit, WgmmaWait,
            CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn, WgmmaReadData, WgmmaAcc, AccAccess,
            WgmmaFence)


def without_races(k):
    k = without_data_cells(k)

    def plain(s):
        if isinstance(s, RACE_OPS):
            return ()
        return (replace(s, desc=None, dst=None) if isinstance(s, TmaLoad) else s,)
    return replace(k, processes=tuple(replace(p, body=rewrite_stmts(p.body, plain))
                                      for p in k.processes), tensormaps=(), buffers=())


def stored(name: str):
    """A kernel from a stored trace (tests/fixtures) with the tests' launch values."""
    import json
    from warpspin.extract.build import build
    from warpspin.frontend.serialize import loads
    fixtures = os.path.join(ROOT, "tests", "fixtures")
    with open(os.path.join(fixtures, f"{name}.json.gz"), "rb") as f:
        traced = loads(f.read())
    with open(os.path.join(fixtures, "params.json")) as f:
        params = json.load(f).get(name, {})
    return build(traced, {a: tuple(b) if isinstance(b, list) else b for a, b in params.items()})


def kernels():
    from warpspin.extract import extract
    from warpspin.frontend import trace
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import kgrouped_tensormap as ex
    fn, args = ex.correct()
    yield "kgrouped_tensormap.py:correct (16 groups)", extract(trace(fn, *args)[0])
    for g, c in ((2, 1), (4, 2), (8, 2)):
        yield f"SyncIR kgrouped, {g} groups x 2 k-tiles, {c} consumer warps", \
            kgrouped(groups=g, ktiles=2, consumers=c)
    import epilogue_store as ep
    fn, args = ep.correct()
    yield "epilogue_store.py:correct (4 subtiles)", extract(trace(fn, *args)[0])
    for w, t in ((2, 3), (4, 4), (4, 8)):
        yield f"SyncIR epilogue, {w} warps, {t} subtiles", epilogue(warps=w, subtiles=t)
    for s, c in ((2, 1), (4, 2)):
        yield f"SyncIR mainloop, {s} stages, {c} consumer warps", mainloop(stages=s, consumers=c)
    import hopper_pipeline as hp
    fn, args = hp.correct_one_consumer()
    yield "hopper_pipeline.py:correct_one_consumer", extract(trace(fn, *args)[0])
    import cp_async_drain as cp
    from warpspin.syncir import Param
    fn, args = cp.correct()
    k = extract(trace(fn, *args)[0])
    yield "cp_async_drain.py:correct (n = 0..3)", replace(k, params=(Param("n", 0, 3),))
    import block_reduce as br
    fn, args = br.correct()
    yield "block_reduce.py:correct (8 warps, reduction_buffer)", extract(trace(fn, *args)[0])
    import wgmma_accumulator as wa
    fn, args = wa.correct()
    yield "wgmma_accumulator.py:correct (4 warps, sA and sB, the accumulator)", \
        extract(trace(fn, *args)[0])
    yield "quack.rmsnorm (stored trace, sX and reduction_buffer)", stored("quack.rmsnorm")
    yield "quack.softmax.cluster (stored trace, sX and the partials)", \
        stored("quack.softmax.cluster")
    for name in ("quack.gemm_sm90", "quack.gemm_sm90.c", "quack.gemm_sm90.persistent"):
        yield f"{name} (stored trace, sD, sA, sB)", stored(name)


def main(only: str = "", spin_timeout: float = 300.0) -> int:
    head = ("kernel", "SPIN states (deadlocks only)", "SPIN states (races)", "ratio",
            "SPIN s (deadlocks only)", "SPIN s (races)", "hb ops (deadlocks only)",
            "hb ops (races)", "hb s (deadlocks only)", "hb s (races)", "verdict")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, k in kernels():
        if only not in name:
            continue
        cells = []
        for engine in ("spin", "hb"):
            for kk in (without_races(k), k):
                opts = CheckOptions(timeout_s=spin_timeout, jobs=1, memory_mb=8192,
                                    engine=engine)
                t = time.perf_counter()
                r = verify_kernel(kk, opts=opts)
                cells.append((r, time.perf_counter() - t))
        (a, ta), (b, tb), (c, tc), (d, td) = cells
        verdict = d.violations[0].kind if d.violations else d.verdict
        cut = lambda r, n: f"{n:,}" + ("" if r.verdict != "inconclusive" or r.outcome ==  # noqa: E731
                                       "not-checked" else " (cut)")
        print(f"| {name} | {cut(a, a.stats.states)} | {cut(b, b.stats.states)} | "
              f"{b.stats.states / max(1, a.stats.states):.2f} | {ta:.2f} | {tb:.2f} | "
              f"{c.stats.hb_ops:,} | {d.stats.hb_ops:,} | {tc:.2f} | {td:.2f} | {verdict} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
