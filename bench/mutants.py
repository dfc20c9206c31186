"""Bench: one-edit mutants of every example and catalog kernel that completes, each checked with
the default engine and options; writes bench/mutants.md.

    python bench/mutants.py [--per-kernel N] [--timeout S] [--out FILE] [NAME ...]

A mutant is one edit of the kernel's SyncIR (tests/hb_gen.py `described_mutants`): an op deleted
(an arrive, wait, fence, barrier, commit, copy or wait_group), a count, byte count, thread count
or group depth one step off, a parity flipped, or two neighbouring statements swapped. Each one is

* **reported**: VIOLATION, or not VERIFIED with the property and the object named (the headline
  says what was not checked or not supported);
* **masked**: not VERIFIED for the same reasons as the kernel itself (a property the model does
  not check on some object, named in the headline): whatever the edit broke may hide there;
* **undecided**: the search hit its limit (INCONCLUSIVE naming the limit);
* **equivalent**: VERIFIED, and the edit provably changes nothing the properties observe (the
  rules below, each stated with its reason); or
* **unexplained**: VERIFIED and none of the rules applies. An unexplained survivor is a bug of
  the model or of this bench until shown otherwise; the report lists each one with its edit.

Equivalence rules (checked on the edit, not on the verdict):
* `same model`: the mutant's SyncIR equals the kernel's once the no-op fences are gone
  (`syncir.passes.without_noop_fences`, R13: a fence that changes nothing), or the two swapped
  statements are equal.
* `signals commute`: two neighbouring statements of one thread swapped that never block, touch
  no data and name different barriers (arrives, expect-tx, commits of wgmma, bulk, cp.async or
  tcgen05 groups). No thread can observe their order: the other threads see each one only
  through the barrier it names, and the set of the thread's memory accesses each one releases
  is the same (nothing but the other signal lies between them).
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

from hb_gen import described_mutants  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.syncir import validate  # noqa: E402
from warpspin.syncir.ir import BarArrive, ClusterArrive, MbarArrive, MbarArriveExpectTx  # noqa: E402
from warpspin.syncir.ops import (BulkCommit, CpAsyncCommit, MbarExpectTx, Tcgen05Commit,  # noqa: E402
                                 WgmmaCommit)
from warpspin.syncir.passes import without_noop_fences  # noqa: E402
from warpspin.syncir.printer import fmt_kernel  # noqa: E402

SIGNALS = (MbarArrive, MbarArriveExpectTx, MbarExpectTx, BarArrive, ClusterArrive, WgmmaCommit,
           BulkCommit, CpAsyncCommit, Tcgen05Commit)
COMPLETES = ("verified", "not-checked")  # a kernel whose mutants are worth checking
CLASSES = ("reported", "masked", "undecided", "equivalent", "unexplained")


def _barriers(s) -> set:
    """The barriers a signal names: mbarrier arrays (by name) and named barrier ids."""
    out = set()
    for f in ("bar", "barrier_id"):
        v = getattr(s, f, None)
        if v is not None:
            out.add(getattr(v, "name", None) or repr(v))
    return out


def _body(k) -> str:
    return "\n".join(fmt_kernel(without_noop_fences(k)[0]).splitlines()[1:])


def equivalence(kernel, mutant, edit) -> str | None:
    """The rule that shows the edit changes nothing the properties observe, or None."""
    if edit.what == "swapped" and edit.stmt == edit.other:
        return "same model"
    if _body(kernel) == _body(mutant):
        return "same model"
    if edit.what == "swapped" and isinstance(edit.stmt, SIGNALS) and \
            isinstance(edit.other, SIGNALS) and \
            not (_barriers(edit.stmt) & _barriers(edit.other)):
        return "signals commute"
    return None


def classify(kernel, base, mutant, edit, timeout: float) -> tuple[str, str]:
    """(class, detail) of one mutant of `kernel`, whose own result is `base`."""
    r = verify_kernel(mutant, opts=CheckOptions(timeout_s=timeout))
    if r.verdict == "violation":
        return "reported", r.violations[0].kind
    if r.verdict == "verified":
        rule = equivalence(kernel, mutant, edit)
        return ("equivalent", rule) if rule else ("unexplained", "VERIFIED")
    why = (r.reasons or [r.verdict])[0]
    if r.outcome == base.outcome and list(r.reasons) == list(base.reasons):
        return "masked", why
    if r.verdict == "inconclusive" and ("limit" in why or "timed out" in why or
                                        "out of memory" in why):
        return "undecided", why
    return "reported", f"{r.outcome}: {why}"


def kernels(names: list[str]) -> list[str]:
    from fixtures import catalog as C
    groups = [g for g in ("examples", "regression", "quack", "fa4") if C.available(g) is None]
    return [e.name for e in C.entries() if e.group in groups and (not names or e.name in names)]


def fmt_edit(edit) -> str:
    s = getattr(edit.stmt, "fmt", lambda: type(edit.stmt).__name__)()
    loc = getattr(edit.stmt, "loc", None)
    where = f" ({os.path.basename(loc.file)}:{loc.line})" if loc and loc.file else ""
    if edit.what == "swapped":
        o = getattr(edit.other, "fmt", lambda: type(edit.other).__name__)()
        return f"process {edit.process}: `{s}`{where} swapped with `{o}`"
    return f"process {edit.process}: `{s}`{where} {edit.what}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--per-kernel", type=int, default=0, help="a fixed random sample (0: all)")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "mutants.md"))
    args = ap.parse_args(argv)
    from fixtures import catalog as C
    rows, unexplained, totals = [], [], collections.Counter()
    t_all = time.perf_counter()
    for name in kernels(args.names):
        try:
            k = C.extracted(name)
        except Exception as e:  # a kernel that does not trace here: said in the table
            rows.append((name, f"not traced: {type(e).__name__}", *[""] * 7))
            continue
        base = verify_kernel(k, opts=CheckOptions(timeout_s=args.timeout))
        if base.outcome not in COMPLETES:
            rows.append((name, f"skipped: {base.outcome}", *[""] * 7))
            continue
        ms = [(m, e) for m, e in described_mutants(k) if not validate(m)]
        if args.per_kernel:
            random.Random(name).shuffle(ms)
            ms = ms[:args.per_kernel]
        c = collections.Counter()
        t0 = time.perf_counter()
        for m, e in ms:
            cls, detail = classify(k, base, m, e, args.timeout)
            c[cls] += 1
            c[(cls, detail if cls == "equivalent" else "")] += 1
            if cls == "unexplained":
                unexplained.append((name, fmt_edit(e)))
        totals.update({x: c[x] for x in CLASSES})
        totals["mutants"] += len(ms)
        rows.append((name, base.outcome, len(ms), *(c[x] for x in CLASSES),
                     f"{time.perf_counter() - t0:.0f}"))
        print(" | ".join(str(x) for x in rows[-1]), flush=True)
    seconds = time.perf_counter() - t_all
    with open(args.out, "w") as f:
        f.write(_report(rows, unexplained, totals, seconds, args))
    print(f"{totals['mutants']} mutants: " + ", ".join(f"{totals[x]} {x}" for x in CLASSES) +
          f" ({seconds:.0f} s) -> {args.out}")
    return 1 if unexplained else 0


def _report(rows, unexplained, totals, seconds, args) -> str:
    import platform
    head = ("kernel", "kernel's verdict", "mutants", *CLASSES, "seconds")
    out = ["# One-edit mutants of the example and catalog kernels", "",
           "Generated by `python bench/mutants.py" + (f" --per-kernel {args.per_kernel}"
                                                      if args.per_kernel else "") +
           f" --timeout {args.timeout:g}` (`make mutate`) on {platform.machine()} with "
           f"{os.cpu_count()} cores, {seconds / 60:.0f} min. What each class means and the "
           "equivalence rules: the docstring of bench/mutants.py.", "",
           f"**{totals['mutants']} mutants: " + ", ".join(f"{totals[x]} {x}" for x in CLASSES) +
           ".**", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    out += ["", "## Unexplained survivors", ""]
    out += [f"* {n}: {e}" for n, e in unexplained] or ["None."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
