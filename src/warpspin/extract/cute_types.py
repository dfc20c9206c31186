"""Reading static facts out of CuTe type strings (static integers live in types, not operands):
``!cute.int_tuple<"4">``, ``!cute.ptr<i64, smem, align<8>>``,
``!cute.memref<f32, smem, align<1024>, "((4096,1),(1)):((1,0),(0))">``, atom types with
``copy_bits = N``."""
from __future__ import annotations

import re
from typing import Optional, Union

ELEM_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i128": 16, "f16": 2, "bf16": 2,
              "f32": 4, "f64": 8, "f8E4M3FN": 1, "f8E5M2": 1, "tf32": 4}

Shape = Union[int, None, tuple]  # None = dynamic ("?")


def quoted(type_str: str) -> list[str]:
    return re.findall(r'"([^"]*)"', type_str)


def int_tuple_value(type_str: str) -> Optional[str]:
    """The text inside ``!cute.int_tuple<"...">`` (or shape/stride/coord), else None."""
    m = re.match(r'!cute\.(int_tuple|shape|stride|coord)<"([^"]*)">', type_str)
    return m.group(2) if m else None


def static_int(type_str: str) -> Optional[int]:
    """A static scalar held in an int-tuple-like type: ``!cute.int_tuple<"4">`` -> 4."""
    v = int_tuple_value(type_str)
    if v is not None and re.fullmatch(r"-?\d+", v):
        return int(v)
    return None


def is_dynamic_scalar(type_str: str) -> bool:
    """``!cute.int_tuple<"?">`` / ``"?{div=64}"``: one dynamic leaf."""
    v = int_tuple_value(type_str)
    return v is not None and re.fullmatch(r"\?(\{[^}]*\})?", v) is not None


def elem_bytes(type_str: str) -> Optional[int]:
    """Element size of ``!cute.ptr<T, ...>`` / ``!cute.memref<T, ...>``."""
    m = re.match(r"!cute\.(ptr|memref)<(\w+)", type_str)
    return ELEM_BYTES.get(m.group(2)) if m else None


def memref_space(type_str: str) -> str:
    """``!cute.memref<f32, tmem, ...>`` -> ``tmem`` (its address space; "" for other types)."""
    m = re.match(r"!cute\.memref<[^,]+,\s*(\w+)", type_str)
    return m.group(1) if m else ""


def is_smem(type_str: str) -> bool:
    return ", smem" in type_str or "ptr<3>" in type_str


def is_cluster_smem(type_str: str) -> bool:
    """A ``shared::cluster`` address (``!llvm.ptr<7>``, a CuTe ``dsmem`` pointer or tensor): any
    CTA's shared memory."""
    return "ptr<7>" in type_str or ", dsmem" in type_str


def parse_tree(text: str):
    """``"((?{div=8},1),_)"`` -> (('?', '1'), '_'): the leaves of a nested tuple text, as
    written (``?`` for a dynamic one, ``_``, an integer, a basis ``k@j``)."""
    pos = 0

    def parse():
        nonlocal pos
        if text[pos] == "(":
            pos += 1
            items = []
            while text[pos] != ")":
                items.append(parse())
                if text[pos] == ",":
                    pos += 1
            pos += 1
            return tuple(items)
        m = re.compile(r"-?\d+(@\d+)*|\?(\{[^}]*\})?|_").match(text, pos)
        if not m:
            raise ValueError(f"bad tuple {text!r} at {pos}")
        pos = m.end()
        return "?" if m.group(0).startswith("?") else m.group(0)

    return parse()


def parse_shape(text: str) -> Shape:
    """``"((4096,1),(1))"`` -> ((4096, 1), (1,)); ``?`` leaves -> None."""
    def leaf(t):
        return tuple(leaf(x) for x in t) if isinstance(t, tuple) else None if t == "?" else int(t)

    return leaf(parse_tree(text))


def size(shape: Shape) -> Optional[int]:
    if shape is None:
        return None
    if isinstance(shape, int):
        return shape
    total = 1
    for s in shape:
        n = size(s)
        if n is None:
            return None
        total *= n
    return total


def layout_shape(type_str: str) -> Optional[Shape]:
    """Shape of the (last) quoted ``"shape:stride"`` layout in a memref/layout/tensor type."""
    qs = quoted(type_str)
    if not qs:
        return None
    text = qs[-1].split(":")[0]
    try:
        return parse_shape(text)
    except (ValueError, IndexError):
        return None


def memref_bytes(type_str: str) -> Optional[int]:
    eb, shape = elem_bytes(type_str), layout_shape(type_str)
    n = size(shape) if shape is not None else None
    return eb * n if eb is not None and n is not None else None


def copy_bits(type_str: str) -> Optional[int]:
    m = re.search(r"copy_bits = (\d+)", type_str)
    return int(m.group(1)) if m else None


def rest_size(type_str: str) -> Optional[int]:
    """Product of the modes after the first of a partitioned tensor type (the atom repeats)."""
    shape = layout_shape(type_str)
    if not isinstance(shape, tuple) or not shape:
        return 1 if isinstance(shape, int) else None
    return size(tuple(shape[1:])) if len(shape) > 1 else 1


def atom_repeats(dst_type: str, bits: int) -> int:
    """How often an atom of ``bits`` covers the first mode of the destination: a TMA partition
    is ``((atom_v, rest_v), rest...)`` and ``rest_v`` > 1 when the box is narrower than the tile
    (flash-attn's 128-wide head dim loaded as two 64-column swizzled boxes: dst
    ``((8192,2),(1))``, atom 8192 elements).  1 when it cannot be told."""
    shape, eb = layout_shape(dst_type), elem_bytes(dst_type)
    if not isinstance(shape, tuple) or not shape or not eb or bits % (8 * eb):
        return 1
    n, atom = size(shape[0]), bits // (8 * eb)
    return n // atom if n and atom and n > atom and n % atom == 0 else 1


def atom_kind(type_str: str) -> str:
    """``!cute_nvgpu.atom.tma_load<...>`` -> ``tma_load`` (also the atom of a tiled copy,
    ``!cute.tiled_copy<!cute_nvgpu.atom.simt_async_copy<...>, ...>``)."""
    m = re.match(r"(?:!cute\.tiled_copy<)?!cute_nvgpu\.atom\.(\w+)", type_str)
    return m.group(1) if m else ""


def flatten(t) -> list:
    if isinstance(t, tuple):
        return [x for i in t for x in flatten(i)]
    return [t]


def mode_leaves(type_str: str) -> Optional[list[tuple[int, ...]]]:
    """The leaf extents of each top-level mode of a static layout (``"(2,(2,1)):(2,(1,0))"`` ->
    [(2,), (2, 1)]), or None."""
    qs = quoted(type_str)
    if not qs or ":" not in qs[-1]:
        return None
    try:
        shape = parse_shape(qs[-1].split(":", 1)[0])
    except (ValueError, IndexError):
        return None
    modes = [tuple(flatten(m)) for m in (shape if isinstance(shape, tuple) else (shape,))]
    return None if any(None in m for m in modes) else modes


def flat_layout(type_str: str) -> Optional[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``!cute.layout<"(1,2,1,1):(0,1,0,0)">`` -> ((1, 2, 1, 1), (0, 1, 0, 0)); static only."""
    qs = quoted(type_str)
    if not qs or ":" not in qs[-1]:
        return None
    sh, st = qs[-1].split(":", 1)
    try:
        shape, stride = flatten(parse_shape(sh)), flatten(parse_shape(st))
    except (ValueError, IndexError):
        return None
    if len(shape) != len(stride) or None in shape or None in stride:
        return None
    return tuple(shape), tuple(stride)


def _top_level(text: str) -> list[str]:
    """The top-level entries of a tuple text ``"(_,(0,?),3)"``; a scalar is one entry."""
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        return [text]
    out, depth, cur = [], 0, ""
    for ch in text[1:-1]:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    out.append(cur.strip())
    return out


def stage_mode(tensor_type: str, coord_text: str) -> Optional[tuple[str, int, int, int]]:
    """When slicing a tensor of type `tensor_type` by the coordinate `coord_text` fixes, with a
    scalar (``?`` or an integer), a top-level mode with one leaf of extent > 1 (the others of
    extent 1) whose extent times stride spans the tensor, and every other mode (fixed or kept)
    stays inside one step of it: (the coordinate entry, the leaf's extent, its stride in
    elements, how many ``?`` entries come before it). A k-block and a stage fixed in one slice
    (`tCrA[None, None, k, stage]`) is this too. Else None."""
    qs = quoted(tensor_type)
    if not qs or ":" not in qs[-1]:
        return None
    sh, st = qs[-1].split(":", 1)
    try:
        shape, stride = parse_shape(sh), parse_shape(st)
    except (ValueError, IndexError):
        return None
    entries = _top_level(coord_text)
    if not isinstance(shape, tuple) or not isinstance(stride, tuple) or \
            len(entries) != len(shape) or len(stride) != len(shape):
        return None
    fixed = [i for i, e in enumerate(entries) if e != "_"]
    if not fixed or not all(re.fullmatch(r"\?|\d+", entries[i]) for i in fixed):
        return None
    modes = [list(zip(flatten(shape[i]), flatten(stride[i]))) for i in range(len(shape))]
    if any(None in leaf for m in modes for leaf in m):
        return None
    span = lambda leaves: sum((n - 1) * abs(d) for n, d in leaves)  # noqa: E731
    total = span([leaf for m in modes for leaf in m]) + 1
    for i in fixed:
        big = [(n, d) for n, d in modes[i] if n != 1]
        if len(big) != 1 or big[0][1] <= 0:
            continue
        n, d = big[0]
        rest = span([leaf for j, m in enumerate(modes) if j != i for leaf in m])
        if n * d >= total and rest < d:
            return entries[i], n, d, entries[:i].count("?")
    return None


def tiled_copy_layouts(copy_t: str) -> Optional[tuple[str, list[str]]]:
    """A tiled copy type's thread-value layout text and its tiler's modes:
    ``!cute.tiled_copy<..., layout_copy_tv = <"(64,4):(4,1)">, tiler_mn = <"[2:1;256:1]">>`` ->
    ("(64,4):(4,1)", ["2:1", "256:1"]); None for another type."""
    tv = re.search(r'layout_copy_tv = <"([^"]+)">', copy_t)
    tiler = re.search(r'tiler_mn = <"\[([^"]*)\]">', copy_t)
    if not tv or not tiler:
        return None
    return tv.group(1), [p.strip() for p in tiler.group(1).split(";")]
