"""A warpgroup MMA (wgmma) over tiles the threads fill: its accumulator in registers and its
operands in shared memory, used in order and too early.

One CTA of one warpgroup (128 threads) computes C = A B^T for a 64 x 32 A and a 64 x 32 B
(bf16, K-major) into a 64 x 64 fp32 accumulator in registers, the way CUTLASS's Hopper GEMMs
write it, over two k-tiles of 16: per k-tile the threads copy A and B into shared memory, fence
them for the async proxy (``fence_view_async_shared``) and pass a ``bar.sync``; then one
``cute.gemm`` per k-block and ``warpgroup.commit_group()``. Before the next k-tile refills the
tiles, ``warpgroup.wait_group(0)`` and a ``bar.sync``; after the last, ``warpgroup.wait_group(0)`` before the accumulator is stored to C.

A wgmma writes its accumulator registers and reads its shared-memory operands asynchronously:
accessing the registers, or rewriting the operands, before a ``wgmma.wait_group`` retired the
wgmma's group is undefined (PTX 9.7.15.6, wgmma.wait_group); the threads' generic writes of the
operands reach the wgmma (async proxy) only through a ``fence.proxy.async`` (PTX 9.7.13.4).

The ``bar.sync`` after the in-loop wait is needed by the model, not by the ISA: a warpgroup's
wgmma is one collective operation, so a warp's own wait already retires every warp's reads of
it, but the model counts each warp's reads until that warp's own wait (docs/semantics.md, "wgmma
operands threads write"), and without the barrier it reports the refill as a race.

Variants (each differs from ``correct`` by one line):
  correct            as above: VERIFIED
  no_wait            no wait_group after the last k-tile: the store reads the accumulator
                     while the wgmma may still write it -> race, at the store
  wait_one           wait_group(1) there, with one group committed: it waits for nothing
                     -> race, at the store
  no_fence           no warpgroup.fence() between the threads' fill of the accumulator and the
                     first wgmma (PTX asks for wgmma.fence there, 9.7.15.5) -> race, at the gemm
  no_proxy_fence     no fence_view_async_shared() after the fill: the wgmma (async proxy) may
                     not see the threads' writes -> proxy-race, at the gemm
  refill_before_wait no wait_group before the refill: the threads overwrite A while their
                     wgmma may still read it -> race, at the fill
  fence_after_barrier  the proxy fence after the bar.sync instead of before: whether a fence by
                     the reading thread orders another thread's write is not followed, so races
                     on A and B are NOT CHECKED (INCONCLUSIVE; --properties deadlock verifies)
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import BFloat16, Float32
from cutlass.cute.nvgpu import warpgroup
from cutlass.utils import LayoutEnum

M, N, K = 64, 64, 32
BK = 16  # the k-tile the threads fill
THREADS = 128
BUGS = ("no_wait", "wait_one", "no_fence", "no_proxy_fence", "refill_before_wait",
        "fence_after_barrier")


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
        a_layout = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (M, N, BK), BFloat16, 1)
        b_layout = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (M, N, BK), BFloat16, 1)
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(BFloat16, a_layout.outer, byte_alignment=1024,
                                  swizzle=a_layout.inner)
        sB = smem.allocate_tensor(BFloat16, b_layout.outer, byte_alignment=1024,
                                  swizzle=b_layout.inner)
        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((M, N)), Float32)
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)  # every wgmma adds to the accumulator

        for kt in cutlass.range_constexpr(K // BK):
            if cutlass.const_expr(kt > 0):
                if cutlass.const_expr(self.bug != "refill_before_wait"):
                    warpgroup.wait_group(0)      # BUG (refill_before_wait): dropped
                cute.arch.barrier()              # the model needs it (docstring)
            for i in cutlass.range_constexpr(M * BK // THREADS):
                e = i * THREADS + tidx
                sA[e // BK, e % BK, 0] = a[e // BK, kt * BK + e % BK]   # the fill of A
                sB[e // BK, e % BK, 0] = b[e // BK, kt * BK + e % BK]
            if cutlass.const_expr(self.bug not in ("no_proxy_fence", "fence_after_barrier")):
                cute.arch.fence_view_async_shared()  # BUG (no_proxy_fence): dropped
            cute.arch.barrier()
            if cutlass.const_expr(self.bug == "fence_after_barrier"):
                cute.arch.fence_view_async_shared()  # each thread fences after the barrier
            if cutlass.const_expr(kt == 0 and self.bug != "no_fence"):
                warpgroup.fence()                # BUG (no_fence): dropped
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


def no_proxy_fence():
    return variant("no_proxy_fence")


def refill_before_wait():
    return variant("refill_before_wait")


def fence_after_barrier():
    return variant("fence_after_barrier")


VARIANTS = {"correct": correct, "no_wait": no_wait, "wait_one": wait_one, "no_fence": no_fence,
            "no_proxy_fence": no_proxy_fence, "refill_before_wait": refill_before_wait,
            "fence_after_barrier": fence_after_barrier}
# what `warpspin check` must say
EXPECT = {"correct": "verified", "no_wait": "race", "wait_one": "race", "no_fence": "race",
          "no_proxy_fence": "proxy-race", "refill_before_wait": "race",
          "fence_after_barrier": "not-checked"}
EXPECT_AT = {"no_wait": "# the store of the accumulator",
             "wait_one": "# the store of the accumulator",
             "no_fence": "cute.gemm(tiled_mma, acc,",
             "no_proxy_fence": "cute.gemm(tiled_mma, acc,",
             "refill_before_wait": "# the fill of A"}


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
