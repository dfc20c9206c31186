"""Item 6 minimized: a deadlock after d steps ties with a step violation on step d+1, and the two
breadth-first searches break the tie differently. No hidden SPIN step is involved (two plain
processes, no records).

A initializes a, fences, issues a TMA load into a (the initializing instance may issue once the
init is fenced), then arrives twice on named barrier 1 (64 threads); B bar.sync 1, 64.
* A's two arrivals both come first: they fill generation 1 (each counts A's 32 threads again,
  semantics.md "Named barriers"); B's bar.sync then opens generation 2, which only B reaches:
  deadlock after 8 steps (A: 6 steps with its exit, B: 1, the TMA completion: 1).
* B's bar.sync comes between A's arrivals: B passes and exits; A exits last while the TMA load
  is still in flight: pending-at-exit on step 9 (semantics.md "Async operations").

Interpreter (explore): the 8-step deadlock. SPIN reduced, plain and fused: pending-at-exit with
9 events. Both are right and both are shortest: the deadlock state and the state that the
violating 9th step leaves are both at depth 8. The differential test compares error depths.
"""
from warpspin.syncir import (BarArrive, BarSync, Elect, Kernel, MBarRef, MBarrierDecl, MbarInit,
                             MbarInitFence, Process, TmaLoad)

KINDS = {"deadlock", "pending-at-exit"}


def kernel() -> Kernel:
    a = MBarRef("a")
    A = (Elect((MbarInit(a, 1), MbarInitFence(), TmaLoad(a, 16))), BarArrive(1, 64),
         BarArrive(1, 64))
    B = (BarSync(1, 64),)
    return Kernel("tie_deadlock_vs_step", (Process("A", A, warps=(0, 1)),
                                           Process("B", B, warps=(1, 2))), (MBarrierDecl("a"),))
