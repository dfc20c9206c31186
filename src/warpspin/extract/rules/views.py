"""Pointers, tensors and coordinates: shared-memory allocations, iterators and offsets, views,
slices (and the stage a slice selects), int tuples, coordinates and their indices.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ir import Const, Expr, Loc
from .. import cute_types as ct
from ..values import (Alloc, Leaves, Ptr, Region, SliceCoord, Stage, Unknown, View, opaque_reasons,
                      lin_add, lin_scale, linear, opaque)
from ..effects import NONE, rule


def _assigned_name(loc: Loc) -> Optional[str]:
    """`sX` for an allocation written `sX = smem.allocate_tensor(...)` on its source line."""
    import linecache

    m = re.match(r"\s*([A-Za-z_]\w*)\s*=[^=]", linecache.getline(loc.file, loc.line)) \
        if loc.file else None
    return m.group(1) if m else None


class ViewRules:
    """The walker's rules for pointers, views and coordinates (mixed into `WarpWalker`)."""

    def alloca(self, op: Op, out) -> None:
        t = op.result_types[0]
        if not ct.is_smem(t):
            self.env[op.result] = Unknown("register array")
            return
        fields = []
        for f in op.attrs.get("smem.struct_fields") or []:
            name, size, off = str(f).split(":")
            fields.append((name, int(size), int(off)))
        self.env[op.result] = Alloc(op.uid, ct.memref_bytes(t) or 0, tuple(fields))
        self.ctx.alloc_fields[op.uid] = tuple(fields)
        name = _assigned_name(self.loc(op))
        if name:
            self.ctx.alloc_names[op.uid] = name

    def get_iter(self, op: Op, out) -> None:
        base = self.val(op.operands[0])
        if isinstance(base, View):
            if base.stage is not None:  # a view rebuilt on this pointer keeps the stage
                self.ptr_stages[op.result] = (base.stage, base.byte_range)
            self.env[op.result] = base.ptr
        elif isinstance(base, Alloc):
            self.env[op.result] = Ptr(base, elem=ct.elem_bytes(op.result_types[0]) or 1)
        else:
            self.set_unknown_results(op)

    def slice_(self, op: Op, out) -> None:
        """A slice, and the stage it selects when it fixes the stage mode of a staged buffer
        (`slice_stage`)."""
        v = self.val(op.operands[0]) if len(op.operands) == 2 else None
        stage = self.slice_stage(op, v)
        self.slice_view(op, v)
        self.gmem_slice(op)
        r = self.env.get(op.result)
        if stage is not None and isinstance(r, (View, Region)):
            self.env[op.result] = replace(r, stage=stage)

    def slice_stage(self, op: Op, v) -> Optional[Stage]:
        """The stage a slice selects: it fixes a top-level mode of a shared-memory tensor (not
        already a stage) whose single non-unit leaf spans all of the tensor's bytes (the stage
        mode of quack's and CUTLASS's staging buffers, `sD[None, None, stage]`; other modes it
        fixes stay inside a stage: `tCrA[None, None, k_block, stage]`), with an index the
        model follows."""
        if not isinstance(v, (View, Region)) or v.stage is not None:
            return None
        text = ct.int_tuple_value(op.operand_types[1]) or ""
        mode = ct.stage_mode(op.operand_types[0], text)
        # a wgmma descriptor view counts its offsets in 16-byte units (PTX 9.7.15.5.1 matrix
        # descriptor: start address >> 4)
        eb = 16 if op.operand_types[0].startswith("!cute_nvgpu.smem_desc_view") else \
            ct.elem_bytes(op.operand_types[0])
        if mode is None or not eb:
            return None
        entry, n, d, before = mode
        lo, hi = v.byte_range if isinstance(v, View) else (v.lo, v.hi)
        alloc = v.ptr.alloc.uid if isinstance(v, View) else v.alloc
        if n * d * eb != hi - lo:
            return None
        index = self.slice_entry(op, entry, before)
        return None if index is None else Stage(index, n, d * eb, alloc, lo, hi)

    def slice_entry(self, op: Op, entry: str, before: int) -> Optional[Expr]:
        """The index a slice's coordinate entry names (``?``: its dynamic leaf after `before`
        others), when it is a value the model follows."""
        if entry == "?":
            c = self.val(op.operands[1])
            if not isinstance(c, SliceCoord) or len(c.dynamic) <= before:
                return None
            index = c.dynamic[before]
        else:
            index = Const(int(entry))
        return index if isinstance(index, Expr) and not opaque_reasons(index) else None

    def slice_view(self, op: Op, v) -> None:
        """``cute.slice(view, coord)`` of a shared-memory tensor with a flat static layout: the
        modes the coordinate fixes move the pointer (a View when the offset is static: a
        constant coordinate, or a stride of 0); the ``_`` modes stay."""
        text = ct.int_tuple_value(op.operand_types[1]) if isinstance(v, View) else None
        modes = text.strip("()").split(",") if text and "(" not in text.strip("()") else None
        if not isinstance(v, View) or modes is None:
            self.set_unknown_results(op)
            return
        c = self.val(op.operands[1])
        dynamic = list(c.dynamic) if isinstance(c, SliceCoord) else None
        if dynamic is None and "?" not in modes:
            dynamic = []
        if dynamic is None or modes.count("?") != len(dynamic):
            self.set_unknown_results(op)
            return
        if len(modes) != len(v.shape):  # a coordinate of the top-level modes of a nested layout
            modes, dynamic = self.leaf_slice(modes, dynamic, op.operand_types[0], len(v.shape))
            if modes is None:
                self.set_unknown_results(op)
                return
        off, terms, shape, stride = 0, [], [], []
        for m, n, d in zip(modes, v.shape, v.stride):
            m = m.strip()
            if m == "_":
                shape.append(n)
                stride.append(d)
                continue
            x = dynamic.pop(0) if m == "?" else Const(int(m)) if re.fullmatch(r"-?\d+", m) else None
            if d == 0:
                continue
            if isinstance(x, Const):
                off += x.value * d * v.elem
            elif isinstance(x, Expr) and not opaque_reasons(x):
                terms.append((x, d * v.elem))  # a dynamic coordinate (a stage index)
            else:
                self.set_unknown_results(op)
                return
        ptr = replace(v.ptr, const=v.ptr.const + off, lin=lin_add(v.ptr.lin, tuple(terms)))
        self.env[op.result] = View(ptr, tuple(shape) or (1,), tuple(stride) or (0,), v.elem,
                                   v.byte_range if ptr.lin else None)

    def leaf_slice(self, modes: list, dynamic: list, type_str: str, leaves: int):
        """A slicing coordinate of a nested layout's top-level modes as one per leaf: `_` keeps
        every leaf of its mode, an index fixes each (`leaf_coords`); (None, None) if the type's
        modes do not match."""
        shapes = ct.mode_leaves(type_str)
        if shapes is None or len(shapes) != len(modes) or sum(map(len, shapes)) != leaves:
            return None, None
        dyn = iter(dynamic)
        out_modes: list = []
        out_dyn: list = []
        for m, sh in zip(modes, shapes):
            m = m.strip()
            if m == "_":
                out_modes += ["_"] * len(sh)
                continue
            x = next(dyn) if m == "?" else Const(int(m)) if re.fullmatch(r"-?\d+", m) else None
            if x is None:
                return None, None
            out_modes += ["?"] * len(sh)
            out_dyn += self.leaf_coords(x, sh)
        return out_modes, out_dyn

    def leaf_coords(self, x: Expr, shape: tuple[int, ...]) -> list[Expr]:
        """The leaf coordinates of index `x` into a mode of leaf extents `shape` (colexicographic,
        as CuTe maps a 1-D coordinate into a nested mode). The last leaf takes the rest
        (`x // prod`, no modulo), so an index past the mode lands past it, as on the hardware,
        instead of wrapping onto another element."""
        out, prod = [], 1
        for j, n in enumerate(shape):
            q = x if prod == 1 else self.f.binop("//", x, Const(prod))
            last = j == len(shape) - 1
            out.append(q if last else Const(0) if n == 1 else self.f.binop("%", q, Const(n)))
            prod *= n
        return out

    def element_coords(self, view: View, coord: int, type_str: str) -> Optional[list]:
        """The per-leaf coordinates of the element `coord` names in `view` (a coordinate of its
        top-level modes when its layout is nested), or None."""
        c = self.val(coord)
        coords = list(c.items) if isinstance(c, Leaves) else [c]
        if len(coords) == len(view.shape):
            return coords
        if len(coords) == 1 and isinstance(coords[0], Expr) and None not in view.shape:
            # a 1-D index: colexicographic
            return list(self.leaf_coords(coords[0], tuple(view.shape)))
        shapes = ct.mode_leaves(type_str)
        if shapes is None or len(shapes) != len(coords) or \
                sum(map(len, shapes)) != len(view.shape) or \
                not all(isinstance(x, Expr) for x in coords):
            return None
        return [y for x, sh in zip(coords, shapes) for y in
                (self.leaf_coords(x, sh) if len(sh) > 1 else [x])]

    def add_offset(self, op: Op, out) -> None:
        p = self.val(op.operands[0])
        if not isinstance(p, Ptr):
            self.set_unknown_results(op)
            return
        eb = ct.elem_bytes(op.operand_types[0]) or p.elem
        terms, const = linear(self.expr(op.operands[1]))
        self.env[op.result] = Ptr(p.alloc, lin_add(p.lin, lin_scale(terms, eb)),
                                  p.const + const * eb, p.elem, p.cta, p.space)

    def make_int_tuple(self, op: Op, out) -> None:
        t = op.result_types[0]
        static = ct.static_int(t)
        if static is not None:
            self.env[op.result] = Const(static)
        elif ct.is_dynamic_scalar(t) and len(op.operands) == 1:
            self.env[op.result] = self.val(op.operands[0])
        else:
            self.set_unknown_results(op)

    def hier_coord(self, op: Op, out) -> None:
        """``cute.get_hier_coord(idx, layout)`` on a static layout: the coordinate whose image
        is ``idx``, one leaf expression per mode (a select over the few indices it can take)."""
        flat = ct.flat_layout(op.operand_types[1])
        idx = self.expr(op.operands[0])
        if flat is None or len(flat[0]) > 8 or ct.size(flat[0]) > 64:
            self.set_unknown_results(op)
            return
        shape, stride = flat
        table: dict[int, tuple[int, ...]] = {}
        for n in range(ct.size(shape)):
            crd, r = [], n
            for s_ in shape:
                crd.append(r % s_)
                r //= s_
            table.setdefault(sum(c * d for c, d in zip(crd, stride)), tuple(crd))
        items = sorted(table.items(), reverse=True)
        compact = sorted(table) == list(range(ct.size(shape)))
        leaves = []
        for i in range(len(shape)):
            # a compact layout: idx is taken to lie in its codomain (the last case needs no test)
            e: Expr = Const(items[0][1][i]) if compact else \
                opaque(f"get_hier_coord out of range@{op.loc.short()}")
            for image, crd in items[1:] if compact else items:
                e = self.f.select(self.f.binop("==", idx, Const(image)), Const(crd[i]), e)
            leaves.append(e)
        self.env[op.result] = Leaves(tuple(leaves))

    def crd2idx(self, op: Op, out) -> None:
        """``cute.crd2idx(coord, layout)`` on a static layout whose flat modes the coordinate
        names one leaf each: the sum of leaf times stride (a ``_`` leaf, as in
        ``slice_and_offset``, counts 0). Any other form is a value not followed."""
        flat = ct.flat_layout(op.operand_types[1])
        text = ct.int_tuple_value(op.operand_types[0]) or ""
        leaves = re.findall(r"\?|_|-?\d+", text)
        v = self.val(op.operands[0])
        dynamic = list(v.dynamic if isinstance(v, SliceCoord) else
                       v.items if isinstance(v, Leaves) else (v,) if isinstance(v, Expr) else ())
        if isinstance(v, Leaves):  # its items are every leaf, static ones included
            dynamic = [x for x, t in zip(v.items, leaves) if t == "?"] \
                if len(v.items) == len(leaves) else []
        if flat is None or len(flat[0]) != len(leaves) or leaves.count("?") != len(dynamic):
            self.set_unknown_results(op)
            return
        dyn = iter(dynamic)
        idx: Expr = Const(0)
        for leaf, stride in zip(leaves, flat[1]):
            c = next(dyn) if leaf == "?" else Const(0) if leaf == "_" else Const(int(leaf))
            idx = self.f.binop("+", idx, self.f.binop("*", c, Const(stride)))
        self.env[op.result] = idx

    def get_leaves(self, op: Op, out) -> None:
        self.coordinate_leaves(op)
        v = self.val(op.operands[0])
        for i, (r, t) in enumerate(zip(op.results, op.result_types)):
            static = ct.static_int(t)
            if static is not None:
                self.env[r] = Const(static)
            elif isinstance(v, Leaves) and i < len(v.items):
                self.env[r] = v.items[i]
            elif len(op.results) == 1:
                self.env[r] = v
            elif self.is_uniform(v) and self.ctx.launch_uniform(op) and ct.is_dynamic_scalar(t):
                # a leaf of a launch-uniform shape (a kernel tensor's extent): a parameter
                self.env[r] = self.ctx.param(self.origin(op, i),
                                             f"leaf {i} of {op.name} at {op.loc.short()}",
                                             self.loc(op), same_as=self.ctx.vkey(r) or ("op", op.uid, i))
            else:
                self.env[r] = Unknown(f"leaf {i}@{op.loc.short()}",
                                      self.is_uniform(v) and self.ctx.launch_uniform(op))

    def copy_partition(self, op: Op, out) -> None:
        """``partition_S`` / ``partition_D``: a view (stays inside its tensor); of a global tile
        `gmem_base` places, also where the thread's part begins (GlobalRules.gmem_partition)."""
        self.set_unknown_results(op)
        self.gmem_partition(op)

    def coordinate_leaves(self, op: Op) -> None:
        """The leaves of a coordinate an identity (coordinate) tensor holds, `tXcX[0]`: its
        origin as coords.py reads it back (a thread's part of it included), kept aside for the
        ownership proof (`coord_values`: which lanes may run a branch on them, where they
        store); the model's values stay as they were."""
        from ..coords import CoordReader, _leaves
        from ..cute_types import parse_tree
        src = self.ctx.kernel.value_info.get(op.operands[0]) if op.operands else None
        if self.ctx.grid_why is None or src is None or src.op is None or \
                src.op.name != "cute.deref_arith_tuple_iter":
            return
        origin = CoordReader(self).origin(op.operands[0])
        leaves = _leaves(parse_tree(ct.quoted(op.operand_types[0])[0]))
        if origin is None or len(origin) != len(leaves) or \
                any(opaque_reasons(x) for x in origin):
            return
        picked = origin if len(op.results) == len(leaves) else \
            [x for x, t in zip(origin, leaves) if t.startswith("?")]
        if len(picked) == len(op.results):
            for r, x in zip(op.results, picked):
                self.coord_values[r] = x

    def make_view(self, op: Op, out) -> None:
        """A shared-memory tensor on a pointer with a static byte offset and a static layout."""
        p = self.val(op.operands[0]) if op.operands else None
        t = op.result_types[0] if op.result_types else ""
        flat, eb = ct.flat_layout(t), ct.elem_bytes(t)
        staged = self.ptr_stages.get(op.operands[0]) if op.operands else None
        if isinstance(p, Ptr) and p.space == "smem" and p.alloc is not None and not p.lin \
                and p.cta is None and flat is not None and eb and ct.is_smem(t):
            self.env[op.result] = View(p, flat[0], flat[1], eb, stage=staged and staged[0])
        elif staged is not None and ct.is_smem(t):  # a tensor on a staged view's pointer
            stage, (lo, hi) = staged
            self.env[op.result] = Region(stage.alloc, lo, hi, stage)
        elif isinstance(p, Ptr) and p.space == "smem" and p.alloc is not None and \
                p.cta is None and ct.is_smem(t):
            # at a computed offset (a slot of a CLC response array): somewhere in its allocation
            self.env[op.result] = Region(p.alloc.uid, 0, p.alloc.size)
            self.ctx.assumptions.add(
                f"{self.ctx.alloc_names.get(p.alloc.uid) or 'shared memory'}: a tensor made on a "
                "pointer into a shared-memory allocation at a computed offset stays inside it")
        else:
            self.set_unknown_results(op)

    def make_coord(self, op: Op, out) -> None:
        """A coordinate: one expression, or the leaves of a tuple (static ones from the type)."""
        text = ct.int_tuple_value(op.result_types[0]) or ""
        if "_" in text and text.count("?") == len(op.operands) > 0:
            # a slicing coordinate: its dynamic leaves in order (`slice_` reads the `_`s and
            # static leaves from the coordinate's type)
            self.env[op.result] = SliceCoord(tuple(self.expr(o) for o in op.operands))
            return
        leaves = re.findall(r"\?|-?\d+", text)
        if len(leaves) <= 1 or leaves.count("?") != len(op.operands):
            self.make_int_tuple(op, out)
            return
        ops = iter(op.operands)
        self.env[op.result] = Leaves(tuple(self.expr(next(ops)) if x == "?" else Const(int(x))
                                           for x in leaves))


HANDLERS = {
    "cute.memref.alloca": rule(ViewRules.alloca, NONE),
    "cute.make_view": rule(ViewRules.make_view, NONE),
    "cute.get_iter": rule(ViewRules.get_iter, NONE),
    "cute.slice": rule(ViewRules.slice_, NONE),
    "cute.add_offset": rule(ViewRules.add_offset, NONE),
    "cute.make_int_tuple": rule(ViewRules.make_int_tuple, NONE),
    "cute.make_coord": rule(ViewRules.make_coord, NONE),
    "cute.get_hier_coord": rule(ViewRules.hier_coord, NONE),
    # a flat layout's hierarchical coordinate is its flat one (flat_layout flattens both)
    "cute.get_flat_coord": rule(ViewRules.hier_coord, NONE),
    "cute.crd2idx": rule(ViewRules.crd2idx, NONE),
    "cute.get_leaves": rule(ViewRules.get_leaves, NONE),
    "cute.tiled.copy.partition_S": rule(ViewRules.copy_partition, NONE),
    "cute.tiled.copy.partition_D": rule(ViewRules.copy_partition, NONE),
}
