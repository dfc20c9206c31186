"""A grouped element-wise sum with one TMA descriptor per operand, both rewritten for every group,
in the shape of a grouped GEMM's tensormap handling (CUTLASS's grouped GEMM keeps one descriptor
per tensor in a workspace slot per CTA and rewrites them when the group changes).

Group g is C_g = A_g + B_g, where A_g and B_g are the g-th (M, TK) column blocks of A and B and
C_g is rows g*M .. (g+1)*M of C. One producer warp owns two descriptors in global memory,
`ws[bidx, 0, :]` for A and `ws[bidx, 1, :]` for B (128 bytes each). Per group it drains the
descriptor reads of its earlier loads (``cp.async.bulk.wait_group.read 0``), rewrites both
descriptors, releases them to the tensormap proxy, acquires each one, and loads the A and B tiles
of the group into one pipeline stage. A consumer warpgroup waits for the stage, writes the sum to
C, and releases the stage.

warpspin tells the two descriptors apart from the pointer arithmetic: both are slices of `ws`
whose addresses differ by 128 bytes, and CTA b's slots lie in row b.

Variants (each differs from ``correct`` by one line):
  correct       drain, rewrite both, release, acquire both
  no_acquire_b  B's descriptor is used without its acquire fence -> tensormap-race
  no_drain      the rewrites do not wait for the earlier loads' descriptor reads -> tensormap-race
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync
from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode

TM, TK = 64, 64   # one tile: 64 x 64 fp32 = 16 KiB
GROUPS = 16
BUGS = ("no_acquire_b", "no_drain")


class GroupedSum:
    def __init__(self, stages: int = 2, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.stages = stages
        self.bug = bug
        self.threads = 128 + 32  # warps 0..3 consume, warp 4 produces

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, ws: cute.Tensor):
        one_stage = cute.make_layout((TM, TK), stride=(TK, 1))
        atom_a, tma_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), self.group(a, 0), one_stage, (TM, TK))
        atom_b, tma_b = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), self.group(b, 0), one_stage, (TM, TK))
        self.tile_bytes = cute.size_in_bytes(Float32, one_stage)
        m_tiles = cute.size(a, mode=[0]) // TM
        self.kernel(atom_a, tma_a, atom_b, tma_b, a, b, c, ws).launch(
            grid=(m_tiles, 1, 1), block=(self.threads, 1, 1))

    @staticmethod
    def group(t: cute.Tensor, g):
        """Columns g*TK .. (g+1)*TK of `t`, as an (M, TK) tensor."""
        return cute.make_tensor(t.iterator + g * TK, cute.make_layout(
            (cute.size(t, mode=[0]), TK), stride=(GROUPS * TK, 1)))

    @cute.kernel
    def kernel(self, atom_a: cute.CopyAtom, tma_a: cute.Tensor, atom_b: cute.CopyAtom,
               tma_b: cute.Tensor, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor,
               ws: cute.Tensor):
        stages = self.stages
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[Int64, 2 * stages]
            tiles_a: cute.struct.Align[cute.struct.MemRange[Float32, TM * TK * stages], 1024]
            tiles_b: cute.struct.Align[cute.struct.MemRange[Float32, TM * TK * stages], 1024]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        stage_layout = cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK))
        sA = storage.tiles_a.get_tensor(stage_layout)
        sB = storage.tiles_b.get_tensor(stage_layout)
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            tx_count=2 * self.tile_bytes,
            barrier_storage=storage.bars.data_ptr(),
            name="ab",
        )
        gA = cute.local_tile(tma_a, (TM, TK), (bidx, None))
        gB = cute.local_tile(tma_b, (TM, TK), (bidx, None))
        tAsA, tAgA = cpasync.tma_partition(atom_a, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(atom_b, 0, cute.make_layout(1),
                                           cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        maps = TensorMapManager(TensorMapUpdateMode.GMEM, 128)
        desc_a = maps.get_tensormap_ptr(ws[bidx, 0, None].iterator)  # this CTA's slots
        desc_b = maps.get_tensormap_ptr(ws[bidx, 1, None].iterator)
        generic_a = maps.get_tensormap_ptr(desc_a, cute.AddressSpace.generic)
        generic_b = maps.get_tensormap_ptr(desc_b, cute.AddressSpace.generic)

        if warp == 4:                                                     # TMA producer warp
            with cute.arch.elect_one():
                cpasync.copy_tensormap(atom_a, desc_a)
                cpasync.copy_tensormap(atom_b, desc_b)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for g in cutlass.range(GROUPS, unroll=1):
                if cutlass.const_expr(self.bug != "no_drain"):
                    with cute.arch.elect_one():                           # BUG: dropped
                        cute.arch.cp_async_bulk_commit_group()
                        cute.arch.cp_async_bulk_wait_group(0, read=True)
                cute.arch.sync_warp()
                cpasync.update_tma_descriptor(atom_a, self.group(a, g), desc_a)
                cpasync.update_tma_descriptor(atom_b, self.group(b, g), desc_b)
                cute.arch.sync_warp()
                cpasync.fence_tma_desc_release()
                cpasync.fence_tma_desc_acquire(desc_a)
                if cutlass.const_expr(self.bug != "no_acquire_b"):
                    cpasync.fence_tma_desc_acquire(desc_b)                # BUG: dropped
                pipe.producer_acquire(state)
                cute.copy(atom_a, tAgA[None, 0], tAsA[None, state.index],
                          tma_bar_ptr=pipe.producer_get_barrier(state), tma_desc_ptr=generic_a)
                cute.copy(atom_b, tBgB[None, 0], tBsB[None, state.index],
                          tma_bar_ptr=pipe.producer_get_barrier(state), tma_desc_ptr=generic_b)
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        if warp < 4:                                                      # consumer warpgroup
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for g in cutlass.range(GROUPS, unroll=1):
                pipe.consumer_wait(state)
                for i in cutlass.range_constexpr(TM * TK // 128):
                    e = tidx + i * 128
                    c[g * cute.size(a, mode=[0]) + bidx * TM + e // TK, e % TK] = \
                        sA[e // TK, e % TK, state.index] + sB[e // TK, e % TK, state.index]
                cute.arch.fence_view_async_shared()  # the reads, before the refill (async proxy)
                pipe.consumer_release(state)
                state.advance()


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
M_TILES = 132  # one CTA per SM of an H200


def _args():
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM * M_TILES, GROUPS * TK), stride_order=(1, 0), align=16)
    b = fake_tensor(Float32, (TM * M_TILES, GROUPS * TK), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (GROUPS * TM * M_TILES, TK), stride_order=(1, 0), align=16)
    ws = fake_tensor(Int64, (M_TILES, 2, 16), stride_order=(2, 1, 0), align=128)
    return a, b, c, ws


def variant(bug: str | None = None):
    return GroupedSum(bug=bug), _args()


def correct():
    return variant(None)


def no_acquire_b():
    return variant("no_acquire_b")


def no_drain():
    return variant("no_drain")


VARIANTS = {"correct": correct, "no_acquire_b": no_acquire_b, "no_drain": no_drain}
# what `warpspin check` must say (tests/test_examples_v2.py checks it)
EXPECT = {"correct": "verified", "no_acquire_b": "tensormap-race", "no_drain": "tensormap-race"}
EXPECT_AT = {"no_acquire_b": "cute.copy(atom_b, tBgB[None, 0], tBsB[None, state.index],",
             "no_drain": "cpasync.update_tma_descriptor(atom_a, self.group(a, g), desc_a)"}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if any result is wrong."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    a = torch.randn(TM * M_TILES, GROUPS * TK, device="cuda", dtype=torch.float32)
    b = torch.randn(TM * M_TILES, GROUPS * TK, device="cuda", dtype=torch.float32)
    c = torch.zeros(GROUPS * TM * M_TILES, TK, device="cuda", dtype=torch.float32)
    ws = torch.zeros(M_TILES, 2, 16, device="cuda", dtype=torch.int64)
    args = [from_dlpack(x, assumed_align=16) for x in (a, b, c)] + \
        [from_dlpack(ws, assumed_align=128)]
    compiled = cute.compile(fn, *args)
    s = a + b
    ref = s.view(TM * M_TILES, GROUPS, TK).permute(1, 0, 2).reshape(-1, TK)
    from _device import count_wrong
    count_wrong(name, compiled, args, c, ref, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
