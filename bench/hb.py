"""Bench: the happens-before engine beside SPIN, on the kernels SPIN does not finish (the 15
INCONCLUSIVE rows of docs/coverage.md), the 16-consumer-warp ring with and without its
15-arrival bug, and flash-attn-4's SM100 forward at realistic sizes (several tiles for the CTA,
8 and 16 KV blocks). The table is bench/hb.md.

    python bench/hb.py [--spin-timeout S] [NAME ...]

Columns: kernel, engine, processes, states (SPIN) or ops (the engine's events, in every run),
runs (executions: one per launch choice, plus reorderings), check seconds (after tracing and
extraction), peak MB of the check (SPIN: pan's; the engine: Python's allocations), verdict.
With --spin-timeout 0 SPIN is not run. One core; seconds are this machine's, nothing asserts
on them.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.engine import hb  # noqa: E402
from warpspin.syncir.passes import without_noop_fences  # noqa: E402
from warpspin.syncir.protocols import ring  # noqa: E402

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

HEAD = ("kernel", "engine", "processes", "states / ops", "runs", "check s", "MB", "verdict")



def _hb_row(name: str, k) -> tuple:
    k, _ = without_noop_fences(k)
    t0 = time.perf_counter()
    r = hb.check(k, timeout_s=600)
    dt = time.perf_counter() - t0
    tracemalloc.start()  # a second run for the memory: tracing slows Python down
    hb.check(k, timeout_s=600)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    verdict = {"verified": "VERIFIED", "violation": f"VIOLATION ({r.kind})"}.get(
        r.verdict, f"{r.verdict} ({r.reasons[0][:60]})" if r.reasons else r.verdict)
    return (name, "happens-before", sum(p.instances for p in k.processes), f"{r.cost.ops:,} ops",
            r.cost.runs, f"{dt:.2f}", f"{peak:.0f}", verdict)


def _spin_row(name: str, k, timeout: float) -> tuple:
    r = verify_kernel(k, opts=CheckOptions(engine="spin", timeout_s=timeout, memory_mb=8192))
    s = r.stats
    verdict = r.verdict.upper() + (f" ({r.violations[0].kind})" if r.violations else "")
    return (name, "spin", s.processes, f"{s.states:,} states", "", f"{s.seconds.get('check', 0):.1f}",
            f"{s.memory_mb:.0f}" if s.memory_mb else "", verdict)


def kernels(names):
    from fixtures import catalog as C
    from warpspin.extract import extract
    for name in names:
        yield name, C.extracted(name)
    yield "ring 16 consumer warps", ring(stages=4, trips=8, consumers=16)
    yield "ring 16 consumer warps, 15-arrival empty", ring(stages=4, trips=8, consumers=16,
                                                            bug="two-behind")
    for blocks, tiles in ((8, 4), (16, 4)):
        p = dict(C.SM100_PARAMS)
        p.update({C.N_BLOCKS: blocks, "arg20": tiles, "shape_0_in_kernel": 128 * blocks})
        yield f"fa4.sm100, {tiles} tiles x {blocks} KV blocks", extract(C.traced("fa4.sm100"), params=p)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--spin-timeout", type=float, default=60)
    args = ap.parse_args(argv)
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD), flush=True)
    from fixtures import catalog as C
    for name, k in kernels(args.names or C.FLAGSHIP):
        rows = [_hb_row(name, k)]
        if args.spin_timeout > 0:
            rows.append(_spin_row(name, k, args.spin_timeout))
        for row in rows:
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
