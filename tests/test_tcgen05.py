"""tcgen05 and tensor memory (issue: Blackwell): tcgen05.commit as an arrive that lands later
(multicast in a cluster), TMEM allocation as a per-CTA resource (alloc blocks past 512 columns,
dealloc, the relinquished permit, what a CTA still holds at exit), in both backends; the
accumulator pipeline of a Blackwell GEMM with each way to break it; quack's SM100 GEMM
extracted with nothing unsupported."""
import os
import shutil
from dataclasses import replace

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine.spin import lower_and_check
from warpspin.syncir import Kernel, Process, check
from warpspin.syncir.interp import explore
from warpspin.syncir.ir import Elect, MBarRef, MBarrierDecl, Const, For, Loc, walk_stmts
from warpspin.syncir.ops import (MbarArrive, MbarInit, MbarInitFence, MbarWait, BarSync, ClusterArrive, ClusterWait)
from warpspin.syncir.ops import (MmaRead, Tcgen05Commit, TmemAccess, TmemAlloc, TmemDealloc, TmemLoad,
                                 TmemRelinquish, Unsupported)
from warpspin.syncir.protocols import (UMMA_BUG_EXPECT, UMMA_BUGS, UMMA_DATA_BUG_EXPECT,
                                       UMMA_DATA_BUGS, UMMA_MAINLOOP_BUG_EXPECT,
                                       UMMA_MAINLOOP_BUGS, umma_acc, umma_mainloop)


def test_accumulator_pipeline_verifies_in_both_backends():
    k = umma_acc()
    check(k)
    assert explore(k).violation is None
    r = verify_kernel(k)  # complete, no violation; the accumulator's data is not followed
    assert r.outcome == "not-checked" and "TMEM data" in r.reasons[0], r
    assert verify_kernel(k, opts=CheckOptions(properties=("deadlock",))).verdict == "verified"


@pytest.mark.parametrize("bug", UMMA_BUGS)
def test_accumulator_bug_is_reported_with_its_kind_and_line(bug):
    kind, line = UMMA_BUG_EXPECT[bug]
    r = verify_kernel(umma_acc(bug=bug))
    assert r.verdict == "violation" and r.violations[0].kind == kind, r
    if line is not None:
        assert r.violations[0].locations[0].line == line
    assert r.violations[0].replayed


@pytest.mark.parametrize("pair", [False, True], ids=["cta_group1", "cta_group2"])
@pytest.mark.parametrize("bug", (None, *UMMA_MAINLOOP_BUGS))
def test_mma_operand_reads_last_until_a_later_commit_lands(bug, pair):
    """A tcgen05.mma reads its shared-memory stage until the arrive of a tcgen05.commit issued
    after it lands: releasing the stage with a thread's arrive, or committing before the MMA,
    lets the refill land while it reads (race, at the TMA load); with cta_group::2 the same for
    the pair's other CTA, whose stage its multicast commit releases. The interpreter, SPIN
    (reduced and plain) and the happens-before engine agree."""
    from backends import kinds_in_every_backend
    k = umma_mainloop(ktiles=3, pair=pair, bug=bug)
    want, line = UMMA_MAINLOOP_BUG_EXPECT.get(bug, (None, None))
    assert kinds_in_every_backend(k) == [want] * 3
    r = verify_kernel(k)
    assert r.stats.engine == "happens-before", str(r)
    if bug is None:
        assert r.verdict == "verified", str(r)
    else:
        v = r.violations[0]
        assert v.kind == want and v.replayed, str(r)
        assert v.locations[0].line == line or (line is None and v.locations[0].line in (23, 32))


@pytest.mark.parametrize("bug", (None, *UMMA_DATA_BUGS, "dealloc-before-ld"))
def test_accumulator_data_is_checked_in_every_backend(bug):
    """The accumulator stages as a TMEM buffer: an MMA writing a stage a tcgen05.ld still
    reads (released before the wait::ld, or never waited), a load while an MMA writing it may
    run (before the acc_full wait, a commit before the MMA, a thread arrive for the commit), a
    free with a load in flight. The interpreter, SPIN (reduced and plain) and the
    happens-before engine agree; the engine decides, and the correct pipeline is VERIFIED with
    every property."""
    from backends import kinds_in_every_backend
    k = umma_acc(tiles=3, bug=bug, data=True)
    want, line = {**UMMA_DATA_BUG_EXPECT, "dealloc-before-ld": ("tmem-lifetime", 46)}.get(
        bug, (None, None))
    assert kinds_in_every_backend(k) == [want] * 3
    r = verify_kernel(k)
    assert r.stats.engine == "happens-before", str(r)
    if bug is None:
        assert r.verdict == "verified" and r.outcome == "verified", str(r)
    else:
        v = r.violations[0]
        assert (v.kind, v.locations[0].line) == (want, line) and v.replayed, str(r)


def test_an_access_whose_data_is_not_followed_keeps_tmem_data_unchecked():
    k = umma_acc(tiles=2, data=True)
    epi = k.processes[1]
    blind = replace(epi, body=tuple(
        replace(s, body=tuple(replace(x, data=False) if isinstance(x, TmemAccess) else x
                              for x in s.body)) if isinstance(s, For) else s
        for s in epi.body))
    r = verify_kernel(replace(k, processes=(k.processes[0], blind)))
    assert r.outcome == "not-checked" and "TMEM data" in r.reasons[0], r
    assert "line 37" in r.reasons[0], r.reasons


def test_data_followed_needs_a_tmem_buffer():
    """A TMEM access that says its data is followed, in a kernel that declares no TMEM buffer
    (hand-written SyncIR), is invalid IR: nothing would check the data it vouches for."""
    from warpspin.syncir import validate
    k = umma_acc(tiles=2)
    mma = k.processes[0]
    claims = replace(mma, body=tuple(
        replace(s, body=tuple(replace(x, body=tuple(replace(y, data=True) if isinstance(
            y, TmemAccess) else y for y in x.body)) if hasattr(x, "body") and not isinstance(
            x, For) else x for x in s.body)) if isinstance(s, For) else s for s in mma.body))
    assert claims != mma
    problems = validate(replace(k, processes=(claims, *k.processes[1:])))
    assert any("no TMEM buffer" in p.message for p in problems), problems
    assert not validate(umma_acc(tiles=2, data=True))


@pytest.mark.parametrize("bug", (None, "no-dealloc", "commit-wrong-stage", "over-alloc"))
def test_plain_encoding_agrees(bug):
    k = umma_acc(tiles=2, bug=bug)
    _, a = lower_and_check(k, timeout_s=120)
    _, b = lower_and_check(k, reduce=False, timeout_s=120)
    assert a.kind == b.kind


def _one_warp(body, bars=(("b", 1),)):
    init = Elect(tuple(MbarInit(MBarRef(n), c) for n, c in bars) + (MbarInitFence(),))
    return Kernel("t", (Process("w", (init, BarSync(), *body)),),
                  tuple(MBarrierDecl(n) for n, _ in bars))


def test_a_commit_arrives_once_per_thread_later():
    """An elected lane's commit completes the phase of a count-1 barrier, but only in a later
    step: the wait after it may run before or after the arrive lands (never blocked for good)."""
    k = _one_warp((Elect((Tcgen05Commit(MBarRef("b")),)), MbarWait(MBarRef("b"), 0)))
    assert explore(k).violation is None
    assert verify_kernel(k).verdict == "verified"
    twice = _one_warp((Elect((Tcgen05Commit(MBarRef("b")),)), MbarWait(MBarRef("b"), 0),
                       MbarWait(MBarRef("b"), 1)))
    assert verify_kernel(twice).violations[0].kind == "deadlock"


def test_alloc_blocks_while_the_columns_are_held():
    k = _one_warp((TmemAlloc(Const(512)), TmemDealloc(Const(512)), TmemAlloc(Const(256)),
                   TmemDealloc(Const(256))))
    assert verify_kernel(k).verdict == "verified"
    held = _one_warp((TmemAlloc(Const(256)), TmemAlloc(Const(512))))
    r = verify_kernel(held)
    assert r.violations[0].kind == "deadlock"
    assert "tensor memory (256 of 512 columns held" in r.violations[0].blocked[0].barrier


@pytest.mark.parametrize("cols", (0, 16, 96, 1024))
def test_column_count_must_be_a_power_of_two_in_range(cols):
    r = verify_kernel(_one_warp((TmemAlloc(Const(cols)),)))
    assert r.violations[0].kind == "invalid-operand"


def test_alloc_by_a_lane_subset_is_unsupported():
    r = verify_kernel(_one_warp((Elect((TmemAlloc(Const(128)),)),)))
    assert r.verdict == "unsupported" and "whole warp" in r.reasons[0]


def test_tmem_is_per_cta_and_checked_at_the_last_exit():
    """Another warp may free what one warp allocated; only when the CTA's last threads exit
    holding columns is it tmem-lifetime."""
    init = Elect((MbarInit(MBarRef("b"), 1), MbarInitFence()))
    owner = Process("owner", (init, BarSync(), TmemAlloc(Const(128)),
                              Elect((Tcgen05Commit(MBarRef("b")),))))
    freer = Process("freer", (BarSync(), MbarWait(MBarRef("b"), 0), TmemDealloc(Const(128))),
                    warps=(1, 2))
    k = Kernel("t", (owner, freer), (MBarrierDecl("b"),))
    assert verify_kernel(k).verdict == "verified"
    waits = Process("owner", owner.body + (MbarWait(MBarRef("b"), 0),))
    leak = Kernel("t", (waits, Process("freer", (BarSync(),), warps=(1, 2))), (MBarrierDecl("b"),))
    assert verify_kernel(leak).violations[0].kind == "tmem-lifetime"


def test_an_exit_with_no_line_is_reported_at_the_alloc():
    """The last threads to exit are a warp with no code (its exit has no source line): the
    report's line is the alloc's, not <unknown>:0; with no alloc line either, the kernel's."""
    alloc = TmemAlloc(Const(128), Loc("k.py", 7))
    k = Kernel("t", (Process("owner", (alloc,)), Process("idle", (), warps=(1, 2))),
               loc=Loc("k.py", 3))
    v = verify_kernel(k).violations[0]
    assert v.kind == "tmem-lifetime"
    assert (v.locations[0].file, v.locations[0].line) == ("k.py", 7)
    bare = Kernel("t", (Process("owner", (TmemAlloc(Const(128)),)),
                        Process("idle", (), warps=(1, 2))), loc=Loc("k.py", 3))
    v = verify_kernel(bare).violations[0]
    assert (v.locations[0].file, v.locations[0].line) == ("k.py", 3)


def _both_backends_say(k, expect: str, case: str):
    """warpspin (verify_kernel) and the reference interpreter give `expect` (a kind, or
    "verified": for warpspin, complete with TMEM data not followed) for the valid kernel `k`;
    warpspin's result."""
    check(k)
    r = verify_kernel(k)
    ref = explore(k).violation
    from warpspin.syncir.unchecked import unchecked_objects
    complete = "not-checked" if unchecked_objects(k) else "verified"
    assert r.outcome == (expect if expect != "verified" else complete), (case, r)
    assert (ref.kind if ref else "verified") == expect, case
    return r


def _access_kernel(owner_body, reader_body):
    owner = Process("owner", (Elect((MbarInit(MBarRef("b"), 1), MbarInitFence())), BarSync(),
                              *owner_body))
    return Kernel("t", (owner, Process("reader", (BarSync(), *reader_body), warps=(1, 2))),
                  (MBarrierDecl("b"),))


LD = TmemAccess("tcgen05.ld", Loc("k.py", 9))
DONE = Elect((MbarArrive(MBarRef("b"), 1),))


@pytest.mark.parametrize("case,owner,reader,expect", [
    ("ordered", (TmemAlloc(Const(128)), BarSync(), MbarWait(MBarRef("b"), 0),
                 TmemDealloc(Const(128))), (BarSync(), LD, DONE), "verified"),
    ("free-not-waited", (TmemAlloc(Const(128)), BarSync(), TmemDealloc(Const(128))),
     (BarSync(), LD), "tmem-lifetime"),
    ("before-alloc", (TmemAlloc(Const(128)), TmemDealloc(Const(128))), (LD,), "tmem-lifetime"),
    ("never-allocated", (), (LD,), "tmem-lifetime"),
])
def test_a_tmem_access_needs_columns_held_in_both_backends(case, owner, reader, expect):
    r = _both_backends_say(_access_kernel(owner, reader), expect, case)
    if r.violations:
        assert (r.violations[0].locations[0].file, r.violations[0].locations[0].line) == ("k.py", 9)
        assert "tcgen05.ld" in r.violations[0].message and r.violations[0].replayed


def test_the_access_check_says_what_it_misses_with_several_allocations():
    """One allocation per CTA: holding any column is holding the accessed ones. Two allocations
    (or one in a loop, or in several warps): the verdict states what is not checked."""
    from warpspin.syncir.ops import tmem_access_checked
    once = _access_kernel((TmemAlloc(Const(128)), BarSync(), MbarWait(MBarRef("b"), 0),
                           TmemDealloc(Const(128))), (BarSync(), LD, DONE))
    twice = _access_kernel((TmemAlloc(Const(128)), TmemAlloc(Const(32)), BarSync(),
                            MbarWait(MBarRef("b"), 0), TmemDealloc(Const(128)),
                            TmemDealloc(Const(32))), (BarSync(), LD, DONE))
    assert tmem_access_checked(once, 0) and not tmem_access_checked(twice, 0)
    assert not any("TMEM columns" in why for why in verify_kernel(once).reasons)
    r = verify_kernel(twice)
    assert r.outcome == "not-checked"
    assert any("TMEM columns" in why and "allocates more than once" in why for why in r.reasons)


def test_tmem_copies_are_classified_by_their_address_spaces():
    from warpspin.extract.walker import tmem_copy
    tmem = '!cute.memref<f32, tmem, align<16>, "(128,32):(65536,1)">'
    rmem = '!cute.memref<f32, rmem, align<32>, "(32):(1)">'
    smem = '!cute.memref<f32, smem, align<16>, "(32):(1)">'
    atom = "!cute.tiled_copy<...>"
    assert tmem_copy([atom, tmem, rmem]) == "tcgen05.ld"
    assert tmem_copy([atom, rmem, tmem]) == "tcgen05.st"
    assert tmem_copy([atom, smem, tmem]) == "tcgen05.cp"
    assert tmem_copy([atom, smem, rmem]) is None and tmem_copy([atom, tmem]) is None


def test_multicast_commit_arrives_in_each_cta_of_the_mask():
    procs = []
    for cta in (0, 1):
        init = Elect((MbarInit(MBarRef("b"), 1 + cta), MbarInitFence()))
        sync = (ClusterArrive(False), ClusterWait())  # publishes both CTAs' inits
        body = (init, *sync, MbarWait(MBarRef("b"), 0))
        if cta == 0:
            body = (init, *sync, Elect((Tcgen05Commit(MBarRef("b"), multicast=Const(3)),)),
                    MbarWait(MBarRef("b"), 0))
        procs.append(Process("w", body, cta=cta))
    k = Kernel("t", tuple(procs), (MBarrierDecl("b"),), num_ctas=2)
    r = verify_kernel(k)  # CTA 1's barrier counts two arrivals: it gets one
    assert r.verdict == "violation" and r.violations[0].kind == "deadlock"
    assert explore(k).violation.kind == "deadlock"


def _pair_kernel(b0, b1, ctas=2):
    """CTAs 0 and 1 (a cta_group::2 pair): warp 0 of each runs its body, warp 1 idles."""
    procs = []
    for cta, body in enumerate((b0, b1) + ((),) * (ctas - 2)):
        procs += [Process("mma", tuple(body), cta=cta), Process("idle", (), warps=(1, 2), cta=cta)]
    return Kernel("t", tuple(procs), num_ctas=ctas)


def _pair(cls, *a, line=None):
    return cls(*a, Loc("k.py", line or 1), True)


PAIR_CASES = [
    # (case, CTA 0's warp, CTA 1's warp, expected kind, expected line)
    ("collective", [_pair(TmemAlloc, Const(128), line=5), _pair(TmemRelinquish),
                    _pair(TmemDealloc, Const(128))],
     [_pair(TmemAlloc, Const(128), line=5), _pair(TmemRelinquish), _pair(TmemDealloc, Const(128))],
     "verified", None),
    ("peer-never-allocates", [_pair(TmemAlloc, Const(128), line=5), _pair(TmemDealloc, Const(128))],
     [], "deadlock", 5),
    # the pair alloc gave CTA 1 columns too: it exits holding them (before CTA 0's free can
    # block for good)
    ("peer-exits-holding", [_pair(TmemAlloc, Const(128)), _pair(TmemDealloc, Const(128))],
     [_pair(TmemAlloc, Const(128))], "tmem-lifetime", None),
    ("other-count", [_pair(TmemAlloc, Const(128), line=5)], [_pair(TmemAlloc, Const(256), line=6)],
     "arrival-mismatch", None),
    ("alloc-meets-dealloc", [_pair(TmemAlloc, Const(128), line=5)],
     [_pair(TmemDealloc, Const(128), line=6)], "arrival-mismatch", None),
    # a 2-CTA MMA needs both CTAs' columns: CTA 1 has freed its own (one-CTA dealloc)
    ("mma-after-peer-free", [_pair(TmemAlloc, Const(128)), BarSync(),
                             TmemAccess("tcgen05.mma", Loc("k.py", 9), True)],
     [_pair(TmemAlloc, Const(128)), TmemDealloc(Const(128)), BarSync()], "tmem-lifetime", 9),
]


@pytest.mark.parametrize("case,b0,b1,expect,line", PAIR_CASES, ids=[c[0] for c in PAIR_CASES])
def test_cta_pair_tmem_ops_are_collective_in_both_backends(case, b0, b1, expect, line):
    """cta_group::2 alloc / dealloc / relinquish: one warp of each CTA of the pair issues it;
    the first waits for the peer's, the second applies it to both CTAs (docs/semantics.md)."""
    r = _both_backends_say(_pair_kernel(b0, b1), expect, case)
    if line is not None:
        assert r.violations[0].locations[0].line == line, r
    if r.violations:
        assert r.violations[0].replayed
    if case == "peer-never-allocates":
        blocked = r.violations[0].blocked[0]
        assert blocked.op == "tcgen05.alloc.cta_group::2" and "CTA 1" in blocked.barrier


def test_a_cta_pair_op_outside_a_pair_is_invalid():
    from warpspin.syncir import InvalidKernel
    k = Kernel("t", (Process("mma", (_pair(TmemAlloc, Const(128)),)),), num_ctas=1)
    with pytest.raises(InvalidKernel, match="cta_group::2"):
        check(k)


def test_quack_sm100_2cta_gemm_extracts_the_pair_model():
    """quack's SM100 GEMM with a 256-row tile and a cluster of 2 (2-CTA MMA): both CTAs'
    MMA warps allocate, relinquish and free collectively; the peer's TMA loads complete on the
    leader's full barrier; only the leader issues the 2-CTA MMA and commits to both CTAs."""
    pytest.importorskip("quack")
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from fixtures import catalog as C
    from warpspin.syncir.ops import TmaLoad
    k = C.extracted("quack.gemm_sm100.2cta")
    check(k)
    stmts = [(p.cta, s) for p in k.processes for s in walk_stmts(p.body)]
    assert not [s for _, s in stmts if isinstance(s, Unsupported)]
    for cls in (TmemAlloc, TmemRelinquish, TmemDealloc):
        assert {c for c, s in stmts if isinstance(s, cls) and s.pair} == {0, 1}, cls
    loads = [(c, s) for c, s in stmts if isinstance(s, TmaLoad)]
    assert loads and all(s.bar.cta == (None if c == 0 else Const(0)) for c, s in loads)
    mma = [s for _, s in stmts if isinstance(s, TmemAccess) and s.what == "tcgen05.mma"]
    assert mma and all(s.pair for s in mma)
    # the accumulator stages (tCtAcc_base) are a TMEM buffer the pair's MMA writes in both CTAs
    # and each CTA's epilogue reads: every TMEM access's data is followed
    assert [(b.stages, b.label) for b in k.buffers if b.space == "tmem"] == [(2, "tCtAcc_base")]
    assert all(s.data for _, s in stmts if isinstance(s, TmemAccess))
    reads = [s for _, s in stmts if isinstance(s, MmaRead)]
    assert reads and all(s.pair and "tmem0" in {b for b, _ in s.reads} for s in reads)
    commits = [s for _, s in stmts if isinstance(s, Tcgen05Commit)]
    assert commits and all(s.multicast == Const(3) for s in commits)


def test_quack_sm100_gemm_extracts_with_nothing_unsupported():
    """quack's SM100 GEMM through the library's own compile: the TMEM allocator's alloc,
    relinquish and free, the MMA warp's commits to the A/B pipeline's empty barriers and the
    accumulator pipeline's full barriers; the tcgen05 MMA's reads of the stages of sA and sB
    and of its accumulator's stage (tCtAcc_base, a TMEM buffer of 2 stages), the epilogue's
    tcgen05.ld of the accumulator stage. (Its complete search, 5.7 M states, is
    test_quack_sm100_gemm_verified.)"""
    pytest.importorskip("quack")
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from fixtures import catalog as C
    k = C.extracted("quack.gemm_sm100")
    ops = [(type(s).__name__, os.path.basename(s.loc.file), s.loc.line)
           for p in k.processes for s in walk_stmts(p.body)]
    assert not [o for o in ops if o[0] == "Unsupported"], ops
    for want in (("TmemAlloc", "gemm_sm100.py", 1862), ("TmemRelinquish", "gemm_sm100.py", 2028),
                 ("TmemDealloc", "gemm_sm100.py", 2030), ("Tcgen05Commit", "gemm_sm100.py", 2317),
                 ("Tcgen05Commit", "pipeline.py", 105), ("TmemAccess", "gemm_sm100.py", 2314),
                 ("TmemAccess", "gemm_sm100.py", 2348)):
        assert want in ops, want
    # the MMA's operands are staged reads of sA/sB (k-block and stage fixed in one slice)
    reads = [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, MmaRead)]
    assert reads and {b for r in reads for b, _ in r.reads} == {"buf1", "buf2", "tmem0"}, reads
    assert not any(u.what in ("sA", "sB") for u in k.unchecked), k.unchecked
    assert [(b.name, b.stages, b.label) for b in k.buffers if b.space == "tmem"] == \
        [("tmem0", 2, "tCtAcc_base")]
    accesses = [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, TmemAccess)]
    assert accesses and all(s.data for s in accesses)
    loads = [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, TmemLoad)]
    assert loads and {s.reads[0][0] for s in loads} == {"tmem0"}
    commits = [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, Tcgen05Commit)]
    assert all(s.multicast is None for s in commits)
    check(k)


@pytest.mark.skipif(shutil.which("spin") is None, reason="SPIN is not installed")
def test_quack_sm100_gemm_verified():
    """quack's 1-CTA SM100 GEMM (the catalog's configuration) through the library's own compile,
    with the default engine (the happens-before engine decides it; SPIN alone needs 5,737,809
    states for deadlock only, about 4 minutes on one core, hence the generous limits): VERIFIED
    for deadlock alone, and with every property."""
    pytest.importorskip("quack")
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from fixtures import catalog as C
    from warpspin.api import CheckOptions
    k = C.extracted("quack.gemm_sm100")
    r = verify_kernel(k, opts=CheckOptions(timeout_s=1200, memory_mb=4096, jobs=1,
                                           properties=("deadlock",)))
    assert r.verdict == "verified", str(r)
    # with races asked for too (the happens-before engine): the MMA's operands sA/sB and its
    # accumulator stages in TMEM (tCtAcc_base) are followed
    r = verify_kernel(k, opts=CheckOptions(timeout_s=1200))
    from verdicts import verified_but_global_memory
    assert verified_but_global_memory(r), str(r)


MMA_ASM = """{
    .reg .pred leader_thread;
    .reg .b32 tmem_acc;
    elect.sync _|leader_thread, -1;
    mov.b32 tmem_acc, $3;
    mov.b64 {lo, hi}, desc_0;
    add.s32 lo, lo, -2048;
    setp.ne.b32 p, $2, 0;
    @leader_thread tcgen05.mma.cta_group::1.kind::f16 [tmem_acc], [tmem_a + 0x8], desc_b, idesc, p;
    .reg .pred P1;
    LAB_WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 P1, [$4], $5, 10000000;
    @P1 bra DONE;
    bra LAB_WAIT;
    DONE:
    @leader_thread tcgen05.mma.cta_group::1.kind::f16 [tmem_acc], desc_a, desc_b, idesc, 1;
}"""


def test_inline_mma_ptx_is_read_only_in_its_exact_form():
    """flash-attn-4's inline tcgen05.mma blocks are no steps, and their spin loop on an operand
    barrier is a wait; anything else in them (a store, a broken loop, two CTAs) stays
    Unsupported."""
    from warpspin.extract.walker import tcgen05_mma_asm
    assert tcgen05_mma_asm(MMA_ASM) == [(4, 5)]
    assert tcgen05_mma_asm(MMA_ASM.replace("    bra LAB_WAIT;\n", "")) is None
    assert tcgen05_mma_asm(MMA_ASM.replace("@P1 bra DONE", "@P1 bra LAB_WAIT")) is None
    assert tcgen05_mma_asm(MMA_ASM.replace("mov.b32 tmem_acc, $3;", "st.shared.b32 [$3], 1;")) is None
    assert tcgen05_mma_asm(MMA_ASM.replace("cta_group::1", "cta_group::2")) is None
    assert tcgen05_mma_asm("{ mov.b32 a, $0; }") is None  # no MMA: not this form


def test_a_branch_not_followed_with_only_tmem_accesses_is_taken_to_run():
    """flash-attn-4's correction warps rescale O in tensor memory under a vote.sync of data: an
    access only checks, so the extractor takes such a branch to run (both arms); a branch that
    also synchronizes stays Unsupported."""
    from warpspin.extract.cleanup import finish
    from warpspin.extract.values import opaque
    from warpspin.syncir.ir import If
    vote = opaque("nvvm.vote.sync@f.py:3")
    body = finish([If(vote.eq(0), (TmemAccess("tcgen05.ld", Loc("f.py", 5)),),
                      (TmemAccess("tcgen05.st", Loc("f.py", 6)),), loc=Loc("f.py", 4))])
    assert [s.what for s in body] == ["tcgen05.ld"]  # both arms run, adjacent: one check
    mixed = finish([If(vote.eq(0), (TmemAccess("tcgen05.ld", Loc("f.py", 5)),
                                    MbarWait(MBarRef("b"), 0, Loc("f.py", 6))), (),
                       loc=Loc("f.py", 4))])
    assert isinstance(mixed[0], Unsupported) and "vote.sync" in mixed[0].what


def test_adjacent_tmem_accesses_are_one_check():
    """Two accesses with nothing between them check the same state (the first can run just
    before the second): the extractor keeps the first; an access after another statement stays."""
    from warpspin.extract.cleanup import finish
    st = [TmemAccess("tcgen05.st", Loc("f.py", n)) for n in (5, 6, 7)]
    wait = MbarWait(MBarRef("b"), 0, Loc("f.py", 8))
    body = finish([*st, wait, TmemAccess("tcgen05.ld", Loc("f.py", 9))])
    assert [(type(s).__name__, s.loc.line) for s in body] == [
        ("TmemAccess", 5), ("MbarWait", 8), ("TmemAccess", 9)]
