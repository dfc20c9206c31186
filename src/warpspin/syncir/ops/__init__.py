"""The SyncIR ops, each defined once: its fields, its printed form, its validity, its footprint
(which declared objects it reads or writes, at which scope), its rule (the transition, in the
rule language of rules.py, which the interpreter executes and the Promela lowering prints), and
the exact reductions whose proofs cover it (docs/semantics.md, "Reductions").

Adding an op is one class here plus its extraction. An op that is not registered, or whose
footprint is unknown (`Unsupported`), switches every reduction off and makes the verdict
UNSUPPORTED.

Counting (one meaning for every op, async copies included): an op executed by T threads (the
instance's threads, or k inside `Lanes(k)`) acts once per thread: an arrive by a warp is 32
arrivals, a TMA issued by a warp is 32 copies. The DSL's TMA copy elects one lane itself, so the
extractor puts it inside `Lanes(1)`.

The ops live in one module per family (base.py: the registry, `SyncOp`, `Footprint`, the
reduction names and the shared helpers). They are imported here in the order they were
defined in, which is the order of the registry `OPS` (the generated docs list it); every
name is re-exported, so `from warpspin.syncir.ops import X` keeps working.
"""
from __future__ import annotations

from .base import (ALL, CLUSTER_ARRIVED, CLUSTER_COMPLETE, CLUSTER_GEN, DEAD_RESET, EARLY_ISSUE,  # noqa: F401
                   FAILED_TEST_BLOCKS, FUSION, FUSION_RELEASE, FUSION_WAIT, INDEPENDENT_CTAS,
                   LOAD_RUN_MOVER, LOAD_RUNS, MERGED_COMPLETIONS, NAMED_COMPLETE, NARROW_TYPES, OPS,
                   PAIR_COMPLETE, PHASE, REDUCTIONS, RESUME_FUSION, RESUME_MOVER, SCOPES, SYMMETRIC,
                   Access, Footprint, SyncOp, add_tx, arrive, bad_vis, cluster_try_complete,
                   complete_named, complete_phase, fmt_bar, publish, ref_scope, remote_alive,
                   resolve, snap_var, sync_op, tx_bytes_check, vis_checks)
from .dsmem import CLUSTER_SEEN, DSMEM_STORED, SCOPES_OF_ARRIVE, DsmemStore, dsmem_release  # noqa: F401
from .mbarrier import (MbarArrive, MbarArriveExpectTx, MbarExpectTx, MbarInit, MbarInitFence,  # noqa: F401
                       MbarTestWait, MbarWait)
from .named import BarArrive, BarSync, BarSyncResume, WarpSync  # noqa: F401
from .cluster import ClusterArrive, ClusterWait  # noqa: F401
from .copies import TmaLoad  # noqa: F401
from .words import (CLC_WORDS, DATA_DEST, ClcTryCancel, SmemLoad, SmemStore, StAsync,  # noqa: F401
                    async_word_arrays, clc_failed, fmt_word, peer_word_store)
from .tensormaps import (BulkCommit, BulkWaitRead, TensormapAcquire, TensormapRelease,  # noqa: F401
                         TensormapWrite, tm_acquired, tm_group, tm_open)
from .buffers import (FenceProxyAsync, SmemWrite, TmaStore, add_expr, batches_bound, br_unfenced,  # noqa: F401
                      bs_group, bs_open, buffer_handover, buffer_releases, bw_fenced,
                      bw_released_raw, bw_unfenced, fence_first, storer_slot, storers_in_cta,
                      touches_filled, touches_filled_in)
from .reads import (COV_BITS, MmaRead, SmemRead, TmemLoad, TmemWaitLd, WgmmaRead, commit_bits,  # noqa: F401
                    is_tmem, mma_bufs, mma_open, tl_open, tmem_load_bufs, tmem_mma_bufs,
                    tmem_mma_issuer_problem, wg_group, wg_open)
from .wgmma import (AccAccess, WgmmaAcc, WgmmaCommit, WgmmaFence, WgmmaReadData, WgmmaWait,  # noqa: F401
                    wa_fenced, wa_group, wa_open, wd_group, wd_open, wgmma_data_arrays,
                    wgmma_data_mode)
from .cp_async import (CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn, cp_depth, cp_group, cp_open,  # noqa: F401
                       cp_pending, cp_pending_at_exit, shared_copies, stores_pending_at_exit)
from .tcgen05 import (PAIR_KINDS, TMEM_ACCESSES, Tcgen05Commit, TmemAccess, TmemAlloc, TmemDealloc,  # noqa: F401
                      TmemPairResume, TmemRelinquish, tmem_access_checked, tmem_freed_at_exit,
                      uses_tmem)
from .counters import AtomInc, counter_take  # noqa: F401
from .flags import (ADD_SEMANTICS, MEMORY_SCOPES, RELEASES, WAIT_SEMANTICS, WAIT_UNTIL, GlobalAdd,  # noqa: F401
                    GlobalWait, GlobalStore, GlobalLock, FLAG_OPS, GlobalRead)
from .exit import Exit, Unsupported  # noqa: F401

__all__ = ["Access", "Footprint", "SyncOp", "OPS", "REDUCTIONS", "MbarInit", "MbarInitFence",
           "MbarArrive", "MbarArriveExpectTx", "MbarExpectTx", "MbarWait", "MbarTestWait",
           "BarSync", "BarSyncResume", "BarArrive", "WarpSync", "ClusterArrive", "ClusterWait",
           "TmaLoad",
           "SmemStore", "SmemLoad", "StAsync", "ClcTryCancel", "CLC_WORDS", "clc_failed",
           "async_word_arrays", "AtomInc", "counter_take",
           "TensormapWrite", "TensormapRelease", "TensormapAcquire", "BulkCommit", "BulkWaitRead",
           "tm_open", "tm_group", "tm_acquired", "SmemWrite", "FenceProxyAsync", "TmaStore",
           "bs_open", "bs_group", "bw_unfenced", "bw_fenced", "bw_released_raw", "br_unfenced",
           "touches_filled", "touches_filled_in", "WgmmaRead", "MmaRead", "mma_open", "mma_bufs",
           "SmemRead", "WgmmaCommit", "WgmmaWait", "wg_open", "wg_group", "WgmmaAcc", "AccAccess", "WgmmaFence", "WgmmaReadData", "CpAsync",
           "CpAsyncCommit", "CpAsyncWait", "SmemOwn", "cp_open", "cp_group", "cp_pending",
           "DsmemStore", "DSMEM_STORED", "Tcgen05Commit", "TmemAlloc", "TmemDealloc",
           "TmemRelinquish", "TmemPairResume", "TmemAccess", "TmemLoad", "TmemWaitLd", "is_tmem",
           "tmem_mma_bufs", "tmem_load_bufs", "tl_open", "commit_bits", "TMEM_ACCESSES", "tmem_access_checked", "uses_tmem", "GlobalAdd", "GlobalWait", "GlobalStore", "GlobalLock", "FLAG_OPS", "GlobalRead",
           "Exit",
           "Unsupported"]
