"""Where a TMA descriptor in global memory lies, read from its pointer's def chain: a kernel
argument plus a byte offset linear in values the extractor follows (slices of a tensor argument
with a static layout, `add_offset`, casts). Two descriptor pointers of one thread name one
descriptor when their addresses are equal, and two descriptors when they differ by a constant of
at least a descriptor's size; anything else is not decided here."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from ..frontend.mlir_data import TracedKernel
from ..syncir.ir import Expr, Var
from . import cute_types as ct
from .values import SliceCoord, lin_add, lin_scale, linear, opaque_reasons

# a tensormap is an opaque 128-byte object (PTX ISA 5.5.8; CUtensorMap, TensorMapManager's slots)
DESCRIPTOR_BYTES = 128
TENSORMAP_CASTS = {"cute.ptrtoint", "cute.inttoptr", "cute.assume", "llvm.ptrtoint",
                   "llvm.inttoptr", "builtin.unrealized_conversion_cast", "cute.recast_iter"}


@dataclass(frozen=True)
class Address:
    """Kernel argument `arg` + sum(coefficient * atom for atom, coefficient in `terms`) + `const`
    bytes."""

    arg: int
    terms: frozenset
    const: int


def same_descriptor(a: Address, b: Address) -> Optional[bool]:
    """True: one descriptor; False: two that share no byte (other arguments: the host's
    contract that tensors do not overlap); None: not decided (overlapping, or offsets whose
    difference is not a constant)."""
    if a.arg != b.arg:
        return False
    if a.terms != b.terms:
        return None
    d = abs(a.const - b.const)
    return True if d == 0 else False if d >= DESCRIPTOR_BYTES else None


def address(k: TracedKernel, vid: int, val: Callable, expr: Callable,
            depth: int = 0) -> Optional[Address]:
    """The address of the global pointer or tensor `vid` (None: not followed). `val` and `expr`
    are the walker's value and integer-expression lookups."""
    info = k.value_info.get(vid)
    if info is None or depth > 32:
        return None
    arg = k.arg_index(vid)
    if arg is not None:
        return Address(arg, frozenset(), 0) if "gmem" in info.type else None
    op = None if info.is_block_arg else info.op
    if op is None or not op.operands:
        return None
    base = address(k, op.operands[0], val, expr, depth + 1)
    if base is None:
        return None
    if op.name in TENSORMAP_CASTS or op.name == "cute.get_iter":
        return base
    if op.name == "cute.add_offset" and len(op.operands) == 2:
        eb = ct.elem_bytes(op.operand_types[0])
        off = expr(op.operands[1])
        if not eb or not isinstance(off, Expr) or opaque_reasons(off):
            return None
        terms, const = linear(off)
        return _moved(base, lin_scale(terms, eb), const * eb)
    if op.name == "cute.slice" and len(op.operands) == 2:
        moved = _slice_offset(op.operand_types[0], op.operand_types[1], val(op.operands[1]))
        return None if moved is None else _moved(base, *moved)
    return None


def _moved(a: Address, terms, const: int) -> Address:
    return Address(a.arg, frozenset(lin_add(tuple(a.terms), tuple(terms))), a.const + const)


def _slice_offset(tensor_type: str, coord_type: str, coord) -> Optional[tuple[tuple, int]]:
    """The byte offset (terms, constant) at which slicing a tensor of a static layout by a
    coordinate starts: a static entry moves by its colexicographic position in its mode, a
    dynamic one (`?`) by its value times the stride of the mode's one non-unit leaf."""
    eb = ct.elem_bytes(tensor_type)
    qs = ct.quoted(tensor_type)
    text = ct.int_tuple_value(coord_type)
    if not eb or not qs or ":" not in qs[-1] or text is None:
        return None
    try:
        shape, stride = (ct.parse_shape(x) for x in qs[-1].split(":", 1))
    except (ValueError, IndexError):
        return None
    shape = shape if isinstance(shape, tuple) else (shape,)
    stride = stride if isinstance(stride, tuple) else (stride,)
    entries = ct._top_level(text)
    dynamic = list(coord.dynamic) if isinstance(coord, SliceCoord) else []
    if len(entries) != len(shape) or len(stride) != len(shape) or \
            sum(e == "?" for e in entries) != len(dynamic):
        return None
    terms, const = (), 0
    for e, n, d in zip(entries, shape, stride):
        leaves = list(zip(ct.flatten(n), ct.flatten(d)))
        if e == "_":
            continue
        if None in (x for leaf in leaves for x in leaf):
            return None
        if re.fullmatch(r"\d+", e):
            i = int(e)
            for extent, step in leaves:  # colexicographic: the first leaf varies fastest
                const += (i % extent) * step * eb
                i //= extent
            continue
        big = [(extent, step) for extent, step in leaves if extent != 1]
        x = dynamic.pop(0) if e == "?" else None
        if len(big) > 1 or not isinstance(x, Expr) or opaque_reasons(x):
            return None
        if not big:
            continue
        t, c = linear(x)
        terms, const = lin_add(terms, lin_scale(t, big[0][1] * eb)), const + c * big[0][1] * eb
    return terms, const



def one_slot_per_cta(addresses: list[Optional[Address]]) -> bool:
    """Whether the descriptors of two CTAs (clusters of one CTA) never share a byte: every
    address is s * clusterid + k in one argument with one stride s, and one CTA's descriptors
    span at most |s| bytes (`ws[bidx, i, None]`, TensorMapManager's slots)."""
    if not addresses or any(a is None for a in addresses) or \
            len({(a.arg, a.terms) for a in addresses}) != 1:
        return False
    terms = tuple(addresses[0].terms)
    if len(terms) != 1 or not isinstance(terms[0][0], Var) or \
            not terms[0][0].name.startswith("clusterid_"):
        return False
    ks = [a.const for a in addresses]
    return max(ks) - min(ks) + DESCRIPTOR_BYTES <= abs(terms[0][1])
