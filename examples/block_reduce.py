"""A block reduction through shared memory, written as quack's `block_reduce` writes it: correct,
and with its barriers broken.

Each CTA of 8 warps computes, for its row of X, the sum and then the sum of squares around the
mean (LayerNorm's two statistics). Each thread sums its 4 elements, each warp sums its lanes with
shuffles, and lane 0 of warp w writes the warp's partial into ``reduction_buffer[w]``; after a
``bar.sync`` (``cute.arch.barrier()``) lanes 0..7 of every warp read the 8 partials back and sum
them. The second statistic goes through the same buffer, so the warps must all have read the
first partials before any warp writes its second one (PTX 9.7.13.1: a barrier orders the memory
accesses of the threads that take part in it).

Variants (each differs from ``correct`` by one line):
  correct           bar.sync after the writes and after the first reads
  no_barrier        no bar.sync between the writes and the reads of the first statistic: a warp
                    may read a partial before its warp wrote it -> race at the read
  reuse_no_barrier  no bar.sync after the first reads: a fast warp overwrites its partial with
                    the second statistic while a slow warp still reads the first -> race
"""
from __future__ import annotations

import operator
import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32

WARPS = 8
THREADS = 32 * WARPS
N = 4 * THREADS      # one row per CTA, 4 floats per thread
CTAS = 264
BUGS = ("no_barrier", "reuse_no_barrier")


class BlockStats:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, x: cute.Tensor, y: cute.Tensor):
        self.kernel(x, y).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))

    @cute.jit
    def block_sum(self, val: Float32, reduction_buffer: cute.Tensor, fence_before: bool):
        lane_idx, warp_idx = cute.arch.lane_idx(), cute.arch.warp_idx()
        val = cute.arch.warp_reduction(val, operator.add)
        if cutlass.const_expr(fence_before):
            cute.arch.barrier()                          # every read of the last partials is done
        if lane_idx == 0:
            reduction_buffer[warp_idx] = val
        if cutlass.const_expr(self.bug != "no_barrier"):
            cute.arch.barrier()                          # BUG (no_barrier): dropped
        partial = Float32(0.0)
        if lane_idx < WARPS:
            partial = reduction_buffer[lane_idx]
        return cute.arch.warp_reduction(partial, operator.add)

    @cute.kernel
    def kernel(self, x: cute.Tensor, y: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        reduction_buffer = smem.allocate_tensor(Float32, cute.make_layout(WARPS), byte_alignment=16)
        v = cute.make_rmem_tensor(4, Float32)
        for i in cutlass.range_constexpr(4):
            v[i] = x[bidx, tidx * 4 + i]
        total = self.block_sum(v[0] + v[1] + v[2] + v[3], reduction_buffer, False)
        mean = total / N
        sq = Float32(0.0)
        for i in cutlass.range_constexpr(4):
            sq += (v[i] - mean) * (v[i] - mean)
        # BUG (reuse_no_barrier): no barrier before the second statistic's writes
        sq_total = self.block_sum(sq, reduction_buffer, self.bug != "reuse_no_barrier")
        if tidx == 0:
            y[bidx, 0] = total
            y[bidx, 1] = sq_total


def _args():
    from warpspin.frontend import fake_tensor

    return (fake_tensor(Float32, (CTAS, N), stride_order=(1, 0), align=16),
            fake_tensor(Float32, (CTAS, 2), stride_order=(1, 0), align=16))


def variant(bug: str | None = None):
    return BlockStats(bug), _args()


def correct():
    return variant(None)


def no_barrier():
    return variant("no_barrier")


def reuse_no_barrier():
    return variant("reuse_no_barrier")


VARIANTS = {"correct": correct, "no_barrier": no_barrier, "reuse_no_barrier": reuse_no_barrier}
# what `warpspin check` must say
EXPECT = {"correct": "verified", "no_barrier": "race", "reuse_no_barrier": "race"}
EXPECT_AT = {"no_barrier": "partial = reduction_buffer[lane_idx]",
             "reuse_no_barrier": "reduction_buffer[warp_idx] = val"}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if any row's statistics are
    wrong (a race shows when a warp reads a partial not yet written, or already overwritten)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    x = torch.randn(CTAS, N, device="cuda", dtype=torch.float32)
    y = torch.zeros(CTAS, 2, device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=16) for t in (x, y)]
    compiled = cute.compile(fn, *args)
    mean = x.sum(1, keepdim=True) / N
    ref = torch.stack([x.sum(1), ((x - mean) ** 2).sum(1)], 1)
    from _device import count_wrong
    count_wrong(name, compiled, args, y, ref, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
