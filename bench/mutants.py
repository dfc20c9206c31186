"""Bench: one-edit mutants of every example and catalog kernel that completes, each checked with
the default engine and options; writes bench/mutants.md.

    python bench/mutants.py [--per-kernel N] [--timeout S] [--jobs N] [--cache F] [--out FILE]
                            [NAME ...]

A mutant is one edit of the kernel's SyncIR (tests/hb_gen.py `described_mutants`): an op deleted
(an arrive, wait, fence, barrier, commit, copy or wait_group), a count, byte count, thread count
or group depth one step off, a parity flipped, or two neighbouring statements swapped. Each one is

* **reported**: VIOLATION, or not VERIFIED with the property and the object named (the headline
  says what was not checked or not supported);
* **masked**: not VERIFIED for the same reasons as the kernel itself (a property the model does
  not check on some object, named in the headline): whatever the edit broke may hide there;
* **undecided**: the search hit its limit (INCONCLUSIVE naming the limit);
* **equivalent**: VERIFIED, and the edit provably changes nothing the properties observe (the
  rules below, each stated with its reason); or
* **unexplained**: VERIFIED and none of the rules applies. An unexplained survivor is a bug of
  the model or of this bench until shown otherwise; the report lists each one with its edit.

A survivor (VERIFIED, no equivalence rule) is also **reported** when it is a VIOLATION at a
larger launch value where the kernel is VERIFIED (`reported_when_larger`: one fixed launch value
v raised to v+1, v+2, v+4, v+8 or v+16): a wait that protects a reuse a second tile or a
refilled stage makes, checked at the
catalog's one tile, is a real bug there; the detail names the value.

Equivalence rules (checked on the edit, not on the verdict):
* `same model`: the mutant's SyncIR equals the kernel's once the no-op fences are gone
  (`syncir.passes.without_noop_fences`, R13: a fence that changes nothing), or the two swapped
  statements are equal (ops: but for their source line).
* `signals commute`: two neighbouring statements of one thread swapped that never block, touch
  no data and name different barriers (inits, arrives, expect-tx, commits of wgmma, bulk,
  cp.async or tcgen05 groups; writes of two different tensormaps). No thread can observe their
  order: the other threads see each
  one only through the barrier it names, and the set of the thread's memory accesses each one
  releases is the same (nothing but the other signal lies between them).
* `stronger wait`: a wait for the thread's own async groups (wgmma, bulk, cp.async) told to
  leave fewer groups pending: it orders more and cannot block for good (a group completes by
  itself).
* `storer's own access`: in the process that stores a buffer with TMA, its bar.sync on the
  buffer's barrier swapped with its own write of the buffer or its own `fence.proxy.async`. That
  barrier orders the other writers' accesses against the storer's wait_group.read and store;
  the storer's own write and fence stay between its own wait and store by program order, and
  PTX lets the proxy fence sit anywhere between the write and the store in causality order
  (9.7.13.4; docs/semantics.md, "Staged buffers").
* `own part`: two accesses of the thread's own part of a buffer (its one-to-one partition,
  which no other thread touches) swapped: the data the thread computes may change, which no
  property reads; no other thread's access and no synchronization moves.
* `one instruction`: the two steps the extractor makes of one tcgen05 instruction swapped (its
  `tmem.access`, which checks the allocation is held, and its data access of an accumulator
  stage, on the same source line), of one wgmma (its `wgmma.read` of the operand stages and its
  `wgmma.acc` of the registers, each a local or a stage of its own), or of one
  `st.shared::cluster` (its `DsmemStore`, the
  unreleased-store bit, and the peer cell it writes). No source edit makes this mutant: both orders model the same
  instruction, whose issue is one event; each step touches its own object (the CTA's TMEM
  allocation, the stage) and neither blocks.
* `register check moved`: a `wgmma.fence` or an `acc.access` swapped with a statement with no
  wgmma op (of operands, registers, groups or fence) and no exit in it: both touch only the
  warp's register locals, which only its wgmma ops read or change, so every check sees the
  same values in both orders.
* `bytes before expect`: a TMA load (or `st.async`) swapped with the `arrive.expect_tx` on the
  barrier it completes on (each possibly under its own `elect_one`). PTX lets the bytes complete before their expect-tx (the tx-count goes
  below zero, 9.7.13.15.2; litmus `mbarrier.tx-before-expect` on the H200), and the phase still
  needs that arrive, so it completes at the same point.
* `reviewed`: a survivor read by hand, with the reason it breaks nothing (`REVIEWED` below).
  A survivor whose source edit the extractor reports (`AT_THE_SOURCE`: a CTA barrier between
  lanes of one warp that hand data over, which a SyncIR mutant, having no lanes, cannot show)
  is **reported**, with that source edit checked by a test.
* `independent assignment`: a statement swapped with an assignment of a local it does not read
  (or an If whose branches only assign such locals: a pipeline state's advance), whose value
  reads nothing the statement writes: the thread computes the same values and does
  the same synchronization in the same order.
* `unreached`: the edited statement (for a swap, the first of the two) is an op that no execution
  reaches: the happens-before engine verified the kernel (every execution is a reordering of
  the ones it ran, each process executing the same ops), its launch values are all bounded,
  and none of those runs executes the op. The mutant's executions are the kernel's. For a swap
  whose first statement is compound (a loop, a branch, a lane subset) with no exit in it, the
  second one unreached means the first's place is unreached too.
* `independent loads`: two neighbouring word loads (`ld.shared`) swapped, into different locals,
  neither's index reading the other's result: each reads the word it read before, with the
  same synchronization around it.
* `data accesses commute`: two neighbouring accesses of shared data cells (`ld.shared` whose
  value nothing reads, `st.shared` of a value the model does not follow) or of a thread's own
  part of a buffer (`smem.own`), alone or in an `elect_one`, of one thread swapped (two
  accesses of one buffer's own part: `own part`):
  each keeps the same synchronization before and after it, so the accesses of other threads it
  is unordered with are the same, and no value changes that a property reads.
* `launch-phase wait`, `unobserved barrier`: from the same runs, a wait that passes on its
  barrier's launch phase in every execution, deleted or moved earlier (`_launch_phase_wait`),
  and edits of barrier elements whose waits all pass on the launch phase (`_unobserved`).
* `private barriers`: a `fence.mbarrier_init`, or ops on barriers one instance initializes and
  alone uses, deleted or moved (`_private_barriers`).
* `quiet tail`, `past the final cluster arrive`: edits of what a process does after its work
  (waits, its last cluster barrier), or a statement moved past its last cluster arrive, when
  every process only waits after its last cluster arrive (`_tail`). These may change what
  happens at an exit or whether a wait passes; the kinds that can then arise
  (`CHECKED_WHERE_THEY_HAPPEN`) the model checks where they happen, so such a mutant is
  reported with one of them or correct. `tests/test_mutants.py` checks that no rule covers a
  reported mutant with any other kind.
* `barrier of one warp`: a `bar.sync` deleted or moved in a one-CTA kernel of one warp with no
  shared data: it orders nothing the warp's program order does not.

The rules that read the happens-before engine's runs trust that engine's verdict on the kernel
itself (differential-tested against SPIN and the interpreter: tests/test_hb_*.py), never its
verdict on the mutant.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import random
import sys
import time
from dataclasses import dataclass, field, fields, replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from hb_gen import described_mutants  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.syncir import validate  # noqa: E402
from warpspin.syncir.ir import Assign, Const, If, Lanes, expr_vars, walk_stmts
from warpspin.syncir.ops import (BarArrive, BarSync, ClusterArrive, MbarArrive, MbarArriveExpectTx, MbarInit, MbarWait, TmaLoad)
from warpspin.extract.cleanup import stmt_exprs  # noqa: E402
from warpspin.syncir.ops import (DATA_DEST, BulkCommit, BulkWaitRead, ClusterWait,  # noqa: E402
                                 CpAsyncCommit, CpAsyncWait, Exit, FenceProxyAsync, MbarExpectTx,
                                 MbarInitFence, MbarTestWait, SmemLoad, SmemOwn, SmemStore,
                                 SmemWrite, StAsync, SyncOp, Tcgen05Commit, TensormapWrite,
                                 WgmmaCommit, WgmmaWait, WgmmaAcc, AccAccess, WgmmaFence)
from warpspin.syncir.passes import without_noop_fences  # noqa: E402
from warpspin.syncir.printer import fmt_kernel  # noqa: E402

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

SIGNALS = (MbarInit, MbarArrive, MbarArriveExpectTx, MbarExpectTx, BarArrive, ClusterArrive,
           WgmmaCommit, BulkCommit, CpAsyncCommit, Tcgen05Commit)
GROUP_WAITS = (BulkWaitRead, WgmmaWait, CpAsyncWait)
# (kernel name, the edit as fmt_edit writes it) -> why the mutant is correct
_ACC_INTO_NEXT_GROUP = (
    "the wgmma's use of the accumulator joins the warp's next wgmma group instead of this one; "
    "the only access of the accumulator is its store after the loop's last wait_group(0), which "
    "retires every group, and no wgmma.fence check changes (no access lies between): nothing "
    "the properties observe changes")
_JACOBI = "jacobi_halo.correct"
_CLUSTER_BARRIER_AFTER = (
    "the cluster barrier right after (every thread of the cluster arrives before any passes its "
    "wait) orders the warp's lanes and both CTAs as the CTA barrier did: the next step's reads "
    "of these cells, and the peer's next halo store, still come after it")
# (kernel name, the edit as fmt_edit writes it) -> the source edit it stands for, and how the
# extractor reports that edit (a SyncIR mutant has no lanes: the warp-lane check is the
# extractor's). Each is a test (tests/test_examples.py, test_source_edits_the_extractor_reports)
AT_THE_SOURCE = {
    (_JACOBI, "process 0: `bar.sync 0` (jacobi_halo.py:89) deleted"):
        "the `sync_threads()` between the reads of the neighbours and the write of the mean "
        "deleted: lane i writes the cell lane i+1 reads, with no barrier between (a warp is not "
        "lockstep): races NOT CHECKED on cells (lanes of one warp hand it over), INCONCLUSIVE",
}
_STALE_INDEX = ("the load of the tile's second half moves before the assignment of its index: it "
                "reads the cell the previous trip's index names (or cell 0 on the first trip), "
                "which the same wait on ready[e] or an earlier one ordered (or nobody writes); a "
                "wrong value, which no synchronization property observes")
REVIEWED = {
    ("fused_moe.correct", "process 1: `barrier.cluster.wait` (fused_moe.py:93) deleted"):
        "FF1's rank 1 skips the wait of the cluster barrier after the inits: cluster 0's CTAs "
        "use no mbarrier of each other (their only cross-CTA ops are adds to global flags), its "
        "arrive still counts, and a thread may exit after an arrive without its wait",
    ("fused_moe.correct", "process 2: `Assign` (fused_moe.py:153) swapped with "
     "`ld.shared gdata2[(v212 * 32 * 4 + 0) // 4]`"): _STALE_INDEX,
    ("fused_moe.correct", "process 3: `Assign` (fused_moe.py:153) swapped with "
     "`ld.shared gdata2[(v160 * 4 + 0) // 4]`"): _STALE_INDEX,
    (_JACOBI, "process 0: `st.shared data18[3], 0` (jacobi_halo.py:90) swapped with `bar.sync 0`"):
        "the mean's store moves after the second CTA barrier; " + _CLUSTER_BARRIER_AFTER,
    (_JACOBI, "process 1: `bar.sync 0` (jacobi_halo.py:91) deleted"):
        "the CTA barrier after the mean's store deleted; " + _CLUSTER_BARRIER_AFTER,
    (_JACOBI, "process 0: `ld.shared data18[4]` (jacobi_halo.py:88) swapped with `bar.sync 0`"):
        "the read of the halo cell moves after the first CTA barrier: no lane writes the halo "
        "cell in a step (only the peer does, after the cluster barrier that ends the step), so "
        "the read sees the same store",
    (_JACOBI, "process 0: `mbarrier.wait smem13[0], parity=c44_0` (jacobi_halo.py:85) swapped "
              "with `ld.shared data18[0]`"):
        "CTA 0 reads cells[0] before its wait: that is the rod's outer end, which only CTA 0's "
        "own init writes (the peer's halo stores go into cells[N + 1] of CTA 0), so no store "
        "the wait orders is involved",
    (_JACOBI, "process 0: `For` (jacobi_halo.py:75) swapped with `ld.shared data18[1]`"):
        "the final read of the CTA's own cell moves before the step loop: it reads an older "
        "value, which no property observes; nothing but this CTA writes the cell, and its own "
        "writes stay in program order",
    (_JACOBI, "process 0: `st.shared data18[3], 0` (jacobi_halo.py:64) swapped with `Lanes`"):
        "two of the CTA's first stores of its own cells swapped, before its first cluster "
        "arrive: no other thread accesses them before that barrier",
    ('wgmma_accumulator.correct',
     'process 0: `wgmma.acc acc0` (wgmma_accumulator.py:101) swapped with `wgmma.commit_group '
     'acc=[acc0] data=[data24, data28], depth=1`'): _ACC_INTO_NEXT_GROUP,
    ('wgmma_accumulator.correct',
     'process 2: `wgmma.acc acc0` (wgmma_accumulator.py:101) swapped with `wgmma.commit_group '
     'acc=[acc0] data=[data24, data28], depth=1`'): _ACC_INTO_NEXT_GROUP,
    ('kernel_warpspin_catalog_dsmem_handoffDsmemHandof',
     'process 1: `barrier.cluster.wait` (dsmem_handoff.py:77) swapped with `mbarrier.wait bar[0], '
     'parity=0`'):
        "CTA 1 waits on its own barrier before the cluster wait: it initialized and fenced the "
        "barrier itself and has arrived on the cluster barrier, so CTA 0 still passes its "
        "cluster wait, stores and arrives; CTA 1's read stays after the phase's completion",
    ('kernel_quackgemm_default_epiGemmDefaultSm100',
     'process 2: `While` (gemm_sm100.py:1759) swapped with `bar.arrive 7, threads=160`'):
        "the MMA warp's arrive on the TMEM barrier moves before its tile loop; it still joins the "
        "generation after the alloc's, and the epilogue's wait in it comes after the epilogue "
        "consumed every tile, each acc.full wait after the landing of a commit issued after that "
        "tile's MMAs, so the free still follows every MMA and every load",
    ('kernel_warpspin_catalog_blackwell_gemmBlackwellG',
     'process 0: `fence.mbarrier_init` (blackwell_gemm.py:122) swapped with `bar.sync 0`'):
        "the A/B barriers' init fence moves after the first CTA barrier; the accumulator pipeline's create that follows fences again and passes a second bar.sync 0 before any warp uses a barrier, which publishes every init",
    ('kernel_warpspin_catalog_blackwell_gemmBlackwellG',
     'process 2: `mbarrier.wait acc_bars[c217_5 + 2], parity=c217_6` (blackwell_gemm.py:166) swapped with `If`'):
        "the If after the MMA warp's acc.empty wait computes the tile's k-tile count (`k_tiles`: t == 0 and empty) into a local the wait does not read, from values it does not write",
    ('kernel_warpspin_catalog_blackwell_gemmBlackwellG',
     'process 2: `bar.sync 0` (blackwell_gemm.py:122) swapped with `tcgen05.alloc cols=128`'):
        "the MMA warp allocates before the CTA barrier instead of after it: the allocation is the CTA's only one and touches only its TMEM object, and every use of the columns comes after the named barrier that publishes the address",
    ('kernel_warpspin_catalog_blackwell_gemm_2ctaBlack',
     'process 2: `tcgen05.relinquish_alloc_permit.cta_group::2` (blackwell_gemm_2cta.py:190) swapped with `bar.sync 1, threads=160`'):
        "the pair's relinquish moves after the named barrier that publishes the address to the epilogue: no allocation follows it, and the peer's relinquish waits for it whichever side of that barrier it is",
    ('kernel_warpspin_catalog_blackwell_gemm_2ctaBlack',
     'process 2: `mbarrier.wait tmem_dealloc_bar[0], parity=0` (blackwell_gemm_2cta.py:223) swapped with `tcgen05.dealloc.cta_group::2 cols=128`'):
        "the leader's MMA warp issues the pair's free before waiting on its dealloc barrier; the free takes effect when the peer's warp issues it, after the peer waited on its own dealloc barrier, which the leader's MMA warp arrives on after its epilogue's last load (bar.sync 1), and after the peer's own epilogue finished",
    ('kernel_warpspin_catalog_blackwell_gemm_2ctaBlack',
     'process 6: `bar.sync 1, threads=160` (blackwell_gemm_2cta.py:222) swapped with `mbarrier.arrive tmem_dealloc_bar[0]@cta(0)`'):
        "the peer's MMA warp arrives on the leader's dealloc barrier before its own epilogue is done; the pair's free still needs the peer's own dealloc issue, which comes after that bar.sync 1, so both CTAs' epilogues finish before the columns are freed",
    ('kernel_quackgemm_default_epiGemmDefaultSm100',
     'process 0: `t795 = ld.shared sw0[2]` (tile_scheduler.py:683) swapped with `t797 = ld.shared sw0[3]`'):
        "two loads of different scheduler words into different locals, neither index reading the other's result: the same synchronization surrounds both, so they are ordered against the same stores, and the values read are the same",
    ('kernel_quackgemm_default_epiGemmDefaultSm100',
     'process 1: `bar.sync 1, threads=128` (gemm_base.py:481) swapped with `tmem.access tcgen05.ld (data followed)`'):
        "the tcgen05.ld's allocation check moves before the epilogue's named barrier; the allocation is held from before the epilogue's first load (the address is published after the alloc) until after its last (the free waits for the epilogue), so the check sees the same",
    ('kernel_quackgemm_default_epiGemmDefaultSm100',
     'process 0: `tcgen05.ld.read tmem0[wf836_9]` (gemm_sm100.py:2348) swapped with `bulk.wait_group.read 3 [buf0[0], buf0[1], buf0[2], buf0[3]], depth=4`'):
        "the load's accumulator read is recorded after the thread's wait for its own older TMA stores, which touches only the staging buffer and cannot block for good; it stays after the acc.full wait and before the stage's release",
    ('kernel_quackgemm_default_epiGemmDefaultSm90',
     'process 3: `For` (gemm_sm90.py:1646) swapped with `bar.arrive 3, threads=256`'):
        "in the pingpong GEMM, warp group 1's arrive on the MMA-order barrier 3 moves before its "
        "k-tile loop: the barrier only takes turns between the groups' tensor-core work (each "
        "group's operands come through its own full-barrier waits and stage releases, its "
        "accumulator is its own registers): arriving earlier lets the groups' MMAs overlap, "
        "which changes timing, not the order of any access the properties observe",
    ("cluster_multicast_s1_k2", "process 2: `barrier.cluster.wait` (wellsync.py:44) swapped "
                                "with `For`"):
        "CTA 1's producer waits for the cluster barrier after its loop instead of before: the "
        "loop touches only CTA 1's full barrier, which that producer initialized (its own uses "
        "need no publication), and the bytes completing it come from CTA 0's multicast, issued "
        "after CTA 0 passes the barrier, which needs CTA 1's arrive (before the loop); the "
        "barrier's completion still publishes the init before the consumer's wait",
    ("aliased", "process 0: `bar.sync 0` (aliased.py:12) swapped with `Lanes`"):
        "the loader arms and loads through the barrier it initialized and fenced itself (program "
        "order); the bar.sync still publishes the init to the other warp before its wait",
    **{(name, f"process {p}: `wgmma.acc acc0` (sm90_utils.py:171) swapped with "
              "`wgmma.commit_group [buf0, buf1] acc=[acc0], depth=2`"):
        "the prologue wgmma's use of the accumulator joins the mainloop's first group instead of "
        "its own: every wgmma of the warp writes the same accumulator, and the warp accesses it "
        "only after its wait_group 0, which retires every group either way"
       for name, p in (("quack.gemm_sm90", 1), ("quack.gemm_sm90.alpha_scalar", 0))},
    # the C stages' proxy fence (gemm_base.py:387): sC has 4 stages and the tile 4 epilogue
    # subtiles, so each stage is loaded once per tile, and the catalog gives a CTA one tile
    **{(name, e):
        "the fence orders the warp's generic reads of a C stage before the TMA load that "
        "refills it; with one tile per CTA and as many C stages as subtiles no stage is "
        "refilled, so moving the read past the fence (or the fence past the elect block) "
        "changes nothing here; with a second tile the refill is a proxy-race, which the model "
        "reports (hopper_pipeline.py:no_read_fence)"
       for name, e in (
           ("quack.gemm_sm90.c", "process 1: `smem.read buf2[wf486_4]` (gemm_base.py:383) "
                                 "swapped with `fence.proxy.async`"),
           ("quack.gemm_sm90.c", "process 1: `smem.read buf2[v993]` (gemm_base.py:383) "
                                 "swapped with `fence.proxy.async`"),
           ("quack.gemm_sm90.c_beta_ptr", "process 0: `fence.proxy.async` (gemm_base.py:387) "
                                          "swapped with `Lanes`"),
           ("quack.gemm_sm90.c_beta_ptr", "process 0: `smem.read buf2[wf486_4]` "
                                          "(gemm_base.py:383) swapped with `fence.proxy.async`"))},
    ("cp_async", "process 0: `For` (cp_async.py:30) swapped with `cp.async.wait_group 0 [sX], "
                 "depth=1`"):
        "the drain moved before the loop still retires tile 0's copy when the loop runs zero "
        "times, and the loop's last iteration prefetches nothing, so no copy is in flight after it",
    ("cp_async_drain.correct", "process 0: `For` (cp_async_drain.py:62) swapped with "
                               "`cp.async.wait_group 0 [buf0], depth=1`"):
        "as in the cp_async protocol: the drain before the loop retires the prefetch when the loop "
        "runs zero times, and the loop's last iteration leaves no copy in flight",
    ("cp_async", "process 0: `smem.own read sX[k % 2], depth=1` (cp_async.py:32) swapped with "
                 "`If`"):
        "the prefetch writes stage (k + 1) % 2 and the read reads stage k % 2: other bytes",
    # read by hand on 2026-12-06: the survivors of the 2026-12-05 run that no rule and no larger
    # launch value explains
    **{(name, f"process {p}: `For` ({src}) swapped with `mbarrier.wait {wait}`"):
        "the producer's tail wait on stage 0's empty barrier moved before its loop: there it "
        "waits on that barrier's launch phase and passes, so the mutant is the kernel without "
        "one producer-tail wait; the consumers' releases of the later stages, which the tail's "
        "other waits still wait for, come after their reads of stage 0, so no refill and no "
        "exit of the producer overtakes a read"
       for name, p, src, wait in (
           ("cluster_grouped_multicast.odd_group_fixed", 3, "cluster_grouped_multicast.py:110",
            "bars[c87_1 + 2], parity=c87_2"),
           ("hopper_multicast.correct", 3, "hopper_multicast.py:98",
            "bars[c80_1 + 2], parity=c80_2"),
           ("hopper_pipeline.correct", 2, "hopper_pipeline.py:93",
            "bars[c104_1 + 4], parity=c104_2"),
           ("hopper_pipeline.correct.small", 2, "hopper_pipeline.py:93",
            "bars[c105_1 + 2], parity=c105_2"))},
    ("hopper_pipeline.correct.small", "process 0: `mbarrier.init bars[3], count=4` "
                                      "(hopper_pipeline.py:77) count 4 -> 3"):
        "stage 1's empty barrier completes after 3 of the 4 consumer warps' releases: the "
        "producer waits on it for a release only in its tail (3 k-tiles over 2 stages: stage 1 "
        "is loaded once), and nothing follows that wait but its other tail wait, so no refill "
        "overtakes the fourth warp's read; the late release lands in the next phase, which "
        "nobody waits for. The edit is a race once stage 1 is refilled (more k-tiles)",
    ("cluster_lifetime.correct", "process 0: `barrier.cluster.wait` (cluster_lifetime.py:60) "
                                 "deleted"):
        "CTA 0 then waits on its own done barrier right after its relaxed cluster arrive: CTA "
        "1's remote arrive on it comes after CTA 1's cluster wait, which needs CTA 0's arrive "
        "(after the init fence), and CTA 0 is still waiting, so it is running; nothing else "
        "of CTA 0 needs CTA 1",
    ("cluster_lifetime.correct", "process 0: `barrier.cluster.wait` (cluster_lifetime.py:60) "
                                 "swapped with `mbarrier.wait done[0], parity=0`"):
        "as with the wait deleted: CTA 0 waits on its own barrier first, which CTA 1's remote "
        "arrive completes after CTA 1's cluster wait; CTA 0's late cluster wait then passes "
        "(both arrived)",
    ("cp_async_drain.correct", "process 0: `For` (cp_async_drain.py:62) swapped with "
                               "`cp.async.wait_group 0 [buf0], depth=1`"):
        "as in the cp_async protocol: the drain before the loop retires the prefetch when the "
        "loop runs zero times, and the loop's last iteration leaves no copy in flight",
    ("dynamic_grid_cluster", "process 0: `mbarrier.wait smem5[0], parity=0` (kernels.py:93) "
                             "deleted"):
        "the wait's barrier (count 1) gets one arrive, the waiter's own elected arrive just "
        "before it: the wait passes at once, and no access follows it that it orders",
    ("kgrouped_tensormap.correct", "process 2: `fence.tensormap.acquire tmap0` "
                                   "(kgrouped_tensormap.py:106) swapped with `mbarrier.wait "
                                   "bars[c120_1 + 2], parity=c120_2`"):
        "the tensormap acquire moves after the empty-stage wait: it is still after the "
        "release it pairs with and before the TMA load through the descriptor, which is all "
        "the acquire orders",
    ("lane_subsets.exit_all", "process 0: `exit` (kernels.py:167) swapped with `mbarrier.wait "
                              "smem3[0], parity=0`"):
        "the one warp waits on its barrier (count 1) after its own elected arrive completed "
        "the phase, then exits: the same end, nothing else uses the barrier",
    ("lane_subsets.exit_all", "process 0: `Lanes` (kernels.py:165) swapped with `exit`"):
        "the one warp exits before its elected arrive: the arrive and the wait after the exit "
        "never run, and no other thread uses the barrier or waits for the warp",
    **{("st_async_lanes.correct_self", f"process {p}: `barrier.cluster.wait` "
        f"(st_async_lanes.py:76) swapped with `tma.load -> full[0]@cta({c}), bytes=4`"):
        "in correct_self each CTA's st.async goes to its own shared memory and completes on its "
        "own full barrier, which it initialized and fenced itself: moving it before the "
        "cluster wait touches nothing of the peer CTA"
       for p, c in ((0, 0), (2, 1))},
    ("blackwell_gemm_2cta.correct", "process 4: `mbarrier.init acc_bars[2], count=256` "
                                    "(blackwell_gemm_2cta.py:145) count 256 -> 255"):
        "stage 0's acc.empty barrier completes one arrival early; the leader's MMA warp waits on "
        "it only before its third tile, and the example runs two per CTA (no launch value to "
        "raise: the grid is the cluster)",
    **{("quack.gemm_sm100.2cta", e):
        "the scheduler's fence.proxy.async orders a consumer's generic read of the scheduler "
        "words before the next st.async into them; with one tile per CTA no next st.async is "
        "issued (raising one launch value alone does not give a CTA a second tile: the tile "
        "count is several host values)"
       for e in ("process 0: `t943 = ld.shared sw0[3]` (tile_scheduler.py:683) swapped with "
                 "`fence.proxy.async`",
                 "process 3: `fence.proxy.async` (tile_scheduler.py:688) deleted")},
}
# The rules whose edit may change what happens at an exit or whether a wait ever passes, each
# with the violation kinds that can then arise: the model checks those where they happen, so a
# mutant the rule covers is either reported with one of them or correct.
CHECKED_WHERE_THEY_HAPPEN = {
    "quiet tail": ("deadlock", "pending-at-exit", "cluster-lifetime", "tmem-lifetime"),
    "past the final cluster arrive": ("deadlock", "pending-at-exit", "cluster-lifetime",
                                      "tmem-lifetime"),
}
# Steps a fixed launch value is raised by: a stage is refilled only once the k-tiles outnumber
# the stages (quack's SM90 GEMM has 8 at its catalog tile).
LARGER = (1, 2, 4, 8, 16)
COMPLETES = ("verified", "not-checked")  # a kernel whose mutants are worth checking
CLASSES = ("reported", "masked", "undecided", "equivalent", "unexplained")


def _barriers(s) -> set:
    """The barriers a signal names: (array, element) of an mbarrier (element None when computed)
    and ("named", id) of a named barrier."""
    out = set()
    bar = getattr(s, "bar", None)
    if bar is not None:
        out.add((bar.name, bar.index.value if isinstance(bar.index, Const) else None))
    bid = getattr(s, "barrier_id", None)
    if bid is not None:
        out.add(("named", bid.value if isinstance(bid, Const) else None))
    return out


def _may_share_a_barrier(a, b) -> bool:
    return any(x[0] == y[0] and (x[1] is None or y[1] is None or x[1] == y[1])
               for x in _barriers(a) for y in _barriers(b))


def _body(k) -> str:
    """The model of `k` (less its no-op fences) and what it leaves unchecked: a fence the model
    drops may still decide a check the SyncIR makes (a bar.warp.sync before a lane's release)."""
    from warpspin.syncir.unchecked import unchecked_objects
    return "\n".join(fmt_kernel(without_noop_fences(k)[0]).splitlines()[1:]) + "\n" + \
        "\n".join(f"{u.property} {u.what}" for u in unchecked_objects(k))


def equivalence(kernel, mutant, edit, name: str = "") -> str | None:
    """The rule that shows the edit changes nothing the properties observe, or None. `name`:
    the kernel's catalog name (REVIEWED is keyed by it, or by the SyncIR kernel's name)."""
    if edit.what == "swapped" and _same_op(edit.stmt, edit.other):
        return "same model"
    if (kernel.name, fmt_edit(edit)) in REVIEWED or (name, fmt_edit(edit)) in REVIEWED:
        return "reviewed"
    if _body(kernel) == _body(mutant):
        return "same model"
    if edit.what == "swapped" and isinstance(edit.stmt, SIGNALS) and \
            isinstance(edit.other, SIGNALS) and not _may_share_a_barrier(edit.stmt, edit.other):
        return "signals commute"
    if isinstance(edit.stmt, GROUP_WAITS) and edit.what.startswith("n ") and \
            edit.stmt.n > int(edit.what.rsplit(" ", 1)[1]):
        return "stronger wait"
    if edit.what == "swapped" and _storer_own(kernel, edit):
        return "storer's own access"
    if edit.what == "swapped" and _one_instruction(edit.stmt, edit.other):
        return "one instruction"
    a, b = _single(edit.stmt), _single(edit.other) if edit.what == "swapped" else None
    kinds = {type(a), type(b)}
    if edit.what == "swapped" and len(kinds) == 2 and MbarArriveExpectTx in kinds and \
            kinds & {TmaLoad, StAsync} and a.bar == b.bar:
        return "bytes before expect"
    if edit.what == "swapped" and kinds == {TensormapWrite} and edit.stmt.desc != edit.other.desc:
        return "signals commute"
    if edit.what == "swapped" and _register_local_moved(edit.stmt, edit.other):
        return "register check moved"
    if edit.what == "swapped" and kinds == {SmemOwn} and edit.stmt.buf == edit.other.buf:
        return "own part"
    if edit.what == "swapped" and _independent(edit.stmt, edit.other):
        return "independent assignment"
    tail = _tail(kernel, edit)
    if tail:
        return tail
    if _private_barriers(kernel, edit):
        return "private barriers"
    if _one_warp_barrier(kernel, edit):
        return "barrier of one warp"
    if _unreached(kernel, edit):
        return "unreached"
    if _launch_phase_wait(kernel, edit):
        return "launch-phase wait"
    if _unobserved(kernel, edit):
        return "unobserved barrier"
    if edit.what == "swapped" and _commuting_access(kernel, edit.stmt) and \
            _commuting_access(kernel, edit.other):
        return "data accesses commute"
    if edit.what == "swapped" and _independent_loads(edit.stmt, edit.other):
        return "independent loads"
    return None


REGISTER_OPS = (WgmmaAcc, AccAccess, WgmmaFence, WgmmaCommit, WgmmaWait)


def _register_local_moved(a, b) -> bool:
    """A wgmma.fence or an access of a wgmma's registers swapped with a statement that has no
    wgmma op of any kind and no exit in it: both read and write only the warp's register
    locals, which only the warp's wgmma ops read or change, so every wgmma op and every check
    sees the same values in both orders."""
    mover, other = (a, b) if isinstance(a, (WgmmaFence, AccAccess)) else (b, a)
    return isinstance(mover, (WgmmaFence, AccAccess)) and not any(
        isinstance(s, (*REGISTER_OPS, Exit)) for s in walk_stmts((other,)))


def _single(s):
    """The one statement of an elect_one or lane subset around it (the statement itself
    otherwise): an expect-tx is issued by one elected lane either way."""
    while isinstance(s, Lanes) and len(s.body) == 1:
        s = s.body[0]
    return s


def _independent_loads(a, b) -> bool:
    """Two word loads into different locals, neither's index reading the other's local: each
    reads the same word as before, ordered against the same stores (nothing between them)."""
    from warpspin.syncir.ir import expr_vars
    return isinstance(a, SmemLoad) and isinstance(b, SmemLoad) and a.dest != b.dest and \
        a.dest not in expr_vars(b.ref.index) and b.dest not in expr_vars(a.ref.index)


_RUNS: dict[int, tuple[object, "Runs | None"]] = {}


@dataclass
class Runs:
    """What every execution of a kernel does, from the happens-before engine's runs: the ops
    each process executes (by id), and the waits that ever pass on a completed phase."""
    element: dict           # (cta, array, index) -> mbarrier element
    reached: dict = field(default_factory=lambda: collections.defaultdict(set))  # process -> ids
    synced: set = field(default_factory=set)  # ids of waits that passed on a completed phase
    # mbarrier element -> what reached ops did to it: init, signal, wait, test, other, synced
    uses: dict = field(default_factory=lambda: collections.defaultdict(set))
    touched: dict = field(default_factory=lambda: collections.defaultdict(set))  # op id -> els


def runs(kernel) -> Runs | None:
    """The ops some execution of `kernel` executes and the waits that synchronize, when the
    happens-before engine verifies it with every launch value bounded (every execution then
    executes the ops its runs do, each wait passing in the same phase); None otherwise."""
    if id(kernel) in _RUNS and _RUNS[id(kernel)][0] is kernel:
        return _RUNS[id(kernel)][1]
    from warpspin.engine import hb
    from warpspin.engine.hb.execution import OutsideClass, Runner
    from warpspin.syncir.trace import Step
    out = None
    if not any(p.unbounded for p in kernel.params) and \
            hb.check(kernel, 120).verdict == "verified":
        try:
            runner = Runner(kernel)
            m = runner.m
            out = Runs(dict(m.layout.element))
            for start, s in runner.starts():
                for e in runner.run(start, s).events:
                    if not isinstance(e.step, Step):
                        continue
                    op = m.flat[e.step.process].code[e.step.pc].stmt
                    out.reached[e.step.process].add(id(op))
                    gid = m.gid[(e.step.process, e.step.instance)]
                    kind = ("wait" if isinstance(op, MbarWait) else
                            "test" if isinstance(op, MbarTestWait) else
                            "init" if isinstance(op, MbarInit) else
                            "signal" if isinstance(op, _BARRIER_ONLY) else "other")
                    for ref in _bar_refs(op):
                        if getattr(op, "multicast", None) is not None:
                            for (c, name, i), el in out.element.items():
                                if name == ref.name:
                                    out.uses[el].add(kind)
                        else:
                            el = m.element_of(ref, e.pre, gid)
                            out.uses[el].add(kind)
                            out.touched[id(op)].add(el)
                    if isinstance(op, MbarWait):
                        el = m.element_of(op.bar, e.pre, gid)
                        if e.pre[m.sl.mb_field(el, "n")] > 0:
                            out.synced.add(id(op))
                            out.uses[el].add("synced")
        except OutsideClass:
            out = None
    _RUNS[id(kernel)] = (kernel, out)
    return out


def _unreached(kernel, edit) -> bool:
    """The edited statement (a swap's first; when that one is compound with no exit in it, the
    second) is an op that no execution of the kernel reaches."""
    first = edit.stmt
    if edit.what == "swapped" and not isinstance(first, SyncOp):
        if any(isinstance(x, Exit) for x in walk_stmts((first,))) or \
                not isinstance(edit.other, SyncOp):
            return False
        first = edit.other
    r = runs(kernel) if isinstance(first, SyncOp) else None
    return r is not None and id(first) not in r.reached.get(edit.process, ())


def _launch_phase_wait(kernel, edit) -> bool:
    """A wait that passes on its barrier's launch phase in every execution (it never blocks and
    orders nothing), deleted, or moved before a statement that assigns none of its inputs: there
    too it finds no phase completed (the phase count only grows, and the steps before it are
    those of a prefix of a kernel execution), so the mutant is the kernel without the wait."""
    w = edit.other if edit.what == "swapped" else edit.stmt
    if not isinstance(w, MbarWait) or edit.what not in ("deleted", "swapped"):
        return False
    r = runs(kernel)
    if r is None or id(w) not in r.reached.get(edit.process, ()) or id(w) in r.synced:
        return False
    if edit.what == "swapped":
        assigned = {x.var for x in walk_stmts((edit.stmt,)) if isinstance(x, Assign)} | \
            {getattr(x, "var", None) for x in walk_stmts((edit.stmt,)) if hasattr(x, "body")}
        assigned |= {v for x in walk_stmts((edit.stmt,)) for v in _writes(x)}
        return not (assigned & _reads(w))
    return True


_BARRIER_ONLY = (MbarInit, MbarArrive, MbarArriveExpectTx, MbarExpectTx)


def _unobserved(kernel, edit) -> bool:
    """Barrier ops on mbarrier elements that no reached op but inits, arrives, expect-tx and
    waits that pass on the launch phase touch (no test-wait, async op or wait that needs a
    completed phase): an arrive or expect-tx deleted, an init count raised (the phase completes
    later or never: those waits still find it open, and no over-run), or, with no arrive
    reached on the element, any init count. Elements are those the reached ops touched in the
    happens-before engine's runs (the edited op's: every element it touched there, in its own
    CTA)."""
    r = runs(kernel)
    if r is None or edit.what == "swapped" or not isinstance(edit.stmt, _BARRIER_ONLY):
        return False
    if id(edit.stmt) not in r.reached.get(edit.process, ()) or edit.stmt.bar.cta is not None:
        return False
    els = r.touched.get(id(edit.stmt), set())
    if not els or any(r.uses.get(el, set()) - {"signal", "init", "wait"} for el in els):
        return False
    if edit.what == "deleted":
        return isinstance(edit.stmt, (MbarArrive, MbarArriveExpectTx, MbarExpectTx))
    if isinstance(edit.stmt, MbarInit) and edit.what.startswith("count "):
        up = int(edit.what.rsplit(" ", 1)[1]) > edit.stmt.count.value
        return up or not any("signal" in r.uses.get(el, set()) for el in els)
    return False


def _data_access(kernel, s) -> bool:
    if isinstance(s, SmemLoad) and s.dest != DATA_DEST:
        return False
    if not isinstance(s, (SmemStore, SmemLoad)):
        return False
    arr = next((w for w in kernel.words if w.name == s.ref.name), None)
    return arr is not None and getattr(arr, "data", False)


def _commuting_access(kernel, s) -> bool:
    """A data cell access (`_data_access`), or an access of the thread's own part of a buffer
    (`smem.own`: no value), alone or in the lane subset around it (an `elect_one`)."""
    s = _single(s)
    return isinstance(s, SmemOwn) or _data_access(kernel, s)


def _one_instruction(a, b) -> bool:
    """The two steps the extractor makes of one tcgen05 instruction (same source line): its
    `tmem.access` (the allocation is held at the issue) and its data access of an accumulator
    stage (`tcgen05.mma.read`, `tcgen05.ld.read`); of one wgmma: its operand reads of the stages
    (`wgmma.read`) or of shared data (`wgmma.read.data`) and its use of the registers
    (`wgmma.acc`); or of one st.shared::cluster: its
    release bookkeeping (`DsmemStore`) and the peer cell it writes (`st.shared @cta(t)`)."""
    pair = {type(a).__name__, type(b).__name__}
    if pair == {"DsmemStore", "SmemStore"}:  # st.shared::cluster and the peer cell it writes
        d, w = (a, b) if type(a).__name__ == "DsmemStore" else (b, a)
        return w.ref.cta == d.cta and d.loc == w.loc
    return pair in ({"TmemAccess", "MmaRead"}, {"TmemAccess", "TmemLoad"},
                    {"WgmmaRead", "WgmmaAcc"}, {"WgmmaReadData", "WgmmaAcc"}) and \
        getattr(a, "loc", None) == getattr(b, "loc", None)


def _same_op(a, b) -> bool:
    """Equal statements, or equal ops at two source lines (the same step either way)."""
    if a == b:
        return True
    return isinstance(a, SyncOp) and type(a) is type(b) and \
        dataclasses.replace(a, loc=b.loc) == b


def _storer_own(kernel, edit) -> bool:
    pair = (edit.stmt, edit.other)
    for b in kernel.buffers:
        if edit.process not in b.storers or b.barrier is None:
            continue
        bars = [s for s in pair if isinstance(s, BarSync) and isinstance(s.barrier_id, Const)
                and s.barrier_id.value == b.barrier]
        own = [s for s in pair if isinstance(s, FenceProxyAsync) or
               (isinstance(s, SmemWrite) and s.buf == b.name)]
        if bars and own:
            return True
    return False


def _reads(s) -> set:
    return set().union(*(expr_vars(e) for e in stmt_exprs(s)))


def _writes(s) -> set:
    return {v for v in (getattr(s, "dest", None), getattr(s, "var", None)) if isinstance(v, str)}


def _assignments(x) -> tuple[set, set] | None:
    """(locals written, locals read) of an assignment, or of an If whose branches hold only
    assignments (a value computed by cases, such as a pipeline state's advance); else None."""
    if isinstance(x, Assign):
        return {x.var}, _reads(x)
    if isinstance(x, If):
        written, read = set(), set(expr_vars(x.cond))
        for st in (*x.then, *x.else_):
            got = _assignments(st)
            if got is None:
                return None
            written |= got[0]
            read |= got[1]
        return written, read
    return None


def _independent(a, b) -> bool:
    """One of the two is an assignment (or an If of assignments) of locals the other neither
    reads nor writes, and its values read nothing the other writes; the other is one op (loops,
    lane subsets: not swapped as a whole here)."""
    for x, y in ((a, b), (b, a)):
        got = _assignments(x)
        if got is not None and not isinstance(y, (Assign, If)) and not hasattr(y, "body") and \
                not (got[0] & (_reads(y) | _writes(y))) and not (got[1] & _writes(y)):
            return True
    return False


def _quiet(s) -> bool:
    """A statement that only waits or computes locals (and the final cluster barrier)."""
    if isinstance(s, If):
        return all(_quiet(x) for x in (*s.then, *s.else_))
    return isinstance(s, (MbarWait, Assign, ClusterArrive, ClusterWait))


def _quiet_end(body: tuple) -> int:
    """Where the top-level suffix of quiet statements of `body` begins."""
    i = len(body)
    while i > 0 and _quiet(body[i - 1]):
        i -= 1
    return i


def _tail(kernel, edit) -> str | None:
    """The edit (a wait deleted or its parity flipped, two statements swapped) lies in the quiet
    tail of its process: from it to the end the process only waits, computes locals and takes
    part in its last cluster barrier (its arrive and wait keep their order), and every process
    does nothing but wait after its last cluster arrive. The edit changes only when the process
    reaches that barrier and exits; what
    an exit can break (copies or arrives in flight into an exited CTA, TMEM held, a CTA of the
    cluster gone) the model checks at the exit."""
    if edit.what not in ("deleted", "parity flipped", "swapped") or \
            (edit.what == "deleted" and isinstance(edit.stmt, ClusterArrive)):
        return None
    if {type(edit.stmt), type(edit.other)} == {ClusterArrive, ClusterWait}:
        return None  # a wait before its arrive, two arrives without a wait: arrival-mismatch
    body = kernel.processes[edit.process].body
    idx = next((i for i, s in enumerate(body) if s is edit.stmt), None)
    if idx is None or not _quiet_after_last_arrive(kernel):
        return None
    if _past_final_arrive(body, idx, edit):
        return "past the final cluster arrive"
    if idx < _quiet_end(body) or \
            sum(isinstance(s, ClusterArrive) for s in walk_stmts(body[idx:])) > 1:
        return None
    return "quiet tail"


def _past_final_arrive(body: tuple, idx: int, edit) -> bool:
    """A statement moved past its process's last cluster arrive (with no exit in it, nothing
    issued into another CTA but mbarrier arrives and TMA loads, whose target's lifetime the
    model checks: at the issue, and at the target's exit while the copy is in flight): every
    process only waits after its last cluster arrive, so the barrier ordered the statement
    before nothing but waits and exits."""
    if edit.what != "swapped" or not isinstance(edit.other, ClusterArrive):
        return False
    if any(isinstance(s, ClusterArrive) for s in walk_stmts(body[idx + 2:])):
        return False
    for x in walk_stmts((edit.stmt,)):
        if isinstance(x, (Exit, ClusterArrive, ClusterWait)):
            return False
        remote = getattr(x, "multicast", None) is not None or \
            any(r.cta is not None for r in _bar_refs(x)) or getattr(x, "cta", None) is not None
        if remote and not isinstance(x, (MbarArrive, MbarArriveExpectTx, TmaLoad)):
            return False
    return True


def _quiet_after_last_arrive(kernel) -> bool:
    """Every process does nothing but wait and compute locals after its last cluster arrive
    (all of them at the top level of its body)."""
    for p in kernel.processes:
        arrives = [i for i, s in enumerate(p.body) if isinstance(s, ClusterArrive)]
        nested = sum(isinstance(s, ClusterArrive) for s in walk_stmts(p.body))
        if nested != len(arrives):
            return False
        if arrives and any(not isinstance(s, (MbarWait, Assign, ClusterWait))
                           for s in walk_stmts(p.body[arrives[-1] + 1:])):
            return False
    return True


_BARRIER_OPS = (*_BARRIER_ONLY, MbarWait, MbarTestWait)


def _private(kernel, pi: int) -> set:
    """The mbarrier arrays process `pi` (one instance) initializes that only it uses, with
    barrier ops alone and none remote: no other instance of its CTA names them, nothing names
    them from another CTA, no async op completes on them."""
    me = kernel.processes[pi]
    if me.instances != 1:
        return set()
    mine = {s.bar.name for s in walk_stmts(me.body) if isinstance(s, MbarInit)}
    for qi, q in enumerate(kernel.processes):
        for s in walk_stmts(q.body):
            refs = [r for r in _bar_refs(s) if r.name in mine]
            if not refs:
                continue
            multicast = getattr(s, "multicast", None) is not None
            for r in refs:
                target = q.cta if r.cta is None else \
                    r.cta.value if isinstance(r.cta, Const) else None
                if target is not None and target != me.cta and not multicast:
                    continue  # the same array in another CTA: other barriers
                if qi != pi or not isinstance(s, _BARRIER_OPS) or target is None or multicast:
                    mine.discard(r.name)
    return mine


def _private_barriers(kernel, edit) -> bool:
    """An edit of a process's barriers nobody else uses (`_private`): a `fence.mbarrier_init`
    deleted or moved when every barrier its process initializes is private (the fence only marks
    those inits fenced, which the model reads for an async copy's issue and, once published,
    for another instance's use), or a statement of ops on private barriers alone swapped with
    one that names none of them (only the process observes those barriers, and the order of
    its own ops on them is unchanged)."""
    if edit.what not in ("deleted", "swapped"):
        return False
    me = kernel.processes[edit.process]
    private = _private(kernel, edit.process)
    if not private:
        return False
    if isinstance(edit.stmt, MbarInitFence) or isinstance(edit.other, MbarInitFence):
        mine = {s.bar.name for s in walk_stmts(me.body) if isinstance(s, MbarInit)}
        return mine <= private
    if edit.what != "swapped":
        return False
    sides = [[x for x in walk_stmts((y,)) if isinstance(x, SyncOp)] for y in (edit.stmt, edit.other)]

    def own(r) -> bool:  # the private array of the process's own CTA (not a peer's, via mapa)
        return r.name in private and (r.cta is None or r.cta == Const(me.cta))
    for side, other in ((sides[0], sides[1]), (sides[1], sides[0])):
        if side and all(isinstance(x, _BARRIER_OPS) and all(own(r) for r in _bar_refs(x))
                        for x in side) and \
                not any(r.name in private for x in other for r in _bar_refs(x)) and \
                not any(isinstance(x, (MbarInitFence, Exit)) for x in other):
            return True
    return False


def _bar_refs(s) -> list:
    from warpspin.syncir.ir import MBarRef
    return [v for v in (getattr(s, f.name) for f in fields(s)) if isinstance(v, MBarRef)] \
        if hasattr(s, "__dataclass_fields__") else []


def _one_warp_barrier(kernel, edit) -> bool:
    """A `bar.sync` deleted or moved in a one-CTA kernel whose CTA is one warp and that follows
    no shared data: the barrier completes when that warp arrives, so it orders nothing the
    warp's program order does not, and publishes inits nobody else uses."""
    if edit.what not in ("deleted", "swapped") or \
            not (isinstance(edit.stmt, BarSync) or isinstance(edit.other, BarSync)):
        return False
    me = kernel.processes[edit.process]
    return (kernel.num_ctas == 1 and len(kernel.processes) == 1 and me.instances == 1
            and not any(getattr(w, "data", False) for w in kernel.words))


@dataclass(frozen=True)
class Verdict:
    """What classify() reads of a mutant's result (kept in the --cache file)."""
    verdict: str
    outcome: str
    reasons: tuple
    kind: str = ""

    @staticmethod
    def of(r) -> "Verdict":
        return Verdict(r.verdict, r.outcome, tuple(r.reasons),
                       r.violations[0].kind if r.violations else "")


def check(mutant, timeout: float, cache: dict | None = None) -> Verdict:
    """The mutant's verdict with the default engine and options (from `cache` when its SyncIR
    was checked before with the same timeout)."""
    import hashlib
    key = hashlib.sha1(f"{timeout}\n{fmt_kernel(mutant)}".encode()).hexdigest()
    if cache is not None and key in cache:
        return Verdict(*cache[key])
    v = Verdict.of(verify_kernel(mutant, opts=CheckOptions(timeout_s=timeout)))
    if cache is not None:
        cache[key] = [v.verdict, v.outcome, list(v.reasons), v.kind]
    return v


def classify(kernel, base, mutant, edit, timeout: float, cache: dict | None = None,
             name: str = "") -> tuple[str, str]:
    """(class, detail) of one mutant of `kernel` (catalog name `name`), whose own result is
    `base`."""
    r = check(mutant, timeout, cache)
    if r.verdict == "violation":
        return "reported", r.kind
    if r.verdict == "verified":
        source = AT_THE_SOURCE.get((name, fmt_edit(edit)))
        if source:
            return "reported", f"at the source: {source}"
        rule = equivalence(kernel, mutant, edit, name)
        if rule:
            return "equivalent", rule
        larger = reported_when_larger(kernel, mutant, timeout, cache)
        return ("reported", larger) if larger else ("unexplained", "VERIFIED")
    why = (r.reasons or [r.verdict])[0]
    if r.outcome == base.outcome and list(r.reasons) == list(base.reasons):
        return "masked", why
    if r.verdict == "inconclusive" and ("limit" in why or "timed out" in why or
                                        "out of memory" in why):
        return "undecided", why
    return "reported", f"{r.outcome}: {why}"


def reported_when_larger(kernel, mutant, timeout: float, cache: dict | None = None
                         ) -> str | None:
    """A survivor that is a VIOLATION at a larger launch value (one launch value fixed at v,
    raised by a step of LARGER: more tiles, k-tiles or trip counts) where the kernel itself is
    VERIFIED: the edit is a real bug the catalog's configuration does not reach (a wait that
    protects a reuse only a second tile makes). The detail names the value and the kind."""
    for p in kernel.params:
        if p.lo != p.hi or p.lo < 1 or p.lo > 64:
            continue
        for v in [p.lo + d for d in LARGER if p.lo + d <= 64]:
            at = lambda k: replace(k, params=tuple(replace(q, lo=v, hi=v) if q.name == p.name  # noqa: E731
                                                   else q for q in k.params))
            m = check(at(mutant), timeout, cache)
            if m.verdict != "violation":
                continue
            if check(at(kernel), timeout, cache).verdict == "verified":
                return f"{m.kind} at {p.name}={v}"
    return None


def kernels(names: list[str]) -> list[str]:
    from fixtures import catalog as C
    groups = [g for g in ("examples", "regression", "quack", "fa4") if C.available(g) is None]
    return [e.name for e in C.entries() if e.group in groups and (not names or e.name in names)]


_JOB: tuple = ()


def _classify_nth(i: int) -> tuple[tuple[str, str], dict]:
    k, base, ms, timeout, cache, name = _JOB
    fresh: dict = {}
    got = classify(k, base, ms[i][0], ms[i][1], timeout, _Layered(cache, fresh), name)
    return got, fresh


class _Layered(dict):
    """A worker's view of the cache: reads the parent's, keeps what it adds apart."""

    def __init__(self, base: dict, fresh: dict):
        super().__init__()
        self.base, self.fresh = base, fresh

    def __contains__(self, key):
        return key in self.base or key in self.fresh

    def __getitem__(self, key):
        return self.fresh[key] if key in self.fresh else self.base[key]

    def __setitem__(self, key, value):
        self.fresh[key] = value


def _classified(k, base, ms, args, name: str = "") -> list[tuple[str, str]]:
    """classify() of every mutant, in `args.jobs` forked processes (they share `k`'s objects,
    so the `unreached` rule's op ids hold there)."""
    global _JOB
    _JOB = (k, base, ms, args.timeout, args.cache_data, name)
    if args.jobs <= 1:
        got = [_classify_nth(i) for i in range(len(ms))]
    else:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            got = pool.map(_classify_nth, range(len(ms)), chunksize=1)
    for _, fresh in got:
        args.cache_data.update(fresh)
    if args.cache and any(fresh for _, fresh in got):
        import json
        with open(args.cache, "w") as f:
            json.dump(args.cache_data, f)
    return [c for c, _ in got]


def fmt_edit(edit) -> str:
    s = getattr(edit.stmt, "fmt", lambda: type(edit.stmt).__name__)()
    loc = getattr(edit.stmt, "loc", None)
    where = f" ({os.path.basename(loc.file)}:{loc.line})" if loc and loc.file else ""
    if edit.what == "swapped":
        o = getattr(edit.other, "fmt", lambda: type(edit.other).__name__)()
        return f"process {edit.process}: `{s}`{where} swapped with `{o}`"
    return f"process {edit.process}: `{s}`{where} {edit.what}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--per-kernel", type=int, default=0, help="a fixed random sample (0: all)")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "mutants.md"))
    ap.add_argument("--jobs", type=int, default=1, help="mutants checked at once (processes)")
    ap.add_argument("--cache", default="", help="a JSON file of mutant verdicts, read and "
                    "extended: a re-run with new equivalence rules checks only new mutants")
    args = ap.parse_args(argv)
    args.cache_data = {}
    if args.cache and os.path.exists(args.cache):
        import json
        with open(args.cache) as f:
            args.cache_data = json.load(f)
    from fixtures import catalog as C
    rows, unexplained, totals = [], [], collections.Counter()
    t_all = time.perf_counter()
    for name in kernels(args.names):
        try:
            k = C.extracted(name)
        except Exception as e:  # a kernel that does not trace here: said in the table
            rows.append((name, f"not traced: {type(e).__name__}", *[""] * 7))
            continue
        base = verify_kernel(k, opts=CheckOptions(timeout_s=args.timeout))
        if base.outcome not in COMPLETES:
            rows.append((name, f"skipped: {base.outcome}", *[""] * 7))
            continue
        ms = [(m, e) for m, e in described_mutants(k) if not validate(m)]
        if args.per_kernel:
            random.Random(name).shuffle(ms)
            ms = ms[:args.per_kernel]
        c = collections.Counter()
        t0 = time.perf_counter()
        runs(k)  # before the workers fork: they share it
        for (m, e), (cls, detail) in zip(ms, _classified(k, base, ms, args, name)):
            c[cls] += 1
            c[(cls, detail if cls == "equivalent" else "")] += 1
            if cls == "unexplained":
                unexplained.append((name, fmt_edit(e)))
        totals.update({x: c[x] for x in CLASSES})
        totals["mutants"] += len(ms)
        rows.append((name, base.outcome, len(ms), *(c[x] for x in CLASSES),
                     f"{time.perf_counter() - t0:.0f}"))
        print(" | ".join(str(x) for x in rows[-1]), flush=True)
        with open(args.out, "w") as f:  # after every kernel: a run cut short keeps its rows
            f.write(_report(rows, unexplained, totals, time.perf_counter() - t_all, args))
    seconds = time.perf_counter() - t_all
    with open(args.out, "w") as f:
        f.write(_report(rows, unexplained, totals, seconds, args))
    print(f"{totals['mutants']} mutants: " + ", ".join(f"{totals[x]} {x}" for x in CLASSES) +
          f" ({seconds:.0f} s) -> {args.out}")
    return 1 if unexplained else 0


def _report(rows, unexplained, totals, seconds, args) -> str:
    import platform
    head = ("kernel", "kernel's verdict", "mutants", *CLASSES, "seconds")
    out = ["# One-edit mutants of the example and catalog kernels", "",
           "Generated by `python bench/mutants.py" + (f" --per-kernel {args.per_kernel}"
                                                      if args.per_kernel else "") +
           f" --timeout {args.timeout:g}` (`make mutate`) on {platform.machine()} with "
           f"{os.cpu_count()} cores, {seconds / 60:.0f} min. What each class means and the "
           "equivalence rules: the docstring of bench/mutants.py.", "",
           f"**{totals['mutants']} mutants: " + ", ".join(f"{totals[x]} {x}" for x in CLASSES) +
           ".**", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    out += ["", "## Unexplained survivors", ""]
    out += [f"* {n}: {e}" for n, e in unexplained] or ["None."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
