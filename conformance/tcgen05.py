"""Litmus kernels for tcgen05 and tensor memory (sm_100a). No Blackwell GPU is available: each is
traced for sm_100a and its outcomes predicted on the CPU (status "PTX only"); the rules are the
PTX ISA's, as docs/semantics.md "tcgen05 and tensor memory" states them."""
import cutlass
import cutlass.cute as cute
from cutlass import Float32
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
    after a second barrier warp 0 frees them. warpspin: no violation; TMEM data is not followed
    (not-checked)."""
    rules = ("tmem.access",)
    expect = "not-checked"
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


LITMUS = [TmemAllocThenFree, TmemHeldAtExit, TmemAllocAfterRelinquish, TmemAllocBlocksPast512,
          TmemLoadThenFree, TmemFreeRacesLoad, Tcgen05CommitArrives, Tcgen05CommitByWholeWarp,
          TmemPairAllocThenFree, TmemPairAllocOneSided, TmemPairCountMismatch]
