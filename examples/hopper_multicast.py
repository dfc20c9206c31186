"""A Hopper TMA pipeline over a cluster of two CTAs with multicast loads, correct and buggy.

Both CTAs of a cluster sum the same (TM x TK) tile row of A: C[m, j] = sum_k A[m, k*TK + j].
Each CTA's producer warp loads half of every K tile (TM/2 rows) and multicasts it into the
shared memory of both CTAs, so a stage is full in a CTA once both halves arrived there.  A stage
may be refilled only when the consumers of *both* CTAs released it: ``PipelineTmaAsync`` with a
cluster layout arrives on the peer CTA's empty barrier through ``mapa`` (lane 1 of each consumer
warp signals the peer, lane 0 its own CTA).  Every variant returns ``(jit_fn, args)`` for
``warpspin.frontend.trace``; ``python examples/hopper_multicast.py --run VARIANT`` runs it on a GPU.

Variants:
  correct            the reference protocol
  no_multicast_wait  the pipeline is created without the cluster layout: empty barriers expect
                     releases from the own CTA only, and create() syncs only the own CTA, so a
                     peer's multicast may reach a barrier before it is initialized and published
                     (uninitialized-barrier); a stage may also be refilled before the peer
                     consumed it
  local_mask         each half is loaded into the own CTA only, but expect-tx still counts the
                     whole tile -> consumers hang (tx never reaches zero)
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
BUGS = ("no_multicast_wait", "local_mask")


class HopperMulticast:
    def __init__(self, stages: int = 2, consumer_warps: int = 1, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.stages, self.bug = stages, bug
        self.cw = consumer_warps  # warps [0, cw) consume, warp cw produces
        self.threads = 32 * consumer_warps + 32

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

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        sA = storage.data.get_tensor(cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK)))

        # the cluster as a (V, M, N, K) layout: the two CTAs differ in N and share the A tile
        cta_layout = cute.make_layout((1, 1, CLUSTER, 1))
        mcast_mode = (1, 0)
        if cutlass.const_expr(self.bug == "no_multicast_wait"):
            cta_layout = cute.make_layout((1, 1, 1, 1))                      # BUG
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * self.cw),
            tx_count=self.tile_bytes,
            barrier_storage=storage.bars.data_ptr(),
            cta_layout_vmnk=cta_layout,
            mcast_mode_mn=mcast_mode,
            enable_multicast_signaling=True,
            name="ab",
        )
        mask = cpasync.create_tma_multicast_mask(cute.make_layout((1, 1, CLUSTER, 1)),
                                                 (0, 0, rank, 0), mcast_mode=2)
        if cutlass.const_expr(self.bug == "local_mask"):
            mask = cutlass.Int16(1) << rank                                   # BUG

        gA = cute.local_tile(tma_a, (TM, TK), (row, None))  # (TM, TK, k)
        tAsA, tAgA = cpasync.tma_partition(atom, rank, cute.make_layout(CLUSTER),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        k_tiles = cute.size(gA, mode=[2])

        if warp == self.cw:                                                  # TMA producer warp
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.producer_acquire(state)
                cute.copy(atom, tAgA[None, k], tAsA[None, state.index],
                          tma_bar_ptr=pipe.producer_get_barrier(state), mcast_mask=mask)
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        if warp < self.cw:                                                   # consumer warps
            n = 32 * self.cw
            per_thread = TM * TK // n
            acc = cute.make_rmem_tensor((per_thread,), Float32)
            acc.fill(0.0)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.consumer_wait(state)
                for i in cutlass.range(per_thread, unroll=1):
                    e = tidx + i * n
                    acc[i] = acc[i] + sA[e // TK, e % TK, state.index]
                cute.arch.fence_view_async_shared()  # the reads, before the refill (async proxy)
                pipe.consumer_release(state)
                state.advance()
            if rank == 0:
                for i in cutlass.range(per_thread, unroll=1):
                    e = tidx + i * n
                    c[row * TM + e // TK, e % TK] = acc[i]
        # a CTA must not exit while its peer may still multicast into it or arrive on its barriers
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


def _args(k_tiles: int, m_tiles: int = 1):
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM * m_tiles, TK * k_tiles), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (TM * m_tiles, TK), stride_order=(1, 0), align=16)
    return a, c


def variant(bug: str | None = None, *, stages: int = 2, k_tiles: int = 3, consumer_warps: int = 1):
    return HopperMulticast(stages, consumer_warps, bug), _args(k_tiles)


def correct(**kw):
    return variant(None, **kw)


def no_multicast_wait(**kw):
    return variant("no_multicast_wait", **kw)


def local_mask(**kw):
    return variant("local_mask", **kw)


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "verified", "no_multicast_wait": "uninitialized-barrier",
          "local_mask": "tx-mismatch"}
EXPECT_AT = {"no_multicast_wait": "cute.copy(atom, tAgA[None, k], tAsA[None, state.index],",
             "local_mask": "pipe.producer_acquire(state)"}


def run_on_device(name: str, k_tiles: int = 3, m_tiles: int = 2) -> None:
    """Runs the configuration `warpspin check` checks (2 stages, 1 consumer warp, 3 k-tiles)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn = HopperMulticast(2, 1, None if name == "correct" else name)
    a = torch.randn(TM * m_tiles, TK * k_tiles, device="cuda", dtype=torch.float32)
    c = torch.zeros(TM * m_tiles, TK, device="cuda", dtype=torch.float32)
    args = (from_dlpack(a, assumed_align=16), from_dlpack(c, assumed_align=16))
    cute.compile(fn, *args)(*args)
    torch.cuda.synchronize()
    err = (c - a.view(TM * m_tiles, k_tiles, TK).sum(1)).abs().max().item()
    print(f"{name}: max abs error {err:.3g}")
    if err > 1e-3:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
