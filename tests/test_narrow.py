"""R3 narrowing (docs/semantics.md, "Reductions"): every bound the lowering types a field or a local
by holds in every state the reference interpreter reaches, and the narrowed model has exactly the
states of the model with the declared types (narrowing changes representation, not behaviour)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from warpspin.lower import analysis
from warpspin.lower.promela import _Lowering, lower
from warpspin.syncir.flat import Op
from warpspin.syncir.ir import Assign, Elect, For, If, Kernel, Loc, MBarRef, MBarrierDecl, Process, Var
from warpspin.syncir.ops import BarSync, MbarArrive, MbarInit, MbarInitFence, MbarTestWait, MbarWait
from warpspin.syncir.interp import Machine, Violation
from warpspin.syncir.layout import Layout
from protocol_gen import protocols
from warpspin.syncir.protocols import PREFIX_BUGS, RING_BUGS, exchange, prefix_ring, ring

KERNELS = [("ring", lambda: ring(stages=2, trips=4, consumers=2)),
           ("ring-cta2", lambda: ring(stages=2, trips=3, consumers=1, ctas=2)),
           ("ring-param", lambda: ring(stages=2, trips="K", consumers=2, trips_range=(1, 3))),
           ("exchange", lambda: exchange(rounds=3)),
           *[(f"ring-{b}", (lambda b=b: ring(stages=2, trips=3, consumers=2, bug=b)))
             for b in RING_BUGS if b != "two-behind"]]


def _reachable(k, limit=200_000):
    m = Machine(k)
    seen = {s for _, s in m.initial_states()}
    todo = list(seen)
    while todo:
        s = todo.pop()
        for ev in m.enabled(s):
            try:
                t = m.step(s, ev)
            except Violation:
                continue  # the search stops at a violation: its state is never stored
            if t not in seen:
                seen.add(t)
                todo.append(t)
                assert len(seen) < limit
    return m, seen


@pytest.mark.parametrize("name,make", KERNELS, ids=[n for n, _ in KERNELS])
def test_bounds_hold_in_every_reachable_state(name, make):
    k = make()
    lay = Layout(k)
    params = {p.name: (p.lo, p.hi) for p in k.params}
    rngs = [analysis.ranges(lay, pi, params) for pi in range(len(lay.flat))]
    fields = analysis.mbar_fields(lay, rngs)
    live = [analysis.liveness(lay, pi)[0] for pi in range(len(lay.flat))]
    consts = [analysis.constant_locals(lay, pi, params, live[pi]) for pi in range(len(lay.flat))]
    m, states = _reachable(k)
    for s in states:
        for n, (_, array, _) in enumerate(lay.elements):
            mb = m.mb(s, n)
            for f, spec in fields[array].items():
                if spec[0] == "const":
                    assert mb[f] == spec[1], (array, f, mb)
                elif spec[0] == "vis":
                    assert mb[f] == (spec[1] if mb["vis"] != 0 else spec[2]), (array, f, mb)
                else:
                    assert spec[1] <= mb[f] <= spec[2], (array, f, mb, spec)
        for inst in lay.instances:
            if m.ended(s, inst.gid):
                continue
            pi, pc = inst.process, m.pc(s, inst.gid)
            env = m.env(s, inst.gid)
            for n, (lo, hi) in rngs[pi].items():
                assert lo <= env[n] <= hi, (name, n, env[n], lo, hi)
            if isinstance(lay.flat[pi].code[pc], Op):
                for n, c in consts[pi].items():
                    if n in live[pi][pc]:
                        assert env[n] == c, (name, n, env[n], c)


def test_ring_fields_narrowed():
    """The ring's barriers: exp and by follow from vis, empty never counts bytes, pend fits
    its arrival count."""
    low = _Lowering(ring(stages=4, trips=16, consumers=4), True, True)
    f = low.mbf
    assert f["full"]["exp"] == ("vis", 1, 0) and f["empty"]["exp"] == ("vis", 4, 0)
    assert f["full"]["by"][0] == "vis" and f["empty"]["tx"] == ("const", 0)
    assert f["empty"]["pend"] == ("range", 0, 4) and f["full"]["tx"][0] == "range"
    text = lower(ring(stages=4, trips=16, consumers=4)).text
    assert "typedef T_mb_empty { short n; byte vis; byte pend };" in text  # 4 bytes (was 20)


def test_modular_stage_counter_is_bounded():
    """`select(i + 1 == S, 0, i + 1)` stays in 0..S-1 (the Select refinement and widening
    thresholds), so the stage counters of a pipeline are not `int`s."""
    from warpspin.syncir.ir import BinOp, Const, Select, Var
    i = Var("i")
    e = Select(BinOp("==", BinOp("+", i, Const(1)), Const(9)), Const(0), BinOp("+", i, Const(1)))
    assert analysis.interval(e, {"i": (0, 8)}) == (0, 8)


def _gemm_fixture():
    from fixtures import catalog as C
    from warpspin.extract import extract
    from warpspin.frontend import serialize
    name = "quack.gemm_sm90"
    return extract(serialize.load(C.fixture_path(name)), params=C.golden_params().get(name, {}))


PRINTED_RESETS = [*[pytest.param(n, m, id=n) for n, m in KERNELS],
                  pytest.param("prefix-ring", prefix_ring, id="prefix-ring"),
                  *[pytest.param(f"prefix-ring-{b}", (lambda b=b: prefix_ring(bug=b)),
                                 id=f"prefix-ring-{b}") for b in PREFIX_BUGS],
                  pytest.param("quack.gemm_sm90", _gemm_fixture, id="quack.gemm_sm90",
                               marks=pytest.mark.exhaustive)]


@pytest.mark.parametrize("name,make", PRINTED_RESETS)
def test_printed_resets_are_the_same_transition_system(name, make, monkeypatch):
    """R4 prints only the resets analysis.nonzero says can change something, and R12's identity
    test is C: pan must store the same states and take the same transitions as with every reset
    printed, and the text must not grow."""
    from warpspin.engine.spin import check
    from warpspin.lower import promela
    k = make()
    short = lower(k)
    monkeypatch.setattr(promela, "PRINT_EVERY_RESET", True)
    full = lower(k)
    assert len(short.text) <= len(full.text)
    a, b = check(short, timeout_s=120), check(full, timeout_s=120)
    assert (a.states, a.transitions, a.kind) == (b.states, b.transitions, b.kind), name
    assert a.states > 0


@settings(max_examples=24, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(protocols())
def test_printed_resets_on_random_protocols(k):
    """The same on random protocols (tests/protocol_gen.py): test-wait results, branches on
    them and loop counters leave dead locals whose values differ between paths."""
    from warpspin.engine.spin import check
    from warpspin.lower import promela
    short = lower(k)
    promela.PRINT_EVERY_RESET = True
    try:
        full = lower(k)
    finally:
        promela.PRINT_EVERY_RESET = False
    a, b = check(short, timeout_s=60), check(full, timeout_s=60)
    assert (a.states, a.transitions, a.kind) == (b.states, b.transitions, b.kind)


def _dead_test_results(rounds: int = 3) -> Kernel:
    """Resets that matter: `b` polls `to_b` with a test-wait (no wait after it, so R9 leaves the
    test alone) and copies the result into `seen`, which is dead after the branch on it; paths
    where the poll passed and where it failed meet with different dead values."""
    L = lambda n: Loc("dead.py", n)  # noqa: E731
    init = Elect((MbarInit(MBarRef("to_b"), 1, L(1)), MbarInit(MBarRef("to_a"), 1, L(2)),
                  MbarInitFence(L(3))))
    a = (init, BarSync(loc=L(4)),
         For("r", 0, rounds, (
             Elect((MbarArrive(MBarRef("to_b"), 1, L(6)),)),
             MbarWait(MBarRef("to_a"), Var("ph"), L(7)),
             Assign("ph", Var("ph") ^ 1)), loc=L(5)))
    b = (BarSync(loc=L(4)),
         For("r", 0, rounds, (
             MbarTestWait("t", MBarRef("to_b"), Var("ph"), L(11)),
             Assign("seen", Var("t")),
             If(Var("seen"), (Assign("hits", Var("hits") + 1),), ()),
             MbarWait(MBarRef("to_b"), Var("ph"), L(12)),
             Elect((MbarArrive(MBarRef("to_a"), 1, L(13)),)),
             Assign("ph", Var("ph") ^ 1)), loc=L(10)))
    return Kernel("dead_test_results",
                  (Process("a", a, warps=(0, 1), init=(("ph", 0),)),
                   Process("b", b, warps=(1, 2), init=(("ph", 0), ("hits", 0)))),
                  (MBarrierDecl("to_b"), MBarrierDecl("to_a")))


def test_printed_resets_with_dead_values_that_differ(monkeypatch):
    """The kernel above: without R4's resets the states differ, so this comparison can fail."""
    from warpspin.engine.spin import check
    from warpspin.lower import promela
    k = _dead_test_results()
    short = check(lower(k), timeout_s=60)
    monkeypatch.setattr(promela, "PRINT_EVERY_RESET", True)
    full = check(lower(k), timeout_s=60)
    assert (short.states, short.transitions, short.kind) == (full.states, full.transitions,
                                                            full.kind)
    assert short.kind is None and short.states > 0
