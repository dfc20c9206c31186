"""Litmus kernels for the mbarrier rules (PTX ISA 9.7.13.15)."""

import cutlass
import cutlass.cute as cute

from .litmus import Litmus


class PhaseNeedsArrivals(Litmus):
    """init(2); one arrival: the phase stays open (test_wait false), the second completes it."""
    rules = ("mbarrier.phase-completion", "mbarrier.arrive-count")
    probes = 2

    @cute.jit
    def body(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(self.bar(0), 2)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
            cute.arch.sync_warp()
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        cute.arch.sync_threads()
        if self.warp == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 0))
LITMUS = [PhaseNeedsArrivals]
