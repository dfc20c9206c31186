"""Random small SyncIR protocols for differential testing (hypothesis strategies).

They are small enough for the Python interpreter to search exhaustively, and varied enough to hit
every violation kind and every construct of SyncIR: init order, counts, parities, tx bytes, TMA
(plain, per-lane and multicast), named barriers (constant and dynamic ids), the cluster barrier,
several CTAs with remote arrives, `For` and `While` loops, `Lanes(k)`, test-waits, early exits,
launch parameters, shared words and tensormaps rewritten in global memory.

Only SyncIR that is valid under the semantics the core is moving to is generated: an instance has
at most 32 threads (every process here is one warp), `BarArrive` always names a thread count,
`Exit` is never inside `Lanes`, a TMA load is always inside `Lanes` (it is issued once per
executing thread: `Lanes(2, TmaLoad)` is two copies), and waits and test-waits only name the
executing CTA's own barriers (remote refs are used by arrives only).
"""
from __future__ import annotations

import collections

from hypothesis import assume, strategies as st

from warpspin.syncir import (Assign, BarArrive, BarSync, ClusterArrive, ClusterWait, Const, Elect,
                             Exit, For, If, Kernel, Lanes, Loc, MBarRef, MBarrierDecl, MbarArrive,
                             MbarArriveExpectTx, MbarExpectTx, MbarInit, MbarInitFence,
                             MbarTestWait, MbarWait, Param, Process, SmemLoad, SmemStore, StAsync, TmaLoad,
                             Var, While, WordRef, WordsDecl, walk_stmts)
from dataclasses import replace

from warpspin.syncir.validate import validate

from warpspin.syncir.ir import BufferDecl, CounterDecl, FlagDecl, TensormapDecl, rewrite_stmts
from warpspin.syncir.ops import (AtomInc, GlobalAdd, GlobalWait, MmaRead, Tcgen05Commit, TmemAccess, TmemLoad, TmemWaitLd, TmemAlloc, TmemDealloc, TmemRelinquish, BulkCommit, BulkWaitRead, CpAsync, CpAsyncCommit, CpAsyncWait, DsmemStore, SmemOwn, FenceProxyAsync, SmemRead, SmemWrite,
                                 TensormapAcquire, TensormapRelease, TensormapWrite, TmaStore,
                                 WgmmaCommit, WgmmaRead, WgmmaWait, WgmmaAcc, AccAccess,
                                 WgmmaFence, WgmmaReadData, DATA_DEST)

FILE = "random.py"
BARS = ("a", "b")

# op kinds of the original generator (one CTA, constant named barrier ids)
BASE_KINDS = ("arrive", "arrive1", "aexp", "expect", "tma", "wait", "wait", "test", "flip", "bar",
              "bararrive", "if", "reinit", "lanebar")
# the constructs added on top; each protocol enables a few of them (several at once would make
# most protocols too large for the interpreter or trivially broken)
EXTRA_KINDS = ("lanes", "lanetma", "dynbar", "dynbararrive", "while", "poll", "exit", "testif",
               "csync", "carrive", "cwait", "mcast", "store", "load", "stasync", "tensormap")
# drawn only where a test asks for it (protocols(extra="buffer")): staged buffers; cp.async
# groups (extra="cpasync"); DSMEM stores and arrives of each scope (extra="dsmem", two CTAs);
# tcgen05 commits (plain and multicast), TMEM alloc / dealloc / relinquish and accesses (extra="tcgen05");
# adds to and spin loops on a global flag, with two CTAs in one cluster or in two (extra="flag");
# atom.inc of a global counter other CTAs take from, its value deciding an arrive (extra="counter");
# shared data a wgmma reads, with its stores, fences and wgmma groups (extra="wdata")
CTA2_KINDS = ("remote", "remote", "mcast", "csync", "stasync")  # only with two CTAs


@st.composite
def bar_ref(draw, sizes, remote_ctas=0):
    """A barrier of the executing CTA, or with `remote_ctas` > 0 possibly one of CTA 0..n-1
    named through `MBarRef.cta` (a remote arrive)."""
    name = draw(st.sampled_from(BARS))
    if sizes[name] == 1:
        idx = Const(0)
    else:
        idx = draw(st.sampled_from([Const(0), Const(1), Var("k") % sizes[name]]))
    if remote_ctas:
        cta = draw(st.sampled_from([Const(c) for c in range(remote_ctas)] + [Var("k") % remote_ctas]))
        return MBarRef(name, idx, cta=cta)
    return MBarRef(name, idx)


@st.composite
def sync_op(draw, sizes, line, kinds, num_ctas, depth=0):
    """One statement (a sync op, or a small structure around one). `kinds`: the op kinds this
    protocol may use."""
    loc = Loc(FILE, line)
    kind = draw(st.sampled_from(kinds))
    if kind == "arrive":
        return MbarArrive(draw(bar_ref(sizes)), draw(st.sampled_from([1, 2])), loc)
    if kind == "arrive1":
        return Elect((MbarArrive(draw(bar_ref(sizes)), 1, loc),), loc)
    if kind == "aexp":
        return Elect((MbarArriveExpectTx(draw(bar_ref(sizes)), draw(st.sampled_from([16, 32])), loc),), loc)
    if kind == "expect":
        return Elect((MbarExpectTx(draw(bar_ref(sizes)), 16, loc),), loc)
    if kind == "tma":
        return Elect((TmaLoad(draw(bar_ref(sizes)), draw(st.sampled_from([16, 32])), loc),), loc)
    if kind == "wait":
        return MbarWait(draw(bar_ref(sizes)), Var("ph"), loc)
    if kind == "test":
        return MbarTestWait("ok", draw(bar_ref(sizes)), Var("ph"), loc)
    if kind == "flip":
        return Assign("ph", Var("ph") ^ 1, loc)
    if kind == "bar":
        return BarSync(Const(1), Const(draw(st.sampled_from([32, 64]))), loc)
    if kind == "bararrive":
        return BarArrive(Const(1), Const(draw(st.sampled_from([32, 64]))), loc)
    if kind == "reinit":
        return Elect((MbarInit(draw(bar_ref(sizes)), 1, loc),), loc)
    if kind == "lanebar":
        return Elect((BarArrive(Const(2), Const(32), loc),), loc)
    # ---- the constructs added to the original generator
    if kind == "lanes":
        # k > 1 lanes: each executing lane arrives (k arrivals), arms (k * bytes), or k lanes hit
        # an aligned barrier (divergent-barrier)
        n = draw(st.sampled_from([2, 16]))
        inner = draw(st.sampled_from(["arrive", "aexp", "bararrive"]))
        if inner == "arrive":
            body = MbarArrive(draw(bar_ref(sizes)), 1, loc)
        elif inner == "aexp":
            body = MbarArriveExpectTx(draw(bar_ref(sizes)), 16, loc)
        else:
            body = BarArrive(Const(2), Const(32), loc)
        return Lanes(n, (body,), loc)
    if kind == "lanetma":
        # a TMA load issued by 2 lanes: two copies (once per executing thread)
        return Lanes(2, (TmaLoad(draw(bar_ref(sizes)), 16, loc),), loc)
    if kind == "dynbar":
        return BarSync(Var("k") % 2 + 1, Const(draw(st.sampled_from([32, 64]))), loc)
    if kind == "dynbararrive":
        return BarArrive(Var("k") % 2 + 1, Const(64), loc)
    if kind == "while" and depth == 0:
        # a counted while loop around one op; max_iters 1 makes the loop bound reachable
        inner = draw(sync_op(sizes, line + 1, [x for x in kinds if x not in ("while", "poll", "exit")]
                             or ["wait"], num_ctas, depth + 1))
        trips = draw(st.sampled_from([1, 2]))
        return If(Const(1), (Assign("w", 0, loc),
                             While(Var("w").lt(trips), (inner, Assign("w", Var("w") + 1, loc)),
                                   max_iters=draw(st.sampled_from([trips, trips, 1])), loc=loc)), (), loc)
    if kind == "poll":
        # polling with test_wait until the phase completed (bounded: may hit loop-bound)
        bar = draw(bar_ref(sizes))
        return If(Const(1), (Assign("ok", 0, loc),
                             While(Var("ok").eq(0), (MbarTestWait("ok", bar, Var("ph"), loc),),
                                   max_iters=draw(st.sampled_from([1, 2, 3])), loc=loc)), (), loc)
    if kind == "exit":
        # early exit of the whole instance (never inside Lanes)
        return If((Var("k") % 2).eq(draw(st.integers(0, 1))), (Exit(loc),), (), loc)
    if kind == "testif":
        bar = draw(bar_ref(sizes))
        return If(Const(1), (MbarTestWait("ok", bar, Var("ph"), loc),
                             If(Var("ok").eq(0), (MbarWait(bar, Var("ph"), loc),), (), loc)), (), loc)
    if kind == "csync":
        return If(Const(1), (ClusterArrive(draw(st.booleans()), loc), ClusterWait(loc)), (), loc)
    if kind == "carrive":
        return ClusterArrive(draw(st.booleans()), loc)
    if kind == "cwait":
        return ClusterWait(loc)
    if kind == "mcast":
        mask = draw(st.sampled_from([Const(1), Const(3), Const(3), Const(2), Var("M")]
                                    if num_ctas == 2 else [Const(1), Const(1), Const(3)]))
        return Elect((TmaLoad(draw(bar_ref(sizes)), 16, loc, multicast=mask),), loc)
    if kind == "remote":
        which = draw(st.sampled_from(["arrive", "aexp", "copy"]))
        if which == "arrive":
            return Elect((MbarArrive(draw(bar_ref(sizes, num_ctas)), 1, loc),), loc)
        if which == "copy":  # a copy into a peer CTA's barrier (an st.async of bytes)
            return Elect((TmaLoad(draw(bar_ref(sizes, num_ctas)), 16, loc),), loc)
        return Elect((MbarArriveExpectTx(draw(bar_ref(sizes, num_ctas)), 16, loc),), loc)
    if kind == "dsmem":
        # a store into a CTA's shared memory through a mapa address, and arrives on a peer's
        # barrier that release it at cluster scope, at CTA scope or not at all
        which = draw(st.sampled_from(["store", "store", "data", "arrive"]))
        if which == "store":
            return DsmemStore(draw(st.sampled_from([Const(0), Const(1), Var("k") % 2])), loc)
        if which == "data":  # with its word: a cell of that CTA's shared data ("w")
            cta = draw(st.sampled_from([Const(0), Const(1), Var("k") % 2]))
            ref = WordRef("w", draw(st.sampled_from([Const(0), Var("k") % 2])), cta)
            return Elect((DsmemStore(cta, loc), SmemStore(ref, Const(0), loc)), loc)
        scope = draw(st.sampled_from(["cluster", "cluster", "cta", "relaxed"]))
        return Elect((MbarArrive(draw(bar_ref(sizes, num_ctas)), 1, loc, scope),), loc)
    if kind == "wdata":
        # shared data a wgmma reads (a tile the threads fill): element stores and loads of its
        # cells, proxy fences, wgmma reads of it and the groups that retire them
        cell = WordRef("d", draw(st.sampled_from([Const(0), Const(1), Var("k") % 2])))
        which = draw(st.sampled_from(["store", "store", "load", "fence", "fence", "read", "read",
                                      "commit", "wait", "sync", "fill", "fill", "mma", "mma"]))
        sync = BarSync(Const(1), None, loc)
        return {"fill": lambda: If(Const(1), (SmemStore(cell, Const(0), loc),
                                              *draw(st.sampled_from([(FenceProxyAsync(loc),), ()])),
                                              sync), (), loc),
                "mma": lambda: If(Const(1), (sync, WgmmaReadData("d", loc),
                                             WgmmaCommit(depth=2, loc=loc, datas=("d",)),
                                             WgmmaWait(draw(st.integers(0, 1)), depth=2, loc=loc,
                                                       datas=("d",))), (), loc),
                "store": lambda: SmemStore(cell, Const(0), loc),
                "load": lambda: SmemLoad(DATA_DEST, cell, loc),
                "fence": lambda: FenceProxyAsync(loc),
                "read": lambda: WgmmaReadData("d", loc),
                "commit": lambda: WgmmaCommit(depth=2, loc=loc, datas=("d",)),
                "wait": lambda: WgmmaWait(draw(st.integers(0, 1)), depth=2, loc=loc,
                                          datas=("d",)),
                "sync": lambda: BarSync(Const(1), None, loc)}[which]()
    if kind == "store":
        # a shared word written by one lane or the whole warp (race with a concurrent access)
        st_ = SmemStore(WordRef("w", draw(st.sampled_from([Const(0), Var("k") % 2]))),
                        draw(st.sampled_from([Const(1), Var("k") + 1])), loc)
        return Elect((st_,), loc) if draw(st.booleans()) else st_
    if kind == "stasync":
        # one lane st.async's one or two words into the words of the barrier's CTA
        two = draw(st.booleans())
        ref = WordRef("w", Const(0) if two else draw(st.sampled_from([Const(0), Var("k") % 2])))
        vals = (Var("k") + 1, Const(1)) if two else (draw(st.sampled_from([Const(1), Var("k")])),)
        # a cell of shared data may be wider than 4 bytes (size: the bytes it completes)
        size = draw(st.sampled_from([0, 0, 8 * len(vals)]))
        return Elect((StAsync(ref, vals, draw(bar_ref(sizes, num_ctas if num_ctas > 1 else 0)),
                              loc, size=size),), loc)
    if kind == "tensormap":
        # a load through the rewritten tensormap, a rewrite, the fences, and the bulk groups
        # that retire the loads' reads (each by the electing lane, as the DSL issues them)
        which = draw(st.sampled_from(["load", "load", "write", "release", "acquire", "commit",
                                      "wait"]))
        op = {"load": lambda: TmaLoad(draw(bar_ref(sizes)), 16, loc, desc="t"),
              "write": lambda: TensormapWrite("t", draw(st.booleans()), loc),
              "release": lambda: TensormapRelease(loc),
              "acquire": lambda: TensormapAcquire("t", loc),
              "commit": lambda: BulkCommit(("t",), 2, loc),
              "wait": lambda: BulkWaitRead(draw(st.integers(0, 1)), ("t",), 2, loc)}[which]()
        return op if which == "acquire" else Elect((op,), loc)
    if kind == "buffer":
        # a staged buffer of two stages: writes, proxy fences, TMA stores (only the first
        # process of a CTA stores: the others' stores become writes), bulk groups over its
        # stages, the hand-over barrier 1, fills into a stage (its barrier's index), wgmma reads
        # and groups, thread reads, tcgen05.mma reads and the commits that retire them
        stages = (("sb", 0), ("sb", 1))
        stage = draw(st.sampled_from([Const(0), Var("k") % 2]))
        which = draw(st.sampled_from(["write", "write", "fence", "store", "commit", "wait",
                                      "handoff", "fill", "wread", "wcommit", "wwait", "read",
                                      "mread", "mcommit", "wreg"]))
        op = {"write": lambda: SmemWrite("sb", stage, loc),
              "fence": lambda: FenceProxyAsync(loc),
              "store": lambda: TmaStore("sb", stage, loc),
              "commit": lambda: BulkCommit(depth=2, loc=loc, stages=stages),
              "wait": lambda: BulkWaitRead(draw(st.integers(0, 1)), depth=2, loc=loc,
                                           stages=stages),
              "handoff": lambda: BarSync(Const(1), None, loc),
              "fill": lambda: Elect((TmaLoad(draw(bar_ref(sizes)), 16, loc, dst="sb"),), loc),
              "wread": lambda: WgmmaRead((("sb", stage),), loc),
              "wcommit": lambda: WgmmaCommit(("sb",), 2, loc, ("acc",)),
              "wwait": lambda: WgmmaWait(draw(st.integers(0, 1)), ("sb",), 2, loc, ("acc",)),
              # a wgmma's use of the warp's registers (its accumulator), a thread's access of
              # them, and wgmma.fence
              "wreg": lambda: draw(st.sampled_from([WgmmaAcc("acc", loc), AccAccess("acc", 2, loc),
                                                    WgmmaFence(("acc",), loc)])),
              "read": lambda: SmemRead((("sb", stage),), loc),
              # a tcgen05.mma's read of the stage (cta_group::2: both CTAs' stage), retired
              # by the arrive of the warp's next tcgen05.commit (multicast with two CTAs)
              "mread": lambda: Elect((MmaRead((("sb", stage),), loc,
                                              pair=num_ctas == 2 and draw(st.booleans())),), loc),
              "mcommit": lambda: Elect((Tcgen05Commit(
                  draw(bar_ref(sizes)), loc,
                  draw(st.sampled_from([None, Const(3)])) if num_ctas == 2 else None),), loc)}[which]
        return op()
    if kind == "cpasync":
        # cp.async copies of the thread into its own part of a two-stage buffer, their groups
        # (two told apart), and reads and writes through that part
        stage = draw(st.sampled_from([Const(0), Var("k") % 2]))
        # (two told apart), and reads and writes through that part, and reads of the whole
        # stage by any thread (`shared`: a broadcast view of what every thread copied)
        which = draw(st.sampled_from(["copy", "copy", "commit", "wait", "read", "write",
                                      "shared"]))
        return {"copy": lambda: CpAsync("sc", stage, loc),
                "commit": lambda: CpAsyncCommit(("sc",), 2, loc),
                "wait": lambda: CpAsyncWait(draw(st.integers(0, 1)), ("sc",), 2, loc),
                "read": lambda: SmemOwn("sc", stage, False, 2, loc),
                "write": lambda: SmemOwn("sc", stage, True, 2, loc),
                "shared": lambda: SmemOwn("sc", stage, False, 2, loc, shared=True)}[which]()
    if kind == "tcgen05":
        # an elected lane's tcgen05.commit (its arrive lands later; multicast with two CTAs), a
        # whole warp's (32 arrives), TMEM allocation by a warp (blocks past 512 columns),
        # frees, the relinquished permit and TMEM accesses (an ld by a warp, an MMA by a lane)
        # frees, the relinquished permit and TMEM accesses (an ld by a warp, an MMA by a lane),
        # also as the data of TMEM buffer "ta" (an MMA's accumulator stage, a tcgen05.ld of
        # one and the warp's tcgen05.wait::ld)
        which = draw(st.sampled_from(["commit", "commit", "commit_warp", "alloc", "alloc",
                                      "dealloc", "relinquish", "ld", "mma", "dld", "dld",
                                      "dmma", "dmma", "wait_ld"]))
        stage = draw(st.sampled_from([Const(0), Var("k") % 2]))
        if which == "ld":
            return TmemAccess("tcgen05.ld", loc)
        if which == "mma":
            return Elect((TmemAccess("tcgen05.mma", loc),), loc)
        if which == "dld":
            return TmemLoad((("ta", stage),), loc)
        if which == "dmma":
            pair = num_ctas == 2 and draw(st.booleans())
            return Elect((TmemAccess("tcgen05.mma", loc, pair=pair, data=True),
                          MmaRead((("ta", stage),), loc, pair=pair)), loc)
        if which == "wait_ld":
            return TmemWaitLd(loc)
        if which == "commit":
            mask = draw(st.sampled_from([None, Const(3), Const(2)])) if num_ctas == 2 else None
            return Elect((Tcgen05Commit(draw(bar_ref(sizes)), loc, mask),), loc)
        if which == "commit_warp":
            return Tcgen05Commit(draw(bar_ref(sizes)), loc)
        cols = Const(draw(st.sampled_from([128, 256, 256, 512])))
        return {"alloc": lambda: TmemAlloc(cols, loc), "dealloc": lambda: TmemDealloc(cols, loc),
                "relinquish": lambda: TmemRelinquish(loc)}[which]()
    if kind == "counter":
        # an elected lane's atom.inc of global counter c (wrapping after 2; CTAs outside the
        # model may take values between any two steps) whose value decides an arrive
        return Elect((AtomInc("t", "c", Const(2), loc),
                      If(Var("t").eq(draw(st.integers(0, 2))),
                         (MbarArrive(draw(bar_ref(sizes)), 1, loc),), (), loc)), loc)
    if kind == "flag":
        # an add (release or relaxed, at each scope) by an elected lane or a whole warp; an
        # elected lane's add whose old value decides an arrive (acq_rel or release); an elected
        # lane's spin loop until the flag reaches a value (acquire or relaxed); stores and loads
        # of global data the flag may hand over (cells of one array for the grid, one or two
        # in a row: an R11 run)
        which = draw(st.sampled_from(["add", "add", "ticket", "wait", "gdata"]))
        if which == "gdata":
            cells = draw(st.sampled_from([(0,), (1,), (0, 1), (1, 0)]))
            if draw(st.booleans()):
                return If(Const(1), tuple(SmemStore(WordRef("g", Const(i)), Const(0), loc)
                                          for i in cells), (), loc)
            return If(Const(1), tuple(SmemLoad(DATA_DEST, WordRef("g", Const(i)), loc)
                                      for i in cells), (), loc)
        if which == "ticket":
            op = GlobalAdd("f", Const(1), draw(st.sampled_from(["acq_rel", "acq_rel", "release"])),
                           "gpu", loc, dest="t")
            return Elect((op, If(Var("t").eq(draw(st.integers(0, 2))),
                                 (MbarArrive(draw(bar_ref(sizes)), 1, loc),), (), loc)), loc)
        if which == "add":
            op = GlobalAdd("f", Const(draw(st.sampled_from([1, 1, 2]))),
                           draw(st.sampled_from(["release", "release", "relaxed"])),
                           draw(st.sampled_from(["gpu", "gpu", "cluster", "cta"])), loc)
            return Elect((op,), loc) if draw(st.booleans()) else op
        return Elect((GlobalWait("f", draw(st.sampled_from([">=", ">=", "=="])),
                                 Const(draw(st.integers(1, 3))),
                                 draw(st.sampled_from(["acquire", "acquire", "relaxed"])),
                                 draw(st.sampled_from(["gpu", "gpu", "cta"])), loc),), loc)
    if kind == "load":
        # a shared word read, and the synchronization depending on the value read
        ref = WordRef("w", draw(st.sampled_from([Const(0), Var("k") % 2])))
        return If(Const(1), (SmemLoad("v", ref, loc),
                             If(Var("v").eq(1), (MbarWait(draw(bar_ref(sizes)), Var("ph"), loc),),
                                (), loc)), (), loc)
    if kind == "while":  # nested while: a plain wait instead
        return MbarWait(draw(bar_ref(sizes)), Var("ph"), loc)
    inner = draw(sync_op(sizes, line + 1, kinds, num_ctas, depth + 1))
    return If((Var("k") % 2).eq(0), (inner,), (), loc)


@st.composite
def process_body(draw, sizes, base_line, use_param, kinds, num_ctas, max_ops=3):
    ops = draw(st.lists(sync_op(sizes, base_line, kinds, num_ctas), min_size=1, max_size=max_ops))
    trips = Var("N") if use_param else Const(draw(st.integers(0, 2)))
    return (For("k", 0, trips, tuple(ops), loc=Loc(FILE, base_line - 1)),)


def uses_mask_param(procs) -> bool:
    return any(isinstance(s, TmaLoad) and s.multicast == Var("M")
               for p in procs for s in walk_stmts(p.body))


@st.composite
def protocols(draw, extra: str | None = None) -> Kernel:
    """`extra`: a construct every protocol drawn uses (among up to three others)."""
    num_ctas = 2 if extra == "dsmem" else draw(st.sampled_from([1, 2] if extra in ("tcgen05", "flag")
                                                                else [1, 1, 1, 2]))
    # two clusters of one CTA each (a grid model): nothing reaches the other CTA but the flag
    clusters = extra == "flag" and num_ctas == 2 and draw(st.booleans())
    cluster_kinds = CTA2_KINDS + ("csync", "carrive", "cwait")
    extras = draw(st.lists(st.sampled_from(tuple(x for x in EXTRA_KINDS + (CTA2_KINDS if num_ctas == 2 else ())
                                                 if not (clusters and x in cluster_kinds))),
                           max_size=3 if extra else 4, unique=True))
    if extra is not None and extra not in extras:
        extras.append(extra)
    identical = num_ctas == 2 and draw(st.booleans())  # CTA 1 a copy of CTA 0
    if num_ctas == 2 and not clusters:  # most two-CTA protocols let the CTAs interact (some ops
        # may not be drawn); identical CTAs that do not are the independent-CTAs reduction's case
        extras.append(draw(st.sampled_from(("remote", "remote", "mcast", "csync", "none")
                                           + (("none",) * 3 if identical else ()))))
    kinds = BASE_KINDS + tuple(x for x in extras if x != "none") * 3 + ((extra,) * 12 if extra else ())
    sizes = {"a": draw(st.integers(1, 2)), "b": 1}
    use_param = draw(st.booleans()) and draw(st.booleans())
    # several CTAs multiply the state space: fewer processes and ops per CTA
    nproc = draw(st.integers(2, 3)) if num_ctas == 1 else draw(st.integers(1, 2))
    max_ops = 3 if num_ctas == 1 else 2
    init_ops = []
    for name in BARS:
        for i in range(sizes[name]):
            init_ops.append(MbarInit(MBarRef(name, Const(i)), draw(st.sampled_from([1, 1, 2, 32])),
                                     Loc(FILE, 1)))
    publish = ["fence+sync", "fence+sync", "fence+sync", "sync", "none"]
    if (num_ctas == 2 and not clusters) or any(x in extras for x in ("csync", "carrive", "cwait")):
        publish += ["fence+cluster", "fence+cluster", "cluster"]
    fence = draw(st.sampled_from(publish))
    relaxed = draw(st.booleans())

    def draw_cta(cta: int) -> list[Process]:
        procs = []
        for p in range(nproc):
            body = []
            if p == 0:
                body.append(Elect(tuple(init_ops) + ((MbarInitFence(Loc(FILE, 2)),)
                                                     if fence.startswith("fence") else ()), Loc(FILE, 1)))
            if fence.endswith("sync"):
                body.append(BarSync(loc=Loc(FILE, 3)))
            elif fence.endswith("cluster"):
                body += [ClusterArrive(relaxed, Loc(FILE, 3)), ClusterWait(Loc(FILE, 4))]
            body += draw(process_body(sizes, 10 * (p + 1) + 1, use_param, kinds, num_ctas, max_ops))
            instances = draw(st.sampled_from([1, 1, 2] if num_ctas == 1 else [1, 1, 1, 2])) if p > 0 else 1
            # mostly whole warps; sometimes a half-warp instance (arrivals count 16 threads; an
            # aligned barrier there is divergent-barrier)
            threads = draw(st.sampled_from([32] * 7 + [16])) if p > 0 else 32
            procs.append(Process(f"p{p}", tuple(body), cta=cta, warps=(p * 2, p * 2 + instances),
                                 threads=threads, instances=instances,
                                 init=(("ph", draw(st.integers(0, 1))), ("ok", 0), ("v", 0))))
        return procs

    procs = draw_cta(0)
    if num_ctas == 2:
        if identical:  # the independent-CTAs reduction may apply
            procs += [Process(p.role, p.body, cta=1, warps=p.warps, threads=p.threads,
                              instances=p.instances, init=p.init) for p in procs]
        else:
            procs += draw_cta(1)
    params = []
    if use_param:
        params.append(Param("N", 0, 2))
    if uses_mask_param(procs):
        params.append(Param("M", 1, 3))
    words = (WordsDecl("w", 2),) if {"store", "load", "stasync", "dsmem"} & set(extras) else ()
    if "wdata" in extras:
        words += (WordsDecl("d", 2, data=True),)
    if "flag" in extras:
        words += (WordsDecl("g", 2, data=True, grid=True),)
    maps = (TensormapDecl("t"),) if "tensormap" in extras else ()
    buffers = ()
    if "buffer" in extras:
        # a second storing thread per CTA (a ping-pong epilogue) where p1 is one thread
        second = draw(st.booleans())
        storers = tuple(i for i, p in enumerate(procs) if p.role == "p0" or (
            second and p.role == "p1" and p.instances == 1))

        def as_write(st):
            return (SmemWrite(st.buf, st.stage, st.loc),) if isinstance(st, TmaStore) else (st,)
        procs = [p if i in storers else replace(p, body=rewrite_stmts(p.body, as_write))
                 for i, p in enumerate(procs)]
        buffers = (BufferDecl("sb", 2, storers, 1),)
    if "cpasync" in extras:
        buffers += (BufferDecl("sc", 2),)
    if "tcgen05" in extras:
        buffers += (BufferDecl("ta", 2, space="tmem"),)
    return valid(Kernel("random", tuple(procs), (MBarrierDecl("a", sizes["a"]),
                                                 MBarrierDecl("b", 1)),
                        params=tuple(params), num_ctas=num_ctas, words=words, tensormaps=maps,
                        buffers=buffers, flags=(FlagDecl("f"),) if "flag" in extras else (),
                        counters=(CounterDecl("c", Const(2), others=Const(draw(st.integers(0, 1)))),)
                        if "counter" in extras else (),
                        cluster_ctas=1 if clusters else 0), "protocols")


# constructs the generator must be able to produce (tests/test_differential.py checks each)
def constructs(k: Kernel) -> set[str]:
    """The constructs a kernel uses, by name."""
    out = set()
    if k.num_ctas > 1:
        out.add("several-ctas")
    if 0 < k.cluster_ctas < k.num_ctas:
        out.add("two-clusters")
    if k.params:
        out.add("params")
    for p in k.processes:
        if p.cta > 0:
            out.add("cta1-process")
        for s in walk_stmts(p.body):
            name = type(s).__name__
            if isinstance(s, ClusterArrive):
                out.add("ClusterArrive(relaxed)" if s.relaxed else "ClusterArrive")
            elif isinstance(s, TmaLoad) and s.multicast is not None:
                out.add("TmaLoad(multicast)")
            elif isinstance(s, (MbarArrive, MbarArriveExpectTx)) and s.bar.cta is not None:
                out.add("remote-arrive")
                if s.scope == "cluster":
                    out.add("remote-arrive(cluster scope)")
            elif isinstance(s, TmaLoad) and s.bar.cta is not None:
                out.add("remote-copy")
            elif isinstance(s, (BarSync, BarArrive)) and not isinstance(s.barrier_id, Const):
                out.add("dynamic-barrier-id")
            elif isinstance(s, Lanes) and s.count > 1:
                out.add(f"Lanes({s.count})")
                if any(isinstance(x, TmaLoad) for x in s.body):
                    out.add("TmaLoad-in-Lanes(k>1)")
            elif isinstance(s, While) and s.max_iters < 64:
                out.add("While(max_iters)")
            out.add(name)
    return out


REQUIRED_CONSTRUCTS = ("ClusterArrive(relaxed)", "ClusterArrive", "ClusterWait", "several-ctas",
                       "cta1-process", "TmaLoad(multicast)", "remote-arrive", "remote-copy", "While(max_iters)",
                       "dynamic-barrier-id", "Lanes(2)", "Lanes(16)", "TmaLoad-in-Lanes(k>1)",
                       "MbarTestWait", "Exit", "params", "MbarExpectTx", "MbarArriveExpectTx",
                       "BarArrive", "BarSync", "MbarInit", "MbarInitFence", "MbarWait", "If", "For",
                       "SmemStore", "SmemLoad", "StAsync", "TensormapWrite")


@st.composite
def prefix_protocols(draw, extra: str | None = None) -> Kernel:
    """A random protocol whose initializing process p0 (its barrier inits, and their fence when
    drawn, elected) is followed, in every CTA, by a process that runs exactly p0's code after
    those inits: R12's shape (prefix symmetry, docs/semantics.md)."""
    k = draw(protocols(extra=extra))
    return valid(with_prefix_copies(k, lambda: draw(st.integers(1, 2))))


def with_prefix_copies(k: Kernel, copies) -> Kernel:
    """`k` with, after each initializing process p0, a process of `copies()` instances running
    p0's code after its inits; every declaration of `k` kept."""
    procs = []
    for p in k.processes:
        procs.append(p)
        if p.role == "p0" and p.body and isinstance(p.body[0], Lanes):
            n = copies()
            procs.append(Process("p0x", p.body[1:], cta=p.cta, warps=(40, 40 + n),
                                 threads=p.threads, instances=n, init=p.init))
    return replace(k, processes=tuple(procs))


DRAWN: collections.Counter = collections.Counter()     # kernels each generator built
REJECTED: collections.Counter = collections.Counter()  # ... and rejected as invalid SyncIR


def valid(k: Kernel, generator: str = "prefix_protocols") -> Kernel:
    """`k` if validate() accepts it; else the draw is rejected (counted in REJECTED)."""
    DRAWN[generator] += 1
    if validate(k):
        REJECTED[generator] += 1
        assume(False)
    return k
