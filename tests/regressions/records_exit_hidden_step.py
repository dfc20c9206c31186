"""The symmetric-record encoding (R1) spends one hidden SPIN step after its last record exits,
so its counterexample can be one step longer than the shortest one: SPIN is wrong here.

The protocol of tie_deadlock_vs_step.py with B one step longer on its exit path (a bar.arrive
3, 32 that completes barrier 3 alone) and a process R of two instances that only exit (R has no
init, so the reduced lowering encodes its instances as sorted records of one proctype).
* deadlock: A's 6 steps, B's bar.sync, the TMA completion, R's two exits: 10 steps;
* pending-at-exit: A 4 steps, B's bar.sync, resume, bar.arrive, exit, A's second arrive, R's two
  exits, A's exit with the load in flight: 12 steps (error depth 11).

Interpreter, SPIN plain: the 10-step deadlock. SPIN reduced and fused: pending-at-exit with 12
events: error depth 11 > 10, not a shortest counterexample (the docs promise shortest for every
reduction). Cause: the record proctype ends with `:: r1[0].pc == 1 && r1[1].pc == 1 -> break`, a
separate transition; until it runs, the state where everything else is blocked is not an invalid
end state for pan, so the deadlock is found one BFS level late (level 11, tied with the
violation, which pan reaches first here; with the processes in another order it reports the
deadlock). Proposed fix (lower/promela.py, symmetric_proctype): no separate termination option;
the End option of record i is split into `:: d_step { r[i].pc == E && (every other record is
done) -> ...exit...; }; break` and the same with `!(every other record is done)` without the
break, so the last exit and the termination are one transition (checked on the generated text:
pan then reports the 10-step deadlock, depth 15 instead of 16). That fix is what the lowering
does now (lower/promela.py, symmetric_proctype).
"""
from warpspin.syncir import (BarArrive, BarSync, Elect, Kernel, MBarRef, MBarrierDecl, MbarInit,
                             MbarInitFence, Process, TmaLoad)

KINDS = {"deadlock", "pending-at-exit"}


def kernel() -> Kernel:
    a = MBarRef("a")
    A = (Elect((MbarInit(a, 1), MbarInitFence(), TmaLoad(a, 16))), BarArrive(1, 64),
         BarArrive(1, 64))
    B = (BarSync(1, 64), BarArrive(3, 32))
    return Kernel("records_exit_hidden_step",
                  (Process("A", A, warps=(0, 1)), Process("R", (), warps=(2, 4), instances=2),
                   Process("B", B, warps=(1, 2))), (MBarrierDecl("a"),))
