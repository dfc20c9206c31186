"""Ampere-style cp.async copies in a loop that may run zero times: correct, and with the drain
after the loop (or the wait inside it) broken.

Each CTA of 128 threads sums N tiles of X (N a launch value, the same for every CTA; N = 0 is a
CTA with no work) and writes Y = (sum + 1) * S. Every thread copies its 4 floats of tile 0 into
its own part of the shared tile sX with ``cp.async`` before the loop (the copy is issued whether
or not the loop runs, as a prologue prefetch is) and commits it to a cp.async group. Iteration k
waits for all its groups (``cp.async.wait_group 0``, PTX 9.7.9.24.5), reads its part of sX and
prefetches tile k + 1 into it. After the loop the thread drains its groups and reuses its part of
sX to stage the result: it writes sum + 1 there, loads its scale from global memory and reads
the staged value back.

Variants (each differs from ``correct`` by one line):
  correct           wait in the loop, drain after it
  no_drain          no drain after the loop: when N = 0 the copy of tile 0 may still land in sX
                    after the thread wrote its result there -> race at that write
  no_drain_no_stage no drain and no staging: the thread exits while its copy of tile 0 may be in
                    flight into shared memory that another CTA may own by then -> pending-at-exit
  read_before_wait  the read of sX before the wait in the loop -> race at the read
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass.cute.nvgpu import cpasync

THREADS = 128
TILE = 4 * THREADS   # fp32 per tile: 4 per thread, one 16-byte cp.async each
CTAS = 264           # two CTAs per SM of an H200
MAX_TILES = 3
BUGS = ("no_drain", "no_drain_no_stage", "read_before_wait")


class ZeroTrip:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, x: cute.Tensor, s: cute.Tensor, y: cute.Tensor, n: Int32):
        self.kernel(x, s, y, n).launch(grid=(CTAS, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, s: cute.Tensor, y: cute.Tensor, n: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        sX = smem.allocate_tensor(Float32, cute.make_layout(TILE), byte_alignment=16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), Float32, num_bits_per_copy=128)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(THREADS), cute.make_layout(4))
        thr = tiled.get_slice(tidx)
        tXsX = thr.partition_D(sX)
        acc = cute.make_rmem_tensor_like(tXsX)
        acc.fill(0.0)
        part = cute.make_rmem_tensor_like(tXsX)

        cute.copy(tiled, thr.partition_S(x[bidx, 0, None]), tXsX)
        cute.arch.cp_async_commit_group()
        for k in cutlass.range(n, unroll=1):
            if cutlass.const_expr(self.bug == "read_before_wait"):
                cute.autovec_copy(tXsX, part)                   # BUG: read before the wait
            cute.arch.cp_async_wait_group(0)
            if cutlass.const_expr(self.bug != "read_before_wait"):
                cute.autovec_copy(tXsX, part)
            acc.store(acc.load() + part.load())
            if k + 1 < n:
                cute.copy(tiled, thr.partition_S(x[bidx, k + 1, None]), tXsX)
            cute.arch.cp_async_commit_group()
        if cutlass.const_expr(self.bug is None or self.bug == "read_before_wait"):
            cute.arch.cp_async_wait_group(0)                    # BUG: dropped
        if cutlass.const_expr(self.bug != "no_drain_no_stage"):
            acc.store(acc.load() + 1.0)
            cute.autovec_copy(acc, tXsX)
            scale = cute.make_rmem_tensor_like(tXsX)
            cute.autovec_copy(thr.partition_S(s[bidx, None]), scale)
            cute.autovec_copy(tXsX, part)
            acc.store(part.load() * scale.load())
        cute.autovec_copy(acc, thr.partition_D(y[bidx, None]))


def _args():
    from warpspin.frontend import fake_tensor

    x = fake_tensor(Float32, (CTAS, MAX_TILES, TILE), stride_order=(2, 1, 0), align=16)
    s = fake_tensor(Float32, (CTAS, TILE), stride_order=(1, 0), align=16)
    y = fake_tensor(Float32, (CTAS, TILE), stride_order=(1, 0), align=16)
    return x, s, y, Int32(1)


def variant(bug: str | None = None):
    return ZeroTrip(bug), _args()


def correct():
    return variant(None)


def no_drain():
    return variant("no_drain")


def no_drain_no_stage():
    return variant("no_drain_no_stage")


def read_before_wait():
    return variant("read_before_wait")


VARIANTS = {"correct": correct, "no_drain": no_drain, "no_drain_no_stage": no_drain_no_stage,
            "read_before_wait": read_before_wait}
# what `warpspin check` must say
EXPECT = {"correct": "verified", "no_drain": "race", "no_drain_no_stage": "pending-at-exit",
          "read_before_wait": "race"}
EXPECT_AT = {"no_drain": "cute.autovec_copy(acc, tXsX)",
             "read_before_wait": "# BUG: read before the wait"}
# the tile count n is a launch value: checked for every n in 0..MAX_TILES
PARAMS = {name: {"n": (0, MAX_TILES)} for name in VARIANTS}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times for each tile count 0..MAX_TILES on the current GPU;
    fail if any result is wrong (a race shows only when a copy lands late)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    x = torch.randn(CTAS, MAX_TILES, TILE, device="cuda", dtype=torch.float32)
    s = torch.rand(CTAS, TILE, device="cuda", dtype=torch.float32) + 0.5
    y = torch.zeros(CTAS, TILE, device="cuda", dtype=torch.float32)
    flush = torch.empty(64 << 20, device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=16) for t in (x, s, y)]
    compiled = cute.compile(fn, *args, Int32(0))
    from _device import count_wrong
    for n in (*range(1, MAX_TILES + 1), 0):  # the zero-trip launch last
        ref = x[:, :n].sum(1) if name == "no_drain_no_stage" else (x[:, :n].sum(1) + 1.0) * s

        class Launch:
            def __call__(self, *a):
                flush.fill_(0.0)  # 256 MiB: tile 0 leaves L2, its copy takes a DRAM round trip
                compiled(*a)
        count_wrong(f"{name} n={n}", Launch(), [*args, Int32(n)], y, ref, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
