"""DSMEM stores released to the peer CTA (issue: races): st.shared::cluster into a peer's shared
memory, and the scope of the arrive on that peer's barrier that hands the data over."""
import pytest

from warpspin.api import verify_kernel
from warpspin.engine.spin import lower_and_check
from warpspin.syncir import Const, Kernel, Process, check
from warpspin.syncir.interp import explore
from warpspin.syncir.ir import Elect, MBarRef, MBarrierDecl
from warpspin.syncir.ops import ClusterArrive, ClusterWait, MbarArrive, MbarInit, MbarInitFence, MbarWait
from warpspin.syncir.ops import DsmemStore
from warpspin.syncir.validate import InvalidKernel


def handoff(scope="cluster", store_cta=1, cluster_barrier_between=False):
    """CTA 0's warp stores into CTA `store_cta`'s shared memory and arrives on CTA 1's barrier
    (32 arrivals expected) with `scope`; CTA 1's warp waits for the phase."""
    init = (Elect((MbarInit(MBarRef("b"), 32),)), MbarInitFence(), ClusterArrive(relaxed=True),
            ClusterWait())
    between = (ClusterArrive(), ClusterWait()) if cluster_barrier_between else ()
    sender = (*init, DsmemStore(Const(store_cta)), *between,
              MbarArrive(MBarRef("b", cta=Const(1)), 1, scope=scope), ClusterArrive(),
              ClusterWait())
    reader = (*init, *between, MbarWait(MBarRef("b"), 0), ClusterArrive(), ClusterWait())
    return Kernel("handoff", (Process("sender", sender, cta=0, warps=(0, 1)),
                              Process("reader", reader, cta=1, warps=(0, 1))),
                  (MBarrierDecl("b", 1),), num_ctas=2)


@pytest.mark.parametrize("scope,kind", [("cluster", None), ("cta", "scope"), ("relaxed", "scope")])
def test_release_scope_after_a_dsmem_store(scope, kind):
    k = handoff(scope)
    check(k)
    out, r = explore(k), verify_kernel(k)
    got = out.violation.kind if out.violation else None
    assert got == kind
    assert (r.violations[0].kind if r.violations else None) == kind
    _, a = lower_and_check(k, timeout_s=60)
    _, b = lower_and_check(k, reduce=False, timeout_s=60)
    assert a.kind == b.kind == kind


def test_a_store_into_the_own_cta_needs_no_cluster_release():
    assert explore(handoff("cta", store_cta=0)).violation is None


def test_a_cluster_barrier_between_releases_the_stores():
    """barrier.cluster.arrive (release) + wait (acquire) order the stores for every CTA."""
    assert explore(handoff("cta", cluster_barrier_between=True)).violation is None


def test_validity():
    k = handoff()
    bad = Kernel(k.name, (Process("p", (DsmemStore(Const(2)),), cta=0, warps=(0, 1)),
                          k.processes[1]), k.mbarriers, num_ctas=2)
    with pytest.raises(InvalidKernel):
        check(bad)
    with pytest.raises(InvalidKernel):
        check(Kernel(k.name, (Process("p", (MbarArrive(MBarRef("b", cta=Const(1)), 1,
                                                       scope="gpu"),), cta=0, warps=(0, 1)),
                              k.processes[1]), k.mbarriers, num_ctas=2))


def test_a_dsmem_store_the_extractor_does_not_read_is_unsupported():
    """Two stores in one inline PTX block, or one through an address that is no mapa pointer the
    model follows: UNSUPPORTED naming the line, never a silent verdict."""
    pytest.importorskip("cutlass")
    import cutlass
    import cutlass.cute as cute
    from cutlass import Int32, Int64

    from warpspin.extract import extract
    from warpspin.frontend import fake_tensor, trace

    class TwoStores:
        def __init__(self, form):
            self.form = form

        @cute.jit
        def __call__(self, x: cute.Tensor):
            self.kernel(x).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

        @cute.kernel
        def kernel(self, x: cute.Tensor):
            @cute.struct
            class Smem:
                bar: cute.struct.MemRange[Int64, 1]
                box: cute.struct.Align[cute.struct.MemRange[Int32, 32], 16]

            storage = cutlass.memory.SmemAllocator().allocate(Smem)
            word = Int32(cute.arch.map_dsmem_ptr(storage.box.data_ptr(), 1).toint())
            if cutlass.const_expr(self.form == "two"):
                cute.arch.inline_ptx("st.shared::cluster.u32 [$0], $1; "
                                     "st.shared::cluster.u32 [$0], $1;",
                                     read_only_args=[word, x[0]])
            else:
                cute.arch.inline_ptx("st.shared::cluster.u32 [$0], $1;",
                                     read_only_args=[x[1], x[0]])

    for form in ("two", "address"):
        k = extract(trace(TwoStores(form), fake_tensor(Int32, (32,), align=16))[0])
        r = verify_kernel(k)
        assert r.verdict == "unsupported", (form, r)


def data_handoff(bug=None):
    """The hand-off with its data: CTA 0 stores word d[0] of CTA 1 (st.shared @cta(1)) beside
    its DsmemStore, and CTA 1 reads d[0] after its wait; `bug`: "read_early" reads before the
    wait, "store_late" stores after the arrive."""
    from warpspin.syncir.ir import Loc, WordRef, WordsDecl
    from warpspin.syncir.ops import SmemLoad, SmemStore
    from warpspin.syncir.ops import DATA_DEST
    L = lambda n: Loc("data_handoff.py", n)  # noqa: E731
    init = (Elect((MbarInit(MBarRef("b"), 32),)), MbarInitFence(), ClusterArrive(relaxed=True),
            ClusterWait())
    store = (DsmemStore(Const(1), L(10)), SmemStore(WordRef("d", Const(0), Const(1)),
                                                     Const(0), L(10)))
    arrive = (MbarArrive(MBarRef("b", cta=Const(1)), 1, scope="cluster"),)
    sender = (*init, *(arrive + store if bug == "store_late" else store + arrive),
              ClusterArrive(), ClusterWait())
    read, wait = (SmemLoad(DATA_DEST, WordRef("d", Const(0)), L(20)),), (MbarWait(MBarRef("b"), 0),)
    reader = (*init, *(read + wait if bug == "read_early" else wait + read), ClusterArrive(),
              ClusterWait())
    return Kernel("data_handoff", (Process("sender", sender, cta=0, warps=(0, 1)),
                                   Process("reader", reader, cta=1, warps=(0, 1))),
                  (MBarrierDecl("b", 1),), num_ctas=2,
                  words=(WordsDecl("d", 1, L(1), "box", data=True),))


@pytest.mark.parametrize("bug,kind", [(None, None), ("read_early", "race"),
                                      ("store_late", "race")])
def test_the_bytes_stored_into_a_peer_cta_are_its_shared_data(bug, kind):
    """A store into CTA 1's word is a write of CTA 1's cell: every engine orders it against the
    reader's load through the hand-off, and finds it unordered when the read comes before the
    wait or the store after the arrive."""
    from backends import assert_every_engine
    k = data_handoff(bug)
    check(k)
    assert_every_engine(k, kind)


def test_a_peer_word_outside_the_cluster_or_without_its_dsmem_store_is_invalid():
    """A peer's word is stored only right after the st.shared::cluster of its line (which
    carries the release's scope), inside the cluster, and never loaded."""
    from warpspin.syncir.ir import WordRef
    from warpspin.syncir.ops import SmemLoad, SmemStore
    k = data_handoff()
    for body in ((DsmemStore(Const(1)), SmemStore(WordRef("d", Const(0), Const(2)), Const(0))),
                 (SmemStore(WordRef("d", Const(0), Const(1)), Const(0)),),
                 (DsmemStore(Const(0)), SmemStore(WordRef("d", Const(0), Const(1)), Const(0))),
                 (SmemLoad("x", WordRef("d", Const(0), Const(1))),)):
        bad = Kernel(k.name, (Process("p", body, cta=0, warps=(0, 1)), k.processes[1]),
                     k.mbarriers, num_ctas=2, words=k.words)
        with pytest.raises(InvalidKernel):
            check(bad)


def test_a_dsmem_store_without_its_words_leaves_their_races_not_checked():
    """Without the st.shared of its cells right after it, a DSMEM store's bytes are not
    followed: the headline is INCONCLUSIVE and says so, never VERIFIED."""
    from warpspin.syncir.ops import SmemStore
    k = data_handoff()
    sender = tuple(s for s in k.processes[0].body if not isinstance(s, SmemStore))
    bare = Kernel(k.name, (Process("sender", sender, cta=0, warps=(0, 1)), k.processes[1]),
                  k.mbarriers, num_ctas=2, words=k.words)
    check(bare)
    r = verify_kernel(bare)
    assert r.verdict == "inconclusive" and "DSMEM" in r.reasons[0], r.reasons
    assert verify_kernel(k).verdict == "verified"


def test_a_store_into_a_peer_keeps_every_cta_in_the_model():
    """Regression (make fuzz): two CTAs whose only cross-CTA op is `st.shared::cluster @cta(k %
    2)` in a loop. The CTAs looked independent (R2: CTA 0 checked alone), and the reduced model
    then called the store into CTA 1 an invalid-operand that the interpreter and the plain model
    never reach. The store is not covered by R2's proof."""
    from warpspin.syncir.ir import For, Var
    from warpspin.syncir.ops import BarSync
    from warpspin.lower.reductions import independent_ctas
    body = (BarSync(), For("k", 0, 2, (DsmemStore(Var("k") % 2),)))
    k = Kernel("peer_loop", tuple(Process("p", body, cta=c, warps=(0, 1)) for c in (0, 1)),
               (MBarrierDecl("b", 1),), num_ctas=2)
    check(k)
    assert not independent_ctas(k)[0].applied
    # (no cluster wait before the store into a peer: cluster-lifetime, in every engine)
    assert explore(k).violation.kind == "cluster-lifetime"
    _, a = lower_and_check(k, timeout_s=60)
    _, b = lower_and_check(k, reduce=False, timeout_s=60)
    assert a.kind == b.kind == "cluster-lifetime"


@pytest.mark.parametrize("waited", [True, False])
def test_a_store_into_a_peer_needs_a_cluster_wait_before_it(waited):
    """Until the storing instance passed a cluster wait, nothing shows the peer is running:
    cluster-lifetime at the store, in every engine; after one, the hand-off verifies."""
    from backends import assert_every_engine
    from warpspin.syncir.ir import Loc, WordRef, WordsDecl
    from warpspin.syncir.ops import SmemStore
    init = (Elect((MbarInit(MBarRef("b"), 32),)), MbarInitFence(), ClusterArrive(relaxed=True))
    at = Loc("early.py", 7)
    store = (DsmemStore(Const(1), at), SmemStore(WordRef("d", Const(0), Const(1)), Const(0), at))
    arrive = MbarArrive(MBarRef("b", cta=Const(1)), 1, scope="cluster")
    first = (ClusterWait(), *store) if waited else (*store, ClusterWait())
    sender = (*init, *first, arrive, ClusterArrive(), ClusterWait())
    reader = (*init, ClusterWait(), MbarWait(MBarRef("b"), 0), ClusterArrive(), ClusterWait())
    k = Kernel("early", (Process("sender", sender, cta=0, warps=(0, 1)),
                         Process("reader", reader, cta=1, warps=(0, 1))),
               (MBarrierDecl("b", 1),), num_ctas=2, words=(WordsDecl("d", 1, at, data=True),))
    check(k)
    assert_every_engine(k, None if waited else "cluster-lifetime", None if waited else 7)
