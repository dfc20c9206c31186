"""MMAs: cute.gemm (wgmma and tcgen05.mma) and its shared-memory operands, wgmma operand
fragments, wgmma fence, commit and wait.
"""
from __future__ import annotations

import re

from ...frontend.mlir_data import Op
from ...syncir.ops import (WgmmaCommit, WgmmaRead, MmaRead, WgmmaWait, WgmmaAcc, WgmmaFence,
                           TmemAccess)
from ..accumulators import wgmma_acc
from ..data import DataAccess
from ..values import Region, View
from ..effects import NONE, WRITES, rule


class MmaRules:
    """The walker's rules for wgmma and tcgen05 MMAs (mixed into `WarpWalker`)."""

    def make_fragment(self, op: Op, out) -> None:
        """``cute.mma.make_fragment`` of a shared-memory partition: the wgmma operand
        descriptors over it (a view of the same bytes, in 16-byte descriptor units)."""
        v = self.val(op.operands[1]) if len(op.operands) > 1 else None
        if isinstance(v, (View, Region)) and op.result_types and \
                op.result_types[0].startswith("!cute_nvgpu.smem_desc_view"):
            lo, hi = v.byte_range if isinstance(v, View) else (v.lo, v.hi)
            alloc = v.ptr.alloc.uid if isinstance(v, View) else v.alloc
            self.env[op.result] = Region(alloc, lo, hi)
        else:
            self.set_unknown_results(op)

    def gemm(self, op: Op, out) -> None:
        """``cute.gemm(atom, d, a, b, c)``: a warpgroup MMA whose shared-memory operands (a, b:
        descriptor views) it reads asynchronously until a wgmma.wait_group retires its group;
        a tcgen05 MMA (an sm100 atom; cta_group::2 with num_cta = 2) until the arrive of the
        warp's next tcgen05.commit lands, and its accumulator is a TMEM access."""
        sm100 = bool(op.operand_types) and "sm100" in op.operand_types[0]
        two = sm100 and re.search(r"sm100\.mma\w*<[^>]*num_cta = 2", op.operand_types[0]) is not None
        reads = []
        if sm100:
            acc = self.tmem_operands(op)
            out.append(TmemAccess("tcgen05.mma", self.loc(op), pair=two, data=acc is not None))
            reads += acc or []
        for vid in op.operands[2:4]:
            stage = self.staged(vid)
            if stage is None:
                if not sm100:
                    self.wgmma_operand(op, vid, out)
                continue
            name = self.claim(op, stage)
            reads.append((name, stage.index))
        if reads and sm100:
            out.append(MmaRead(tuple(reads), self.loc(op), pair=two))
        elif reads:
            out.append(WgmmaRead(tuple(reads), self.loc(op)))
        out += [WgmmaAcc(acc, self.loc(op)) for acc in wgmma_acc(self.ctx.accumulators, op)]

    def wgmma_operand(self, op: Op, vid, out) -> None:
        """A wgmma operand in shared memory that no TMA fills: the wgmma reads its bytes
        (the descriptors' region) as shared data (extract/data.py follows it if the threads'
        other accesses of the allocation are element accesses)."""
        v = self.val(vid)
        if not isinstance(v, Region) or v.alloc is None:
            return
        records = tuple(r for r in self.records_since_op()
                        if r[0] == "u" and self.ctx.smem_uses[r[1]][:2] == (v.alloc, (v.lo, v.hi)))
        out.append(DataAccess(v.alloc, ((v.lo, v.hi),), False, records, self.loc(op),
                              wgmma=True))

    def wgmma_commit(self, op: Op, out) -> None:
        out.append(WgmmaCommit(loc=self.loc(op)))

    def wgmma_fence(self, op: Op, out) -> None:
        out.append(WgmmaFence(loc=self.loc(op)))

    def wgmma_wait(self, op: Op, out) -> None:
        self.group_wait(op, "group", WgmmaWait, out)


HANDLERS = {
    "cute.mma.make_fragment": rule(MmaRules.make_fragment, NONE),
    "cute.gemm": rule(MmaRules.gemm, WRITES),
    "nvvm.wgmma.commit.group.sync.aligned": rule(MmaRules.wgmma_commit, NONE),
    "nvvm.wgmma.fence.aligned": rule(MmaRules.wgmma_fence, NONE),
    "nvvm.wgmma.wait.group.sync.aligned": rule(MmaRules.wgmma_wait, NONE),
}
