"""tcgen05 and tensor memory: copies from and into TMEM, tcgen05.commit and wait, TMEM
allocation and the TMEM operands of an MMA (extract/tmem.py follows the TMEM tensors).
"""
from __future__ import annotations

from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ops import (Tcgen05Commit, TmemAccess, TmemAlloc, TmemDealloc, TmemLoad,
                           TmemRelinquish, TmemWaitLd)
from ...syncir.ops import Unsupported
from .. import cute_types as ct
from .. import tmem
from ..values import Ptr
from ..effects import NONE, READS, WRITES, rule


def tmem_copy(types: list[str]) -> Optional[str]:
    """The tcgen05 op of a ``cute.copy`` from or into tensor memory (a ``memref<T, tmem, ...>``
    operand): tcgen05.ld into registers, tcgen05.st from them, tcgen05.cp from shared memory."""
    space = [ct.memref_space(t) for t in types[1:3]]
    if len(space) < 2 or "tmem" not in space:
        return None
    if space[0] == "tmem":
        return "tcgen05.ld"
    return "tcgen05.cp" if space[0] == "smem" else "tcgen05.st"


# ops that write (alloc) or read (retrieve) the 4-byte TMEM address at their shared-memory pointer
TMEM_ADDRESS_WORD = {"cute_nvgpu.arch.sm100.alloc_tmem", "cute_nvgpu.arch.sm100.retrieve_tmem_ptr"}


def _tmem_address_word(v) -> Optional[tuple[int, int]]:
    """The byte range of the TMEM address word a pointer of this CTA at a static offset names."""
    if isinstance(v, Ptr) and v.alloc is not None and not v.lin and v.cta is None:
        return (v.const, v.const + 4)
    return None


class Tcgen05Rules:
    """The walker's rules for tcgen05 and tensor memory (mixed into `WarpWalker`)."""

        # other copies (registers, plain smem/gmem loads and stores) do not synchronize

    def tmem_copy(self, op: Op, what: str, out) -> None:
        """A copy from or into tensor memory: its access, and for a tcgen05.ld from a stage of a
        TMEM buffer (extract/tmem.py) the read of that stage."""
        loc = self.loc(op)
        stage = tmem.stage_of(self, op.operands[1], op.operand_types[1]) \
            if what == "tcgen05.ld" else None
        if stage is None:
            tmem.unattributed(self.ctx, what, loc, "its source is not followed to a stage of a "
                              "TMEM buffer" if what == "tcgen05.ld" else "only tcgen05.ld and "
                              "tcgen05.mma accesses are followed")
            out.append(TmemAccess(what, loc))
            return
        name = tmem.buffer(self.ctx, self, op.operands[1], stage, loc)
        out += [TmemAccess(what, loc, data=True), TmemLoad(((name, stage.index),), loc)]

    def tmem_wait(self, op: Op, out) -> None:
        """tcgen05.wait::ld retires the warp's tcgen05.ld (build.py keeps it in a warp that reads
        a TMEM buffer); tcgen05.wait::st waits for its stores, whose data is not followed."""
        if "load" in str(op.attrs.get("kind", "")):
            out.append(TmemWaitLd(self.loc(op)))

    def tmem_operands(self, op: Op) -> Optional[list]:
        """The TMEM buffer stages an sm100 ``cute.gemm`` accesses: its accumulator (d, c), each
        a stage of a TMEM buffer (extract/tmem.py); None (not attributed) when one is not, or
        when its A operand is in tensor memory."""
        loc, out = self.loc(op), []
        if len(op.operands) < 5:
            tmem.unattributed(self.ctx, "tcgen05.mma", loc, "its operands are not d, a, b, c")
            return None
        if ct.memref_space(op.operand_types[2]) == "tmem":
            tmem.unattributed(self.ctx, "tcgen05.mma", loc, "its A operand is in tensor memory")
            return None
        for vid, t in ((op.operands[1], op.operand_types[1]), (op.operands[4], op.operand_types[4])):
            stage = tmem.stage_of(self, vid, t) if ct.memref_space(t) == "tmem" else None
            if stage is None:
                tmem.unattributed(self.ctx, "tcgen05.mma", loc, "its accumulator is not followed "
                                  "to a stage of a TMEM buffer")
                return None
            read = (tmem.buffer(self.ctx, self, vid, stage, loc), stage.index)
            if read not in out:
                out.append(read)
        return out

    def tcgen05_commit(self, op: Op, out) -> None:
        """tcgen05.commit.cta_group::N.mbarrier::arrive::one[.multicast::cluster] [bar], mask."""
        mask = self.expr(op.operands[1]) if len(op.operands) > 1 else None
        self.mbar_stmt(op, out, lambda b: Tcgen05Commit(b, self.loc(op), mask))

    def tmem_group(self, op: Op, out) -> Optional[bool]:
        """Whether a TMEM allocation op is the cta_group::2 form (``is_two_cta``) or the
        cta_group::1 form (no attribute); None (and Unsupported) for any other attribute."""
        if op.attrs in ({}, {"is_two_cta": True}):
            return bool(op.attrs)
        out.append(Unsupported(f"{op.name} with {sorted(op.attrs)} (only cta_group::1 and "
                               "is_two_cta are modelled)", self.loc(op)))
        self.set_unknown_results(op)
        return None

    def tmem_alloc(self, op: Op, out) -> None:
        pair = self.tmem_group(op, out)
        if pair is not None:
            out.append(TmemAlloc(self.expr(op.operands[0]), self.loc(op), pair))

    def tmem_dealloc(self, op: Op, out) -> None:
        pair = self.tmem_group(op, out)
        if pair is not None:
            out.append(TmemDealloc(self.expr(op.operands[1]), self.loc(op), pair))

    def tmem_relinquish(self, op: Op, out) -> None:
        pair = self.tmem_group(op, out)
        if pair is not None:
            out.append(TmemRelinquish(self.loc(op), pair))

    def tmem_ptr(self, op: Op, out) -> None:
        """retrieve_tmem_ptr reads the address tcgen05.alloc stored in shared memory: a value
        for tcgen05 ops (extract/tmem.py follows the tensors made on it), never for
        synchronization (a branch on it stays Unsupported)."""
        tmem.retrieve(self, op)


HANDLERS = {
    "nvvm.tcgen05.commit": rule(Tcgen05Rules.tcgen05_commit, WRITES),
    "nvvm.tcgen05.wait": rule(Tcgen05Rules.tmem_wait, NONE),
    "cute_nvgpu.arch.sm100.alloc_tmem": rule(Tcgen05Rules.tmem_alloc, WRITES),
    "cute_nvgpu.arch.sm100.dealloc_tmem": rule(Tcgen05Rules.tmem_dealloc, WRITES),
    "cute_nvgpu.arch.sm100.relinquish_tmem_alloc_permit": rule(Tcgen05Rules.tmem_relinquish, NONE),
    "cute_nvgpu.arch.sm100.retrieve_tmem_ptr": rule(Tcgen05Rules.tmem_ptr, READS),
}
