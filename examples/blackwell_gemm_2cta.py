"""A Blackwell (sm_100a) 2-CTA (cta_group::2) persistent GEMM, correct and with one-line bugs.

C = A @ B^T for bf16 A (M x K) and B (N x K), fp32 C, one 256 x 64 output tile at a time, computed
by a CTA pair: a cluster of two CTAs (cluster (2, 1, 1); rank 0 the leader, rank 1 its peer) whose
tcgen05.mma.cta_group::2 reads A rows 0-127 of the tile and B rows 0-31 from the leader's shared
memory, A rows 128-255 and B rows 32-63 from the peer's, and writes the leader's accumulator rows
to the leader's tensor memory and the peer's to the peer's. The grid is one cluster (192 threads a
CTA) computing TILES output tiles in a loop (tile t is the pair's row block t; CTA r stores rows
t * 256 + r * 128 ..). The warps of each CTA:

  warps 0-3  epilogue: per tile, wait for the accumulator stage (acc.full of its own CTA: the
             leader's commit multicasts to both), read its 128 rows from its tensor memory
             (tcgen05.ld, then tcgen05.wait::ld), release the stage (acc.empty: every epilogue
             thread of both CTAs arrives on the leader's barrier, 256 arrivals a phase) and store
             the registers to C
  warp 4     MMA: in both CTAs allocates the tensor memory with the pair's
             tcgen05.alloc.cta_group::2 (TmemAllocator(is_two_cta=True): two accumulator stages
             of 64 columns in each CTA) and relinquishes the allocation permit. In the leader
             only, per tile it waits for a free accumulator stage (acc.empty), per k-tile waits
             for the A/B stage (ab.full), issues the pair's tcgen05.mma and releases the stage
             with a tcgen05.commit multicast to ab.empty of both CTAs; then commits the tile's
             MMAs to acc.full of both CTAs. At the end, in both CTAs, it waits on a named barrier
             that its CTA's epilogue warps arrive on after their last tcgen05.ld and frees the
             tensor memory (TmemAllocator.free: each MMA warp arrives on the other CTA's dealloc
             barrier and waits on its own, then the pair's tcgen05.dealloc.cta_group::2). Like
             the 1-CTA example it calls no acc_pipe.producer_tail: in the leader that would wait
             for the peer's last acc.empty release, after the peer's last tcgen05.ld, and so
             would hide peer_frees_early below.
  warp 5     TMA: in both CTAs, per k-tile waits for the stage to be free (ab.empty of its own CTA)
             and loads its half of the A and B tiles (CopyBulkTensorTileG2SOp(CtaGroup.TWO)) into
             its ring of AB_STAGES shared-memory stages. The bytes of both CTAs complete on the
             leader's ab.full (the cta_group::2 lowering clears the peer bit of the barrier
             address); only the leader's producer_acquire arms it, with the pair's bytes.

It is traced for sm_100a on the CPU only (no run here: ``python examples/blackwell_gemm_2cta.py``
traces every variant).

Variants (each differs from ``correct`` by one line, selected at trace time):
  correct            the reference protocol. VERIFIED by the happens-before engine: one
                     execution of 290 ops and its happens-before relation, about 1 s. SPIN
                     alone (`--engine spin`) does not finish (11.7 M states in 600 s on one
                     core, 19.3 M in 550 s on 16 cores); with TILES = K_TILES = 1 it does:
                     VERIFIED, 15,651,796 states in 601 s (bench/blackwell.py).
  peer_skips_alloc   the peer (rank 1) does not execute the pair's tcgen05.alloc.cta_group::2
                     and goes on to the pair's relinquish: the two warps issue different
                     collective ops (the leader's alloc meets the peer's relinquish; on a GPU
                     undefined, the leader's alloc never gets its partner)
                     -> arrival-mismatch
  expect_own_bytes   ab.full's tx count is one CTA's bytes instead of the pair's: the leader
                     arms each phase for 20480 bytes and 40960 complete on it, so a phase
                     completes before the peer's half has landed and the leader's MMA reads
                     the peer's stage while the peer's TMA load still writes it -> race (the
                     rest of the bytes count on the next phase and the last ones are still in
                     flight when the CTA's threads exit: pending-at-exit; SPIN's bug hunts find
                     another face of it, a phase whose count is stuck: tx-mismatch)
  peer_frees_early   the peer's MMA warp arrives on the named barrier but does not wait on it
                     before the dealloc handshake: the leader's MMA warp arrives on the peer's
                     dealloc barrier once its own epilogue is done, the pair deallocates, and the
                     peer's epilogue's tcgen05.ld of the last tile reads columns the pair no
                     longer holds -> tmem-lifetime
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass import BFloat16, Float32, Int32, Int64
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05

ARCH = "sm_100a"
TM, TN, TK = 256, 64, 64        # pair tile: one 256 x 64 tcgen05.mma.cta_group::2 tile, 64 of K
PAIR = 2                        # CTAs of an MMA pair: the cluster
CTA_M = TM // PAIR              # rows of A, of the accumulator and of C each CTA holds
K_TILES = 2                     # k-tiles of an output tile
TILES = 3                       # output tiles of the cluster
AB_STAGES, ACC_STAGES = 2, 2
TMEM_COLS = ACC_STAGES * TN     # fp32 accumulators: one column per N, in each CTA of the pair
EPI_WARPS, MMA_WARP, TMA_WARP = 4, 4, 5
THREADS = 32 * (EPI_WARPS + 2)
TMEM_BAR = 1                    # named barrier: the tensor memory address, then its release

BUGS = ("peer_skips_alloc", "expect_own_bytes", "peer_frees_early")


class BlackwellGemm2Cta:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
        tiled_mma = sm100_utils.make_trivial_tiled_mma(
            BFloat16, BFloat16, OperandMajorMode.K, OperandMajorMode.K, Float32,
            tcgen05.CtaGroup.TWO, (TM, TN))
        # (V, M, N, K) = ((2), 1, 1, 1): the pair is the V mode
        cluster_vmnk = cute.tiled_divide(cute.make_layout((PAIR, 1, 1)),
                                         (tiled_mma.thr_id.shape,))
        a_layout = sm100_utils.make_smem_layout_a(tiled_mma, (TM, TN, TK), BFloat16, AB_STAGES)
        b_layout = sm100_utils.make_smem_layout_b(tiled_mma, (TM, TN, TK), BFloat16, AB_STAGES)
        a_one = cute.slice_(a_layout, (None, None, None, 0))     # one CTA's half, one stage
        b_one = cute.slice_(b_layout, (None, None, None, 0))
        op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.TWO)
        tma_a, mA = cute.nvgpu.make_tiled_tma_atom_A(op, a, a_one, (TM, TN, TK), tiled_mma,
                                                     cluster_vmnk.shape)
        tma_b, mB = cute.nvgpu.make_tiled_tma_atom_B(op, b, b_one, (TM, TN, TK), tiled_mma,
                                                     cluster_vmnk.shape)
        cta_bytes = cute.size_in_bytes(BFloat16, a_one) + cute.size_in_bytes(BFloat16, b_one)
        self.tx_bytes = cta_bytes * cute.size(tiled_mma.thr_id.shape)   # both CTAs' halves
        if cutlass.const_expr(self.bug == "expect_own_bytes"):
            self.tx_bytes = cta_bytes                                    # BUG: one CTA's bytes
        self.kernel(tiled_mma, cluster_vmnk, tma_a, mA, tma_b, mB, c, a_layout, b_layout).launch(
            grid=(PAIR, 1, 1), block=(THREADS, 1, 1), cluster=(PAIR, 1, 1))

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, cluster_vmnk: cute.Layout, tma_a: cute.CopyAtom,
               mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor, c: cute.Tensor,
               a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())  # 0 leader, 1 peer
        is_leader = rank == 0

        @cute.struct
        class Smem:
            ab_bars: cute.struct.MemRange[Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[Int64, 2 * ACC_STAGES]
            tmem_dealloc_bar: Int64
            tmem_addr: Int32
            sA: cute.struct.Align[cute.struct.MemRange[BFloat16, cute.cosize(a_layout.outer)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[BFloat16, cute.cosize(b_layout.outer)], 1024]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        sA = storage.sA.get_tensor(a_layout.outer, swizzle=a_layout.inner)  # (MMA, M, K, STAGE)
        sB = storage.sB.get_tensor(b_layout.outer, swizzle=b_layout.inner)

        ab_pipe = pipeline.PipelineTmaUmma.create(
            num_stages=AB_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=self.tx_bytes, barrier_storage=storage.ab_bars.data_ptr(),
            cta_layout_vmnk=cluster_vmnk, defer_sync=True, name="ab")
        acc_pipe = pipeline.PipelineUmmaAsync.create(
            num_stages=ACC_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread,
                                                     32 * EPI_WARPS * PAIR),
            barrier_storage=storage.acc_bars.data_ptr(),
            cta_layout_vmnk=cluster_vmnk, defer_sync=True, name="acc")
        tmem_bar = pipeline.NamedBarrier(barrier_id=TMEM_BAR, num_threads=32 * (EPI_WARPS + 1))
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_addr.ptr, barrier_for_retrieve=tmem_bar, allocator_warp_id=MMA_WARP,
            is_two_cta=True, two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_bar.ptr)
        # every barrier of both CTAs is initialized before either CTA touches its peer's
        pipeline.pipeline_init_arrive(cluster_shape_mn=cluster_vmnk, is_relaxed=True)
        pipeline.pipeline_init_wait(cluster_shape_mn=cluster_vmnk)

        # tile coordinates: this CTA's half of (TM, TK, m, k) of A and of (TN, TK, n, k) of B
        thr_mma = tiled_mma.get_slice(rank)
        tCgA = thr_mma.partition_A(cute.local_tile(mA, (TM, TK), (None, None)))
        tCgB = thr_mma.partition_B(cute.local_tile(mB, (TN, TK), (None, None)))
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1),
                                           cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3))
        # the accumulators of this CTA: (MMA, MMA_M, MMA_N, ACC_STAGE), in tensor memory
        acc_shape = tiled_mma.partition_shape_C((TM, TN))
        acc_layout = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES)).layout

        if warp == TMA_WARP:                                       # TMA producer, both CTAs
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, AB_STAGES)
            for t in cutlass.range(TILES, unroll=1):
                for k in cutlass.range(K_TILES, unroll=1):
                    ab_pipe.producer_acquire(state)                # the leader arms the bytes
                    bar = ab_pipe.producer_get_barrier(state)
                    cute.copy(tma_a, tAgA[None, t, k], tAsA[None, state.index], tma_bar_ptr=bar)
                    cute.copy(tma_b, tBgB[None, 0, k], tBsB[None, state.index], tma_bar_ptr=bar)
                    ab_pipe.producer_commit(state)
                    state.advance()
            ab_pipe.producer_tail(state)

        if warp == MMA_WARP:                                       # MMA warp, both CTAs
            if cutlass.const_expr(self.bug == "peer_skips_alloc"):
                if is_leader:                                      # BUG: the peer skips it
                    tmem.allocate(TMEM_COLS)                       # the leader alone
            else:
                tmem.allocate(TMEM_COLS)                           # the pair's tcgen05.alloc
            tmem.relinquish_alloc_permit()
            tmem.wait_for_alloc()                                  # publishes the address
            tmem_ptr = tmem.retrieve_ptr(Float32)
            if is_leader:                                          # the pair's MMAs
                acc = cute.make_tensor(tmem_ptr, acc_layout)
                tCrA = tiled_mma.make_fragment_A(sA)
                tCrB = tiled_mma.make_fragment_B(sB)
                ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer,
                                                        AB_STAGES)
                acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                         ACC_STAGES)
                for t in cutlass.range(TILES, unroll=1):
                    acc_pipe.producer_acquire(acc_state)
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                    for k in cutlass.range(K_TILES, unroll=1):
                        ab_pipe.consumer_wait(ab_state)
                        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                            cute.gemm(tiled_mma, acc[None, None, None, acc_state.index],
                                      tCrA[None, None, kb, ab_state.index],
                                      tCrB[None, None, kb, ab_state.index],
                                      acc[None, None, None, acc_state.index])
                            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                        ab_pipe.consumer_release(ab_state)         # commit -> both ab.empty
                        ab_state.advance()
                    acc_pipe.producer_commit(acc_state)            # commit -> both acc.full
                    acc_state.advance()
            if cutlass.const_expr(self.bug == "peer_frees_early"):
                if is_leader:
                    tmem_bar.arrive_and_wait()
                else:
                    tmem_bar.arrive()                              # BUG: arrives, does not wait
            else:
                tmem_bar.arrive_and_wait()                         # the epilogue's last tcgen05.ld
            tmem.free(tmem_ptr, TMEM_COLS)                         # handshake, pair's dealloc

        if warp < EPI_WARPS:                                       # epilogue warps, both CTAs
            tmem.wait_for_alloc()
            tmem_ptr = tmem.retrieve_ptr(Float32)
            acc = cute.make_tensor(tmem_ptr, acc_layout)[(None, None), 0, 0, None]  # (M, N, STAGE)
            t2r = tcgen05.make_tmem_copy(
                cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), Float32),
                acc[None, None, 0])
            thr_t2r = t2r.get_slice(tidx)
            tTR_tAcc = thr_t2r.partition_S(acc)                              # (T2R, M, N, STAGE)
            tTR_gC = thr_t2r.partition_D(cute.local_tile(c, (CTA_M, TN), (None, 0)))  # (.., m)
            tTR_rAcc = cute.make_rmem_tensor(tTR_gC[None, None, None, 0].shape, Float32)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ACC_STAGES)
            for t in cutlass.range(TILES, unroll=1):
                acc_pipe.consumer_wait(state)
                cute.copy(t2r, tTR_tAcc[None, None, None, state.index], tTR_rAcc)
                cute.arch.fence_view_async_tmem_load()                       # tcgen05.wait::ld
                acc_pipe.consumer_release(state)                   # arrives on the leader's
                cute.autovec_copy(tTR_rAcc, tTR_gC[None, None, None, t * PAIR + rank])
                state.advance()
            tmem_bar.arrive()                                      # done with the tensor memory


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
def variant(bug: str | None = None):
    from warpspin.frontend import fake_tensor

    m, n, k = TM * TILES, TN, TK * K_TILES
    a = fake_tensor(BFloat16, (m, k), stride_order=(1, 0), align=16)
    b = fake_tensor(BFloat16, (n, k), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (m, n), stride_order=(1, 0), align=16)
    return BlackwellGemm2Cta(bug), (a, b, c)


def correct():
    return variant(None)


def peer_skips_alloc():
    return variant("peer_skips_alloc")


def expect_own_bytes():
    return variant("expect_own_bytes")


def peer_frees_early():
    return variant("peer_frees_early")


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check --arch sm_100a` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "not-checked", "peer_skips_alloc": "arrival-mismatch",
          "expect_own_bytes": "race",
          "peer_frees_early": "tmem-lifetime"}
# the variants whose only property not checked is races on the global memory they write (extract/ownership.py:
# which elements a TMA store, a copy or a scheduler's tile reaches is not followed)
GLOBAL_ONLY = ("correct",)
# the bugs lie deeper than one core's BFS reaches in minutes: when the happens-before engine
# leaves one to SPIN, the bug hunts beside its search find it
OPTIONS = {b: {"jobs": 2} for b in ("peer_skips_alloc", "expect_own_bytes", "peer_frees_early")}
# the source line each violation must be reported at (tests/test_examples.py finds it by its text)
EXPECT_AT = {"peer_skips_alloc": "# the leader alone",
             "expect_own_bytes": "cute.gemm(tiled_mma, acc[None, None, None, acc_state.index],",
             "peer_frees_early":
                 "cute.copy(t2r, tTR_tAcc[None, None, None, state.index], tTR_rAcc)"}


if __name__ == "__main__":
    from warpspin.frontend import trace

    for name, make in VARIANTS.items():
        fn, args = make()
        kernels = trace(fn, *args, arch=ARCH)
        print(name, [(k.name[:40], k.block_dim, k.cluster_dim) for k in kernels])
    sys.exit(0)
