"""Bench: grid models (every CTA of a small grid in one model): examples/grid_flag.py's hand-off
through a global flag with 1 to 7 producer CTAs (grids of 2 to 8 CTAs, the most a grid model
holds), correct and with the total off by one; and examples/fused_moe.py (two clusters of two
CTAs), every variant. Each with the happens-before engine and with SPIN.

    python bench/grid.py [--producers 1,3,5,7]

One row per kernel and engine: CTAs, processes, states (SPIN) or executions and ops
(happens-before), state-vector bytes, trace + extract seconds, check seconds, memory, verdict.
Seconds are this machine's, one core; nothing here asserts on them.
"""
from __future__ import annotations

import os
import sys
import time

from warpspin.api import CheckOptions, verify_kernel
from warpspin.demo import _module
from warpspin.extract import extract
from warpspin.frontend import trace

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAD = ("kernel", "engine", "CTAs", "processes", "states / ops", "state-vector bytes",
        "trace+extract s", "check s", "MB", "verdict")


def _kernels(producers: list[int]):
    grid = _module(os.path.join(ROOT, "examples", "grid_flag.py"))
    for n in producers:
        for bug in (None, "off_by_one"):
            yield f"grid_flag{'_' + bug if bug else ''} (producers={n})", \
                lambda bug=bug, n=n: grid.variant(bug, producers=n)
    moe = _module(os.path.join(ROOT, "examples", "fused_moe.py"))
    for name, make in moe.VARIANTS.items():
        yield f"fused_moe:{name}", make


def rows(producers: list[int]):
    for label, make in _kernels(producers):
        t0 = time.perf_counter()
        fn, args = make()
        (tk,) = trace(fn, *args)
        k = extract(tk)
        front = time.perf_counter() - t0
        for engine in ("hb", "spin"):
            opts = CheckOptions(jobs=1, timeout_s=1800, memory_mb=8192, engine=engine)
            r = verify_kernel(k, opts=opts)
            s = r.stats
            verdict = r.verdict.upper() + (f" ({r.violations[0].kind})" if r.violations else "")
            cost = f"{s.states:,}" if s.engine == "spin" else \
                f"{s.hb_runs} runs, {s.hb_ops:,} ops" if s.engine == "happens-before" else ""
            yield (label, s.engine or engine, k.num_ctas, s.processes, cost,
                   s.state_vector or "", f"{front:.2f}", f"{s.seconds.get('check', 0):.2f}",
                   f"{s.memory_mb:.0f}" if s.memory_mb else "", verdict)


def main(argv: list[str]) -> int:
    producers = [1, 3, 5, 7]
    if argv[:1] == ["--producers"] and len(argv) == 2:
        producers = [int(x) for x in argv[1].split(",")]
    elif argv:
        print(__doc__.strip())
        return 0 if argv in (["-h"], ["--help"]) else 2
    print(" | ".join(HEAD))
    print(" | ".join("---" for _ in HEAD))
    for row in rows(producers):
        print(" | ".join(str(x) for x in row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
