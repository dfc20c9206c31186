"""32-bit wrap-around in the Promela model (issue 7 item 8): SPIN (every encoding, code before
the SyncIR v2 core) is wrong here.

One warp initializes b with count 32, and each of its 32 threads performs
arrive.expect_tx(b, 2^27). Per thread the expected transaction bytes exceed the tx-count range
(PTX 9.7.13.15.2: |tx-count| <= 2^20-1), so the first arrive.expect_tx is out of range.

Interpreter (unbounded integers): tx-mismatch (tx reaches 2^32). SPIN before v2: VERIFIED
(32 * 2^27 = 2^32 wraps to 0 in a Promela int, so the tx-count stays 0 and the phase completes).
Right: tx-mismatch (the interpreter; the v2 core agrees).
"""
from warpspin.syncir import (BarSync, Elect, Kernel, MBarRef, MBarrierDecl, MbarArriveExpectTx,
                             MbarInit, MbarInitFence, MbarWait, Process)

KINDS = {"tx-mismatch"}


def kernel() -> Kernel:
    b = MBarRef("b")
    P = (Elect((MbarInit(b, 32), MbarInitFence())), BarSync(), MbarArriveExpectTx(b, 1 << 27),
         MbarWait(b, 0))
    return Kernel("tx_product_wraps", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))
