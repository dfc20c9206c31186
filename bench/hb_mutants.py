"""Bench: one-edit mutants of real kernels (the SyncIR of catalog kernels SPIN verifies in
seconds), each checked by both engines; where both decide, their verdicts must agree (the kind of
a violation may differ: each engine's counterexample is a real execution, replayed). Prints one
row per kernel and the disagreements, if any (none is the expected outcome).

    python bench/hb_mutants.py [--per-kernel N] [--spin-timeout S] [--properties P] [NAME ...]

`--properties deadlock` compares deadlock freedom alone (for a kernel whose global output is not
placed: with races asked for, each of its mutants without a violation is INCONCLUSIVE in both).

Mutants (tests/hb_gen.py `mutants`): an op deleted (arrive, wait, fence, barrier, commit, copy,
wait_group), a count or byte count one step off, a parity swapped, two neighbouring statements
swapped; a fixed random sample of N per kernel.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from hb_gen import mutants  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.syncir import validate  # noqa: E402

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

RACE_KINDS = ("race", "proxy-race", "tensormap-race")
KERNELS = ("quack.rmsnorm", "quack.softmax", "quack.layernorm.n32768", "quack.rmsnorm.cluster2",
           "quack.softmax.cluster", "fa4.sm90")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--per-kernel", type=int, default=40)
    ap.add_argument("--spin-timeout", type=float, default=60)
    ap.add_argument("--properties", default="deadlock,race")
    args = ap.parse_args(argv)
    props = tuple(args.properties.split(","))
    from fixtures import catalog as C
    head = ("kernel", "mutants", "both decided", "agree", "hb verified", "hb violation",
            "hb outside", "spin undecided", "seconds")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    bad = []
    for name in args.names or KERNELS:
        ms = [m for m in mutants(C.extracted(name)) if not validate(m)]
        random.Random(name).shuffle(ms)
        c = collections.Counter()
        t0 = time.perf_counter()
        for m in ms[:args.per_kernel]:
            h = verify_kernel(m, opts=CheckOptions(engine="hb", timeout_s=120, properties=props))
            s = verify_kernel(m, opts=CheckOptions(engine="spin", timeout_s=args.spin_timeout,
                                                   load_races=True, properties=props))
            c["mutants"] += 1
            hd = h.stats.engine == "happens-before"
            c["hb " + (h.verdict if hd else "outside")] += 1
            if "race" not in props and h.verdict == "violation" and s.verdict == "verified" \
                    and h.violations[0].kind in RACE_KINDS:
                # the happens-before engine reports races whatever is asked; SPIN searched
                # without the data cells: compare with SPIN checking races too
                s = verify_kernel(m, opts=CheckOptions(engine="spin", timeout_s=args.spin_timeout,
                                                       load_races=True))
            if s.verdict not in ("verified", "violation"):
                c["spin undecided"] += 1
                continue
            if hd:
                c["both decided"] += 1
                if h.verdict == s.verdict:
                    c["agree"] += 1
                else:
                    bad.append((m.name, h.verdict, s.verdict, str(h)[:400], str(s)[:400]))
        print("| " + " | ".join(str(x) for x in (
            name, c["mutants"], c["both decided"], c["agree"], c["hb verified"],
            c["hb violation"], c["hb outside"], c["spin undecided"],
            f"{time.perf_counter() - t0:.0f}")) + " |", flush=True)
    for b in bad:
        print("DISAGREEMENT", *b, sep="\n  ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
