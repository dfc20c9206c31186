"""A TMA pipeline over a cluster of two CTAs with multicast loads, written with the API that every
CuTe DSL release since 4.4 has (no ``enable_multicast_signaling``, no pipeline ``name=``):
``examples/hopper_multicast.py`` is the same protocol in 4.8's API.  ``bench/dsl_versions.py`` and
``tests/test_dsl_versions.py`` check it with the oldest and the newest DSL.

Each CTA's producer warp loads half of every K tile and multicasts it into both CTAs; a stage may
be refilled only when the consumers of both CTAs released it.  Without
``enable_multicast_signaling`` the consumer group counts the arrivals the empty barrier expects
itself: one per consumer warp and multicast peer (``CLUSTER * consumer warps``).

Variants:
  correct            the reference protocol
  no_multicast_wait  the pipeline is created without the cluster layout -> a peer's multicast may
                     reach a barrier before it is initialized (uninitialized-barrier)
  local_mask         each half is loaded into the own CTA only, expect-tx counts the whole tile
                     -> the consumers hang (tx-mismatch)
"""
from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32
from cutlass.cute.nvgpu import cpasync

try:  # DSL 4.8 moved the allocator to cutlass.memory
    from cutlass.memory import SmemAllocator
except ImportError:
    from cutlass.utils import SmemAllocator

TM, TK = 64, 64
CLUSTER = 2
BUGS = ("no_multicast_wait", "local_mask")


class TmaMulticast:
    def __init__(self, stages: int = 2, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.stages, self.bug = stages, bug
        self.threads = 64  # warp 0 consumes, warp 1 produces

    @cute.jit
    def __call__(self, a: cute.Tensor, c: cute.Tensor):
        one_stage = cute.make_layout((TM, TK), stride=(TK, 1))
        atom, tma_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SMulticastOp(), a, one_stage, (TM, TK), num_multicast=CLUSTER)
        self.tile_bytes = cute.size_in_bytes(Float32, one_stage)
        m_tiles = cute.size(a, mode=[0]) // TM
        self.kernel(atom, tma_a, c).launch(grid=(CLUSTER * m_tiles, 1, 1), block=(self.threads, 1, 1),
                                           cluster=(CLUSTER, 1, 1))

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_a: cute.Tensor, c: cute.Tensor):
        stages = self.stages
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        row = bidx // CLUSTER
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            data: cute.struct.Align[cute.struct.MemRange[Float32, TM * TK * stages], 1024]

        storage = SmemAllocator().allocate(Smem)
        sA = storage.data.get_tensor(cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK)))
        cta_layout = cute.make_layout((1, 1, CLUSTER, 1))
        if cutlass.const_expr(self.bug == "no_multicast_wait"):
            cta_layout = cute.make_layout((1, 1, 1, 1))                      # BUG
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, CLUSTER),
            tx_count=self.tile_bytes,
            barrier_storage=storage.bars.data_ptr(),
            cta_layout_vmnk=cta_layout,
            mcast_mode_mn=(1, 0),
        )
        mask = cpasync.create_tma_multicast_mask(cute.make_layout((1, 1, CLUSTER, 1)),
                                                 (0, 0, rank, 0), mcast_mode=2)
        if cutlass.const_expr(self.bug == "local_mask"):
            mask = cutlass.Int16(1) << rank                                   # BUG
        gA = cute.local_tile(tma_a, (TM, TK), (row, None))  # (TM, TK, k)
        tAsA, tAgA = cpasync.tma_partition(atom, rank, cute.make_layout(CLUSTER),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        k_tiles = cute.size(gA, mode=[2])

        if warp == 1:                                                        # TMA producer warp
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.producer_acquire(state)
                cute.copy(atom, tAgA[None, k], tAsA[None, state.index],
                          tma_bar_ptr=pipe.producer_get_barrier(state), mcast_mask=mask)
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        if warp == 0:                                                        # consumer warp
            per_thread = TM * TK // 32
            acc = cute.make_rmem_tensor((per_thread,), Float32)
            acc.fill(0.0)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.consumer_wait(state)
                for i in cutlass.range(per_thread, unroll=1):
                    e = tidx + i * 32
                    acc[i] = acc[i] + sA[e // TK, e % TK, state.index]
                cute.arch.fence_view_async_shared()  # the reads, before the refill (async proxy)
                pipe.consumer_release(state)
                state.advance()
            if rank == 0:
                for i in cutlass.range(per_thread, unroll=1):
                    e = tidx + i * 32
                    c[row * TM + e // TK, e % TK] = acc[i]
        # a CTA must not exit while its peer may still multicast into it or arrive on its barriers
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


def variant(bug: str | None = None, *, k_tiles: int = 3):
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM, TK * k_tiles), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (TM, TK), stride_order=(1, 0), align=16)
    return TmaMulticast(bug=bug), (a, c)


def correct(**kw):
    return variant(None, **kw)


def no_multicast_wait(**kw):
    return variant("no_multicast_wait", **kw)


def local_mask(**kw):
    return variant("local_mask", **kw)


VARIANTS = {"correct": correct, "no_multicast_wait": no_multicast_wait, "local_mask": local_mask}
EXPECT = {"correct": "verified", "no_multicast_wait": "uninitialized-barrier",
          "local_mask": "tx-mismatch"}
