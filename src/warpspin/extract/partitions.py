"""Thread partitions of shared memory: which views are one thread's own part of a tensor.

A tiled copy's `partition_S` / `partition_D` of a shared-memory tensor at the thread's own index
gives each thread a part of it; if the copy's thread-value layout and the tensor's layout are
one-to-one, no two threads' parts share a byte. A view derived from such a partition by ops that
keep to its bytes (a slice, `group_modes`, `logical_divide`, `make_view` over its iterator with a
layout inside its own) touches only the thread's part. cp.async copies into a buffer through one
partition, and reads and writes through that same partition, then conflict only within a thread
(docs/semantics.md, "cp.async groups"). Everything here is static: types and def chains."""
from __future__ import annotations

import re
from functools import lru_cache
from math import prod
from typing import Optional

from ..frontend.mlir_data import TracedKernel
from . import cute_types as ct

PARTITIONS = ("cute.tiled.copy.partition_S", "cute.tiled.copy.partition_D")
MMA_PARTITION = "cute.tiled.mma.partition"
CASTS = ("arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui",
         "builtin.unrealized_conversion_cast", "cute_nvgpu.arch.make_warp_uniform")
MAX_POINTS = 1 << 16


@lru_cache(maxsize=4096)
def image(layout_text: str) -> Optional[frozenset[int]]:
    """The offsets a static layout ``"(4,16):(1,256)"`` maps its domain to (None: dynamic or
    larger than MAX_POINTS)."""
    fl = ct.flat_layout(f'"{layout_text}"')
    if fl is None:
        return None
    shape, stride = fl
    n = prod(shape)
    if n > MAX_POINTS or any(s < 1 for s in shape):
        return None
    points = {0}
    for s, d in zip(shape, stride):
        points = {x + c * d for x in points for c in range(s)}
    return frozenset(points)


def layout_text(type_str: str) -> Optional[str]:
    qs = ct.quoted(type_str)
    return qs[-1] if qs and ":" in qs[-1] else None


def element_type(type_str: str) -> Optional[str]:
    m = re.match(r"!cute\.(?:memref|ptr)<(\w+)", type_str)
    return m.group(1) if m else None


def _within(k: TracedKernel, inner: int, outer: int) -> bool:
    """The view `inner`, at the same iterator as `outer`, maps into `outer`'s offsets."""
    ti, to = k.type_of(inner), k.type_of(outer)
    if element_type(ti) is None or element_type(ti) != element_type(to):
        return False
    li, lo = layout_text(ti), layout_text(to)
    a, b = (image(li) if li else None), (image(lo) if lo else None)
    return a is not None and b is not None and a <= b


def _def(k: TracedKernel, vid: int):
    info = k.value_info.get(vid)
    return None if info is None or info.is_block_arg else info.op


def _is_thread_index(k: TracedKernel, vid: int) -> bool:
    """`vid` is the thread's index in a one-dimensional CTA (%tid.x through casts)."""
    if tuple(k.block_dim[1:]) != (1, 1):
        return False
    op = _def(k, vid)
    for _ in range(8):
        if op is None:
            return False
        if op.name == "nvvm.read.ptx.sreg.tid.x":
            return True
        if op.name not in CASTS or not op.operands:
            return False
        op = _def(k, op.operands[0])
    return False


def _tiler_size(parts: list[str]) -> Optional[int]:
    """The elements of a tiler of modes ``["2:1", "256:1"]`` (512); None if one is not a
    static extent."""
    n = 1
    for part in parts:
        shape = part.split(":", 1)[0].strip()
        if not re.fullmatch(r"\d+", shape):
            return None
        n *= int(shape)
    return n


# copy atoms of one thread whose source and destination value layouts are the reference's:
# `partition_S` and `partition_D` both split the tile by the tiled copy's thread-value layout
SAME_LAYOUT_ATOMS = ("universal_copy", "simt_async_copy")


def one_to_one(k: TracedKernel, op, max_tid: Optional[int] = None, space: str = "smem") -> bool:
    """A partition op gives each thread that uses it its own bytes: the coordinate is the
    thread index, every thread of the CTA (or, with `max_tid`, of the ones that use it: thread
    indices up to `max_tid`) is below the copy's thread mode (a larger index would wrap onto a
    smaller one's part), the thread-value layout is one-to-one into the tile, and the tensor's
    layout is one-to-one. `space` "gmem": a partition of a global tensor of static extents, by
    a copy atom of `SAME_LAYOUT_ATOMS` whose tile divides the tensor mode by mode (every rest
    tile whole), or of an MMA's accumulator (`mma_c_apart`); whether the tensor's layout is
    one-to-one is the caller's to know (a static layout, or the host's contract)."""
    if len(op.operands) < 3:
        return False
    if op.name == MMA_PARTITION:
        return space == "gmem" and ct.memref_space(op.operand_types[1]) == "gmem" and \
            op.attrs.get("operand_id") == 2 and _thread_coord(k, op) and mma_c_apart(
                op.operand_types[0], op.operand_types[1],
                k.threads_per_block if max_tid is None else max_tid + 1)
    if space == "gmem":
        if ct.memref_space(op.operand_types[1]) != "gmem" or \
                ct.atom_kind(op.operand_types[0]) not in SAME_LAYOUT_ATOMS or \
                not _tiles_divide(op.operand_types[0], op.operand_types[1]):
            return False
    elif not ct.is_smem(op.operand_types[1]):
        return False
    if not _thread_coord(k, op):
        return False
    users = k.threads_per_block if max_tid is None else max_tid + 1
    return tv_apart(op.operand_types[0], users) and \
        (space == "gmem" or static_one_to_one(op.operand_types[1]))


def _thread_coord(k: TracedKernel, op) -> bool:
    """A partition op's coordinate is the thread's index."""
    coord = _def(k, op.operands[2])
    return coord is not None and coord.name == "cute.make_coord" and \
        len(coord.operands) == 1 and _is_thread_index(k, coord.operands[0])


def tv_apart(copy_t: str, users: int) -> bool:
    """A tiled copy's (type ``copy_t``) thread-value layout gives threads 0 .. users - 1 parts
    of its tile that share no element: they are below its thread mode, and the layout is
    one-to-one into the tile."""
    layouts = ct.tiled_copy_layouts(copy_t)
    if layouts is None:
        return False
    tv, parts = layouts
    sh, _, _ = tv.partition(":")
    try:
        thread_mode = ct.parse_shape(sh)[0]
    except (ValueError, IndexError, TypeError):
        return False
    threads = 1
    for s in (thread_mode if isinstance(thread_mode, tuple) else (thread_mode,)):
        for leaf in (s if isinstance(s, tuple) else (s,)):
            if not isinstance(leaf, int):
                return False
            threads *= leaf
    tv_image, tile = image(tv), _tiler_size(parts)
    fl = ct.flat_layout(f'"{tv}"')
    return (users <= threads and tv_image is not None and tile is not None
            and len(tv_image) == prod(fl[0]) and max(tv_image) < tile)


def mma_c_apart(mma_t: str, tensor_t: str, users: int) -> bool:
    """A tiled MMA's (type `mma_t`) partition of its accumulator C over a global tensor (type
    `tensor_t`) gives threads 0 .. users - 1 elements of their own: an SM90 warpgroup MMA
    (128 threads per atom; each element of an atom's C tile is one thread's, PTX ISA 9.7.15.5.1)
    laid out along M and N only (no K split: those threads would share C), no permutation,
    `users` within its threads, and a tensor of static extents whose first two modes the tiled
    MMA's tile divides (whether its layout is one-to-one: the caller's)."""
    m = re.match(r'!cute\.tiled_mma<!cute_nvgpu\.sm90\.mma<(\d+)x(\d+)x\d+,.*'
                 r'atom_layout_MNK = <"\((\d+),(\d+),(\d+)\):[^"]*">, '
                 r'permutation_MNK = <"\[_;_;_\]">>$', mma_t)
    shape = static_shape(tensor_t)
    if not m or shape is None or len(shape) < 2:
        return False
    tm, tn, am, an, ak = map(int, m.groups())
    return ak == 1 and users <= 128 * am * an and shape[0] % (tm * am) == 0 and \
        shape[1] % (tn * an) == 0


def static_shape(tensor_t: str) -> Optional[tuple[int, ...]]:
    """The extents of a tensor type whose top-level modes are single leaves, every one static
    (its strides may not be); None for a nested mode (a tiler's mode j would not be leaf j)."""
    layout = layout_text(tensor_t)
    if layout is None:
        return None
    try:
        shape = ct.parse_shape(layout.split(":", 1)[0])
    except (ValueError, IndexError, TypeError):
        return None
    shape = shape if isinstance(shape, tuple) else (shape,)
    return tuple(shape) if shape and all(isinstance(n, int) for n in shape) else None


def static_one_to_one(tensor_t: str) -> bool:
    """A tensor type whose layout is static and maps no two coordinates to one offset."""
    layout = layout_text(tensor_t)
    cells = image(layout) if layout else None
    fl = ct.flat_layout(f'"{layout}"') if layout else None
    return cells is not None and fl is not None and len(cells) == prod(fl[0])


def _tiles_divide(copy_t: str, tensor_t: str) -> bool:
    """The tiled copy's tiler (plain extents ``N:1``, or ``1:0``) divides the tensor's modes one
    by one."""
    layouts = ct.tiled_copy_layouts(copy_t)
    shape = static_shape(tensor_t)
    if layouts is None or shape is None:
        return False
    parts = layouts[1]
    if len(parts) > len(shape) or not all(re.fullmatch(r"\d+:1|1:0", p) for p in parts):
        return False
    return all(n % int(p.split(":")[0]) == 0 for p, n in zip(parts, shape))


def view_sources(k: TracedKernel, vid: int):
    """`vid`, then the tensors it is a view inside (a slice; `group_modes`, `logical_divide` or
    `make_view` over its iterator, with a layout inside its source's), innermost first."""
    for _ in range(24):
        yield vid
        op = _def(k, vid)
        if op is None:
            return
        if op.name == "cute.slice":
            vid = op.operands[0]
        elif op.name in ("cute.group_modes", "cute.logical_divide") and \
                _within(k, vid, op.operands[0]):
            vid = op.operands[0]
        elif op.name == "cute.make_view" and (it := _def(k, op.operands[0])) is not None and \
                it.name == "cute.get_iter" and _within(k, vid, it.operands[0]):
            vid = it.operands[0]
        else:
            return


def thread_partition(k: TracedKernel, vid: int, depth: int = 0,
                     max_tid: Optional[int] = None, space: str = "smem") -> Optional[int]:
    """The one-to-one partition op (its result value) `vid` is a view inside, else None; with
    `max_tid`, one-to-one among the threads up to that index (the ones that use it); `space`:
    of a shared or (`one_to_one`'s rules) a global tensor."""
    op = _def(k, vid)
    if op is None or depth > 24:
        return None
    if op.name in PARTITIONS or op.name == MMA_PARTITION:
        return vid if one_to_one(k, op, max_tid, space) else None
    if op.name == "cute.slice":
        return thread_partition(k, op.operands[0], depth + 1, max_tid, space)
    if op.name in ("cute.group_modes", "cute.logical_divide"):
        src = op.operands[0]
        return thread_partition(k, src, depth + 1, max_tid, space) \
            if _within(k, vid, src) else None
    if op.name == "cute.make_view":
        it = _def(k, op.operands[0])
        if it is not None and it.name == "cute.get_iter" and _within(k, vid, it.operands[0]):
            return thread_partition(k, it.operands[0], depth + 1, max_tid, space)
    return None
