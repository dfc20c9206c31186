"""Whole-kernel SyncIR passes that choose what a check covers (pure functions of a Kernel)."""
from __future__ import annotations

from dataclasses import replace

from .ir import (For, If, Kernel, Lanes, Stmt, While, rewrite_stmts, stmt_bodies, walk_stmts,
                 with_bodies)
from .ops import (CpAsync, MbarInit, MbarInitFence, SmemOwn, SmemRead, TmaLoad, TmaStore,
                  WgmmaCommit, WgmmaRead, WgmmaWait)

LOAD_RACE_OPS = (WgmmaRead, SmemRead, WgmmaCommit, WgmmaWait)


def has_load_races(k: Kernel) -> bool:
    """Whether the kernel follows stages that TMA loads fill (fills, wgmma or thread reads)."""
    return any(isinstance(s, LOAD_RACE_OPS) or (isinstance(s, TmaLoad) and s.dst is not None)
               for p in k.processes for s in walk_stmts(p.body))


def without_load_races(k: Kernel) -> Kernel:
    """The kernel without its model of stages that TMA loads fill: loads fill nothing, wgmma
    and thread reads of stages and the wgmma groups go, and so do buffers that neither a TMA
    store reads nor cp.async copies write.
    What remains checks everything else exactly as before (these ops touch only buffer state
    and their own locals)."""
    def keep(st) -> tuple:
        if isinstance(st, LOAD_RACE_OPS) or (isinstance(st, For) and not st.body):
            return ()  # (a loop left empty: it only read stages, element by element)
        return (replace(st, dst=None) if isinstance(st, TmaLoad) and st.dst is not None else st,)
    procs = tuple(replace(p, body=rewrite_stmts(p.body, keep)) for p in k.processes)
    stored = {s.buf for p in procs for s in walk_stmts(p.body)
              if isinstance(s, (TmaStore, CpAsync, SmemOwn))}
    return replace(k, processes=procs, buffers=tuple(b for b in k.buffers if b.name in stored))


def _inits(body: tuple[Stmt, ...]) -> bool:
    return any(isinstance(s, MbarInit) for s in walk_stmts(body))


def without_noop_fences(k: Kernel) -> tuple[Kernel, int]:
    """R13 (docs/semantics.md, "Reductions"): the kernel without the `fence.mbarrier_init`s that
    change nothing, and how many went. A fence acts only on the barriers its own instance
    initialized and has not fenced yet: one in a process with no `mbarrier.init` is a no-op, and
    so is one that every path reaches through an earlier fence of the same instance with no init
    of that instance since (a fence followed in its statement list by statements with no init,
    entering an `if` or an elect block, or a loop with no init in its body). A step that never
    blocks, never fails and changes only its own pc can go without changing which violations
    and deadlocks are reachable."""
    dropped = 0

    def fences(body: tuple[Stmt, ...], fenced: bool) -> tuple[tuple[Stmt, ...], bool]:
        """`body` without its no-op fences, and whether every path through it ends fenced."""
        nonlocal dropped
        out = []
        for s in body:
            if isinstance(s, MbarInitFence):
                if fenced:
                    dropped += 1
                    continue
                fenced = True
            elif isinstance(s, (For, While)):  # the body may run again after its own inits
                looped = fenced and not _inits(s.body)
                s = with_bodies(s, (fences(s.body, looped)[0],))
                fenced = looped
            elif isinstance(s, (If, Lanes)):  # both branches; a Lanes block every instance runs
                done = [fences(x, fenced) for x in stmt_bodies(s)]
                s = with_bodies(s, tuple(x for x, _ in done))
                fenced = all(f for _, f in done)
                if isinstance(s, Lanes) and not s.body:
                    continue
            elif isinstance(s, MbarInit):
                fenced = False
            out.append(s)
        return tuple(out), fenced

    procs = tuple(replace(p, body=fences(p.body, not _inits(p.body))[0]) for p in k.processes)
    return (replace(k, processes=procs) if dropped else k), dropped
