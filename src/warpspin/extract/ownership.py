"""Races on global memory outside grid models: the model holds one cluster, so the other
clusters of the grid, and the threads of this one, meet in global memory only where their
accesses overlap. Races there are checked by proving they never do: every byte of a kernel
argument the kernel writes is accessed by at most one thread of the grid (one lane of one warp
of one CTA of one cluster), or only read. Where that is not proven, races on the argument are
NOT CHECKED (an `Unchecked`, naming the access), never assumed.

The proof reads each element access the walker placed (`GlobalAccess`: its byte offset over
the lane, the loop counters around it and the cluster index): the offsets of every lane and
every counter value are evaluated, each an affine function ``A . clusterid + r`` of the
cluster index. Threads of one cluster are apart when no byte is accessed by two of them with a
write among the accesses (lanes of one warp storing one value in one store are one write: the
CUDA programming guide's "only one thread performs a write"; one value: a constant, or a
lane-free value outside every loop, whose trips could store different values). Clusters are apart when one
coefficient vector ``A`` serves every access and, for every difference ``d != 0`` of two
cluster indices that moves by less than a cluster's span of bytes, no written byte shifted by
``A . d`` is accessed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional

from ..syncir.ir import BinOp, Const, Expr, Loc, Select, UnOp, Var, expr_vars
from .values import LANE, Folder, linear, opaque_reasons, subst

MAX_POINTS = 1 << 16  # lane and counter values evaluated per access, at most
CLUSTER_VARS = tuple(f"clusterid_{d}" for d in "xyz")


@dataclass(frozen=True)
class GlobalAccess:
    """An element store or load of kernel argument `root` by the lanes `lanes` of warp `warp`
    of CTA `cta` of the modelled cluster (`one_lane`: one of them, which one unknown), at byte
    `offset` (None: not placed, `why` says why) over `elem` bytes; `counters`: the ranges of
    the loop counters around it (lo..hi inclusive)."""
    root: int
    write: bool
    offset: Optional[Expr]
    elem: int
    lanes: frozenset
    one_lane: bool
    cta: int
    warp: int
    counters: tuple[tuple[str, int, int], ...]
    loc: Loc
    why: str = ""
    same_value: bool = False  # every lane, every trip stores one value (CUDA: one write lands)
    same_per_trip: bool = False  # every lane stores one value at each trip (all loops counted)
    coords: tuple = ()  # a TMA store: the origin of its box, per coordinate of the tensor
    box: tuple[int, ...] = ()  # ... and its extents (coords.py)
    uncounted: bool = False  # in a loop whose counter `counters` does not enumerate
    # a copy through a one-to-one thread partition (partitions.py) of the tile at `offset`,
    # `elem` bytes: the partition (tiled copy and tile layout); every thread of the CTA that
    # uses it at one place touches bytes of its own there, so together they are one accessor
    partition: str = ""
    asynchronous: bool = False  # a cp.async's read (completes after the thread goes on)


def inline_locals(e: Expr, defs: dict[str, Expr], budget: int = 4096) -> Expr:
    """`e` with the locals the walker bound (`defs`: an SSA value's local holds one expression,
    evaluated where it dominates `e`) replaced by what they hold; a local is kept when the
    expression would grow past `budget` nodes."""
    seen = [0]

    def go(x: Expr) -> Expr:
        seen[0] += 1
        if seen[0] > budget:
            return x
        if isinstance(x, Var):
            return go(defs[x.name]) if x.name in defs else x
        if isinstance(x, BinOp):
            return BinOp(x.op, go(x.lhs), go(x.rhs))
        if isinstance(x, UnOp):
            return UnOp(x.op, go(x.arg))
        if isinstance(x, Select):
            return Select(go(x.cond), go(x.then), go(x.else_))
        return x
    return go(e)


def affine(e: Expr, names: tuple[str, ...]) -> Optional[tuple[tuple[int, ...], int]]:
    """``e`` as ``sum(a_i * names_i) + r`` with integer a_i, r (`values.linear`'s terms, each
    a name, a negation or a division of such a form); None when it is not that."""
    terms, const = linear(e)
    coef = dict.fromkeys(names, 0)
    for atom, c in terms:
        if isinstance(atom, Var) and atom.name in names:
            coef[atom.name] += c
            continue
        inner = _atom(atom, names)
        if inner is None:
            return None
        for n, x in zip(names, inner[0]):
            coef[n] += c * x
        const += c * inner[1]
    return tuple(coef[n] for n in names), const


def _atom(e: Expr, names: tuple[str, ...]) -> Optional[tuple[tuple[int, ...], int]]:
    """A non-linear term of `affine`: ``-x``, or ``(d*A . c + r) // d = A . c + r // d`` and
    ``(d*A . c + r) % d = r % d`` (exact when d divides every coefficient)."""
    if isinstance(e, UnOp) and e.op == "-":
        a = affine(e.arg, names)
        return None if a is None else (tuple(-x for x in a[0]), -a[1])
    if not (isinstance(e, BinOp) and e.op in ("//", "%") and isinstance(e.rhs, Const)
            and e.rhs.value > 0):
        return None
    lhs, d = affine(e.lhs, names), e.rhs.value
    if lhs is None or any(x % d for x in lhs[0]):
        return None
    if e.op == "//":
        return tuple(x // d for x in lhs[0]), lhs[1] // d
    return tuple(0 for _ in names), lhs[1] % d


def _places(a: GlobalAccess) -> tuple[tuple[Expr, ...], tuple[int, ...]]:
    """(origin, extent) of the box `a` accesses: bytes for an element access, coordinates of
    the global tensor for a TMA store."""
    return (a.coords, a.box) if a.box else ((a.offset,), (a.elem,))


def _points(a: GlobalAccess, clusters: tuple[str, ...]):
    """(thread, coefficients, origin, trip) of every lane and counter value of `a` (per
    coordinate of its box: the coefficients of the cluster index and the rest); a str (why
    not) when a coordinate is not an affine function of the cluster index there."""
    origin, _ = _places(a)
    used = set().union(*(expr_vars(e) for e in origin))
    free = used - {LANE} - {n for n, _, _ in a.counters} - set(clusters)
    why = [r for e in origin for r in opaque_reasons(e)]
    if why:
        return f"its place is not known: {why[0]}"
    if free:
        return f"its place depends on {', '.join(sorted(free))}, not only on the lane, the " \
               "loop counters and the cluster index"
    if a.box and a.uncounted and not a.partition:
        return "it is in a loop whose trips are not counted (each bulk store it issues is a " \
               "writer of its own)"
    # a TMA store's trips, and the trips of a store whose lanes are one write per trip, are
    # writers of their own: every counter around it is enumerated
    every = bool(a.box) and not a.partition or a.same_per_trip and not a.same_value
    names = [n for n, _, _ in a.counters if n in used or every]
    ranges = [range(lo, hi + 1) for n, lo, hi in a.counters if n in names]
    lanes = sorted(a.lanes) if LANE in used or not a.one_lane else sorted(a.lanes)[:1]
    total = len(lanes)
    for r in ranges:
        total *= len(r)
    if total > MAX_POINTS:
        return f"its lanes and loop counters take {total} values (at most {MAX_POINTS} are " \
               "evaluated)"
    f = Folder()
    out = []
    n = len(clusters)
    for lane in lanes:
        thread = (a.cta, "partition", a.partition) if a.partition else \
            (a.cta, a.warp, "elected" if a.one_lane else lane)
        at_lane = [subst(e, {LANE: lane}, f) for e in origin]
        # affine in the counters too (the usual case): each point by arithmetic
        whole = [affine(e, tuple(clusters) + tuple(names)) for e in at_lane]
        for values in itertools.product(*ranges):
            if None not in whole:
                forms = [(c[:n], r + sum(x * y for x, y in zip(c[n:], values)))
                         for c, r in whole]
            else:
                forms = [affine(subst(e, dict(zip(names, values)), f), clusters)
                         for e in at_lane]
                if None in forms:
                    return "its place is not an affine function of the cluster index"
            out.append((thread, tuple(c for c, _ in forms), tuple(r for _, r in forms), values))
    return out


MAX_SHIFTS = 4096  # cluster index differences tried one by one, at most


def _shifts(coef, counts: tuple[Optional[int], ...], span) -> Optional[set]:
    """Every move ``coef . d`` between the places of two clusters (d != 0 a difference of
    cluster indices) shorter than `span` in every coordinate (one of each pair +-); the zero
    move in it when two clusters access the same places; None when there are too many to try,
    or an unbounded dimension cannot be bounded. `coef`: per coordinate, the coefficients of
    clusterid x, y, z (one coordinate: a plain tuple, and `span` an int)."""
    if isinstance(span, int):
        coef, span = (tuple(coef),), (span,)
    dims = range(len(counts))
    for x in dims:
        if counts[x] != 1 and all(c[x] == 0 for c in coef):
            return {(0,) * len(coef)}
    bound = {}
    for x in (x for x in dims if counts[x] is None):
        # a coordinate that only this unbounded dimension moves bounds it: a difference there
        # farther than the other dimensions can make up (plus a span) is a span or more apart
        j = next((j for j, c in enumerate(coef) if c[x] and all(
            c[y] == 0 for y in dims if y != x and counts[y] is None)), None)
        if j is None:
            return None
        reach = span[j] + sum(abs(coef[j][y]) * (counts[y] - 1) for y in dims
                              if counts[y] is not None)
        bound[x] = reach // abs(coef[j][x]) + 1
    axes = [range(-(n - 1), n) for n in (bound.get(x, counts[x]) for x in dims)]
    total = 1
    for r in axes:
        total *= len(r)
    if total > MAX_SHIFTS:
        return None
    out = set()
    for d in itertools.product(*axes):
        if any(d):
            move = tuple(sum(a * y for a, y in zip(c, d)) for c in coef)
            if all(abs(m) < s for m, s in zip(move, span)):
                out.add(max(move, tuple(-m for m in move)))
    return out


def _meet(p0, e0, p1, e1) -> bool:
    return all(a < b + m and b < a + n for a, n, b, m in zip(p0, e0, p1, e1))


MAX_BITS = 1 << 28  # cells of the grid of places compared between clusters, at most


def _repeat(x: int, n: int, step: int) -> int:
    """`x` OR-ed with itself shifted by step, 2 step, ..., (n - 1) step (by doubling)."""
    out, have = 0, 0
    block, size = x, 1
    while n:
        if n & 1:
            out |= block << (have * step)
            have += size
        block |= block << (size * step)
        size *= 2
        n >>= 1
    return out


def _cells(boxes: list, lo: list, span: tuple, strides: list) -> int:
    """The cells of `boxes` ((origin, extent, _)) as the bits of an int: cell x at bit
    sum((x_j - lo_j + span_j) * strides_j), a span of room on each side of every coordinate.
    A box of few cells sets them one by one; a large one is a run along the first coordinate
    (strides[0] is 1) repeated along the others, OR-ed in whole."""
    size = ((3 * span[-1]) * strides[-1]) // 8 + 1
    bits = bytearray(size)
    shapes: dict = {}
    whole = 0
    for o, e, _ in boxes:
        base = [x - l + sp for x, l, sp in zip(o, lo, span)]
        cells = 1
        for n in e:
            cells *= n
        if cells * 1000 < size:
            for cell in itertools.product(*(range(b, b + n) for b, n in zip(base, e))):
                i = sum(x * st for x, st in zip(cell, strides))
                bits[i >> 3] |= 1 << (i & 7)
            continue
        e = tuple(e)
        if e not in shapes:
            b = (1 << e[0]) - 1
            for n, st in zip(e[1:], strides[1:]):
                b = _repeat(b, n, st)
            shapes[e] = b
        whole |= shapes[e] << sum(x * st for x, st in zip(base, strides))
    return int.from_bytes(bits, "little") | whole


def _moves_meet(boxes: list, shifts: set, lo: list, span: tuple) -> Optional[tuple]:
    """A move of `shifts` (either sign) that puts a written box on an accessed one; None if
    none does; `()` when the places are too many to compare."""
    strides, width = [], 1
    for sp in span:
        strides.append(width)
        width *= 3 * sp  # a move is shorter than the span: no coordinate wraps into the next
    if width > MAX_BITS:
        return ()
    accessed = _cells(boxes, lo, span, strides)
    written = _cells([b for b in boxes if b[2].write], lo, span, strides)
    for s in sorted(shifts):
        d = abs(sum(m * st for m, st in zip(s, strides)))  # (both signs are tried)
        if (written << d) & accessed or (written >> d) & accessed:
            return s
    return None


def _where(tiles: bool, o0, o1) -> str:
    first = tuple(max(a, b) for a, b in zip(o0, o1))
    return f"coordinate {first if len(first) > 1 else first[0]}" if tiles else f"byte {first[0]}"


def _within_cluster(points: list) -> Optional[tuple]:
    """Two points of one cluster whose boxes meet, one a write, by two threads (lanes of one
    warp storing one value in one store, at one trip when `same_per_trip`, are one write). Each
    TMA store issued is a writer of its own: a thread's bulk stores are not ordered with each
    other (their writes complete asynchronously)."""
    seen = {}
    for t, _, r, a, trip in points:
        if a.write and (a.same_value or a.same_per_trip) and len(a.lanes) > 1 and \
                not a.one_lane:
            # the warp's lanes, one writer (per trip when the value changes with the trip)
            t = t[:2] + (("lanes",) if a.same_value else ("lanes", trip),)
        if a.partition:  # one accessor per place of the partitioned tile
            t = t + (r,)
        elif a.box:  # each TMA store issued
            t = t + (id(a), trip)
        seen.setdefault((t, id(a), r), (t, r, a))
    pts = sorted(seen.values(), key=lambda p: p[1][0])
    active: list = []
    for t, r, a in pts:
        e = _places(a)[1]
        active = [q for q in active if q[1][0] + _places(q[2])[1][0] > r[0]]
        for q in active:
            if q[0] != t and (a.write or q[2].write) and _meet(r, e, q[1], _places(q[2])[1]):
                return q, (t, r, a)
        active.append((t, r, a))
    return None


def ownership_why(accesses: list[GlobalAccess],
                  counts: tuple[Optional[int], ...]) -> Optional[tuple[Loc, str]]:
    """Why the accesses of one kernel argument may race between threads of the grid (None:
    no byte is accessed by two threads with a write among the accesses); `counts`: the
    clusters of the grid along x, y, z (None: not static)."""
    if not any(a.write for a in accesses):
        return None
    for a in accesses:
        if a.offset is None and not a.box:
            return a.loc, a.why or "its place is not known"
    read = next((a for a in accesses if a.asynchronous), None)
    if read is not None:  # (its order with the thread's own writes is not followed)
        return read.loc, ("a cp.async reads it and the kernel writes it: a thread's asynchronous "
                          "read is not ordered with its own later write before its "
                          "cp.async.wait_group")
    ranks = {len(_places(a)[1]) for a in accesses}
    if len(ranks) > 1:
        return accesses[0].loc, ("it is placed both by coordinates (TMA stores, tiles of a "
                                 "tensor with dynamic strides) and by bytes")
    k, tiles = ranks.pop(), bool(accesses[0].box)
    points = []
    for a in accesses:
        p = _points(a, CLUSTER_VARS)
        if isinstance(p, str):
            return a.loc, p
        points += [(t, c, r, a, trip) for t, c, r, trip in p]
    coefs = {c for _, c, _, _, _ in points}
    if len(coefs) > 1:
        first = next(a for _, c, _, a, _ in points if c != points[0][1])
        return first.loc, ("its accesses at lines " f"{points[0][3].loc.line} and "
                           f"{first.loc.line} move differently with the cluster index")
    met = _within_cluster(points)
    if met is not None:
        (t0, r0, other), (t1, r1, a) = met
        if a.box and other.box and not (a.partition or other.partition) and t0[:2] == t1[:2]:
            return a.loc, (f"two TMA stores of one warp (lines {other.loc.line} and "
                           f"{a.loc.line}) write {_where(tiles, r0, r1)} of it, not ordered with "
                           "each other (bulk stores complete asynchronously)")
        return a.loc, (f"two threads of one cluster access {_where(tiles, r0, r1)} of it (lines "
                       f"{other.loc.line} and {a.loc.line}), "
                       f"{'both writes' if a.write and other.write else 'one a write'}")
    boxes = [(r, _places(a)[1], a) for _, _, r, a, _ in points]
    lo = [min(o[j] for o, _, _ in boxes) for j in range(k)]
    span = tuple(max(o[j] + e[j] for o, e, _ in boxes) - lo[j] for j in range(k))
    shifts = _shifts(next(iter(coefs)), counts, span)
    write = next(a for _, _, _, a, _ in points if a.write)
    unit = "coordinates" if tiles else "bytes"
    if shifts is None:
        return write.loc, "the clusters are too many to compare"
    if (0,) * k in shifts:
        d = next((d for x, (n, d) in enumerate(zip(counts, "xyz"))
                  if n != 1 and all(c[x] == 0 for c in next(iter(coefs)))), None)
        return write.loc, (f"every cluster along {d} accesses the same {unit}" if d else
                           f"two clusters access the same {unit}")
    met = _moves_meet(boxes, shifts, lo, span)
    if met == ():
        return write.loc, f"the {unit} of a cluster are too many to compare"
    if met is not None:
        return write.loc, f"the {unit} of clusters {met if k > 1 else met[0]} {unit} apart overlap"
    return None


def cluster_counts(k) -> tuple[Optional[int], ...]:
    """The clusters of the grid along x, y, z (None where the grid size is not static: the
    whole grid's, else each dimension the host launches with a constant)."""
    from ..frontend.mlir_data import GRID_EXTENTS_ATTR
    cluster = k.cluster_dim or (1, 1, 1)
    grid = k.grid_dim or tuple(k.attrs.get(GRID_EXTENTS_ATTR) or (None, None, None))
    return tuple(None if g is None else g // c for g, c in zip(grid, cluster))


def _label(ctx, root: int) -> str:
    """How the verdict names kernel argument `root`'s memory: the tensor's name, or for a TMA
    descriptor (a TMA store's) the tensor it was made from."""
    from .data import global_label
    arg = next((a for a in ctx.kernel.args if a.index == root), None)
    if arg is not None and "non_exec_tiled_tma" in arg.type:
        return f"the global tensor of TMA descriptor argument {root}"
    return f"global data {global_label(ctx, root)}"


def global_unchecked(ctx) -> list:
    """Outside grid models: an `Unchecked` race on each kernel argument the kernel writes whose
    accesses are not proven apart between the threads of the grid, and on global memory when
    a write the model does not place reaches memory not attributed to an argument."""
    from ..syncir.ir import Unchecked
    if ctx.grid_why is None:
        return []
    written, _ = ctx.written_gmem()
    out = []
    unplaced: dict[Optional[int], tuple[str, Loc]] = {}
    for root, name, loc in ctx.gmem_unplaced.values():
        unplaced.setdefault(root, (name, loc))
    if None in unplaced:
        name, loc = unplaced[None]
        out.append(Unchecked("race", "global memory", f"{name} at {loc.short()} writes global "
                             "memory the model does not attribute to a kernel argument", loc))
    by_root: dict[int, list[GlobalAccess]] = {}
    for a in ctx.global_accesses:
        by_root.setdefault(a.root, []).append(a)
    counters = {n[3:] for n in ctx.counters}
    for root in sorted(written):
        if str(root) in counters or (root not in unplaced and root not in by_root):
            continue  # a counter, or written only by ops whose rules model the write
        label = _label(ctx, root)
        if root in unplaced:
            name, loc = unplaced[root]
            why = f"which elements the {name} at {loc.short()} writes is not followed"
        else:
            loc = by_root[root][0].loc
            why = ctx.global_data_why(root, ctx.gmem_settled, ctx.gmem_recorded)
            found = None if why is not None else ownership_why(by_root[root], cluster_counts(ctx.kernel))
            if found is not None:
                loc, why = found
        if why is not None:
            out.append(Unchecked("race", label, f"threads of the grid are not shown apart there: "
                                 f"{why}", loc))
        else:
            if any(a.box for a in by_root.get(root, ())):
                ctx.assumptions.add(f"{label}: its layout is one-to-one (no two coordinates it "
                                    "is accessed at share an address)")
            ctx.assumptions.add("global memory the kernel writes: kernel arguments (and the "
                                "tensors TMA descriptor arguments were made from) do not alias, "
                                "and no other kernel accesses them while it runs")
    return out
