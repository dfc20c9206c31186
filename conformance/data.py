"""Litmus kernels for shared data: values threads write into shared memory and other warps read
back (a block reduction's partial sums). Two accesses of the same bytes, one a write, by
different warps must be ordered by synchronization (here bar.sync, `cute.arch.barrier()`);
warpspin follows each element access per cell of the buffer and reports an unordered pair as a
race. The hardware shows no value for these (a racing read of a float may see either value);
what it shows is that each completes."""
import cutlass
import cutlass.cute as cute
from cutlass import Float32

from .litmus import Litmus


class _Partials(Litmus):
    warps = 4
    nbars = 1
    words = 128  # out: each thread's copy of what it gathered (its own word)

    @cute.jit
    def partials(self):
        return cute.make_tensor(cute.recast_ptr(self.buf, dtype=Float32), cute.make_layout(8))

    @cute.jit
    def publish(self, red, base: int):
        if self.lane == 0:
            red[base + self.warp] = Float32(self.warp)

    @cute.jit
    def gather(self, red, base: int):
        total = Float32(0.0)
        if self.lane < 4:
            total = red[base + self.lane]
        self.out[self.warp * 32 + self.lane] = cutlass.Int32(total)


class DataReduceBarrier(_Partials):
    """Lane 0 of each of 4 warps writes its partial into red[warp]; bar.sync; lanes 0..3 of every
    warp read red[0..3]. Every read is ordered after every write: verified."""
    rules = ("data.barrier",)

    @cute.jit
    def body(self):
        red = self.partials()
        self.publish(red, 0)
        cute.arch.barrier()
        self.gather(red, 0)


class DataReduceNoBarrier(_Partials):
    """The same without the bar.sync: a warp may read red[w] before warp w writes it: race."""
    rules = ("data.barrier",)
    expect = "race"

    @cute.jit
    def body(self):
        red = self.partials()
        self.publish(red, 0)
        self.gather(red, 0)


class _Twice(_Partials):
    """Two reductions: the second through the partials from red[`second`], after a bar.sync
    following the first reads when `fenced`."""
    second = 0
    fenced = True

    @cute.jit
    def body(self):
        red = self.partials()
        self.publish(red, 0)
        cute.arch.barrier()
        self.gather(red, 0)
        if cutlass.const_expr(self.fenced):
            cute.arch.barrier()
        self.publish(red, self.second)
        cute.arch.barrier()
        self.gather(red, self.second)


class DataReuseBarrier(_Twice):
    """Two reductions through the same partials red[0..3], with a bar.sync after the first
    reads: the second writes come after every first read: verified."""
    rules = ("data.barrier",)


class DataReuseNoBarrier(_Twice):
    """Two reductions through red[0..3] with no bar.sync between the first reads and the second
    writes: warp w may overwrite red[w] while a slower warp still reads it (write after read):
    race. Layernorm avoids it with a second half of its buffer (DataReuseOtherHalf)."""
    rules = ("data.barrier",)
    expect = "race"
    fenced = False


class DataReuseOtherHalf(_Twice):
    """The second reduction through red[4..7], with no bar.sync after the first reads, as
    quack's layernorm does: verified."""
    rules = ("data.barrier",)
    second = 4
    fenced = False


class _Ldmatrix(Litmus):
    """2 warps copy a 16 x 16 bf16 tile into shared memory element by element (each element by
    one thread), then (`barrier`) bar.sync, then warp 0 loads it with ldmatrix (a tiled copy of
    LdMatrix8x8x16bOp, x4) for an SM80 MMA's A operand, and each of its threads writes its
    first element to its word of x (no probe: the hardware shows that it completes). The
    ldmatrix reads bytes warp 1 wrote."""
    warps = 2
    nbars = 1
    barrier = True

    @cute.jit
    def body(self):
        from cutlass import BFloat16
        m, k = 16, 16
        tidx = self.warp * 32 + self.lane
        smem = cutlass.memory.SmemAllocator()
        sA = smem.allocate_tensor(BFloat16, cute.make_layout((m, k), stride=(k, 1)),
                                  byte_alignment=128)
        for i in cutlass.range_constexpr(m * k // 64):
            e = i * 64 + tidx
            sA[e // k, e % k] = BFloat16(1.0)
        if cutlass.const_expr(self.barrier):
            cute.arch.barrier()
        if self.warp == 0:
            self.load(sA)

    @cute.jit
    def load(self, sA):
        from cutlass import BFloat16
        from cutlass.cute.nvgpu import warp
        mma = cute.make_tiled_mma(warp.MmaF16BF16Op(BFloat16, Float32, (16, 8, 16)))
        tCrA = mma.make_fragment_A(mma.get_slice(self.lane).partition_A(sA))
        atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose=False, num_matrices=4),
                                   BFloat16)
        s2r = cute.make_tiled_copy_A(atom, mma).get_slice(self.lane)
        cute.copy(s2r, s2r.partition_S(sA), s2r.retile(tCrA))
        self.x[self.lane] = cutlass.Int32(Float32(tCrA[0]))


class DataLdmatrixBarrier(_Ldmatrix):
    """ldmatrix after the bar.sync that orders every thread's store before it: verified."""
    rules = ("data.barrier",)


class DataLdmatrixNoBarrier(_Ldmatrix):
    """ldmatrix with no bar.sync after the stores: warp 0 may load bytes warp 1 has not stored
    yet: race at the copy."""
    rules = ("data.barrier",)
    expect = "race"
    barrier = False


LITMUS = [DataReduceBarrier, DataReduceNoBarrier, DataReuseBarrier, DataReuseNoBarrier,
          DataReuseOtherHalf, DataLdmatrixBarrier, DataLdmatrixNoBarrier]
