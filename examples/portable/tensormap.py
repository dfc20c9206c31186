"""A k-grouped reduction that rewrites its TMA descriptor in place between groups, written with
the API that every CuTe DSL release since 4.4 has (no pipeline ``name=``, ``TensorMapManager`` and
the allocator imported from where the release keeps them): ``examples/kgrouped_tensormap.py`` is
the same protocol in 4.8's API, with the story of the race.  ``bench/dsl_versions.py`` and
``tests/test_dsl_versions.py`` check it with the oldest and the newest DSL.

Variants:
  correct      drain, rewrite, release, acquire
  no_drain     the rewrite does not wait for the loads' descriptor reads -> tensormap-race
  no_acquire   the loads use the rewritten descriptor without acquiring it -> tensormap-race
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync

try:  # DSL 4.8 moved these to cutlass.tensor_utils and cutlass.memory
    from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode
    from cutlass.memory import SmemAllocator
except ImportError:
    from cutlass.utils import SmemAllocator, TensorMapManager, TensorMapUpdateMode

TM, TK = 64, 64   # one tile: 64 x 64 fp32 = 16 KiB
GROUPS, KT = 4, 1  # groups, k-tiles per group (the rewrite right after a load: the race shows)
BUGS = ("no_drain", "no_acquire")


class KGrouped:
    def __init__(self, stages: int = 2, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.stages = stages
        self.bug = bug
        self.threads = 128 + 32  # warps 0..3 consume, warp 4 produces

    @cute.jit
    def __call__(self, a: cute.Tensor, c: cute.Tensor, ws: cute.Tensor):
        one_stage = cute.make_layout((TM, TK), stride=(TK, 1))
        group0 = cute.make_tensor(a.iterator, cute.make_layout(
            (cute.size(a, mode=[0]), KT * TK), stride=(GROUPS * KT * TK, 1)))
        atom, tma_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), group0, one_stage, (TM, TK))
        self.tile_bytes = cute.size_in_bytes(Float32, one_stage)
        m_tiles = cute.size(a, mode=[0]) // TM
        self.kernel(atom, tma_a, a, c, ws).launch(grid=(m_tiles, 1, 1),
                                                  block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_a: cute.Tensor, a: cute.Tensor, c: cute.Tensor,
               ws: cute.Tensor):
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
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            tx_count=self.tile_bytes,
            barrier_storage=storage.bars.data_ptr(),
        )
        gA = cute.local_tile(tma_a, (TM, TK), (bidx, None))  # (TM, TK, KT)
        tAsA, tAgA = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        maps = TensorMapManager(TensorMapUpdateMode.GMEM, 128)
        desc = maps.get_tensormap_ptr(ws[bidx, None].iterator)  # this CTA's descriptor slot
        desc_generic = maps.get_tensormap_ptr(desc, cute.AddressSpace.generic)  # what TMA takes

        if warp == 4:                                                     # TMA producer warp
            with cute.arch.elect_one():
                cpasync.copy_tensormap(atom, desc)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for g in cutlass.range(GROUPS, unroll=1):
                if cutlass.const_expr(self.bug != "no_drain"):
                    with cute.arch.elect_one():                           # BUG: dropped
                        cute.arch.cp_async_bulk_commit_group()
                        cute.arch.cp_async_bulk_wait_group(0, read=True)
                cute.arch.sync_warp()
                group = cute.make_tensor(a.iterator + g * KT * TK, cute.make_layout(
                    (cute.size(a, mode=[0]), KT * TK), stride=(GROUPS * KT * TK, 1)))
                cpasync.update_tma_descriptor(atom, group, desc)
                cute.arch.sync_warp()
                cpasync.fence_tma_desc_release()
                if cutlass.const_expr(self.bug != "no_acquire"):
                    cpasync.fence_tma_desc_acquire(desc)                  # BUG: dropped
                for k in cutlass.range(KT, unroll=1):
                    pipe.producer_acquire(state)
                    cute.copy(atom, tAgA[None, k], tAsA[None, state.index],
                              tma_bar_ptr=pipe.producer_get_barrier(state),
                              tma_desc_ptr=desc_generic)
                    pipe.producer_commit(state)
                    state.advance()
            pipe.producer_tail(state)

        if warp < 4:                                                      # consumer warpgroup
            per_thread = TM * TK // 128
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for g in cutlass.range(GROUPS, unroll=1):
                acc = cute.make_rmem_tensor((per_thread,), Float32)
                acc.fill(0.0)
                for k in cutlass.range(KT, unroll=1):
                    pipe.consumer_wait(state)
                    for i in cutlass.range_constexpr(per_thread):
                        e = tidx + i * 128
                        acc[i] = acc[i] + sA[e // TK, e % TK, state.index]
                    cute.arch.fence_view_async_shared()  # the reads, before the refill (async proxy)
                    pipe.consumer_release(state)
                    state.advance()
                for i in cutlass.range_constexpr(per_thread):
                    e = tidx + i * 128
                    c[g * cute.size(a, mode=[0]) + bidx * TM + e // TK, e % TK] = acc[i]


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
M_TILES = 4


def _args():
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM * M_TILES, GROUPS * KT * TK), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (GROUPS * TM * M_TILES, TK), stride_order=(1, 0), align=16)
    ws = fake_tensor(Int64, (M_TILES, 16), stride_order=(1, 0), align=128)
    return a, c, ws


def variant(bug: str | None = None):
    return KGrouped(bug=bug), _args()


def correct():
    return variant(None)


def no_drain():
    return variant("no_drain")


def no_acquire():
    return variant("no_acquire")


VARIANTS = {"correct": correct, "no_drain": no_drain, "no_acquire": no_acquire}
EXPECT = {"correct": "verified", "no_drain": "tensormap-race", "no_acquire": "tensormap-race"}
