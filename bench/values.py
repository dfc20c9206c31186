"""Bench: values handed through memory, as their ranges grow. The MoE example (per-expert token
counts read from global memory, each count in 0..hi), the persistent scheduler (tile indices
through shared-memory words, num_tiles in 0..hi, both CTAs of the grid) and the dynamic
scheduler (the same, its tiles taken from a global semaphore the other CTAs take tiles from).

    python bench/values.py

One row per (kernel, range): states, state-vector bytes, seconds (check), memory, verdict.
Seconds are this machine's, one core; nothing here asserts on them.
"""
from __future__ import annotations

import os
import sys

from warpspin.api import CheckOptions, check_target

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = [("moe_counts.py", v, {f"counts_{e}": (0, hi) for e in range(4)}, f"counts_e in 0..{hi}")
        for v in ("correct", "producer_caps") for hi in (1, 2, 3, 4)] + \
       [("persistent_scheduler.py", v, {"num_tiles": (0, hi)}, f"num_tiles in 0..{hi}")
        for v in ("correct", "zero_tile_wait", "release_before_load") for hi in (2, 5, 8)] + \
       [("dynamic_scheduler.py", v, {"num_tiles": (0, hi)}, f"num_tiles in 0..{hi}")
        for v in ("correct", "static_count") for hi in (2, 5, 8, 12)]


def main() -> int:
    head = ("kernel", "variant", "range", "processes", "states", "state-vector bytes", "check s",
            "MB", "verdict")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for ex, variant, params, text in ROWS:
        (r,) = check_target(os.path.join(ROOT, "examples", ex) + f":{variant}",
                            CheckOptions(timeout_s=300, params=params))
        verdict = r.violations[0].kind if r.violations else r.verdict
        print("| " + " | ".join(str(x) for x in (
            ex, variant, text, r.stats.processes, f"{r.stats.states:,}", r.stats.state_vector,
            f"{r.stats.seconds.get('check', 0):.2f}", f"{r.stats.memory_mb:.0f}", verdict)) + " |",
            flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
