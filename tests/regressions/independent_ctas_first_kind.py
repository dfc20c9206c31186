"""Independent identical CTAs (R2) report a deadlock of the whole kernel where a shorter step
violation exists: SPIN reduced (and fused) is wrong here (not a shortest counterexample).

Two identical CTAs, each: A initializes a, fences, issues a TMA load into a, arrives twice on
named barrier 1 (64 threads); B bar.sync 1, 64, then bar.arrive 3, 32 (completes barrier 3
alone). In one CTA (as in tie_deadlock_vs_step.py):
* deadlock after 8 steps (A's arrivals fill generation 1, B's bar.sync waits forever);
* pending-at-exit on step 10 (B passes between A's arrivals, exits after its bar.arrive, A exits
  last with the load in flight).
The whole kernel deadlocks only when both CTAs are stuck: 8 + 8 = 16 steps; pending-at-exit is
CTA-local: 10 steps (the other CTA idle).

Interpreter, SPIN plain: pending-at-exit, 10 events (error depth 9). SPIN reduced, fused (R2:
one CTA checked): the component's BFS finds its deadlock at depth 8 first, engine.check completes
it with the other CTA's shortest path to a terminal state: a 16-step deadlock (error depth 16).
Both kinds are real (KINDS); the reduced trail is not shortest and names another first kind.
docs/semantics.md R2 "Which kind first" admits this case (a component deadlock at depth d and a
step violation at a depth in (d, d+(n-1)t]) but R2 still claims shortest counterexamples.
Proposed fix: when the component's first error is a deadlock at depth d, search the component
once more for a step violation of depth < d + (n-1)t (pan with -E, invalid end states ignored,
-m bounded by that depth) and report it when found; otherwise the completed deadlock. That fix
is what engine.spin._other_ctas does now.
"""
from warpspin.syncir import (BarArrive, BarSync, Elect, Kernel, MBarRef, MBarrierDecl, MbarInit,
                             MbarInitFence, Process, TmaLoad)

KINDS = {"deadlock", "pending-at-exit"}


def kernel() -> Kernel:
    a = MBarRef("a")
    A = (Elect((MbarInit(a, 1), MbarInitFence(), TmaLoad(a, 16))), BarArrive(1, 64),
         BarArrive(1, 64))
    B = (BarSync(1, 64), BarArrive(3, 32))
    procs = []
    for c in range(2):
        procs += [Process("A", A, cta=c, warps=(0, 1)), Process("B", B, cta=c, warps=(1, 2))]
    return Kernel("independent_ctas_first_kind", tuple(procs), (MBarrierDecl("a"),), num_ctas=2)
