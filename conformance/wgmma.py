"""Litmus kernels for the registers a warpgroup MMA accumulates into (wgmma.acc, acc.access)
and for the shared-memory operands its threads write (wgmma.read.data)."""
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import BFloat16, Float32
from cutlass.cute.nvgpu import warpgroup
from cutlass.utils import LayoutEnum

from .litmus import Litmus

LITMUS: list = []
M, N, K = 64, 64, 16


class _WgmmaAccumulator(Litmus):
    """One warpgroup: the threads fill a 64 x 16 A and B (bf16) in shared memory with ones,
    fence them for the async proxy and pass a bar.sync; they zero the accumulator, then (`fence`)
wgmma.fence, and one wgmma k-block loop accumulates
    A B^T into a register fragment, commit_group, then (`wait`) wait_group(0), and every thread
    copies its first accumulator element to its word of x (words no probe reads: the hardware shows that
    it completes; the value a too-early read gets is undefined). `proxy_fence`: the
    fence_view_async_shared after the fill; `refill`: the threads write A again right after the
    commit (before the wait: the wgmma may still read it)."""
    warps = 4
    nbars = 1
    probes = 0
    extra_x = 64
    wait = True
    fence = True
    proxy_fence = True
    refill = False

    @cute.jit
    def body(self):
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            BFloat16, BFloat16, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K,
            Float32, (1, 1, 1), (M, N))
        a_layout = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (M, N, K), BFloat16, 1)
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(BFloat16, a_layout.outer, byte_alignment=1024,
                                  swizzle=a_layout.inner)
        tidx = self.warp * 32 + self.lane
        for i in cutlass.range_constexpr(M * K // 128):
            e = i * 128 + tidx
            sA[e // K, e % K, 0] = BFloat16(1.0)
        if cutlass.const_expr(self.proxy_fence):
            cute.arch.fence_view_async_shared()
        cute.arch.barrier()
        thr_mma = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sA))
        acc = cute.make_rmem_tensor(thr_mma.partition_shape_C((M, N)), Float32)
        acc.fill(0.0)
        if cutlass.const_expr(self.fence):
            warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, 0], tCrB[None, None, kb, 0], acc)
        warpgroup.commit_group()
        if cutlass.const_expr(self.refill):
            for i in cutlass.range_constexpr(M * K // 128):
                e = i * 128 + tidx
                sA[e // K, e % K, 0] = BFloat16(2.0)
        if cutlass.const_expr(self.wait):
            warpgroup.wait_group(0)
        self.x[tidx] = cutlass.Int32(acc[0])


class WgmmaAccumulatorWaited(_WgmmaAccumulator):
    """The accumulator read after wait_group(0), the operand filled, fenced and passed through a
    bar.sync before the wgmma. warpspin: verified."""
    rules = ("wgmma.accumulator", "wgmma.operand")
    expect = "verified"


class WgmmaAccumulatorReadBeforeWait(_WgmmaAccumulator):
    """The accumulator read with no wait_group: the wgmma may still write it. warpspin: race at
    the read."""
    rules = ("wgmma.accumulator",)
    expect = "race"
    wait = False


class WgmmaAccumulatorNoFence(_WgmmaAccumulator):
    """The threads fill the accumulator and the wgmma accumulates into it with no wgmma.fence
    between (PTX 9.7.15.5 asks for one). warpspin: race at the cute.gemm."""
    rules = ("wgmma.accumulator",)
    expect = "race"
    fence = False


class WgmmaOperandNoProxyFence(_WgmmaAccumulator):
    """The threads fill the operand and pass the bar.sync with no fence.proxy.async: the wgmma
    (async proxy) may not see their writes (PTX 9.7.13.4). warpspin: proxy-race at the
    cute.gemm."""
    rules = ("wgmma.operand",)
    expect = "proxy-race"
    proxy_fence = False


class WgmmaOperandRefillBeforeWait(_WgmmaAccumulator):
    """The threads write the operand again after the commit and before wait_group: the wgmma
    may still read it. warpspin: race at the refill."""
    rules = ("wgmma.operand",)
    expect = "race"
    refill = True


LITMUS += [WgmmaAccumulatorWaited, WgmmaAccumulatorReadBeforeWait, WgmmaAccumulatorNoFence,
           WgmmaOperandNoProxyFence, WgmmaOperandRefillBeforeWait]
