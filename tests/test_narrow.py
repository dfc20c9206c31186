"""R3 narrowing (docs/semantics.md, "Reductions"): every bound the lowering types a field or a local
by holds in every state the reference interpreter reaches, and the narrowed model has exactly the
states of the model with the declared types (narrowing changes representation, not behaviour)."""
from __future__ import annotations

import pytest

from warpspin.lower import analysis
from warpspin.lower.promela import _Lowering, lower
from warpspin.syncir.flat import Op
from warpspin.syncir.interp import Machine, Violation
from warpspin.syncir.layout import Layout
from warpspin.syncir.protocols import RING_BUGS, exchange, ring

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
