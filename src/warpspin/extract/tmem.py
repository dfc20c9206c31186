"""Tensor-memory (TMEM) tensors followed to the accumulator stages they lie in.

A TMEM address is ``(lane << 16) | column`` (PTX ISA, tensor memory addressing), and a CuTe
layout over it counts in 32-bit elements: a stride ``d`` moves ``d >> 16`` lanes and
``d & 0xffff`` columns. A stage of a TMEM buffer takes every lane of a range of columns, so only
the column parts matter here.

The walker (`WarpWalker.op` calls `propagate`) keeps a `Tmem` for every tensor of tensor memory
made on the address ``retrieve_tmem_ptr`` reads from the shared-memory word ``tcgen05.alloc``
wrote (and for the addresses of such tensors): the columns, relative to that address, its
elements lie in. A slice that fixes a mode with one non-unit leaf of extent ``n`` and column
stride ``D``, of a tensor whose elements lie in ``n * D`` columns ``lo..lo+n*D-1``, selects
stage ``s`` of the buffer (lo, n, D): the elements with that coordinate lie in columns
``lo + s*D .. lo + (s+1)*D - 1``. (With every stride non-negative, the first element is the
lowest column; the element with the same other coordinates and ``s = n - 1`` is inside the
tensor, so the others' column span is below ``D`` — whatever the tensor's origin, a partition
of the whole buffer included.) A part of a tensor (a partition, a divide, a slice that fixes
no such mode) lies where the tensor does; a view rebuilt on a tensor's address with a layout of
no larger column span, too. A tensor no slice selected a stage of lies in the one stage of a
buffer of its columns (an accumulator with no stage mode). Everything else about tensor memory
is not followed: its value is a plain `Unknown`, and an access through it is not attributed.
(Coordinates are taken to be in range: a verdict that follows TMEM data says so.)

`check` decides, after every warp is walked, whether the kernel's TMEM data is followed: the
first version follows it only when every TMEM access of the kernel is attributed to a buffer
stage (the MMA's accumulator, a tcgen05.ld's source), the kernel allocates tensor memory once,
every followed tensor is made on the address that allocation wrote into shared memory (which
nothing else writes), and two buffers (two stage geometries) share no column. Otherwise build.py
drops the TMEM buffers' reads and marks every access `data=False` (the verdict then says TMEM
data is NOT CHECKED)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Optional

from ..syncir.ir import Const, Expr, Loc
from . import cute_types as ct
from .values import Ptr, Unknown

if TYPE_CHECKING:  # pragma: no cover
    from ..frontend.mlir_data import Op
    from .walker import Context, WarpWalker

ALLOC = "cute_nvgpu.arch.sm100.alloc_tmem"
RETRIEVE = "cute_nvgpu.arch.sm100.retrieve_tmem_ptr"
COLUMNS = 512  # columns of a CTA's tensor memory
# ops whose TMEM result is a part of their TMEM operand (the same elements or some of them):
# it lies in the operand's columns; `SAME_ELEMENTS` also keep its first element
PARTS = {"cute.group_modes", "cute.slice", "cute.filter_zeros", "cute.logical_divide",
         "cute.zipped_divide", "cute.tiled_divide", "cute.flat_divide", "cute.local_tile",
         "cute.local_partition", "cute.tiled.copy.partition_D", "cute.tiled.copy.partition_S",
         "cute.tiled.copy.retile"}
# ops on a tensor or address of tensor memory that do not access it (views, parts, layouts, the
# address as an integer, a copy atom's construction, the free); `cute.copy` and `cute.gemm` are
# attributed by the walker; any other op on one may access it and is not followed
NO_ACCESS = PARTS | {"cute.make_view", "cute.get_iter", "cute.add_offset", "cute.get_layout",
                     "cute.get_shape", "cute.get_stride", "cute.composition", "cute.ptrtoint",
                     "cute.recast_iter", "cute.derefine", "cute.assume", "llvm.ptrtoint",
                     "builtin.unrealized_conversion_cast", "cute.mma.make_fragment",
                     "cute_nvgpu.atom.make_tmem_copy", "cute_nvgpu.arch.sm100.dealloc_tmem",
                     "cute.copy", "cute.gemm", "scf.yield", "scf.condition"}
SAME_ELEMENTS = {"cute.group_modes", "cute.logical_divide", "cute.zipped_divide",
                 "cute.tiled_divide", "cute.flat_divide"}


@dataclass(frozen=True)
class TmemStage:
    """Stage `index` of the TMEM buffer of `count` stages of `cols` columns from column `base`
    (relative to the address tcgen05.alloc wrote into shared-memory word `word`)."""

    index: Expr
    word: tuple
    base: int
    count: int
    cols: int

    @property
    def buffer(self) -> tuple:
        return (self.word, self.base, self.count, self.cols)


@dataclass(frozen=True)
class Tmem(Unknown):
    """A tensor of tensor memory (`ptr`: the address of its first element) at the address
    tcgen05.alloc wrote into the shared-memory word `word` ((allocation uid, byte range)): its
    elements lie in columns `within` (lo, hi) relative to that address, every lane; with
    `stage`, in that stage's columns. `origin`: the column of its first element when known;
    `span` (a pointer): the column span of the tensor it is the address of. `label`, `made`:
    the user's name of the tensor it derives from and where it was made. To everything else
    it is an `Unknown`."""

    word: tuple = ()
    within: Optional[tuple[int, int]] = None
    stage: Optional[TmemStage] = None
    origin: Optional[int] = None
    span: Optional[int] = None
    ptr: bool = False
    label: str = ""
    made: Optional[Loc] = None


def column_span(type_str: str) -> Optional[int]:
    """The last column minus the first of a static TMEM layout of 32-bit elements with
    non-negative strides (``"((128,64),2):((65536,1),64)"`` -> 127), else None."""
    if ct.elem_bytes(type_str) != 4:
        return None
    flat = ct.flat_layout(type_str)
    if flat is None or any(d < 0 for d in flat[1]):
        return None
    span = sum((n - 1) * (d & 0xffff) for n, d in zip(*flat))
    return span if span < COLUMNS else None


def stage_mode(tensor_type: str, coord_text: str, cols: int) -> Optional[tuple[str, int, int, int]]:
    """The stage mode a slice fixes, of a tensor whose elements lie in `cols` columns: a
    top-level mode the coordinate fixes with a scalar (``?`` or an integer) whose one non-unit
    leaf has extent n and column stride D > 0 with n * D == cols: (the entry, n, D, how many
    ``?`` come before it). Else None."""
    qs = ct.quoted(tensor_type)
    if not qs or ":" not in qs[-1]:
        return None
    sh, st = qs[-1].split(":", 1)
    try:
        shape, stride = ct.parse_shape(sh), ct.parse_shape(st)
    except (ValueError, IndexError):
        return None
    entries = ct._top_level(coord_text)
    if not isinstance(shape, tuple) or not isinstance(stride, tuple) or \
            not len(entries) == len(shape) == len(stride):
        return None
    for i, e in enumerate(entries):
        if not re.fullmatch(r"\?|\d+", e):
            continue
        leaves = list(zip(ct.flatten(shape[i]), ct.flatten(stride[i])))
        big = [(n, d) for n, d in leaves if n != 1]
        if len(big) != 1 or None in big[0] or big[0][1] < 0:
            continue
        n, d = big[0]
        if d & 0xffff and n * (d & 0xffff) == cols:
            return e, n, d & 0xffff, sum(x.count("?") for x in entries[:i])
    return None


def _first_kept(coord_text: str) -> bool:
    """A coordinate that fixes only zeros: the slice's first element is the tensor's."""
    return all(x in ("_", "0") for x in re.findall(r"[^\s(),]+", coord_text))


def propagate(w: "WarpWalker", op: "Op") -> bool:
    """The TMEM value of `op`'s result when `op` makes a view, a part or the address of a
    followed TMEM tensor (True: the result is set, followed or not). Ops with no followed TMEM
    operand, ops whose result is not of tensor memory, and region ops are left to the walker.
    Any other op on tensor memory (`NO_ACCESS`) is an access not attributed."""
    if op.name not in NO_ACCESS and not op.regions and \
            any(", tmem" in t for t in op.operand_types):
        unattributed(w.ctx, op.name, w.loc(op), "an op on tensor memory the model does not follow")
    if op.regions:
        return False
    src_vid = next((v for v in op.operands if isinstance(w.val(v), Tmem)), None)
    if src_vid is None or not op.results:
        return False
    src: Tmem = w.val(src_vid)
    t = op.result_types[0]
    if op.name == "cute.get_iter":
        span = column_span(op.operand_types[0])
        _set(w, op, None if src.ptr or span is None or ", tmem" not in t else
             replace(src, ptr=True, span=span))
        return True
    if ct.memref_space(t) != "tmem":
        return False
    tensor = op.operands[1] if op.name.startswith("cute.tiled.copy.") else op.operands[0]
    if op.name == "cute.make_view" and src.ptr and tensor == src_vid:
        v = _view(src, column_span(t))
        if v is not None and not v.label:
            from .walker import _assigned_name
            v = replace(v, label=_assigned_name(w.loc(op)) or "", made=w.loc(op))
        _set(w, op, v)
    elif op.name == "cute.slice" and not src.ptr and tensor == src_vid and len(op.operands) == 2:
        _set(w, op, _slice(w, op, src))
    elif op.name in PARTS and not src.ptr and tensor == src_vid and \
            _no_wider(t, op.operand_types[op.operands.index(tensor)]):
        _set(w, op, replace(src, origin=src.origin if op.name in SAME_ELEMENTS else None))
    else:
        _set(w, op, None)
    return True


def _no_wider(part: str, whole: str) -> bool:
    """A part's layout spans no more columns than the tensor's (a divide by a tiler that does
    not divide the shape reaches past the tensor: not a part of it)."""
    a, b = column_span(part), column_span(whole)
    return a is not None and b is not None and a <= b


def _set(w: "WarpWalker", op: "Op", v: Optional[Tmem]) -> None:
    """The op's results as unknowns, its first one `v` (when followed)."""
    w.set_unknown_results(op)
    u = w.env.get(op.results[0])
    if v is not None and type(u) is Unknown:
        w.env[op.results[0]] = replace(v, reason=u.reason, uniform=u.uniform)


def retrieve(w: "WarpWalker", op: "Op") -> None:
    """retrieve_tmem_ptr(word): the allocation's address, column 0, when the word is a static
    place in this CTA's shared memory; else a value not followed."""
    p = w.val(op.operands[0]) if op.operands else None
    w.set_unknown_results(op)
    u = w.env.get(op.results[0]) if op.results else None
    if isinstance(p, Ptr) and p.alloc is not None and not p.lin and p.cta is None and \
            p.space == "smem" and type(u) is Unknown and ct.elem_bytes(op.result_types[0]) == 4:
        w.env[op.results[0]] = Tmem(u.reason, u.uniform, word=(p.alloc.uid, p.const, p.const + 4),
                                    origin=0, ptr=True)


def _view(p: Tmem, span: Optional[int]) -> Optional[Tmem]:
    """A tensor of column span `span` on the address `p`: exactly its columns when the address
    is known; else inside the tensor the address came from, if no wider than it."""
    if span is None:
        return None
    inside = p.span is not None and span <= p.span
    if p.origin is not None:
        within = (p.origin, p.origin + span + 1)
    elif inside:
        within = p.within
    else:
        return None
    stage = p.stage if inside else None
    if within is None and stage is None:
        return None
    return replace(p, ptr=False, within=within, stage=stage, span=None)


def _slice(w: "WarpWalker", op: "Op", t: Tmem) -> Optional[Tmem]:
    """A slice: the stage it selects (`stage_mode`), else a part of `t`."""
    if column_span(op.result_types[0]) is None or column_span(op.operand_types[0]) is None:
        return None
    text = ct.int_tuple_value(op.operand_types[1]) or ""
    origin = t.origin if _first_kept(text) else None
    if t.stage is not None or t.within is None:
        return replace(t, origin=origin)
    lo, hi = t.within
    mode = stage_mode(op.operand_types[0], text, hi - lo)
    if mode is None:
        return replace(t, origin=origin)
    entry, n, d, before = mode
    index = w.slice_entry(op, entry, before)
    if index is None:
        return None
    return replace(t, origin=origin, stage=TmemStage(index, t.word, lo, n, d))


def stage_of(w: "WarpWalker", vid: int, type_str: str) -> Optional[TmemStage]:
    """The buffer stage a TMEM tensor operand lies in: the stage a slice selected, else the
    one stage of a buffer of the columns it lies in (an accumulator with no stage mode); None
    when it is not followed."""
    v = w.val(vid)
    if not isinstance(v, Tmem) or v.ptr or column_span(type_str) is None:
        return None
    if v.stage is None and v.within is not None:
        lo, hi = v.within
        return TmemStage(Const(0), v.word, lo, 1, hi - lo)
    return v.stage


def buffer(ctx: "Context", w: "WarpWalker", vid: int, stage: TmemStage, loc: Loc) -> str:
    """The name of the TMEM buffer `stage` is a stage of (declared at its first access)."""
    v = w.val(vid)
    if stage.buffer not in ctx.tmem_buffers:
        label = v.label if isinstance(v, Tmem) and v.label else "TMEM accumulator"
        ctx.tmem_buffers[stage.buffer] = [f"tmem{len(ctx.tmem_buffers)}", label,
                                          v.made if isinstance(v, Tmem) and v.made else loc]
    return ctx.tmem_buffers[stage.buffer][0]


def unattributed(ctx: "Context", what: str, loc: Loc, why: str) -> None:
    """A TMEM access whose data is not attributed to a buffer stage (`check` then follows no
    TMEM data of the kernel)."""
    where = f"{os.path.basename(loc.file)}:{loc.line}" if loc.line else "the kernel"
    ctx.tmem_unattributed.append(f"the {what} at {where} is not attributed to an accumulator "
                                 f"stage: {why}")


def check(ctx: "Context") -> Optional[str]:
    """Why the kernel's TMEM data is not followed (None: it is; see the module's docstring)."""
    k = ctx.kernel
    if ctx.tmem_unattributed:
        return ctx.tmem_unattributed[0]
    if not ctx.tmem_buffers:
        return "no TMEM access is attributed to an accumulator stage"
    allocs = list(k.ops_named(ALLOC))
    if len(allocs) != 1:
        return f"the kernel has {len(allocs)} tcgen05.alloc ops (one is followed)"
    words = {key[0] for key in ctx.tmem_buffers}
    written = {(uid, rng) for uid, rng, what in ctx.smem_writes if what == ALLOC}
    if len(words) != 1 or len(written) != 1:
        return "its tensors are made on more than one TMEM address"
    (uid, lo, hi), = words
    if written != {(uid, (lo, hi))}:
        return "its tensors are not made on the address tcgen05.alloc wrote"
    clash = [what for a, rng, what in ctx.smem_writes if what != ALLOC and
             (a is None or (a == uid and (rng is None or (rng[0] < hi and lo < rng[1]))))]
    if clash:
        return f"{clash[0]} may write the shared word that holds the TMEM address"
    ranges = sorted({(base, base + n * d) for _, base, n, d in ctx.tmem_buffers})
    if len(ranges) != len(ctx.tmem_buffers) or any(a[1] > b[0] for a, b in zip(ranges, ranges[1:])):
        return "two of its accumulator buffers overlap in columns"
    return None
