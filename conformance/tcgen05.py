"""Litmus kernels for tcgen05 and tensor memory (sm_100a). No Blackwell GPU is available: each is
traced for sm_100a and its outcomes predicted on the CPU (status "PTX only"); the rules are the
PTX ISA's, as docs/semantics.md "tcgen05 and tensor memory" states them."""
import cutlass.cute as cute
from cutlass import Float32

from .litmus import Litmus


class _Tmem(Litmus):
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

    @cute.jit
    def free(self, cols: int):
        cute.arch.dealloc_tmem(cute.arch.retrieve_tmem_ptr(Float32, 16, self.buf), cols)


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


LITMUS = [TmemAllocThenFree, TmemHeldAtExit, TmemAllocAfterRelinquish, TmemAllocBlocksPast512,
          Tcgen05CommitArrives, Tcgen05CommitByWholeWarp]
