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


def _points(a: GlobalAccess, clusters: tuple[str, ...]):
    """(thread, coefficients, first byte) of every lane and counter value of `a`; a str (why
    not) when its offset is not an affine function of the cluster index there."""
    free = expr_vars(a.offset) - {LANE} - {n for n, _, _ in a.counters} - set(clusters)
    if opaque_reasons(a.offset):
        return f"its place is not known: {opaque_reasons(a.offset)[0]}"
    if free:
        return f"its place depends on {', '.join(sorted(free))}, not only on the lane, the " \
               "loop counters and the cluster index"
    names = [n for n, _, _ in a.counters if n in expr_vars(a.offset)]
    ranges = [range(lo, hi + 1) for n, lo, hi in a.counters if n in names]
    lanes = sorted(a.lanes) if LANE in expr_vars(a.offset) or not a.one_lane else sorted(a.lanes)[:1]
    total = len(lanes)
    for r in ranges:
        total *= len(r)
    if total > MAX_POINTS:
        return f"its lanes and loop counters take {total} values (at most {MAX_POINTS} are " \
               "evaluated)"
    f = Folder()
    out = []
    for lane in lanes:
        thread = (a.cta, a.warp, "elected" if a.one_lane else lane)
        at_lane = subst(a.offset, {LANE: lane}, f)
        for values in itertools.product(*ranges):
            form = affine(subst(at_lane, dict(zip(names, values)), f), clusters)
            if form is None:
                return "its place is not an affine function of the cluster index"
            out.append((thread, form[0], form[1]))
    return out


MAX_SHIFTS = 4096  # cluster index differences tried one by one, at most


def _shifts(coef: tuple[int, ...], counts: tuple[Optional[int], ...],
            span: int) -> Optional[set[int]]:
    """Every distance |coef . d| < span between the bytes of two clusters (d != 0 a difference
    of cluster indices); 0 in it when two clusters access the same places; None when there are
    too many to try, or a dimension has no bound and a distance below `span`."""
    if sum(1 for a, n in zip(coef, counts) if n is None and a != 0) > 1:
        return None
    if any(n is None and a == 0 for a, n in zip(coef, counts)):
        return {0}
    # an unbounded dimension: a difference there farther than the other dimensions can make up
    # (plus a span) puts the clusters a span or more apart
    reach = span + sum(abs(a) * (n - 1) for a, n in zip(coef, counts) if n is not None)
    axes = []
    for a, n in zip(coef, counts):
        if n == 1:
            continue
        if n is None:
            n = reach // abs(a) + 1
        axes.append(range(-(n - 1), n))
    total = 1
    for r in axes:
        total *= len(r)
    if total > MAX_SHIFTS:
        return None
    used = [a for a, n in zip(coef, counts) if n != 1]
    out = set()
    for d in itertools.product(*axes):
        if any(d):
            s = abs(sum(a * x for a, x in zip(used, d)))
            if s < span:
                out.add(s)
    return out


def _clusters_apart(coef: tuple[int, ...], counts: tuple[Optional[int], ...],
                    written: set[int], accessed: set[int]) -> Optional[str]:
    """Why the bytes of two clusters, at `coef . clusterid` plus the bytes `accessed` (`written`
    among them), may meet with a write (None: never); `counts`: the clusters along x, y, z
    (None: not static)."""
    lo, hi = min(accessed), max(accessed) + 1
    shifts = _shifts(coef, counts, hi - lo)
    if shifts is None:
        return "the clusters are too many to compare"
    if 0 in shifts:
        d = next((d for a, n, d in zip(coef, counts, "xyz") if n != 1 and a == 0), None)
        return f"every cluster along {d} accesses the same bytes" if d else \
            "two clusters access the same bytes"
    for s in sorted(shifts):
        if any(b + s in accessed or b - s in accessed for b in written):
            return f"the bytes of clusters {s} bytes apart overlap"
    return None


def ownership_why(accesses: list[GlobalAccess],
                  counts: tuple[Optional[int], ...]) -> Optional[tuple[Loc, str]]:
    """Why the accesses of one kernel argument may race between threads of the grid (None:
    no byte is accessed by two threads with a write among the accesses); `counts`: the
    clusters of the grid along x, y, z (None: not static)."""
    if not any(a.write for a in accesses):
        return None
    points = []
    for a in accesses:
        if a.offset is None:
            return a.loc, a.why or "its place is not known"
        p = _points(a, CLUSTER_VARS)
        if isinstance(p, str):
            return a.loc, p
        points += [(t, c, r, a) for t, c, r in p]
    coefs = {c for _, c, _, _ in points}
    if len(coefs) > 1:
        first = next(a for _, c, _, a in points if c != points[0][1])
        return first.loc, ("its accesses at lines " f"{points[0][3].loc.line} and "
                           f"{first.loc.line} move differently with the cluster index")
    owner: dict[int, tuple] = {}
    for thread, _, r, a in points:
        for b in range(r, r + a.elem):
            seen = owner.get(b)
            if seen is None:
                owner[b] = (thread, a)
            elif seen[0] != thread and (a.write or seen[1].write) and not (
                    # one store of one value by the lanes of a warp (GlobalAccess.same_value)
                    seen[1] is a and a.same_value and seen[0][:2] == thread[:2]):
                other = seen[1]
                return a.loc, (f"two threads of one cluster access byte {b} of it (lines "
                               f"{other.loc.line} and {a.loc.line}), "
                               f"{'both writes' if a.write and other.write else 'one a write'}")
            elif a.write:
                owner[b] = (thread, a)
    why = _clusters_apart(next(iter(coefs)), counts,
                          {b for b, (_, a) in owner.items() if a.write}, set(owner))
    if why is not None:
        a = next(a for _, _, _, a in points if a.write)
        return a.loc, why
    return None


def cluster_counts(k) -> tuple[Optional[int], ...]:
    """The clusters of the grid along x, y, z (None where the grid size is not static)."""
    cluster = k.cluster_dim or (1, 1, 1)
    if k.grid_dim is None:
        return (None, None, None)
    return tuple(g // c for g, c in zip(k.grid_dim, cluster))


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
            why = ctx.global_data_why(root, ctx.gmem_settled)
            found = None if why is not None else ownership_why(by_root[root], cluster_counts(ctx.kernel))
            if found is not None:
                loc, why = found
        if why is not None:
            out.append(Unchecked("race", label, f"threads of the grid are not shown apart there: "
                                 f"{why}", loc))
        else:
            ctx.assumptions.add("global memory the kernel writes: kernel arguments (and the "
                                "tensors TMA descriptor arguments were made from) do not alias, "
                                "and no other kernel accesses them while it runs")
    return out
