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
  no data and name different barriers (inits, arrives, expect-tx, commits of wgmma, bulk,
  cp.async or tcgen05 groups; writes of two different tensormaps). No thread can observe their
  order: the other threads see each
  one only through the barrier it names, and the set of the thread's memory accesses each one
  releases is the same (nothing but the other signal lies between them).
* `stronger wait`: a wait for the thread's own async groups (wgmma, bulk, cp.async) told to
  leave fewer groups pending: it orders more and cannot block for good (a group completes by
  itself).
* `storer's own access`: in the process that stores a buffer with TMA, its bar.sync on the
  buffer's barrier swapped with its own write of the buffer or its own `fence.proxy.async`. That
  barrier orders the other writers' accesses against the storer's wait_group.read and store;
  the storer's own write and fence stay between its own wait and store by program order, and
  PTX lets the proxy fence sit anywhere between the write and the store in causality order
  (9.7.13.4; docs/semantics.md, "Staged buffers").
* `own part`: two accesses of the thread's own part of a buffer (its one-to-one partition,
  which no other thread touches) swapped: the data the thread computes may change, which no
  property reads; no other thread's access and no synchronization moves.
* `bytes before expect`: a TMA load (or `st.async`) swapped with the `arrive.expect_tx` on the
  barrier it completes on. PTX lets the bytes complete before their expect-tx (the tx-count goes
  below zero, 9.7.13.15.2; litmus `mbarrier.tx-before-expect` on the H200), and the phase still
  needs that arrive, so it completes at the same point.
* `reviewed`: a survivor read by hand, with the reason it breaks nothing (`REVIEWED` below).
* `independent assignment`: a statement swapped with an assignment of a local it does not read,
  whose value reads nothing the statement writes: the thread computes the same values and does
  the same synchronization in the same order.
* `wait before exit`: a deleted mbarrier wait followed, to the end of its process, only by other
  waits and assignments of locals, in a kernel of one CTA: it only delays the thread's exit, and
  what an exit can break (copies or stores in flight into an exited CTA, TMEM held, remote
  arrives into it) the model checks at the exit.
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
from warpspin.syncir.ir import (Assign, BarArrive, BarSync, ClusterArrive, Const, If,  # noqa: E402
                                MbarArrive,
                                MbarArriveExpectTx, MbarInit, MbarWait, TmaLoad, expr_vars)
from warpspin.extract.cleanup import stmt_exprs  # noqa: E402
from warpspin.syncir.ops import (BulkCommit, BulkWaitRead, CpAsyncCommit, CpAsyncWait,  # noqa: E402
                                 FenceProxyAsync, MbarExpectTx, SmemOwn, SmemWrite, StAsync,
                                 Tcgen05Commit, TensormapWrite, WgmmaCommit, WgmmaWait)
from warpspin.syncir.passes import without_noop_fences  # noqa: E402
from warpspin.syncir.printer import fmt_kernel  # noqa: E402

SIGNALS = (MbarInit, MbarArrive, MbarArriveExpectTx, MbarExpectTx, BarArrive, ClusterArrive,
           WgmmaCommit, BulkCommit, CpAsyncCommit, Tcgen05Commit)
GROUP_WAITS = (BulkWaitRead, WgmmaWait, CpAsyncWait)
# (kernel name, the edit as fmt_edit writes it) -> why the mutant is correct
REVIEWED = {
    ("aliased", "process 0: `bar.sync 0` (aliased.py:12) swapped with `Lanes`"):
        "the loader arms and loads through the barrier it initialized and fenced itself (program "
        "order); the bar.sync still publishes the init to the other warp before its wait",
    ("cp_async", "process 0: `For` (cp_async.py:30) swapped with `cp.async.wait_group 0 [sX], "
                 "depth=1`"):
        "the drain moved before the loop still retires tile 0's copy when the loop runs zero "
        "times, and the loop's last iteration prefetches nothing, so no copy is in flight after it",
    ("cp_async_drain.correct", "process 0: `For` (cp_async_drain.py:62) swapped with "
                               "`cp.async.wait_group 0 [buf0], depth=1`"):
        "as in the cp_async protocol: the drain before the loop retires the prefetch when the loop "
        "runs zero times, and the loop's last iteration leaves no copy in flight",
    ("cp_async", "process 0: `smem.own read sX[k % 2], depth=1` (cp_async.py:32) swapped with "
                 "`If`"):
        "the prefetch writes stage (k + 1) % 2 and the read reads stage k % 2: other bytes",
}
COMPLETES = ("verified", "not-checked")  # a kernel whose mutants are worth checking
CLASSES = ("reported", "masked", "undecided", "equivalent", "unexplained")


def _barriers(s) -> set:
    """The barriers a signal names: (array, element) of an mbarrier (element None when computed)
    and ("named", id) of a named barrier."""
    out = set()
    bar = getattr(s, "bar", None)
    if bar is not None:
        out.add((bar.name, bar.index.value if isinstance(bar.index, Const) else None))
    bid = getattr(s, "barrier_id", None)
    if bid is not None:
        out.add(("named", bid.value if isinstance(bid, Const) else None))
    return out


def _may_share_a_barrier(a, b) -> bool:
    return any(x[0] == y[0] and (x[1] is None or y[1] is None or x[1] == y[1])
               for x in _barriers(a) for y in _barriers(b))


def _body(k) -> str:
    return "\n".join(fmt_kernel(without_noop_fences(k)[0]).splitlines()[1:])


def equivalence(kernel, mutant, edit) -> str | None:
    """The rule that shows the edit changes nothing the properties observe, or None."""
    if edit.what == "swapped" and edit.stmt == edit.other:
        return "same model"
    if (kernel.name, fmt_edit(edit)) in REVIEWED:
        return "reviewed"
    if _body(kernel) == _body(mutant):
        return "same model"
    if edit.what == "swapped" and isinstance(edit.stmt, SIGNALS) and \
            isinstance(edit.other, SIGNALS) and not _may_share_a_barrier(edit.stmt, edit.other):
        return "signals commute"
    if isinstance(edit.stmt, GROUP_WAITS) and edit.what.startswith("n ") and \
            edit.stmt.n > int(edit.what.rsplit(" ", 1)[1]):
        return "stronger wait"
    if edit.what == "swapped" and _storer_own(kernel, edit):
        return "storer's own access"
    kinds = {type(edit.stmt), type(edit.other)}
    if edit.what == "swapped" and len(kinds) == 2 and MbarArriveExpectTx in kinds and \
            kinds & {TmaLoad, StAsync} and edit.stmt.bar == edit.other.bar:
        return "bytes before expect"
    if edit.what == "swapped" and kinds == {TensormapWrite} and edit.stmt.desc != edit.other.desc:
        return "signals commute"
    if edit.what == "swapped" and kinds == {SmemOwn} and edit.stmt.buf == edit.other.buf:
        return "own part"
    if edit.what == "swapped" and _independent(edit.stmt, edit.other):
        return "independent assignment"
    if edit.what == "deleted" and isinstance(edit.stmt, MbarWait) and kernel.num_ctas == 1 and \
            _tail_wait(kernel.processes[edit.process].body, edit.stmt):
        return "wait before exit"
    return None


def _storer_own(kernel, edit) -> bool:
    pair = (edit.stmt, edit.other)
    for b in kernel.buffers:
        if edit.process not in b.storers or b.barrier is None:
            continue
        bars = [s for s in pair if isinstance(s, BarSync) and isinstance(s.barrier_id, Const)
                and s.barrier_id.value == b.barrier]
        own = [s for s in pair if isinstance(s, FenceProxyAsync) or
               (isinstance(s, SmemWrite) and s.buf == b.name)]
        if bars and own:
            return True
    return False


def _reads(s) -> set:
    return set().union(*(expr_vars(e) for e in stmt_exprs(s)))


def _writes(s) -> set:
    return {v for v in (getattr(s, "dest", None), getattr(s, "var", None)) if isinstance(v, str)}


def _independent(a, b) -> bool:
    """One of the two is an assignment of a local the other neither reads nor writes, and its
    value reads nothing the other writes (If, loops: not swapped as a whole here)."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Assign) and not isinstance(y, (Assign, If)) and \
                not hasattr(y, "body") and x.var not in _reads(y) | _writes(y) and \
                not (_reads(x) & _writes(y)):
            return True
    return False


def _tail_wait(body: tuple, stmt) -> bool:
    """`stmt` is a top-level statement of `body` followed only by waits and local assignments
    (possibly under an If)."""
    idx = next((i for i, s in enumerate(body) if s is stmt), None)
    if idx is None:
        return False

    def quiet(s) -> bool:
        if isinstance(s, If):
            return all(quiet(x) for x in (*s.then, *s.else_))
        return isinstance(s, (MbarWait, Assign))
    return all(quiet(s) for s in body[idx + 1:])


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
        with open(args.out, "w") as f:  # after every kernel: a run cut short keeps its rows
            f.write(_report(rows, unexplained, totals, time.perf_counter() - t_all, args))
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
