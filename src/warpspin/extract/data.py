"""Data that threads write into shared memory and read back (a block reduction's partial sums,
a row's statistics): each plain element access of such a tensor, with the bytes it touches in
the executing warp, becomes word accesses of the model's shared words, so that two accesses no
synchronization orders are a race (docs/semantics.md, "Shared data").

The walker leaves a `DataAccess` where a warp's threads store or load an element of a shared
tensor the model does not follow as a value, with the bytes the warp's executing lanes touch
(None: not known in the warp: an address over a loop counter, a launch value, an unknown lane).
`follow` then decides, per allocation, whether every access of its bytes is such an access with
known bytes; if so the allocation's bytes are split into cells (the bytes every access touches
alike) and each access becomes `st.shared` / `ld.shared` of the cells it touches; otherwise its
accesses go and the verdict says that races on it were not checked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from ..syncir.ops import DATA_DEST, DsmemStore, WgmmaReadData
from ..syncir.ir import (BinOp, Expr, Unchecked, Const, Loc, MBarRef, Stmt, WordRef, WordsDecl, rewrite_stmts, walk_stmts)
from ..syncir.ops import CpAsync, SmemLoad, SmemStore, StAsync, TmaLoad, TmaStore
from .cleanup import finish



@dataclass(frozen=True)
class DataAccess(Stmt):
    """Placeholder of the extractor, never in a kernel: the executing lanes store (`write`) or
    load shared memory of allocation `alloc` at `spans` ((lo, hi) byte ranges; None: unknown);
    `records` are the indices of the Context's smem_writes ("w", i) / smem_uses ("u", i)
    entries this access explains."""
    alloc: int
    spans: Optional[tuple[tuple[int, int], ...]]
    write: bool
    records: tuple[tuple[str, int], ...]
    loc: Loc
    bar: Optional[MBarRef] = None  # an st.async: its bytes complete on this barrier (its CTA's)
    nbytes: int = 0
    lanes: tuple[tuple[int, int, int], ...] = ()  # (lane, lo, hi): the bytes each lane touches
    # an address over loop counters or launch values too: `spans` and `lanes` are relative to
    # the lane-free byte offset `base` (an Expr), inside the indexed tensor's bytes `extent`
    base: Optional[Expr] = None
    elem: int = 0
    extent: Optional[tuple[int, int]] = None
    # a generic store into the peer CTA `cta` (st.shared::cluster): it stays a DsmemStore, with
    # its bytes as that CTA's data when the allocation is followed
    cta: Optional[Expr] = None
    # a wgmma's read of its shared-memory operand (an async-proxy read until its group retires)
    wgmma: bool = False

    def unplaced(self) -> "DataAccess":
        """The access with its bytes unknown (its offset reads a value not modelled)."""
        return replace(self, spans=None, lanes=(), base=None, extent=None)


def global_alloc(root: int) -> int:
    """The DataAccess `alloc` of kernel argument `root`'s global memory (a grid model's global
    data): negative, apart from shared-memory allocation uids."""
    return -1 - root


def global_root(alloc: int) -> Optional[int]:
    """The kernel argument a DataAccess `alloc` of global memory names (None: shared memory)."""
    return -1 - alloc if alloc < 0 else None


def spans_of(offsets: list[int], size: int) -> tuple[tuple[int, int], ...]:
    """The byte ranges of elements of `size` bytes at `offsets`, merged."""
    out: list[list[int]] = []
    for lo in sorted(set(offsets)):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], lo + size)
        else:
            out.append([lo, lo + size])
    return tuple((a, b) for a, b in out)


def _overlaps(rng, lo: int, hi: int) -> bool:
    return rng is None or (rng[0] < hi and lo < rng[1])


def follow(ctx, walks: list) -> tuple[list, tuple[WordsDecl, ...], set]:
    """The walks with every DataAccess rewritten (word accesses of a followed allocation, or
    nothing), the word arrays of the followed allocations, and the smem_writes indices their
    accesses explain (build.py reports races on the other data writes as not checked)."""
    accesses = [s for w in walks for s in walk_stmts(w[3]) if isinstance(s, DataAccess)]
    busy = {n for w in walks for s in walk_stmts(w[3]) for n in _async_buffers(s)}
    by_alloc: dict[int, list[DataAccess]] = {}
    for s in accesses:
        by_alloc.setdefault(s.alloc, []).append(s)
    cells: dict[int, tuple[str, list[tuple[int, int]]]] = {}
    explained: set = set()
    decls = []
    for alloc, acc in sorted(by_alloc.items()):
        if not any(a.write for a in acc):
            continue
        unplaced = next((a for a in acc if a.spans is None), None)
        if unplaced is not None:
            ctx.data_why[alloc] = ctx.data_why.get(alloc) or (
                f"the element access at {unplaced.loc.short()} has an address that is neither a "
                "function of the lane alone nor a lane-free offset plus one")
            continue
        dynamic = any(a.base is not None for a in acc)
        if dynamic:
            why = _element_cells_why([a for a in acc if not a.wgmma])
            if why is not None:
                ctx.data_why[alloc] = why
                continue
            lo, hi = next(a.extent for a in acc if a.base is not None)
            if any(x < lo or y > hi for a in acc if a.wgmma for x, y in a.spans):
                wgmma = next(a for a in acc if a.wgmma)
                ctx.data_why[alloc] = (f"the wgmma at {wgmma.loc.short()} "
                                       "reads bytes outside the tensor its threads index")
                continue
        else:
            lo = min(s[0] for a in acc for s in a.spans)
            hi = max(s[1] for a in acc for s in a.spans)
        root = global_root(alloc)
        if root is not None:
            why = ctx.global_data_why(root)
            if why is not None:
                ctx.data_why[alloc] = why
                continue
        mine = {r for a in acc for r in a.records}
        others = [] if root is not None else \
                 [("w", i) for i, (al, rng, _) in enumerate(ctx.smem_writes)
                  if (al is None or (al == alloc and _overlaps(rng, lo, hi)))
                  and ("w", i) not in mine] + \
                 [("u", i) for i, (al, rng, _) in enumerate(ctx.smem_uses)
                  if (al is None or (al == alloc and _overlaps(rng, lo, hi)))
                  and ("u", i) not in mine]
        if others:
            k, i = others[0]
            what = (ctx.smem_writes if k == "w" else ctx.smem_uses)[i][2]
            ctx.data_why[alloc] = (f"{what} may {'write' if k == 'w' else 'access'} its bytes "
                                   "and is not an element store or load")
            continue
        if root is None and _buffer_here(ctx, busy, alloc, lo, hi):
            ctx.data_why[alloc] = "a TMA or cp.async buffer shares its bytes"
            continue
        plain = [a for a in acc if not a.wgmma]
        elem = plain[0].elem
        parts = [(x, x + elem) for x in range(lo, hi, elem)] if dynamic else _cells(acc)
        if any(a.bar is not None and not _whole_cells(a, parts) for a in acc):
            ctx.data_why[alloc] = "an st.async writes part of a cell"
            continue
        label = global_label(ctx, root, plain) if root is not None else \
            _shared_label(ctx, alloc, lo, hi, plain)
        name = f"data{alloc}" if root is None else f"gdata{root}"
        cells[alloc] = (name, parts)
        decls.append(WordsDecl(name, len(parts), plain[0].loc, label, data=True,
                               grid=root is not None))
        handoff = next(filter(None, (_lane_handoff(w[3], alloc) for w in walks)), None)
        if root is not None:
            ctx.assumptions.add(f"global data {label}: no other kernel argument aliases it, and "
                                "nothing outside the kernel accesses it while the kernel runs")
        if handoff is not None:  # races between warps are still checked, and reported
            what = label if root is None else f"global data {label}"
            ctx.unchecked.append(Unchecked("race", what, handoff[1], handoff[0]))
        explained |= {i for k, i in mine if k == "w"}

    _global_unchecked(ctx, by_alloc, set(cells))

    def rewrite(st):
        if not isinstance(st, DataAccess):
            return (st,)
        if st.wgmma:
            return (WgmmaReadData(cells[st.alloc][0], st.loc),) if st.alloc in cells else ()
        if st.cta is not None:
            if st.alloc not in cells:
                return (DsmemStore(st.cta, st.loc),)
            return (DsmemStore(st.cta, st.loc),
                    *(replace(s, ref=replace(s.ref, cta=st.cta))
                      for s in rewrite(replace(st, cta=None))))
        if st.alloc not in cells:
            return () if st.bar is None else (TmaLoad(st.bar, Const(st.nbytes), st.loc),)
        name, parts = cells[st.alloc]
        if st.base is not None:  # cell (base + the lane's offset - lo) / elem, per element
            lo, elem = parts[0][0], parts[0][1] - parts[0][0]
            idx = [BinOp("//", BinOp("+", st.base, Const(x - lo)), Const(elem))
                   for x in sorted({x for a, b in st.spans for x in range(a, b, elem)})]
            if st.write:
                return tuple(SmemStore(WordRef(name, i), Const(0), st.loc) for i in idx)
            return tuple(SmemLoad(DATA_DEST, WordRef(name, i), st.loc) for i in idx)
        hit = [c for c, (a, b) in enumerate(parts) if any(x < b and a < y for x, y in st.spans)]
        if st.bar is not None:  # consecutive whole cells, one word each
            return (StAsync(WordRef(name, Const(hit[0])), (Const(0),) * len(hit), st.bar, st.loc,
                            size=st.nbytes),)
        if st.write:
            return tuple(SmemStore(WordRef(name, Const(c)), Const(0), st.loc) for c in hit)
        return tuple(SmemLoad(DATA_DEST, WordRef(name, Const(c)), st.loc) for c in hit)

    out = [(w[0], w[1], w[2], finish(list(rewrite_stmts(w[3], rewrite))), *w[4:]) for w in walks]
    return out, tuple(decls), explained


def _shared_label(ctx, alloc: int, lo: int, hi: int, plain: list) -> str:
    from .build import _alloc_label
    label = _alloc_label(ctx, alloc, (lo, hi))
    if label.startswith("shared memory"):
        label = next(filter(None, (_subscripted(a.loc) for a in plain)), label)
    return label


def global_label(ctx, root: int, plain: list = ()) -> str:
    """How the user named kernel argument `root`: the kernel's parameter, else the tensor its
    accesses subscript (`partial[i] = ...`; a tile of it has a name of its own), else its
    position."""
    arg = next((a for a in ctx.kernel.args if a.index == root), None)
    if arg is not None and arg.name and re.fullmatch(r"[A-Za-z_]\w*", arg.name):
        return arg.name
    placed_first = sorted(plain, key=lambda a: a.spans is None)
    name = next(filter(None, (_subscripted(a.loc) for a in placed_first)), None)
    return name or f"kernel argument {root}"


def _global_unchecked(ctx, by_alloc: dict, followed: set) -> None:
    """In a grid model: races NOT CHECKED on each kernel argument the kernel writes that is not
    followed as global data (the data a flag may hand over), and on global memory when a write
    is not attributed to an argument."""
    if ctx.grid_why is not None:
        return
    from ..syncir.ir import NOLOC
    written, _ = ctx.written_gmem()
    unknown = ctx.unplaced_writers()
    if unknown:
        ctx.unchecked.append(Unchecked("race", "global memory", f"{unknown[0]} writes global "
                                       "memory the model does not place", NOLOC))
    for root in sorted(written - set(ctx.flag_roots.values())):
        acc = by_alloc.get(global_alloc(root), [])
        if global_alloc(root) in followed:
            continue
        why = ctx.data_why.get(global_alloc(root)) or ctx.global_data_why(root) or \
            "no element store or load of it is placed"
        ctx.unchecked.append(Unchecked(
            "race", f"global data {global_label(ctx, root, acc)}", "the kernel writes it, and "
            "races on global data are checked only where every access of it is an element store "
            f"or load at a place known per lane: {why}", acc[0].loc if acc else NOLOC))


def _lane_handoff(body: tuple, alloc: int) -> Optional[tuple[Loc, str]]:
    """Where, in one warp's `body` in program order (a loop's body twice, for its next trip),
    an access of `alloc` by some lane meets an earlier one by another lane of the same bytes,
    one of them a write, with no barrier between (bar.sync, an mbarrier wait, a cluster wait,
    bar.warp.sync by the whole warp):
    the model takes a warp's lanes as one thread, so such a hand-off is not checked."""
    from ..syncir.ir import For, If, Lanes, While
    from ..syncir.ops import BarSync, ClusterWait, MbarTestWait, MbarWait, WarpSync
    since: list[DataAccess] = []

    def scan(stmts) -> Optional[tuple[Loc, str]]:
        for st in stmts:
            if isinstance(st, (BarSync, MbarWait, MbarTestWait, ClusterWait, WarpSync)):
                since.clear()
            elif isinstance(st, DataAccess) and st.alloc == alloc and st.bar is None and \
                    not st.wgmma:
                for e in since:
                    if (e.write or st.write) and _cross_lane(e, st):
                        return (st.loc, f"lanes of one warp hand it over at {st.loc.short()} with "
                                "no barrier between one lane's access and another's (the "
                                "model's thread is the warp: a warp-synchronous hand-off is not "
                                "modelled)")
                since.append(st)
            elif isinstance(st, (For, While)):
                found = scan(st.body) or scan(st.body)
                if found:
                    return found
            elif isinstance(st, If):
                found = scan(st.then) or scan(st.else_)
                if found:
                    return found
            elif isinstance(st, Lanes):
                found = scan(st.body)
                if found:
                    return found
        return None
    return scan(body)


def _cross_lane(a: DataAccess, b: DataAccess) -> bool:
    """Whether a byte one lane of `a` touches is touched by another lane of `b` (unknown lanes:
    whenever their bytes overlap; addresses over loop counters: unless both are at the same
    lane-free offset)."""
    if a.base is not None or b.base is not None:
        if a.base != b.base:
            return True
    if not a.lanes or not b.lanes:
        return any(x < hi and lo < y for x, y in a.spans or () for lo, hi in b.spans or ())
    return any(la != lb and x < hi and lo < y for la, x, y in a.lanes for lb, lo, hi in b.lanes)


def _element_cells_why(acc: list[DataAccess]) -> Optional[str]:
    """Why an allocation with accesses at addresses over loop counters cannot be split into one
    cell per element (None: it can): every access has one element size, the ones over loop
    counters index one tensor whose bytes the others lie in, each lane-free offset is a
    multiple of the element size past the tensor's start, and every access is element-aligned."""
    elem = acc[0].elem
    extents = {a.extent for a in acc if a.base is not None}
    if elem <= 0 or any(a.elem != elem for a in acc) or len(extents) != 1:
        return "its element accesses over loop counters use several element sizes or tensors"
    lo, hi = extents.pop()
    if (hi - lo) % elem:
        return "its tensor is not a whole number of elements"
    for a in acc:
        if a.bar is not None:
            return "an st.async writes it at an address over loop counters"
        if a.base is None:
            if any(x < lo or y > hi or (x - lo) % elem for x, y in a.spans):
                return f"the element access at {a.loc.short()} is outside its tensor's elements"
        elif not _multiple(BinOp("-", a.base, Const(lo)), elem) or \
                any(x % elem for x, _ in a.spans):
            return (f"the element access at {a.loc.short()} may not fall on an element boundary "
                    "(its offset over loop counters is not a known multiple of the size)")
    return None


def _multiple(e: Expr, n: int) -> bool:
    """Whether `e` is, structurally, a multiple of `n` for every value of its variables."""
    if isinstance(e, Const):
        return e.value % n == 0
    if isinstance(e, BinOp) and e.op in ("+", "-"):
        return _multiple(e.lhs, n) and _multiple(e.rhs, n)
    if isinstance(e, BinOp) and e.op == "*":
        return any(isinstance(x, Const) and x.value % n == 0 for x in (e.lhs, e.rhs)) or \
            _multiple(e.lhs, n) or _multiple(e.rhs, n)
    return False



def _subscripted(loc: Loc) -> Optional[str]:
    """`reduction_buffer` for an access written `reduction_buffer[row, col] = val` (or read so)
    on its source line."""
    import linecache
    import re
    m = re.search(r"([A-Za-z_]\w*)\[", linecache.getline(loc.file, loc.line)) if loc.file else None
    return m.group(1) if m else None


def _async_buffers(st) -> tuple[str, ...]:
    """The buffers an async unit accesses in `st` (a TMA store or load, a cp.async)."""
    if isinstance(st, (TmaStore, CpAsync)):
        return (st.buf,)
    if isinstance(st, TmaLoad) and st.dst is not None:
        return (st.dst,)
    return ()


def _buffer_here(ctx, busy: set, alloc: int, lo: int, hi: int) -> bool:
    """Whether a buffer that an async unit accesses lies in these bytes (its accesses are the
    buffer's, build.py)."""
    return any(key[0] == alloc and key[1] < hi and lo < key[2]
               for key, (name, _, _) in ctx.buffers.items() if name in busy)


def _whole_cells(a: DataAccess, parts: list[tuple[int, int]]) -> bool:
    """Whether access `a` covers whole cells (an st.async completes its bytes as words)."""
    return all(any(x == lo for lo, _ in parts) and any(y == hi for _, hi in parts)
               for x, y in a.spans)


def _cells(acc: list[DataAccess]) -> list[tuple[int, int]]:
    """The allocation's bytes that accesses touch, split where the set of accesses touching
    them changes: two bytes in one cell are touched by exactly the same accesses."""
    points = sorted({p for a in acc for s in a.spans for p in s})
    pieces = []
    for a, b in zip(points, points[1:]):
        who = frozenset(i for i, x in enumerate(acc) if any(lo < b and a < hi for lo, hi in x.spans))
        if who:
            pieces.append((a, b, who))
    out: list[tuple[int, int]] = []
    last = None
    for a, b, who in pieces:
        if out and who == last and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
        last = who
    return out
