"""32-bit wrap-around of a local (issue 7 item 8): SPIN (every encoding, code before the SyncIR v2
core) is wrong here.

x = 65536 * 65536 = 2^32, which is not 0, so the warp waits on b, on which nothing ever
arrives: a deadlock in SyncIR's integer semantics (unbounded, as the interpreter computes).

Interpreter: deadlock. SPIN before v2: VERIFIED (x wraps to 0 in a Promela int, the wait is
skipped; there is no trail to replay, so nothing catches it). Right: deadlock; a model that
cannot represent the value must say so (the model bound `integer-range`, the other accepted
outcome).

v2 core: the interpreter reports integer-range (x leaves the band ±2^20), SPIN (every encoding)
still finds nothing: the lowering checks the band after the assignment
(`l_x = (l_x * 65536); if :: (l_x > 1048576 || l_x < -1048576) -> integer-range`), when the
product has already wrapped to 0 in 32 bits. End to end the verdict is INCONCLUSIVE only because
pipeline._integer_reasons flags `x * 65536` statically. Proposed fix: guard the operands before a
product (|a| <= band / max(1, |b|)) or evaluate checked Lets in 64-bit embedded C.
"""
from warpspin.syncir import (Assign, BarSync, Const, Elect, If, Kernel, MBarRef, MBarrierDecl,
                             MbarInit, MbarInitFence, MbarWait, Process, Var)

KINDS = {"deadlock"}
ALTERNATIVES = ({"integer-range"},)  # a model bound instead of the deadlock: never VERIFIED


def kernel() -> Kernel:
    b = MBarRef("b")
    P = (Elect((MbarInit(b, 1), MbarInitFence())), BarSync(), Assign("x", Const(65536)),
         Assign("x", Var("x") * 65536), If(Var("x").ne(0), (MbarWait(b, 0),), ()))
    return Kernel("int_product_wraps", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))
