"""Reductions fail closed: each applies only when every op allows it (its facts list it, its
footprint is known and of the proven shape); otherwise it is off and the model says which op
refused it (docs/semantics.md, "Reductions")."""
from dataclasses import dataclass
from typing import ClassVar

import pytest

from warpspin.lower import lower
from warpspin.syncir import (Elect, Kernel, Loc, MBarRef, MBarrierDecl, MbarArrive,
                             MbarInit, MbarInitFence, MbarWait, BarSync, Process, Var, For, Assign)
from warpspin.syncir.ops import (ALL, OPS, SYMMETRIC, Access, BarSyncResume, Footprint, SyncOp,
                                 sync_op)
from warpspin.syncir.rules import Rule

LOC = Loc("dummy.py", 42)


def kernel_with(extra) -> Kernel:
    """2 identical CTAs; a producer that inits, and 2 identical consumer warps with a
    wait -> release block (fusable), each also executing `extra`."""
    b, c = MBarRef("b"), MBarRef("c")
    prod = (Elect((MbarInit(b, 1), MbarInit(c, 2), MbarInitFence())), BarSync(),
            For("k", 0, 2, (Elect((MbarArrive(b, 1),)), MbarWait(c, Var("ph")),
                            Assign("ph", Var("ph") ^ 1))))
    cons = (BarSync(), For("k", 0, 2, (MbarWait(b, Var("ph")), Elect((MbarArrive(c, 1),)),
                                       Assign("ph", Var("ph") ^ 1))), extra)
    procs = []
    for cta in range(2):
        procs += [Process("producer", prod, cta=cta, warps=(0, 1)),
                  Process("consumer", cons, cta=cta, warps=(1, 3), instances=2)]
    return Kernel("k", tuple(procs), (MBarrierDecl("b"), MBarrierDecl("c")), num_ctas=2)


@pytest.fixture
def op_class():
    """Registers a test op class for the duration of one test."""
    made = []

    def make(name, footprint, facts):
        @sync_op
        @dataclass(frozen=True)
        class Dummy(SyncOp):
            loc: Loc = LOC
            mnemonic: ClassVar[str] = name
            proven: ClassVar[frozenset] = frozenset(facts)

            def footprint(self, k):
                return footprint

            def rule(self, c):
                return Rule([])
        made.append(name)
        return Dummy

    yield make
    for name in made:
        OPS.pop(name)


def test_control_every_reduction_applies():
    m = lower(kernel_with(Elect((MbarArrive(MBarRef("c"), 1),))))
    names = {r.split(":")[0] for r in m.reductions}
    assert names == {"independent-ctas", "symmetric-instances", "narrow-types",
                     "dead-variable-reset", "R6"}, m.reductions
    assert m.refused == ()


def test_unknown_footprint_switches_every_reduction_off(op_class):
    Dummy = op_class("dummy.unknown", None, ALL)
    m = lower(kernel_with(Dummy()))
    assert m.reductions == ()
    refused = {d.reduction: d.why for d in m.refused}
    assert set(refused) == {"independent-ctas", "symmetric-instances", "narrow-types",
                            "dead-variable-reset", "wait-release-fusion",
                            "merged-completions", "early-issue", "failed-test-blocks",
                            "resume-fusion", "load-runs"}
    for why in refused.values():
        assert "dummy.unknown" in why and "dummy.py:42" in why and "footprint" in why


def test_op_without_facts_switches_every_reduction_off(op_class):
    Dummy = op_class("dummy.unproven", Footprint((Access("mbarrier", "read", "cta"),)), ())
    m = lower(kernel_with(Dummy()))
    assert m.reductions == ()
    assert all("dummy.unproven" in d.why and "not covered" in d.why for d in m.refused)


def test_cluster_scope_footprint_switches_independent_ctas_off(op_class):
    Dummy = op_class("dummy.cluster", Footprint((Access("mbarrier", "rw", "cluster"),)), ALL)
    m = lower(kernel_with(Dummy()))
    names = {r.split(":")[0] for r in m.reductions}
    assert "independent-ctas" not in names and "symmetric-instances" in names
    (d,) = [d for d in m.refused if d.reduction == "independent-ctas"]
    assert "dummy.cluster" in d.why and "shape" in d.why


def test_identity_write_switches_symmetry_off(op_class):
    Dummy = op_class("dummy.owner", Footprint((Access("mbarrier", "write", "cta",
                                                      identity="write"),)), ALL)
    m = lower(kernel_with(Dummy()))
    names = {r.split(":")[0] for r in m.reductions}
    assert SYMMETRIC not in names and "independent-ctas" in names
    (d,) = [d for d in m.refused if d.reduction == SYMMETRIC]
    assert "dummy.owner" in d.why


def test_refusal_is_in_the_verdict(op_class):
    from warpspin.api import verify_kernel
    Dummy = op_class("dummy.unknown2", None, ALL)
    r = verify_kernel(kernel_with(Dummy()))
    assert any("dummy.unknown2" in x for x in r.config["reductions_refused"])
    from warpspin.report.render import render_text
    assert r.verdict == "verified"
    assert "reduction not applied: independent-ctas" in render_text(r, explain=True)


# ----------------------------------------------------------------------------- R7

def copy_kernel(expect_bytes: int, extra=()) -> Kernel:
    """`loader` expects `expect_bytes` on `full`, copies 16 bytes into it and waits for the
    phase; `helper` copies 16 bytes into the same barrier from another site, then exits. The two
    copy sites complete with the same rule (R7 merges their counters). With 32 expected bytes the
    loader's wait covers both copies; with 16 it may pass while the helper's copy is still in
    flight, and the CTA's last threads exit under it: pending-at-exit."""
    from warpspin.syncir import MbarArriveExpectTx, TmaLoad
    full = MBarRef("full")
    loader = (Elect((MbarInit(full, 1), MbarInitFence())), BarSync(), *extra,
              Elect((MbarArriveExpectTx(full, expect_bytes), TmaLoad(full, 16))),
              MbarWait(full, 0))
    helper = (BarSync(), *extra, Elect((TmaLoad(full, 16),)))
    return Kernel("copies", (Process("loader", loader, warps=(0, 1)),
                             Process("helper", helper, warps=(1, 2))), (MBarrierDecl("full"),))


def _check(kernel, reduce=True):
    from warpspin.api import CheckOptions, verify_kernel
    return verify_kernel(kernel, opts=CheckOptions(reduce=reduce, timeout_s=120, engine="spin"))


def test_merged_completions_listed_and_verdicts_agree_with_plain():
    m = lower(copy_kernel(32))
    assert any(r.startswith("R7") and "2 copy sites in 1 class" in r for r in m.reductions)
    assert m.text.count('printf("WS|C|') == 1  # one completion step for the class
    for expect, verdict in ((32, "verified"), (16, "violation")):
        red, plain = _check(copy_kernel(expect)), _check(copy_kernel(expect), reduce=False)
        assert red.verdict == plain.verdict == verdict, (red, plain)
        if verdict == "violation":
            assert red.violations[0].kind == plain.violations[0].kind == "pending-at-exit"


def test_merged_completions_fewer_states(op_class):
    """The same kernel with an op that does not list R7 in its facts: counters per site."""
    fp = Footprint((Access("mbarrier", "read", "cta"),))
    merged = _check(copy_kernel(32, (op_class("dummy.merge", fp, ALL)(),)))
    Unproven = op_class("dummy.nomerge", fp, ALL - {"merged-completions", "early-issue", "failed-test-blocks"})
    split = _check(copy_kernel(32, (Unproven(),)))
    assert merged.verdict == split.verdict == "verified"
    assert "merged-completions" in str(split.config["reductions_refused"])
    assert merged.stats.states < split.stats.states, (merged.stats.states, split.stats.states)


def test_replay_resolves_a_completion_named_by_its_class():
    """A trail of the merged model names a class's completion by one site; the reference
    interpreter replays it as the completion of a site of the class that has a copy in flight."""
    from warpspin.syncir.interp import Machine, replay
    from warpspin.syncir.trace import Complete, Step
    k = copy_kernel(16)
    m = Machine(k)
    (loader_copy,) = [pc for pc, ins in m.layout.flat[0].ops() if type(ins.stmt).__name__ == "TmaLoad"]
    (helper_copy,) = [pc for pc, ins in m.layout.flat[1].ops() if type(ins.stmt).__name__ == "TmaLoad"]
    assert m.layout.completion_class((0, loader_copy)) == ((0, loader_copy), (1, helper_copy))
    pcs0 = [pc for pc, _ in m.layout.flat[0].ops()]
    pcs1 = [pc for pc, _ in m.layout.flat[1].ops()]
    # the helper copies first; its completion is named by the loader's site, which has none in flight
    arrive = [Step(0, 0, pc) for pc in pcs0[:3]] + [Step(1, 0, pcs1[0])]
    resume = [Step(0, 0, pcs0[3]), Step(1, 0, pcs1[1])]
    events = arrive + resume + [Step(1, 0, helper_copy), Complete(0, loader_copy, 0, 0)]
    rp = replay(k, events)
    assert rp.error == "trace ends without a violation", rp.error  # every step was enabled
    wrong_class = Complete(1, helper_copy + 1, 0, 0)
    assert replay(k, events[:-1] + [wrong_class]).error.startswith("step")


# ----------------------------------------------------------------------------- R8

def test_early_issue_listed_fewer_states_and_verdicts_agree(op_class):
    """The loader's and the helper's copies are issued with the step before them once `full` is
    published; a kernel with an op that does not list R8 keeps them as steps of their own."""
    fp = Footprint((Access("mbarrier", "read", "cta"),))
    m = lower(copy_kernel(32))
    assert any(r.startswith("R8: early issue of 2 ") for r in m.reductions), m.reductions
    early = _check(copy_kernel(32, (op_class("dummy.early", fp, ALL)(),)))
    late = _check(copy_kernel(32, (op_class("dummy.late", fp, ALL - {"early-issue"})(),)))
    assert early.verdict == late.verdict == "verified"
    assert "early-issue" in str(late.config["reductions_refused"])
    assert early.stats.states < late.stats.states, (early.stats.states, late.stats.states)


def unpublished_copy_kernel(publish: bool) -> Kernel:
    """The helper copies into `full` right after the loader's init (and fence) without a barrier
    in between unless `publish`: uninitialized-barrier, which the early issue must not hide (its
    condition is false until the init is published)."""
    from warpspin.syncir import MbarArriveExpectTx, TmaLoad
    full = MBarRef("full")
    sync = (BarSync(),) if publish else ()
    loader = (Elect((MbarInit(full, 1), MbarInitFence())), BarSync(),
              Elect((MbarArriveExpectTx(full, 32), TmaLoad(full, 16))), MbarWait(full, 0))
    helper = (*sync, Elect((TmaLoad(full, 16),)), *(() if publish else (BarSync(),)))
    return Kernel("unpublished", (Process("loader", loader, warps=(0, 1)),
                                  Process("helper", helper, warps=(1, 2))), (MBarrierDecl("full"),))


@pytest.mark.parametrize("publish", [True, False])
def test_early_issue_keeps_use_before_publication(publish):
    red, plain = _check(unpublished_copy_kernel(publish)), _check(unpublished_copy_kernel(publish),
                                                                 reduce=False)
    assert red.verdict == plain.verdict == ("verified" if publish else "violation")
    if not publish:
        assert red.violations[0].kind == plain.violations[0].kind == "uninitialized-barrier"


def cluster_reduction_kernel(peer_waits: bool = True) -> Kernel:
    """Two CTAs, two warps each (quack's cluster reduction): warp 0 arms its CTA's `full` for 4
    copies of 8 bytes; every warp copies 8 bytes into each CTA's `full` (st.async of bytes),
    then waits. Without `peer_waits` CTA 1's warps exit without waiting: a copy into it may
    land after its last thread exited (cluster-lifetime at the copy, or pending-at-exit at the
    exit, whichever comes first)."""
    from warpspin.syncir import ClusterArrive, ClusterWait, Const, MbarArriveExpectTx, TmaLoad
    procs = []
    for cta in (0, 1):
        wait = (MbarWait(MBarRef("full"), 0),) if peer_waits or cta == 0 else ()
        copies = tuple(Elect((TmaLoad(MBarRef("full", 0, Const(t)), 8),)) for t in (0, 1))
        arm = (Elect((MbarInit(MBarRef("full"), 1), MbarInitFence())),)
        procs.append(Process(f"w0_{cta}", (*arm, ClusterArrive(), ClusterWait(),
                                            Elect((MbarArriveExpectTx(MBarRef("full"), 32),)),
                                            *copies, *wait), cta=cta, warps=(0, 1)))
        procs.append(Process(f"w1_{cta}", (ClusterArrive(), ClusterWait(), *copies, *wait),
                             cta=cta, warps=(1, 2)))
    return Kernel("cluster_reduction", tuple(procs), (MBarrierDecl("full"),), num_ctas=2)


def test_early_issue_into_a_peer_cta():
    """Copies into the peer CTA are issued early too while it has threads left: fewer states,
    the same verdict; a peer that may exit first is a violation in both models (the kind may be
    either of the two that name the copy into an exited CTA)."""
    m = lower(cluster_reduction_kernel())
    assert any(r.startswith("R8: early issue of 8 ") for r in m.reductions), m.reductions
    red, plain = _check(cluster_reduction_kernel()), _check(cluster_reduction_kernel(),
                                                            reduce=False)
    assert red.verdict == plain.verdict == "verified"
    assert red.stats.states < plain.stats.states, (red.stats.states, plain.stats.states)
    red, plain = _check(cluster_reduction_kernel(False)), _check(cluster_reduction_kernel(False),
                                                                 reduce=False)
    assert red.verdict == plain.verdict == "violation"
    assert {red.violations[0].kind, plain.violations[0].kind} <= {"cluster-lifetime",
                                                                   "pending-at-exit"}
    assert red.violations[0].replayed


# ----------------------------------------------------------------------------- R9

def try_wait_kernel(consumer_arrives: bool, extra=()) -> Kernel:
    """A two-stage ring in the pipelines' shape: the consumer tests the next stage's phase
    (`consumer_try_wait`) and waits on it only if the test failed (`consumer_wait`). Without the
    consumer's release the producer deadlocks on `empty`."""
    from warpspin.syncir import If, MbarTestWait
    full, empty = MBarRef("full", Var("s")), MBarRef("empty", Var("s"))
    prod = (Elect((MbarInit(MBarRef("full", 0), 1), MbarInit(MBarRef("full", 1), 1),
                   MbarInit(MBarRef("empty", 0), 1), MbarInit(MBarRef("empty", 1), 1),
                   MbarInitFence())), BarSync(), *extra,
            For("k", 0, 4, (MbarWait(empty, Var("ph") ^ 1), Elect((MbarArrive(full, 1),)),
                            Assign("s", Var("s") ^ 1),
                            Assign("ph", Var("ph") ^ Var("s").eq(0)))))
    release = (Elect((MbarArrive(empty, 1),)),) if consumer_arrives else ()
    cons = (BarSync(), *extra, MbarTestWait("t", full, Var("ph")),
            For("k", 0, 4, (If(Var("t").eq(0), (MbarWait(full, Var("ph")),)), *release,
                            Assign("s", Var("s") ^ 1),
                            Assign("ph", Var("ph") ^ Var("s").eq(0)),
                            If((Var("k") + 1).lt(4), (MbarTestWait("t", full, Var("ph")),),
                               (Assign("t", 1),)))))
    return Kernel("trywait", (Process("producer", prod, warps=(0, 1)),
                              Process("consumer", cons, warps=(1, 2))),
                  (MBarrierDecl("full", 2), MBarrierDecl("empty", 2)))


def test_failed_test_blocks_listed_fewer_states_and_verdicts_agree(op_class):
    fp = Footprint((Access("mbarrier", "read", "cta"),))
    m = lower(try_wait_kernel(True))
    assert any(r.startswith("R9: 2 test-wait") for r in m.reductions), m.reductions
    blocked = _check(try_wait_kernel(True, (op_class("dummy.r9", fp, ALL)(),)))
    failing = _check(try_wait_kernel(True, (op_class("dummy.nor9", fp,
                                                     ALL - {"failed-test-blocks"})(),)))
    assert blocked.verdict == failing.verdict == _check(try_wait_kernel(True), False).verdict \
        == "verified"
    assert "failed-test-blocks" in str(failing.config["reductions_refused"])
    assert blocked.stats.states < failing.stats.states, (blocked.stats.states,
                                                         failing.stats.states)


def test_failed_test_blocks_deadlock_replays_with_the_failed_test():
    """The reduced model's deadlock leaves the consumer at its test; the trail is completed with
    the failing test (the consumer then blocks in its wait) and replays."""
    red, plain = _check(try_wait_kernel(False)), _check(try_wait_kernel(False), reduce=False)
    assert red.verdict == plain.verdict == "violation"
    assert red.violations[0].kind == plain.violations[0].kind == "deadlock"
    assert red.violations[0].replayed
    assert len(red.violations[0].trace) == len(plain.violations[0].trace)


def epilogue_kernel(rounds: int, extra=()) -> Kernel:
    """An epilogue in quack's shape: a warp group (a leader warp and 3 identical warps) meets
    on named barrier 1 four times per tile, then each warp releases the producer's stage; the
    producer waits for the four releases. With `rounds` < 4 for the leader, the other warps wait
    on barrier 1 for ever, and the producer for the leader's missing round: deadlock."""
    done = MBarRef("done")
    lead = (Elect((MbarInit(done, 4), MbarInitFence())), BarSync(), *extra,
            *[BarSync(1, 128) for _ in range(rounds)], Elect((MbarArrive(done, 1),)))
    warps = (BarSync(), *extra, *[BarSync(1, 128) for _ in range(4)],
             Elect((MbarArrive(done, 1),)))
    prod = (BarSync(), MbarWait(done, 0))
    return Kernel("epilogue", (Process("lead", lead, warps=(0, 1)),
                               Process("warps", warps, warps=(1, 4), instances=3),
                               Process("producer", prod, warps=(4, 5))),
                  (MBarrierDecl("done"),))


def test_resume_fusion_listed_fewer_states_and_verdicts_agree(op_class):
    fp = Footprint((Access("mbarrier", "read", "cta"),))
    m = lower(epilogue_kernel(4))
    assert any(r.startswith("R10: ") for r in m.reductions), m.reductions
    fused = _check(epilogue_kernel(4, (op_class("dummy.r10", fp, ALL)(),)))
    apart = _check(epilogue_kernel(4, (op_class("dummy.nor10", fp, ALL - {"resume-fusion"})(),)))
    assert fused.verdict == apart.verdict == _check(epilogue_kernel(4), False).verdict \
        == "verified"
    assert "resume-fusion" in str(apart.config["reductions_refused"])
    assert fused.stats.states < apart.stats.states, (fused.stats.states, apart.stats.states)


def test_resume_fusion_deadlock_agrees_with_plain_and_replays():
    red, plain = _check(epilogue_kernel(3)), _check(epilogue_kernel(3), reduce=False)
    assert red.verdict == plain.verdict == "violation"
    # the deadlock is classified: the producer waits for arrivals that can no longer come
    assert red.violations[0].kind == plain.violations[0].kind == "arrival-mismatch"
    assert red.violations[0].replayed


def test_resume_fusion_not_taken_into_a_monitored_pc():
    """A resume followed by an R6 fused wait keeps its own step (R6's monitor counts the
    instances resting at that wait); a resume followed by a plain arrive is fused."""
    b, c = MBarRef("b"), MBarRef("c")
    cons = (BarSync(), MbarWait(b, 0), Elect((MbarArrive(c, 1),)))
    prod = (Elect((MbarInit(b, 1), MbarInit(c, 1), MbarInitFence())), BarSync(),
            Elect((MbarArrive(b, 1),)), MbarWait(c, 0))
    m = lower(Kernel("k", (Process("producer", prod, warps=(0, 1)),
                           Process("consumer", cons, warps=(1, 2))),
                     (MBarrierDecl("b"), MBarrierDecl("c"))))
    def resume_pc(pi):
        (r,) = [pc for pc, ins in m.flat[pi].ops() if isinstance(ins.stmt, BarSyncResume)]
        return r
    waits = {(pi, w) for pi, w, _ in m.fused}
    resumed = {(pi, r): n for pi, r, n in m.resumed}
    assert (1, resume_pc(1) + 1) in waits, m.fused   # the consumer's wait after its resume
    assert (1, resume_pc(1)) not in resumed
    assert all((pi, n) not in waits for (pi, _), n in resumed.items())
    n = resumed[(0, resume_pc(0))]                   # the producer's resume takes its arrive
    assert type(m.flat[0].code[n].stmt).__name__ == "MbarArrive"


def words_kernel(late_store: bool, extra=(), index3=None) -> Kernel:
    """A scheduler hands a tile over in four shared words (quack's m, n, batch, valid) and
    arrives; three identical consumers wait and load the four words back to back (one R11 run).
    With `late_store` the scheduler stores the last word again after its arrive: a race with the
    run's last load only."""
    from warpspin.syncir import Const, SmemLoad, SmemStore, WordRef, WordsDecl
    full = MBarRef("full")
    words = [WordRef("tile", Const(i)) for i in range(4)]
    if index3 is not None:
        words[3] = WordRef("tile", index3)
    prod = (Elect((MbarInit(full, 3), MbarInitFence())), BarSync(),
            *[SmemStore(WordRef("tile", Const(i)), Const(i + 1)) for i in range(4)],
            Elect((MbarArrive(full, 3),)),
            *((SmemStore(WordRef("tile", Const(3)), Const(9)),) if late_store else ()))
    cons = (BarSync(), *extra, MbarWait(full, 0), *[SmemLoad(f"t{i}", w) for i, w in enumerate(words)])
    return Kernel("words", (Process("scheduler", prod, warps=(0, 1)),
                            Process("consumer", cons, warps=(1, 4), instances=3)),
                  (MBarrierDecl("full"),), words=(WordsDecl("tile", 4),))


def test_load_runs_listed_fewer_states_and_verdicts_agree(op_class):
    fp = Footprint((Access("mbarrier", "read", "cta"),))
    m = lower(words_kernel(False))
    assert any(r.startswith("R11: 1 run(s)") and "4 loads" in r for r in m.reductions), \
        m.reductions
    runs = _check(words_kernel(False, (op_class("dummy.r11", fp, ALL)(),)))
    apart = _check(words_kernel(False, (op_class("dummy.nor11", fp, ALL - {"load-runs"})(),)))
    assert runs.verdict == apart.verdict == _check(words_kernel(False), False).verdict \
        == "verified"
    assert "load-runs" in str(apart.config["reductions_refused"])
    assert runs.stats.states < apart.stats.states, (runs.stats.states, apart.stats.states)


def test_load_runs_keep_a_race_with_a_later_load_of_the_run():
    """The late store races with the consumers' fourth load. The reduced step is the four loads
    back to back, each with its race check, so the race shows when a consumer takes its run
    while the scheduler rests at the store, and the trail replays step for step."""
    red, plain = _check(words_kernel(True)), _check(words_kernel(True), reduce=False)
    assert red.verdict == plain.verdict == "violation"
    assert red.violations[0].kind == plain.violations[0].kind == "race"
    assert red.violations[0].replayed


def test_load_run_with_an_index_out_of_bounds():
    """A load of the run whose index leaves the array is that load's invalid-operand, in both
    encodings (the race monitor does not count an instance at a word that does not exist; it
    used to index past its array: a model error)."""
    from warpspin.syncir import Param
    k = words_kernel(False, index3=Var("j"))
    k = Kernel(k.name, k.processes, k.mbarriers, params=(Param("j", 0, 4),), words=k.words)
    assert any(r.startswith("R11: 1 run(s)") and "4 loads" in r for r in lower(k).reductions)
    for reduce in (True, False):
        r = _check(k, reduce)
        assert r.verdict == "violation" and r.violations[0].kind == "invalid-operand", r
        assert r.violations[0].replayed


def grid_data_kernel(wait: bool, overlap: bool = False) -> Kernel:
    """Global data a flag hands over (a grid model): two producer CTAs store four cells each of
    one global array (an R11 run of stores), bar.sync, lane 0 adds to the flag with a release;
    the consumer CTA waits for 2 and loads all eight cells. Without `wait` its loads race with
    the stores; with `overlap` producer 1 also stores producer 0's last cell (a race of one
    store of a run with another run's)."""
    from warpspin.syncir import (Const, FlagDecl, GlobalAdd, GlobalWait, SmemLoad, SmemStore,
                                 WordRef, WordsDecl)

    def producer(c):
        cells = range(4 * c, 4 * c + 4)
        if overlap and c == 1:
            cells = (3, *cells)
        return Process(f"p{c}", (*[SmemStore(WordRef("gd", Const(i)), Const(0)) for i in cells],
                                  BarSync(), Elect((GlobalAdd("count", Const(1), "release",
                                                              "gpu"),))), cta=c)
    waits = (Elect((GlobalWait("count", ">=", Const(2), "acquire", "gpu"),)), BarSync()) \
        if wait else ()
    cons = Process("c", (*waits, *[SmemLoad("data_ld", WordRef("gd", Const(i)))
                                   for i in range(8)]), cta=2)
    return Kernel("grid_data", (producer(0), producer(1), cons), num_ctas=3, cluster_ctas=1,
                  flags=(FlagDecl("count"),),
                  words=(WordsDecl("gd", 8, label="partial", data=True, grid=True),))


@pytest.mark.parametrize("wait,overlap,expect", [(True, False, "verified"),
                                                 (False, False, "race"),
                                                 (True, True, "race")])
def test_store_runs_of_global_data_agree_with_plain_and_interpreter(wait, overlap, expect):
    """R11 takes the producers' stores of data cells as one step each (a data store changes no
    state); the verdict and kind are the plain encoding's and the interpreter's, and the reduced
    model has fewer states. The cells are one array for the grid: CTA 2 reads what CTAs 0 and
    1 store."""
    from warpspin.syncir import validate
    from warpspin.syncir.interp import explore
    k = grid_data_kernel(wait, overlap)
    assert validate(k) == []
    assert any(r.startswith("R11: ") for r in lower(k).reductions), lower(k).reductions
    red, plain = _check(k), _check(k, reduce=False)
    got = {r.outcome for r in (red, plain)}
    assert got == {expect}, (str(red), str(plain))
    ex = explore(k)
    assert (ex.violation.kind if ex.violation else "verified") == expect
    if expect == "verified":
        assert red.stats.states < plain.stats.states, (red.stats.states, plain.stats.states)
    else:
        assert red.violations[0].replayed
