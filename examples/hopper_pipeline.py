"""A Hopper warp-specialized TMA pipeline, correct and with one-line bugs.

The kernel computes C[m, j] = sum_k A[m, k*TK + j] for one (TM x TK) tile row per CTA:
one producer warp streams the K tiles of A into a ring of STAGES shared-memory buffers with TMA
(``PipelineTmaAsync``); one or two consumer warpgroups wait for each stage, add it into registers
and release the stage; at the end they write C.  Every variant below returns ``(jit_fn, args)``
for ``warpspin.frontend.trace``; ``python examples/hopper_pipeline.py --run VARIANT`` runs it on a
GPU (sm_90a) and checks the result against PyTorch, with a watchdog for hangs.

Variants (each differs from ``correct`` by one line, selected at trace time):
  correct              the reference protocol
  missing_release      consumers never call consumer_release      -> producer hangs
  wrong_arrive_count   empty barrier expects 32 arrivals per consumer warp, gets 1 -> hang
  phase_not_flipped    consumer advances the stage index but not the phase bit -> hang / race
  trip_count_mismatch  consumers run one k-tile fewer than the producer -> producer_tail hangs
  wrong_tx_bytes       expect-tx is one TMA tile too many            -> consumers hang
  role_exits_early     the second consumer warpgroup skips its role and exits -> hang
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int64
from cutlass.cute.nvgpu import cpasync

TM, TK = 64, 64  # one tile: 64 x 64 fp32 = 16 KiB

BUGS = ("missing_release", "wrong_arrive_count", "phase_not_flipped", "trip_count_mismatch",
        "wrong_tx_bytes", "role_exits_early", "release_before_read", "no_read_fence")


class HopperPipeline:
    def __init__(self, stages: int = 4, consumer_wgs: int = 2, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        assert consumer_wgs in (1, 2)
        self.stages = stages
        self.consumer_wgs = consumer_wgs
        self.bug = bug
        self.consumer_threads = 128 * consumer_wgs
        self.producer_warp = 4 * consumer_wgs  # warps [0, 4W) consume, warp 4W produces
        self.threads = self.consumer_threads + 32

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

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        sA = storage.data.get_tensor(cute.make_layout((TM, TK, stages), stride=(TK, 1, TM * TK)))

        consumer_warps = 4 * self.consumer_wgs
        tx_bytes = self.tile_bytes
        if cutlass.const_expr(self.bug == "wrong_tx_bytes"):
            tx_bytes = 2 * self.tile_bytes                                   # BUG
        consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_warps)
        if cutlass.const_expr(self.bug == "wrong_arrive_count"):
            consumers = pipeline.CooperativeGroup(pipeline.Agent.Warp, consumer_warps)  # BUG
        pipe = pipeline.PipelineTmaAsync.create(
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=consumers,
            tx_count=tx_bytes,
            barrier_storage=storage.bars.data_ptr(),
            name="ab",
        )

        gA = cute.local_tile(tma_a, (TM, TK), (bidx, None))  # (TM, TK, k)
        tAsA, tAgA = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        k_tiles = cute.size(gA, mode=[2])

        if warp == self.producer_warp:                                       # TMA producer warp
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            for k in cutlass.range(k_tiles, unroll=1):
                pipe.producer_acquire(state)
                cute.copy(atom, tAgA[None, k], tAsA[None, state.index],
                          tma_bar_ptr=pipe.producer_get_barrier(state))
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        consumer_role = warp < consumer_warps
        if cutlass.const_expr(self.bug == "role_exits_early"):
            consumer_role = warp < 4                                         # BUG
        if consumer_role:                                                    # consumer warpgroups
            per_thread = TM * TK // self.consumer_threads
            acc = cute.make_rmem_tensor((per_thread,), Float32)
            acc.fill(0.0)
            cons_k = k_tiles
            if cutlass.const_expr(self.bug == "trip_count_mismatch"):
                cons_k = k_tiles - 1                                         # BUG
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            for k in cutlass.range(cons_k, unroll=1):
                pipe.consumer_wait(state)
                if cutlass.const_expr(self.bug == "release_before_read"):
                    pipe.consumer_release(state=state)                       # BUG: too early
                for i in cutlass.range_constexpr(per_thread):
                    e = tidx + i * self.consumer_threads
                    acc[i] = acc[i] + sA[e // TK, e % TK, state.index]
                if cutlass.const_expr(self.bug != "no_read_fence"):
                    cute.arch.fence_view_async_shared()                      # BUG: dropped
                if cutlass.const_expr(self.bug not in ("missing_release", "release_before_read")):
                    pipe.consumer_release(state)                             # BUG: dropped
                if cutlass.const_expr(self.bug == "phase_not_flipped"):
                    state = pipeline.PipelineState(                          # BUG
                        stages, state.count + 1, (state.index + 1) % stages, state.phase)
                else:
                    state.advance()
            for i in cutlass.range_constexpr(per_thread):
                e = tidx + i * self.consumer_threads
                c[bidx * TM + e // TK, e % TK] = acc[i]


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
def _args(k_tiles: int, m_tiles: int = 1, dynamic_k: bool = False):
    from warpspin.frontend import fake_tensor, sym_int

    k = sym_int(divisibility=TK) if dynamic_k else TK * k_tiles
    a = fake_tensor(Float32, (TM * m_tiles, k), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (TM * m_tiles, TK), stride_order=(1, 0), align=16)
    return a, c


def variant(bug: str | None = None, *, stages: int = 4, consumer_wgs: int = 2, k_tiles: int = 8,
            dynamic_k: bool = False):
    return HopperPipeline(stages, consumer_wgs, bug), _args(k_tiles, dynamic_k=dynamic_k)


def correct(**kw):
    return variant(None, **kw)


def correct_one_consumer(**kw):
    return variant(None, consumer_wgs=1, **kw)


def correct_dynamic_k(**kw):
    return variant(None, dynamic_k=True, **kw)


def missing_release(**kw):
    return variant("missing_release", **kw)


def wrong_arrive_count(**kw):
    return variant("wrong_arrive_count", **kw)


def phase_not_flipped(**kw):
    return variant("phase_not_flipped", **kw)


def trip_count_mismatch(**kw):
    return variant("trip_count_mismatch", **kw)


def wrong_tx_bytes(**kw):
    return variant("wrong_tx_bytes", **kw)


def role_exits_early(**kw):
    return variant("role_exits_early", **kw)


def release_before_read(**kw):
    """One consumer warpgroup releases each stage before reading it: the producer may refill
    it under the reads -> race (checked with --load-races)."""
    return variant("release_before_read", consumer_wgs=1, **kw)


def no_read_fence(**kw):
    """One consumer warpgroup reads each stage and releases it with no fence.proxy.async in
    between: the refill, a write of the async proxy, is not ordered after the generic reads
    (PTX 9.7.13.4) -> proxy-race at the producer's TMA load."""
    return variant("no_read_fence", consumer_wgs=1, **kw)


VARIANTS = {
    "correct": correct,
    "correct_one_consumer": correct_one_consumer,
    "correct_dynamic_k": correct_dynamic_k,
    **{b: globals()[b] for b in BUGS},
}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "verified", "correct_one_consumer": "verified", "correct_dynamic_k": "verified",
          "missing_release": "deadlock", "wrong_arrive_count": "arrival-mismatch",
          "phase_not_flipped": "parity-aliasing|deadlock", "trip_count_mismatch": "deadlock",
          "wrong_tx_bytes": "tx-mismatch", "role_exits_early": "arrival-mismatch",
          "release_before_read": "race|proxy-race", "no_read_fence": "proxy-race"}
# the source line each violation must point at (tests/test_examples.py finds it by its text)
EXPECT_AT = {"missing_release": "pipe.producer_acquire(state)",
             "wrong_arrive_count": "pipe = pipeline.PipelineTmaAsync.create(",
             "phase_not_flipped": "pipe.consumer_wait(state)",
             "trip_count_mismatch": "pipe.producer_tail(state)",
             "wrong_tx_bytes": "pipe.producer_acquire(state)",
             "role_exits_early": "pipe = pipeline.PipelineTmaAsync.create(",
             "no_read_fence": "cute.copy(atom, tAgA[None, k], tAsA[None, state.index],"}
# the k-tile count of correct_dynamic_k is a dynamic tensor extent: proved for 1..8 tiles
PARAMS = {"correct_dynamic_k": {"size_in_kernel": (1, 8)}}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, k_tiles: int = 8, m_tiles: int = 2) -> None:
    """Compile and launch on the current GPU; raise if the result is wrong.  A hang never
    returns: run this under a timeout (``--run`` does, in a child process)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    a = torch.randn(TM * m_tiles, TK * k_tiles, device="cuda", dtype=torch.float32)
    c = torch.zeros(TM * m_tiles, TK, device="cuda", dtype=torch.float32)
    compiled = cute.compile(fn, from_dlpack(a, assumed_align=16), from_dlpack(c, assumed_align=16))
    compiled(from_dlpack(a, assumed_align=16), from_dlpack(c, assumed_align=16))
    torch.cuda.synchronize()
    ref = a.view(TM * m_tiles, k_tiles, TK).sum(1)
    err = (c - ref).abs().max().item()
    print(f"{name}: max abs error {err:.3g}")
    if err > 1e-3:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
