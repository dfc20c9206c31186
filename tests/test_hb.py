"""The happens-before engine (engine/hb) against the reference interpreter's exhaustive search.

Wherever the engine decides (VERIFIED or a violation), the interpreter's search of every
interleaving must agree: VERIFIED iff no violation is reachable, and a violation's kind is one it
reaches. Refusing (outside the class) is always allowed; the counts are printed at the end of
the module. Protocols: random ones of every construct (protocol_gen.py), generated
well-synchronized ones and every one-edit mutant of them (hb_gen.py). Under `make test` a fixed
derandomized set runs; `make fuzz` draws fresh ones (WARPSPIN_DIFF_EXAMPLES).

Then: unit protocols whose failed condition the engine must turn into the right violation by
reordering, and the conditions' refusals.
"""
import collections
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from diffstats import write_lines
from hb_gen import (cluster_multicast, flag_protocols, flag_stages, mutants, named_pingpong, read_ring,
                    peek_ring, well_synchronized)
from protocol_gen import protocols
from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine import hb
from warpspin.engine.contract import Outcome
from warpspin.syncir import (BarSync, Const, Elect, Kernel, Loc, MBarRef, MBarrierDecl,
                             MbarArrive, MbarExpectTx, MbarInit, MbarInitFence, MbarWait, Process,
                             SmemLoad, SmemStore, TmaLoad, WordRef, WordsDecl, validate)
from warpspin.syncir import protocols as P
from warpspin.syncir.interp import replay, violation_kinds

FUZZ = bool(os.environ.get("WARPSPIN_DIFF_FUZZ"))
EXAMPLES = int(os.environ.get("WARPSPIN_DIFF_EXAMPLES", "1000" if FUZZ else "100"))
ORACLE_STATES = 100_000 if FUZZ else 30_000
STATS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


def hb_settings(n: int):
    return settings(max_examples=n, deadline=None, database=None, derandomize=not FUZZ,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    yield
    if not STATS:
        return
    lines = [f"happens-before engine vs interpreter ({'random' if FUZZ else 'derandomized'}):"]
    for name, c in sorted(STATS.items()):
        lines.append(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    write_lines(request, lines)


def agrees(k: Kernel, stats: str) -> Outcome | None:
    """The engine's verdict on `k` matches the interpreter's exhaustive search (when it decides
    and the search completes). Returns the engine's result."""
    c = STATS[stats]
    assert not validate(k), validate(k)
    r = hb.check(k, timeout_s=60)
    c[r.verdict] += 1
    if r.verdict not in ("verified", "violation"):
        assert r.verdict == "outside" and r.reasons, r
        return r
    kinds, complete = violation_kinds(k, ORACLE_STATES)
    if not complete:
        c["oracle too large"] += 1
        return r
    if r.verdict == "verified":
        assert not kinds, f"{k.name}: the engine says VERIFIED, the interpreter reaches {kinds}"
    else:
        assert r.kind in kinds, f"{k.name}: the engine reports {r.kind}, the interpreter {kinds}"
        rp = replay(k, r.events, expect_kind=r.kind)
        assert rp.ok, f"{k.name}: the engine's counterexample does not replay: {rp.error}"
    c["agreed"] += 1
    return r


@hb_settings(EXAMPLES)
@given(protocols(extra=None) | protocols(extra="buffer") | protocols(extra="cpasync")
       | protocols(extra="dsmem") | protocols(extra="tcgen05") | protocols(extra="wdata"))
def test_random_protocols_agree_with_the_interpreter(k):
    agrees(k, "random protocols")


@hb_settings(max(10, EXAMPLES // 4))
@given(well_synchronized(), st.randoms(use_true_random=False))
def test_well_synchronized_protocols_and_their_mutants_agree(k, rnd):
    """Each generated protocol is decided (its class is the engine's), VERIFIED; and a sample of
    its one-edit mutants agrees with the interpreter."""
    r = agrees(k, "well-synchronized")
    assert r.verdict == "verified", f"{k.name}: {r.verdict} {r.kind} {r.reasons}"
    ms = mutants(k)
    rnd.shuffle(ms)
    for m in ms[:6 if not FUZZ else 20]:
        if not validate(m):
            agrees(m, "one-edit mutants")


RING_MUTANTS = [P.ring(stages=2, trips=3, consumers=2), peek_ring(2, 3, 1, expect_first=True),
                named_pingpong(2, 1), cluster_multicast(2, 2), P.exchange(2),
                P.umma_mainloop(stages=2, ktiles=3), P.umma_acc(tiles=3, epi_warps=2, data=True),
                P.pingpong_epilogue(), P.shared_vector(), flag_stages((1, 0)),
                flag_stages((1, 1), data=True), read_ring()]


@pytest.mark.parametrize("k", RING_MUTANTS, ids=[k.name for k in RING_MUTANTS])
def test_every_mutant_of_a_small_protocol_agrees(k):
    """Every one-edit mutant (an op dropped, a count off by one, a parity swapped, two
    neighbours swapped) of six small protocols, not a sample."""
    assert agrees(k, "all mutants").verdict == "verified"
    for m in mutants(k):
        if not validate(m):
            agrees(m, "all mutants")


def _with_unsupported(k: Kernel) -> list[tuple[Kernel, bool]]:
    """`k` with an Unsupported, guarded by a launch value U in 0..1 (reached when U == 1, or
    never: U > 1), inserted before each top-level statement of each process in turn; with
    whether some run reaches it."""
    from dataclasses import replace
    from warpspin.syncir import If, Unsupported, Var
    from warpspin.syncir.ir import Param
    out = []
    for pi, p in enumerate(k.processes):
        for i in range(len(p.body) + 1):
            for cond, reached in ((Var("U").eq(1), True), (Var("U").gt(1), False)):
                body = p.body[:i] + (If(cond, (Unsupported("x", Loc("u.py", i)),)),) + p.body[i:]
                procs = tuple(replace(q, body=body) if j == pi else q
                              for j, q in enumerate(k.processes))
                out.append((replace(k, name=f"{k.name}~u{pi}.{i}", processes=procs,
                                    params=k.params + (Param("U", 0, 1),)), reached))
    return out


@pytest.mark.parametrize("k", RING_MUTANTS[:6] + [read_ring()],
                         ids=[k.name for k in RING_MUTANTS[:6]] + ["read_ring"])
def test_unsupported_ops_where_runs_do_and_do_not_reach_them_agree(k):
    """An op the model does not follow, in every place of a small verified protocol, reached
    for one launch value or for none: the engine says `unsupported` where the interpreter's
    exhaustive search meets it, and verified where no execution does."""
    for m, reached in _with_unsupported(k):
        r = agrees(m, "unsupported ops")
        want = ("violation", "unsupported") if reached else ("verified", None)
        assert (r.verdict, r.kind) == want, (m.name, r.verdict, r.kind, r.reasons)


# ----------------------------------------------------------------------------- by construction

def _ring_bug(bug: str, consumers: int = 3) -> Kernel:
    return P.ring(stages=2, trips=3, consumers=consumers, bug=bug)


def test_a_lap_is_found_by_reordering():
    """two-behind: one consumer release frees a stage, so the producer may refill it before the
    slower consumer waited on it. The first execution is fine; the wait's no-lap condition
    fails, and its reordering is the parity-aliasing."""
    r = hb.check(_ring_bug("two-behind"))
    assert r.verdict == "violation" and r.kind == "parity-aliasing", r
    assert r.found_by.startswith("a reordering") and r.cost.runs >= 2


@pytest.mark.parametrize("bug", [b for b in P.RING_BUGS if b != "two-behind"])
def test_ring_bugs_are_real_executions(bug):
    r = hb.check(_ring_bug(bug))
    assert r.verdict == "violation", r
    kinds, complete = violation_kinds(_ring_bug(bug), ORACLE_STATES)
    assert complete and r.kind in kinds


def _expect_after_arrive(order_before: bool) -> Kernel:
    """A producer that expects its bytes with a standalone expect_tx after its arrive (before it,
    when `order_before`), and a copy whose bytes may land first."""
    full = MBarRef("full")
    arm = (MbarExpectTx(full, 64), MbarArrive(full, 1)) if order_before else \
        (MbarArrive(full, 1), MbarExpectTx(full, 64))
    prod = (Elect((MbarInit(full, 1), MbarInitFence())), BarSync(),
            Elect((TmaLoad(full, 64), *arm)))
    cons = (BarSync(), MbarWait(full, 0))
    return Kernel("expect_after_arrive" if not order_before else "expect_before_arrive",
                  (Process("p", prod, warps=(0, 1)), Process("c", cons, warps=(1, 2))),
                  (MBarrierDecl("full"),))


def test_a_standalone_expect_after_the_arrive_is_an_early_completion():
    ok, bad = _expect_after_arrive(True), _expect_after_arrive(False)
    assert hb.check(ok).verdict == "verified"
    r = hb.check(bad)
    kinds, complete = violation_kinds(bad, ORACLE_STATES)
    assert complete and kinds
    assert r.verdict in ("violation", "outside"), r
    if r.verdict == "violation":
        assert r.kind in kinds
    else:
        assert "complete before" in r.reasons[0], r.reasons


def _handoff(load_first: bool) -> Kernel:
    """A scheduler warp stores a tile index into a shared word and arrives on `full`; the
    consumer waits on `full` and loads it (before waiting, when `load_first`: a race)."""
    full = MBarRef("full")
    sched = (Elect((MbarInit(full, 1), MbarInitFence())), BarSync(),
             SmemStore(WordRef("w", Const(0)), Const(7)), Elect((MbarArrive(full, 1),)))
    load = SmemLoad("t", WordRef("w", Const(0)))
    cons = (BarSync(), *((load, MbarWait(full, 0)) if load_first else (MbarWait(full, 0), load)))
    return Kernel("handoff" + ("_load_first" if load_first else ""),
                  (Process("sched", sched, warps=(0, 1)),
                   Process("cons", cons, warps=(1, 2), init=(("t", 0),))),
                  (MBarrierDecl("full"),), words=(WordsDecl("w", 1),))


def test_a_word_race_is_found_by_reordering_the_two_accesses():
    assert hb.check(_handoff(False)).verdict == "verified"
    k = _handoff(True)
    r = hb.check(k)
    assert r.verdict == "violation" and r.kind == "race", r
    kinds, complete = violation_kinds(k, ORACLE_STATES)
    assert complete and "race" in kinds
    v = verify_kernel(k)
    assert v.verdict == "violation" and v.violations[0].kind == "race" and v.violations[0].replayed


def test_an_op_without_a_happens_before_rule_sends_the_kernel_to_spin():
    """A store into a global flag declares no happens-before rule (flags that only grow do)."""
    from warpspin.syncir.ir import FlagDecl
    from warpspin.syncir.ops import GlobalStore, GlobalWait
    k = Kernel("store_flag", (
        Process("p", (Elect((GlobalStore("f", Const(1), loc=Loc("f.py", 1)),)),), cta=0,
                warps=(0, 1)),
        Process("w", (Elect((GlobalWait("f", ">=", Const(1), loc=Loc("f.py", 2)),)),), cta=1,
                warps=(0, 1))), (), num_ctas=2, cluster_ctas=1, flags=(FlagDecl("f"),))
    r = verify_kernel(k, opts=CheckOptions(timeout_s=120))
    assert r.verdict == "verified" and r.stats.engine == "spin" and "hb_refused" in r.config
    assert "st.flag" in r.config["hb_refused"]
    from warpspin.report.render import render_text
    assert "outside the happens-before engine's class" in render_text(r, explain=True)
    only = verify_kernel(k, opts=CheckOptions(engine="hb"))
    assert only.verdict == "inconclusive" and "outside the happens-before" in only.reasons[0]


# ----------------------------------------------------------------------------- global flags

@hb_settings(max(10, EXAMPLES // 2))
@given(flag_protocols())
def test_random_flag_protocols_agree(k):
    """Random adds, waits, remote arrives and cluster barriers over two flags in a grid model of
    two clusters: the engine's verdict (or its refusal) against every interleaving."""
    agrees(k, "global flags")


def _more_adds(data: bool) -> Kernel:
    """Three CTAs add 1 to f (with `data`, after writing their cell of global data); a fourth
    waits until f >= 2 (and reads every cell)."""
    from warpspin.syncir.ir import FlagDecl
    from warpspin.syncir.ops import GlobalAdd, GlobalWait
    L = lambda n: Loc("f.py", n)  # noqa: E731
    procs = tuple(Process(f"p{c}", ((SmemStore(WordRef("d", Const(c)), Const(0), L(1)),) if data
                                    else ()) + (Elect((GlobalAdd("f", Const(1), loc=L(2)),)),),
                          cta=c, warps=(0, 1)) for c in range(3)) + (
        Process("w", (Elect((GlobalWait("f", ">=", Const(2), loc=L(3)),)),) + (tuple(
            SmemLoad("v", WordRef("d", Const(c)), L(4)) for c in range(3)) if data else ()),
                cta=3, warps=(0, 1), init=(("v", 0),)),)
    words = (WordsDecl("d", 3, data=True, grid=True),) if data else ()
    return Kernel("more_adds", procs, (), num_ctas=4, cluster_ctas=1, flags=(FlagDecl("f"),),
                  words=words)


@pytest.mark.parametrize("bug,kind", [(None, None), ("consumer-next", "deadlock"),
                                      ("overread", "invalid-operand")])
def test_reads_at_a_run_time_index_agree(bug, kind):
    """Trip counts read from global memory at the batch index (ld.launch): verified for every
    value, a consumer reading the next batch's count deadlocks, a read past the tensor is an
    invalid-operand; the engine's answer against every interleaving."""
    r = agrees(read_ring(bug=bug), "run-time reads")
    assert (r.verdict, r.kind) == (("verified", None) if bug is None else ("violation", kind)), r


def test_one_counter_for_every_tile():
    """A cumulative counter: with one producer each wait needs the adds before it (VERIFIED by
    the engine); with two, a wait may pass on the faster producer's adds before the slower one
    wrote the tile: a race (the engine's reordering, or SPIN)."""
    from hb_gen import cumulative_counter
    assert agrees(cumulative_counter(3, 1), "global flags").verdict == "verified"
    res = verify_kernel(cumulative_counter(2, 2), opts=CheckOptions(timeout_s=60))
    assert res.outcome == "race", str(res)


def test_a_wait_that_any_two_of_three_adds_satisfy():
    """Three adds of 1 and a wait for 2: no one add is needed, so none is ordered before the
    wait. Without data that is VERIFIED; with each adder's data read after the wait, the reads
    are unordered with the stores (the wait may pass before any one add): the engine's reordering
    shows the race or hands the kernel to SPIN, which finds it."""
    assert agrees(_more_adds(False), "global flags").verdict == "verified"
    r = agrees(_more_adds(True), "global flags")
    assert (r.verdict, r.kind) in (("violation", "race"), ("outside", None)), r
    res = verify_kernel(_more_adds(True), opts=CheckOptions(timeout_s=60))
    assert res.outcome == "race", str(res)


# ----------------------------------------------------------------------------- global counters

@hb_settings(max(10, EXAMPLES // 4))
@given(lo=st.integers(0, 3), span=st.integers(0, 2), g_lo=st.integers(1, 2),
       g_span=st.integers(0, 1), stages=st.integers(1, 3),
       bug=st.sampled_from((None, *P.DYNAMIC_BUGS)))
def test_dynamic_schedulers_agree(lo, span, g_lo, g_span, stages, bug):
    """The values CTAs outside the model take from a tile counter: every sequence of them is a
    run of its own; the verdict is the interpreter's over every interleaving of the takes."""
    agrees(P.dynamic_scheduler(tiles=(lo, lo + span), grid=(g_lo, g_lo + g_span), stages=stages,
                               bug=bug), "global counters")


@hb_settings(max(10, EXAMPLES // 4))
@given(protocols(extra="counter"))
def test_random_counter_protocols_agree(k):
    """Random protocols with an elected lane's atom.inc whose value decides an arrive (other
    CTAs taking values, or none): the engine's runs over the takes against every interleaving."""
    agrees(k, "global counters")


def test_the_counter_bug_is_a_run_with_takes():
    """static-count hangs only when another CTA takes one of the consumer's tiles: the engine's
    counterexample has that take, replays, and names the choice by its steps."""
    from warpspin.syncir.trace import Take
    k = P.dynamic_scheduler(bug="static-count")
    r = hb.check(k)
    assert r.verdict == "violation" and r.kind == "deadlock" and r.cost.runs > 1, r
    assert any(isinstance(e, Take) for e in r.events)
    assert replay(k, r.events, expect_kind="deadlock").ok
    assert hb.check(P.dynamic_scheduler()).verdict == "verified"


def _two_fetchers(others: int) -> Kernel:
    """Two warps each take one value of the counter; warp a hangs on value 1. Which warp gets
    which value depends on the order of their atom.incs, which nothing orders."""
    from warpspin.syncir import AtomInc, CounterDecl, If, Lanes, Var
    a = Process("a", (Lanes(1, (AtomInc("t", "sem", Const(3)),)),
                      If(Var("t").eq(1), (BarSync(Const(1), Const(64)),))), warps=(0, 1))
    b = Process("b", (Lanes(1, (AtomInc("u", "sem", Const(3)),)),), warps=(1, 2))
    return Kernel("two_fetchers", (a, b), (), counters=(CounterDecl("sem", Const(3),
                                                                     others=Const(others)),))


def test_a_taken_counter_read_by_another_op_is_outside_the_class():
    """Takes are placed only before atom.incs (Lemma T): a try_cancel whose pool other CTAs take
    from (SyncIR written by hand; the extractor's pool has none) sends the kernel to SPIN."""
    from dataclasses import replace
    from warpspin.syncir.ops import ClcTryCancel
    clc = P.clc_scheduler()
    k = replace(clc, counters=tuple(replace(c, others=Const(1)) for c in clc.counters))
    assert any(isinstance(s, ClcTryCancel) for s in k.ops())
    assert hb.check(clc).verdict != "outside"
    r = hb.check(k)
    assert r.verdict == "outside" and "only atom.inc" in r.reasons[0], r


@pytest.mark.parametrize("others", [0, 1])
def test_unordered_atom_incs_of_the_model_are_not_verified(others):
    """Takes order nothing (their values are the run's choice), but two warps of the model
    incrementing one counter are accesses like any other: unordered, they are a condition that
    fails, and the reordering finds the hang."""
    r = agrees(_two_fetchers(others), "global counters")
    assert r.verdict == "violation" and r.kind == "deadlock", r


def test_launch_value_ranges_are_one_run_each():
    k = P.ring(stages=2, trips=0, consumers=2, trips_range=(0, 6))
    r = hb.check(k)
    assert r.verdict == "verified" and r.cost.runs == 7
    bad = P.ring(stages=2, trips=0, consumers=2, trips_range=(0, 6), bug="trip-mismatch")
    r = hb.check(bad)
    assert r.verdict == "violation" and r.kind == "deadlock"
    assert r.events[0].name == "K"  # the launch value of the failing run leads the trace


def test_the_report_names_the_engine_and_its_cost():
    r = verify_kernel(P.ring(stages=2, trips=4, consumers=2))
    text = str(r)
    assert r.verdict == "verified" and r.stats.engine == "happens-before", text
    assert "(happens-before, 1 execution, " in text.splitlines()[0]  # the one-line verdict
    from warpspin.report.render import render_text
    assert "decided by the happens-before engine: 1 execution" in render_text(r, explain=True)
    js = r.to_dict()["stats"]
    assert js["engine"] == "happens-before" and js["hb"]["ops"] > 0 and js["hb"]["edges"] > 0
    r = verify_kernel(P.ring(stages=2, trips=4, consumers=2), opts=CheckOptions(engine="spin"))
    assert r.stats.engine == "spin" and r.stats.states > 0 and "(SPIN, " in str(r)
    assert "searched" in render_text(r, explain=True)


@pytest.mark.parametrize("bug", [None, "two-behind", "missing-release", "tx-bytes"])
def test_both_engines_answer_the_same_contract(bug):
    """engine/contract.py: each engine takes a kernel and options and gives an Outcome; on a
    kernel in the happens-before class they give the same verdict and kind."""
    from warpspin.engine.contract import EngineOptions, Outcome
    from warpspin.engine.hb import HappensBefore
    from warpspin.engine.spin_engine import Spin
    k = P.ring(stages=2, trips=3, consumers=2, bug=bug)
    outs = [e.check(k, EngineOptions(timeout_s=120)) for e in (HappensBefore(), Spin())]
    assert all(isinstance(o, Outcome) for o in outs)
    assert [o.engine for o in outs] == ["happens-before", "spin"]
    (h, s) = outs
    assert (h.verdict, h.kind) == (s.verdict, s.kind), (h, s)
    assert h.cost.runs >= 1 and h.cost.ops > 0 and s.cost.states > 0
    assert (h.verdict == "violation") == (bug is not None) and (not h.events) == (bug is None)
