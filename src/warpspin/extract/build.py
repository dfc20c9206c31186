"""Assemble a SyncIR ``Kernel`` from per-warp walks: thread classes, mbarrier arrays, params."""
from __future__ import annotations

import os
import re
from typing import Mapping, Optional, Union

from ..frontend.mlir_data import TracedKernel
from dataclasses import replace

from ..syncir.ops import (DATA_DEST, ClcTryCancel, BulkCommit, BulkWaitRead, CpAsync,
                          FenceProxyAsync, SmemOwn, SmemRead, SmemWrite, SyncOp, TmaStore,
                          TmemAccess, TmemLoad, TmemWaitLd, Unsupported,
                          WgmmaCommit, WgmmaRead, MmaRead, WgmmaWait, FLAG_OPS,
                          WgmmaAcc, AccAccess, WgmmaReadData)
from ..syncir.ops.wgmma import data_mode_of
from ..syncir.ir import (Unchecked, BufferDecl, Assign, Const, For, If, Kernel, Lanes, MBarrierDecl, NOLOC, Param, Process, Var, While, WordsDecl, expr_vars, rewrite_stmts, stmt_bodies, walk_stmts, with_bodies)
from ..syncir.ops import (BarSync, AtomInc, ClusterArrive, ClusterWait, SmemLoad, SmemStore, StAsync, TmaLoad)
from ..syncir.objects import MAX_STORERS
from ..syncir.printer import fmt_expr
from ..syncir.validate import cross_cta_modelled, reaches_another_cta, some_launch, validate
from .cleanup import finish, stmt_exprs
from .data import follow as follow_data
from .ownership import global_unchecked
from .groups import bulk_groups, cp_groups, wgmma_groups
from .tmem import check as tmem_check
from .values import Folder, opaque
from .walker import LANE_SUBSET, Context, WarpWalker, cluster_coord, to_loc

ParamValue = Union[int, tuple[int, int]]


class ExtractError(Exception):
    """The kernel cannot be turned into SyncIR as asked (e.g. a parameter needs a value)."""


class MissingParams(ExtractError):
    """Launch values the synchronization depends on with no value given: `missing` maps each
    name to the lowest value it may take (a divisor's bound, else None)."""

    def __init__(self, text: str, missing: dict[str, int | None]):
        super().__init__(text)
        self.missing = missing


class ExtractorBug(Exception):
    """The extractor produced SyncIR that does not validate: a bug in warpspin, never a property
    of the kernel (what the extractor cannot express becomes ``Unsupported``)."""

    def __init__(self, kernel: str, problems: list):
        self.kernel = kernel
        self.problems = problems
        super().__init__(f"warpspin extractor bug: the SyncIR extracted from {kernel} is invalid:\n"
                         + "\n".join(f"  {p}" for p in problems))


def short_name(k: TracedKernel) -> str:
    name = re.sub(r"^kernel_cutlass_", "", k.name)
    name = re.split(r"_{2,}|_object_at_|_CopyAtom|_tensor", name)[0] or name
    return re.sub(r"\W", "_", name)[:48] or "kernel"


MAX_GRID_CTAS = 8  # a grid model (global flags between CTAs) holds at most this many CTAs


def _flag_ops(k: TracedKernel) -> list:
    """Ops that hand work between CTAs through global memory: atomic adds (not atom.inc, a
    tile scheduler's counter) and loads with a memory order (spin loops)."""
    return [op for op in k.walk()
            if (op.name == "nvvm.atomicrmw" and not str(op.attrs.get("op", "")).rstrip(">")
                .endswith(" inc")) or op.name == "nvvm.red"
            or (op.name == "nvvm.load.ext" and op.attrs.get("order") is not None)]


def _grid_why(k: TracedKernel) -> Optional[str]:
    """None when the model holds every CTA of the grid (a kernel with global flags, a static
    grid of at most MAX_GRID_CTAS CTAs); else why not."""
    if not _flag_ops(k):
        return "the kernel has no global flag"
    if k.grid_dim is None:
        return "the grid size is not static"
    n = k.grid_size
    if n > MAX_GRID_CTAS:
        return f"the grid has {n} CTAs (a grid model holds at most {MAX_GRID_CTAS})"
    return None


def grid_block(k: TracedKernel, cta: int) -> tuple[int, int, int]:
    """The block index of CTA `cta` of a grid model: the model numbers the CTAs cluster by
    cluster (CTA c is rank c % n of cluster c // n, n CTAs per cluster), the clusters of the
    grid and the ranks of a cluster each x fastest."""
    n = k.cluster_size
    cx, cy, cz = k.cluster_dim or (1, 1, 1)
    gx, gy, _ = (g // c for g, c in zip(k.grid_dim, (cx, cy, cz)))
    q, r = divmod(cta, n)
    cluster = (q % gx, (q // gx) % gy, q // (gx * gy))
    return tuple(cluster[i] * (cx, cy, cz)[i] + cluster_coord(k, r, d)
                 for i, d in enumerate("xyz"))


def _units(k: TracedKernel, grid: bool = False) -> list[tuple[int, int, int]]:
    """(cta, warp, threads in that warp) for every warp of every CTA of one cluster (of the
    grid, in a grid model)."""
    if k.block_dim is None:
        raise ExtractError("the kernel has no static block size (nvvm.reqntid); warpspin needs one")
    if k.attrs.get("warpspin.cluster_dim_unknown"):
        raise ExtractError("the kernel's cluster size could not be read: it has no "
                           "cutlass_launch_facts and its host launch (cuda.launch_cfg.cluster_dim) "
                           "has no constant size; warpspin needs a static cluster size")
    if k.grid_dim is not None and k.cluster_dim is not None:
        for d, g, c in zip("xyz", k.grid_dim, k.cluster_dim):
            if c < 1 or g % c:
                raise ExtractError(f"grid size {d} = {g} is not a multiple of the cluster size "
                                   f"{d} = {c}: the launch fails")
    n = k.threads_per_block
    units = []
    for cta in range(k.grid_size if grid else k.cluster_size):
        for w in range((n + 31) // 32):
            units.append((cta, w, min(32, n - 32 * w)))
    return units


def _role(labels: list[str], first: int, last: int) -> str:
    for lab in labels:
        if lab.startswith("role="):
            return re.sub(r"\W", "_", lab[5:])
    return f"warp{first}" if last - first == 1 else f"warps{first}_{last - 1}"


class UnknownParams(ExtractError):
    """--param names that are no launch value of the kernel (`unknown`), with the kernel's."""

    def __init__(self, text: str, unknown: list[str]):
        super().__init__(text)
        self.unknown = unknown


def _unknown_params(ctx: Context, used: set[str], given: Mapping[str, ParamValue]) -> None:
    known = set(ctx.params) | {i.alias for i in ctx.params.values() if i.alias}
    unknown = sorted(set(given) - known)
    if not unknown:
        return
    lines = [f"  {n}   ({ctx.params[n].what}, {ctx.params[n].loc})"
             for n in sorted(ctx.params, key=lambda n: (n not in used, n))]
    names = ", ".join(f"--param {n}" for n in unknown)
    raise UnknownParams(f"{names}: the kernel has no launch value of that name; its launch values "
                        "(those its synchronization depends on first):\n" + "\n".join(lines)
                        if lines else f"{names}: the kernel has no launch value its "
                        "synchronization depends on", unknown)


def _params(ctx: Context, used: set[str], given: Mapping[str, ParamValue]) -> tuple[Param, ...]:
    _unknown_params(ctx, used, given)
    out, missing, lows = [], [], {}
    for name in sorted(used):
        info = ctx.params[name]
        v = given.get(name, given.get(info.alias, info.default) if info.alias else info.default)
        if v is None:
            also = f" (or {info.alias})" if info.alias else ""
            missing.append(f"  --param {name}=N{also}   ({info.what}, {info.loc})")
            lows[name] = info.at_least
            continue
        lo, hi = (v, v) if isinstance(v, int) else v
        if info.at_least is not None and lo < info.at_least:
            raise ExtractError(f"--param {name}={lo}..{hi}: {info.what} divides, so each value "
                               f"must be at least {info.at_least} ({info.loc})")
        out.append(Param(name, lo, hi))
    if missing:
        raise MissingParams("the synchronization depends on launch values with no concrete "
                            "value; give them:\n" + "\n".join(missing), lows)
    return tuple(out)


def _grid_constraints(used: set[str]) -> tuple:
    """The modelled cluster is one of the grid's: clusterid_d < nclusterid_d in every dimension
    where both are launch parameters (PTX 10, %clusterid and %nclusterid)."""
    return tuple(Var(f"clusterid_{d}").lt(Var(f"nclusterid_{d}")) for d in "xyz"
                 if f"clusterid_{d}" in used and f"nclusterid_{d}" in used)


def _without_cluster_ops(body: tuple, k: TracedKernel, cta: int) -> tuple:
    """A grid model (every CTA of the grid) models of the ops that reach another CTA through the
    cluster only the cluster barrier and mbarrier.arrive into a CTA of the cluster
    (`validate.cross_cta_modelled`): each other is Unsupported with its line."""
    n = k.cluster_size
    own = range(cta - cta % n, cta - cta % n + n)

    def one(st):
        if isinstance(st, SyncOp) and not isinstance(st, Unsupported) and \
                reaches_another_cta(st) and not cross_cta_modelled(st, own):
            return (Unsupported(f"{st.mnemonic}: an op that reaches another CTA of its cluster, in "
                                "a grid model (every CTA of the grid; modelled there: the cluster "
                                "barrier and mbarrier.arrive into a CTA of the cluster)",
                                st.loc),)
        return (st,)
    return rewrite_stmts(tuple(body), one)


def _cta_blocks(k: TracedKernel, used: set[str], ctas: int = 0) -> tuple:
    """Each CTA's block index (x, y, z) over the launch params (``ctaid = clusterid * cluster +
    the CTA's coordinate in its cluster``), for reports; () when a dimension is not determined
    (its cluster index is not a param the model uses, and the grid has several clusters in it)."""
    if ctas:  # a grid model
        return tuple(tuple(Const(i) for i in grid_block(k, c)) for c in range(ctas))
    cluster = k.cluster_dim or (1, 1, 1)
    blocks = []
    for cta in range(k.cluster_size):
        b = []
        for i, d in enumerate("xyz"):
            r = Const(cluster_coord(k, cta, d))
            if f"clusterid_{d}" in used:
                f = Folder()
                b.append(f.binop("+", f.binop("*", Var(f"clusterid_{d}"), Const(cluster[i])), r))
            elif k.grid_dim is not None and k.grid_dim[i] == cluster[i]:
                b.append(r)  # one cluster in this dimension
            else:
                return ()
        blocks.append(tuple(b))
    return tuple(blocks)


def _walk(k: TracedKernel, given: Mapping[str, ParamValue],
          plain: frozenset = frozenset()) -> tuple[Context, list]:
    """Every warp of the model walked once: the context and (cta, warp, lanes, body, labels)."""
    ctx = Context(k, given=given, plain_buffers=plain)
    ctx.grid_why = _grid_why(k)
    grid = ctx.grid_why is None
    walks = []
    for cta, warp, lanes in _units(k, grid):
        w = WarpWalker(ctx, warp, lanes, cta, grid_block(k, cta) if grid else None)
        stmts, _ = w.block(k.body.blocks[0], [w.val(a.value) for a in k.args])
        walks.append((cta, warp, lanes, finish(stmts), w.labels))
    return ctx, walks


def build(k: TracedKernel, params: Optional[Mapping[str, ParamValue]] = None) -> Kernel:
    ctx, walks = _walk(k, params or {})
    if ctx.plain_found:
        # plain shared tensors that TMA stores read are buffers of one stage: walked again
        # with them known, so every access of their bytes before the store is attributed too
        ctx, walks = _walk(k, params or {}, frozenset(ctx.plain_found))
    grid = ctx.grid_why is None
    if grid:
        walks = [(cta, warp, lanes, _without_cluster_ops(body, k, cta), labels)
                 for cta, warp, lanes, body, labels in walks]
    walks, data_words, ctx.data_explained = follow_data(ctx, walks)
    ctx.unchecked += global_unchecked(ctx)
    walks = _wgmma_data(ctx, walks, data_words)
    proxy_data = _reads_data(w[3] for w in walks)
    staged = _staged_buffers(ctx, walks)
    if tmem_check(ctx) is None:  # TMEM buffers: every TMEM access attributed (extract/tmem.py)
        for (_, _, count, _), (name, label, loc) in ctx.tmem_buffers.items():
            staged[name] = [label, loc, count, False, "tmem"]
            ctx.assumptions.add(f"TMEM buffer {label}: a slice, tile or partition of a tensor "
                                "of tensor memory stays inside the tensor's columns (its "
                                "coordinates are in range)")
    walks = [(cta, warp, lanes, _without_idle_groups(_only_buffers(_shared_marked(body, ctx),
                                                                   staged, proxy_data)), labels)
             for cta, warp, lanes, body, labels in walks]

    # consecutive warps of one CTA with the same body and width form one process (a warp that
    # TMA-stores a staged buffer stays its own: a buffer's storing process is one thread)
    procs: list[Process] = []
    i = 0
    while i < len(walks):
        cta, w0, lanes, body, labels = walks[i]
        j = i + 1
        alone = any(isinstance(s, TmaStore) for s in walk_stmts(body))
        while not alone and j < len(walks) and walks[j][0] == cta and walks[j][2] == lanes and \
                walks[j][3] == body:
            j += 1
        procs.append(Process(role=_role(labels, w0, w0 + j - i), body=body, cta=cta,
                             warps=(w0, w0 + j - i), threads=lanes, instances=j - i))
        i = j
    names = [p.role for p in procs]
    procs = [p if names.count(p.role) == 1 else
             Process(f"{p.role}_cta{p.cta}", p.body, p.cta, p.warps, p.threads, p.instances)
             for p in procs]

    words, procs = _words(ctx, procs, data_words)
    buffers, procs = _buffers(ctx, procs, staged)
    tensormaps, procs = bulk_groups(k, ctx, procs, buffers)
    used: set[str] = set()
    for p in procs:
        for s in walk_stmts(p.body):
            for e in stmt_exprs(s):
                used |= expr_vars(e) & set(ctx.params)
    counted = {s.counter for p in procs for s in walk_stmts(p.body) if isinstance(s, AtomInc)} | \
        {s.pool for p in procs for s in walk_stmts(p.body) if isinstance(s, ClcTryCancel)}
    counters = tuple(d for n, d in sorted(ctx.counters.items()) if n in counted)
    for d in counters:
        used |= expr_vars(d.limit) & set(ctx.params)
    flagged = {s.flag for p in procs for s in walk_stmts(p.body) if isinstance(s, FLAG_OPS)}
    flags = tuple(d for n, d in sorted(ctx.flags.items()) if n in flagged)
    ctas = k.grid_size if grid else k.cluster_size
    names = element_names(procs)
    bars = tuple(MBarrierDecl(name, size, loc, elements=names.get(name, ()))
                 for name, size, loc in ctx.arrays.values())
    out = Kernel(name=short_name(k), processes=tuple(procs), mbarriers=bars,
                 params=_params(ctx, used, params or {}), num_ctas=ctas,
                 cluster_ctas=k.cluster_size if grid else 0, flags=flags,
                 loc=to_loc(k.loc), cta_blocks=_cta_blocks(k, used, ctas if grid else 0),
                 words=words,
                 assumptions=tuple(sorted(ctx.assumptions)), counters=counters,
                 unchecked=tuple(dict.fromkeys(ctx.unchecked)),
                 constraints=_grid_constraints(used), tensormaps=tensormaps, buffers=buffers)
    if out.constraints and not some_launch(out):  # the user's --param values, not a bug
        raise ExtractError("no values of the launch parameters satisfy the launch constraints ("
                           + ", ".join(fmt_expr(c) for c in out.constraints)
                           + "): give other --param values")
    problems = validate(out)
    if problems:
        raise ExtractorBug(out.name, problems)
    return out


def _words(ctx: Context, procs: list[Process], data: tuple[WordsDecl, ...] = ()
           ) -> tuple[tuple[WordsDecl, ...], list[Process]]:
    """The shared-word arrays, each rebased to the lowest word the kernel accesses as a value.
    An array some other write may overlap (a copy, a store of a value the model does not follow,
    a write into unknown shared memory) is not modelled: its stores go, its loads become values
    not modelled, and what depends on them is Unsupported, naming the write. The cells of
    shared data (`data`, extract/data.py) go the same way where a relaxed arrive may carry a
    hand-off (their races are then not checked)."""
    if not ctx.word_arrays and not data:
        return (), procs
    decls, rebase, dropped = [], {}, {}
    # a relaxed arrive orders no store before it, and a hand-off may pass through any warp's
    relaxed = [what for _, what in ctx.relaxed_arrives]
    if _words_after_first_cluster_wait(procs):
        relaxed = [what for what in relaxed if ".cluster.arrive" not in what]
    wide = _wide_st_async(procs)
    for uid, (name, label, lo, hi, loc) in ctx.word_arrays.items():
        clash = [what for a, rng, what in ctx.smem_writes
                 if a is None or (a == uid and (rng is None or (rng[0] < 4 * hi and 4 * lo < rng[1])))]
        clash += relaxed + wide.get(name, [])
        if clash:
            dropped[name] = f"a shared word {clash[0]} may also write"
        else:
            rebase[name] = lo
            decls.append(WordsDecl(name, hi - lo, loc, label))
    for d in data:
        if relaxed or wide.get(d.name):
            dropped[d.name] = "not followed"
            why = (f"{relaxed[0]} is a relaxed arrive: it orders no write of the data before it"
                   if relaxed else f"{wide[d.name][0]}: one st.async per thread is not split")
            ctx.unchecked.append(Unchecked("race", d.label, why, d.loc))
        else:
            rebase[d.name] = 0
            decls.append(d)
    if decls and ctx.derived_view_writes:
        ctx.assumptions.add("shared words: a tensor derived from a shared-memory tensor (a "
                            "partition, tile or slice) stays inside that tensor's bytes")

    responses = {s.ref.name for p in procs for s in walk_stmts(p.body)
                 if isinstance(s, ClcTryCancel)}

    def fix(st):
        if isinstance(st, WgmmaReadData):
            return () if st.array in dropped else (st,)
        if not isinstance(st, (SmemStore, SmemLoad, StAsync)):
            return (st,)
        name = st.ref.name
        if name in dropped:
            if isinstance(st, SmemLoad):  # (a cell of shared data: its value is read by nothing)
                return () if st.dest == DATA_DEST else \
                    (Assign(st.dest, opaque(f"{dropped[name]}"), st.loc),)
            if isinstance(st, ClcTryCancel):  # its bytes still complete on the barriers
                mask = Const((1 << ctx.kernel.cluster_size) - 1) if st.multicast else None
                return (TmaLoad(st.bar, st.bytes, st.loc, multicast=mask),)
            if isinstance(st, StAsync):  # its bytes still complete on the barrier
                return (TmaLoad(st.bar, st.bytes, st.loc),)
            return ()
        if isinstance(st, SmemLoad) and name in responses and st.dest not in ctx.clc_loads:
            return (Assign(st.dest, opaque(f"a word of a cluster launch control response (only "
                                           f"is_canceled is followed)@{os.path.basename(st.loc.file)}:"
                                           f"{st.loc.line}"), st.loc),)
        f = Folder()
        return (replace(st, ref=replace(st.ref, index=f.binop("-", st.ref.index,
                                                               Const(rebase[name])))),)

    procs = [replace(p, body=finish(list(rewrite_stmts(p.body, fix)))) for p in procs]
    return tuple(decls), procs


def _reads_data(bodies) -> bool:
    """Whether a wgmma reads shared data in one of `bodies`."""
    return any(isinstance(s, WgmmaReadData) for b in bodies for s in walk_stmts(b))


def _wgmma_data(ctx: Context, walks: list, data: tuple[WordsDecl, ...]) -> list:
    """The walks without the wgmma reads of shared data whose stores are not known to be fenced
    for the async proxy (ops.wgmma_data_mode "unknown"): races on it are then not checked."""
    bodies = [w[3] for w in walks]
    read = {s.array for b in bodies for s in walk_stmts(b) if isinstance(s, WgmmaReadData)}
    unknown = {d.name: d for d in data
               if d.name in read and data_mode_of(bodies, d.name) == "unknown"}
    if not unknown:
        return walks
    for d in unknown.values():
        ctx.unchecked.append(Unchecked(
            "race", d.label, "a wgmma reads it, and a thread's store of it meets the thread's "
            "next synchronization before a fence.proxy.async, or another CTA or an st.async "
            "writes it: whether a proxy fence orders the store before the wgmma is not "
            "followed", d.loc))
    drop = lambda st: () if isinstance(st, WgmmaReadData) and st.array in unknown else (st,)  # noqa: E731
    return [(w[0], w[1], w[2], finish(list(rewrite_stmts(w[3], drop))), *w[4:]) for w in walks]


def _without_idle_groups(body: tuple) -> tuple:
    """A warp that loads through no rewritten tensormap and stores no staged buffer: its bulk
    commits and waits retire nothing the model follows. They go before warps are grouped into
    processes, so that they never tell two warps apart."""
    if any((isinstance(s, TmaLoad) and s.desc is not None) or isinstance(s, TmaStore)
           for s in walk_stmts(body)):
        return body

    def idle(st) -> bool:
        return isinstance(st, (BulkCommit, BulkWaitRead)) or (
            isinstance(st, Unsupported) and st.what.endswith(LANE_SUBSET)
            and st.what.split(": ", 1)[-1].startswith("bulk."))
    return finish(list(rewrite_stmts(body, lambda st: () if idle(st) else (st,))))


def _bufs_of(st) -> set[str]:
    """The staged buffers a statement accesses."""
    if isinstance(st, (SmemWrite, TmaStore, CpAsync, SmemOwn)):
        return {st.buf}
    if isinstance(st, (WgmmaRead, MmaRead, SmemRead, TmemLoad)):
        return {b for b, _ in st.reads}
    if isinstance(st, TmaLoad) and st.dst is not None:
        return {st.dst}
    return set()


def _overlapping(recorded, attributed: dict, name: str, alloc: int, lo: int, hi: int) -> list:
    """What of `recorded` ((allocation, byte range, what) of writes or uses) may touch bytes
    lo..hi of `alloc` and is not a staged access of buffer `name`."""
    return [what for i, (a, rng, what) in enumerate(recorded)
            if attributed.get(i) != name and
            (a is None or (a == alloc and (rng is None or (rng[0] < hi and lo < rng[1]))))]


def _staged_buffers(ctx: Context, walks: list) -> dict[str, list]:
    """The staged buffers the model follows (name -> [label, loc, stages, stored]): a TMA store
    reads one of its stages, or a TMA load fills one; every write into its bytes is a staged
    write or fill of it; where TMA loads fill it, every access of its bytes is a staged one (a
    fill, a wgmma or thread read); and at most two warps per CTA store it. For every other TMA store or
    fill the verdict states that it was not checked."""
    out, reported = {}, set()
    for key, (name, label, loc) in ctx.buffers.items():
        alloc, lo, hi, count, _ = key
        bodies = [(cta, list(walk_stmts(body))) for cta, _, _, body, _ in walks]
        stores = [cta for cta, b in bodies if any(isinstance(s, TmaStore) and s.buf == name
                                                  for s in b)]
        fills = any(isinstance(s, TmaLoad) and s.dst == name for _, b in bodies for s in b)
        copies = any(isinstance(s, CpAsync) and s.buf == name for _, b in bodies for s in b)
        if not stores and not fills and not copies:
            continue
        clash = _overlapping(ctx.smem_writes, ctx.staged_writes, name, alloc, lo, hi)
        used = _overlapping(ctx.smem_uses, ctx.staged_uses, name, alloc, lo, hi) \
            if fills or copies else []
        why = (f"{clash[0]} may write its bytes and is not a write of one of its stages"
               if clash else f"{used[0]} may access its bytes and is not a staged access of it"
               if used else f"more than {MAX_STORERS} warps of a CTA store it"
               if any(stores.count(c) > MAX_STORERS for c in stores) else _cp_why(ctx, name, bodies, copies))
        if why is None:
            out[name] = [label, loc, count, bool(stores)]
        else:
            ctx.unchecked.append(Unchecked("race", label, why, loc))
            reported.add(name)
    for loc, why in ctx.unstaged_stores:
        ctx.unchecked.append(Unchecked("race", "the TMA store's source", why, loc))
    _data_writes(ctx, set(out) | reported)
    return out


def _data_writes(ctx: Context, covered: set[str]) -> None:
    """Writes of data into shared memory by threads that no buffer the model follows (or already
    reports) claims: races on that data are not checked, one record per allocation."""
    seen = {u.what for u in ctx.unchecked if u.property == "race"}  # one record per object
    for i, loc in ctx.data_writes:
        if ctx.staged_writes.get(i) in covered or i in ctx.data_explained:
            continue
        alloc, rng, what = ctx.smem_writes[i]
        label = _alloc_label(ctx, alloc, rng)
        if label not in seen:
            seen.add(label)
            why = ctx.data_why.get(alloc) or f"{what} writes it at an address the model does not place"
            ctx.unchecked.append(Unchecked(
                "race", label, f"{what} writes it, and races on data threads write into shared "
                f"memory are checked only where every access of its bytes is an element store "
                f"or load at a place known per lane: {why}", loc))


def _alloc_label(ctx: Context, alloc, rng) -> str:
    """How the user named the shared memory at `alloc` (a struct field, `sX = ...`), else where
    it is."""
    if alloc is None:
        return "shared memory at an address the model does not follow"
    lo = rng[0] if rng else 0
    field_name = next((f for f, size, off in ctx.alloc_fields.get(alloc, ())
                       if off <= lo < off + size), None)
    return field_name or ctx.alloc_names.get(alloc) or f"shared memory (allocation {alloc})"


def _cp_why(ctx: Context, name: str, bodies: list, copies: bool) -> Optional[str]:
    """Why a buffer that cp.async copies write is not followed (None: it is): every copy and
    access through one partition, and nothing else of the model touches it."""
    if len(ctx.cp_partitions.get(name, ())) > 1 or \
            any(part is None for part, _, _ in ctx.cp_uses.get(name, ())):
        shared = _shared_reads(ctx, name)
        if shared is None:
            return ("its threads copy into it or write it through more than one partition, or "
                    "one line accesses it through two (their parts may overlap)")
        ctx.cp_shared[name] = shared
    other = (SmemWrite, TmaStore, SmemRead, WgmmaRead, MmaRead) if copies else (SmemOwn,)
    if any(isinstance(s, other) and name in _bufs_of(s) for _, b in bodies for s in b) or \
            any(isinstance(s, TmaLoad) and s.dst == name for _, b in bodies for s in b) and copies:
        return "cp.async copies and other async units or staged accesses share it"
    return None


def _shared_reads(ctx: Context, name: str) -> Optional[set]:
    """The lines that read buffer `name` through another partition than its cp.async copies'
    (a vector every thread reads whole, copied in parts: quack's row and column vectors), when
    every copy goes through one partition, no thread writes it and no line uses both (None
    otherwise)."""
    uses = ctx.cp_uses.get(name, [])
    own = {p for p, kind, _ in uses if kind != "read"}
    if len(own) != 1 or any(kind == "write" for _, kind, _ in uses):
        return None  # a thread's own writes would race with the others' reads: not followed
    other = {loc for p, _, loc in uses if p not in own}
    if other & {loc for p, _, loc in uses if p in own}:
        return None
    return other


def _shared_marked(body: tuple, ctx: Context) -> tuple:
    """Each read through another partition than the copies' marked `shared` (its check is
    then every thread's copies in flight, not only its own)."""
    def mark(st):
        if isinstance(st, SmemOwn) and st.loc in ctx.cp_shared.get(st.buf, ()):
            return (replace(st, shared=True),)
        return (st,)
    return rewrite_stmts(body, mark) if ctx.cp_shared else body


def _only_buffers(body: tuple, staged: dict, proxy_data: bool = False) -> tuple:
    """The staged accesses of the buffers the model follows; the proxy fences only when it
    follows one that TMA stores read or this warp reads or writes through the generic proxy (a
    TMA load may refill it), or, with `proxy_data`, where a wgmma reads shared data threads
    write (ops.wgmma_data_mode reads where the fences are); wgmma groups only in a warp whose wgmmas read one. TMEM data
    (`data` of the TMEM accesses) only when the model follows TMEM buffers; tcgen05.wait::ld
    only in a warp whose tcgen05.ld read one."""
    tmem = any(v[4:] == ["tmem"] for v in staged.values())
    stored = any(v[3] for v in staged.values()) or any(
        isinstance(s, (SmemRead, SmemWrite)) and _bufs_of(s) & set(staged)
        for s in walk_stmts(body))
    reads = any(isinstance(s, WgmmaRead) and _bufs_of(s) & set(staged) or
                isinstance(s, (WgmmaAcc, WgmmaReadData)) for s in walk_stmts(body))

    def keep(st) -> tuple:
        if isinstance(st, (SmemWrite, TmaStore, CpAsync, SmemOwn)) and st.buf not in staged:
            return ()
        if isinstance(st, (WgmmaRead, MmaRead, SmemRead, TmemLoad)):
            kept = tuple(r for r in st.reads if r[0] in staged)
            return (replace(st, reads=kept),) if kept else ()
        if isinstance(st, TmemAccess) and st.data and not tmem:
            return (replace(st, data=False),)
        if isinstance(st, TmaLoad) and st.dst is not None and st.dst not in staged:
            return (replace(st, dst=None),)
        if isinstance(st, FenceProxyAsync) and not stored and not proxy_data:
            return ()
        if isinstance(st, (WgmmaCommit, WgmmaWait)) and not reads:
            return ()
        return (st,)
    out = list(_one_access_per_run(rewrite_stmts(body, keep)))
    if not any(isinstance(s, TmemLoad) for s in walk_stmts(out)):
        out = list(rewrite_stmts(tuple(out), lambda st: () if isinstance(st, TmemWaitLd) else (st,)))
    return finish(out)


def _same_but_loc(a, b) -> bool:
    return type(a) is type(b) and replace(a, loc=NOLOC) == replace(b, loc=NOLOC)


def _one_access_per_run(body: tuple) -> tuple:
    """A write of a buffer stage right after writes of buffer stages that include it goes (an
    element loop writes one stage element by element), and consecutive reads of buffer stages
    by wgmma (or by threads) are one op over the stages they read (a k-block loop reads one
    stage per operand and k-block). Exact: after the first write the repeat changes no state,
    and its check sees what the first saw unless a step of another instance between them
    touched the stage, which would itself fail first; reads never block, change only counts
    of the stages they read, and conflict only with fills of those stages, which fail on
    either side of them (docs/semantics.md, "Staged buffers")."""
    out: list = []
    seen: set = set()
    for st in body:
        st = with_bodies(st, tuple(_one_access_per_run(b) for b in stmt_bodies(st)))
        prev = out[-1] if out else None
        if isinstance(st, SmemWrite):
            if not isinstance(prev, SmemWrite):
                seen = set()
            if (st.buf, st.stage) in seen:
                continue
            seen.add((st.buf, st.stage))
        elif isinstance(st, (WgmmaRead, MmaRead, SmemRead)) and type(prev) is type(st) \
                and getattr(st, "pair", None) == getattr(prev, "pair", None):
            out[-1] = replace(prev, reads=prev.reads + tuple(r for r in st.reads
                                                            if r not in prev.reads))
            continue
        elif isinstance(st, (WgmmaAcc, AccAccess)) and _same_but_loc(st, prev):
            continue  # the same local bit set again, or the same locals checked again
        elif isinstance(st, WgmmaRead) and isinstance(prev, WgmmaAcc) and len(out) > 1 and \
                isinstance(out[-2], WgmmaRead):
            # wgmma reads, accumulator, reads: the accumulator's bit (a local no read touches)
            # set after the merged reads
            out[-2] = replace(out[-2], reads=out[-2].reads + tuple(r for r in st.reads
                                                                  if r not in out[-2].reads))
            continue
        out.append(st)
    return tuple(out)


def _buffers(ctx: Context, procs: list[Process], staged: dict) -> tuple[tuple[BufferDecl, ...],
                                                                      list[Process]]:
    """The staged buffers' declarations: the storing process of each CTA, and the named barrier
    its bar.syncs wait on (one constant id; none: nothing hands writes over). A storing process
    that waits on several ids, or stores, commits and waits with different lane counts, is not
    followed (the verdict says so)."""
    decls, dropped = [], set()
    for name, (label, loc, count, _, *space) in staged.items():
        if space == ["tmem"]:  # no stores, no hand-over (only tcgen05 accesses)
            decls.append(BufferDecl(name, count, (), None, loc, label, (), space="tmem"))
            continue
        storers = [i for i, p in enumerate(procs)
                   if any(isinstance(s, TmaStore) and s.buf == name for s in walk_stmts(p.body))]
        ids, lanes = [], set()
        for i in storers:
            for st, threads in _with_threads(procs[i].body, procs[i].threads):
                if isinstance(st, BarSync):
                    ids.append(st.barrier_id.value if isinstance(st.barrier_id, Const) else None)
                if isinstance(st, (TmaStore, BulkCommit, BulkWaitRead)):
                    lanes.add(threads)
        why = ("its storing warp waits on a named barrier with a computed id" if None in ids else
               "its storing warp stores, commits and waits with different lanes"
               if len(lanes) > 1 else None)
        if why is not None:
            dropped.add(name)
            ctx.unchecked.append(Unchecked("race", label, why, loc))
            continue
        # the id it waits on most often hands writes over; a write released on another is
        # unsupported (ops.buffer_releases)
        barrier = max(set(ids), key=lambda i: (ids.count(i), i), default=None)
        others = tuple(sorted(set(ids) - {barrier}))
        decls.append(BufferDecl(name, count, tuple(storers), barrier, loc, label, others))
    if dropped:
        keep = {n: v for n, v in staged.items() if n not in dropped}
        proxy_data = _reads_data(p.body for p in procs)
        procs = [replace(p, body=_only_buffers(p.body, keep, proxy_data)) for p in procs]
    return tuple(decls), cp_groups(wgmma_groups(procs))


def _with_threads(body, threads: int):
    """Every statement of `body` with the threads that execute it (Lanes narrow them)."""
    for st in body:
        yield st, threads
        if isinstance(st, Lanes):
            yield from _with_threads(st.body, st.count)
        elif isinstance(st, If):
            yield from _with_threads(st.then, threads)
            yield from _with_threads(st.else_, threads)
        elif isinstance(st, (For, While)):
            yield from _with_threads(st.body, threads)


def _wide_st_async(procs: list[Process]) -> dict[str, list[str]]:
    """Per word array, its st.async's that more than one thread would execute (the walker
    emits them for one lane, or for a few whose code it then splits per lane; where it could
    not split them, their words are not modelled)."""
    out: dict[str, list[str]] = {}

    def scan(body, threads):
        for st in body:
            if isinstance(st, StAsync) and threads != 1:
                out.setdefault(st.ref.name, []).append(
                    f"st.async by {threads} lanes@{os.path.basename(st.loc.file)}:{st.loc.line}")
            elif isinstance(st, Lanes):
                scan(st.body, st.count)
            elif isinstance(st, If):
                scan(st.then, threads)
                scan(st.else_, threads)
            elif isinstance(st, (For, While)):
                scan(st.body, threads)

    for p in procs:
        scan(p.body, p.threads)
    return out


def _words_after_first_cluster_wait(procs: list[Process]) -> bool:
    """Every relaxed cluster arrive is its process's first cluster arrive, at the top level
    before its first cluster wait, and every process writes shared words only after a cluster
    wait at its top level. Then every word write happens after every thread's relaxed arrive
    (the first wait completes only once all of them arrived), so a relaxed arrive orders no
    word write and cannot carry a hand-off of one."""
    for p in procs:
        waited = arrived = False
        top = {id(x) for x in p.body}
        for st in walk_stmts(p.body):
            if isinstance(st, ClusterArrive):
                if st.relaxed and (arrived or waited or id(st) not in top):
                    return False
                arrived = True
            elif isinstance(st, ClusterWait) and id(st) in top and arrived:
                waited = True
            elif isinstance(st, (SmemStore, StAsync)) and not waited:
                return False
    return True


def _owner_role(label: str) -> tuple[str, str]:
    """("ab", "full") of "ab.full"; ("PipelineTmaAsync", "full") of "PipelineTmaAsync(full)"."""
    if label.endswith(")") and "(" in label:
        cls, role = label[:-1].split("(", 1)
        return cls, role
    name, role = label.rsplit(".", 1)
    return name, role


def element_names(procs) -> dict[str, tuple[str, ...]]:
    """Per mbarrier array, a name for each element a pipeline's create() initializes: the
    pipeline's label (or class) and role, and the stage (the element's place among the role's
    elements). Elements no labelled init names keep the default `array[i]`."""
    from ..syncir.ir import Const
    from ..syncir.ops import MbarInit
    groups: dict[tuple[str, str], list[int]] = {}
    named: dict[tuple[str, str], str] = {}   # (array, role) -> the pipeline's own name
    for p in procs:
        for st in walk_stmts(p.body):
            bar, label = getattr(st, "bar", None), getattr(getattr(st, "loc", None), "label", None)
            if bar is None or not label or bar.cta is not None:
                continue
            owner, role = _owner_role(label)
            if isinstance(st, MbarInit) and isinstance(bar.index, Const):
                elements = groups.setdefault((bar.name, label), [])
                if bar.index.value not in elements:
                    elements.append(bar.index.value)
            elif not label.endswith(")"):
                named[(bar.name, role)] = owner
    display: dict[tuple[str, str], str] = {}
    for (array, label) in groups:
        owner, role = _owner_role(label)
        display[(array, label)] = (f"{named[(array, role)]}.{role}" if (array, role) in named
                                   else label)
    ambiguous = {d for d in display.values() if list(display.values()).count(d) > 1}
    out: dict[str, list[str]] = {}
    for (array, label), elements in groups.items():
        base = display[(array, label)]
        if base in ambiguous:
            base = f"{array}.{base}"
        names = out.setdefault(array, [])
        for stage, i in enumerate(sorted(elements)):
            names += [""] * (i + 1 - len(names))
            names[i] = f"{base}[stage {stage}]"
    return {a: tuple(n) for a, n in out.items()}
