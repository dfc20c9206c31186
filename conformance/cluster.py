"""Litmus kernels for the cluster: barrier.cluster (PTX ISA 9.7.13.3), exited threads (9.7.19.2),
remote mbarrier arrives through mapa (9.7.13.15.13) and multicast TMA loads (9.7.9.25).  One
cluster of two CTAs each."""

import cutlass
import cutlass.cute as cute
from cutlass import Int16

from .litmus import Litmus, TmaLitmus

LATE_US = 2000  # a delay that lets the other side of a race finish first, far below the watchdog


@cute.jit
def _init_local(warp, bar) -> None:
    """Warp 0 of each CTA initializes `bar` with count 1; every warp of the CTA may use it after
    the fence and the CTA barrier."""
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()


@cute.jit
def _init_published(warp, bar) -> None:
    """Warp 0 of each CTA initializes `bar` with count 1 and the init is published to the whole
    cluster (fence.mbarrier_init + barrier.cluster.arrive.relaxed + wait, the CUTLASS
    pipeline_init_arrive/wait idiom) before any CTA arrives on or copies into a peer's barrier."""
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()
    cute.arch.cluster_wait()


def _cluster_sync() -> None:
    """No CTA exits while its peer may still arrive on or copy into its shared memory."""
    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


# ---------------------------------------------------------------------------- barrier.cluster


class ClusterBarrier(Litmus):
    """Every warp of both CTAs does barrier.cluster.arrive + wait; warp 1 of CTA 1 comes LATE_US
    late, and before its arrive it arrives on its CTA's bar(0) (count 1).  Nobody passes the wait
    before that warp arrived, so after the wait warp 0 of each CTA sees bar(0)'s phase 0
    completed in CTA 1 (and not in CTA 0, where nobody arrives): probes [0, 1].  Hardware
    question: does barrier.cluster.wait wait for every thread of the cluster (and order what
    the late warp did before its arrive)?"""
    rules = ("cluster.barrier",)
    expect = "verified"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 1
    launches = 3

    @cute.jit
    def body(self):
        _init_local(self.warp, self.bar(0))
        if self.rank == 1 and self.warp == 1:
            self.sleep(LATE_US)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if self.warp == 0:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))


class ClusterBarrierMissingWarp(Litmus):
    """Warp 1 of CTA 1 stays alive but does not arrive on the cluster barrier: it first waits on
    its CTA's bar(0), which warp 0 of CTA 1 releases only after its own cluster wait.  The other
    three warps arrive and wait: the cluster barrier waits for the missing warp, which waits for
    them -> hangs (deadlock).  Hardware question: does barrier.cluster.wait wait for a live
    thread that has not arrived (rather than only for the threads that arrive at all)?"""
    rules = ("cluster.barrier",)
    expect = "deadlock"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 0
    launches = 1

    @cute.jit
    def body(self):
        _init_local(self.warp, self.bar(0))
        if self.rank == 1 and self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if self.rank == 1 and self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))


class ClusterRelaxed(Litmus):
    """ClusterBarrier's pattern with barrier.cluster.arrive.relaxed: every warp of both CTAs
    arrives relaxed and waits, warp 1 of CTA 1 LATE_US late -> completes (no probe: a relaxed
    arrive does not order the late warp's earlier operations).  Hardware question: does a
    relaxed arrive count towards the cluster barrier like a release one?"""
    rules = ("cluster.relaxed", "cluster.barrier")
    expect = "verified"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 0
    launches = 3

    @cute.jit
    def body(self):
        if self.rank == 1 and self.warp == 1:
            self.sleep(LATE_US)
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()


# ---------------------------------------------------------------------------- exited threads


class ClusterExitedCta(Litmus):
    """CTA 1 exits at once (all its warps, without touching the cluster barrier); both warps of
    CTA 0 arrive and wait LATE_US later -> completes.  Hardware question: are threads that exited
    before the barrier's phase not waited for?"""
    rules = ("cluster.exited-threads", "cluster.barrier")
    expect = "verified"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 0
    launches = 3

    @cute.jit
    def body(self):
        if self.rank == 0:
            self.sleep(LATE_US)
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()


class ClusterExitReleasesWait(Litmus):
    """Both warps of CTA 0 arrive and wait at once; CTA 1 exits LATE_US later without touching
    the cluster barrier -> completes (when CTA 1 exits, every remaining thread has arrived).
    Hardware question: does an exit release a cluster barrier already waiting only for the
    exiting threads?"""
    rules = ("cluster.exited-threads", "cluster.barrier")
    expect = "verified"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 0
    launches = 3

    @cute.jit
    def body(self):
        if self.rank == 0:
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        else:
            self.sleep(LATE_US)


class ClusterArriveThenExit(Litmus):
    """Warp 0 of CTA 0 arrives on the cluster barrier and exits without waiting; the other three
    warps arrive and wait LATE_US later -> completes: the exit withdraws A's arrival and the
    phase completes when the last of the 96 live threads arrives.  Were A's arrival still
    counted after its exit, the phase would complete at the second late warp (32 + 64 = 96) and
    the third would arrive in the next phase and wait there forever.  Hardware question: may a
    thread arrive and exit without the wait, with the rest still completing the phase together
    (the counterpart of ClusterExitedArrivalWithdrawn)?"""
    rules = ("cluster.exited-threads", "cluster.barrier")
    expect = "verified"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 0
    launches = 3

    @cute.jit
    def body(self):
        if self.rank == 0 and self.warp == 0:
            cute.arch.cluster_arrive()
        else:
            self.sleep(LATE_US)
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()


class ClusterExitedArrivalWithdrawn(Litmus):
    """Warp 0 of CTA 0 (A) arrives on the cluster barrier and exits at once.  Warp 1 of CTA 0 and
    warp 0 of CTA 1 (B) arrive and wait LATE_US later; after its wait warp 0 of CTA 1 arrives on
    bar(0), for which warp 1 of CTA 1 (C) waits, C never touching the cluster barrier.  PTX:
    the wait is for all non-exited threads (B and C); C has not arrived -> B waits forever, C
    too (deadlock).  Were A's arrival still counted after its exit (A + B = the 96 live
    threads), the barrier would complete and so would the kernel.  Hardware question: does an
    exited thread's arrival count in the phase it arrived in, on top of its exit?"""
    rules = ("cluster.exited-threads", "cluster.barrier")
    expect = "deadlock"
    warps = 2
    cluster = 2
    nbars = 1
    probes = 0
    launches = 1

    @cute.jit
    def body(self):
        _init_local(self.warp, self.bar(0))
        if self.rank == 0 and self.warp == 0:
            cute.arch.cluster_arrive()
        if self.rank == 1 and self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)
        if (self.rank == 0 and self.warp == 1) or (self.rank == 1 and self.warp == 0):
            self.sleep(LATE_US)
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        if self.rank == 1 and self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))


# ---------------------------------------------------------------------------- remote arrive


class RemoteArrive(Litmus):
    """bar(0) (count 1) of each CTA is initialized and published to the cluster; LATE_US later
    CTA 1 arrives (one lane) on CTA 0's bar(0) through mapa, while CTA 0 waits on it.  CTA 0
    passes; then each CTA samples its own bar(0): probes [1, 0] (the arrival landed in CTA 0, not
    in the issuer's CTA).  A final cluster barrier keeps CTA 0 alive until the remote arrive is
    done.  Hardware question: does an arrive through mapa count on the peer's barrier?"""
    rules = ("cluster.remote-arrive", "cluster.relaxed")
    expect = "verified"
    warps = 1
    cluster = 2
    nbars = 1
    probes = 1
    launches = 3

    @cute.jit
    def body(self):
        _init_published(self.warp, self.bar(0))
        if self.rank == 1:
            self.sleep(LATE_US)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0), 0)
        else:
            cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        _cluster_sync()


class RemoteArriveWrongCta(Litmus):
    """As RemoteArrive, but CTA 1 names its own rank in the arrive: the arrival lands on CTA 1's
    bar(0) and CTA 0's wait never passes -> hangs.  Hardware question: does the peer rank of the
    arrive select the barrier's CTA (no arrival leaks to another CTA)?"""
    rules = ("cluster.remote-arrive",)
    expect = "deadlock"
    warps = 1
    cluster = 2
    nbars = 1
    probes = 1
    launches = 1

    @cute.jit
    def body(self):
        _init_published(self.warp, self.bar(0))
        if self.rank == 1:
            self.sleep(LATE_US)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0), self.rank)
        else:
            cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        _cluster_sync()


# ---------------------------------------------------------------------------- multicast TMA


class _Multicast(TmaLitmus):
    multicast = True
    warps = 1
    cluster = 2
    nbars = 1
    probes = 1

    def mask(self):
        return Int16(3)

    @cute.jit
    def body(self):
        _init_published(self.warp, self.bar(0))
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(self.bar(0), 256)
        self.tma_load(self.bar(0), 0, self.mask())
        cute.arch.mbarrier_wait(self.bar(0), 0)
        self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
        _cluster_sync()


class MulticastTma(_Multicast):
    """Each CTA announces 256 bytes on its bar(0) (published to the cluster) and loads its half of
    a 64-word tile (128 bytes) with a multicast TMA into both CTAs (mask 0b11): each barrier
    receives 128 bytes from each CTA, 256 in all, and both CTAs pass: probes [1, 1].  Hardware
    question: does a multicast load complete its bytes on the barrier (same offset) of every CTA
    in the mask?"""
    rules = ("tma.multicast", "tma.complete-tx")
    expect = "verified"
    launches = 3


class MulticastMaskOmitsPeer(_Multicast):
    """As MulticastTma, but CTA 1 multicasts its half into itself only (mask 0b10; CTA 0 keeps
    0b11): CTA 1 receives 256 bytes and passes, CTA 0 only its own 128 of the 256 it announced
    and waits forever -> hangs (tx-mismatch).  Hardware question: does a CTA outside the mask
    receive (and complete) none of the copy's bytes?"""
    rules = ("tma.multicast", "mbarrier.tx-mismatch")
    expect = "tx-mismatch"
    launches = 1

    def mask(self):
        return Int16(3) - Int16(self.rank)  # CTA 0: 0b11, CTA 1: 0b10


class RemoteArriveIntoExitedCta(Litmus):
    """The barriers are published to the cluster; CTA 0 then exits at once, and CTA 1, LATE_US
    later, arrives on CTA 0's bar(0) through mapa. warpspin: cluster-lifetime (the shared
    memory of an exited CTA may belong to another CTA by then); the H200 column records what
    the hardware did."""
    rules = ("cluster.lifetime",)
    expect = "cluster-lifetime"
    warps = 1
    cluster = 2
    nbars = 1

    @cute.jit
    def body(self):
        _init_published(self.warp, self.bar(0))
        if self.rank == 1:
            self.sleep(LATE_US)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0), 0)


LITMUS = [ClusterBarrier, ClusterBarrierMissingWarp, ClusterRelaxed, ClusterExitedCta,
          ClusterExitReleasesWait, ClusterArriveThenExit, ClusterExitedArrivalWithdrawn,
          RemoteArrive, RemoteArriveWrongCta, MulticastTma, MulticastMaskOmitsPeer, RemoteArriveIntoExitedCta]


# ---------------------------------------------------------------------------- DSMEM stores

ST_CLUSTER = "st.shared::cluster.u32 [$0], $1;"


@cute.jit
def _copy_first(src: cute.Tensor, dst: cute.Tensor, lane) -> None:
    """dst[0] = src[0], read as each lane's word of src (lane 0's is the one kept): a warp's
    element loads at per-lane addresses are what the model follows as shared data."""
    mine = src[lane]
    if lane == 0:
        dst[0] = mine


class _DsmemHandoff(Litmus):
    """bar(0) (count 1) of each CTA is initialized and published; one lane of CTA 0 stores a word
    into CTA 1's litmus buffer (st.shared::cluster through mapa) and arrives on CTA 1's bar(0);
    CTA 1 waits for that phase and copies the word to out[0] (or, `read_early`, copies it
    first). What a release at the wrong scope or an early read could corrupt is that word,
    which no probe here follows (out[0] is 7 on a correct run); these show that the protocol
    completes and what warpspin says of it."""
    warps = 1
    cluster = 2
    nbars = 1
    probes = 0
    scope = "cluster"
    by_llvm_store = False
    read_early = False

    @cute.jit
    def body(self):
        from cutlass import Int32
        from cutlass._mlir.dialects import nvvm

        _init_published(self.warp, self.bar(0))
        word = cute.make_tensor(self.buf, cute.make_layout(32))
        if self.rank == 0:
            with cute.arch.elect_one():
                remote = cute.arch.map_dsmem_ptr(self.buf, 1)
                if cutlass.const_expr(self.by_llvm_store):
                    from cutlass._mlir.dialects import llvm
                    llvm.store(Int32(7).ir_value(), remote.llvm_ptr)
                else:
                    cute.arch.inline_ptx(ST_CLUSTER, read_only_args=[Int32(remote.toint()),
                                                                    Int32(7)])
                if cutlass.const_expr(self.scope == "cluster"):
                    cute.arch.mbarrier_arrive(self.bar(0), 1, scope=nvvm.MemScopeKind.CLUSTER)
                else:
                    cute.arch.mbarrier_arrive(self.bar(0), 1)
        else:
            if cutlass.const_expr(self.read_early):
                _copy_first(word, self.out, self.lane)
            cute.arch.mbarrier_wait(self.bar(0), 0)
            if cutlass.const_expr(not self.read_early):
                _copy_first(word, self.out, self.lane)
        _cluster_sync()


class DsmemReleasedAtClusterScope(_DsmemHandoff):
    """The arrive releases the store at cluster scope; CTA 1 reads the word after its wait.
    warpspin: verified."""
    rules = ("dsmem.release-scope", "dsmem.data")
    expect = "verified"


class DsmemReleasedAtCtaScope(_DsmemHandoff):
    """The arrive on CTA 1's barrier releases at CTA scope (the DSL's default): the reader in CTA 1
    is not ordered after the store (PTX 8.5 scopes). warpspin: scope at the arrive."""
    rules = ("dsmem.release-scope",)
    expect = "scope"
    scope = "cta"


class DsmemLlvmStoreReleasedAtClusterScope(DsmemReleasedAtClusterScope):
    """DsmemReleasedAtClusterScope with the store written as `llvm.store` through the
    `map_dsmem_ptr` pointer (what ptxas gets is the same st.shared::cluster)."""
    by_llvm_store = True


class DsmemLlvmStoreReleasedAtCtaScope(DsmemReleasedAtCtaScope):
    """DsmemReleasedAtCtaScope with the store written as `llvm.store`. warpspin: scope."""
    by_llvm_store = True


class DsmemReadBeforeWait(_DsmemHandoff):
    """CTA 1 reads the word before it waits for the hand-off: nothing orders the read after
    CTA 0's store. warpspin: race at the read."""
    rules = ("dsmem.data",)
    expect = "race"
    read_early = True


class DsmemStoreBeforeClusterWait(Litmus):
    """One lane of CTA 0 stores a word into CTA 1's litmus buffer between its
    barrier.cluster.arrive.relaxed and its wait: nothing yet shows that CTA 1 is running, and a
    CTA's shared memory is its own only once it runs (CUDA: cluster.sync() before the first
    distributed shared memory access). The cluster barrier then completes and both CTAs exit
    after a second one. warpspin: cluster-lifetime at the store."""
    rules = ("dsmem.peer-running",)
    expect = "cluster-lifetime"
    warps = 1
    cluster = 2
    nbars = 1
    probes = 0

    @cute.jit
    def body(self):
        from cutlass import Int32

        cute.arch.cluster_arrive_relaxed()
        if self.rank == 0:
            with cute.arch.elect_one():
                remote = cute.arch.map_dsmem_ptr(self.buf, 1)
                cute.arch.inline_ptx(ST_CLUSTER, read_only_args=[Int32(remote.toint()),
                                                                Int32(7)])
        cute.arch.cluster_wait()
        _cluster_sync()


LITMUS += [DsmemReleasedAtClusterScope, DsmemReleasedAtCtaScope, DsmemReadBeforeWait,
           DsmemStoreBeforeClusterWait,
           DsmemLlvmStoreReleasedAtClusterScope, DsmemLlvmStoreReleasedAtCtaScope]
