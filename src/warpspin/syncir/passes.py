"""Whole-kernel SyncIR passes that choose what a check covers (pure functions of a Kernel)."""
from __future__ import annotations

from dataclasses import replace

from .ir import (For, If, Kernel, Lanes, Stmt, While, rewrite_stmts, stmt_bodies, walk_stmts,
                 with_bodies)
from .ops import (CpAsync, MbarInit, MbarInitFence, SmemLoad, SmemOwn, SmemRead, SmemStore,
                  StAsync, TmaLoad, TmaStore, WarpSync, WgmmaCommit, WgmmaRead, WgmmaWait,
                  MmaRead)

LOAD_RACE_OPS = (WgmmaRead, MmaRead, SmemRead, WgmmaCommit, WgmmaWait)


def _load_race_op(s) -> bool:
    """A read of a stage TMA loads fill, or a wgmma group op over such stages (a group op that
    retires only register fragments is not: `wgmma.accumulator` is no load race)."""
    if isinstance(s, (WgmmaCommit, WgmmaWait)):
        return bool(s.bufs)
    return isinstance(s, LOAD_RACE_OPS)


def has_load_races(k: Kernel) -> bool:
    """Whether the kernel follows stages that TMA loads fill (fills, wgmma, tcgen05.mma or
    thread reads)."""
    return any(_load_race_op(s) or (isinstance(s, TmaLoad) and s.dst is not None)
               for p in k.processes for s in walk_stmts(p.body))


def without_load_races(k: Kernel) -> Kernel:
    """The kernel without its model of stages that TMA loads fill: loads fill nothing, wgmma
    and thread reads of stages go, the wgmma groups keep only the register fragments they
    retire, and buffers that neither a TMA store reads nor cp.async copies write go.
    What remains checks everything else exactly as before (these ops touch only buffer state
    and their own locals)."""
    def keep(st) -> tuple:
        if isinstance(st, (WgmmaCommit, WgmmaWait)) and st.accs:
            return (replace(st, bufs=()),)  # the register fragments it retires stay
        if isinstance(st, LOAD_RACE_OPS) or (isinstance(st, For) and not st.body):
            return ()  # (a loop left empty: it only read stages, element by element)
        return (replace(st, dst=None) if isinstance(st, TmaLoad) and st.dst is not None else st,)
    procs = tuple(replace(p, body=rewrite_stmts(p.body, keep)) for p in k.processes)
    stored = {s.buf for p in procs for s in walk_stmts(p.body)
              if isinstance(s, (TmaStore, CpAsync, SmemOwn))}
    return replace(k, processes=procs, buffers=tuple(b for b in k.buffers if b.name in stored))


def without_data_cells(k: Kernel) -> Kernel:
    """The kernel without its cells of shared data (extract/data.py): their stores and loads go
    and an st.async into them is a copy of its bytes. Exact for every property but races: the
    cells hold 0, their loads' destination is read by nothing, and neither blocks."""
    data = {w.name for w in k.words if w.data}
    if not data:
        return k

    def keep(st) -> tuple:
        if isinstance(st, (SmemStore, SmemLoad)) and st.ref.name in data:
            return ()
        if isinstance(st, StAsync) and st.ref.name in data:
            return (TmaLoad(st.bar, st.bytes, st.loc),)
        return (st,)
    procs = _regrouped([replace(p, body=rewrite_stmts(p.body, keep)) for p in k.processes])
    return replace(k, processes=procs, words=tuple(w for w in k.words if not w.data))


def _regrouped(procs: list) -> tuple:
    """Consecutive processes of one CTA with the same body, width and initial values, over
    consecutive warps, as one process with their instances (as the extractor groups warps: the
    cells told them apart)."""
    out: list = []
    for p in procs:
        q = out[-1] if out else None
        if q is not None and (q.cta, q.body, q.threads, q.init) == (p.cta, p.body, p.threads,
                                                                  p.init) \
                and q.warps[1] == p.warps[0] and q.threads == 32 and \
                q.warps[1] - q.warps[0] == q.instances and p.warps[1] - p.warps[0] == p.instances:
            out[-1] = replace(q, warps=(q.warps[0], p.warps[1]),
                              instances=q.instances + p.instances)
        else:
            out.append(p)
    names = [_group_name(p, procs) for p in out]
    return tuple(replace(p, role=n) if n != p.role else p for p, n in zip(out, names))


def _group_name(p, procs: list) -> str:
    """`warps1_7` (with `_ctaN` when several CTAs have such a group) for a regrouped process."""
    if not any(q.role == p.role and q.warps != p.warps for q in procs):
        return p.role
    a, b = p.warps
    name = f"warp{a}" if b - a == 1 else f"warps{a}_{b - 1}"
    return f"{name}_cta{p.cta}" if len({q.cta for q in procs}) > 1 else name


def _inits(body: tuple[Stmt, ...]) -> bool:
    return any(isinstance(s, MbarInit) for s in walk_stmts(body))


def without_noop_fences(k: Kernel) -> tuple[Kernel, int]:
    """R13 (docs/semantics.md, "Reductions"): the kernel without the `fence.mbarrier_init`s that
    change nothing and without its `bar.warp.sync`s (the model's warp moves as one thread), and
    how many went. A fence acts only on the barriers its own instance
    initialized and has not fenced yet: one in a process with no `mbarrier.init` is a no-op, and
    so is one that every path reaches through an earlier fence of the same instance with no init
    of that instance since (a fence followed in its statement list by statements with no init,
    entering an `if` or an elect block, or a loop with no init in its body). A step that never
    blocks, never fails and changes only its own pc can go without changing which violations
    and deadlocks are reachable."""
    dropped = 0

    def fences(body: tuple[Stmt, ...], fenced: bool, keep_warp_sync: bool = False
               ) -> tuple[tuple[Stmt, ...], bool]:
        """`body` without its no-op fences, and whether every path through it ends fenced."""
        nonlocal dropped
        out = []
        for s in body:
            if isinstance(s, WarpSync) and not keep_warp_sync:
                dropped += 1
                continue
            if isinstance(s, MbarInitFence):
                if fenced:
                    dropped += 1
                    continue
                fenced = True
            elif isinstance(s, (For, While)):  # the body may run again after its own inits
                looped = fenced and not _inits(s.body)
                s = with_bodies(s, (fences(s.body, looped, keep_warp_sync)[0],))
                fenced = looped
            elif isinstance(s, (If, Lanes)):  # both branches; a Lanes block every instance runs
                done = [fences(x, fenced, keep_warp_sync) for x in stmt_bodies(s)]
                s = with_bodies(s, tuple(x for x, _ in done))
                fenced = all(f for _, f in done)
                if isinstance(s, Lanes) and not s.body:
                    continue
            elif isinstance(s, MbarInit):
                fenced = False
            out.append(s)
        return tuple(out), fenced

    from .ops.buffers import self_handover_buffers
    # (a bar.warp.sync of a buffer's only storing thread hands its lanes' writes to itself)
    procs = tuple(replace(p, body=fences(p.body, not _inits(p.body),
                                         bool(self_handover_buffers(k, i)))[0])
                  for i, p in enumerate(k.processes))
    return (replace(k, processes=procs) if dropped else k), dropped
