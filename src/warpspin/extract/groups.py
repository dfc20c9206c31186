"""The passes that tell group ops which objects they retire: a wgmma, cp.async or bulk
commit / wait is told which buffers, accumulators, data arrays or tensormaps its process's
async ops use, and how many groups to tell apart; a commit or wait that retires nothing the
model follows goes."""
from __future__ import annotations

from dataclasses import replace

from ..syncir.ir import BufferDecl, Process, TensormapDecl, rewrite_stmts, walk_stmts
from ..syncir.ops import (AccAccess, BulkCommit, BulkWaitRead, CpAsync, CpAsyncCommit,
                          CpAsyncWait, SmemOwn, TmaLoad, TmaStore, WgmmaAcc, WgmmaCommit,
                          WgmmaFence, WgmmaRead, WgmmaReadData, WgmmaWait)
from .cleanup import finish
from .context import Context
from .descriptors import one_slot_per_cta


def wgmma_groups(procs: list[Process]) -> list[Process]:
    """Every wgmma commit and wait told which buffer stages, accumulators and shared data its
    warp's wgmmas use and how many groups to tell apart (the kernel's largest wait + 1)."""
    depth = 1 + max((s.n for p in procs for s in walk_stmts(p.body)
                     if isinstance(s, WgmmaWait)), default=0)
    outs = []
    for p in procs:
        bufs = tuple(sorted({b for s in walk_stmts(p.body) if isinstance(s, WgmmaRead)
                             for b, _ in s.reads}))
        accs = tuple(sorted({s.acc for s in walk_stmts(p.body) if isinstance(s, WgmmaAcc)}))
        datas = tuple(sorted({s.array for s in walk_stmts(p.body)
                              if isinstance(s, WgmmaReadData)}))

        def told(st, bufs=bufs, accs=accs, datas=datas):
            if isinstance(st, (WgmmaCommit, WgmmaWait)):
                return (replace(st, bufs=bufs, accs=accs, datas=datas, depth=depth),) \
                    if bufs or accs or datas else ()
            if isinstance(st, AccAccess):  # no wgmma of this warp writes it: nothing pending
                return (replace(st, depth=depth),) if st.acc in accs else ()
            if isinstance(st, WgmmaFence):
                return (replace(st, accs=accs),) if accs else ()
            return (st,)
        outs.append(replace(p, body=finish(list(rewrite_stmts(p.body, told)))))
    return outs


def cp_groups(procs: list[Process]) -> list[Process]:
    """Every cp.async commit and wait told which buffers its thread copies into and how many
    groups to tell apart (the kernel's largest wait + 1); accesses through a thread's own part
    told that depth too. A commit or wait of a process that copies into no followed buffer
    retires nothing the model follows: it goes."""
    depth = 1 + max((s.n for p in procs for s in walk_stmts(p.body)
                     if isinstance(s, CpAsyncWait)), default=0)
    outs = []
    for p in procs:
        bufs = tuple(sorted({s.buf for s in walk_stmts(p.body) if isinstance(s, CpAsync)}))

        def told(st, bufs=bufs):
            if isinstance(st, (CpAsyncCommit, CpAsyncWait)):
                return (replace(st, bufs=bufs, depth=depth),) if bufs else ()
            if isinstance(st, SmemOwn):
                return (replace(st, depth=depth),)
            return (st,)
        outs.append(replace(p, body=finish(list(rewrite_stmts(p.body, told)))))
    return outs


def bulk_groups(k, ctx: Context, procs: list[Process], buffers: tuple[BufferDecl, ...]
                 ) -> tuple[tuple[TensormapDecl, ...], list[Process]]:
    """The tensormaps the kernel rewrites, and every bulk commit and wait_group.read told which
    of them its process loads through, which buffer stages it stores, and how many groups to
    tell apart (the largest wait + 1). A commit or wait of a process that does neither retires
    nothing the model follows: it goes."""
    decls = tuple(TensormapDecl(name, loc, label) for name, label, loc, _ in
                  dict.fromkeys(ctx.tensormaps.values()))
    if tuple(k.grid_dim or ()) != (1, 1, 1) and not (k.cluster_size == 1 and one_slot_per_cta(
            [a for *_, a in ctx.tensormaps.values()])):
        for _, _, loc, _ in dict.fromkeys(ctx.tensormaps.values()):
            ctx.assumptions.add(
                f"tensormaps: the descriptor pointer at {loc.file.rsplit('/', 1)[-1]}:{loc.line} "
                "depends on the block index, and no two CTAs of the grid rewrite or load through "
                "the same descriptor (one slot per CTA, as TensorMapManager lays them out)")
    depth = 1 + max((s.n for p in procs for s in walk_stmts(p.body)
                     if isinstance(s, BulkWaitRead)), default=0)
    outs = []
    stages_of = {d.name: d.stages for d in buffers}
    for p in procs:
        maps = tuple(sorted({s.desc for s in walk_stmts(p.body)
                             if isinstance(s, TmaLoad) and s.desc is not None}))
        stages = tuple((b, i) for b in sorted({s.buf for s in walk_stmts(p.body)
                                               if isinstance(s, TmaStore)})
                       for i in range(stages_of[b]))

        def told(st, maps=maps, stages=stages):
            if not isinstance(st, (BulkCommit, BulkWaitRead)):
                return (st,)
            return (replace(st, maps=maps, depth=depth, stages=stages),) \
                if maps or stages else ()
        outs.append(replace(p, body=finish(list(rewrite_stmts(p.body, told)))))
    return decls, outs
