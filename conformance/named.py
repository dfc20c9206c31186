"""Litmus kernels for the named barriers and the CTA barrier (PTX ISA 9.7.13.1 bar, barrier) and
for how they treat exited threads (PTX ISA 9.7.19.2 exit).

A warp "exits" by not executing the rest of the body: the kernel's end is its exit.  Where the
question needs an order between two warps, one of them sleeps first (`self.sleep(200)`, about
200 us), which the model ignores (it explores every order): each kernel's hardware outcome is then
deterministic, it completes or it hangs (the runner's watchdog).
"""

import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass._mlir.dialects import nvvm

from .litmus import BUF_WORDS, Litmus

DELAY_US = 200


# ---------------------------------------------------------------------------------- named.count

class NamedCount(Litmus):
    """Two warps (the whole 64-thread CTA) bar.sync 1, 64.
    Hardware question: does a named barrier with count 64 complete once both warps arrive?
    (completes)"""
    rules = ("named.count",)
    warps = 2

    @cute.jit
    def body(self):
        cute.arch.barrier(barrier_id=1, number_of_threads=64)


class NamedCountSubset(Litmus):
    """Three warps; warps 0 and 1 bar.sync 1, 64, warp 2 exits at once without touching
    barrier 1.  Hardware question: does bar.sync 1, 64 complete with 64 of the CTA's 96 threads,
    i.e. is the count what matters, not the CTA size (and warp 2's exit irrelevant)? (completes)"""
    rules = ("named.count",)
    warps = 3

    @cute.jit
    def body(self):
        if self.warp < 2:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


class NamedCountTooHigh(Litmus):
    """Two warps bar.sync 1, 96: only 64 threads can ever arrive.
    Hardware question: does a count above the threads that arrive hang for good? (hangs)"""
    rules = ("named.count",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        cute.arch.barrier(barrier_id=1, number_of_threads=96)


class NamedCountThirdWarpAlone(Litmus):
    """Three warps all bar.sync 1, 64: the first two arrivals complete a generation, the third
    warp starts a new one that nobody else joins.  Hardware question: does the barrier complete
    per 64 threads (not wait for all three warps), leaving the last warp hung? (hangs)"""
    rules = ("named.count",)
    expect = "deadlock"
    warps = 3

    @cute.jit
    def body(self):
        cute.arch.barrier(barrier_id=1, number_of_threads=64)


# ------------------------------------------------------------------------------- named.no-count

class CtaBarrierAll(Litmus):
    """Three warps bar.sync 0 (sync_threads, no count) twice.
    Hardware question: does the CTA barrier complete when every thread of the CTA arrives, and
    can it be reused for a second generation? (completes)"""
    rules = ("named.no-count",)
    warps = 3

    @cute.jit
    def body(self):
        cute.arch.sync_threads()
        cute.arch.sync_threads()


class NamedNoCountAll(Litmus):
    """Two warps bar.sync 1 without a count (all threads of the CTA).
    Hardware question: does a named barrier other than 0 without a count also mean "every thread
    of the CTA", completing when both warps arrive? (completes)"""
    rules = ("named.no-count",)
    warps = 2

    @cute.jit
    def body(self):
        cute.arch.barrier(barrier_id=1)


class NamedNoCountWaitsForAll(Litmus):
    """Three warps bar.sync 1 without a count; warp 2 sleeps, then arrives on mbarrier 0
    (init 1) just before its bar.sync; after the bar.sync, warp 0 probes mbarrier 0.
    Hardware question: does a no-count named barrier hold warps 0 and 1 until all 96 threads of
    the CTA arrived (probe 1), rather than completing with the first 64 (probe 0)? (completes,
    probe [1])"""
    rules = ("named.no-count",)
    warps = 3
    probes = 1

    @cute.jit
    def body(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if self.warp == 2:
            self.sleep(DELAY_US)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.barrier(barrier_id=1)
        if self.warp == 0:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


# ------------------------------------------------------------------------- named.count-mismatch

class CountMismatchCtaBarrier(Litmus):
    """64-thread CTA: warp 0 bar.sync 0 (no count, sync_threads), warp 1 bar.sync 0, 64.
    Hardware question: are "all threads of the CTA" and an explicit 64 the same barrier use when
    the CTA has 64 threads (completes) or not (hangs)?  The model calls differing counts in one
    generation arrival-mismatch (PTX leaves it undefined)."""
    rules = ("named.count-mismatch",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.sync_threads()
        else:
            cute.arch.barrier(barrier_id=0, number_of_threads=64)


class CountMismatchFirst64(Litmus):
    """Two warps on barrier 1 with different counts: warp 0 bar.sync 1, 64 first; warp 1 sleeps,
    then bar.sync 1, 96.  Hardware question: which count does the barrier use, the first
    arrival's (64: completes) or the last one's (96: hangs)?  Model: arrival-mismatch."""
    rules = ("named.count-mismatch",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
        else:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=1, number_of_threads=96)


class CountMismatchFirst96(Litmus):
    """Two warps on barrier 1 with different counts: warp 0 bar.sync 1, 96 first; warp 1 sleeps,
    then bar.sync 1, 64.  Hardware question (the mirror of CountMismatchFirst64): does the
    last arrival's count 64 complete it (completes), or the first one's 96 hold it (hangs)?
    Model: arrival-mismatch."""
    rules = ("named.count-mismatch",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.barrier(barrier_id=1, number_of_threads=96)
        else:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


# -------------------------------------------------------------------------- named.warp-granular

class OneLaneArriveAligned(Litmus):
    """Warp 0: only lane 0 executes the aligned bar.arrive 1, 64; warp 1 bar.sync 1, 64.
    Hardware question: does one lane's arrival count for its whole warp (32 threads: completes)
    or for one thread (33 < 64: hangs)?  The H200 completes: the lane counts as its warp.  PTX
    calls an aligned bar by part of a warp undefined; warpspin reports divergent-barrier."""
    rules = ("named.warp-granular",)
    expect = "divergent-barrier"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            if self.lane == 0:
                cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
        else:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


class OneLaneSyncAligned(Litmus):
    """Warp 0: only the elected lane executes the aligned bar.sync 1, 64; warp 1 bar.sync 1, 64.
    Hardware question: does one lane's bar.sync count for its whole warp (completes) or for one
    thread (hangs)?  The H200 completes.  Undefined in PTX (aligned by part of a warp): warpspin
    reports divergent-barrier."""
    rules = ("named.warp-granular",)
    expect = "divergent-barrier"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.barrier(barrier_id=1, number_of_threads=64)
        else:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


class OneLaneArriveUnaligned(Litmus):
    """Warp 0: only lane 0 executes the non-aligned barrier.cta.arrive 1, 64 (`aligned=False`,
    the form PTX allows in divergent code); lanes 1..31 of warp 0 exit; warp 1 bar.sync 1, 64.
    Hardware question: does one lane's non-aligned arrive count for its whole warp (PTX 9.7.13.1:
    the instruction "causes executing thread to wait for all non-exited threads from its warp and
    marks warps' arrival at barrier": 32 + 32 = 64, completes) or for one thread (33 < 64:
    hangs)?  The H200 completes.  The model does not express the wait for the warp's other
    lanes: the extractor emits Unsupported (named op and line) for the non-aligned form by part
    of a warp, so warpspin says "unsupported"."""
    rules = ("named.warp-granular",)
    expect = "unsupported"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            if self.lane == 0:
                cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64, aligned=False)
        else:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


class OneLaneSyncUnaligned(Litmus):
    """Warp 0: only lane 0 executes the non-aligned barrier.cta.sync 1, 64 (nvvm
    barrier.cta.sync with aligned=False; cute.arch.barrier has no non-aligned form); lanes
    1..31 of warp 0 exit; warp 1 bar.sync 1, 64.  Hardware question: as OneLaneArriveUnaligned,
    for the waiting form: does the lone lane's arrival mark its warp's arrival (completes) or
    count one thread (hangs)?  The H200 completes.  Not modelled: "unsupported"."""
    rules = ("named.warp-granular",)
    expect = "unsupported"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            if self.lane == 0:
                nvvm.barrier_cta_sync(Int32(1).ir_value(), thread_count=Int32(64).ir_value(),
                                      aligned=False)
        else:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


# ---------------------------------------------------------------------------- named.arrive-sync

class ArriveThenSync(Litmus):
    """Producer/consumer: warp 0 writes buf[0..31] and bar.arrive 1, 64 (does not wait) and exits;
    warp 1 sleeps, then bar.sync 1, 64 and copies buf[0..31] to buf[32..63].
    Hardware question: does an arrive that came before the bar.sync (and whose warp has since
    exited) still count towards the generation? (completes) warpspin: verified, the data
    handed over in `buf` checked for races too (the arrive's generation orders warp 0's writes
    before warp 1's reads: PTX 9.7.13.1)."""
    rules = ("named.arrive-sync", "exit.named-count", "data.barrier")
    warps = 2

    @cute.jit
    def body(self):
        t = cute.make_tensor(self.buf, cute.make_layout(BUF_WORDS))
        if self.warp == 0:
            t[self.lane] = Int32(self.lane) + 1
            cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
        else:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
            t[32 + self.lane] = t[self.lane]


class SyncThenArrive(Litmus):
    """Producer/consumer, the other order: warp 1 bar.sync 1, 64 first and waits; warp 0 sleeps,
    writes buf[0..31], then bar.arrive 1, 64; warp 1 then copies buf[0..31] to buf[32..63].
    Hardware question: does a waiting bar.sync get released by a later bar.arrive (and the
    arriving warp not wait)? (completes) warpspin: verified, as ArriveThenSync."""
    rules = ("named.arrive-sync", "data.barrier")
    warps = 2

    @cute.jit
    def body(self):
        t = cute.make_tensor(self.buf, cute.make_layout(BUF_WORDS))
        if self.warp == 0:
            self.sleep(DELAY_US)
            t[self.lane] = Int32(self.lane) + 1
            cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
        else:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
            t[32 + self.lane] = t[self.lane]


class ArriveOnlyNeverWaits(Litmus):
    """Both warps bar.arrive 1, 64 and exit; nobody syncs.
    Hardware question: does a generation made only of bar.arrive complete (or at least not hold
    anything up), so the kernel ends? (completes)"""
    rules = ("named.arrive-sync",)
    warps = 2

    @cute.jit
    def body(self):
        cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)


class ArriveSyncRepeated(Litmus):
    """Three rounds of producer/consumer on barrier 1 (warp 0 bar.arrive 1, 64; warp 1
    bar.sync 1, 64), with warp 0 sleeping (50 us) before each arrive, so that on hardware warp 1
    is always already waiting.  Hardware question: are the generations reused in order, each
    arrive releasing one bar.sync? (completes)  The model explores every order, including warp 0
    arriving twice in a row, which completes a generation with warp 0's arrivals alone and
    leaves warp 1's last bar.sync hung (see ArriveTwiceSameWarp): it predicts both completes
    and hangs, verdict deadlock.  Hardware should show "completes", one of the predicted ends."""
    rules = ("named.arrive-sync",)
    expect = "deadlock"
    warps = 2

    @cute.jit
    def body(self):
        for _ in cutlass.range(3, unroll=1):
            if self.warp == 0:
                self.sleep(DELAY_US // 4)
                cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
            else:
                cute.arch.barrier(barrier_id=1, number_of_threads=64)


class ArriveTwiceSameWarp(Litmus):
    """Warp 0 bar.arrive 1, 64 twice in a row and exits; warp 1 sleeps (so both arrivals are
    in), then bar.sync 1, 64.  Hardware question: does the barrier count arrivals (32 + 32 from
    the same warp complete a generation, then warp 1 starts a new one alone: hangs), or does it
    track which warps arrived (completes)?  The model counts threads: in this order it hangs
    (other orders complete), verdict deadlock."""
    rules = ("named.arrive-sync", "named.count")
    expect = "deadlock"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
            cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)
        else:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


# ----------------------------------------------------------------------------- exit.cta-barrier

class CtaBarrierExitBefore(Litmus):
    """Warp 1 exits at once; warp 0 sleeps (so warp 1 has exited), then sync_threads.
    Hardware question: does bar.sync 0 complete without the exited warp? (completes)"""
    rules = ("exit.cta-barrier",)
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            self.sleep(DELAY_US)
            cute.arch.sync_threads()


class CtaBarrierExitAfter(Litmus):
    """Warp 0 sync_threads at once; warp 1 sleeps, then exits without arriving.
    Hardware question: is a bar.sync 0 already waiting released when the last missing warp
    exits? (completes)"""
    rules = ("exit.cta-barrier",)
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.sync_threads()
        else:
            self.sleep(DELAY_US)


class CtaBarrierExitRace(Litmus):
    """Warp 1 exits at once; warp 0 sync_threads at once (no forced order).
    Hardware question: completes whichever of the two comes first? (completes)"""
    rules = ("exit.cta-barrier",)
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.sync_threads()


class CtaBarrierTwoOfThree(Litmus):
    """Three warps: warp 2 sleeps and exits; warps 0 and 1 sync_threads.
    Hardware question: with several warps waiting, does the exit of the one missing warp release
    them all? (completes)"""
    rules = ("exit.cta-barrier",)
    warps = 3

    @cute.jit
    def body(self):
        if self.warp < 2:
            cute.arch.sync_threads()
        else:
            self.sleep(DELAY_US)


class NamedNoCountExitAfter(Litmus):
    """Warp 0 bar.sync 1 (named, no count) at once; warp 1 sleeps, then exits.
    Hardware question: does a named barrier without a count treat exited threads like bar.sync 0
    does (released: completes)?  The model treats any id without a count as "every live thread
    of the CTA"."""
    rules = ("exit.cta-barrier", "named.no-count")
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.barrier(barrier_id=1)
        else:
            self.sleep(DELAY_US)


# ----------------------------------------------------------------------------- exit.named-count

class NamedCountExitBefore(Litmus):
    """Warp 1 exits at once; warp 0 sleeps (so warp 1 has exited), then bar.sync 1, 64.
    Hardware question: does an explicit count ignore exited threads, so the barrier hangs?
    (hangs)"""
    rules = ("exit.named-count",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)


class NamedCountExitAfter(Litmus):
    """Warp 0 bar.sync 1, 64 at once; warp 1 sleeps, then exits without arriving.
    Hardware question: does a waiting bar.sync with a count stay blocked when the missing warp
    exits? (hangs)"""
    rules = ("exit.named-count",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
        else:
            self.sleep(DELAY_US)


class NamedCountFullCtaExit(Litmus):
    """Warp 1 exits at once; warp 0 sleeps, then bar.sync 0, 64: barrier 0 (the one
    sync_threads uses) with an explicit count equal to the whole 64-thread CTA.
    Hardware question: as NamedCountExitBefore, on barrier 0: is a count equal to the CTA size
    still an explicit count that ignores exited threads (hangs), or does it behave like
    sync_threads, which exited threads release (completes)?  Model: hangs."""
    rules = ("exit.named-count",)
    expect = "arrival-mismatch"
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=0, number_of_threads=64)


class ArriveExitThenSync(Litmus):
    """Warp 1 bar.arrive 1, 64 and exits at once; warp 0 sleeps (warp 1 has exited), then
    bar.sync 1, 64.  Hardware question: does an arrival by a warp that has since exited still
    count (it is not withdrawn), so the barrier completes? (completes)"""
    rules = ("exit.named-count", "named.arrive-sync")
    warps = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            self.sleep(DELAY_US)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
        else:
            cute.arch.barrier_arrive(barrier_id=1, number_of_threads=64)


LITMUS = [
    NamedCount, NamedCountSubset, NamedCountTooHigh, NamedCountThirdWarpAlone,
    CtaBarrierAll, NamedNoCountAll, NamedNoCountWaitsForAll,
    CountMismatchCtaBarrier, CountMismatchFirst64, CountMismatchFirst96,
    OneLaneArriveAligned, OneLaneSyncAligned, OneLaneArriveUnaligned, OneLaneSyncUnaligned,
    ArriveThenSync, SyncThenArrive, ArriveOnlyNeverWaits, ArriveSyncRepeated, ArriveTwiceSameWarp,
    CtaBarrierExitBefore, CtaBarrierExitAfter, CtaBarrierExitRace, CtaBarrierTwoOfThree,
    NamedNoCountExitAfter,
    NamedCountExitBefore, NamedCountExitAfter, NamedCountFullCtaExit, ArriveExitThenSync,
]
