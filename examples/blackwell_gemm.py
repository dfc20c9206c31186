"""A Blackwell (sm_100a) warp-specialized persistent GEMM, correct and with one-line bugs.

C = A @ B^T for bf16 A (M x K) and B (N x K), fp32 C, one 128 x 64 output tile at a time. Each CTA
(192 threads, no cluster) computes TILES output tiles in a loop (tile t of CTA b is row block
b + t * CTAS). Its warps:

  warps 0-3  epilogue: per tile, wait for the accumulator stage (acc.full), read it from tensor
             memory into registers (tcgen05.ld, then tcgen05.wait::ld), release the stage
             (acc.empty) and store the registers to C
  warp 4     MMA: allocates the tensor memory (two accumulator stages of 64 columns), per tile
             waits for a free accumulator stage (acc.empty), per k-tile waits for the A/B stage
             (ab.full), issues the tcgen05.mma and releases the stage with a tcgen05.commit to
             ab.empty; then commits the tile's MMAs to acc.full. At the end it waits on a named
             barrier that the epilogue warps arrive on after their last tcgen05.ld and frees the
             tensor memory.
  warp 5     TMA: per k-tile loads the A and B tiles into a ring of AB_STAGES shared-memory stages
             (PipelineTmaUmma: ab.full counts the bytes)

When the launch value ``empty`` is 1, every CTA's first tile has no k-tiles (an empty tile, as
in a grouped or split-K GEMM): the TMA warp loads nothing, the MMA warp issues no MMA but still
commits the tile to acc.full, and the epilogue writes zeros instead of reading tensor memory but
still releases the accumulator stage. It is traced for sm_100a on the CPU only (no run here:
``python examples/blackwell_gemm.py`` traces every variant).

Variants (each differs from ``correct`` by one line, selected at trace time):
  correct                  the reference protocol (empty = 0)
  correct_any_empty        the same, proved for empty = 0 and empty = 1 in one run
  commit_wrong_stage       the MMA warp commits tile t to acc.full of stage (t + 1) % 2: tile
                           1's commit completes stage 0, the epilogue drains tile 0 and frees
                           stage 0, the MMA warp runs tile 2 and commits it to stage 1 again, so
                           acc.full[1] completes two phases (tiles 0 and 2) before the epilogue
                           waits on it for tile 1 with parity 0: that parity now names a phase
                           that will never complete (on a GPU the epilogue hangs there) and in
                           every schedule the epilogue's acc.full wait is satisfied by another
                           tile's commit, not its own -> parity-aliasing
  no_acc_release_on_empty  (empty = 1) the epilogue does not release the accumulator stage of an
                           empty tile: the MMA warp waits on that stage's acc.empty forever
                           -> deadlock
  tmem_freed_early         the MMA warp arrives on the named barrier but does not wait on it
                           before it frees the tensor memory: the last tile's MMAs may still
                           write the columns it frees (and the epilogue's tcgen05.ld of the last
                           tiles read them) -> tmem-lifetime at the free
  release_before_wait_ld   the epilogue releases the accumulator stage (acc.empty) right after
                           its tcgen05.ld, before the tcgen05.wait::ld: the MMA warp may start
                           the tile two later in that stage while the load still reads it -> race
  release_before_mma       the MMA warp releases the A/B stage (its tcgen05.commit to ab.empty)
                           before the k-tile's MMAs instead of after them: that commit tracks
                           only earlier MMAs, so its arrive can land, and the TMA warp refill the
                           stage, while these MMAs still read it -> race
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
TM, TN, TK = 128, 64, 64        # CTA tile: one 128 x 64 tcgen05.mma tile, 64 bf16 of K per stage
K_TILES = 2                     # k-tiles of a non-empty output tile
TILES, CTAS = 3, 2              # output tiles per CTA, CTAs in the grid
AB_STAGES, ACC_STAGES = 2, 2
TMEM_COLS = ACC_STAGES * TN     # fp32 accumulators: one column per N
EPI_WARPS, MMA_WARP, TMA_WARP = 4, 4, 5
THREADS = 32 * (EPI_WARPS + 2)
TMEM_BAR = 1                    # named barrier: the tensor memory address, then its release

BUGS = ("commit_wrong_stage", "no_acc_release_on_empty", "tmem_freed_early", "release_before_mma",
        "release_before_wait_ld")


class BlackwellGemm:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, empty: Int32):
        tiled_mma = sm100_utils.make_trivial_tiled_mma(
            BFloat16, BFloat16, OperandMajorMode.K, OperandMajorMode.K, Float32,
            tcgen05.CtaGroup.ONE, (TM, TN))
        a_layout = sm100_utils.make_smem_layout_a(tiled_mma, (TM, TN, TK), BFloat16, AB_STAGES)
        b_layout = sm100_utils.make_smem_layout_b(tiled_mma, (TM, TN, TK), BFloat16, AB_STAGES)
        a_one = cute.slice_(a_layout, (None, None, None, 0))
        b_one = cute.slice_(b_layout, (None, None, None, 0))
        op = cpasync.CopyBulkTensorTileG2SOp()
        tma_a, mA = cute.nvgpu.make_tiled_tma_atom_A(op, a, a_one, (TM, TN, TK), tiled_mma)
        tma_b, mB = cute.nvgpu.make_tiled_tma_atom_B(op, b, b_one, (TM, TN, TK), tiled_mma)
        self.tx_bytes = cute.size_in_bytes(BFloat16, a_one) + cute.size_in_bytes(BFloat16, b_one)
        self.kernel(tiled_mma, tma_a, mA, tma_b, mB, c, empty, a_layout, b_layout).launch(
            grid=(CTAS, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor,
               tma_b: cute.CopyAtom, mB: cute.Tensor, c: cute.Tensor, empty: Int32,
               a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        @cute.struct
        class Smem:
            ab_bars: cute.struct.MemRange[Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[Int64, 2 * ACC_STAGES]
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
            tx_count=self.tx_bytes, barrier_storage=storage.ab_bars.data_ptr(), name="ab")
        acc_pipe = pipeline.PipelineUmmaAsync.create(
            num_stages=ACC_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * EPI_WARPS),
            barrier_storage=storage.acc_bars.data_ptr(), name="acc")
        tmem_bar = pipeline.NamedBarrier(barrier_id=TMEM_BAR, num_threads=32 * (EPI_WARPS + 1))

        # tile coordinates: (TM, TK, m, k) of A, (TN, TK, n, k) of B, MMA-partitioned
        thr_mma = tiled_mma.get_slice(0)
        tCgA = thr_mma.partition_A(cute.local_tile(mA, (TM, TK), (None, None)))
        tCgB = thr_mma.partition_B(cute.local_tile(mB, (TN, TK), (None, None)))
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1),
                                           cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3))
        # the accumulators: (MMA, MMA_M, MMA_N, ACC_STAGE), placed in tensor memory below
        acc_shape = tiled_mma.partition_shape_C((TM, TN))
        acc_layout = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES)).layout

        if warp == TMA_WARP:                                                  # TMA producer
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, AB_STAGES)
            for t in cutlass.range(TILES, unroll=1):
                m = bidx + t * CTAS
                for k in cutlass.range(self.k_tiles(t, empty), unroll=1):
                    ab_pipe.producer_acquire(state)
                    bar = ab_pipe.producer_get_barrier(state)
                    cute.copy(tma_a, tAgA[None, m, k], tAsA[None, state.index], tma_bar_ptr=bar)
                    cute.copy(tma_b, tBgB[None, 0, k], tBsB[None, state.index], tma_bar_ptr=bar)
                    ab_pipe.producer_commit(state)
                    state.advance()
            ab_pipe.producer_tail(state)

        if warp == MMA_WARP:                                                  # MMA warp
            cute.arch.alloc_tmem(TMEM_COLS, storage.tmem_addr.ptr)
            cute.arch.relinquish_tmem_alloc_permit()
            tmem_bar.arrive_and_wait()                       # publishes the address
            tmem = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_addr.ptr)
            acc = cute.make_tensor(tmem, acc_layout)
            tCrA = tiled_mma.make_fragment_A(sA)
            tCrB = tiled_mma.make_fragment_B(sB)
            ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, AB_STAGES)
            acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                     ACC_STAGES)
            for t in cutlass.range(TILES, unroll=1):
                acc_pipe.producer_acquire(acc_state)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                for k in cutlass.range(self.k_tiles(t, empty), unroll=1):
                    ab_pipe.consumer_wait(ab_state)
                    if cutlass.const_expr(self.bug == "release_before_mma"):
                        ab_pipe.consumer_release(ab_state)           # BUG: before the MMAs
                    for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                        cute.gemm(tiled_mma, acc[None, None, None, acc_state.index],
                                  tCrA[None, None, kb, ab_state.index],
                                  tCrB[None, None, kb, ab_state.index],
                                  acc[None, None, None, acc_state.index])
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                    if cutlass.const_expr(self.bug != "release_before_mma"):
                        ab_pipe.consumer_release(ab_state)           # tcgen05.commit -> ab.empty
                    ab_state.advance()
                if cutlass.const_expr(self.bug == "commit_wrong_stage"):
                    acc_pipe.producer_commit(pipeline.PipelineState(             # BUG
                        ACC_STAGES, acc_state.count, (acc_state.index + 1) % ACC_STAGES,
                        acc_state.phase))
                else:
                    acc_pipe.producer_commit(acc_state)              # tcgen05.commit -> acc.full
                acc_state.advance()
            if cutlass.const_expr(self.bug == "tmem_freed_early"):
                tmem_bar.arrive()                            # BUG: arrives, does not wait
            else:
                tmem_bar.arrive_and_wait()                   # the epilogue's last tcgen05.ld
            cute.arch.dealloc_tmem(tmem, TMEM_COLS)

        if warp < EPI_WARPS:                                                  # epilogue warps
            tmem_bar.arrive_and_wait()
            tmem = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_addr.ptr)
            acc = cute.make_tensor(tmem, acc_layout)[(None, None), 0, 0, None]  # (TM, TN, STAGE)
            t2r = tcgen05.make_tmem_copy(
                cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), Float32),
                acc[None, None, 0])
            thr_t2r = t2r.get_slice(tidx)
            tTR_tAcc = thr_t2r.partition_S(acc)                              # (T2R, M, N, STAGE)
            tTR_gC = thr_t2r.partition_D(cute.local_tile(c, (TM, TN), (None, 0)))  # (.., m)
            tTR_rAcc = cute.make_rmem_tensor(tTR_gC[None, None, None, 0].shape, Float32)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ACC_STAGES)
            for t in cutlass.range(TILES, unroll=1):
                m = bidx + t * CTAS
                acc_pipe.consumer_wait(state)
                if self.k_tiles(t, empty) > 0:
                    cute.copy(t2r, tTR_tAcc[None, None, None, state.index], tTR_rAcc)
                    if cutlass.const_expr(self.bug == "release_before_wait_ld"):
                        acc_pipe.consumer_release(state)             # BUG: before the wait::ld
                    cute.arch.fence_view_async_tmem_load()                   # tcgen05.wait::ld
                    if cutlass.const_expr(self.bug != "release_before_wait_ld"):
                        acc_pipe.consumer_release(state)
                else:                                                        # empty tile
                    tTR_rAcc.fill(0.0)
                    if cutlass.const_expr(self.bug != "no_acc_release_on_empty"):
                        acc_pipe.consumer_release(state)             # BUG: dropped
                cute.autovec_copy(tTR_rAcc, tTR_gC[None, None, None, m])
                state.advance()
            tmem_bar.arrive()                                # done with the tensor memory

    @cute.jit
    def k_tiles(self, t: Int32, empty: Int32) -> Int32:
        """The k-tiles of tile t: none for the first tile when `empty` is set."""
        n = Int32(K_TILES)
        if t == 0:
            if empty != 0:
                n = Int32(0)
        return n


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
def variant(bug: str | None = None, *, empty: int = 0):
    from warpspin.frontend import fake_tensor

    m, n, k = TM * CTAS * TILES, TN, TK * K_TILES
    a = fake_tensor(BFloat16, (m, k), stride_order=(1, 0), align=16)
    b = fake_tensor(BFloat16, (n, k), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (m, n), stride_order=(1, 0), align=16)
    return BlackwellGemm(bug), (a, b, c, Int32(empty))


def correct(**kw):
    return variant(None, **kw)


def correct_any_empty(**kw):
    return variant(None, **kw)


def commit_wrong_stage(**kw):
    return variant("commit_wrong_stage", **kw)


def no_acc_release_on_empty(**kw):
    return variant("no_acc_release_on_empty", empty=1, **kw)


def release_before_mma(**kw):
    return variant("release_before_mma", **kw)


def tmem_freed_early(**kw):
    return variant("tmem_freed_early", **kw)


def release_before_wait_ld(**kw):
    return variant("release_before_wait_ld", **kw)


VARIANTS = {"correct": correct, "correct_any_empty": correct_any_empty,
            **{b: globals()[b] for b in BUGS}}
# what `warpspin check --arch sm_100a` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "not-checked", "correct_any_empty": "not-checked",
          "commit_wrong_stage": "parity-aliasing", "no_acc_release_on_empty": "deadlock",
          "tmem_freed_early": "tmem-lifetime", "release_before_mma": "race",
          "release_before_wait_ld": "race"}
# the variants whose only property not checked is races on the global memory they write (extract/ownership.py:
# which elements a TMA store, a copy or a scheduler's tile reaches is not followed)
GLOBAL_ONLY = ("correct", "correct_any_empty",)
# the source line each violation must be reported at (tests/test_examples.py finds it by its text)
EXPECT_AT = {"commit_wrong_stage": "acc_pipe.consumer_wait(state)",
             "release_before_mma": "cute.gemm(tiled_mma, acc[None, None, None, acc_state.index],",
             "release_before_wait_ld": "cute.gemm(tiled_mma, acc[None, None, None, acc_state.index],",
             "no_acc_release_on_empty": "acc_pipe.producer_acquire(acc_state)",
             "tmem_freed_early": "cute.arch.dealloc_tmem(tmem, TMEM_COLS)"}
# the empty-first-tile flag is a launch value: correct_any_empty proves both
PARAMS = {"correct_any_empty": {"empty": (0, 1)}}


if __name__ == "__main__":
    from warpspin.frontend import trace

    for name, make in VARIANTS.items():
        fn, args = make()
        kernels = trace(fn, *args, arch=ARCH)
        print(name, [(k.name[:40], k.block_dim, k.cluster_dim) for k in kernels])
    sys.exit(0)
