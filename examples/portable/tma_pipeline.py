"""A warp-specialized TMA pipeline (``PipelineTmaAsync``) written with the API that every CuTe DSL
release since 4.4 has: no pipeline ``name=``, the shared-memory allocator imported from where the
release keeps it.  ``bench/dsl_versions.py`` and ``tests/test_dsl_versions.py`` check it with the
oldest and the newest DSL; ``examples/hopper_pipeline.py`` is the same protocol in 4.8's API.

One producer warp streams the K tiles of A into STAGES shared-memory buffers with TMA; one
consumer warpgroup waits for each stage, adds it into registers and releases it.

Variants:
  correct          the reference protocol
  missing_release  consumers never call consumer_release -> the producer hangs
  wrong_tx_bytes   expect-tx is one TMA tile too many     -> the consumers hang
"""
from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync

try:  # DSL 4.8 moved the allocator to cutlass.memory
    from cutlass.memory import SmemAllocator
except ImportError:
    from cutlass.utils import SmemAllocator

TM, TK = 64, 64
BUGS = ("missing_release", "wrong_tx_bytes")


class TmaPipeline:
    def __init__(self, stages: int = 2, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.stages, self.bug = stages, bug
        self.threads = 128 + 32  # warps 0..3 consume, warp 4 produces

    @cute.jit
    def __call__(self, a: cute.Tensor, c: cute.Tensor):
        one_stage = cute.make_layout((TM, TK), stride=(TK, 1))
        atom, tma_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), a, one_stage, (TM, TK))
        self.tile_bytes = cute.size_in_bytes(Float32, one_stage)
        m_tiles = cute.size(a, mode=[0]) // TM
        self.kernel(atom, tma_a, c).launch(grid=(m_tiles, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_a: cute.Tensor, c: cute.Tensor):
        stages = self.stages
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[Int64, 2 * stages]
            data: cute.struct.Align[cute.struct.MemRange[Float32, TM * TK * stages], 1024]

        storage = SmemAllocator().allocate(Smem)
        sA = storage.data.get_tensor(cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK)))
        tx_bytes = self.tile_bytes
        if cutlass.const_expr(self.bug == "wrong_tx_bytes"):
            tx_bytes = 2 * self.tile_bytes                                   # BUG
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            tx_count=tx_bytes,
            barrier_storage=storage.bars.data_ptr(),
        )
        gA = cute.local_tile(tma_a, (TM, TK), (bidx, None))  # (TM, TK, k)
        tAsA, tAgA = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        k_tiles = cute.size(gA, mode=[2])

        if warp == 4:                                                        # TMA producer warp
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.producer_acquire(state)
                cute.copy(atom, tAgA[None, k], tAsA[None, state.index],
                          tma_bar_ptr=pipe.producer_get_barrier(state))
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        if warp < 4:                                                         # consumer warpgroup
            per_thread = TM * TK // 128
            acc = cute.make_rmem_tensor((per_thread,), Float32)
            acc.fill(0.0)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.consumer_wait(state)
                for i in cutlass.range_constexpr(per_thread):
                    e = tidx + i * 128
                    acc[i] = acc[i] + sA[e // TK, e % TK, state.index]
                cute.arch.fence_view_async_shared()  # the reads, before the refill (async proxy)
                if cutlass.const_expr(self.bug != "missing_release"):
                    pipe.consumer_release(state)                             # BUG: dropped
                state.advance()
            for i in cutlass.range_constexpr(per_thread):
                e = tidx + i * 128
                c[bidx * TM + e // TK, e % TK] = acc[i]


def variant(bug: str | None = None, *, k_tiles: int = 3):
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM, TK * k_tiles), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (TM, TK), stride_order=(1, 0), align=16)
    return TmaPipeline(bug=bug), (a, c)


def correct(**kw):
    return variant(None, **kw)


def missing_release(**kw):
    return variant("missing_release", **kw)


def wrong_tx_bytes(**kw):
    return variant("wrong_tx_bytes", **kw)


VARIANTS = {"correct": correct, "missing_release": missing_release,
            "wrong_tx_bytes": wrong_tx_bytes}
EXPECT = {"correct": "verified", "missing_release": "deadlock", "wrong_tx_bytes": "tx-mismatch"}
