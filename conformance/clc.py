"""Litmus kernels for cluster launch control (sm_100a). No Blackwell GPU is available: each is
traced for sm_100a and its outcomes predicted on the CPU (status "PTX only"); the rules are the
PTX ISA's (clusterlaunchcontrol.try_cancel, query_cancel), as docs/semantics.md "Cluster launch
control" states them."""
import cutlass.cute as cute

from .tcgen05 import Sm100


class _Clc(Sm100):
    @cute.jit
    def query(self, expect_tx: bool):
        """Warp 0 arms bar 0 with 16 bytes (unless told not to) and asks to cancel a cluster."""
        if self.warp == 0:
            with cute.arch.elect_one():
                if expect_tx:
                    cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 16)
                cute.arch.issue_clc_query(self.bar(0), self.buf, multicast=False)


class ClcResponseAfterWait(_Clc):
    """Warp 0 arms the barrier and issues try_cancel into the buffer; both warps wait for the
    barrier's phase and decode the response. warpspin: verified."""
    rules = ("clc.try_cancel",)

    @cute.jit
    def body(self):
        self.init()
        self.query(True)
        cute.arch.mbarrier_wait(self.bar(0), 0)
        _, _, _, valid = cute.arch.clc_response(self.buf)
        if valid != 0:
            cute.arch.sync_warp()


class ClcResponseReadEarly(_Clc):
    """Warp 1 decodes the response without waiting for the barrier: the async write may still
    be in flight (PTX ISA: query_cancel before the try_cancel completed is undefined). warpspin:
    race."""
    rules = ("clc.try_cancel",)
    expect = "race"

    @cute.jit
    def body(self):
        self.init()
        self.query(True)
        if self.warp == 1:
            _, _, _, valid = cute.arch.clc_response(self.buf)
            if valid != 0:
                cute.arch.sync_warp()
        if self.warp == 0:
            cute.arch.mbarrier_wait(self.bar(0), 0)


class ClcResponseUnarmed(_Clc):
    """Warp 0 issues try_cancel without arming the barrier: its 16 bytes complete on a barrier
    that expected none, and the phase waits for an arrival that never comes. warpspin:
    tx-mismatch (the hang at the wait, diagnosed)."""
    rules = ("clc.try_cancel",)
    expect = "tx-mismatch"

    @cute.jit
    def body(self):
        self.init()
        self.query(False)
        cute.arch.mbarrier_wait(self.bar(0), 0)


LITMUS = [ClcResponseAfterWait, ClcResponseReadEarly, ClcResponseUnarmed]
