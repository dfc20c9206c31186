"""Warp-specialized producer/consumer rings as SyncIR, for tests and the bench.

One producer warp initializes `full[S]` and `empty[S]`, fences, and joins a CTA barrier with every
consumer; then, for each of `trips` k-tiles, it waits `empty[stage]`, arms `full[stage]` with the tile's
transaction bytes and issues a TMA load into it. `consumers` consumer instances of `consumer_threads`
threads each wait `full[stage]` and arrive on `empty[stage]` (once per thread). Stage and phase advance
as in CUTLASS's PipelineState: the producer starts at phase 1 (its first waits pass), consumers at 0.

Each `Bug` flag breaks the protocol in one known way; `expected_kind(bug)` is what a checker reports.
"""
from __future__ import annotations

from enum import Enum

from warpspin.syncir.ir import (BarSync, Const, For, If, Kernel, Loc, MBarRef, MBarrierDecl,
                                Assign, MbarArrive, MbarArriveExpectTx, MbarInit, MbarInitFence,
                                MbarWait, Param, Process, TmaLoad, Var)


class Bug(Enum):
    NONE = "none"
    EMPTY_COUNT = "empty-count"          # empty[] expects one consumer thread more than arrive
    SHORT_EXPECT = "short-expect"        # producer expects fewer bytes than the TMA delivers
    PRODUCER_PARITY = "producer-parity"  # producer starts waiting on empty[] at phase 0
    CONSUMER_PARITY = "consumer-parity"  # consumers start waiting on full[] at phase 1
    NO_FENCE = "no-fence"                # no fence.mbarrier_init after the inits
    NO_SYNC = "no-sync"                  # consumers do not wait for the init (no CTA barrier)
    CONSUMER_TRIPS = "consumer-trips"    # consumers run one trip more than the producer
    PRODUCER_TRIPS = "producer-trips"    # producer runs one trip more than the consumers
    NO_EMPTY_WAIT = "no-empty-wait"      # producer never waits for empty[]


def expected_kind(bug: Bug) -> str | None:
    """The violation kind the lowering reports first (SPIN kinds: classification of deadlocks is
    the report's job, so deadlocks come back as 'deadlock')."""
    return {
        Bug.NONE: None,
        Bug.EMPTY_COUNT: "deadlock",
        Bug.SHORT_EXPECT: "deadlock",
        Bug.PRODUCER_PARITY: "deadlock",
        Bug.CONSUMER_PARITY: None,   # depends on sizes: an over-arrival or aliasing; see tests
        Bug.NO_FENCE: "uninitialized-barrier",
        Bug.NO_SYNC: "uninitialized-barrier",
        Bug.CONSUMER_TRIPS: "deadlock",
        Bug.PRODUCER_TRIPS: "deadlock",
        Bug.NO_EMPTY_WAIT: None,     # an over-arrival or aliasing, depending on sizes
    }[bug]


def _loc(line: int) -> Loc:
    return Loc("rings.py", line)


def _advance() -> tuple:
    """stage += 1; on wrap-around stage = 0 and phase ^= 1."""
    return (Assign("stage", Var("stage") + 1, _loc(90)),
            If(Var("stage").eq(Var("S")), (Assign("stage", Const(0), _loc(91)),
                                           Assign("phase", Var("phase") ^ 1, _loc(92))), loc=_loc(91)))


def ring(stages: int = 4, trips: int | tuple[int, int] = 8, consumers: int = 2,
         consumer_threads: int = 32, producer_threads: int = 32, tile_bytes: int = 16384,
         bug: Bug = Bug.NONE) -> Kernel:
    """A ring with `stages` buffers over `trips` k-tiles (an int, or a (lo, hi) range: a launch
    parameter K taking every value in it)."""
    if isinstance(trips, tuple):
        params = (Param("K", *trips), Param("S", stages))
    else:
        params = (Param("K", trips), Param("S", stages))
    K = Var("K")
    full, empty = (lambda i: MBarRef("full", i)), (lambda i: MBarRef("empty", i))
    empty_count = consumers * consumer_threads + (1 if bug is Bug.EMPTY_COUNT else 0)
    per_thread = tile_bytes // producer_threads
    expect = per_thread - (1 if bug is Bug.SHORT_EXPECT else 0)

    setup = []
    for i in range(stages):
        setup += [MbarInit(full(i), producer_threads, _loc(10)), MbarInit(empty(i), empty_count, _loc(11))]
    if bug is not Bug.NO_FENCE:
        setup.append(MbarInitFence(_loc(12)))
    setup.append(BarSync(0, loc=_loc(13)))

    produce = ((MbarWait(empty(Var("stage")), Var("phase"), _loc(20)),) if bug is not Bug.NO_EMPTY_WAIT else ()) + (
        MbarArriveExpectTx(full(Var("stage")), expect, _loc(21)),
        TmaLoad(full(Var("stage")), tile_bytes, _loc(22)),
        *_advance())
    producer_trips = K + 1 if bug is Bug.PRODUCER_TRIPS else K
    producer = Process("producer", (
        *setup,
        Assign("stage", 0, _loc(15)),
        Assign("phase", 0 if bug is Bug.PRODUCER_PARITY else 1, _loc(16)),
        For("k", 0, producer_trips, produce, loc=_loc(19)),
    ), warps=(0, 1), threads=producer_threads)

    consume = (MbarWait(full(Var("stage")), Var("phase"), _loc(30)),
               MbarArrive(empty(Var("stage")), 1, _loc(31)),
               *_advance())
    consumer_trips = K + 1 if bug is Bug.CONSUMER_TRIPS else K
    consumer = Process("consumer", (
        *(() if bug is Bug.NO_SYNC else (BarSync(0, loc=_loc(25)),)),
        Assign("stage", 0, _loc(26)),
        Assign("phase", 1 if bug is Bug.CONSUMER_PARITY else 0, _loc(27)),
        For("k", 0, consumer_trips, consume, loc=_loc(29)),
    ), warps=(1, 1 + consumers * max(1, consumer_threads // 32)), threads=consumer_threads,
        instances=consumers)

    return Kernel(f"ring_s{stages}_k{trips}_c{consumers}x{consumer_threads}_{bug.value}",
                  (producer, consumer),
                  (MBarrierDecl("full", stages, _loc(5)), MBarrierDecl("empty", stages, _loc(6))),
                  params)
