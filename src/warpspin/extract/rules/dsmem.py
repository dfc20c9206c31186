"""Distributed shared memory: mapa addresses, generic stores into a peer CTA
(st.shared::cluster, llvm.store, cute.copy) and st.async (nvvm.store.async, inline PTX).
"""
from __future__ import annotations

import re
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ops import DsmemStore
from ...syncir.ir import Const, Expr, MBarRef, WordRef, expr_vars
from ...syncir.ops import StAsync, TmaLoad, Unsupported
from .. import cute_types as ct
from ..data import DataAccess
from ..partitions import element_type, image as layout_image
from ..values import LANE, Ptr, opaque_reasons, lin_expr
from ..context import MAX_LANE_SPLIT
from .asm import PTX_OPERAND
from ..effects import Effects, rule


_SCALAR_BYTES = {"i8": 1, "i16": 2, "f16": 2, "bf16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}


class DsmemRules:
    """The walker's rules for distributed shared memory (mixed into `WarpWalker`)."""

    def mapa(self, op: Op, out) -> None:
        p = self.val(op.operands[0])
        if isinstance(p, Ptr):
            rank = self.expr(op.operands[1])
            cta = self.f.binop("+", Const(self.cluster_base), rank) if self.cluster_base else rank
            self.env[op.result] = Ptr(p.alloc, p.lin, p.const, p.elem, cta, "dsmem")
        else:
            self.set_unknown_results(op)

    def dsmem_store(self, op: Op) -> Optional[tuple[Ptr, Optional[int]]]:
        """``llvm.store v, p`` or a universal-atom ``cute.copy`` into a tensor over ``p``, where
        ``p`` is a mapa address of this kernel's shared memory: the generic store of
        ``st.shared::cluster`` into the CTA ``p`` names, as (p, the bytes of the one element it
        stores, or None when not one element of a known size). None for anything else."""
        if op.name == "llvm.store" and len(op.operands) == 2 and \
                not ct.is_cluster_smem(op.operand_types[0]):
            p = self.val(op.operands[1])
            elem = _SCALAR_BYTES.get(op.operand_types[0])
        elif op.name == "cute.copy" and len(op.operands) == 3 and \
                ct.atom_kind(op.operand_types[0]) == "universal_copy" and \
                not ct.is_cluster_smem(op.operand_types[1]):
            p = self.dsmem_view_ptr(op.operands[2])
            layout = ct.quoted(op.operand_types[2])
            one = layout and ":" in layout[-1] and layout_image(layout[-1]) == frozenset({0})
            elem = _SCALAR_BYTES.get(element_type(op.operand_types[2]) or "") if one else None
        else:
            return None
        if not isinstance(p, Ptr) or p.cta is None or p.alloc is None:
            return None
        return p, elem

    def dsmem_write(self, op: Op, p: Ptr, elem: Optional[int], out) -> None:
        """A generic store of one element of `elem` bytes into the peer CTA `p.cta`, through the
        mapa address `p`: a DsmemStore, and its bytes as data of that CTA's allocation
        (extract/data.py) when the executing lanes' offsets are known."""
        off = lin_expr(p.lin, p.const, self.f) if elem else None
        extent = p.field_bytes() or (0, p.alloc.size)
        spans, lanes, base = self.element_bytes(off, elem or 0, extent)
        out.append(DataAccess(p.alloc.uid, spans, True, self.records_since_op(), self.loc(op),
                              lanes=lanes, base=base, elem=elem or 0,
                              extent=extent if base is not None else None, cta=p.cta))

    def dsmem_view_ptr(self, vid: int, depth: int = 0):
        """The pointer a tensor in distributed shared memory is a view over (through slices,
        mode groupings and `make_view`), or None."""
        info = self.k.value_info.get(vid)
        op = None if info is None or info.is_block_arg else info.op
        if op is None or not op.operands or depth > 16:
            return None
        if op.name == "cute.make_view":
            return self.val(op.operands[0])
        if op.name in ("cute.group_modes", "cute.slice", "cute.logical_divide"):
            return self.dsmem_view_ptr(op.operands[0], depth + 1)
        return None

    def st_cluster(self, op: Op, addr: int, out) -> None:
        """``st.shared::cluster [addr], v`` (one store, inline PTX): a generic store into the
        shared memory of the CTA a mapa address names (docs/semantics.md, "DSMEM stores")."""
        p = self.val(op.operands[addr]) if addr < len(op.operands) else None
        if not isinstance(p, Ptr) or p.cta is None:
            out.append(Unsupported("st.shared::cluster to an address the model does not follow",
                                   self.loc(op)))
            return
        if p.alloc is None:
            out.append(DsmemStore(p.cta, self.loc(op)))
            return
        text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
        width = re.match(r"\s*st\.shared::cluster\.[bsuf](\d+)\s", text)
        self.dsmem_write(op, p, int(width.group(1)) // 8 if width else None, out)

    def st_async(self, op: Op, m: re.Match, out) -> None:
        """``st.async...mbarrier::complete_tx::bytes[.vN].T [dst], v, [mbar]`` in inline PTX (quack's
        ``store_shared_remote_x4``); the vector ``v`` may be built by ``mov`` of operands into
        its ``.x/.y/.z/.w``."""
        vec, kind, bits = int(m.group(1) or 1), m.group(2), int(m.group(3))
        text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
        values: Optional[list[int]] = None
        token = m.group(5)
        if kind in "bsu" and bits == 32:
            if token.startswith("{") and "," in token:
                parts = [PTX_OPERAND.match(t.strip()) for t in token[1:-1].split(",")]
                values = [int(p.group(1)) for p in parts] if all(parts) else None
            elif PTX_OPERAND.match(token):
                values = [int(PTX_OPERAND.match(token).group(1))]
            else:  # a vector register filled by mov
                lanes = dict(re.findall(r"mov\.\w+\s+" + re.escape(token) +
                                        r"\.([xyzw])\s*,\s*\{?\$r?(\d+)\}?\s*;", text))
                values = [int(lanes[c]) for c in "xyzw"[:vec]] if len(lanes) == vec and \
                    all(c in lanes for c in "xyzw"[:vec]) else None
        if values is not None and (len(values) != vec or
                                   any(i >= len(op.operands) for i in values)):
            values = None
        dst, mbar = int(m.group(4)), int(m.group(6))
        if max(dst, mbar) >= len(op.operands):
            out.append(Unsupported("st.async: operands not understood", self.loc(op)))
            return
        self.async_store(op, op.operands[dst], [op.operands[i] for i in values] if values else None,
                         op.operands[mbar], vec * bits // 8, out)

    def store_async(self, op: Op, out) -> None:
        """``nvvm.store.async(dst, value, mbar)`` (``cute.arch.store_async_dsmem``):
        ``st.async...mbarrier::complete_tx::bytes`` of one i32 or a vector of them into a (remote)
        CTA's shared memory, completing its size in bytes on ``mbar``."""
        m = re.fullmatch(r"(?:vector<(\d+)x)?([if])(\d+)>?", op.operand_types[1]) \
            if len(op.operands) == 3 else None
        if m is None:
            out.append(Unsupported(f"{op.name}: operands not understood", self.loc(op)))
            return
        nbytes = int(m.group(1) or 1) * int(m.group(3)) // 8
        scalar = op.operand_types[1] == "i32"
        self.async_store(op, op.operands[0], [op.operands[1]] if scalar else None,
                         op.operands[2], nbytes, out)

    def async_store(self, op: Op, dst: int, values: Optional[list[int]], mbar: int, nbytes: int,
                    out) -> None:
        """An st.async, one per executing thread. Its 32-bit values are followed as shared words
        (syncir ``StAsync``) when they and the address are, it runs on one lane (or on a few, each
        with its own values: the lanes are expanded), and the words lie in the CTA of the
        barrier; otherwise it is a copy that completes its bytes on the barrier (``TmaLoad``),
        and the words it may overwrite are not modelled."""
        ref = self.bar_ref(mbar, op)
        if isinstance(ref, str):
            out.append(Unsupported(f"st.async: {ref}", self.loc(op)))
            return
        words = self.st_async_words(op, dst, values, ref, nbytes)
        if isinstance(words, str):
            self.note_smem_write(dst, f"st.async of {words}@{op.loc.short()}")
            if not self.async_data(op, dst, ref, nbytes, mbar, out):
                self.place_copy_of_bytes(op, self.val(dst), nbytes, mbar)
                out.append(TmaLoad(ref, Const(nbytes), self.loc(op)))
            return
        name, index, vals = words
        p = self.val(dst)
        if isinstance(index, Const):
            span = (4 * index.value, 4 * (index.value + len(vals)))
        else:  # the words of its field or allocation, whose bounds the model checks (words_at)
            span = p.field_bytes() or (0, p.alloc.size)
        self.place_st_async(op, p.alloc.uid, span, mbar)
        out.append(StAsync(WordRef(name, index), tuple(vals), ref, self.loc(op)))

    def async_data(self, op: Op, dst: int, ref: MBarRef, nbytes: int, mbar: int, out) -> bool:
        """An st.async of data (values the model does not follow) by one lane at a static
        address in the CTA of its barrier: shared data (extract/data.py) written asynchronously,
        pending until its bytes complete on the barrier. Its recorded accesses of unknown shared
        memory (inline PTX) become the destination's bytes and the barrier's."""
        p = self.val(dst)
        if not isinstance(p, Ptr) or p.alloc is None or p.lin or p.cta != ref.cta or \
                p.const % 4 or nbytes % 4:
            return False
        # one lane, or a few (each with its own peer CTA: the walker expands them per lane)
        if not (self.active.count == 1 or (self.active.exact and self.active.count <=
                                           MAX_LANE_SPLIT and p.cta is not None)):
            return False
        span = (p.const, p.const + nbytes)
        self.place_st_async(op, p.alloc.uid, span, mbar)
        out.append(DataAccess(p.alloc.uid, (span,), True, self.records_since_op(), self.loc(op),
                              ref, nbytes))
        return True

    def place_st_async(self, op: Op, alloc: int, span: Optional[tuple[int, int]], mbar: int):
        """The shared memory an st.async's inline PTX was recorded to touch anywhere (its
        `[addr]` operands) is its destination's bytes `span` of `alloc` and its barrier's."""
        b = self.val(mbar)
        arr = self.ctx.array(b.alloc, b.const, self.loc(op)) if isinstance(b, Ptr) and b.alloc \
            else None
        for recorded, mark in ((self.ctx.smem_writes, self.smem_mark),
                               (self.ctx.smem_uses, self.use_mark)):
            for i in range(mark, len(recorded)):
                a, rng, what = recorded[i]
                if a is None and arr is not None:
                    recorded[i] = (alloc, span, what)
                    recorded.append((b.alloc.uid, (arr[1], arr[1] + arr[2]), what))
                elif a == alloc and rng is None:
                    recorded[i] = (a, span, what)

    def place_copy_of_bytes(self, op: Op, p, nbytes: int, mbar: int) -> None:
        """An st.async kept as a copy of bytes still writes only its destination: its bytes, or
        at a computed offset the struct field its address starts in (an assumption the verdict
        states), and its barrier."""
        if not isinstance(p, Ptr) or p.alloc is None:
            return
        if not p.lin:
            self.place_st_async(op, p.alloc.uid, (p.const, p.const + nbytes), mbar)
            return
        field_ = p.field_bytes()
        if field_ is not None:
            self.ctx.assumptions.add("an st.async at a computed offset stays inside the struct "
                                     "field its address starts in")
            self.place_st_async(op, p.alloc.uid, field_, mbar)

    def st_async_words(self, op: Op, dst: int, values: Optional[list[int]], ref: MBarRef, nbytes: int):
        """(word array, first word index, values) of an st.async followed as word values, or why
        it is not."""
        p = self.val(dst)
        vals = [self.val(v) for v in values] if values else None
        if vals is None or 4 * len(vals) != nbytes:
            return "values that are not 32-bit integers"
        if not all(isinstance(v, Expr) and not opaque_reasons(v) for v in vals):
            return "values the model does not follow"
        if not isinstance(p, Ptr) or p.alloc is None:
            return "an address the model does not follow"
        if p.cta != ref.cta:
            return "words in another CTA than its mbarrier's"
        exprs = [*vals, *(x for x, _ in p.lin), *([] if p.cta is None else [p.cta])]
        lane = any(LANE in expr_vars(e) for e in exprs)
        if not (self.active.count == 1 or
                (lane and self.active.exact and self.active.count <= MAX_LANE_SPLIT)):
            return f"words by {self.active.count} lanes"
        words = self.words_at(op, p, len(vals))
        return words if isinstance(words, str) else (*words, vals)


MAPA = Effects(cluster="own")  # an address in a peer CTA
ST_ASYNC = Effects("own", "may", "own")  # its rule records the bytes it stores, in any CTA

HANDLERS = {
    "nvvm.mapa": rule(DsmemRules.mapa, MAPA),
    "nvvm.store.async": rule(DsmemRules.store_async, ST_ASYNC),
}
