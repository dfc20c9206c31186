"""Reference protocols built directly in SyncIR: the warp-specialized TMA ring and a two-party
exchange, correct and broken. Tests, the bench and `make demo` share them.

Each line of a protocol gets a distinct source line in the pseudo-file `ring.py` / `exchange.py`
so tests can check that a violation points at the intended op.
"""
from __future__ import annotations

from .ir import (CounterDecl, Elect, For, If, Kernel, Lanes, Loc, MBarRef, MBarrierDecl, Process, Var, While, WordRef, WordsDecl, Assign, Param, Const, BufferDecl)
from .ops import (AtomInc, BarSync, MbarArrive, MbarArriveExpectTx, MbarInit, MbarInitFence, MbarWait, SmemLoad, SmemStore, TmaLoad)
from .ops import ClcTryCancel

RING_FILE = "ring.py"

# source lines of the ring's ops (what a test expects a violation to point at)
LINE = {
    "init_full": 10, "init_empty": 11, "fence": 12, "sync": 13,
    "producer_loop": 20, "producer_acquire": 21, "arrive_expect_tx": 22, "tma_load": 23,
    "consumer_loop": 30, "consumer_wait": 31, "consumer_release": 32, "consumer_sync": 33,
}

RING_BUGS = ("missing-release", "arrivals-too-few", "arrivals-too-many", "no-flip", "consumer-no-flip", "trip-mismatch",
             "tx-bytes", "two-behind", "named-count", "before-init", "wrap-one-late")
# what each bug must be reported as, and where (the LINE key)
RING_BUG_EXPECT = {
    "missing-release": ("deadlock", "producer_acquire"),
    "arrivals-too-few": ("arrival-mismatch", "init_empty"),
    "arrivals-too-many": ("arrival-mismatch", "consumer_release"),
    # a wait whose parity never flips passes again on the stale phase: the producer re-arms a
    # stage whose load is still in flight; a consumer reads a stage twice and falls two behind
    "no-flip": ("arrival-mismatch", "arrive_expect_tx"),
    "consumer-no-flip": ("parity-aliasing", None),
    "trip-mismatch": ("deadlock", "consumer_wait"),
    "tx-bytes": ("tx-mismatch", "arrive_expect_tx"),
    "two-behind": ("parity-aliasing", None),
    "named-count": ("arrival-mismatch", "consumer_sync"),
    "before-init": ("uninitialized-barrier", None),
    # the producer's stage counter wraps one stage late: it names empty[stages], past the array
    "wrap-one-late": ("invalid-operand", "producer_acquire"),
}


def _l(key: str) -> Loc:
    return Loc(RING_FILE, LINE[key])


def advance(stage: str, phase: str, stages: int, flip: bool = True, wrap_at: int | None = None):
    """PipelineState.advance: stage += 1; wrap to 0 (at `wrap_at`, `stages` unless a bug says
    otherwise) and flip the phase bit."""
    wrap = [Assign(stage, 0)] + ([Assign(phase, Var(phase) ^ 1)] if flip else [])
    return (Assign(stage, Var(stage) + 1),
            If(Var(stage).eq(stages if wrap_at is None else wrap_at), tuple(wrap)))


def ring(stages: int = 4, trips: int | str = 8, consumers: int = 1, consumer_threads: int = 32,
         tile_bytes: int = 16384, ctas: int = 1, bug: str | None = None,
         trips_range: tuple[int, int] | None = None) -> Kernel:
    """One producer warp (an elected lane arms full[s] with tile_bytes and issues the TMA load),
    `consumers` consumer groups of `consumer_threads` threads (a warp: 32; a warpgroup: 128),
    i.e. consumer_threads / 32 warps each, whose lane 0 releases empty[s] (PipelineTmaAsync.
    consumer_release: one arrival per consumer warp), `stages` stages, `trips` k-tiles (or the
    launch parameter K when `trips_range` is given).

    `ctas` > 1 replicates the CTA (each its own ring), as a cluster without multicast.
    `bug` injects one of RING_BUGS."""
    if bug is not None and bug not in RING_BUGS:
        raise ValueError(f"unknown ring bug {bug!r}; one of {RING_BUGS}")
    params = ()
    K = trips
    if trips_range is not None:
        params = (Param("K", *trips_range),)
        K = Var("K")
    full_count = 1
    # arrivals-too-few: the count assumes every consumer thread arrives (CooperativeGroup(Thread,
    # 32*n)) while only lane 0 of each warp does; two-behind: one consumer release suffices, so
    # the producer refills a stage before the slower consumer has waited on it.
    warps = consumers * max(1, consumer_threads // 32)
    empty_count = {"arrivals-too-few": consumers * consumer_threads,
                   "two-behind": warps - 1}.get(bug, warps)
    if bug == "two-behind" and warps < 2:
        raise ValueError("two-behind needs at least two consumer warps")
    expect = tile_bytes // 2 if bug == "tx-bytes" else tile_bytes
    init = Elect((
        For("i", 0, stages, (MbarInit(MBarRef("full", Var("i")), full_count, _l("init_full")),
                             MbarInit(MBarRef("empty", Var("i")), empty_count, _l("init_empty")))),
        MbarInitFence(_l("fence")),
    ))
    sync = () if bug == "before-init" else (BarSync(loc=_l("sync")),)
    producer = (
        init, *sync,
        For("k", 0, K, (
            MbarWait(MBarRef("empty", Var("s")), Var("ph"), _l("producer_acquire")),
            Elect((MbarArriveExpectTx(MBarRef("full", Var("s")), expect, _l("arrive_expect_tx")),
                   TmaLoad(MBarRef("full", Var("s")), tile_bytes, _l("tma_load")))),
            *advance("s", "ph", stages, flip=bug != "no-flip",
                     wrap_at=stages + 1 if bug == "wrap-one-late" else None),
        ), loc=_l("producer_loop")),
    )
    consumer_trips = K + 1 if bug == "trip-mismatch" else K
    arrive = MbarArrive(MBarRef("empty", Var("s")), 1, _l("consumer_release"))
    release = {"missing-release": (), "arrivals-too-many": (arrive,)}.get(bug, (Lanes(1, (arrive,)),))
    consumer = (
        *sync,
        For("k", 0, consumer_trips, (
            MbarWait(MBarRef("full", Var("s")), Var("ph"), _l("consumer_wait")),
            *release,
            *advance("s", "ph", stages, flip=bug != "consumer-no-flip"),
        ), loc=_l("consumer_loop")),
    )
    if bug == "named-count":  # the barrier counts one warp more than the consumers have
        consumer = consumer[:-1] + (For("k", 0, consumer_trips, (
            MbarWait(MBarRef("full", Var("s")), Var("ph"), _l("consumer_wait")),
            *release,
            BarSync(Const(1), Const(consumers * consumer_threads + 32), _l("consumer_sync")),
            *advance("s", "ph", stages),
        ), loc=_l("consumer_loop")),)
    procs = []
    for cta in range(ctas):
        procs.append(Process("producer", producer, cta=cta, warps=(0, 1), threads=32,
                             init=(("ph", 1),)))
        procs.append(Process("consumer", consumer, cta=cta, warps=(1, 1 + warps),
                             threads=min(32, consumer_threads), instances=warps,
                             init=(("ph", 0),)))
    return Kernel(f"ring_s{stages}_k{trips}_c{consumers}" + (f"_{bug}" if bug else ""),
                  tuple(procs), (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)),
                  params=params, num_ctas=ctas)


EXCHANGE_FILE = "exchange.py"


def exchange(rounds: int = 4, flip: bool = True) -> Kernel:
    """Two warps hand a buffer back and forth (the two-CTA exchange, single-CTA form): A fills and
    arrives on to_b, B waits to_b, replies on to_a, A waits to_a; each flips its phase per round."""
    L = lambda n: Loc(EXCHANGE_FILE, n)  # noqa: E731
    init = Elect((MbarInit(MBarRef("to_b"), 1, L(5)), MbarInit(MBarRef("to_a"), 1, L(6)),
                  MbarInitFence(L(7))))
    flip_stmt = (Assign("ph", Var("ph") ^ 1),) if flip else ()
    a = (init, BarSync(loc=L(8)),
         For("r", 0, rounds, (
             Elect((MbarArrive(MBarRef("to_b"), 1, L(11)),)),
             MbarWait(MBarRef("to_a"), Var("ph"), L(12)),
             *flip_stmt), loc=L(10)))
    b = (BarSync(loc=L(8)),
         For("r", 0, rounds, (
             MbarWait(MBarRef("to_b"), Var("ph"), L(21)),
             Elect((MbarArrive(MBarRef("to_a"), 1, L(22)),)),
             *flip_stmt), loc=L(20)))
    return Kernel(f"exchange_r{rounds}" + ("" if flip else "_noflip"),
                  (Process("a", a, warps=(0, 1), init=(("ph", 0),)),
                   Process("b", b, warps=(1, 2), init=(("ph", 0),))),
                  (MBarrierDecl("to_b"), MBarrierDecl("to_a")))


DYNAMIC_FILE = "dynamic.py"
DYNAMIC_BUGS = ("no-sentinel", "static-count")
# what each bug must be reported as, and where (a source line of DYNAMIC_FILE)
DYNAMIC_BUG_EXPECT = {"no-sentinel": ("deadlock", 41), "static-count": ("deadlock", 41)}


def dynamic_scheduler(tiles: tuple[int, int] = (0, 5), grid: tuple[int, int] = (1, 2),
                      stages: int = 2, bug: str | None = None) -> Kernel:
    """A dynamic persistent scheduler, the shape of quack's SM90 `PersistenceMode.DYNAMIC`: CTA 0
    of a grid of G persistent CTAs starts at tile 0; its scheduler warp takes each next tile
    from a global semaphore (lane 0: `G + atom.inc(sem, T - 1)`, the other CTAs of the grid take
    tiles from it too) and publishes every tile, the last (invalid) one included, through a
    shared word and a `stages`-deep PipelineAsync; the consumer warp loads tiles while they are
    valid (< T). `bug`: "no-sentinel" (the scheduler does not publish the final invalid tile) or
    "static-count" (the consumer runs the static schedule's trip count, ceil(T / G), as if no
    other CTA could take its tiles)."""
    if bug is not None and bug not in DYNAMIC_BUGS:
        raise ValueError(f"unknown dynamic-scheduler bug {bug!r}; one of {DYNAMIC_BUGS}")
    L = lambda n: Loc(DYNAMIC_FILE, n)  # noqa: E731
    T, G = Var("T"), Var("G")
    init = Elect((
        For("i", 0, stages, (MbarInit(MBarRef("full", Var("i")), 1, L(10)),
                             MbarInit(MBarRef("empty", Var("i")), 1, L(11)))),
        MbarInitFence(L(12)),
    ))

    def publish(line: int):
        return (MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(line)),
                Lanes(1, (SmemStore(WordRef("tile", Var("s")), Var("tile"), L(line + 1)),
                          MbarArrive(MBarRef("full", Var("s")), 1, L(line + 2)))),
                *advance("s", "ph", stages))

    fetch = (Lanes(1, (AtomInc("t", "sem", T - 1, L(30)),)),
             Assign("tile", G + Var("t"), L(30)))
    last = () if bug == "no-sentinel" else publish(35)
    scheduler = (
        init, BarSync(loc=L(13)),
        Assign("tile", 0, L(20)),
        While(Var("tile").lt(T), (*publish(21), *fetch), max_iters=8, loc=L(25)),
        *last,
    )

    def consume():
        return (MbarWait(MBarRef("full", Var("s")), Var("ph"), L(41)),
                SmemLoad("v", WordRef("tile", Var("s")), L(42)),
                Lanes(1, (MbarArrive(MBarRef("empty", Var("s")), 1, L(43)),)),
                *advance("s", "ph", stages))
    if bug == "static-count":
        loop = (For("k", 0, (T + G - 1) // G, consume(), loc=L(40)),)
    else:
        loop = (*consume(), While(Var("v").lt(T), consume(), max_iters=8, loc=L(40)))
    consumer = (BarSync(loc=L(13)), *loop)
    return Kernel("dynamic_scheduler" + (f"_{bug}" if bug else ""),
                  (Process("scheduler", scheduler, warps=(0, 1), init=(("ph", 0),)),
                   Process("consumer", consumer, warps=(1, 2), init=(("ph", 0),))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)),
                  params=(Param("T", *tiles), Param("G", *grid)),
                  words=(WordsDecl("tile", stages, label="tile"),),
                  counters=(CounterDecl("sem", T - 1, L(30), "tile_count_semaphore"),))



CLC_FILE = "clc_scheduler.py"
CLC_BUGS = ("no-expect-tx", "worker-one-tile", "retry-after-failure")
# (kind in the interpreter's and SPIN's raw search, kind reported, line reported)
CLC_BUG_EXPECT = {"no-expect-tx": ("deadlock", "tx-mismatch", 31),
                  "worker-one-tile": ("deadlock", "arrival-mismatch", 11),
                  "retry-after-failure": ("unsupported", None, 23)}


def clc_scheduler(pool: tuple[int, int] = (0, 3), stages: int = 2, bug: str | None = None) -> Kernel:
    """Work stealing with cluster launch control, the shape of quack's SM100 `PersistenceMode.CLC`:
    the CTA starts on its own tile; per tile its scheduler warp asks to cancel a cluster of the
    grid that has not started (`clusterlaunchcontrol.try_cancel`, multicast, its 16-byte
    response completing on the `full` barrier of a `stages`-deep pipeline it armed with
    expect-tx 16), and the scheduler and the worker warp read the response and go on while it
    granted a cluster. `pool`: the clusters the grid may grant (a launch range). `bug`:
    "no-expect-tx" (the scheduler does not arm `full`: its phase never completes),
    "worker-one-tile" (the worker reads one response and leaves), "retry-after-failure" (the
    scheduler asks once more after its loop, after a failed response)."""
    if bug is not None and bug not in CLC_BUGS:
        raise ValueError(f"unknown CLC-scheduler bug {bug!r}; one of {CLC_BUGS}")
    L = lambda n: Loc(CLC_FILE, n)  # noqa: E731
    full = lambda: MBarRef("full", Var("s"))  # noqa: E731
    init = Elect((
        For("i", 0, stages, (MbarInit(MBarRef("full", Var("i")), 1, L(10)),
                             MbarInit(MBarRef("empty", Var("i")), 2, L(11)))),
        MbarInitFence(L(12)),
    ))
    arm = () if bug == "no-expect-tx" else (MbarArriveExpectTx(full(), 16, L(22)),)

    def query(line: int):
        return (MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(line)),
                Lanes(1, (*arm, ClcTryCancel.make(WordRef("resp", Var("s") * 4), full(),
                                                  multicast=True, loc=L(line + 2)))))

    def read(line: int):
        return (MbarWait(full(), Var("ph"), L(line)),
                SmemLoad("ok", WordRef("resp", Var("s") * 4), L(line + 1)),
                Lanes(1, (MbarArrive(MBarRef("empty", Var("s")), 1, L(line + 2)),)),
                *advance("s", "ph", stages))

    retry = query(21) if bug == "retry-after-failure" else ()
    scheduler = (init, BarSync(loc=L(13)), Assign("ok", 1, L(20)),
                 While(Var("ok").ne(0), (*query(21), *read(31)), max_iters=8, loc=L(25)), *retry)
    worker_loop = read(41) if bug == "worker-one-tile" else \
        (Assign("ok", 1, L(40)), While(Var("ok").ne(0), read(41), max_iters=8, loc=L(40)))
    worker = (BarSync(loc=L(13)), *worker_loop)
    return Kernel("clc_scheduler" + (f"_{bug}" if bug else ""),
                  (Process("scheduler", scheduler, warps=(0, 1), init=(("ph", 0),)),
                   Process("worker", worker, warps=(1, 2), init=(("ph", 0),))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)),
                  params=(Param("pool", *pool),),
                  words=(WordsDecl("resp", 4 * stages, label="clc_response"),),
                  counters=(CounterDecl("clc", Var("pool"), L(23), "the clusters the grid may "
                                        "grant", others=Const(0)),))


PREFIX_FILE = "prefix_ring.py"
PREFIX_BUGS = ("no-fence", "consumer-trips", "early-wait")
PREFIX_BUG_EXPECT = {"no-fence": "uninitialized-barrier", "consumer-trips": "deadlock",
                     "early-wait": "uninitialized-barrier"}


def prefix_ring(consumers: int = 3, stages: int = 2, trips: int = 3, fence_in_prefix: bool = False,
                bug: str | None = None) -> Kernel:
    """The TMA ring with its barriers initialized by the first consumer warp, as quack's GEMMs
    do: that warp runs the inits (unrolled, elected), then exactly the code of the other consumer
    warps (R12, prefix symmetry). Every warp fences the inits and syncs; with `fence_in_prefix`
    only the initializing warp fences. `bug`: "no-fence" (no warp fences: the others use
    barriers whose init is not published), "consumer-trips" (the consumers wait for one k-tile
    more than the producer loads), "early-wait" (the consumers wait on a barrier before the CTA
    barrier that publishes the inits: the initializing warp may, the others may not)."""
    if bug is not None and bug not in PREFIX_BUGS:
        raise ValueError(f"unknown prefix-ring bug {bug!r}; one of {PREFIX_BUGS}")
    L = lambda n: Loc(PREFIX_FILE, n)  # noqa: E731
    inits = Elect(tuple(x for i in range(stages) for x in (
        MbarInit(MBarRef("full", Const(i)), 1, L(10)),
        MbarInit(MBarRef("empty", Const(i)), consumers, L(11)))), L(9))
    fence = () if bug == "no-fence" else (MbarInitFence(L(12)),)
    prefix = (inits, *fence) if fence_in_prefix else (inits,)
    shared_fence = () if fence_in_prefix else fence
    sync = (BarSync(loc=L(13)),)
    early = (MbarWait(MBarRef("full", Const(0)), Const(0), L(14)),) if bug == "early-wait" else ()
    consumer_trips = trips + 1 if bug == "consumer-trips" else trips
    loop = For("k", 0, consumer_trips, (
        MbarWait(MBarRef("full", Var("s")), Var("ph"), L(31)),
        Lanes(1, (MbarArrive(MBarRef("empty", Var("s")), 1, L(32)),)),
        *advance("s", "ph", stages)), loc=L(30))
    common = (*shared_fence, *early, *sync, loop)
    producer = (*shared_fence, *sync, For("k", 0, trips, (
        MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(21)),
        Elect((MbarArriveExpectTx(MBarRef("full", Var("s")), 1024, L(22)),
               TmaLoad(MBarRef("full", Var("s")), 1024, L(23)))),
        *advance("s", "ph", stages)), loc=L(20)))
    first = (*prefix, *common)
    others = common
    return Kernel("prefix_ring" + (f"_{bug}" if bug else ""),
                  (Process("producer", producer, warps=(0, 1), init=(("ph", 0),)),
                   Process("consumer0", first, warps=(1, 2), init=(("ph", 0),)),
                   Process("consumers", others, warps=(2, 1 + consumers),
                           instances=consumers - 1, init=(("ph", 0),))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)))


KGROUPED_FILE = "kgrouped.py"
KGROUPED_BUGS = ("no-drain", "drain-one-behind", "no-commit", "no-release", "no-acquire")
# what each bug must be reported as, and at which line of kgrouped.py
KGROUPED_BUG_EXPECT = {
    "no-drain": ("tensormap-race", 52), "drain-one-behind": ("tensormap-race", 52),
    "no-commit": ("tensormap-race", 52), "no-release": ("tensormap-race", 23),
    "no-acquire": ("tensormap-race", 23),
}


def kgrouped(groups: int = 2, ktiles: int = 2, stages: int = 2, consumers: int = 1,
             bug: str | None = None) -> Kernel:
    """The shape of DeepGEMM's k-grouped GEMM (../shared/seeds, PR #343): a producer warp loads
    `ktiles` k-tiles of each of `groups` groups through one tensormap in global memory, which it
    rewrites in place when the group changes; consumer warps wait for each tile and release its
    stage. Before a rewrite the producer's electing lane commits its loads to a bulk async-group
    and waits for their tensormap reads (`cp.async.bulk.wait_group.read 0`); after it, it releases
    the write to the tensormap proxy and acquires it before the next load. `bug`: "no-drain"
    (rewrite without the wait, the race of the PR), "drain-one-behind" (`wait_group.read 1`: the
    newest group may still read), "no-commit" (the wait without a commit: the loads are in no
    group), "no-release", "no-acquire"."""
    from .ops import BulkCommit, BulkWaitRead, TensormapAcquire, TensormapRelease, TensormapWrite
    from .ir import TensormapDecl
    if bug is not None and bug not in KGROUPED_BUGS:
        raise ValueError(f"unknown k-grouped bug {bug!r}; one of {KGROUPED_BUGS}")
    L = lambda n: Loc(KGROUPED_FILE, n)  # noqa: E731
    depth = 2 if bug == "drain-one-behind" else 1
    maps = ("tmA",)
    init = Elect((*(x for i in range(stages) for x in (
        MbarInit(MBarRef("full", Const(i)), 1, L(10)),
        MbarInit(MBarRef("empty", Const(i)), consumers, L(11)))),
        MbarInitFence(L(12))), L(9))
    drain = () if bug == "no-drain" else (
        *(() if bug == "no-commit" else (BulkCommit(maps, depth, L(50)),)),
        BulkWaitRead(1 if bug == "drain-one-behind" else 0, maps, depth, L(51)))
    release = () if bug == "no-release" else (TensormapRelease(L(53)),)
    rewrite = Lanes(1, (*drain, TensormapWrite("tmA", loc=L(52)), *release), L(49))
    acquire = () if bug == "no-acquire" else (TensormapAcquire("tmA", L(54)),)
    producer = (
        init, BarSync(loc=L(13)),
        For("g", 0, groups, (
            rewrite, *acquire,
            For("k", 0, ktiles, (
                MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(21)),
                Elect((MbarArriveExpectTx(MBarRef("full", Var("s")), 1024, L(22)),
                       TmaLoad(MBarRef("full", Var("s")), 1024, L(23), desc="tmA"))),
                *advance("s", "ph", stages)), loc=L(20)),
        ), loc=L(40)),
    )
    consumer = (BarSync(loc=L(13)), For("k", 0, groups * ktiles, (
        MbarWait(MBarRef("full", Var("s")), Var("ph"), L(31)),
        Lanes(1, (MbarArrive(MBarRef("empty", Var("s")), 1, L(32)),)),
        *advance("s", "ph", stages)), loc=L(30)))
    return Kernel("kgrouped" + (f"_{bug}" if bug else ""),
                  (Process("producer", producer, warps=(0, 1), init=(("ph", 0),)),
                   Process("consumer", consumer, warps=(1, 1 + consumers), instances=consumers,
                           init=(("ph", 0),))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)),
                  tensormaps=(TensormapDecl("tmA", L(5), "tensormap_a"),))


EPILOGUE_FILE = "epilogue.py"
EPILOGUE_BUGS = ("no-fence", "no-handoff", "no-wait", "wait-one-short", "storer-fence",
                 "no-final-wait")
# what each bug must be reported as, and at which line of epilogue.py (None: it verifies)
EPILOGUE_BUG_EXPECT = {
    "no-fence": ("proxy-race", 23), "no-handoff": ("race", None), "no-wait": ("race", 20),
    "wait-one-short": ("race", 20), "storer-fence": (None, None),
    "no-final-wait": ("pending-at-exit", None),
}


def epilogue(warps: int = 2, subtiles: int = 3, stages: int = 2, bug: str | None = None) -> Kernel:
    """The TMA-store epilogue of quack's and CUTLASS's Hopper GEMMs: `warps` epilogue warps write
    subtile i into stage i % `stages` of a staging buffer, fence it to the async proxy and meet on
    named barrier 1; warp 0 then stores the stage with TMA and commits a bulk group. Before the
    next write of a stage warp 0 waits until at most `stages` - 1 groups still read
    (`wait_group.read stages-1`) and the warps meet again; at the end it waits for all.
    `bug`: "no-fence" (no fence.proxy.async), "no-handoff" (no barrier between the writes and
    the store), "no-wait" (no wait before reusing a stage), "wait-one-short" (`wait_group.read
    stages`: the group of the stage to be reused may still read), "storer-fence" (correct: the
    writers do not fence, warp 0 fences after the barrier), "no-final-wait" (warp 0 exits with
    its last stores still reading the buffer)."""
    from .ir import BufferDecl
    from .ops import BarSync, BulkCommit, BulkWaitRead, FenceProxyAsync, SmemWrite, TmaStore
    if bug is not None and bug not in EPILOGUE_BUGS:
        raise ValueError(f"unknown epilogue bug {bug!r}; one of {EPILOGUE_BUGS}")
    L = lambda n: Loc(EPILOGUE_FILE, n)  # noqa: E731
    n = stages + 1 if bug == "wait-one-short" else stages - 1
    depth = n + 1
    srcs = tuple(("sD", s) for s in range(stages))
    threads = 32 * warps
    stage = Var("i") % stages
    fence = () if bug in ("no-fence", "storer-fence") else (FenceProxyAsync(L(21)),)
    handoff = () if bug == "no-handoff" else (BarSync(Const(1), Const(threads), L(22)),)

    def body(storer: bool):
        acquire = (BulkWaitRead(n, stages=srcs, depth=depth, loc=L(18)),) \
            if storer and bug != "no-wait" else ()
        store = (*((FenceProxyAsync(L(24)),) if bug == "storer-fence" else ()),
                 TmaStore("sD", stage, L(23)),
                 BulkCommit(stages=srcs, depth=depth, loc=L(25))) if storer else ()
        tail = (BulkWaitRead(0, stages=srcs, depth=depth, loc=L(30)),) \
            if storer and bug != "no-final-wait" else ()
        return (For("i", 0, subtiles, (
            *acquire, BarSync(Const(1), Const(threads), L(19)),
            SmemWrite("sD", stage, L(20)), *fence, *handoff, *store), loc=L(17)), *tail)
    procs = [Process("epi_store", body(True), warps=(0, 1))]
    if warps > 1:
        procs.append(Process("epi", body(False), warps=(1, warps), instances=warps - 1))
    return Kernel("epilogue" + (f"_{bug}" if bug else ""), tuple(procs), (),
                  buffers=(BufferDecl("sD", stages, (0,), 1, L(5), "sD"),))


PINGPONG_FILE = "pingpong_epilogue.py"
PINGPONG_BUGS = ("no-order", "order-before-wait", "storer-fence", "no-final-wait",
                 "unfenced-second")
# what each bug must be reported as, and at which line of pingpong_epilogue.py (None: any)
PINGPONG_BUG_EXPECT = {
    "no-order": ("race", None), "order-before-wait": ("race", 20),
    "storer-fence": ("unsupported", 23), "no-final-wait": ("pending-at-exit", None),
    "unfenced-second": ("proxy-race", 23),
}


def pingpong_epilogue(bug: str | None = None, subtiles: int = 2, stages: int = 2) -> Kernel:
    """The epilogue of quack's and CUTLASS's ping-pong Hopper GEMMs: two warp groups (here a
    storing warp and a writing warp each) take turns on one staging buffer, each running the
    TMA-store epilogue of `epilogue` with its own storing thread on the same named barrier 1.
    Group 0 runs first; after its last `wait_group.read 0` its warps arrive on named barrier 2,
    and group 1 starts after its bar.sync there. `bug`: "no-order" (no barrier 2: the groups
    overlap), "order-before-wait" (group 0 arrives on barrier 2 before its final wait, so group
    1 may write a stage that group 0's last store still reads), "storer-fence" (writers do not
    fence, each storing warp fences after the hand-over: the writes group 0's storing thread
    received reach group 1's through barrier 2 with no fence the model follows: unsupported),
    "no-final-wait" (group 1's storing warp exits with its stores reading the buffer),
    "unfenced-second" (group 1 neither fences its writes nor has its storer fence)."""
    from .ir import BufferDecl
    from .ops import BarArrive, BulkCommit, BulkWaitRead, FenceProxyAsync, SmemWrite, TmaStore
    if bug is not None and bug not in PINGPONG_BUGS:
        raise ValueError(f"unknown ping-pong epilogue bug {bug!r}; one of {PINGPONG_BUGS}")
    L = lambda n: Loc(PINGPONG_FILE, n)  # noqa: E731
    n, depth = stages - 1, stages
    srcs = tuple(("sD", s) for s in range(stages))
    stage = Var("i") % stages

    def body(group: int, storer: bool):
        writer_fence = bug != "storer-fence" and not (bug == "unfenced-second" and group == 1)
        acquire = (BulkWaitRead(n, stages=srcs, depth=depth, loc=L(18)),) if storer else ()
        store = (*((FenceProxyAsync(L(24)),) if bug == "storer-fence" else ()),
                 TmaStore("sD", stage, L(23)),
                 BulkCommit(stages=srcs, depth=depth, loc=L(25))) if storer else ()
        final = (BulkWaitRead(0, stages=srcs, depth=depth, loc=L(30)),) \
            if storer and not (bug == "no-final-wait" and group == 1) else ()
        order = () if bug == "no-order" else \
            (BarArrive(Const(2), Const(128), L(31)),) if group == 0 else \
            (BarSync(Const(2), Const(128), L(16)),)
        loop = For("i", 0, subtiles, (
            *acquire, BarSync(Const(1), Const(64), L(19)), SmemWrite("sD", stage, L(20)),
            *((FenceProxyAsync(L(21)),) if writer_fence else ()),
            BarSync(Const(1), Const(64), L(22)), *store), loc=L(17))
        if group == 0:
            tail = final + order if bug != "order-before-wait" else order + final
            return (loop, *tail)
        return (*order, loop, *final)
    procs = [Process(f"wg{g}_{'store' if st else 'epi'}", body(g, st), warps=(w, w + 1))
             for w, (g, st) in enumerate(((0, True), (0, False), (1, True), (1, False)))]
    return Kernel("pingpong_epilogue" + (f"_{bug}" if bug else ""), tuple(procs), (),
                  buffers=(BufferDecl("sD", stages, (0, 2), 1, L(5), "sD"),))


ALIASED_FILE = "aliased.py"
ALIASED_BUGS = ("no-wgmma-wait", "no-full-wait")
# what each bug must be reported as, and at which line of aliased.py
# no-full-wait: the write may also come before the fill is issued and be fenced only after it
# (a proxy-race at the fill, line 21), as well as during the fill (a race at the write)
ALIASED_BUG_EXPECT = {"no-wgmma-wait": ("race", 33), "no-full-wait": ("race|proxy-race", None)}


def aliased_buffer(bug: str | None = None) -> Kernel:
    """flash-attn-4's SM90 forward stages its output O in the bytes of sQ: a buffer of one stage
    that a TMA load fills (Q), a wgmma reads, threads then write (O) and a TMA store reads. Warp
    0 loads Q, meets the writer on named barrier 1 and stores O; warp 1 waits for Q, reads it
    with a wgmma, waits for the wgmma (`wgmma.wait_group 0`), writes O, fences and arrives.
    `bug`: "no-wgmma-wait" (O written over Q while the wgmma may still read it), "no-full-wait"
    (no wait for Q, no read: O written while the TMA load may still fill the stage)."""
    from .ir import BufferDecl
    from .ops import (BulkCommit, BulkWaitRead, FenceProxyAsync, SmemWrite, TmaStore, WgmmaCommit,
                      WgmmaRead, WgmmaWait)
    if bug is not None and bug not in ALIASED_BUGS:
        raise ValueError(f"unknown aliased-buffer bug {bug!r}; one of {ALIASED_BUGS}")
    L = lambda n: Loc(ALIASED_FILE, n)  # noqa: E731
    full = MBarRef("full", Const(0))
    srcs = (("sQ", 0),)
    loader = (Elect((MbarInit(full, 1, L(10)), MbarInitFence(L(11))), L(9)), BarSync(loc=L(12)),
              Elect((MbarArriveExpectTx(full, 1024, L(20)), TmaLoad(full, 1024, L(21), dst="sQ"))),
              BarSync(Const(1), Const(64), L(22)),
              Elect((TmaStore("sQ", Const(0), L(23)), BulkCommit(stages=srcs, loc=L(24)),
                     BulkWaitRead(0, stages=srcs, loc=L(25)))))
    read = () if bug == "no-full-wait" else (
        MbarWait(full, Const(0), L(30)), WgmmaRead((("sQ", Const(0)),), L(31)),
        WgmmaCommit(("sQ",), 1, L(32)))
    wait = () if bug in ("no-wgmma-wait", "no-full-wait") else (WgmmaWait(0, ("sQ",), 1, L(34)),)
    writer = (BarSync(loc=L(12)), *read, *wait, SmemWrite("sQ", Const(0), L(33)),
              FenceProxyAsync(L(35)), BarSync(Const(1), Const(64), L(36)))
    return Kernel("aliased" + (f"_{bug}" if bug else ""),
                  (Process("loader", loader, warps=(0, 1)), Process("mma", writer, warps=(1, 2))),
                  (MBarrierDecl("full", 1),),
                  buffers=(BufferDecl("sQ", 1, (0,), 1, L(5), "sQ"),))


MAINLOOP_FILE = "mainloop.py"
MAINLOOP_BUGS = ("release-before-wait", "read-after-release", "wait-one-behind", "no-full-wait",
                 "read-unfenced", "fence-after-release", "write-unfenced")
# what each bug must be reported as ("a|b": either, by the interleaving found first), and at
# which line of mainloop.py (a read after the release and before any fence is both a race with
# the refill, at the read, and a proxy-race, at the refill)
MAINLOOP_BUG_EXPECT = {
    "release-before-wait": ("race", 23), "read-after-release": ("race|proxy-race", None),
    "wait-one-behind": ("race", 23), "no-full-wait": ("race", None),
    "read-unfenced": ("proxy-race", 23), "fence-after-release": ("proxy-race", 23),
    "write-unfenced": ("proxy-race", 23),
}


def mainloop(stages: int = 2, ktiles: int = 4, consumers: int = 1,
             bug: str | None = None, reads: str = "wgmma") -> Kernel:
    """The mainloop of a Hopper GEMM: a producer warp fills stage k % `stages` of buffer sA with
    TMA (completing on full[s]) once the consumers released it (empty[s]); each consumer warp
    waits for full[s], reads the stage with wgmma, commits the wgmma group, waits until no group
    is pending (`wgmma.wait_group 0`), and then releases the stage. `bug`: "release-before-wait"
    (release, then wgmma.wait_group: the wgmma may still read when the producer refills the
    stage), "read-after-release" (a shared-memory read of the stage after releasing it),
    "wait-one-behind" (`wgmma.wait_group 1` before the release: the newest group may still
    read), "no-full-wait" (the consumer reads without waiting for the fill).
    `reads="generic"`: the consumers read the stage with ld.shared instead, and fence the
    reads (fence.proxy.async) before the release (`reads="write"`: they write it, st.shared); bugs "read-unfenced" (no fence: the refill, an
    async-proxy write, is not ordered after the generic read) and "fence-after-release" (the
    fence after the release orders nothing before the refill) imply it; "write-unfenced": the
    consumers write the stage (st.shared) and release it with no fence: the refill's async-proxy
    write is not ordered after theirs."""
    from .ir import BufferDecl
    from .ops import FenceProxyAsync, SmemRead, SmemWrite, WgmmaCommit, WgmmaRead, WgmmaWait
    if bug is not None and bug not in MAINLOOP_BUGS:
        raise ValueError(f"unknown mainloop bug {bug!r}; one of {MAINLOOP_BUGS}")
    if bug in ("read-unfenced", "fence-after-release"):
        reads = "generic"
    if bug == "write-unfenced":
        reads = "write"
    L = lambda n: Loc(MAINLOOP_FILE, n)  # noqa: E731
    srcs = ("sA",)
    n = 1 if bug == "wait-one-behind" else 0
    depth = n + 1
    init = Elect((*(x for i in range(stages) for x in (
        MbarInit(MBarRef("full", Const(i)), 1, L(10)),
        MbarInit(MBarRef("empty", Const(i)), consumers, L(11)))),
        MbarInitFence(L(12))), L(9))
    producer = (init, BarSync(loc=L(13)), For("k", 0, ktiles, (
        MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(21)),
        Elect((MbarArriveExpectTx(MBarRef("full", Var("s")), 1024, L(22)),
               TmaLoad(MBarRef("full", Var("s")), 1024, L(23), dst="sA"))),
        *advance("s", "ph", stages)), loc=L(20)))
    release = Lanes(1, (MbarArrive(MBarRef("empty", Var("s")), 1, L(35)),))
    wait = WgmmaWait(n, srcs, depth, L(34))
    full = () if bug == "no-full-wait" else (MbarWait(MBarRef("full", Var("s")), Var("ph"), L(31)),)
    step = (*full, WgmmaRead((("sA", Var("s")),), L(32)), WgmmaCommit(srcs, depth, L(33)),
            *((release, wait) if bug == "release-before-wait" else (wait, release)),
            *((SmemRead((("sA", Var("s")),), L(36)),) if bug == "read-after-release" else ()))
    if reads in ("generic", "write"):
        fence = () if bug in ("read-unfenced", "write-unfenced") else (FenceProxyAsync(L(37)),)
        access = SmemWrite("sA", Var("s"), L(32)) if reads == "write" else \
            SmemRead((("sA", Var("s")),), L(32))
        step = (*full, access,
                *((release, *fence) if bug == "fence-after-release" else (*fence, release)))
    consumer = (BarSync(loc=L(13)), For("k", 0, ktiles, (*step, *advance("s", "ph", stages)),
                                         loc=L(30)))
    name = "mainloop" + (f"_{bug}" if bug else "") + ("" if reads == "wgmma" else f"_{reads}")
    return Kernel(name,
                  (Process("producer", producer, warps=(0, 1), init=(("ph", 0),)),
                   Process("consumer", consumer, warps=(1, 1 + consumers), instances=consumers,
                           init=(("ph", 0),))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)),
                  buffers=(BufferDecl("sA", stages, loc=L(5), label="sA"),))


UMMA_MAINLOOP_FILE = "umma_mainloop.py"
UMMA_MAINLOOP_BUGS = ("release-by-arrive", "commit-before-mma", "no-full-wait")
# what each bug must be reported as, and at which line of umma_mainloop.py (None: either side
# of the race, the refill at 23 or the MMA's read at 32, by the interleaving found)
UMMA_MAINLOOP_BUG_EXPECT = {
    "release-by-arrive": ("race", 23), "commit-before-mma": ("race", None),
    "no-full-wait": ("race", None),
}


def umma_mainloop(stages: int = 2, ktiles: int = 4, pair: bool = False,
                  bug: str | None = None) -> Kernel:
    """The mainloop of a Blackwell GEMM (PipelineTmaUmma): a producer warp fills stage
    k % `stages` of sA with TMA (completing on full[s]) once the MMA warp released it (empty[s]);
    the MMA warp waits for full[s], an elected lane issues the tcgen05.mma reading the stage and
    commits it to empty[s] (tcgen05.commit: its arrive lands once the MMA is done). After the
    last k-tile it commits to acc_full, which an epilogue warp waits on. The producers end with
    producer_tail (a wait on each stage's last release). With `pair` (cta_group::2, a cluster
    of 2): each CTA's producer fills its own sA, and both loads complete on CTA 0's full[s]
    (the 2-SM form; CTA 0 expects both CTAs' bytes); CTA 0's MMA reads both CTAs' stage and
    its commit multicasts to both CTAs' empty[s]. `bug`: "release-by-arrive" (the MMA warp
    releases the stage with mbarrier.arrive, not a commit: the refill may land while the MMA
    reads), "commit-before-mma" (the commit precedes the MMA: it does not track it),
    "no-full-wait" (the MMA reads without waiting for the fill)."""
    from .ir import BufferDecl
    from .ops import ClusterArrive, ClusterWait, MmaRead, Tcgen05Commit
    if bug is not None and bug not in UMMA_MAINLOOP_BUGS:
        raise ValueError(f"unknown umma mainloop bug {bug!r}; one of {UMMA_MAINLOOP_BUGS}")
    L = lambda n: Loc(UMMA_MAINLOOP_FILE, n)  # noqa: E731
    ctas = 2 if pair else 1
    sync = (ClusterArrive(loc=L(13)), ClusterWait(loc=L(13))) if pair else (BarSync(loc=L(13)),)
    init = Elect((*(x for i in range(stages) for x in (
        MbarInit(MBarRef("full", Const(i)), 1, L(10)),
        MbarInit(MBarRef("empty", Const(i)), 1, L(11)))),
        MbarInit(MBarRef("acc_full"), 1, L(12)), MbarInitFence(L(12))), L(9))
    tail = For("t", 0, stages, (MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(27)),
                                *advance("s", "ph", stages)), loc=L(27))

    def producer(rank: int):
        full = MBarRef("full", Var("s"), Const(0) if rank else None)
        expect = () if rank else (MbarArriveExpectTx(MBarRef("full", Var("s")), 1024 * ctas, L(22)),)
        return (init, *sync, For("k", 0, ktiles, (
            MbarWait(MBarRef("empty", Var("s")), Var("ph") ^ 1, L(21)),
            Elect((*expect, TmaLoad(full, 1024, L(23), dst="sA"))),
            *advance("s", "ph", stages)), loc=L(20)), tail)
    mask = Const(3) if pair else None
    commit = Lanes(1, (Tcgen05Commit(MBarRef("empty", Var("s")), L(33), multicast=mask),))
    if bug == "release-by-arrive":
        commit = Lanes(1, tuple(MbarArrive(MBarRef("empty", Var("s"), Const(r) if pair else None),
                                           1, L(33)) for r in range(ctas)))
    read = Lanes(1, (MmaRead((("sA", Var("s")),), L(32), pair=pair),))
    full = () if bug == "no-full-wait" else (MbarWait(MBarRef("full", Var("s")), Var("ph"), L(31)),)
    step = (*full, *((commit, read) if bug == "commit-before-mma" else (read, commit)))
    mma = (*sync,
           For("k", 0, ktiles, (*step, *advance("s", "ph", stages)), loc=L(30)),
           Lanes(1, (Tcgen05Commit(MBarRef("acc_full"), L(35), multicast=mask),)))
    epilogue = (*sync, MbarWait(MBarRef("acc_full"), 0, L(40)))
    procs = [Process("producer", producer(0), warps=(0, 1), init=(("ph", 0),)),
             Process("mma", mma, warps=(1, 2), init=(("ph", 0),)),
             Process("epilogue", epilogue, warps=(2, 3))]
    if pair:  # the peer CTA: its producer and epilogue; a warp standing for its idle MMA warp
        procs += [Process("producer1", producer(1), warps=(0, 1), cta=1, init=(("ph", 0),)),
                  Process("mma1", sync, warps=(1, 2), cta=1),
                  Process("epilogue1", epilogue, warps=(2, 3), cta=1)]
    name = "umma_mainloop" + ("_pair" if pair else "") + (f"_{bug}" if bug else "")
    return Kernel(name, tuple(procs),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages),
                   MBarrierDecl("acc_full", 1)),
                  num_ctas=ctas, buffers=(BufferDecl("sA", stages, loc=L(5), label="sA"),))


CP_ASYNC_FILE = "cp_async.py"
CP_ASYNC_BUGS = ("no-drain", "no-drain-exit", "read-before-wait", "wait-one-short")
# what each bug must be reported as, and at which line of cp_async.py
CP_ASYNC_BUG_EXPECT = {
    "no-drain": ("race", 40), "no-drain-exit": ("pending-at-exit", None),
    "read-before-wait": ("race", 32), "wait-one-short": ("race", 32),
}


def cp_async_loop(warps: int = 2, max_tiles: int = 3, bug: str | None = None) -> Kernel:
    """An Ampere-style double-buffered loop over N tiles (N = 0..`max_tiles`, a launch
    parameter): each thread copies tile 0 into stage 0 of its partition of sX with cp.async
    (unconditionally, before the loop) and commits; iteration k waits for all its groups
    (`cp.async.wait_group 0`), reads stage k % 2, and prefetches tile k+1 if there is one. After
    the loop it drains (`wait_group 0`) and writes its result into stage 0 of its partition.
    `bug`: "no-drain" (no drain: when N = 0 the copy of tile 0 may land after the write),
    "no-drain-exit" (no drain and no write: the thread exits with the copy in flight),
    "read-before-wait" (the read before the wait), "wait-one-short" (`wait_group 1`: the newest
    group, the stage about to be read, may still be in flight)."""
    from .ir import BufferDecl
    from .ops import CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn
    if bug is not None and bug not in CP_ASYNC_BUGS:
        raise ValueError(f"unknown cp.async bug {bug!r}; one of {CP_ASYNC_BUGS}")
    L = lambda n: Loc(CP_ASYNC_FILE, n)  # noqa: E731
    n = 1 if bug == "wait-one-short" else 0
    depth = n + 1
    bufs = ("sX",)
    wait = CpAsyncWait(n, bufs, depth, L(31))
    read = SmemOwn("sX", Var("k") % 2, False, depth, L(32))
    step = (*((read, wait) if bug == "read-before-wait" else (wait, read)),
            If((Var("k") + 1).lt(Var("N")), (CpAsync("sX", (Var("k") + 1) % 2, L(33)),), loc=L(34)),
            CpAsyncCommit(bufs, depth, L(35)))
    drain = () if bug in ("no-drain", "no-drain-exit") else (CpAsyncWait(0, bufs, depth, L(39)),)
    tail = () if bug == "no-drain-exit" else (SmemOwn("sX", 0, True, depth, L(40)),)
    body = (CpAsync("sX", 0, L(20)), CpAsyncCommit(bufs, depth, L(21)),
            For("k", 0, Var("N"), step, loc=L(30)), *drain, *tail)
    return Kernel("cp_async" + (f"_{bug}" if bug else ""),
                  (Process("threads", body, warps=(0, warps), instances=warps),), (),
                  params=(Param("N", 0, max_tiles),),
                  buffers=(BufferDecl("sX", 2, loc=L(5), label="sX"),))


SHARED_VECTOR_FILE = "shared_vector.py"
SHARED_VECTOR_BUGS = ("no-wait", "no-barrier", "wait-after-barrier", "no-reuse-barrier")
# what each bug must be reported as, and at which line of shared_vector.py
SHARED_VECTOR_BUG_EXPECT = {
    "no-wait": ("race", 25), "no-barrier": ("race", 25), "wait-after-barrier": ("race", 25),
    "no-reuse-barrier": ("race", 25),
}


def shared_vector(warps: int = 2, tiles: int = 2, bug: str | None = None) -> Kernel:
    """quack's row-vector epilogue (`RowVecLoad`): per tile, each thread copies its part of a
    vector into shared memory with cp.async, commits and waits (`cp.async.wait_group 0`), the
    warps meet on named barrier 1, and every thread reads the whole vector (a broadcast view:
    `smem.own read ..., shared`); the warps meet again before the next tile's copies.
    `bug`: "no-wait" (no wait: the barrier orders the issue, not the copy), "no-barrier" (each
    thread waits for its own copies only), "wait-after-barrier" (the wait after the barrier:
    the other threads' copies may still land during the read), "no-reuse-barrier" (the next
    tile's copies start while a slower thread still reads the vector)."""
    from .ir import BufferDecl
    from .ops import CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn
    if bug is not None and bug not in SHARED_VECTOR_BUGS:
        raise ValueError(f"unknown shared-vector bug {bug!r}; one of {SHARED_VECTOR_BUGS}")
    L = lambda n: Loc(SHARED_VECTOR_FILE, n)  # noqa: E731
    bufs = ("vec",)
    threads = 32 * warps
    wait = () if bug == "no-wait" else (CpAsyncWait(0, bufs, 1, L(22)),)
    meet = () if bug == "no-barrier" else (BarSync(Const(1), Const(threads), L(23)),)
    handed = meet + wait if bug == "wait-after-barrier" else wait + meet
    reuse = () if bug == "no-reuse-barrier" else (BarSync(Const(1), Const(threads), L(26)),)
    step = (CpAsync("vec", Const(0), L(20)), CpAsyncCommit(bufs, 1, L(21)), *handed,
            SmemOwn("vec", Const(0), False, 1, L(25), shared=True), *reuse)
    return Kernel("shared_vector" + (f"_{bug}" if bug else ""),
                  (Process("epi", (For("t", 0, tiles, step, loc=L(19)),), warps=(0, warps),
                           instances=warps),), (),
                  buffers=(BufferDecl("vec", 1, loc=L(5), label="vec"),))


UMMA_FILE = "umma_acc.py"
UMMA_BUGS = ("no-dealloc", "double-dealloc", "alloc-after-relinquish", "over-alloc",
             "commit-wrong-stage", "commit-by-warp", "no-acc-release-on-empty", "commit-no-init",
             "dealloc-before-ld")
# what each bug must be reported as, and at which line of umma_acc.py (None: the exit)
UMMA_BUG_EXPECT = {
    "no-dealloc": ("tmem-lifetime", None), "double-dealloc": ("tmem-lifetime", 46),
    "alloc-after-relinquish": ("tmem-lifetime", 12), "over-alloc": ("deadlock", 12),
    "commit-wrong-stage": ("parity-aliasing", 36), "commit-by-warp": ("parity-aliasing", 36),
    "no-acc-release-on-empty": ("deadlock", None), "commit-no-init": ("uninitialized-barrier", None),
    "dealloc-before-ld": ("tmem-lifetime", 37),
}
# bugs of the accumulator's data (umma_acc with data=True: the stages are a TMEM buffer)
UMMA_DATA_BUGS = ("release-before-wait-ld", "ld-before-full-wait", "commit-before-mma",
                  "no-wait-ld", "full-by-arrive")
UMMA_DATA_BUG_EXPECT = {
    "release-before-wait-ld": ("race", 32), "ld-before-full-wait": ("race", 32),
    "commit-before-mma": ("race", 32), "no-wait-ld": ("race", 32), "full-by-arrive": ("race", 37),
}


def umma_acc(tiles: int = 3, stages: int = 2, epi_warps: int = 4, bug: str | None = None,
             data: bool = False) -> Kernel:
    """The accumulator pipeline of a Blackwell GEMM (PipelineUmmaAsync) with its tensor memory:
    the MMA warp allocates `stages` accumulators of 128 TMEM columns, and per tile waits for the
    epilogue to free the stage (acc_empty), then an elected lane commits the tile's tcgen05.mma
    to acc_full; `epi_warps` epilogue warps wait on acc_full, read the accumulator (tcgen05.ld)
    and release acc_empty (one arrival per warp). After the last tile the epilogue
    warps arrive on `done` and the MMA warp waits on it and frees the columns. Tile t is empty
    (no k-tiles) when the launch parameter E = 1 and t = 0: the epilogue still releases it.
    `bug`: one of UMMA_BUGS. `data`: the accumulator stages are a TMEM buffer the MMA writes
    (MmaRead) and the epilogue reads (tcgen05.ld, then tcgen05.wait::ld); `bug` may then also
    be one of UMMA_DATA_BUGS."""
    from .ops import (MmaRead, Tcgen05Commit, TmemAccess, TmemAlloc, TmemDealloc, TmemLoad,
                      TmemRelinquish, TmemWaitLd)
    if bug is not None and bug not in UMMA_BUGS + (UMMA_DATA_BUGS if data else ()):
        raise ValueError(f"unknown umma bug {bug!r}; one of {UMMA_BUGS}")
    L = lambda n: Loc(UMMA_FILE, n)  # noqa: E731
    cols = 128 * stages
    init = Elect((
        For("i", 0, stages, (*(() if bug == "commit-no-init" else
                               (MbarInit(MBarRef("acc_full", Var("i")), 1, L(5)),)),
                             MbarInit(MBarRef("acc_empty", Var("i")), epi_warps, L(6)))),
        MbarInit(MBarRef("done"), epi_warps, L(7)),
        MbarInitFence(L(8)),
    ))
    alloc = (TmemAlloc(cols, L(12)),)
    if bug == "over-alloc":
        alloc = (TmemAlloc(512, L(11)), TmemAlloc(cols, L(12)))
    relinquish = (TmemRelinquish(L(14)),)
    if bug == "alloc-after-relinquish":
        alloc, relinquish = relinquish, (TmemAlloc(cols, L(12)),)
    commit_stage = (Var("s") + 1) % stages if bug == "commit-wrong-stage" else Var("s")
    commit = Tcgen05Commit(MBarRef("acc_full", commit_stage), L(31))
    commit = (commit,) if bug == "commit-by-warp" else (Lanes(1, (commit,)),)
    if bug == "full-by-arrive":  # the MMA thread arrives itself: its MMAs may still run
        commit = (Lanes(1, (MbarArrive(MBarRef("acc_full", Var("s")), 1, L(31)),)),)
    issue = (TmemAccess("tcgen05.mma", L(32), data=data),
             *((MmaRead((("acc", Var("s")),), L(32)),) if data else ()))
    issue_and_commit = (Lanes(1, issue), *commit)
    if bug == "commit-before-mma":
        issue_and_commit = (*commit, Lanes(1, issue))
    mma = (
        init, *alloc, *relinquish, BarSync(loc=L(16)),
        For("t", 0, tiles, (
            MbarWait(MBarRef("acc_empty", Var("s")), Var("ph"), L(30)),
            *issue_and_commit,
            *advance("s", "ph", stages),
        ), loc=L(29)),
        *(() if bug == "dealloc-before-ld" else (MbarWait(MBarRef("done"), 0, L(45)),)),
        TmemDealloc(cols, L(46)),
        *((TmemDealloc(cols, L(46)),) if bug == "double-dealloc" else ()),
    )
    if bug == "no-dealloc":
        mma = mma[:-1]
    release = Lanes(1, (MbarArrive(MBarRef("acc_empty", Var("s")), 1, L(38)),))
    skip_empty = bug == "no-acc-release-on-empty"
    full_wait = (MbarWait(MBarRef("acc_full", Var("s")), Var("ph"), L(36)),)
    load = (TmemAccess("tcgen05.ld", L(37), data=data),
            *((TmemLoad((("acc", Var("s")),), L(37)),) if data else ()))
    wait_ld = (TmemWaitLd(L(38)),) if data and bug != "no-wait-ld" else ()
    release = If(Var("t").eq(0) & Var("E").eq(1), (), (release,), loc=L(38)) if skip_empty \
        else release
    epi_tile = (*full_wait, *load, *wait_ld, release)
    if bug == "ld-before-full-wait":
        epi_tile = (*load, *full_wait, *wait_ld, release)
    elif bug == "release-before-wait-ld":
        epi_tile = (*full_wait, *load, release, *wait_ld)
    epi_tile = (*epi_tile, *advance("s", "ph", stages))
    epilogue = (
        BarSync(loc=L(16)),
        For("t", 0, tiles, epi_tile, loc=L(35)),
        Lanes(1, (MbarArrive(MBarRef("done"), 1, L(41)),)),
    )
    return Kernel("umma_acc" + (f"_{bug}" if bug else ""),
                  (Process("mma", mma, warps=(0, 1), init=(("ph", 1),)),
                   Process("epilogue", epilogue, warps=(1, 1 + epi_warps), instances=epi_warps,
                           init=(("ph", 0),))),
                  (MBarrierDecl("acc_full", stages, label="acc.full"),
                   MBarrierDecl("acc_empty", stages, label="acc.empty"),
                   MBarrierDecl("done", 1, label="tmem_dealloc")),
                  params=(Param("E", 0, 1),),
                  buffers=(BufferDecl("acc", stages, loc=L(12), label="acc", space="tmem"),)
                  if data else ())
