"""Litmus kernels for TMA descriptors rewritten in global memory: a load through the descriptor,
its rewrite in place, the release and acquire fences, and the bulk async-group that retires the
load's read of the descriptor. One warp; the descriptor lives in words 32..63 of `x` (128 bytes),
the load reads tile 0 (words 0..31). What the race corrupts is the data a load reads, which no
probe here follows: `examples/kgrouped_tensormap.py` shows that on the H200 (docs/ground-truth.md);
these show that each protocol completes, and what warpspin says of it."""
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync
from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode

from .litmus import TmaLitmus


class _Tensormap(TmaLitmus):
    warps = 1
    nbars = 1
    probes = 1
    drain = True
    acquire = True
    by_lane0 = False

    @cute.jit
    def load(self, desc):
        s_buf = cute.make_tensor(self.buf, cute.make_layout(32))
        g = cute.local_tile(self.tma_x, (32,), (None,))
        ts, tg = cpasync.tma_partition(self.atom, 0, cute.make_layout(1),
                                       cute.group_modes(s_buf, 0, 1), cute.group_modes(g, 0, 1))
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 128)
        cute.copy(self.atom, tg[None, 0], ts, tma_bar_ptr=self.bar(0), tma_desc_ptr=desc)

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        maps = TensorMapManager(TensorMapUpdateMode.GMEM, 128)
        desc = maps.get_tensormap_ptr(self.x.iterator + 32)
        generic = maps.get_tensormap_ptr(desc, cute.AddressSpace.generic)
        with cute.arch.elect_one():
            cpasync.copy_tensormap(self.atom, desc)
        cpasync.fence_tma_desc_release()
        cpasync.fence_tma_desc_acquire(desc)
        self.load(generic)
        if cutlass.const_expr(self.drain and self.by_lane0):
            if self.lane == 0:
                cute.arch.cp_async_bulk_commit_group()
                cute.arch.cp_async_bulk_wait_group(0, read=True)
        elif cutlass.const_expr(self.drain):
            with cute.arch.elect_one():
                cute.arch.cp_async_bulk_commit_group()
                cute.arch.cp_async_bulk_wait_group(0, read=True)
        cute.arch.sync_warp()
        with cute.arch.elect_one():
            cpasync.copy_tensormap(self.atom, desc)
        cpasync.fence_tma_desc_release()
        if cutlass.const_expr(self.acquire):
            cpasync.fence_tma_desc_acquire(desc)
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.load(generic)
        cute.arch.mbarrier_wait(self.bar(0), 1)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 1))


class TensormapRewriteDrained(_Tensormap):
    """One warp writes its descriptor (copy_tensormap), releases and acquires it, loads a tile
    through it, commits the load to a bulk async-group and waits for its reads
    (cp.async.bulk.wait_group.read 0), rewrites the descriptor, releases and acquires it again and
    loads through it once more. Completes, probe [1]. Hardware question: none beyond completing;
    this is the protocol CUTLASS's TensorMapManager follows."""
    rules = ("tensormap.drain", "tensormap.acquire")
    expect = "verified"


class TensormapRewriteUndrained(_Tensormap):
    """The same without the commit and wait before the rewrite: the first load may still be
    reading the descriptor (PTX 9.7.9.26.5.2; DeepGEMM PR #343). warpspin: tensormap-race at the
    rewrite. The probe cannot show the corruption (it is of the data loaded)."""
    rules = ("tensormap.drain",)
    expect = "tensormap-race"
    drain = False


class TensormapLoadWithoutAcquire(_Tensormap):
    """The same with the drain but without the acquire after the rewrite: the second load uses
    the descriptor through the tensormap proxy without `fence.proxy.tensormap::generic.acquire`
    (PTX 9.7.13.4). warpspin: tensormap-race at the load."""
    rules = ("tensormap.acquire",)
    expect = "tensormap-race"
    acquire = False


class TensormapDrainedByLane0(_Tensormap):
    """TensormapRewriteDrained with the commit and the wait under `lane == 0` instead of
    `elect_one`: the lane the TMA copies elect (the lowest, litmus ElectWhichLane) retires their
    descriptor reads. warpspin: verified, assuming that lane."""
    rules = ("tensormap.drain",)
    expect = "verified"
    by_lane0 = True


class _TwoTensormaps(TmaLitmus):
    """One warp writes two descriptors in global memory, `x` words 32..63 (A) and 64..95 (B),
    releases them, acquires them, loads a tile through A and then one through B (each 128 bytes
    on bar(0), phases 0 and 1). warpspin tells the descriptors apart by their addresses (128
    bytes apart). Probe: bar(0)'s phase 1 completed."""
    warps = 1
    nbars = 1
    probes = 1
    extra_x = 32
    acquire_b = True

    load = _Tensormap.load

    @cute.jit
    def load_and_wait(self, desc, phase: int):
        self.load(desc)
        cute.arch.mbarrier_wait(self.bar(0), phase)

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        maps = TensorMapManager(TensorMapUpdateMode.GMEM, 128)
        desc_a = maps.get_tensormap_ptr(self.x.iterator + 32)
        desc_b = maps.get_tensormap_ptr(self.x.iterator + 64)
        with cute.arch.elect_one():
            cpasync.copy_tensormap(self.atom, desc_a)
            cpasync.copy_tensormap(self.atom, desc_b)
        cpasync.fence_tma_desc_release()
        cpasync.fence_tma_desc_acquire(desc_a)
        if cutlass.const_expr(self.acquire_b):
            cpasync.fence_tma_desc_acquire(desc_b)
        self.load_and_wait(maps.get_tensormap_ptr(desc_a, cute.AddressSpace.generic), 0)
        self.load_and_wait(maps.get_tensormap_ptr(desc_b, cute.AddressSpace.generic), 1)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 1))


class TwoTensormapsAcquired(_TwoTensormaps):
    """Both descriptors acquired before their loads. warpspin: verified."""
    rules = ("tensormap.several", "tensormap.acquire")
    expect = "verified"


class TwoTensormapsOneNotAcquired(_TwoTensormaps):
    """Only A acquired: the load through B uses a descriptor written through the generic proxy
    without `fence.proxy.tensormap::generic.acquire` of it (PTX 9.7.13.4); the acquire of A
    does not cover B. warpspin: tensormap-race at the load through B."""
    rules = ("tensormap.several", "tensormap.acquire")
    expect = "tensormap-race"
    acquire_b = False


LITMUS = [TensormapRewriteDrained, TensormapRewriteUndrained, TensormapLoadWithoutAcquire,
          TensormapDrainedByLane0, TwoTensormapsAcquired, TwoTensormapsOneNotAcquired]
