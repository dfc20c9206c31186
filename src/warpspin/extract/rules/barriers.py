"""Named barriers (bar.sync, bar.arrive, barrier.cta.*), bar.warp.sync, cluster barriers and exit.
"""
from __future__ import annotations


from ...frontend.mlir_data import Op
from ...syncir.ir import Const
from ...syncir.ops import (BarArrive, BarSync, ClusterArrive, ClusterWait, Exit, Unsupported,
                           WarpSync)
from ..effects import NONE, rule


class BarrierRules:
    """The walker's rules for named and cluster barriers (mixed into `WarpWalker`)."""

    def _segments(self, op: Op) -> list[list[int]]:
        sizes = op.attrs.get("operandSegmentSizes")
        if not isinstance(sizes, tuple):
            return [[o] for o in op.operands]
        segs, i = [], 0
        for n in sizes:
            segs.append(op.operands[i:i + n])
            i += n
        return segs

    def unaligned_by_subset(self, op, out) -> bool:
        """A CTA barrier executed by some lanes of the warp only.  The aligned forms
        (``bar.sync``/``bar.arrive``) require every thread of the warp (PTX ISA 9.7.13.1,
        ``.aligned``): by a subset they are undefined, and the op is emitted inside its lanes,
        where the model reports divergent-barrier.  The non-aligned forms (``barrier.cta.*``,
        ``aligned = false``) are legal there: each executing thread waits for the non-exited
        threads of its warp and the warp's arrival counts once (on an H200 one lane's arrival
        counts as the warp's 32: the conformance litmus ``OneLaneArriveUnaligned``).  The model
        does not express that wait, so True (and an Unsupported emitted) in that case."""
        if op.attrs.get("aligned") is not False or self.whole_warp():
            return False
        out.append(Unsupported(f"{op.name} (not aligned) by a subset of the warp's lanes",
                               self.loc(op)))
        return True

    def barrier(self, op, out):
        if self.unaligned_by_subset(op, out):
            return
        segs = self._segments(op)
        bid = self.expr(segs[0][0]) if segs and segs[0] else Const(0)
        n = self.expr(segs[1][0]) if len(segs) > 1 and segs[1] else None
        if len(segs) > 2 and segs[2]:
            out.append(Unsupported("nvvm.barrier with a reduction predicate", self.loc(op)))
            return
        out.append(BarSync(bid, n, self.loc(op)))

    def barrier_cta_sync(self, op, out):
        """``nvvm.barrier.cta.sync(id, count) {aligned}``: ``barrier.sync id, count`` (the
        non-aligned form only relaxes warp convergence, which instances assume anyway)."""
        if self.unaligned_by_subset(op, out):
            return
        n = self.expr(op.operands[1]) if len(op.operands) > 1 else None
        out.append(BarSync(self.expr(op.operands[0]), n, self.loc(op)))

    def barrier_arrive(self, op, out):
        if self.unaligned_by_subset(op, out):
            return
        if len(op.operands) < 2:
            out.append(Unsupported(f"{op.name} without a thread count", self.loc(op)))
            return
        out.append(BarArrive(self.expr(op.operands[0]), self.expr(op.operands[1]), self.loc(op)))

    def warp_sync(self, op, out):
        """``bar.warp.sync mask``: `WarpSync` when the mask holds every lane and the whole warp
        executes it. Another mask, or a subset of the lanes, orders nothing the model counts:
        nothing is emitted, and a hand-off between the warp's lanes stays not checked."""
        m = self.expr(op.operands[0]) if len(op.operands) == 1 else None
        if isinstance(m, Const) and m.value & 0xFFFFFFFF == 0xFFFFFFFF and self.whole_warp():
            out.append(WarpSync(self.loc(op)))

    def cluster_arrive(self, op, out):
        self.note_relaxed(op)
        out.append(ClusterArrive(op.name.endswith(".relaxed"), self.loc(op)))

    def cluster_wait(self, op, out):
        out.append(ClusterWait(self.loc(op)))

    def exit_(self, op, out):
        if self.whole_warp():
            out.append(Exit(self.loc(op)))
        else:
            out.append(Unsupported("exit by a subset of the warp's lanes", self.loc(op)))


HANDLERS = {
    "nvvm.barrier": rule(BarrierRules.barrier, NONE),
    "nvvm.barrier.cta.sync": rule(BarrierRules.barrier_cta_sync, NONE),
    "nvvm.barrier.arrive": rule(BarrierRules.barrier_arrive, NONE),
    "nvvm.barrier.cta.arrive": rule(BarrierRules.barrier_arrive, NONE),
    "nvvm.exit": rule(BarrierRules.exit_, NONE),
    "nvvm.bar.warp.sync": rule(BarrierRules.warp_sync, NONE),
    "nvvm.cluster.arrive": rule(BarrierRules.cluster_arrive, NONE),
    "nvvm.cluster.arrive.relaxed": rule(BarrierRules.cluster_arrive, NONE),
    "nvvm.cluster.wait": rule(BarrierRules.cluster_wait, NONE),
}
