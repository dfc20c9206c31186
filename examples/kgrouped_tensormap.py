"""A k-grouped reduction that rewrites its TMA descriptor in place, in the shape of DeepGEMM's
k-grouped GEMM (PR #343, ../shared/seeds): correct, and with the race that PR fixed.

Each CTA sums GROUPS groups of a row block: C[g*M + m, j] = sum_k A_g[m, k*TK + j], where group g
is a separate (M, KT*TK) fp32 matrix (the g-th slice of A's columns), M = TM * M_TILES. One producer warp
loads every k-tile of every group with TMA through ONE descriptor in global memory (a workspace
slot per CTA), which it rewrites for the next group when the group changes: `copy_tensormap`
first, then `update_tma_descriptor` per group, released to the tensormap proxy and acquired
before the loads. One consumer warpgroup waits for each tile, adds it into registers and
releases the stage (``PipelineTmaAsync``).

A TMA load reads its descriptor some time after its issue. Before the rewrite, the producer's
electing lane commits its loads to a bulk async-group and waits for their descriptor reads
(``cp.async.bulk.wait_group.read 0``, PTX 9.7.9.26.5.2), as CUTLASS's TensorMapManager does.

On an H200 (132 CTAs, 16 groups of one k-tile: the rewrite follows each load at once) the
unfixed kernel's result was wrong in every one of 200 runs, the fixed one in none
(docs/ground-truth.md); with 2 k-tiles per group and 8 groups, in 59 of 300.

Variants (each differs from ``correct`` by one line, the copy ones by the drain block):
  correct      drain, rewrite, release, acquire
  no_drain     the rewrite does not wait for the loads' descriptor reads -> tensormap-race
  no_acquire   the loads use the rewritten descriptor without acquiring it -> tensormap-race
  copy_after_drain       DeepGEMM's shape: the electing lane drains, then copies the whole
                         descriptor (copy_tensormap) in the same block. Right in PTX, but ptxas
                         moves the copy's STG.E.128 above the DEPBAR of the wait: `warpspin sass`
                         reports error[reordered] (docs/ground-truth.md, "What ptxas emitted")
  copy_after_drain_sync  the same with a warp sync between the wait and the copy: order kept
"""
from __future__ import annotations

import os
import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync
from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode

TM, TK = 64, 64   # one tile: 64 x 64 fp32 = 16 KiB
# groups, k-tiles per group (the rewrite right after a load: the race shows); the GPU runs can
# set others (KGROUPED_SHAPE=8x2: more loads in flight per rewrite)
GROUPS, KT = (int(v) for v in os.environ.get("KGROUPED_SHAPE", "16x1").split("x"))
BUGS = ("no_drain", "no_acquire")


class KGrouped:
    def __init__(self, stages: int = 2, bug: str | None = None, rewrite: str = "update"):
        assert bug is None or bug in BUGS, bug
        self.rewrite = rewrite
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

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        sA = storage.data.get_tensor(cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK)))
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            tx_count=self.tile_bytes,
            barrier_storage=storage.bars.data_ptr(),
            name="ab",
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
                if cutlass.const_expr(self.rewrite == "copy"):
                    with cute.arch.elect_one():   # DeepGEMM's shape: one lane drains, copies
                        cute.arch.cp_async_bulk_commit_group()
                        cute.arch.cp_async_bulk_wait_group(0, read=True)
                        cpasync.copy_tensormap(atom, desc)
                if cutlass.const_expr(self.rewrite == "copy_sync"):
                    with cute.arch.elect_one():
                        cute.arch.cp_async_bulk_commit_group()
                        cute.arch.cp_async_bulk_wait_group(0, read=True)
                    cute.arch.sync_warp()         # keeps ptxas from moving the copy above it
                    with cute.arch.elect_one():
                        cpasync.copy_tensormap(atom, desc)
                if cutlass.const_expr(self.bug != "no_drain" and self.rewrite == "update"):
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
M_TILES = 132  # one CTA per SM of an H200


def _args():
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM * M_TILES, GROUPS * KT * TK), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (GROUPS * TM * M_TILES, TK), stride_order=(1, 0), align=16)
    ws = fake_tensor(Int64, (M_TILES, 16), stride_order=(1, 0), align=128)
    return a, c, ws


def variant(bug: str | None = None, rewrite: str = "update"):
    return KGrouped(bug=bug, rewrite=rewrite), _args()


def correct():
    return variant(None)


def copy_after_drain():
    return variant(None, "copy")


def copy_after_drain_sync():
    return variant(None, "copy_sync")


def no_drain():
    return variant("no_drain")


def no_acquire():
    return variant("no_acquire")


VARIANTS = {"correct": correct, "no_drain": no_drain, "no_acquire": no_acquire,
            "copy_after_drain": copy_after_drain, "copy_after_drain_sync": copy_after_drain_sync}
# what `warpspin check` must say (tests/test_examples_v2.py checks it)
EXPECT = {"correct": "verified", "no_drain": "tensormap-race", "no_acquire": "tensormap-race",
          "copy_after_drain": "verified", "copy_after_drain_sync": "verified"}
# what `warpspin sass` says of the variants the model verifies (tests/test_sass.py): the PTX of
# copy_after_drain is right, but ptxas moves the copy's stores above the DEPBAR of the wait
EXPECT_SASS = {"correct": "verified", "copy_after_drain": "reordered",
               "copy_after_drain_sync": "verified"}
EXPECT_AT = {"no_drain": "cpasync.update_tma_descriptor(atom, group, desc)",
             "no_acquire": "cute.copy(atom, tAgA[None, k], tAsA[None, state.index],"}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if any result is wrong (the
    race corrupts a load only when the rewrite overtakes its descriptor read)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    a = torch.randn(TM * M_TILES, GROUPS * KT * TK, device="cuda", dtype=torch.float32)
    c = torch.zeros(GROUPS * TM * M_TILES, TK, device="cuda", dtype=torch.float32)
    ws = torch.zeros(M_TILES, 16, device="cuda", dtype=torch.int64)
    args = [from_dlpack(x, assumed_align=16) for x in (a, c)] + [from_dlpack(ws, assumed_align=128)]
    compiled = cute.compile(fn, *args)
    ref = a.view(TM * M_TILES, GROUPS, KT, TK).sum(2).permute(1, 0, 2).reshape(-1, TK)
    from _device import count_wrong
    count_wrong(name, compiled, args, c, ref, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
