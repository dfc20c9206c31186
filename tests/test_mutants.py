"""The mutation bench's fixed sample (bench/mutants.py; `make mutate` runs every mutant of every
example and catalog kernel): every one-edit mutant of the SyncIR protocols below is reported
(a violation, or not VERIFIED naming the property) or equivalent by one of the bench's rules,
each rule stated with its reason there. An unexplained survivor is a bug of the model."""
from __future__ import annotations

import os
import sys

import pytest

from hb_gen import cluster_multicast, described_mutants, flag_stages
from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import protocols as P
from warpspin.syncir import validate

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import mutants as bench  # noqa: E402

def _mainloop_with_accumulator():
    """P.mainloop() whose consumer accumulates into registers: wgmma.fence before its loop, its
    wgmmas' accumulator in each group (each retired by the loop's wait_group 0), and a read of
    the accumulator after the loop."""
    from dataclasses import replace as r
    from warpspin.syncir.ir import For, Loc
    from warpspin.syncir.ops import (AccAccess, WgmmaAcc, WgmmaCommit, WgmmaFence, WgmmaRead,
                                     WgmmaWait)
    k = P.mainloop()

    def told(body):
        out = []
        for st in body:
            if isinstance(st, For):
                st = r(st, body=tuple(told(st.body)))
            elif isinstance(st, (WgmmaCommit, WgmmaWait)):
                st = r(st, accs=("acc",), depth=2)
            out.append(st)
            if isinstance(st, WgmmaRead):
                out.append(WgmmaAcc("acc", st.loc))
        return out
    procs = []
    for p in k.processes:
        if any(isinstance(s, For) and any(isinstance(x, WgmmaRead) for x in s.body)
               for s in p.body):
            body = [WgmmaFence(("acc",), Loc("mainloop.py", 29)), *told(p.body),
                    AccAccess("acc", 2, Loc("mainloop.py", 41))]
            p = r(p, body=tuple(body))
        procs.append(p)
    return r(k, name="mainloop_acc", processes=tuple(procs))


def _filled_operand():
    """A warp fills a tile of shared data a wgmma of another warp reads, per k-tile: the
    filler's stores, fence.proxy.async and bar.sync 1 hand it over; the MMA warp's wgmma read,
    commit and wait_group 0 and bar.sync 2 give it back for the refill."""
    from warpspin.syncir.ir import Const, For, Kernel, Loc, Process, WordRef, WordsDecl
    from warpspin.syncir.ops import (BarSync, FenceProxyAsync, SmemStore, WgmmaCommit,
                                     WgmmaReadData, WgmmaWait)
    L = lambda n: Loc("operand.py", n)  # noqa: E731
    fill = (SmemStore(WordRef("tile", Const(0)), Const(0), L(2)),
            SmemStore(WordRef("tile", Const(1)), Const(0), L(3)), FenceProxyAsync(L(4)),
            BarSync(Const(1), Const(64), L(5)), BarSync(Const(2), Const(64), L(6)))
    mma = (BarSync(Const(1), Const(64), L(5)), WgmmaReadData("tile", L(8)),
           WgmmaCommit(depth=1, loc=L(9), datas=("tile",)),
           WgmmaWait(0, depth=1, loc=L(10), datas=("tile",)), BarSync(Const(2), Const(64), L(6)))
    return Kernel("filled_operand", (Process("fill", (For("k", 0, 2, fill, loc=L(1)),), warps=(0, 1)),
                                     Process("mma", (For("k", 0, 2, mma, loc=L(7)),), warps=(1, 2))),
                  (), words=(WordsDecl("tile", 2, L(0), "sA", data=True),))


KERNELS = {"epilogue": lambda: P.epilogue(), "mainloop": lambda: P.mainloop(),
           "filled_operand": _filled_operand,
           "mainloop_accumulator": _mainloop_with_accumulator,
           "exchange": lambda: P.exchange(rounds=2),
           "cluster_multicast": lambda: cluster_multicast(stages=1, trips=2),
           "aliased_buffer": lambda: P.aliased_buffer(), "cp_async_loop": lambda: P.cp_async_loop(),
           "kgrouped": lambda: P.kgrouped()}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.exhaustive)
                                  if n == "cluster_multicast" else n for n in KERNELS])
def test_every_mutant_is_reported_or_equivalent(name):
    k = KERNELS[name]()
    base = verify_kernel(k, opts=CheckOptions(timeout_s=60))
    assert base.verdict == "verified", base
    ms = [(m, e) for m, e in described_mutants(k) if not validate(m)]
    assert len(ms) >= 5
    classes, excused = {}, []
    for m, e in ms:
        cls, detail = bench.classify(k, base, m, e, 60)
        classes.setdefault(cls, []).append(bench.fmt_edit(e))
        rule = bench.equivalence(k, m, e) if cls == "reported" else None
        if rule and detail not in bench.CHECKED_WHERE_THEY_HAPPEN.get(rule, ()):
            excused.append((bench.fmt_edit(e), detail, rule))  # it would excuse a real bug
    assert not excused, excused
    assert not classes.get("unexplained"), classes["unexplained"]
    assert not classes.get("undecided"), classes["undecided"]
    assert classes.get("reported")


def test_the_equivalence_rules_do_not_excuse_a_real_bug():
    """Arrives on elements that may be one barrier do not commute; a wait does not commute with
    the assignment of its parity; the rules read the edit, and these edits change what happens."""
    from warpspin.syncir.ir import Assign, Const, MBarRef, Var
    from warpspin.syncir.ops import MbarArrive, MbarWait
    one, other = MBarRef("full", Const(0)), MBarRef("full", Const(1))
    assert not bench._may_share_a_barrier(MbarArrive(one), MbarArrive(other))
    assert bench._may_share_a_barrier(MbarArrive(one), MbarArrive(MBarRef("full", Var("s"))))
    assert bench._may_share_a_barrier(MbarArrive(one), MbarArrive(one))
    w = MbarWait(MBarRef("full", Var("s")), Var("ph"))
    assert not bench._independent(w, Assign("ph", Var("ph") ^ 1))
    assert not bench._independent(w, Assign("s", Var("s") + 1))
    assert bench._independent(w, Assign("k", Var("k") + 1))
    # an If of assignments (a pipeline state's advance): independent only of a wait that reads
    # none of the locals it assigns
    from warpspin.syncir.ir import If
    advance = If(Var("k").eq(3), (Assign("q", Var("q") ^ 1),), (Assign("q", Var("q")),))
    assert bench._independent(w, advance)
    flips = If(Var("s").eq(3), (Assign("ph", Var("ph") ^ 1),), ())
    assert not bench._independent(w, flips)
    assert not bench._independent(w, If(Var("k").eq(0), (MbarArrive(one),), ()))


def test_no_rule_excuses_a_remote_arrive_or_a_warp_sync_that_matters():
    """In the fused-MoE synchronization (two clusters): the leader's remote arrive on its peer's
    `go` swapped with its wait on its own `done` is a deadlock, which `private barriers` must not
    excuse (the arrive is on the peer's barrier, not the leader's own); and the peer's read moved
    past its bar.warp.sync leaves races not checked, which `same model` must not excuse (the
    model drops the op, the lane check reads it)."""
    k = flag_stages((1, 1), data=True)
    base = verify_kernel(k, opts=CheckOptions(timeout_s=60))
    assert base.verdict == "verified", base
    want = {"`Lanes` (<unknown>:0) swapped with `mbarrier.wait done[0], parity=0`": "deadlock",
            "`v = ld.shared data[1]` (wellsync.py:73) swapped with `bar.warp.sync`":
                "not-checked"}
    seen = set()
    for m, e in described_mutants(k):
        what = bench.fmt_edit(e).split(": ", 1)[1]
        if what in want and not validate(m):
            seen.add(what)
            r = verify_kernel(m, opts=CheckOptions(timeout_s=60))
            assert r.outcome == want[what], (what, str(r))
            assert bench.equivalence(k, m, e) is None, what
    assert seen == set(want), seen