"""Bench (issue 3): the canonical ring (syncir.protocols.ring) at growing sizes, plain and reduced
encodings, checked with SPIN (engine.check, one core). One row per model: states, pan and total
seconds, memory, verdict. Encodings: `fused` (reduce=True with R6 wait-release fusion, through
engine.lower_and_check: a `reduction-unsound` run falls back to `reduced` and says so),
`reduced` (reduce=True, fuse=False), `plain` (reduce=False).

    python bench/scale.py                     # default grid, writes bench/scale.md
    python bench/scale.py --nc 8 16 --s 4 --k 64 --ctas 2 --reduced-only
    python bench/scale.py --quick

Plain models are skipped where the reduced model of the same ring already has more than
--plain-limit states (the plain one is exponentially larger). Timings are this machine's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from warpspin.engine import check, lower_and_check
from warpspin.lower import lower
from warpspin.syncir.protocols import ring

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

HEAD = ("NC", "S", "K", "CTAs", "processes", "encoding", "jobs", "states", "state-vector bytes", "pan s",
        "total s", "MB", "result")


def run(nc, s, k, ctas, encoding, timeout, memory, bug=None, jobs=1):
    t0 = time.perf_counter()
    kern = ring(stages=s, trips=k, consumers=nc, ctas=ctas, bug=bug)
    if encoding == "fused":
        _, r = lower_and_check(kern, reduce=True, fuse=True, timeout_s=timeout, memory_mb=memory,
                               jobs=jobs)
    else:
        m = lower(kern, reduce=encoding == "reduced", fuse=False)
        r = check(m, timeout_s=timeout, memory_mb=memory, jobs=jobs)
    total = time.perf_counter() - t0
    if r.kind:
        verdict = r.kind
    elif r.complete:
        verdict = "verified"
    else:
        verdict = "inconclusive (" + ", ".join(r.truncated) + ")"
    if getattr(r, "refused", False):
        verdict += " (R6 refused: unfused)"
    if r.kind and r.found_by:
        verdict += f", found by the {r.first_found_by} after {r.first_found_s:.2f} s"
        if r.first_found_by != r.found_by:
            verdict += f", shortened by the {r.found_by}"
    procs = sum(p.instances for p in kern.processes)
    return r, (nc, s, k, ctas, procs, encoding, f"{r.states:,}", r.state_vector,
               f"{r.seconds:.2f}", f"{total:.2f}", f"{r.memory_mb:.0f}", verdict)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nc", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--s", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--k", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--ctas", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--encodings", nargs="+", default=["fused", "reduced", "plain"])
    ap.add_argument("--reduced-only", action="store_true", help="fused only")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--memory", type=int, default=2048)
    ap.add_argument("--plain-limit", type=int, default=30_000)
    ap.add_argument("--out", default="")
    ap.add_argument("--bug", default=None, help="a ring bug (syncir.protocols.RING_BUGS)")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1],
                    help="engine jobs (the portfolio: exhaustive search and bug hunts)")
    args = ap.parse_args(argv)
    if args.quick:
        args.nc, args.s, args.k, args.ctas = [1, 2, 4], [2], [4], [1, 2]
    rows = []
    print(" | ".join(HEAD))
    print(" | ".join("---" for _ in HEAD), flush=True)
    for ctas in args.ctas:
        for s in args.s:
            for k in args.k:
                if k < s:
                    continue
                for nc in args.nc:
                    small = True
                    for enc, jobs in [(e, j) for e in (["fused"] if args.reduced_only
                                                          else args.encodings)
                                      for j in args.jobs]:
                        if enc == "plain" and not small:
                            continue
                        r, row = run(nc, s, k, ctas, enc, args.timeout, args.memory, args.bug,
                                     jobs)
                        row = row[:6] + (jobs,) + row[6:]
                        rows.append(row)
                        print(" | ".join(map(str, row)), flush=True)
                        if enc == "reduced":
                            small = r.complete and r.states <= args.plain_limit
    if args.out:
        with open(args.out, "w") as f:
            f.write("| " + " | ".join(HEAD) + " |\n|" + "---|" * len(HEAD) + "\n")
            for row in rows:
                f.write("| " + " | ".join(map(str, row)) + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
