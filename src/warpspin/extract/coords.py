"""Coordinate tensors: which coordinates of a global tensor a TMA store writes.

A TMA store's destination is a coordinate tensor (CuTe's arith-tuple tensor): an origin, one
integer per coordinate of the global tensor the descriptor was made from, and a static layout
whose strides are basis vectors (``1@0``, ``64@1``). The store writes the box the layout spans
from the origin (the hardware clips what lies outside the tensor, which only removes
coordinates). `store_box` evaluates the origin backwards through the ops that build the
destination (`local_tile`, `slice`, the divides, `group_modes`, `tma_partition` of a single
CTA, `get_iter`, `deref_arith_tuple_iter`, `get_leaves`, `make_int_tuple`,
`make_arith_tuple_iter`, `make_view`) from a kernel argument (the coordinate tensor
`make_tiled_tma_atom` returns), reading the integers it meets (a block index, a loop counter)
from the walker. Anything else is not followed: the caller says why.
"""
from __future__ import annotations

import re
from typing import Optional

from ..syncir.ir import Const, Expr
from . import cute_types as ct
from .cute_types import parse_tree
from .values import opaque_reasons

Vec = tuple[int, ...]

# ops whose result has its operand's origin (a layout changes, the origin does not)
SAME_ORIGIN = {"cute.group_modes": 0, "cute.zipped_divide": 0, "cute.make_view": 0,
               "cute.derefine": 0, "cute.flat_divide": 0, "cute.tiled_divide": 0,
               "cute.logical_divide": 0,
               "cute.get_iter": 0, "cute.deref_arith_tuple_iter": 0,
               "cute.make_arith_tuple_iter": 0}


def _leaves(t) -> list[str]:
    return [t] if isinstance(t, str) else [x for s in t for x in _leaves(s)]


def _basis(token: str, rank: int) -> Optional[Vec]:
    """A stride leaf as a vector over the `rank` coordinates (``0``, ``k@j``), or None."""
    if token == "0":
        return (0,) * rank
    m = re.fullmatch(r"(-?\d+)@(\d+)", token)
    if m is None or int(m.group(2)) >= rank:
        return None
    return tuple(int(m.group(1)) if j == int(m.group(2)) else 0 for j in range(rank))


def layout(type_str: str) -> Optional[tuple]:
    """(shape tree, stride tree, rank) of a coordinate tensor type
    ``!cute.coord_tensor<"(0,?)", "(64,32):(1@1,1@0)">``, or None."""
    qs = ct.quoted(type_str)
    if not type_str.startswith("!cute.coord_tensor") or len(qs) < 2 or ":" not in qs[-1]:
        return None
    try:
        origin = parse_tree(qs[0])
        shape, stride = (parse_tree(x.strip()) for x in qs[-1].split(":", 1))
    except (ValueError, IndexError):
        return None
    return shape, stride, len(_leaves(origin))


class CoordReader:
    """Evaluates coordinate tensors backwards from a value id; `w` is the walker (its `expr`
    for integers, its folder `f` and `leaf_coords`). `why` says what stopped it."""

    def __init__(self, w):
        self.w = w
        self.kernel = w.ctx.kernel
        self.why = ""

    def fail(self, why: str) -> None:
        self.why = self.why or why

    def origin(self, vid: int) -> Optional[tuple[Expr, ...]]:
        info = self.kernel.value_info.get(vid)
        if info is None:
            return self.fail(f"%{vid} is not known")
        t = info.type
        if info.op is None or info.is_block_arg:
            if info.is_block_arg and info.region == -1 and t.startswith("!cute.coord_tensor"):
                leaves = _leaves(parse_tree(ct.quoted(t)[0]))
                if all(re.fullmatch(r"-?\d+", x) for x in leaves):
                    return tuple(Const(int(x)) for x in leaves)
            return self.fail(f"the coordinates come from {t[:60]}, not from a kernel argument's "
                             "coordinate tensor")
        op = info.op
        if op.name in SAME_ORIGIN and op.operands:
            return self.origin(op.operands[SAME_ORIGIN[op.name]])
        if op.name == "cute_nvgpu.atom.tma_partition" and len(op.operands) == 5 and \
                info.index == 1:
            if ct.size(ct.layout_shape(op.operand_types[2])) != 1:
                return self.fail("a TMA partition over more than one CTA")
            return self.origin(op.operands[4])
        if op.name == "cute.make_int_tuple":
            return self.int_tuple(op)
        if op.name == "cute.make_identity_tensor":
            return tuple(Const(0) for _ in _leaves(parse_tree(ct.quoted(t)[0])))
        if op.name in ("cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D") and \
                len(op.operands) == 3:
            return self.thread_part(op)
        if op.name == "cute.slice" and len(op.operands) == 2:
            return self.slice(op)
        if op.name == "cute.local_tile" and len(op.operands) == 3:
            return self.local_tile(op)
        return self.fail(f"{op.name} at {op.loc.short()} builds the coordinates")

    def integer(self, vid: int) -> Optional[Expr]:
        """An integer: a dynamic leaf `cute.get_leaves` takes of a coordinate origin, or what
        the walker holds."""
        info = self.kernel.value_info.get(vid)
        op = info.op if info is not None and not info.is_block_arg else None
        if op is not None and op.name == "cute.get_leaves" and op.operands and \
                op.operand_types[0].startswith("!cute.int_tuple"):
            o = self.origin(op.operands[0])
            if o is None:
                return None
            leaves = _leaves(parse_tree(ct.quoted(op.operand_types[0])[0]))
            dyn = [x for x, t in zip(o, leaves) if t == "?"]
            # one result per leaf (a static one too), or per dynamic leaf
            picked = o if len(op.results) == len(leaves) == len(o) else \
                dyn if len(op.results) == len(dyn) else ()
            if info.index >= len(picked):
                return self.fail("get_leaves of an unexpected tuple")
            return picked[info.index]
        e = self.w.expr(vid)
        if opaque_reasons(e):
            return self.fail(f"a coordinate is not known: {opaque_reasons(e)[0]}")
        return e

    def int_tuple(self, op) -> Optional[tuple[Expr, ...]]:
        leaves = _leaves(parse_tree(ct.quoted(op.result_types[0])[0]))
        ops = iter(op.operands)
        out = []
        for x in leaves:
            if x == "?":
                e = self.integer(next(ops))
                if e is None:
                    return None
                out.append(e)
            elif re.fullmatch(r"-?\d+", x):
                out.append(Const(int(x)))
            else:
                return self.fail(f"an int tuple leaf {x}")
        return tuple(out)

    def _coord(self, vid: int) -> Optional[tuple]:
        """A `cute.make_coord`'s tree and its dynamic leaves."""
        info = self.kernel.value_info.get(vid)
        if info is None or info.op is None or info.op.name != "cute.make_coord":
            return self.fail("a coordinate not made by cute.make_coord")
        dyn = []
        for o in info.op.operands:
            e = self.integer(o)
            if e is None:
                return None
            dyn.append(e)
        tree = parse_tree(ct.int_tuple_value(info.type) or ct.quoted(info.type)[0])
        if sum(1 for x in _leaves(tree) if x == "?") != len(dyn):
            return self.fail("a coordinate whose leaves do not match its operands")
        return tree, dyn

    def _move(self, c, shape, stride, dyn: list, rank: int,
              out: list) -> bool:
        """Adds to `out` the (index, stride vector) terms that coordinate `c` moves the origin
        by in the mode (`shape`, `stride`)."""
        if c == "_":
            return True
        if isinstance(c, tuple):
            if not isinstance(shape, tuple) or len(c) != len(shape):
                return False
            return all(self._move(a, s, d, dyn, rank, out) for a, s, d in zip(c, shape, stride))
        x = dyn.pop(0) if c == "?" else Const(int(c))
        if isinstance(shape, str):
            vec = _basis(stride, rank)
            if vec is None:
                return False
            out.append((x, vec))
            return True
        extents = [int(s) if re.fullmatch(r"\d+", s) else None for s in _leaves(shape)]
        if None in extents:
            return False  # a dynamic extent inside a nested mode: the split is not known
        for y, d in zip(self.w.leaf_coords(x, tuple(extents)), _leaves(stride)):
            vec = _basis(d, rank)
            if vec is None:
                return False
            out.append((y, vec))
        return True

    def _shifted(self, base: tuple[Expr, ...], terms: list) -> tuple[Expr, ...]:
        f = self.w.f
        out = list(base)
        for x, vec in terms:
            for j, a in enumerate(vec):
                if a:
                    out[j] = f.binop("+", out[j], f.binop("*", x, Const(a)))
        return tuple(out)

    def _operands(self, op, tensor: int, coord: int):
        """(origin, (shape, stride, rank) as tuples of top-level modes, coordinate tree as a
        tuple, its dynamic leaves) of a slice-like op, or None (`why` says why)."""
        base, lay, c = self.origin(op.operands[tensor]), layout(op.operand_types[tensor]), \
            self._coord(op.operands[coord])
        if base is None or c is None:
            return None
        if lay is None:
            return self.fail(f"{op.name} at {op.loc.short()} of {op.operand_types[tensor][:60]}")
        shape, stride, rank = lay
        tree, dyn = c
        if not isinstance(shape, tuple):
            shape, stride = (shape,), (stride,)
        return base, (shape, stride, rank), tree if isinstance(tree, tuple) else (tree,), dyn

    def slice(self, op) -> Optional[tuple[Expr, ...]]:
        got = self._operands(op, 0, 1)
        if got is None:
            return None
        base, (shape, stride, rank), tree, dyn = got
        terms: list = []
        if len(tree) == 1 and len(shape) > 1 and tree[0] != "_":
            # one index into several modes: colexicographic over all their leaves
            tree, shape, stride = tree[0], tuple(shape), tuple(stride)
        if not self._move(tree, shape, stride, list(dyn), rank, terms):
            return self.fail(f"the slice at {op.loc.short()} of a layout it does not match")
        return self._shifted(base, terms)

    def local_tile(self, op) -> Optional[tuple[Expr, ...]]:
        from .rules.globals import _plain_tile
        tile = _plain_tile(op.operand_types[1])
        got = self._operands(op, 0, 2)
        if got is None:
            return None
        base, (shape, stride, rank), tree, dyn = got
        if tile is None or not (len(tree) == len(tile) == len(shape)):
            return self.fail(f"a local_tile at {op.loc.short()} whose tile is not plain extents "
                             "over the tensor's modes")
        dyn = list(dyn)
        terms = []
        for c, m, s, d in zip(tree, tile, shape, stride):
            if c == "_":
                continue
            vec = _basis(d, rank) if isinstance(d, str) and isinstance(s, str) else None
            if vec is None or isinstance(c, tuple):
                return self.fail(f"a local_tile at {op.loc.short()} of a nested mode")
            x = dyn.pop(0) if c == "?" else Const(int(c))
            terms.append((self.w.f.binop("*", x, Const(m)), vec))
        return self._shifted(base, terms)


    def thread_part(self, op) -> Optional[tuple[Expr, ...]]:
        """The origin of a thread's part of a coordinate tensor (`partition_S` / `_D` of a
        universal or cp.async tiled copy): the tile's, moved by the coordinates of the
        thread's first value (`thread_offset`) along the tile's first modes."""
        from .partitions import SAME_LAYOUT_ATOMS
        base, lay, c = self.origin(op.operands[1]), layout(op.operand_types[1]), \
            self._coord(op.operands[2])
        if base is None or c is None:
            return None
        tree, dyn = c
        tid = dyn[0] if tree == "?" and len(dyn) == 1 else \
            Const(int(tree)) if isinstance(tree, str) and tree.isdigit() else None
        if tid is None or lay is None or \
                ct.atom_kind(op.operand_types[0]) not in SAME_LAYOUT_ATOMS:
            return self.fail(f"{op.name} at {op.loc.short()}: not a thread index of a universal "
                             "tiled copy over a coordinate tensor")
        shape, stride, rank = lay
        modes = list(zip(shape, stride)) if isinstance(shape, tuple) else [(shape, stride)]
        crd = thread_offset(op.operand_types[0], tid, self.w.f)
        if crd is None or len(crd) > len(modes):
            return self.fail(f"{op.name} at {op.loc.short()}: its thread-value layout or tile "
                             "is not read")
        terms = []
        for x, (s, d) in zip(crd, modes):
            vec = _basis(d, rank) if isinstance(d, str) else None
            if vec is None:
                return self.fail(f"{op.name} at {op.loc.short()} of a nested mode")
            terms.append((x, vec))
        return self._shifted(base, terms)


def thread_offset(copy_t: str, tid: Expr, f) -> Optional[tuple[Expr, ...]]:
    """Where thread `tid`'s first value lies in a tiled copy's tile (type `copy_t`), one
    coordinate per tiler mode: CuTe's ``tile2thrfrg`` for a copy atom whose source and
    destination layouts are the reference's: the thread-value layout maps (tid, 0) to an index
    of the tile, read column-major over the tiler's extents (plain ``N:1`` or ``1:0`` modes).
    `f`: a folder (`binop`). None when the layout or tiler is not of that form."""
    layouts = ct.tiled_copy_layouts(copy_t)
    if layouts is None:
        return None
    (sh, _, st), parts = layouts[0].partition(":"), layouts[1]
    try:
        shape, stride = parse_tree(sh), parse_tree(st)
    except (ValueError, IndexError):
        return None
    if not (isinstance(shape, tuple) and len(shape) == 2):
        return None
    fl = ct.flat_layout(f'"{_text(shape[0])}:{_text(stride[0])}"')
    threads = list(zip(*fl)) if fl is not None else None
    if threads is None or not all(re.fullmatch(r"\d+:1|1:0", p) for p in parts):
        return None
    # (CuTe's idx2crd: the last mode takes the whole quotient, past its extent too)
    idx: Expr = Const(0)
    prefix = 1
    for i, (n, d) in enumerate(threads):
        leaf = f.binop("//", tid, Const(prefix))
        if i < len(threads) - 1:
            leaf = f.binop("%", leaf, Const(n))
        idx = f.binop("+", idx, f.binop("*", leaf, Const(d)))
        prefix *= n
    out, prefix = [], 1
    for i, p in enumerate(parts):
        n = int(p.split(":")[0])
        x = f.binop("//", idx, Const(prefix))
        out.append(f.binop("%", x, Const(n)) if i < len(parts) - 1 else x)
        prefix *= n
    return tuple(out)


def _text(tree) -> str:
    return tree if isinstance(tree, str) else "(" + ",".join(_text(t) for t in tree) + ")"


def box(type_str: str) -> Optional[tuple[int, ...]]:
    """The extent, per coordinate, of the box a coordinate tensor of this type spans from its
    origin (its bounding box: leaves of static extent on non-negative basis strides), or
    None."""
    lay = layout(type_str)
    if lay is None:
        return None
    shape, stride, rank = lay
    hi = [0] * rank
    for s, d in zip(_leaves(shape), _leaves(stride)):
        vec = _basis(d, rank)
        if vec is None or not re.fullmatch(r"\d+", s) or any(a < 0 for a in vec):
            return None
        for j, a in enumerate(vec):
            hi[j] += a * (int(s) - 1)
    return tuple(h + 1 for h in hi)


def store_box(w, vid: int) -> tuple[Optional[tuple[Expr, ...]], Optional[tuple[int, ...]], str]:
    """(origin, extents, why not) of the coordinates a TMA store with destination `vid` writes."""
    r = CoordReader(w)
    extents = box(w.ctx.kernel.value_info[vid].type) if vid in w.ctx.kernel.value_info else None
    origin = r.origin(vid)
    if extents is None:
        return None, None, "its destination's layout is not a static box"
    if origin is None or len(origin) != len(extents):
        return None, None, r.why or "its coordinates are not known"
    return origin, extents, ""
