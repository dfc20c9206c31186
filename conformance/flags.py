"""Litmus kernels for global flags between CTAs: one CTA adds to a word of global memory, the
other spins on it with ld.acquire (a grid of two CTAs, each its own cluster: warpspin models
every CTA of the grid)."""
import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass._mlir.dialects import nvvm

from .litmus import Litmus


class _Flag(Litmus):
    """CTA 0's lane 0 adds 1 to x[0] (0 at launch) with `sem` at `scope`; CTA 1's lane 0 spins
    until x[0] >= `total`."""
    grid = 2
    warps = 1
    nbars = 1
    zero_x = (0,)
    sem = "release"
    scope = "gpu"
    total = 1

    @cute.jit
    def body(self):
        if self.rank == 0:
            if self.lane == 0:
                cute.arch.atomic_add(self.x.iterator.llvm_ptr, Int32(1), sem=self.sem,
                                     scope=self.scope)
        else:
            if self.lane == 0:
                while cute.arch.load(self.x.iterator.llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < self.total:
                    pass


class FlagReleaseAcquire(_Flag):
    """The add (release, gpu scope) lets the spinning CTA go. warpspin: verified."""
    rules = ("gmem.flag-handoff", "gmem.flag-order")


class FlagWaitsForMore(_Flag):
    """The spinning CTA waits for 2 but only one add ever comes: it spins forever. warpspin:
    deadlock at the loop."""
    rules = ("gmem.flag-handoff",)
    expect = "deadlock"
    total = 2
    launches = 1


class FlagRelaxedAdd(_Flag):
    """A relaxed add: the loop still ends (the value arrives), but it orders nothing before the
    waiter's reads (PTX 8.7). warpspin: scope at the add."""
    rules = ("gmem.flag-order",)
    expect = "scope"
    sem = "relaxed"


class FlagCtaScopeAdd(_Flag):
    """An add at .cta scope, waited for by another CTA: not in each other's scope (PTX 8.5).
    warpspin: scope at the add."""
    rules = ("gmem.flag-order",)
    expect = "scope"
    scope = "cta"


class _FlagData(Litmus):
    """Global data the flag hands over: CTA 0's lanes write out[lane] = lane + 1 (after `delay`
    microseconds), bar.sync, and lane 0 adds 1 to x[0] with a release; CTA 1's lane 0 spins
    until x[0] >= 1 with an acquire (unless `no_wait`), bar.sync, and each lane copies out[lane]
    to out[32 + lane]. The data are floats to the model (no probed value): the device shows
    whether each completes; `examples/grid_flag.py:no_wait` shows the race's wrong sums."""
    grid = 2
    warps = 1
    nbars = 1
    words = 64  # out: the data and the copies (no probe slots)
    zero_x = (0,)
    no_wait = False
    sync_warp = False  # bar.warp.sync (the CTA is one warp) in place of bar.sync
    delay = 20
    launches = 20

    @cute.jit
    def sync(self):
        if cutlass.const_expr(self.sync_warp):
            cute.arch.sync_warp()
        else:
            cute.arch.barrier()

    @cute.jit
    def produce(self):
        self.sleep(self.delay)
        self.out[self.lane] = Int32(self.lane + 1)
        self.sync()
        if self.lane == 0:
            cute.arch.atomic_add(self.x.iterator.llvm_ptr, Int32(1), sem="release", scope="gpu")

    @cute.jit
    def consume(self):
        if cutlass.const_expr(not self.no_wait):
            if self.lane == 0:
                while cute.arch.load(self.x.iterator.llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < 1:
                    pass
        self.sync()
        self.out[32 + self.lane] = self.out[self.lane]

    @cute.jit
    def body(self):
        if self.rank == 0:
            self.produce()
        else:
            self.consume()


class FlagDataHandoff(_FlagData):
    """Every copy is the written value (lane + 1). warpspin: verified (out followed as global
    data, one array for the grid)."""
    rules = ("gmem.flag-data",)


class FlagDataNoWait(_FlagData):
    """CTA 1 copies without waiting for the flag: its reads race with CTA 0's writes (a copy of
    0 when it reads first). warpspin: race at the read."""
    rules = ("gmem.flag-data",)
    expect = "race"
    no_wait = True


class FlagDataSyncWarp(_FlagData):
    """cute.arch.sync_warp() (bar.warp.sync) in place of both bar.syncs: each CTA is one warp,
    so it orders the other lanes' writes before lane 0's release and lane 0's acquire before
    the other lanes' reads (PTX 9.7.13.2). warpspin: verified."""
    rules = ("gmem.flag-data", "warp.sync")
    sync_warp = True


class _FlagElements(Litmus):
    """Two flags in one argument: CTA 0's lane 0 adds 1 to x[0] (and, unless `only_first`, to
    x[1]), release; CTA 1's lane 0 spins until x[1] >= 1, then until x[0] >= 1, acquire."""
    grid = 2
    warps = 1
    nbars = 1
    zero_x = (0, 1)
    only_first = False
    launches = 5

    @cute.jit
    def body(self):
        if self.rank == 0:
            if self.lane == 0:
                cute.arch.atomic_add(self.x.iterator.llvm_ptr, Int32(1), sem="release",
                                     scope="gpu")
                if cutlass.const_expr(not self.only_first):
                    cute.arch.atomic_add((self.x.iterator + 1).llvm_ptr, Int32(1),
                                         sem="release", scope="gpu")
        else:
            if self.lane == 0:
                while cute.arch.load((self.x.iterator + 1).llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < 1:
                    pass
                while cute.arch.load(self.x.iterator.llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < 1:
                    pass


class FlagElementsSeparate(_FlagElements):
    """Each word gets its add: both loops end. warpspin: verified (two flags)."""
    rules = ("gmem.flag-element",)


class FlagElementsOnlyFirst(_FlagElements):
    """Only x[0] gets an add: the wait on x[1] spins forever (one flag per argument would have
    let it pass). warpspin: deadlock at the loop on x[1]."""
    rules = ("gmem.flag-element",)
    expect = "deadlock"
    only_first = True
    launches = 1


class _GridClusters(Litmus):
    """Two clusters of two CTAs, one warp each. Every CTA initializes bar 0 (count 1) and meets
    its cluster (release arrive, acquire wait); then rank 1 of each cluster arrives on rank 0's
    bar 0 (a remote arrive, cluster scope) and rank 0 waits on it. Around that, a hand-off
    between the clusters through x[0]: rank 0 of cluster 0 adds 1 to it after its second
    cluster barrier; cluster 1's CTAs spin until it is 1 before theirs (a grid-wide cluster
    barrier would wait for them: a deadlock). With `cycle`, rank 1 of cluster 0 also waits for
    x[1], which rank 0 of cluster 1 sets only after its own spin: a cycle through cluster 0's
    barrier."""
    grid = 2
    cluster = 2
    warps = 1
    nbars = 1
    zero_x = (0, 1)
    cycle = False
    launches = 5

    @cute.jit
    def body(self):
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(self.bar(0), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if self.rank == 1:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0), 0, scope=nvvm.MemScopeKind.CLUSTER)
        else:
            cute.arch.mbarrier_wait(self.bar(0), 0)
        if self.cta >= 2:
            if self.lane == 0:
                while cute.arch.load(self.x.iterator.llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < 1:
                    pass
                if self.cta == 2:
                    cute.arch.atomic_add((self.x.iterator + 1).llvm_ptr, Int32(1),
                                         sem="release", scope="gpu")
        if cutlass.const_expr(self.cycle):
            if self.cta == 1:
                if self.lane == 0:
                    while cute.arch.load((self.x.iterator + 1).llvm_ptr, Int32, sem="acquire",
                                         scope="gpu") < 1:
                        pass
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if self.cta == 0:
            if self.lane == 0:
                cute.arch.atomic_add(self.x.iterator.llvm_ptr, Int32(1), sem="release",
                                     scope="gpu")


class GridClustersPerCluster(_GridClusters):
    """Each cluster's barrier completes with its own CTAs; the remote arrives land. warpspin:
    verified (a grid model of two clusters)."""
    rules = ("grid.clusters", "cluster.remote-arrive")


class GridClustersCycle(_GridClusters):
    """Cluster 0's second barrier waits for its rank 1, which spins on x[1]; x[1] is set by
    cluster 1 only after x[0], which cluster 0 sets after that barrier. warpspin: deadlock."""
    rules = ("grid.clusters",)
    expect = "deadlock"
    cycle = True
    launches = 1


class _Lock(Litmus):
    """Three CTAs, one warp each: lane 0 takes a lock on x[0] (`while atomic_cas(x[0], 0, 1,
    acquire) != 0`), the warp passes a bar.sync, and lane 0 releases it (`atomic_exch(x[0], 0,
    release)`, or `store` with `store_unlock`; none with `no_unlock`)."""
    grid = 3
    warps = 1
    nbars = 1
    zero_x = (0,)
    unlock = "exch"
    launches = 5

    @cute.jit
    def body(self):
        word = self.x.iterator.llvm_ptr
        if self.lane == 0:
            while cute.arch.atomic_cas(word, cmp=Int32(0), val=Int32(1), sem="acquire",
                                       scope="gpu") != 0:
                pass
        cute.arch.barrier()
        if self.lane == 0:
            if cutlass.const_expr(self.unlock == "exch"):
                cute.arch.atomic_exch(word, Int32(0), sem="release", scope="gpu")
            elif cutlass.const_expr(self.unlock == "store"):
                cute.arch.store(word, Int32(0), sem="release", scope="gpu")


class LockTakenInTurn(_Lock):
    """Each CTA takes and releases the lock in turn. warpspin: verified."""
    rules = ("gmem.lock",)


class LockStoreUnlock(_Lock):
    """The unlock is a release store. warpspin: verified."""
    rules = ("gmem.lock", "gmem.flag-store")
    unlock = "store"


class LockNeverReleased(_Lock):
    """No CTA releases the lock: the second taker spins forever. warpspin: deadlock."""
    rules = ("gmem.lock",)
    expect = "deadlock"
    unlock = "none"
    launches = 1


class _StoreFlag(Litmus):
    """CTA 0's lane 0 sets x[0] = 1 with cute.arch.store (`sem`); CTA 1's lane 0 spins until
    x[0] == 1 (acquire)."""
    grid = 2
    warps = 1
    nbars = 1
    zero_x = (0,)
    sem = "release"

    @cute.jit
    def body(self):
        word = self.x.iterator.llvm_ptr
        if self.rank == 0:
            if self.lane == 0:
                cute.arch.store(word, Int32(1), sem=self.sem, scope="gpu")
        else:
            if self.lane == 0:
                while cute.arch.load(word, Int32, sem="acquire", scope="gpu") != 1:
                    pass


class FlagStoreRelease(_StoreFlag):
    """A release store lets the spinning CTA go. warpspin: verified."""
    rules = ("gmem.flag-store",)


class FlagStoreRelaxed(_StoreFlag):
    """A relaxed store: the loop ends, but it orders nothing before the waiter's reads.
    warpspin: scope at the store."""
    rules = ("gmem.flag-store",)
    expect = "scope"
    sem = "relaxed"


class _Outputs(Litmus):
    """No flag: 2 CTAs (each its own cluster: the model holds one) store into `out` after a
    delay of 20 us in CTA 1, each lane one element, at `place` (the lane, the CTA)."""
    grid = 2
    warps = 1
    nbars = 1
    words = 64
    launches = 20

    @cute.jit
    def body(self):
        if self.rank == 1:
            self.sleep(20)
        self.out[self.place()] = Int32(self.rank + 1)


class GlobalOwnElements(_Outputs):
    """CTA c stores out[32 c + lane]: no two threads of the grid meet. warpspin: verified."""
    rules = ("gmem.owned",)

    @cute.jit
    def place(self):
        return self.rank * 32 + self.lane


class GlobalSameElements(_Outputs):
    """Both CTAs store out[lane]: a write-write race between the CTAs (out ends 1 or 2 from
    launch to launch). warpspin: races NOT CHECKED on out, naming the store (the model holds
    one cluster; it proves threads apart or says so)."""
    rules = ("gmem.owned",)
    expect = "not-checked"

    @cute.jit
    def place(self):
        return self.lane


class _PartitionOutputs(_Outputs):
    """As `_Outputs`, through a thread partition: each CTA's 32 threads copy a register of
    rank + 1 into their parts of the 32-word tile `place()` of `out`
    (`make_tiled_copy_tv(atom, 32 threads, 1 value).get_slice(tidx).partition_D(tile)`)."""

    @cute.jit
    def body(self):
        tidx, _, _ = cute.arch.thread_idx()
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Int32, num_bits_per_copy=32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(32), cute.make_layout(1))
        part = tiled.get_slice(tidx).partition_D(cute.local_tile(self.out, (32,),
                                                                 (self.place(),)))
        frag = cute.make_rmem_tensor_like(part)
        frag.fill(self.rank + 1)
        if self.rank == 1:
            self.sleep(20)
        cute.autovec_copy(frag, part)


class PartitionOwnTiles(_PartitionOutputs):
    """CTA c's threads copy into their parts of tile c: each thread its own word, no two threads
    of the grid meet. warpspin: verified."""
    rules = ("gmem.partition-owned",)

    @cute.jit
    def place(self):
        return self.rank


class PartitionSameTile(_PartitionOutputs):
    """Both CTAs copy into their parts of tile 0: thread t of each CTA writes word t, a
    write-write race between the CTAs (out ends 1 or 2). warpspin: races NOT CHECKED on out,
    naming the copy (every cluster along x accesses the same bytes)."""
    rules = ("gmem.partition-owned",)
    expect = "not-checked"

    @cute.jit
    def place(self):
        return self.rank * 0


class _PartitionRows(_Outputs):
    """No flag: 2 CTAs of 32 threads; a (4 x 8)-thread tiled copy splits CTA c's rows 4c..4c+3
    of an 8 x 8 identity tensor, one element per thread (`tXcX = thr.partition_S(cX)`); the
    threads `writes()` picks store their column + 1 into out[row], as quack's norms store rstd
    (`if tXcX[0][1] == 0: ...`)."""

    @cute.jit
    def body(self):
        tidx, _, _ = cute.arch.thread_idx()
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Int32, num_bits_per_copy=32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 8), stride=(8, 1)),
                                        cute.make_layout((1, 1)))
        cX = cute.local_tile(cute.make_identity_tensor((8, 8)), (4, 8), (self.rank, 0))
        tXcX = tiled.get_slice(tidx).partition_S(cX)
        if self.rank == 1:
            self.sleep(20)
        row, col, out = tXcX[0][0], tXcX[0][1], self.out
        if self.writes(col):
            out[row] = Int32(col + 1)


class PartitionRowFlag(_PartitionRows):
    """The threads of column 0 store: one thread per row of the grid. warpspin: verified."""
    rules = ("gmem.partition-owned",)

    def writes(self, col):
        return col == 0


class PartitionRowAll(_PartitionRows):
    """Every thread stores: the 8 threads of a row store 1..8 into one word, a write-write race
    between lanes (out[row] ends as one of them; on hardware one lane of a warp's store wins).
    warpspin: races NOT CHECKED on out, naming the store."""
    rules = ("gmem.partition-owned",)
    expect = "not-checked"

    def writes(self, col):
        return col >= 0


LITMUS = [FlagReleaseAcquire, FlagWaitsForMore, FlagRelaxedAdd, FlagCtaScopeAdd, FlagDataHandoff,
          FlagDataNoWait, FlagDataSyncWarp, GlobalOwnElements, GlobalSameElements,
          PartitionOwnTiles, PartitionSameTile, PartitionRowFlag, PartitionRowAll,
          FlagElementsSeparate, FlagElementsOnlyFirst, GridClustersPerCluster, GridClustersCycle,
          LockTakenInTurn, LockStoreUnlock, LockNeverReleased, FlagStoreRelease,
          FlagStoreRelaxed]
