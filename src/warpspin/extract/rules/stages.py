"""Staged buffers: the stage a shared-memory access names, the buffer it is a stage of, and
the staged reads and writes of the copies, MMAs and stores that use them.  No op of its own.
"""
from __future__ import annotations

from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ops import SmemRead, SmemWrite
from ...syncir.ir import Const, Expr
from ..values import Leaves, Region, Stage, View, opaque_reasons


class StageRules:
    """The walker's helpers for staged buffers (mixed into `WarpWalker`)."""

    def element_stage(self, view: View, coord: int) -> Optional[Stage]:
        """The stage an element access of a whole shared-memory tensor names: one mode of the
        tensor spans all its bytes (`sA[r, c, stage]`) and its coordinate leaf is a value the
        model follows."""
        c = self.val(coord)
        if view.ptr.lin or not isinstance(c, Leaves) or len(c.items) != len(view.shape) or \
                sum(n > 1 for n in view.shape) < 2:  # a word array is no staged buffer
            return None
        lo, hi = view.byte_range
        modes = [i for i, (n, d) in enumerate(zip(view.shape, view.stride))
                 if n > 1 and n * d * view.elem == hi - lo]
        if len(modes) != 1:
            return None
        index = c.items[modes[0]]
        if not isinstance(index, Expr) or opaque_reasons(index):
            return None
        i = modes[0]
        return Stage(index, view.shape[i], view.stride[i] * view.elem, view.ptr.alloc.uid, lo, hi)

    def claim(self, op: Op, stage: Stage) -> str:
        """The buffer `stage` is a stage of, with `op`'s recorded accesses of it attributed."""
        name = self.ctx.buffer(stage, self.loc(op))
        self.attribute(op, stage, name)
        return name

    def staged(self, vid: int) -> Optional[Stage]:
        v = self.val(vid)
        return (v.stage or self.plain_stage(v)) if isinstance(v, (View, Region)) else None

    @staticmethod
    def _bytes(v) -> Optional[tuple[int, int, int]]:
        """(allocation uid, lo, hi): the bytes a view or region of shared memory lies in."""
        if isinstance(v, Region):
            return v.alloc, v.lo, v.hi
        if isinstance(v, View) and v.byte_range is not None and v.ptr.alloc is not None:
            return (v.ptr.alloc.uid, *v.byte_range)
        return None

    def plain_stage(self, v) -> Optional[Stage]:
        """A view or region inside a plain shared tensor that a TMA store reads
        (`Context.plain_buffers`): the one stage of that buffer."""
        where = self._bytes(v) if v.stage is None else None
        for alloc, a, b in self.ctx.plain_buffers if where is not None else ():
            if alloc == where[0] and a <= where[1] and where[2] <= b:
                return Stage(Const(0), 1, b - a, alloc, a, b)
        return None

    def attribute(self, op: Op, stage: Stage, name: str) -> None:
        """The shared-memory writes and uses recorded for `op` (smem_writes_of, smem_uses_of)
        inside the buffer's bytes are this staged access (build.py checks every other one)."""
        for recorded, staged, mark in ((self.ctx.smem_writes, self.ctx.staged_writes,
                                        self.smem_mark),
                                       (self.ctx.smem_uses, self.ctx.staged_uses, self.use_mark)):
            for i in range(mark, len(recorded)):
                a, rng, _ = recorded[i]
                if a == stage.alloc and rng is not None and stage.lo <= rng[0] and \
                        rng[1] <= stage.hi:
                    staged[i] = name

    def staged_read(self, op: Op, vid: int, out) -> None:
        stage = self.staged(vid)
        if stage is None:
            return
        name = self.claim(op, stage)
        out.append(SmemRead(((name, stage.index),), self.loc(op)))

    def staged_write(self, op: Op, vid: int, out) -> None:
        stage = self.staged(vid)
        if stage is None:
            return
        name = self.claim(op, stage)
        out.append(SmemWrite(name, stage.index, self.loc(op)))


# none: helpers of the copy, MMA and shared-memory rules
HANDLERS: dict = {}
