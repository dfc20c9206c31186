"""Bench: trip counts as ranges. The happens-before engine's cutoff decides a launch parameter
with no upper bound (`--param K=LO..`); the table is bench/cutoff.md.

    python bench/cutoff.py [NAME ...]

Rows: rings (4 stages, 2 consumer warps; correct, and with the phase bit never flipped, a bug that
shows once the ring wraps), the triangular loop of tests/test_cutoff.py (no period), and the
stored catalog kernels whose trip count is a launch value (quack's SM90 GEMM: its k-tile count;
flash-attn-4's SM90 forward: its KV-block count), from the fixtures, no DSL needed.

Columns: kernel, parameter, range, engine, processes, ops (the engine's events, in every run),
runs (executions checked), values checked one by one, base and period of the pump, check seconds,
peak MB (Python's allocations, a second run), verdict. One core; seconds are this machine's,
nothing asserts on them.
"""
from __future__ import annotations

import os
import re
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from warpspin.engine import hb  # noqa: E402
from warpspin.syncir.ir import UNBOUNDED  # noqa: E402
from warpspin.syncir.passes import without_noop_fences  # noqa: E402
from warpspin.syncir.protocols import ring  # noqa: E402

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

HEAD = ("kernel", "parameter", "range", "engine", "processes", "ops", "runs", "values checked",
        "pump", "check s", "MB", "verdict")

CATALOG = {"quack.gemm_sm90": "ceil_div_in_kernel", "fa4.sm90": "ceil_div_in_get_n_block_min_max"}


def _catalog(name: str, param: str):
    from fixtures import catalog as C
    from warpspin.extract import extract
    from warpspin.frontend import serialize
    params = dict(C.golden_params()[name])
    params[param] = (1, UNBOUNDED)
    return extract(serialize.load(C.fixture_path(name)), params=params)


def cases():
    from test_cutoff import triangular  # noqa: E402
    yield "ring s4 c2", "K", lambda: ring(stages=4, consumers=2, trips_range=(1, UNBOUNDED))
    yield "ring s4 c2 no-flip", "K", lambda: ring(stages=4, consumers=2, bug="no-flip",
                                                 trips_range=(1, UNBOUNDED))
    yield "triangular loop", "K", triangular
    for name, param in CATALOG.items():
        yield name, param, (lambda n=name, p=param: _catalog(n, p))


def row(name: str, param: str, k) -> tuple:
    k, _ = without_noop_fences(k)
    t0 = time.perf_counter()
    r = hb.check(k, timeout_s=1200)
    dt = time.perf_counter() - t0
    tracemalloc.start()
    hb.check(k, timeout_s=1200)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    arg = r.config.get("cutoff", "")
    checked = re.search(r"(?:the values |(\d+ values in ))(\S+) were", arg)
    pump = re.search(r"from \S+=(\d+) on.*\(period (\d+)\)", arg)
    verdict = {"verified": "VERIFIED", "violation": f"VIOLATION ({r.kind})"}.get(
        r.verdict, f"{r.verdict} ({r.reasons[0][:70]})" if r.reasons else r.verdict)
    if r.verdict == "violation":
        at = next((e.value for e in r.events if getattr(e, "name", None) == param), "?")
        verdict += f" at {param}={at}"
    return (name, param, "1..", "happens-before", sum(p.instances for p in k.processes),
            f"{r.cost.ops:,}", r.cost.runs,
            (checked.group(1) or "") + checked.group(2) if checked else "",
            f"base {pump.group(1)}, period {pump.group(2)}" if pump else "", f"{dt:.1f}",
            f"{peak:.0f}", verdict)


def main(argv: list[str]) -> None:
    rows = [row(n, p, make()) for n, p, make in cases() if not argv or n in argv]
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
