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

from .litmus import BUF_WORDS, Litmus, TmaLitmus


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
    Completes. Hardware question: none beyond completing; this is quack's epilogue protocol.
    warpspin: no race on the staged buffer; races NOT CHECKED on the global tile the TMA
    stores write (the first and third tiles' stores write tile 0 of x, and two bulk stores of
    one thread are not ordered with each other)."""
    rules = ("buffer.reuse", "buffer.handover", "buffer.proxy")
    expect = "not-checked"


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


class _OneWarpStore(_StagedStore):
    """One warp writes each stage (every lane a word), fences it, syncs the warp
    (`cute.arch.sync_warp()`: bar.warp.sync orders every lane's writes before every lane's later
    accesses, PTX 9.7.13.2) and stores it with TMA."""
    warps = 1
    sync = True

    @cute.jit
    def body(self):
        staged = cute.make_tensor(self.buf, cute.make_layout((32, 2), stride=(1, 32)))
        g = cute.local_tile(self.tma_x, (32,), (None,))
        ts, tg = cpasync.tma_partition(self.atom, 0, cute.make_layout(1),
                                       cute.group_modes(staged, 0, 1), cute.group_modes(g, 0, 1))
        for i in cutlass.range_constexpr(3):
            s = i % 2
            cute.arch.cp_async_bulk_wait_group(1, read=True)
            stage = staged[None, s]
            stage[self.lane] = cutlass.Int32(i * 32 + self.lane)
            cute.arch.fence_proxy("async.shared", space="cta")
            if cutlass.const_expr(self.sync):
                cute.arch.sync_warp()
            cute.copy(self.atom, ts[None, s], tg[None, i % 2])
            cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)


class StagedStoreOneWarp(_OneWarpStore):
    """The storing warp alone writes the stage and hands its lanes' writes to itself with
    sync_warp. Completes. warpspin: no race on the staged buffer (races NOT CHECKED on the
    global tile, as for StagedStoreHandedOver)."""
    rules = ("buffer.warp-handover",)
    expect = "not-checked"


class StagedStoreOneWarpNoSync(_OneWarpStore):
    """The same without sync_warp: a lane's TMA store may read words other lanes have not yet
    written (a warp is not lockstep). warpspin: race at the store."""
    rules = ("buffer.warp-handover",)
    expect = "race"
    sync = False


LITMUS = [StagedStoreHandedOver, StagedStoreNoWait, StagedStoreNoHandover, StagedStoreNoFence,
          StagedStoreOneWarp, StagedStoreOneWarpNoSync]


class _TwoStorers(_StagedStore):
    """The ping-pong epilogue: warp groups (warps 0-1, warps 2-3) take turns on the buffer, each
    writing two tiles, fencing, meeting on named barrier 1 (64 threads) and storing with its own
    storing warp (warp 0, warp 2). Group 0's warps arrive on named barrier 2 after warp 0's
    `wait_group.read 0`; group 1 waits there first."""
    warps = 4
    early_order = False

    @cute.jit
    def body(self):
        staged = cute.make_tensor(self.buf, cute.make_layout((32, 2), stride=(1, 32)))
        g = cute.local_tile(self.tma_x, (32,), (None,))
        ts, tg = cpasync.tma_partition(self.atom, 0, cute.make_layout(1),
                                       cute.group_modes(staged, 0, 1), cute.group_modes(g, 0, 1))
        group = self.warp // 2
        if group == 1:
            cute.arch.barrier(barrier_id=2, number_of_threads=128)
        for i in cutlass.range_constexpr(2):
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
            stage = staged[None, i]
            if self.lane < 16:
                stage[(self.warp % 2) * 16 + self.lane] = cutlass.Int32(i * 32 + self.lane)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
            if self.warp % 2 == 0:
                cute.copy(self.atom, ts[None, i], tg[None, i])
                cute.arch.cp_async_bulk_commit_group()
        if group == 0:
            if cutlass.const_expr(self.early_order):
                cute.arch.barrier_arrive(barrier_id=2, number_of_threads=128)
            if self.warp == 0:
                cute.arch.cp_async_bulk_wait_group(0, read=True)
            if cutlass.const_expr(not self.early_order):
                cute.arch.barrier_arrive(barrier_id=2, number_of_threads=128)
        if self.warp == 2:
            cute.arch.cp_async_bulk_wait_group(0, read=True)


class StagedStoreTwoStorers(_TwoStorers):
    """Group 1 writes a stage only after group 0's storing warp retired its stores and group 0
    arrived on barrier 2: each storing warp's stores read writes handed over to it, fenced.
    Completes. Hardware question: none beyond completing; this is quack's ping-pong epilogue.
    warpspin: no race on the staged buffer; races NOT CHECKED on the global tile the TMA
    stores write (both storing warps store tiles 0 and 1 of x)."""
    rules = ("buffer.two-storers",)
    expect = "not-checked"


class StagedStoreTwoStorersEarlyOrder(_TwoStorers):
    """Group 0 arrives on barrier 2 before warp 0's `wait_group.read 0`: group 1 may rewrite
    stage 0 while warp 0's store still reads it (PTX 9.7.9.26.5.2). warpspin: race at the
    write."""
    rules = ("buffer.two-storers",)
    expect = "race"
    early_order = True


LITMUS += [StagedStoreTwoStorers, StagedStoreTwoStorersEarlyOrder]


class _FilledRead(TmaLitmus):
    """Warp 0 TMA-loads tile 0 of x into the buffer (mbarrier 0, 128 bytes), waits until warp 1
    releases it (mbarrier 1) and loads tile 1 into the same bytes. Warp 1 waits for each fill
    and reads the words through the generic proxy (ld.shared), releasing the buffer after the
    first read. The refill writes through the async proxy: the generic reads must be ordered
    before it by a fence.proxy.async between the read and the release (PTX 9.7.13.4; CUTLASS
    and quack fence there: `fence_view_async_shared()` before `consumer_release`)."""
    warps = 2
    nbars = 2
    probes = 0
    launches = 20
    extra_x = 64  # where warp 1 puts what it read (keeps the reads)
    fence = True
    fence_after_release = False

    @cute.jit
    def body(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(self.bar(0), 1)
                cute.arch.mbarrier_init(self.bar(1), 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.barrier()
        words = cute.make_tensor(self.buf, cute.make_layout(32))
        seen = self.x
        if self.warp == 0:
            for t in cutlass.range_constexpr(2):
                if cutlass.const_expr(t == 1):
                    cute.arch.mbarrier_wait(self.bar(1), 0)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
                self.tma_load(self.bar(0), tile=t)
        else:
            for t in cutlass.range_constexpr(2):
                cute.arch.mbarrier_wait(self.bar(0), t)
                seen[BUF_WORDS + t * 32 + self.lane] = words[self.lane]
                if cutlass.const_expr(t == 0):
                    if cutlass.const_expr(self.fence and not self.fence_after_release):
                        cute.arch.fence_proxy("async.shared", space="cta")
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(self.bar(1))
                    if cutlass.const_expr(self.fence and self.fence_after_release):
                        cute.arch.fence_proxy("async.shared", space="cta")


class FilledReadFencedThenReleased(_FilledRead):
    """Read, fence.proxy.async, release: the refill is ordered after the reads. Completes, the
    first read sees tile 0. Hardware question: none beyond that; this is quack's epilogue C load
    (gemm_base.py: `fence_view_async_shared()` then `epi_pipeline.consumer_release`)."""
    rules = ("buffer.read-proxy",)
    expect = "verified"


class FilledReadNotFenced(_FilledRead):
    """Read and release with no fence.proxy.async: the refill (async proxy) is not ordered after
    the generic reads (PTX 9.7.13.4). warpspin: proxy-race at the refill. The H200 may still
    show tile 0 in every launch: the reads retire before the arrive in practice."""
    rules = ("buffer.read-proxy",)
    expect = "proxy-race"
    fence = False


class FilledReadFencedAfterRelease(_FilledRead):
    """The fence after the release: it orders nothing before the refill, which the release
    already allowed. warpspin: proxy-race at the refill."""
    rules = ("buffer.read-proxy",)
    expect = "proxy-race"
    fence_after_release = True


LITMUS += [FilledReadFencedThenReleased, FilledReadNotFenced, FilledReadFencedAfterRelease]


class _TmaTiles(_StagedStore):
    """No flag: 2 CTAs (each its own cluster: the model holds one), one warp each; each writes
    its rank + 1 into the 32 words of its shared buffer, fences them to the async proxy, and
    meets the CTA's barrier and stores them with TMA into the 32-word tile `tile()` of `x` (CTA 1
    after a delay of 20 us), then waits for the store's reads."""
    grid = 2
    warps = 1
    nbars = 1
    launches = 20

    @cute.jit
    def body(self):  # (the S2G atom over x: _StagedStore's)
        words = cute.make_tensor(self.buf, cute.make_layout((32,)))
        g = cute.local_tile(self.tma_x, (32,), (self.tile(),))
        ts, tg = cpasync.tma_partition(self.atom, 0, cute.make_layout(1),
                                       cute.group_modes(words, 0, 1), cute.group_modes(g, 0, 1))
        if self.rank == 1:
            self.sleep(20)
        words[self.lane] = cutlass.Int32(self.rank + 1)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.barrier()
        cute.copy(self.atom, ts, tg)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)


class TmaStoreOwnTiles(_TmaTiles):
    """CTA c stores tile c of x: no two threads of the grid write one word (the lanes of the warp
    issue one store each, the same box from the same words). warpspin: verified."""
    rules = ("gmem.tma-owned",)

    @cute.jit
    def tile(self):
        return self.rank


class TmaStoreSameTile(_TmaTiles):
    """Both CTAs store tile 0 of x: a write-write race between the CTAs. warpspin: races NOT
    CHECKED on the global tensor the TMA descriptor was made from, naming the store (every
    cluster along x writes the same coordinates)."""
    rules = ("gmem.tma-owned",)
    expect = "not-checked"

    @cute.jit
    def tile(self):
        return self.rank * 0


LITMUS += [TmaStoreOwnTiles, TmaStoreSameTile]
