"""Trip counts as ranges (`--param K=LO..`): the happens-before engine's cutoff
(engine/hb/cutoff.py, docs/semantics.md "The cutoff"), its affine integers, and SPIN's refusal of
an unbounded range. Differential: wherever the cutoff decides a ring for every K, SPIN's
exhaustive search over K = 1..N agrees, and the kind the cutoff reports is one the interpreter's
exhaustive search reaches there."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warpspin.cli import parse_param
from warpspin.engine.hb import cutoff
from warpspin.engine.hb.affine import Region, Varies, aff, coefs, region, val
from warpspin.pipeline import check_kernel
from warpspin.report.render import render_text
from warpspin.syncir.interp import _ix, violation_kinds
from warpspin.syncir.ir import UNBOUNDED, Const, For, Var
from warpspin.syncir.ops import BarSync
from warpspin.syncir.printer import fmt_kernel
from warpspin.syncir.protocols import ring

COPY = Region((0, 1), ((0, 1), (1, 1)))
FAMILY = Region((0, 0), ((0, 1),))


def unbounded_ring(**kw):
    return ring(trips_range=(1, UNBOUNDED), **kw)


# ---- affine integers -----------------------------------------------------------------------
def test_affine_arithmetic_stays_exact():
    with region(COPY):
        x = aff(10, 4, 8)                       # 10 + 4j + 8(m-1)
        assert coefs(x + 3) == (4, 8) and val(x + 3) == 13
        assert coefs(2 * x - x) == (4, 8)
        assert (x - x) == 0 and not isinstance(x - x, type(x))
        assert x % 4 == 2 and x // 2 == aff(5, 2, 4)
        assert x & 3 == 2


def test_affine_decisions_must_hold_over_the_whole_family():
    with region(COPY):
        grows = aff(3, 1, 1)
        assert grows > 0 and grows >= 3 and not grows < 0
        with pytest.raises(Varies):
            bool(grows < 10)                    # true at the vertex, false further out
        with pytest.raises(Varies):
            _ix(grows)                          # an offset that moves (CPython's own indexing
            # reads an int subclass's value without asking it: the interpreter converts first)
        with pytest.raises(Varies):
            int(grows)
        with pytest.raises(Varies):
            grows % 3                           # not periodic with the pump
        with pytest.raises(Varies):
            grows * grows
    with region(FAMILY):
        k_minus_1 = aff(8, 0, 8) - 1            # K - 1, K = 8 + 8m
        assert k_minus_1 > 6 and k_minus_1 != 0
        assert (k_minus_1 - aff(5, 0, 8)) == 2  # (K - 1) - k, k = 5 + 8m: a constant distance


# ---- the engine on rings ---------------------------------------------------------------------
def test_a_correct_ring_is_verified_for_every_trip_count():
    r = check_kernel(unbounded_ring(stages=4, consumers=2), engine="auto")
    assert r.verdict == "verified", r.reasons
    arg = r.config["cutoff"]
    assert arg.startswith("K=1.. (no upper bound)") and "period 8" in arg
    text = render_text(r)
    assert "every value of K=1.." in text and "K=1.." in text.splitlines()[0]
    assert '"cutoff"' in r.to_json()
    from warpspin.report.html import render_html
    page = render_html([r])
    assert "every value of" in page and "K=1.. (no upper bound)" in page


@pytest.mark.parametrize("bug, kind, at", [
    ("no-flip", "arrival-mismatch", 5),          # shows only once the ring wraps: K > stages
    ("wrap-one-late", "invalid-operand", 5),
    ("consumer-no-flip", "deadlock", 5),
    ("trip-mismatch", "deadlock", 1),
])
def test_a_bug_at_some_trip_count_is_found_with_that_count(bug, kind, at):
    r = check_kernel(unbounded_ring(stages=4, consumers=2, bug=bug), engine="auto")
    assert r.verdict == "violation" and r.violations[0].kind == kind
    assert f"K = {at}" in render_text(r)


def triangular():
    """The consumer's inner loop runs k times in trip k (a causal mask's shape): no part of the
    execution repeats as K grows, so no cutoff exists."""
    k = unbounded_ring(stages=2, consumers=1)
    prod, cons = k.processes
    loop = cons.body[-1]
    inner = For("j", 0, Var("k"), (BarSync(Const(1), Const(32)),))
    cons = replace(cons, body=cons.body[:-1] + (replace(loop, body=loop.body + (inner,)),))
    return replace(k, processes=(prod, cons))


def test_a_kernel_with_no_period_is_not_verified_and_says_why():
    r = check_kernel(triangular(), engine="auto")
    assert r.verdict == "inconclusive"
    why = r.config["hb_refused"]
    assert "found no period" in why and "K" in why


def test_spin_refuses_an_unbounded_range():
    r = check_kernel(unbounded_ring(stages=2), engine="spin")
    assert r.verdict == "inconclusive"
    assert "no upper bound" in r.reasons[0] and "--engine auto or hb" in r.reasons[0]


def test_the_range_is_parsed_and_printed():
    assert parse_param("K=2..") == ("K", (2, UNBOUNDED))
    assert parse_param("K=2..5") == ("K", (2, 5))
    assert "param K = 1.." in fmt_kernel(unbounded_ring(stages=2))


def test_the_pump_is_the_execution_of_every_value():
    """Lemma C1 on the ring: E(B + p*m) is pre . seg^m . rest, checked far past the values the
    cutoff ran."""
    fam = cutoff.Family(unbounded_ring(stages=3, consumers=2), "K")
    pump = next(found for b in range(1, 20) for q in cutoff.periods(fam.kernel)
                if (found := fam.pump(b, q)) is not None)
    e0 = cutoff._events(fam.run(pump.base))
    e1 = cutoff._events(fam.run(pump.base + pump.period))
    for m in (5, 9):
        want = e0[:pump.t1] + e1[pump.t1:pump.t1 + pump.length] * m + e0[pump.t1:]
        assert cutoff._events(fam.run(pump.base + m * pump.period)) == want


# ---- differential against SPIN ---------------------------------------------------------------
RINGS = [(s, c, bug) for s in (2, 3) for c in (1, 2)
         for bug in (None, "no-flip", "wrap-one-late", "consumer-no-flip", "trip-mismatch",
                     "missing-release", "tx-bytes")]


def test_the_cutoff_agrees_with_spin_on_every_ring():
    decided = {"verified": 0, "violation": 0}
    for stages, consumers, bug in RINGS:
        cut = check_kernel(unbounded_ring(stages=stages, consumers=consumers, bug=bug),
                           engine="hb")
        if cut.verdict not in decided:
            continue
        decided[cut.verdict] += 1
        top = 2 * stages + 3
        bounded = ring(stages=stages, consumers=consumers, bug=bug, trips_range=(1, top))
        spin = check_kernel(bounded, engine="spin")
        where = (stages, consumers, bug)
        assert spin.verdict == cut.verdict, where
        if cut.verdict == "violation":  # a kind the exhaustive search reaches on the range
            kinds, complete = violation_kinds(bounded)  # (deadlocks unclassified)
            v = cut.violations[0]
            assert complete and (v.kind in kinds or v.blocked and "deadlock" in kinds), where
    assert decided["verified"] >= 4 and decided["violation"] >= 16, decided


# ---- end to end from the Python source ---------------------------------------------------------
@pytest.mark.dsl
def test_the_cli_verifies_a_dynamic_k_tile_count_for_every_value(capsys, monkeypatch):
    pytest.importorskip("cutlass")
    import os
    from warpspin.cli import main
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    target = "examples/hopper_pipeline.py:correct_dynamic_k"
    assert main(["check", target, "--param", "size_in_kernel=0.."]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "every value of size_in_kernel=0.. (no upper bound)" in out
    assert main(["check", target, "--param", "size_in_kernel=0..", "--engine", "spin"]) == 2
    assert "no upper bound" in capsys.readouterr().out


# ---- differential on generated protocols and their mutants -------------------------------------
def open_trips(k, top=None):
    """`k` with its main trip count (the most common constant loop bound of 2 or more) made the
    launch parameter K: K=1.. (or 1..top). None when it has none."""
    from collections import Counter
    from warpspin.syncir.ir import Param, rewrite_stmts
    stops = Counter(s.stop.value for p in k.processes for s in _walk(p.body)
                    if isinstance(s, For) and isinstance(s.stop, Const) and s.stop.value >= 2)
    if not stops or any(p.name == "K" for p in k.params):
        return None
    c = stops.most_common(1)[0][0]

    def sub(s):
        if isinstance(s, For) and s.stop == Const(c):
            return (replace(s, stop=Var("K")),)
        return (s,)
    procs = tuple(replace(p, body=rewrite_stmts(p.body, sub)) for p in k.processes)
    return replace(k, name=f"{k.name}[K]", processes=procs,
                   params=(*k.params, Param("K", 1, UNBOUNDED if top is None else top)))


def _walk(body):
    from warpspin.syncir.ir import stmt_bodies
    for s in body:
        yield s
        for b in stmt_bodies(s):
            yield from _walk(b)


def cutoff_agrees(k, counts) -> None:
    """The cutoff's verdict on `k` with K=1.. against the interpreter's exhaustive search over
    K=1..6: VERIFIED only where no violation is reachable there; a violation only where one is,
    its counterexample replaying."""
    from warpspin.engine import hb
    from warpspin.syncir import validate
    from warpspin.syncir.interp import replay
    opened = open_trips(k)
    if opened is None or validate(opened):
        counts["no trip count"] += 1
        return
    r = hb.check(opened, timeout_s=60)
    counts[r.verdict] += 1
    if r.verdict not in ("verified", "violation"):
        assert r.verdict == "outside" and r.reasons, r
        return
    if r.verdict == "violation":
        rp = replay(opened, r.events, expect_kind=r.kind)
        assert rp.ok, f"{opened.name}: the counterexample does not replay: {rp.error}"
    kinds, complete = violation_kinds(open_trips(k, top=6), 60_000)
    if not complete:
        counts["oracle too large"] += 1
        return
    if r.verdict == "verified":
        assert not kinds, f"{opened.name}: VERIFIED for every K, the interpreter reaches {kinds}"
    else:
        assert kinds, f"{opened.name}: {r.kind} for some K, the interpreter reaches none on 1..6"
    counts["agreed"] += 1


def test_generated_protocols_and_their_mutants_agree_with_the_interpreter():
    """The well-synchronized protocols of tests/hb_gen.py with their trip count opened, and every
    one-edit mutant of the small ones."""
    from collections import Counter
    from hb_gen import cluster_multicast, mutants, named_pingpong, peek_ring
    from warpspin.syncir import validate
    counts: Counter = Counter()
    bases = [ring(stages=2, trips=3, consumers=2), peek_ring(2, 3, 1, expect_first=True),
             peek_ring(3, 4, 2), named_pingpong(2, 1), cluster_multicast(2, 2)]
    for k in bases:
        cutoff_agrees(k, counts)
        for m in mutants(k):
            if not validate(m):
                cutoff_agrees(m, counts)
    assert counts["agreed"] >= 60 and counts["verified"] >= 5 and counts["violation"] >= 20, counts


FUZZ = bool(os.environ.get("WARPSPIN_DIFF_FUZZ"))


@settings(max_examples=int(os.environ.get("WARPSPIN_DIFF_EXAMPLES", "200")) // 10 if FUZZ else 12,
          deadline=None, database=None, derandomize=not FUZZ,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_drawn_protocols_with_an_open_trip_count_agree(data):
    """Drawn well-synchronized protocols (tests/hb_gen.py) and a sample of their mutants."""
    from collections import Counter
    from hb_gen import mutants, well_synchronized
    from warpspin.syncir import validate
    k = data.draw(well_synchronized())
    counts: Counter = Counter()
    cutoff_agrees(k, counts)
    ms = [m for m in mutants(k) if not validate(m)]
    for m in data.draw(st.permutations(ms))[:4]:
        cutoff_agrees(m, counts)


def with_choice(bug_at: int | None):
    """A ring whose consumer does an extra named-barrier round when E == 1 (E in 0..1, K=1..);
    with `bug_at`, the consumer's release is skipped at that E (a deadlock for that choice)."""
    from warpspin.syncir.ir import If, Param
    k = unbounded_ring(stages=2, consumers=1)
    prod, cons = k.processes
    loop = cons.body[-1]
    body = tuple(s for s in loop.body)
    if bug_at is not None:  # the release (the Lanes around the arrive) only when E != bug_at
        body = tuple(If(Var("E").eq(bug_at), (), (s,)) if type(s).__name__ == "Lanes" else s
                     for s in body)
    extra = If(Var("E").eq(1), (BarSync(Const(1), Const(32)),))
    cons = replace(cons, body=cons.body[:-1] + (replace(loop, body=(*body, extra)),))
    return replace(k, processes=(prod, cons), params=(*k.params, Param("E", 0, 1)))


def test_an_unbounded_range_beside_a_bounded_one_is_decided_for_each_choice():
    r = check_kernel(with_choice(None), engine="auto")
    assert r.verdict == "verified", r.reasons
    assert "with E=0: K=1.." in r.config["cutoff"] and "with E=1: K=1.." in r.config["cutoff"]
    r = check_kernel(with_choice(1), engine="auto")
    assert r.verdict == "violation" and r.violations[0].kind == "deadlock"
    assert "E = 1" in render_text(r)


def test_launch_constraints_on_an_unbounded_parameter_are_no_traceback():
    """The extractor's "is there any launch" check cannot enumerate K=1..; the cutoff refuses a
    family the constraints cut (here K must be even), naming why."""
    from warpspin.syncir import validate
    from warpspin.syncir.ir import BinOp
    from warpspin.syncir.validate import some_launch
    k = replace(unbounded_ring(stages=2), constraints=(BinOp("==", BinOp("%", Var("K"), Const(2)),
                                                              Const(0)),))
    assert some_launch(k) and not validate(k)
    r = check_kernel(k, engine="auto")       # K=1 is no launch
    assert r.verdict == "inconclusive"
    assert "launch constraints depend on K" in r.config["hb_refused"]
    from warpspin.syncir.ir import Param
    k = replace(k, params=(Param("K", 2, UNBOUNDED),))
    r = check_kernel(k, engine="auto")       # K=2 is, K=3 is not
    assert r.verdict == "inconclusive" and "constraints exclude it" in r.config["hb_refused"]
