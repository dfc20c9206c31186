"""Shared memory as words and data: loads and stores of shared words, element accesses of
shared data (extract/data.py), and the record of every write and use of shared memory.
"""
from __future__ import annotations

import re
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ir import Const, Expr, Loc, Var, WordRef, expr_vars
from ...syncir.ops import SmemLoad, SmemStore
from .. import cute_types as ct
from ..data import DataAccess, spans_of
from ..values import (split_lane, LANE, Leaves, Ptr, Region, View, lane_values, opaque_reasons,
                      lin_expr, opaque)
from .asm import _asm_only_global_tensormap, _asm_may_write_shared, _one_st_async, ASM_ST_CLUSTER
from .tcgen05 import TMEM_ADDRESS_WORD, _tmem_address_word
from ..effects import Effects, rule


class WordRules:
    """The walker's rules for shared words and data (mixed into `WarpWalker`)."""

    def smem_word(self, view: View, coord: int) -> Expr | str:
        """The word index (in its allocation) of the element `coord` names in `view`, or why
        not. The word array is declared by the caller, once it emits the access."""
        if view.elem != 4 or view.ptr.const % 4 or any(c % 4 for _, c in view.ptr.lin):
            return "an element that is not a 32-bit word"
        c = self.val(coord)
        coords = list(c.items) if isinstance(c, Leaves) else [c]
        if len(coords) != len(view.shape):
            return "a coordinate of another rank than the tensor"
        lin: Expr = lin_expr(tuple((x, c // 4) for x, c in view.ptr.lin), view.ptr.const // 4,
                             self.f)
        for x, d in zip(coords, view.stride):
            if not isinstance(x, Expr) or opaque_reasons(x):
                return "an index the model does not follow"
            lin = self.f.binop("+", lin, self.f.binop("*", x, Const(d)))
        return lin

    def smem_writes_of(self, op: Op) -> None:
        """The writes of an op that declares it may write the shared memory its operands name
        (effects.py "write"): every shared-memory operand's bytes; an mbarrier op and
        tcgen05.commit write their barrier's 8 bytes, tcgen05.alloc its address word, inline PTX
        what its text may write."""
        if op.name in TMEM_ADDRESS_WORD and len(op.operands) > 1:
            v = self.val(op.operands[1])  # tcgen05.alloc writes the 4-byte address there
            if (word := _tmem_address_word(v)) is not None:
                self.ctx.smem_writes.append((v.alloc.uid, word, op.name))
                return
        for vid, t in zip(op.operands, op.operand_types):
            v = self.val(vid)
            # an mbarrier op on a barrier of a known array (in this CTA, or in a peer through
            # mapa: every CTA lays its shared memory out alike) writes that barrier's 8 bytes
            arr = self.ctx.array(v.alloc, v.const, self.loc(op)) \
                if op.name.startswith(("nvvm.mbarrier.", "nvvm.tcgen05.commit")) \
                and isinstance(v, Ptr) and v.alloc \
                and (ct.is_smem(t) or ct.is_cluster_smem(t)) else None
            if ct.is_cluster_smem(t) and arr is None:
                # some CTA's shared memory, through an address not followed
                self.ctx.smem_writes.append((None, None, f"{op.name}@{op.loc.short()}"))
            elif ct.is_cluster_smem(t):
                self.ctx.smem_writes.append((v.alloc.uid, (arr[1], arr[1] + arr[2]), op.name))
            elif ct.is_smem(t):
                if arr is not None:  # inside the barrier array's struct field
                    self.ctx.smem_writes.append((v.alloc.uid, (arr[1], arr[1] + arr[2]), op.name))
                else:
                    self.note_smem_write(vid, f"{op.name}@{op.loc.short()}", self.loc(op))
        if op.name in ("llvm.inline_asm", "nvvm.inline_ptx"):
            text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
            if _one_st_async(text) and not re.search(r"\bcp\.|stmatrix|\batom|\bred\.|tensormap|"
                                                     r"\bst\.(?!async)", text):
                return  # the st.async's handler records its write (`asm`)
            if _asm_may_write_shared(text):
                if not ASM_ST_CLUSTER.match(text):  # a DSMEM store: DsmemStore says what it is
                    self.ctx.data_writes.append((len(self.ctx.smem_writes), self.loc(op)))
                self.ctx.smem_writes.append((None, None, f"inline PTX@{op.loc.short()}"))

    def note_smem_write(self, vid: int, what: str, loc: Optional[Loc] = None) -> None:
        """A write into shared memory the model does not follow as a word value: the words it
        may overlap are not modelled (build.py). With `loc`, a write of data by threads: races
        on it are checked only where a buffer the model follows claims it (build.py)."""
        if loc is not None:
            self.ctx.data_writes.append((len(self.ctx.smem_writes), loc))
        v = self.val(vid)
        if isinstance(v, View):
            self.ctx.smem_writes.append((v.ptr.alloc.uid, v.byte_range, what))
        elif isinstance(v, Region):
            self.ctx.smem_writes.append((v.alloc, (v.lo, v.hi), what))
            self.ctx.derived_view_writes = True
        elif isinstance(v, Ptr) and v.alloc is not None:
            # a peer's (mapa) allocation is laid out like this CTA's: the same words
            self.ctx.smem_writes.append((v.alloc.uid, None, what))
        else:
            self.ctx.smem_writes.append((None, None, what))

    def smem_load(self, op: Op, view: View, out) -> None:
        r = self.smem_word(view, op.operands[1])
        why = r if isinstance(r, str) else None
        if why is None and op.result_types[0] != "i32":
            why = f"a {op.result_types[0]} value"
        if why is None and LANE in expr_vars(r) and self.whole_warp():
            why = "an address that differs between the lanes"
        if why is not None:
            self.env[op.result] = opaque(f"ld.shared of {why}@{op.loc.short()}")
            self.data_access(op, view, op.operands[1], False, out)
            return
        dest = f"t{op.uid}"
        out.append(SmemLoad(dest, WordRef(self.ctx.word_array(view, self.loc(op)), r), self.loc(op)))
        self.env[op.result] = Var(dest)

    def data_access(self, op: Op, view: View, coord: int, write: bool, out) -> None:
        """A store or load of one element of a shared tensor by the executing lanes, as data
        (extract/data.py): the bytes they touch when the element's address is a function of the
        lane alone and the lanes are known."""
        if view.ptr.alloc is None or view.ptr.cta is not None:
            return
        coords = self.element_coords(view, coord, op.operand_types[0]) or []
        off: Optional[Expr] = None
        if len(coords) == len(view.shape) and all(isinstance(x, Expr) and not opaque_reasons(x)
                                                  for x in coords):
            off = lin_expr(view.ptr.lin, view.ptr.const, self.f)
            for x, d in zip(coords, view.stride):
                off = self.f.binop("+", off, self.f.binop("*", x, Const(d * view.elem)))
        spans, lanes, base = self.element_bytes(off, view.elem, view.byte_range)
        out.append(DataAccess(view.ptr.alloc.uid, spans, write, self.records_since_op(),
                              self.loc(op), lanes=lanes, base=base, elem=view.elem,
                              extent=view.byte_range if base is not None else None))

    def element_bytes(self, off: Optional[Expr], elem: int, extent):
        """(spans, lanes, base) of an element access at byte offset `off` by the executing lanes
        (DataAccess's fields): the bytes when `off` is a function of the lane alone, or of the
        lane plus a lane-free part `base` (inside the tensor's bytes `extent`); spans None when
        neither."""
        if off is None:
            return None, (), None
        per_lane = lane_values(off, self.lanes)
        base = None
        split = split_lane(off) if per_lane is None else None
        if split is not None and extent is not None and not opaque_reasons(split[0]):
            # an address over loop counters too: bytes relative to the lane-free part
            per_lane, base = lane_values(split[1], self.lanes), split[0]
        a = self.active
        if per_lane is None or not (a.exact or len({per_lane[i] for i in a.lanes}) == 1):
            return None, (), None
        spans = spans_of([per_lane[i] for i in a.lanes], elem)
        lanes = ()
        if a.exact:  # (an elected lane: which one is not known; () overlaps by bytes)
            lanes = tuple((i, per_lane[i], per_lane[i] + elem) for i in sorted(a.lanes))
        return spans, lanes, base

    def records_since_op(self) -> tuple:
        """The smem_writes / smem_uses entries the current op recorded."""
        return tuple(("w", i) for i in range(self.smem_mark, len(self.ctx.smem_writes))) + \
            tuple(("u", i) for i in range(self.use_mark, len(self.ctx.smem_uses)))

    def memref_store(self, op: Op, out) -> None:
        """A store into shared memory: a word value (`SmemStore`) when the model can follow it;
        global stores have no synchronization effect (`Context.written_gmem` tracks them)."""
        if not ct.is_smem(op.operand_types[0]):
            if "gmem" in op.operand_types[0] and len(op.operands) > 1:
                self.global_data_access(op, op.operands[1], True, out)
            return
        view = self.val(op.operands[0])
        where = f"@{op.loc.short()}"
        if not isinstance(view, View) or view.stage is not None or self.plain_stage(view):
            # a stage of a staged buffer holds data, not words handed between roles
            self.note_smem_write(op.operands[0], f"a shared-memory store{where}", self.loc(op))
            self.staged_write(op, op.operands[0], out)
            if isinstance(view, View):  # (a stage no async unit touches is data: data.py)
                self.data_access(op, view, op.operands[1], True, out)
            return
        r = self.smem_word(view, op.operands[1])
        value = self.val(op.operands[2]) if len(op.operands) > 2 else None
        why = r if isinstance(r, str) else None
        if why is None and (op.operand_types[2] != "i32" or not isinstance(value, Expr)
                            or opaque_reasons(value)):
            why = "a value the model does not follow"
        if why is None and LANE in expr_vars(value) | expr_vars(r) and self.whole_warp():
            why = "a value or address that differs between the lanes"
        if why is not None:
            self.note_smem_write(op.operands[0], f"st.shared of {why}{where}", self.loc(op))
            self.data_access(op, view, op.operands[1], True, out)
            return
        out.append(SmemStore(WordRef(self.ctx.word_array(view, self.loc(op)), r), value, self.loc(op)))

    def words_at(self, op: Op, p, n: int):
        """(word array, index) of the `n` words from shared-memory pointer `p`, or why they are
        not words the model follows."""
        if not isinstance(p, Ptr) or p.alloc is None or p.const % 4 or any(c % 4 for _, c in p.lin):
            return "an address the model does not follow"
        if any(not isinstance(x, Expr) or opaque_reasons(x) for x, _ in p.lin):
            return "an address the model does not follow"
        index = lin_expr(tuple((x, c // 4) for x, c in p.lin), p.const // 4, self.f)
        if isinstance(index, Const):
            lo, hi = index.value, index.value + n
        else:  # its struct field, or its allocation (the model checks the index against it)
            field = next(((off, size) for _, size, off in p.alloc.fields
                          if off <= p.const < off + size), None) if p.alloc.fields else \
                (0, p.alloc.size)
            if field is None or field[1] <= 0 or field[0] % 4 or field[1] % 4:
                return "an address outside the allocation's fields"
            lo, hi = field[0] // 4, (field[0] + field[1]) // 4
        return self.ctx.word_array_at(p.alloc, lo, hi, self.loc(op)), index

    def smem_uses_of(self, op: Op) -> None:
        """The uses of an op that declares it reads or writes the shared memory its operands
        name (effects.py, not "none"): each shared-memory operand (a tensor, a part of one, a
        pointer) (build.py: a buffer whose stages TMA loads fill is followed only if every use
        of its bytes is a staged access)."""
        what = f"{op.name}@{op.loc.short()}"
        text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
        if op.name in ("llvm.inline_asm", "nvvm.inline_ptx") and ("[" in text or "wgmma" in text
                                                                  or "tcgen05" in text) and \
                not _asm_only_global_tensormap(text):
            # inline PTX with a memory operand ([addr]) or an async unit's descriptor may reach
            # shared memory through an address the model does not follow
            self.ctx.smem_uses.append((None, None, f"inline PTX@{op.loc.short()}"))
        for vid, t in zip(op.operands, op.operand_types):
            v = self.val(vid)
            if (ct.is_smem(t) or t.startswith("!llvm.ptr<3>")) and \
                    not isinstance(v, (View, Region, Ptr)):
                self.ctx.smem_uses.append((None, None, what))  # shared memory not followed
            if isinstance(v, View):
                self.ctx.smem_uses.append((v.ptr.alloc.uid, v.byte_range, what))
            elif isinstance(v, Region):
                self.ctx.smem_uses.append((v.alloc, (v.lo, v.hi), what))
            elif isinstance(v, Ptr) and v.alloc is not None and v.space == "smem":
                # an mbarrier op touches its 8 bytes; any other op through a pointer, anything
                # of the allocation
                arr = self.ctx.array(v.alloc, v.const, self.loc(op)) \
                    if op.name.startswith(("nvvm.mbarrier.", "nvvm.tcgen05.commit")) else None
                rng = (arr[1], arr[1] + arr[2]) if arr is not None else None
                if op.name in TMEM_ADDRESS_WORD:
                    rng = _tmem_address_word(v) or rng
                self.ctx.smem_uses.append((v.alloc.uid, rng, what))


STORE = Effects("own", "may")  # its rule records the words and data it stores; global ones too

HANDLERS = {
    "cute.memref.store": rule(WordRules.memref_store, STORE),
}
