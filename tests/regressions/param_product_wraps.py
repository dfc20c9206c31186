"""32-bit wrap-around of an expression over launch parameters (issue 7 item 8): SPIN is wrong
here, before and after the SyncIR v2 core.

B = 65536 is a launch parameter; the warp waits on b (nothing ever arrives on it) when B * B is
not 0. B * B = 2^32 in SyncIR's integers: a deadlock.

Interpreter (before and after v2): deadlock. SPIN (every encoding, before and after v2):
nothing, the search completes (B * B wraps to 0 in a Promela int and the wait is skipped; an
expression that is not assigned to a local has no run-time range check). End to end: VERIFIED
before v2 (a false proof); INCONCLUSIVE after v2, only because pipeline._integer_reasons flags
`B * B` statically. Right: deadlock, or the model bound integer-range where the model cannot
hold the value. Proposed fix: the lowering evaluates every expression whose interval
(lower/analysis.py) leaves the 32-bit range either in 64-bit embedded C or behind a run-time
guard that reports integer-range, and the interpreter reports integer-range for the same
expressions, so both backends agree on the bound event.
"""
from warpspin.syncir import (BarSync, Elect, If, Kernel, MBarRef, MBarrierDecl, MbarInit,
                             MbarInitFence, MbarWait, Param, Process, Var)

KINDS = {"deadlock"}
ALTERNATIVES = ({"integer-range"},)  # a model bound instead of the deadlock: never VERIFIED


def kernel() -> Kernel:
    b = MBarRef("b")
    P = (Elect((MbarInit(b, 1), MbarInitFence())), BarSync(),
         If((Var("B") * Var("B")).ne(0), (MbarWait(b, 0),), ()))
    return Kernel("param_product_wraps", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),),
                  params=(Param("B", 65536),))
