"""Litmus kernels for tcgen05 and tensor memory (sm_100a). No Blackwell GPU is available: each is
traced for sm_100a and its outcomes predicted on the CPU (status "PTX only"); the rules are the
PTX ISA's, as docs/semantics.md "tcgen05 and tensor memory" states them."""
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass.cute.nvgpu import tcgen05

from .litmus import Litmus


class Sm100(Litmus):
    """Two warps on sm_100a; `init` publishes bar 0 (count 1) to both."""
    arch = "sm_100a"
    warps = 2
    nbars = 1

    @cute.jit
    def init(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()


class _Tmem(Sm100):
    @cute.jit
    def free(self, cols: int):
        cute.arch.dealloc_tmem(cute.arch.retrieve_tmem_ptr(Float32, 16, self.buf), cols)

    @cute.jit
    def load(self):
        """Each of 4 warps reads its 32 lanes of 32 columns (tcgen05.ld.32x32b.x32), then waits
        for the load (tcgen05.wait::ld)."""
        tmem = cute.make_tensor(cute.arch.retrieve_tmem_ptr(Float32, 16, self.buf),
                                cute.make_layout((128, 32), stride=(65536, 1)))
        atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), Float32)
        t2r = tcgen05.make_tmem_copy(atom, tmem)
        thr = t2r.get_slice(cute.arch.thread_idx()[0])
        regs = cute.make_rmem_tensor(
            thr.partition_D(cute.make_identity_tensor((128, 32))).shape, Float32)
        cute.copy(t2r, thr.partition_S(tmem), regs)
        cute.arch.fence_view_async_tmem_load()


class TmemAllocThenFree(_Tmem):
    """Warp 0 allocates 128 columns of tensor memory and frees them before it exits. warpspin:
    verified."""
    rules = ("tmem.alloc-free",)

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.alloc_tmem(128, self.buf)
            self.free(128)


class TmemHeldAtExit(_Tmem):
    """Warp 0 allocates 128 columns and the CTA exits holding them (the next CTA on the SM that
    allocates may wait forever). warpspin: tmem-lifetime at the exit."""
    rules = ("tmem.alloc-free",)
    expect = "tmem-lifetime"

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.alloc_tmem(128, self.buf)


class TmemAllocAfterRelinquish(_Tmem):
    """Warp 0 gives up the CTA's allocation permit, then allocates (undefined, PTX ISA
    tcgen05.relinquish_alloc_permit). warpspin: tmem-lifetime at the alloc."""
    rules = ("tmem.relinquish",)
    expect = "tmem-lifetime"

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.relinquish_tmem_alloc_permit()
            cute.arch.alloc_tmem(128, self.buf)
            self.free(128)


class TmemAllocBlocksPast512(_Tmem):
    """Warp 0 allocates all 512 columns and holds them until warp 1 arrives on bar(0); warp 1
    first allocates 32 columns. When warp 0 allocates first, warp 1's alloc cannot fit until warp 0
    frees, and each waits for the other; in the other order both finish. warpspin: deadlock."""
    rules = ("tmem.alloc-blocks",)
    expect = "deadlock"

    @cute.jit
    def body(self):
        self.init()
        if self.warp == 0:
            cute.arch.alloc_tmem(512, self.buf)
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.free(512)
        if self.warp == 1:
            cute.arch.alloc_tmem(32, self.buf + 1)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
            cute.arch.dealloc_tmem(cute.arch.retrieve_tmem_ptr(Float32, 16, self.buf + 1), 32)


class TmemLoadThenFree(_Tmem):
    """Warp 0 allocates 32 columns; after a CTA barrier the 4 warps read them (tcgen05.ld);
    after a second barrier warp 0 frees them (each warp's tcgen05.wait::ld retires its load
    before the barrier). warpspin: verified."""
    rules = ("tmem.access",)
    expect = "verified"
    warps = 4
    barrier_before_free = True

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.alloc_tmem(32, self.buf)
        cute.arch.sync_threads()
        self.load()
        if cutlass.const_expr(self.barrier_before_free):
            cute.arch.sync_threads()
        if self.warp == 0:
            self.free(32)


class TmemFreeRacesLoad(TmemLoadThenFree):
    """As TmemLoadThenFree without the second barrier: warp 0 frees the columns after its own
    load, while warps 1..3 may not have issued theirs (an access to unallocated tensor memory).
    warpspin: tmem-lifetime at a load."""
    expect = "tmem-lifetime"
    barrier_before_free = False


class Tcgen05CommitArrives(_Tmem):
    """One lane of warp 0 commits its (no) tcgen05 ops to bar(0) (count 1): the arrive lands once
    they complete, and warp 1's wait on phase 0 passes. warpspin: verified."""
    rules = ("tcgen05.commit",)

    @cute.jit
    def body(self):
        from cutlass.cute.nvgpu import tcgen05
        self.init()
        if self.warp == 0:
            with cute.arch.elect_one():
                tcgen05.commit(self.bar(0))
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)


class Tcgen05CommitByWholeWarp(_Tmem):
    """All 32 lanes of warp 0 commit to bar(0), which expects one arrival per phase: 32 arrives
    land, each completing a phase, so warp 1's wait on parity 0 may pass two phases late (the
    DSL's docs require elect_one around a commit). warpspin: parity-aliasing."""
    rules = ("tcgen05.commit",)
    expect = "parity-aliasing"

    @cute.jit
    def body(self):
        from cutlass.cute.nvgpu import tcgen05
        self.init()
        if self.warp == 0:
            tcgen05.commit(self.bar(0))
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)



class _TmemPair(_Tmem):
    """A cluster of two CTAs: the cta_group::2 allocation ops, one warp (warp 0) of each CTA."""
    cluster = 2

    @cute.jit
    def free_pair(self, cols: int):
        cute.arch.dealloc_tmem(cute.arch.retrieve_tmem_ptr(Float32, 16, self.buf), cols,
                               is_two_cta=True)


class TmemPairAllocThenFree(_TmemPair):
    """Warp 0 of each CTA of the pair allocates 128 columns with cta_group::2, relinquishes the
    permit and frees them, all three collectively. warpspin: verified."""
    rules = ("tmem.pair",)

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.alloc_tmem(128, self.buf, is_two_cta=True)
            cute.arch.relinquish_tmem_alloc_permit(is_two_cta=True)
            self.free_pair(128)


class TmemPairAllocOneSided(_TmemPair):
    """Only CTA 0's warp 0 issues the cta_group::2 alloc; CTA 1 never does (PTX ISA: the pair's
    two warps issue it collectively). warpspin: deadlock at the alloc."""
    rules = ("tmem.pair",)
    expect = "deadlock"

    @cute.jit
    def body(self):
        if self.warp == 0 and self.rank == 0:
            cute.arch.alloc_tmem(128, self.buf, is_two_cta=True)
            self.free_pair(128)


class TmemPairCountMismatch(_TmemPair):
    """The two CTAs' warps issue the cta_group::2 alloc with 128 and 256 columns. warpspin:
    arrival-mismatch at the second alloc."""
    rules = ("tmem.pair",)
    expect = "arrival-mismatch"

    @cute.jit
    def body(self):
        if self.warp == 0:
            cute.arch.alloc_tmem(128 * (self.rank + 1), self.buf, is_two_cta=True)
            self.free_pair(128 * (self.rank + 1))


MMA_M, MMA_N, MMA_K = 128, 64, 64  # one tcgen05.mma tile, bf16 operands, K-major


class _MmaStage(Sm100):
    """Warp 0 TMA-loads the A and B tiles of one k-block into a one-stage buffer (sA, sB; bar(0),
    full, with their bytes), waits until warp 1 releases it (bar(1), empty, count 1) and loads
    the next k-block into the same stage. Warp 1 allocates 64 TMEM columns, waits for each fill,
    issues the tcgen05.mma reading the stage (`tCrA[None, None, k_block, 0]`) and releases the
    stage after the first one; then it commits to bar(2), waits and frees the columns. The MMA
    reads its shared-memory operands asynchronously until a tcgen05.commit issued after it
    arrives (PTX 9.7.16.10, 9.7.16.12): the release must be that commit."""
    warps = 2
    nbars = 3
    launches = 1
    release = "commit"  # "commit", "arrive" (a thread's arrive) or "commit-first" (before the MMA)
    load = None  # "after" / "before": warp 1 reads the accumulator after / before bar(2) completes

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
        import cutlass.utils.blackwell_helpers as sm100_utils
        from cutlass import BFloat16
        from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05

        tiled_mma = sm100_utils.make_trivial_tiled_mma(
            BFloat16, BFloat16, OperandMajorMode.K, OperandMajorMode.K, Float32,
            tcgen05.CtaGroup.ONE, (MMA_M, MMA_N))
        tile = (MMA_M, MMA_N, MMA_K)
        a_layout = sm100_utils.make_smem_layout_a(tiled_mma, tile, BFloat16, 1)
        b_layout = sm100_utils.make_smem_layout_b(tiled_mma, tile, BFloat16, 1)
        a_one = cute.slice_(a_layout, (None, None, None, 0))
        b_one = cute.slice_(b_layout, (None, None, None, 0))
        op = cpasync.CopyBulkTensorTileG2SOp()
        tma_a, mA = cute.nvgpu.make_tiled_tma_atom_A(op, a, a_one, tile, tiled_mma)
        tma_b, mB = cute.nvgpu.make_tiled_tma_atom_B(op, b, b_one, tile, tiled_mma)
        self.tx_bytes = cute.size_in_bytes(BFloat16, a_one) + cute.size_in_bytes(BFloat16, b_one)
        self.mma_kernel(tiled_mma, tma_a, mA, tma_b, mB, out, a_layout, b_layout).launch(
            **self.launch_dims())

    @cute.kernel
    def mma_kernel(self, tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor,
                   tma_b: cute.CopyAtom, mB: cute.Tensor, out: cute.Tensor,
                   a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
        from cutlass import BFloat16
        from cutlass.cute.nvgpu import cpasync, tcgen05

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[Int64, 3]
            tmem_addr: Int32
            sA: cute.struct.Align[cute.struct.MemRange[BFloat16, cute.cosize(a_layout.outer)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[BFloat16, cute.cosize(b_layout.outer)], 1024]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        sA = storage.sA.get_tensor(a_layout.outer, swizzle=a_layout.inner)
        sB = storage.sB.get_tensor(b_layout.outer, swizzle=b_layout.inner)
        self.bars, self.buf, self.out = storage.bars.data_ptr(), storage.tmem_addr.ptr, out
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            with cute.arch.elect_one():
                for i in cutlass.range_constexpr(3):
                    cute.arch.mbarrier_init(self.bar(i), 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        thr_mma = tiled_mma.get_slice(0)
        tCgA = thr_mma.partition_A(cute.local_tile(mA, (MMA_M, MMA_K), (None, None)))
        tCgB = thr_mma.partition_B(cute.local_tile(mB, (MMA_N, MMA_K), (None, None)))
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1),
                                           cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1),
                                           cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3))
        if warp == 0:
            for k in cutlass.range_constexpr(2):
                if cutlass.const_expr(k == 1):
                    cute.arch.mbarrier_wait(self.bar(1), 0)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), self.tx_bytes)
                cute.copy(tma_a, tAgA[None, 0, k], tAsA[None, 0], tma_bar_ptr=self.bar(0))
                cute.copy(tma_b, tBgB[None, 0, k], tBsB[None, 0], tma_bar_ptr=self.bar(0))
        if warp == 1:
            cute.arch.alloc_tmem(MMA_N, self.buf)
            tmem = cute.arch.retrieve_tmem_ptr(Float32, 16, self.buf)
            acc = cute.make_tensor(tmem, tiled_mma.make_fragment_C(
                tiled_mma.partition_shape_C((MMA_M, MMA_N))).layout)
            tCrA = tiled_mma.make_fragment_A(sA)
            tCrB = tiled_mma.make_fragment_B(sB)
            for k in cutlass.range_constexpr(2):
                cute.arch.mbarrier_wait(self.bar(0), k)
                if cutlass.const_expr(k == 0 and self.release == "commit-first"):
                    with cute.arch.elect_one():
                        tcgen05.commit(self.bar(1))
                for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                    cute.gemm(tiled_mma, acc, tCrA[None, None, kb, 0], tCrB[None, None, kb, 0], acc)
                if cutlass.const_expr(k == 0 and self.release == "commit"):
                    with cute.arch.elect_one():
                        tcgen05.commit(self.bar(1))
                if cutlass.const_expr(k == 0 and self.release == "arrive"):
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(self.bar(1))
            with cute.arch.elect_one():
                tcgen05.commit(self.bar(2))
            if cutlass.const_expr(self.load == "before"):
                self.load_acc(acc)
            cute.arch.mbarrier_wait(self.bar(2), 0)
            if cutlass.const_expr(self.load == "after"):
                self.load_acc(acc)
            cute.arch.dealloc_tmem(tmem, MMA_N)

    @cute.jit
    def load_acc(self, acc: cute.Tensor):
        """The warp's 32 lanes of the accumulator into registers (tcgen05.ld.32x32b.x64), then
        tcgen05.wait::ld."""
        tile = acc[(None, None), 0, 0]
        t2r = tcgen05.make_tmem_copy(
            cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), Float32), tile)
        thr = t2r.get_slice(cute.arch.thread_idx()[0])
        regs = cute.make_rmem_tensor(
            thr.partition_D(cute.make_identity_tensor((MMA_M, MMA_N))).shape, Float32)
        cute.copy(t2r, thr.partition_S(tile), regs)
        cute.arch.fence_view_async_tmem_load()

    def args_cpu(self):
        from cutlass import BFloat16
        from warpspin.frontend import fake_tensor

        return (fake_tensor(BFloat16, (MMA_M, 2 * MMA_K), stride_order=(1, 0), align=16),
                fake_tensor(BFloat16, (MMA_N, 2 * MMA_K), stride_order=(1, 0), align=16),
                fake_tensor(Int32, (self.words,), align=16))


class MmaStageReleasedByCommit(_MmaStage):
    """The stage is released by a tcgen05.commit after the MMA: its arrive lands once the MMA
    read its operands, so the refill comes after the read. warpspin: verified."""
    rules = ("tcgen05.mma-read",)
    expect = "verified"


class MmaStageReleasedByArrive(_MmaStage):
    """The MMA warp releases the stage with mbarrier.arrive: the arrive orders nothing after the
    asynchronous MMA, so the refill may land while it reads. warpspin: race."""
    rules = ("tcgen05.mma-read",)
    expect = "race"
    release = "arrive"


class MmaStageCommittedBeforeTheMma(_MmaStage):
    """The commit comes before the MMA: it tracks only the thread's earlier tcgen05 ops (none),
    so its arrive lands at once and the refill may overwrite the stage the MMA reads.
    warpspin: race."""
    rules = ("tcgen05.mma-read",)
    expect = "race"
    release = "commit-first"


class AccumulatorLoadedAfterItsCommit(_MmaStage):
    """After the MMAs warp 1 commits to bar(2), waits on it and reads the accumulator
    (tcgen05.ld, tcgen05.wait::ld) before freeing it: the commit's arrive lands once the MMAs
    wrote it. warpspin: verified."""
    rules = ("tcgen05.accumulator",)
    expect = "verified"
    load = "after"


class AccumulatorLoadedBeforeItsCommitLands(_MmaStage):
    """Warp 1 reads the accumulator right after its commit, before waiting on bar(2): its own
    tcgen05.mma are asynchronous, so the load may read while they still write. warpspin: race."""
    rules = ("tcgen05.accumulator",)
    expect = "race"
    load = "before"


LITMUS = [TmemAllocThenFree, TmemHeldAtExit, TmemAllocAfterRelinquish, TmemAllocBlocksPast512,
          TmemLoadThenFree, TmemFreeRacesLoad, Tcgen05CommitArrives, Tcgen05CommitByWholeWarp,
          TmemPairAllocThenFree, TmemPairAllocOneSided, TmemPairCountMismatch,
          MmaStageReleasedByCommit, MmaStageReleasedByArrive, MmaStageCommittedBeforeTheMma,
          AccumulatorLoadedAfterItsCommit, AccumulatorLoadedBeforeItsCommitLands]
