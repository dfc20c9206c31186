"""Whole-kernel SyncIR passes that choose what a check covers (pure functions of a Kernel)."""
from __future__ import annotations

from dataclasses import replace

from .ir import For, Kernel, rewrite_stmts, walk_stmts
from .ops import CpAsync, SmemOwn, SmemRead, TmaLoad, TmaStore, WgmmaCommit, WgmmaRead, WgmmaWait

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
