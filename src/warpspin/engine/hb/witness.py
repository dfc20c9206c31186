"""A failed condition names two operations that nothing orders. Its witness is an execution
that runs the second before the first: the schedule takes, stage by stage, the events that
precede the stage's targets and do not follow the held operations, in the order of the first
execution; then the held ones; then runs freely to the end. Whatever it ends in is a real
execution of the interpreter: a violation or a deadlock there is reported (and replayed by the
pipeline, as every counterexample is); an execution that ends well proves nothing, and the
kernel goes to SPIN.
"""
from __future__ import annotations

from .analysis import Analysis
from .conditions import Failure
from .execution import Execution, OutsideClass
from .graph import Node, before


def _identities(an: Analysis, targets: list[Node], held: list[Node]) -> set[tuple[int, int]]:
    """(actor, count) of the events before some target and after none of the held."""
    out = set()
    for n in an.nodes:
        if any(before(n, t) for t in targets) and not any(before(h, n) for h in held):
            out.add(n.own)
    return out


def run_witness(an: Analysis, f: Failure) -> Execution | None:
    runner, ex = an.runner, an.execution
    if not f.stages and not f.held:
        return None
    order = {n.own: n.pos for n in an.nodes}
    stages = [_identities(an, t, f.held) for t in f.stages if t]
    stages.append({h.own for h in f.held if h.is_event})
    state = {"stage": 0}

    def choose(enabled, occ):
        while state["stage"] < len(stages):
            want = stages[state["stage"]]
            pick = [(order.get((a, occ.get(a, 0) + 1), 1e18), ev) for ev in enabled
                    for a in (runner.actor_of(ev),) if (a, occ.get(a, 0) + 1) in want]
            if pick:
                return min(pick, key=lambda x: x[0])[1]
            state["stage"] += 1
        return enabled[0]

    s0 = runner.m.start_for({c.name: c.value for c in ex.start})
    if s0 is None:
        return None
    try:
        w = runner.run(ex.start, s0, choose)
    except OutsideClass:
        return None
    return w if w.end in ("violation", "deadlock") else None
