"""A warpgroup MMA (wgmma) whose accumulator the threads read: correct, and read too early.

One CTA of one warpgroup (128 threads) computes C = A B^T for a 64 x 16 A and a 64 x 16 B
(bf16, K-major) into a 64 x 64 fp32 accumulator in registers, the way CUTLASS's Hopper GEMMs
write it: the threads copy A and B into shared memory, fence them for the async proxy
(``fence_view_async_shared``) and pass a ``bar.sync``; then ``warpgroup.fence()``, one
``cute.gemm`` per k-block, ``warpgroup.commit_group()`` and ``warpgroup.wait_group(0)`` before
the accumulator is stored to C.

A wgmma writes its accumulator registers asynchronously: reading them before a
``wgmma.wait_group`` retired the wgmma's group is undefined (PTX 9.7.15.6, wgmma.wait_group).

warpspin checks the accumulator in every variant. The correct one is not VERIFIED: A and B are
written by threads and read by the wgmma, and such a shared operand is not followed yet, so the
headline says races were not checked on sA and sB (``--properties deadlock`` verifies the rest).

Variants (each differs from ``correct`` by one line):
  correct     wait_group(0) after the commit, then the store of the accumulator
  no_wait     no wait_group: the store reads the accumulator while the wgmma may still
              write it -> race, at the store
  wait_one    wait_group(1) with one group committed: it waits for nothing -> race, at the store
  no_fence    no warpgroup.fence() between the threads' fill of the accumulator and the wgmma
              (PTX asks for wgmma.fence there, 9.7.15.5) -> race, at the cute.gemm
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import BFloat16, Float32
from cutlass.cute.nvgpu import warpgroup
from cutlass.utils import LayoutEnum

M, N, K = 64, 64, 16
THREADS = 128
BUGS = ("no_wait", "wait_one", "no_fence")


class WgmmaTile:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
        self.kernel(a, b, c).launch(grid=(1, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def kernel(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            BFloat16, BFloat16, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K,
            Float32, (1, 1, 1), (M, N))
        a_layout = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (M, N, K), BFloat16, 1)
        b_layout = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (M, N, K), BFloat16, 1)
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(BFloat16, a_layout.outer, byte_alignment=1024,
                                  swizzle=a_layout.inner)
        sB = smem.allocate_tensor(BFloat16, b_layout.outer, byte_alignment=1024,
                                  swizzle=b_layout.inner)
        for i in cutlass.range_constexpr(M * K // THREADS):
            e = i * THREADS + tidx
            sA[e // K, e % K, 0] = a[e // K, e % K]
            sB[e // K, e % K, 0] = b[e // K, e % K]
        cute.arch.fence_view_async_shared()      # the generic writes, visible to the wgmma
        cute.arch.barrier()

        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((M, N)), Float32)
        acc.fill(0.0)
        if cutlass.const_expr(self.bug != "no_fence"):
            warpgroup.fence()                    # BUG (no_fence): dropped
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, 0], tCrB[None, None, kb, 0], acc)
        warpgroup.commit_group()
        if cutlass.const_expr(self.bug == "wait_one"):
            warpgroup.wait_group(1)              # BUG: waits for none of the one group
        elif cutlass.const_expr(self.bug != "no_wait"):
            warpgroup.wait_group(0)              # BUG (no_wait): dropped
        tCgC = thr_mma.partition_C(c)
        cute.autovec_copy(acc, tCgC)             # the store of the accumulator


def _args():
    from warpspin.frontend import fake_tensor

    return (fake_tensor(BFloat16, (M, K), stride_order=(1, 0), align=16),
            fake_tensor(BFloat16, (N, K), stride_order=(1, 0), align=16),
            fake_tensor(Float32, (M, N), stride_order=(1, 0), align=16))


def variant(bug: str | None = None):
    return WgmmaTile(bug), _args()


def correct():
    return variant(None)


def no_wait():
    return variant("no_wait")


def wait_one():
    return variant("wait_one")


def no_fence():
    return variant("no_fence")


VARIANTS = {"correct": correct, "no_wait": no_wait, "wait_one": wait_one, "no_fence": no_fence}
# what `warpspin check` must say
EXPECT = {"correct": "not-checked", "no_wait": "race", "wait_one": "race", "no_fence": "race"}
EXPECT_AT = {"no_wait": "# the store of the accumulator",
             "wait_one": "# the store of the accumulator",
             "no_fence": "cute.gemm(tiled_mma, acc,"}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if C differs from A B^T."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=16) for t in (a, b, c)]
    compiled = cute.compile(fn, *args)
    ref = a.float() @ b.float().T
    from _device import count_wrong
    count_wrong(name, compiled, args, c, ref, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
