"""Litmus kernels for the mbarrier rules (PTX ISA 9.7.13.15).

Every kernel initializes its barriers from one elected lane of warp 0, then publishes them with
fence.mbarrier_init and a CTA barrier, unless the init itself is the question."""
import cutlass.cute as cute

from .litmus import Litmus


class _Mbar(Litmus):
    @cute.jit
    def init(self, *counts):
        if self.warp == 0:
            with cute.arch.elect_one():
                for i, c in enumerate(counts):
                    cute.arch.mbarrier_init(self.bar(i), c)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()


class PhaseNeedsArrivals(_Mbar):
    """init(2); after one arrival the phase is still open (test_wait 0), after the second it has
    completed (test_wait 1): probes [0, 1]."""
    rules = ("mbarrier.phase-completion",)
    probes = 2

    @cute.jit
    def body(self):
        self.init(2)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        cute.arch.sync_threads()
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ArriveCount(_Mbar):
    """init(4); one thread arrives with count 3 (phase open: 0), then one with count 1 (the
    phase completes: 1): probes [0, 1]."""
    rules = ("mbarrier.arrive-count",)
    probes = 2

    @cute.jit
    def body(self):
        self.init(4)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0), arrive_count=3)
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        cute.arch.sync_threads()
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0), arrive_count=1)
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class PendingTxKeepsPhaseOpen(_Mbar):
    """init(1); the one arrival comes with expect_tx(128) and no bytes ever land: the arrival
    count is met but the phase stays open (test_wait 0). Nobody waits: completes, probe [0]."""
    rules = ("mbarrier.phase-completion",)
    probes = 1

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class PendingTxHangs(_Mbar):
    """init(1); arrive.expect_tx(128), no bytes land, the warp waits for phase 0: hangs."""
    rules = ("mbarrier.tx-mismatch",)
    expect = "tx-mismatch"

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
            cute.arch.mbarrier_wait(self.bar(0), 0)


class ArriveAfterCompletion(_Mbar):
    """init(1); warp 0 arrives (phase 0 completes), warp 1 waits for it; then warp 0 arrives
    again, after the phase completed: that arrival is counted in phase 1, which completes too.
    Warp 1 then sees test_wait(1) = 1 (phase 1 complete) and test_wait(0) = 0 (the phase bit is
    back at 0): probes [1, 0]. Were the late arrival dropped, they would be [0, 1]."""
    rules = ("mbarrier.arrive-after-completion",)
    probes = 2

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)
        cute.arch.sync_threads()
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 1:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 1))
            self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ParityOneBehind(_Mbar):
    """init(1); one completion; a warp waits on parity 0 twice (the second wait re-observes the
    phase it already saw) and test_waits parity 0: passes, probe [1]."""
    rules = ("mbarrier.parity-one-behind",)
    probes = 1

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ParityTwoBehindProbe(_Mbar):
    """init(1); two completions (phases 0 and 1) before warp 1 looks: its test_wait on parity 0
    (the phase it has not seen) reads the phase bit back at 0 and says 0 on hardware. warpspin
    calls that parity-aliasing."""
    rules = ("mbarrier.parity-two-behind",)
    expect = "parity-aliasing"
    probes = 1

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 1:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ParityTwoBehindWait(_Mbar):
    """As ParityTwoBehindProbe, but warp 1 waits on parity 0: the hardware blocks for good."""
    rules = ("mbarrier.parity-two-behind",)
    expect = "parity-aliasing"

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)


class TestAndTryWait(_Mbar):
    """Before any arrival, test_wait and try_wait on parity 0 both return 0 (try_wait after its
    time limit) and the kernel goes on; after warp 1's arrival (ordered by a CTA barrier) both
    return 1: probes [0, 0, 1, 1]."""
    rules = ("mbarrier.test-wait",)
    probes = 4

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
            self.observe(1, cute.arch.mbarrier_try_wait(self.bar(0), 0))
        cute.arch.sync_threads()
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 0:
            self.observe(2, cute.arch.mbarrier_test_wait(self.bar(0), 0))
            self.observe(3, cute.arch.mbarrier_try_wait(self.bar(0), 0))


class SpinTryWait(_Mbar):
    """Warp 0 spins on try_wait of phase 0 (`while not try_wait`) until warp 1's arrival, then
    tests the phase: completes, probe [1]."""
    rules = ("mbarrier.spin-test-wait",)
    probes = 1

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        if self.warp == 0:
            while not cute.arch.mbarrier_try_wait(self.bar(0), 0):
                pass
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class SpinTestWaitHangs(_Mbar):
    """Warp 0 spins on test_wait of phase 0 and nobody arrives: it spins forever (deadlock)."""
    rules = ("mbarrier.spin-test-wait",)
    expect = "deadlock"

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            done = cute.arch.mbarrier_test_wait(self.bar(0), 0)
            while not done:
                done = cute.arch.mbarrier_test_wait(self.bar(0), 0)


class TryWaitTimeLimit(_Mbar):
    """The same with try_wait's explicit time limit (`mbarrier.try_wait.parity.timelimit`,
    `experimental.primitives.nvvm_wrapper.mbarrier_try_wait_parity`, 1000 ns): 0 before warp 1's
    arrival, after its limit, and 1 after it: probes [0, 1]."""
    rules = ("mbarrier.test-wait",)
    probes = 2

    @cute.jit
    def body(self):
        from cutlass.experimental.primitives import nvvm_wrapper as nw
        self.init(1)
        if self.warp == 0:
            self.observe(0, nw.mbarrier_try_wait_parity(self.bar(0), 0, time_limit=1000))
        cute.arch.sync_threads()
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 0:
            self.observe(1, nw.mbarrier_try_wait_parity(self.bar(0), 0, time_limit=1000))


class OverArrival(_Mbar):
    """init(1); all 32 lanes of warp 0 arrive at once (no elect). warpspin: arrival-mismatch.
    The probes record what the hardware made of it: test_wait parity 0 and 1 afterwards."""
    rules = ("mbarrier.over-arrival",)
    expect = "arrival-mismatch"
    probes = 2

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 0:
            cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.sync_threads()
        if self.warp == 1:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
            self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 1))


class InitFenceOtherWarp(_Mbar):
    """Warp 0 initializes (count 1), fences and syncs the CTA; warp 1 arrives, warp 0 waits:
    completes."""
    rules = ("mbarrier.init-fence-warp",)

    @cute.jit
    def body(self):
        self.init(1)
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        if self.warp == 0:
            cute.arch.mbarrier_wait(self.bar(0), 0)


class UseBeforeInit(Litmus):
    """Warp 0 initializes (count 1) without fence or CTA barrier; warp 1 arrives 200 us later,
    warp 0 waits. warpspin: uninitialized-barrier (undefined); the hardware, with the arrival
    that late, most likely completes."""
    rules = ("mbarrier.use-before-init",)
    expect = "uninitialized-barrier"

    @cute.jit
    def body(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(self.bar(0), 1)
        if self.warp == 1:
            self.sleep(200)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        if self.warp == 0:
            cute.arch.mbarrier_wait(self.bar(0), 0)


LITMUS = [PhaseNeedsArrivals, ArriveCount, PendingTxKeepsPhaseOpen, PendingTxHangs,
          ArriveAfterCompletion, ParityOneBehind, ParityTwoBehindProbe, ParityTwoBehindWait,
          TestAndTryWait, SpinTryWait, SpinTestWaitHangs, TryWaitTimeLimit, OverArrival, InitFenceOtherWarp, UseBeforeInit]
