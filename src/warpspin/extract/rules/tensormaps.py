"""Bulk async-groups and tensormaps rewritten in global memory (docs/semantics.md).
"""
from __future__ import annotations

import re
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ops import (BulkCommit, BulkWaitRead, TensormapAcquire, TensormapRelease,
                           TensormapWrite)
from ...syncir.ops import Unsupported
from ..descriptors import TENSORMAP_CASTS, address, same_descriptor
from .asm import tensormap_asm_form
from ..effects import Effects, NONE, rule


# a bulk group or tensormap op on lanes that may miss the TMA's elected one (extract/build.py
# drops those of bulk groups in a warp that loads through no rewritten tensormap)
LANE_SUBSET = ("by a lane subset that may not include the lane that issues the warp's TMA copies "
               "(bulk groups and tensormap fences are per thread)")


class TensormapRules:
    """The walker's rules for bulk groups and tensormaps (mixed into `WarpWalker`)."""

    # -- bulk async-groups and tensormaps rewritten in global memory (docs/semantics.md)
    def tensormap_op(self, op: Op, stmt, out) -> None:
        """A tensormap op or bulk group, when its lanes include the lane that issues the warp's
        TMA copies (their bulk groups and fences are per thread); else Unsupported."""
        if self.tma_lane():
            out.append(stmt)
        else:
            out.append(Unsupported(f"{op.name}: {stmt.mnemonic} {LANE_SUBSET}", self.loc(op)))

    @staticmethod
    def tensormap_asm(op: Op) -> bool:
        """Inline PTX the extractor reads as a tensormap op or a bulk group."""
        return op.name in ("llvm.inline_asm", "nvvm.inline_ptx") and tensormap_asm_form(
            str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")) is not None

    def asm_tensormap(self, op: Op, text: str, out) -> bool:
        """Inline PTX of a bulk group, a tensormap fence, copy or replace: the op, and True."""
        form = tensormap_asm_form(text)
        if form is None:
            return False
        kind, m = form
        if kind == "bulk":
            self.tensormap_op(op, BulkCommit(loc=self.loc(op)) if m.group(2) is None else
                              BulkWaitRead(int(m.group(2)), loc=self.loc(op)), out)
        elif kind == "release":
            self.tensormap_op(op, TensormapRelease(self.loc(op)), out)
        elif kind == "replace" and m.group(1) == "shared::cta":
            pass  # a descriptor in shared memory: no TMA reads it
        else:
            if kind == "replace":  # the descriptor operand follows the instruction
                ptr = re.search(r"\[\{?\$r?(\d+)\}?\]", text[m.start():])
                text_ptr = ptr.group(1) if ptr else None
            else:
                text_ptr = m.group(2) if kind == "acquire" else m.group(1)
            if text_ptr is None or int(text_ptr) >= len(op.operands):
                out.append(Unsupported(f"inline PTX {kind}: operand not understood", self.loc(op)))
                return True
            desc = self.tensormap(op, op.operands[int(text_ptr)], out)
            if desc is not None:
                stmt = TensormapAcquire(desc, self.loc(op)) if kind == "acquire" else \
                    TensormapWrite(desc, kind == "copy", self.loc(op))
                self.tensormap_op(op, stmt, out)
        return True

    def tensormap(self, op: Op, vid: int, out) -> Optional[str]:
        """The tensormap a pointer to a descriptor in global memory names: its root value (through
        casts and alignment assumptions), one tensormap per root. A descriptor in shared memory
        (written there, then copied out): None. A root that is a loop-carried value or computed
        in a loop, one that does not depend on the block index (in a grid of more than one CTA),
        or a second root in one kernel (two pointers may alias): Unsupported, None."""
        root, seen = vid, set()
        while root not in seen:
            seen.add(root)
            info = self.k.value_info.get(root)
            if info is None or info.is_block_arg or info.op is None or \
                    info.op.name not in TENSORMAP_CASTS or not info.op.operands:
                break
            root = info.op.operands[0]
        t = self.k.type_of(root) if root in self.k.value_info else ""
        if ", smem" in t:
            return None
        info = self.k.value_info.get(root)
        if info is None or info.is_block_arg or ", gmem" not in t or \
                any(a.name in ("scf.for", "scf.while") for a in info.op.ancestors()):
            out.append(Unsupported(f"{op.name}: a tensormap pointer that is not one fixed global "
                                   "address per thread (a loop-carried value, computed in a "
                                   "loop, or not in global memory)", self.loc(op)))
            return None
        one_cta = tuple(self.k.grid_dim or ()) == (1, 1, 1)
        if not one_cta and not self._reads_block_index(root):
            out.append(Unsupported(f"{op.name}: a tensormap pointer that does not depend on the "
                                   "block index (a descriptor the CTAs share: rewrites by one CTA "
                                   "race with loads of another, which the model does not follow)",
                                   self.loc(op)))
            return None
        tms = self.ctx.tensormaps
        if root not in tms:
            here = address(self.k, root, self.val, self.expr)
            for other, (name, label, _loc, there) in list(tms.items()):
                same = None if here is None or there is None else same_descriptor(here, there)
                if same is None:
                    out.append(Unsupported(
                        f"{op.name}: a second tensormap pointer whose address is not shown to "
                        f"be that of {label} or at least 128 bytes from it (whether two pointers "
                        "name one descriptor is not followed)", self.loc(op)))
                    return None
                if same:
                    tms[root] = tms[other]
                    return name
                if here.arg != there.arg:
                    self.ctx.assumptions.add(
                        f"tensormaps: the descriptors in kernel arguments {there.arg} and "
                        f"{here.arg} do not overlap (the host's tensors are disjoint)")
            loc = self.loc(info.op)
            where = f"{loc.file.rsplit('/', 1)[-1]}:{loc.line}"
            tms[root] = (f"tmap{len({t[0] for t in tms.values()})}", f"tensormap at {where}",
                         loc, here)
        return tms[root][0]

    def _reads_block_index(self, vid: int, limit: int = 400) -> bool:
        """Whether the value is computed from a block or cluster index (its backward slice)."""
        todo, seen = [vid], set()
        while todo and len(seen) < limit:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            info = self.k.value_info.get(v)
            if info is None or info.is_block_arg or info.op is None:
                continue
            if info.op.name.startswith(("nvvm.read.ptx.sreg.ctaid", "nvvm.read.ptx.sreg.clusterid",
                                        "nvvm.read.ptx.sreg.cluster.ctaid")):
                return True
            todo += info.op.operands
        return False

    def bulk_commit(self, op: Op, out) -> None:
        self.tensormap_op(op, BulkCommit(loc=self.loc(op)), out)

    def bulk_wait(self, op: Op, out) -> None:
        n = op.attrs.get("group")
        try:
            self.tensormap_op(op, BulkWaitRead(int(str(n)), loc=self.loc(op)), out)
        except ValueError:
            out.append(Unsupported(f"{op.name} with group {n!r}", self.loc(op)))

    def tensormap_write(self, op: Op, out) -> None:
        """cute_nvgpu.copy_tma_desc (atom, ptr) and update_tma_desc (atom, tensor, ptr): the
        descriptor at ptr is written (by every executing thread)."""
        desc = self.tensormap(op, op.operands[-1], out)
        if desc is not None:
            self.tensormap_op(op, TensormapWrite(desc, False, self.loc(op)), out)


TENSORMAP_WRITE = Effects("write", "own")  # the tensormap write is this family's rule

HANDLERS = {
    "nvvm.cp.async.bulk.commit.group": rule(TensormapRules.bulk_commit, NONE),
    "nvvm.cp.async.bulk.wait_group": rule(TensormapRules.bulk_wait, NONE),
    "cute_nvgpu.copy_tma_desc": rule(TensormapRules.tensormap_write, TENSORMAP_WRITE),
    "cute_nvgpu.update_tma_desc": rule(TensormapRules.tensormap_write, TENSORMAP_WRITE),
}
