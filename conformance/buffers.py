"""Litmus kernels for a staged buffer that TMA stores read: two warps write stage s = i % 2 of a
two-stage buffer (the litmus buffer as 32 words x 2 stages) for three tiles, fence it to the async
proxy and meet on named barrier 1; warp 0 stores the stage to `x` with TMA and commits a bulk
group, and waits (`cp.async.bulk.wait_group.read 1`) before a stage is written again. What a race
corrupts is the data stored, which no probe here follows: `examples/epilogue_store.py` shows that
on the H200 (docs/ground-truth.md); these show that each protocol completes, and what warpspin
says of it."""
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

from .litmus import Litmus


class _StagedStore(Litmus):
    warps = 2
    nbars = 1
    probes = 0
    fence = True
    wait = True
    handover = True

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor):
        atom, tma_x = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), x,
                                                  cute.make_layout(32), (32,))
        self.kernel(atom, tma_x, x, out).launch(**self.launch_dims())

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_x: cute.Tensor, x: cute.Tensor, out: cute.Tensor):
        self.enter(x, out, atom, tma_x)

    @cute.jit
    def body(self):
        staged = cute.make_tensor(self.buf, cute.make_layout((32, 2), stride=(1, 32)))
        g = cute.local_tile(self.tma_x, (32,), (None,))
        ts, tg = cpasync.tma_partition(self.atom, 0, cute.make_layout(1),
                                       cute.group_modes(staged, 0, 1), cute.group_modes(g, 0, 1))
        for i in cutlass.range_constexpr(3):
            s = i % 2
            if cutlass.const_expr(self.wait):
                if self.warp == 0:
                    cute.arch.cp_async_bulk_wait_group(1, read=True)
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
            stage = staged[None, s]
            if self.lane < 16:
                stage[self.warp * 16 + self.lane] = cutlass.Int32(i * 32 + self.lane)
            if cutlass.const_expr(self.fence):
                cute.arch.fence_proxy("async.shared", space="cta")
            if cutlass.const_expr(self.handover):
                cute.arch.barrier(barrier_id=1, number_of_threads=64)
            if self.warp == 0:
                cute.copy(self.atom, ts[None, s], tg[None, i % 2])
                cute.arch.cp_async_bulk_commit_group()
        if self.warp == 0:
            cute.arch.cp_async_bulk_wait_group(0, read=True)


class StagedStoreHandedOver(_StagedStore):
    """Wait, meet, write, fence, meet, store: each stage's writes are fenced and handed over to
    warp 0 before its store, and a stage is rewritten only after the store that read it retired.
    Completes. Hardware question: none beyond completing; this is quack's epilogue protocol."""
    rules = ("buffer.reuse", "buffer.handover", "buffer.proxy")
    expect = "verified"


class StagedStoreNoWait(_StagedStore):
    """Without warp 0's wait: the third tile rewrites stage 0 while the first tile's store may
    still read it (PTX 9.7.9.26.5.2). warpspin: race at the write."""
    rules = ("buffer.reuse",)
    expect = "race"
    wait = False


class StagedStoreNoHandover(_StagedStore):
    """Without the barrier between the writes and the store: warp 0 may store a stage warp 1 is
    still writing. warpspin: race (at the store, or at the write after it)."""
    rules = ("buffer.handover",)
    expect = "race"
    handover = False


class StagedStoreNoFence(_StagedStore):
    """Without fence.proxy.async: the writes reach the TMA store (async proxy) through the
    barrier only (PTX 9.7.13.4). warpspin: proxy-race at the store."""
    rules = ("buffer.proxy",)
    expect = "proxy-race"
    fence = False


LITMUS = [StagedStoreHandedOver, StagedStoreNoWait, StagedStoreNoHandover, StagedStoreNoFence]
