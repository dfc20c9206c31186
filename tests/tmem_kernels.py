"""Small sm_100a kernels for the TMEM data extraction tests (tests/test_tmem_data.py): 4 warps
read two accumulator stages of tensor memory (tcgen05.ld of `acc[..., s]`, then wait::ld), and
variants whose TMEM accesses the extractor cannot attribute to a stage. Traced on the CPU only."""
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass.cute.nvgpu import tcgen05

STAGES, COLS = 2, 32
THREADS = 128


class AccReader:
    """`how`: "stage" (the warps read `tTR_tAcc[None, None, None, s]`), "store" (and write stage
    0 back with tcgen05.st), "whole" (they read the whole accumulator, every stage at once,
    through a 2-stage view: a buffer overlapping the staged one), "offset" (the tensor is made
    at a computed column, `tmem + 32 * warp`), "single" (one accumulator of 64 columns with no
    stage mode, read whole: a buffer of one stage)."""

    def __init__(self, how: str = "stage"):
        self.how = how

    @cute.jit
    def __call__(self):
        self.kernel().launch(grid=(1, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def kernel(self):
        @cute.struct
        class Smem:
            tmem_addr: Int32

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx = cute.arch.thread_idx()[0]
        if warp == 0:
            cute.arch.alloc_tmem(STAGES * COLS, storage.tmem_addr.ptr)
        cute.arch.sync_threads()
        tmem = cute.arch.retrieve_tmem_ptr(Float32, 16, storage.tmem_addr.ptr)
        if cutlass.const_expr(self.how == "offset"):
            tmem = tmem + warp * 32
        if cutlass.const_expr(self.how == "single"):
            one = cute.make_tensor(tmem, cute.make_layout((THREADS, STAGES * COLS),
                                                          stride=(65536, 1)))
            t2r_one = tcgen05.make_tmem_copy(
                cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), Float32), one)
            thr_one = t2r_one.get_slice(tidx)
            regs_one = cute.make_rmem_tensor(thr_one.partition_D(
                cute.make_identity_tensor((THREADS, STAGES * COLS))).shape, Float32)
            cute.copy(t2r_one, thr_one.partition_S(one), regs_one)
            cute.arch.fence_view_async_tmem_load()
            cute.arch.sync_threads()
            if warp == 0:
                cute.arch.dealloc_tmem(tmem, STAGES * COLS)
            return
        acc = cute.make_tensor(tmem, cute.make_layout((THREADS, COLS, STAGES),
                                                      stride=(65536, 1, COLS)))
        t2r = tcgen05.make_tmem_copy(
            cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), Float32),
            acc[None, None, 0])
        thr = t2r.get_slice(tidx)
        tTR_tAcc = thr.partition_S(acc)
        regs = cute.make_rmem_tensor(
            thr.partition_D(cute.make_identity_tensor((THREADS, COLS))).shape, Float32)
        for s in cutlass.range(STAGES, unroll=1):
            cute.copy(t2r, tTR_tAcc[None, None, None, s], regs)
            cute.arch.fence_view_async_tmem_load()
        if cutlass.const_expr(self.how == "store"):
            r2t = tcgen05.make_tmem_copy(
                cute.make_copy_atom(tcgen05.St32x32bOp(tcgen05.Repetition.x32), Float32),
                acc[None, None, 0])
            thr_st = r2t.get_slice(tidx)
            cute.copy(r2t, regs, thr_st.partition_D(acc)[None, None, None, 0])
            cute.arch.fence_view_async_tmem_store()
        if cutlass.const_expr(self.how == "whole"):
            whole = cute.make_tensor(tmem, cute.make_layout((THREADS, STAGES * COLS),
                                                            stride=(65536, 1)))
            t2r_all = tcgen05.make_tmem_copy(
                cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), Float32), whole)
            thr_all = t2r_all.get_slice(tidx)
            regs_all = cute.make_rmem_tensor(thr_all.partition_D(
                cute.make_identity_tensor((THREADS, STAGES * COLS))).shape, Float32)
            cute.copy(t2r_all, thr_all.partition_S(whole), regs_all)
            cute.arch.fence_view_async_tmem_load()
        cute.arch.sync_threads()
        if warp == 0:
            cute.arch.dealloc_tmem(tmem, STAGES * COLS)


def variant(how: str = "stage"):
    return AccReader(how), ()
