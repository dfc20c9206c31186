"""Coverage: every real kernel of the test catalog (quack-kernels, flash-attn-4) traced, extracted
and checked end to end, one row each; the table of docs/coverage.md.

    python bench/coverage.py [--timeout 120] [--memory 4096] [NAME ...]

Columns: kernel (catalog name), warps (instances), engine (which decided: the happens-before
engine, or SPIN for a kernel outside its class), verdict, states (SPIN) or ops (the
happens-before engine's events), state-vector bytes, trace / extract / check seconds, memory, and
why (the violation, the unsupported ops or the truncation). `--engine spin` checks with SPIN
alone (the previous table's way).
Seconds are this machine's; nothing here asserts on them.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from fixtures import catalog as C  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.extract import extract  # noqa: E402
from warpspin.report.result import Stats  # noqa: E402

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

HEAD = ("kernel", "warps", "engine", "verdict", "states / ops", "state-vector bytes", "trace s",
        "extract s", "check s", "MB", "why")


def _why(r) -> str:
    if r.violations:
        v = r.violations[0]
        loc = v.locations[0] if v.locations else None
        return f"{v.kind} at {os.path.basename(loc.file)}:{loc.line}" if loc else v.kind
    refused = r.config.get("hb_refused")
    spin = f"SPIN (outside the happens-before class: {refused[:100]})" if refused else ""
    if r.verdict == "verified":
        return spin
    if r.outcome == "not-checked":  # complete, no violation: name what was not checked
        objects = [why.split(" NOT CHECKED on ", 1)[1].split(" (")[0] for why in r.reasons]
        return "; ".join(filter(None, ["races not checked on " + ", ".join(objects), spin]))
    seen, out = set(), []
    for reason, loc in zip(r.reasons, r.reason_locations + [None] * len(r.reasons)):
        where = f" ({os.path.basename(loc.file)}:{loc.line})" if loc and loc.line else ""
        text = reason.replace(" matters for synchronization and is not modelled", "")
        if (text, where) not in seen:
            seen.add((text, where))
            out.append(text[:110] + where)
    more = f"; +{len(out) - 4} more" if len(out) > 4 else ""
    return "; ".join(out[:4]) + more


def row(name: str, timeout: float, memory: int, engine: str = "auto") -> tuple:
    e = C.entry(name)
    t0 = time.perf_counter()
    tk = C.traced(name)
    t1 = time.perf_counter()
    try:
        sk = extract(tk, params=e.params)
    except Exception as ex:  # noqa: BLE001 - a row, not a crash
        why = " ".join(f"{type(ex).__name__}: {ex}".split())  # one table cell: no newlines
        return (name, "", "", "ERROR", "", "", f"{t1 - t0:.1f}", "", "", "", why[:160])
    t2 = time.perf_counter()
    stats = Stats()
    stats.seconds.update(trace=t1 - t0, extract=t2 - t1)
    r = verify_kernel(sk, opts=CheckOptions(timeout_s=timeout, memory_mb=memory, engine=engine),
                      stats=stats)
    s = r.stats
    size = f"{s.states:,} states" if s.states else (f"{s.hb_ops:,} ops" if s.hb_ops else "")
    verdict = "INCONCLUSIVE (not checked)" if r.outcome == "not-checked" else r.verdict.upper()
    return (name, s.processes, s.engine or "", verdict, size,
            s.state_vector or "", f"{t1 - t0:.1f}", f"{t2 - t1:.2f}",
            f"{s.seconds.get('check', 0):.1f}", f"{s.memory_mb:.0f}" if s.memory_mb else "", _why(r))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--memory", type=int, default=4096)
    ap.add_argument("--engine", default="auto", choices=["auto", "hb", "spin"])
    args = ap.parse_args(argv)
    names = args.names or [e.name for e in C.entries() if e.group in ("quack", "fa4")]
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD), flush=True)
    for name in names:
        print("| " + " | ".join(str(x) for x in row(name, args.timeout, args.memory, args.engine)) + " |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
