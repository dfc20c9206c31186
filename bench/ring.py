"""Bench: the warp-specialized ring at growing sizes, checked end to end with SPIN.

    python bench/ring.py                 # default grid (a few minutes)
    python bench/ring.py --quick         # small grid
    python bench/ring.py --plain         # also the plain encoding (one Promela process per warp)

Prints one row per model: consumers, stages, k-tiles, CTAs, encoding, states, seconds, memory,
verdict. Timings are this machine's; nothing here asserts on them.
"""
from __future__ import annotations

import argparse
import sys
import time

from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir.protocols import ring


def row(consumers, stages, trips, ctas, reduce, bug=None, timeout=120, memory=4096):
    k = ring(stages=stages, trips=trips, consumers=consumers, ctas=ctas, bug=bug)
    t0 = time.perf_counter()
    r = verify_kernel(k, opts=CheckOptions(timeout_s=timeout, memory_mb=memory, reduce=reduce))
    dt = time.perf_counter() - t0
    verdict = r.violations[0].kind if r.violations else r.verdict
    if r.verdict == "inconclusive":
        verdict += " (" + "; ".join(r.reasons)[:50] + ")"
    return (consumers, stages, trips, ctas, "reduced" if reduce else "plain", bug or "-",
            f"{r.stats.states:,}", f"{dt:.2f}", f"{r.stats.memory_mb:.0f}", verdict)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plain", action="store_true", help="also run the plain encoding")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args(argv)
    if args.quick:
        grid = [(1, 2, 4, 1), (2, 2, 4, 1), (4, 4, 8, 1)]
    else:
        grid = [(nc, s, k, c) for nc in (1, 2, 4, 8, 16) for s, k in ((2, 4), (4, 16), (4, 64), (8, 64))
                for c in (1, 2)]
    head = ("consumers", "stages", "k", "ctas", "encoding", "bug", "states", "seconds", "MB", "verdict")
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for nc, s, k, c in grid:
        encodings = (True, False) if args.plain else (True,)
        for reduce in encodings:
            print(" | ".join(str(x) for x in row(nc, s, k, c, reduce, timeout=args.timeout)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
