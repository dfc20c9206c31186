"""Litmus kernels for one warp's view of elect.sync and of TMA loads into its own CTA
(PTX ISA elect.sync; 9.7.9.25 cp.async.bulk.tensor; 9.7.13.15.2 tx-count; 9.7.13.4
fence.mbarrier_init)."""

import cutlass.cute as cute

from .litmus import Litmus, TmaLitmus

LATE_US = 2000  # a delay that lets the other side of a race finish first, far below the watchdog


# ---------------------------------------------------------------------------- elect.sync


class ElectOneArrives(Litmus):
    """One warp: init(1), then `with elect_one(): arrive`.  If elect.sync elects exactly one lane,
    exactly one phase completes: test_wait(parity 0) is true and test_wait(parity 1) false
    (probes [1, 0]).  Were two or more lanes elected, the extra arrivals would complete phase 1
    (and more) too.  Hardware question: does elect.sync elect exactly one lane of a converged
    warp?"""
    rules = ("warp.elect-sync", "mbarrier.arrive-count")
    expect = "verified"
    warps = 1
    nbars = 1
    probes = 2

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_warp()
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 1))


class ElectWhichLane(Litmus):
    """Which lane does elect.sync elect? Inside `elect_one`, the elected lane arrives on bar(0)
    if it is lane 0 and on bar(1) otherwise; the probes show which phase completed. PTX says
    only that the choice is deterministic for a member mask; the H200 elects lane 0, the lowest
    executing lane, and the model takes that lane when a lane predicate inside the elect branch
    decides what it does (stated as an assumption of the verdict)."""
    rules = ("warp.elect-sync",)
    expect = "verified"
    warps = 1
    nbars = 2
    probes = 2

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
            cute.arch.mbarrier_init(self.bar(1), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        with cute.arch.elect_one():
            if self.lane == 0:
                cute.arch.mbarrier_arrive(self.bar(0))
            else:
                cute.arch.mbarrier_arrive(self.bar(1))
        cute.arch.sync_warp()
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        self.observe(1, cute.arch.mbarrier_test_wait(self.bar(1), 0))


class AllLanesArrive(Litmus):
    """The same without elect_one: all 32 lanes arrive on a barrier initialized with count 1.
    Each executing thread performs the arrive (PTX 9.7.13.15.13): if the 32 arrivals count one
    after the other, 32 phases complete and the phase bit is back at 0, probes [0, 1] (n = 32).
    warpspin flags the over-arrival of the converged warp as arrival-mismatch and stops there
    (no probe values predicted; in hardware the excess spills into the next phases).  Hardware
    question: does each lane of a warp-wide arrive count (probes [0, 1]), or does the warp
    arrive once ([1, 0])?"""
    rules = ("warp.elect-sync", "mbarrier.over-arrival", "mbarrier.arrive-count")
    expect = "arrival-mismatch"
    warps = 1
    nbars = 1
    probes = 2

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_warp()
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 1))


# ---------------------------------------------------------------------------- TMA into the own CTA


class TmaCompletesTx(TmaLitmus):
    """One warp: init(1) + fence.mbarrier_init, arrive.expect_tx(128) by one lane, then one TMA
    load of 128 bytes (issued by the same warp, the copy electing the same lane) completing on
    the barrier; the warp waits for phase 0.  Completes, probe [1].  Hardware question: do the
    TMA's bytes complete the announced tx-count, and may an async copy use a barrier right after
    init + fence.mbarrier_init in the same thread (no CTA barrier)?"""
    rules = ("tma.complete-tx", "mbarrier.phase-completion", "mbarrier.init-fence-async")
    expect = "verified"
    warps = 1
    nbars = 1
    probes = 1

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
        self.tma_load(self.bar(0))
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class TmaExpectTooMany(TmaLitmus):
    """As TmaCompletesTx, but arrive.expect_tx(256) for the 128 bytes of the one load: the
    tx-count stays at 128, the phase never completes and the wait hangs (tx-mismatch).
    Hardware question: does a barrier whose announced bytes never all arrive stay open?"""
    rules = ("tma.complete-tx", "mbarrier.tx-mismatch")
    expect = "tx-mismatch"
    warps = 1
    nbars = 1
    probes = 1
    launches = 1

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 256)
        self.tma_load(self.bar(0))
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class TmaBytesBeforeExpect(TmaLitmus):
    """The TMA load (128 bytes) is issued first; LATE_US later, when its bytes have landed
    (tx-count -128, the arrival still pending), the warp samples the phase (probe 0: still open,
    0), then arrives with expect_tx(128): tx and pending reach zero together, the phase completes
    (probe 1: 1).  Hardware question: may bytes complete before their expect-tx, with the phase
    completing once the expect-tx arrives?"""
    rules = ("mbarrier.tx-before-expect", "tma.complete-tx")
    expect = "verified"
    warps = 1
    nbars = 1
    probes = 2

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        self.tma_load(self.bar(0))
        self.sleep(LATE_US)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class TmaWithoutInitFence(TmaLitmus):
    """As TmaCompletesTx without fence.mbarrier_init between the init and the TMA load: the async
    proxy may not see the init (PTX 9.7.13.4), so warpspin reports uninitialized-barrier
    (undefined behaviour).  Hardware question: none decisive (undefined; it may well complete,
    probe [1], which would not contradict the model)."""
    rules = ("mbarrier.init-fence-async",)
    expect = "uninitialized-barrier"
    warps = 1
    nbars = 1
    probes = 1

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
        self.tma_load(self.bar(0))
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ExpectTxThenArrive(TmaLitmus):
    """mbarrier.expect_tx(128) (no arrival) by one lane, then the 128-byte TMA load, then a plain
    arrive: the phase completes only when the bytes and the one arrival are both in; the warp
    waits and sees it: probe [1]."""
    rules = ("mbarrier.expect-tx", "tma.complete-tx")
    warps = 1
    nbars = 1
    probes = 1

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        with cute.arch.elect_one():
            cute.arch.mbarrier_expect_tx(self.bar(0), 128)
        self.tma_load(self.bar(0))
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ExitWithCopyInFlight(TmaLitmus):
    """The warp issues the TMA load and exits without waiting for it: the CTA's shared memory is
    released while the copy may still write it. warpspin: pending-at-exit (undefined); the
    H200 column records what the hardware did."""
    rules = ("exit.pending-copy",)
    expect = "pending-at-exit"
    warps = 1
    nbars = 1

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
        self.tma_load(self.bar(0))


class ReinitLiveBarrier(Litmus):
    """init(2), then init(1) on the same barrier without mbarrier.inval, then one arrival.
    warpspin: barrier-reinit (undefined, PTX 9.7.13.15.10 asks for inval first). The probe
    records whether the H200 took the second count (phase 0 complete after one arrival: 1)."""
    rules = ("mbarrier.reinit",)
    expect = "barrier-reinit"
    warps = 1
    nbars = 1
    probes = 1

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 2)
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_warp()
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


LITMUS = [ElectWhichLane, ExpectTxThenArrive, ExitWithCopyInFlight, ReinitLiveBarrier, ElectOneArrives, AllLanesArrive, TmaCompletesTx, TmaExpectTooMany, TmaBytesBeforeExpect,
          TmaWithoutInitFence]
