"""Bench: trace, extract and check seconds for every variant of every CuTe DSL example.

    python bench/examples.py [examples/hopper_pipeline.py ...]

One row per kernel: example, variant, engine (which decided), processes, states (SPIN) or ops
(the happens-before engine's events), trace s, extract s, check s, total s, MB, verdict
(`Result.outcome`: a violation's kind, "not-checked", or the verdict). Seconds are this machine's, one core; nothing here asserts on them.
"""
from __future__ import annotations

import glob
import os
import sys

from warpspin.api import check_target
from warpspin.demo import _module, example_options

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs


def main(argv: list[str]) -> int:
    if any(a.startswith("-") for a in argv):
        print(__doc__.strip())
        return 0 if argv in (["-h"], ["--help"]) else 2
    paths = argv or sorted(p for p in glob.glob("examples/*.py")
                           if not os.path.basename(p).startswith(("_", "syncir")))
    head = ("example", "variant", "engine", "processes", "states / ops", "state-vector bytes",
            "trace s", "extract s", "check s", "total s", "MB", "verdict")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path in paths:
        mod = _module(path)
        for name in getattr(mod, "VARIANTS", {}):
            opts = example_options(mod, name, timeout_s=300)
            for r in check_target(f"{path}:{name}", opts):
                st, s = r.stats, r.stats.seconds
                size = f"{st.states:,} states" if st.states else \
                    (f"{st.hb_ops:,} ops" if st.hb_ops else "")
                print("| " + " | ".join(str(x) for x in (
                    os.path.basename(path), name, st.engine, st.processes, size,
                    st.state_vector or "", f"{s.get('trace', 0):.2f}", f"{s.get('extract', 0):.2f}",
                    f"{s.get('check', 0):.2f}", f"{s.get('total', 0):.2f}",
                    f"{st.memory_mb:.0f}" if st.memory_mb else "", r.outcome)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
