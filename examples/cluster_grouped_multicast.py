"""A grouped kernel on 2-CTA clusters whose multicast decision depends on the block index: the
DeepGEMM SM90 k-grouped multicast bug (an odd number of blocks per group lets a cluster straddle
two groups, its two CTAs disagree on multicast, and one waits for bytes nobody sends).

The grid's blocks are divided into groups of ``blocks_per_group`` consecutive blocks (the m-blocks
of one expert / group).  Block ``b`` belongs to group ``g = b // blocks_per_group`` and sums its
group's (TM x TK) weight tiles over K: ``C[b] = sum_k W[g][:, k*TK:(k+1)*TK]``.  The two CTAs of a
cluster (cluster (2,1,1): blocks 2c and 2c+1) need the same tiles when they are in the same group,
so each loads half of every tile and multicasts it into both CTAs.  When they are not, each must
load its own group's whole tile by itself.  Each CTA decides from its own ``block_idx()``
(``is_tma_multicast_valid``); the full barrier expects the whole tile in both cases, and the empty
barriers always take releases from the consumers of both CTAs (``PipelineTmaAsync`` with the
cluster layout), as in DeepGEMM.

Variants (each a grid of 6 blocks = 3 clusters):
  correct          2 blocks per group (3 groups), the seed's test: "is the peer block in my group?"
                   by the block's index *inside its group* (``local ^ 1 < blocks_per_group``).
                   With an even group size the group-local parity is the cluster rank, so both
                   CTAs of a cluster always agree (and always multicast).
  odd_group        the same test, 3 blocks per group (2 groups).  Cluster 1 = blocks 2, 3
                   straddles groups 0 and 1: block 2 (local 2: peer local 3 is outside its group)
                   loads its whole tile alone, block 3 (local 0: peer local 1 is in its group)
                   multicasts one half and expects the other half from its peer, which never sends
                   it -> block 3's consumer waits forever (and block 2's full barrier receives half
                   a tile too many).  Cluster 2 = blocks 4, 5 disagrees the same way.
  odd_group_fixed  3 blocks per group with the decision both CTAs of a cluster compute alike:
                   "is my cluster peer (``b ^ 1``) in my group?".  Cluster 1 loads locally in both
                   CTAs, clusters 0 and 2 multicast; correct.
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32
from cutlass.cute.nvgpu import cpasync

TM, TK = 64, 64  # one tile: 64 x 64 fp32 = 16 KiB, loaded as two 8 KiB halves
CLUSTER = 2
GRID = 6         # blocks in the grid: 3 clusters
BUGS = ("odd_group",)


class GroupedMulticast:
    def __init__(self, blocks_per_group: int, peer_test: str = "local", stages: int = 2):
        assert peer_test in ("local", "cluster"), peer_test
        self.bpg, self.peer_test, self.stages = blocks_per_group, peer_test, stages
        self.threads = 64  # warp 0 consumes, warp 1 produces

    @cute.jit
    def __call__(self, w: cute.Tensor, c: cute.Tensor):
        one_stage = cute.make_layout((TM, TK), stride=(TK, 1))
        atom, tma_w = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SMulticastOp(), w, one_stage, (TM, TK), num_multicast=CLUSTER)
        self.tile_bytes = cute.size_in_bytes(Float32, one_stage)
        blocks = cute.size(c, mode=[0]) // TM
        self.kernel(atom, tma_w, c).launch(grid=(blocks, 1, 1), block=(self.threads, 1, 1),
                                           cluster=(CLUSTER, 1, 1))

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_w: cute.Tensor, c: cute.Tensor):
        stages, bpg = self.stages, self.bpg
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        group = bidx // bpg

        # is_tma_multicast_valid: does the other CTA of my cluster need the same tile as I do?
        local = bidx % bpg
        mcast_valid = (local ^ 1) < bpg          # the peer *inside my group* exists (seed's test)
        if cutlass.const_expr(self.peer_test == "cluster"):
            mcast_valid = (bidx ^ 1) // bpg == group  # my cluster peer is in my group (the fix)

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[cutlass.Int64, 2 * stages]
            data: cute.struct.Align[cute.struct.MemRange[Float32, TM * TK * stages], 1024]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        sW = storage.data.get_tensor(cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK)))

        # the cluster as a (V, M, N, K) layout: consumers release a stage in both CTAs, always
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            tx_count=self.tile_bytes,
            barrier_storage=storage.bars.data_ptr(),
            cta_layout_vmnk=cute.make_layout((1, 1, CLUSTER, 1)),
            mcast_mode_mn=(1, 0),
            enable_multicast_signaling=True,
            name="w",
        )
        both = cpasync.create_tma_multicast_mask(cute.make_layout((1, 1, CLUSTER, 1)),
                                                 (0, 0, rank, 0), mcast_mode=2)
        mine = cutlass.Int16(1) << rank

        gW = cute.local_tile(tma_w, (TM, TK), (group, None))  # (TM, TK, k): my group's tiles
        # my half of a tile and the other half (each CTA of a multicast pair loads one half)
        sW2, gW2 = cute.group_modes(sW, 0, 2), cute.group_modes(gW, 0, 2)
        tWsW, tWgW = cpasync.tma_partition(atom, rank, cute.make_layout(CLUSTER), sW2, gW2)
        tWsO, tWgO = cpasync.tma_partition(atom, rank ^ 1, cute.make_layout(CLUSTER), sW2, gW2)
        k_tiles = cute.size(gW, mode=[2])

        if warp == 1:                                                        # TMA producer warp
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.producer_acquire(state)                                 # expects the whole tile
                bar = pipe.producer_get_barrier(state)
                if mcast_valid:
                    # my half, into both CTAs; the other half comes from the peer
                    cute.copy(atom, tWgW[None, k], tWsW[None, state.index], tma_bar_ptr=bar,
                              mcast_mask=both)                               # BUG: the peer disagrees
                else:
                    # the whole tile, into my CTA only
                    cute.copy(atom, tWgW[None, k], tWsW[None, state.index], tma_bar_ptr=bar,
                              mcast_mask=mine)
                    cute.copy(atom, tWgO[None, k], tWsO[None, state.index], tma_bar_ptr=bar,
                              mcast_mask=mine)
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        if warp == 0:                                                        # consumer warp
            per_thread = TM * TK // 32
            acc = cute.make_rmem_tensor((per_thread,), Float32)
            acc.fill(0.0)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.consumer_wait(state)                                    # waits for the whole tile
                for i in cutlass.range(per_thread, unroll=1):
                    e = tidx + i * 32
                    acc[i] = acc[i] + sW[e // TK, e % TK, state.index]
                pipe.consumer_release(state)
                state.advance()
            for i in cutlass.range(per_thread, unroll=1):
                e = tidx + i * 32
                c[bidx * TM + e // TK, e % TK] = acc[i]
        # a CTA must not exit while its peer may still multicast into it or arrive on its barriers
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


CONFIGS = {"correct": (2, "local"), "odd_group": (3, "local"), "odd_group_fixed": (3, "cluster")}


def _args(blocks_per_group: int, k_tiles: int):
    from warpspin.frontend import fake_tensor

    groups = GRID // blocks_per_group
    w = fake_tensor(Float32, (TM * groups, TK * k_tiles), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (TM * GRID, TK), stride_order=(1, 0), align=16)
    return w, c


def variant(name: str, *, k_tiles: int = 2):
    bpg, test = CONFIGS[name]
    return GroupedMulticast(bpg, test), _args(bpg, k_tiles)


def correct(**kw):
    return variant("correct", **kw)


def odd_group(**kw):
    return variant("odd_group", **kw)


def odd_group_fixed(**kw):
    return variant("odd_group_fixed", **kw)


VARIANTS = {"correct": correct, "odd_group": odd_group, "odd_group_fixed": odd_group_fixed}
# what `warpspin check` must say (make demo and tests/test_examples.py check it).  odd_group: in
# cluster 1 (blocks 2 and 3) the CTAs disagree on the multicast: block 2's full barrier completes
# with its own half while block 3's copy of the other half into it is still in flight, so its
# consumer reads the stage under that copy (race; the deadlock of block 3, whose barrier expects
# 16 KiB and gets its own 8 KiB, is the other face of it: tx-mismatch with `--engine spin`, at
# producer_acquire); the report names both CTAs of the cluster with their block indices.
EXPECT = {"correct": "verified", "odd_group": "race", "odd_group_fixed": "verified"}
EXPECT_AT = {"odd_group": "acc[i] = acc[i] + sW[e // TK, e % TK, state.index]"}


def run_on_device(name: str, k_tiles: int = 2) -> None:
    """Runs the configuration `warpspin check` checks (6 blocks, 2 stages, 1 consumer warp,
    2 k-tiles)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    bpg, test = CONFIGS[name]
    groups = GRID // bpg
    fn = GroupedMulticast(bpg, test)
    w = torch.randn(TM * groups, TK * k_tiles, device="cuda", dtype=torch.float32)
    c = torch.zeros(TM * GRID, TK, device="cuda", dtype=torch.float32)
    args = (from_dlpack(w, assumed_align=16), from_dlpack(c, assumed_align=16))
    cute.compile(fn, *args)(*args)
    torch.cuda.synchronize()
    per_group = w.view(groups, TM, k_tiles, TK).sum(2)                       # (groups, TM, TK)
    want = per_group[torch.arange(GRID, device="cuda") // bpg].reshape(GRID * TM, TK)
    err = (c - want).abs().max().item()
    print(f"{name}: max abs error {err:.3g}")
    if err > 1e-3:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
