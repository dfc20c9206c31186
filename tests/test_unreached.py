"""An op the model does not follow decides the verdict only where an execution reaches it: the
happens-before engine runs the kernel for every launch-value choice (a run that meets an
`Unsupported` ends there) and its proof covers the branches no run takes (docs/semantics.md,
"Verdicts"). Checked against SPIN, which searches every interleaving of the same model."""
from dataclasses import replace

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine import lower_and_check
from warpspin.report.render import render_text
from warpspin.syncir import If, Loc, Unsupported, Var
from warpspin.syncir.ir import UNBOUNDED
from warpspin.syncir.protocols import ring

WHAT = "MbarWait depends on nvvm.vote.sync@k.py:7"


def _ring_with(cond, bug=None, params=(0, 3)):
    """The ring, its trip count the launch value K in `params`, with an Unsupported in a branch
    on `cond` at the end of the consumer."""
    k = ring(stages=2, trips=0, consumers=1, trips_range=params, bug=bug)
    consumer = k.processes[1]
    body = consumer.body + (If(cond, (Unsupported(WHAT, Loc("k.py", 9)),)),)
    return replace(k, processes=(k.processes[0], replace(consumer, body=body)))


def test_an_op_no_execution_reaches_does_not_decide():
    k = _ring_with(Var("K").gt(100))
    r = verify_kernel(k)
    assert r.verdict == "verified" and r.stats.engine == "happens-before", str(r)
    assert r.config["unreached"] == [f"`{WHAT}` (k.py:9)"], r.config
    assert "not modelled, and no execution reaches it" in render_text(r)
    # SPIN over the same model: no interleaving meets it either
    spin = lower_and_check(k, timeout_s=120)[1]
    assert spin.complete and spin.kind is None, spin


def test_an_op_some_execution_reaches_is_unsupported():
    k = _ring_with(Var("K").ge(2))
    r = verify_kernel(k)
    assert r.verdict == "unsupported", str(r)
    assert WHAT in r.reasons[0] and r.reason_locations[0].line == 9
    assert "unreached" not in r.config
    assert lower_and_check(k, timeout_s=120)[1].kind == "unsupported"


def test_a_violation_before_any_unsupported_op_is_reported():
    """The consumer walks one trip more than the producer: it waits forever before the branch;
    that execution is fully modelled, so the deadlock is shown (replayed)."""
    k = _ring_with(Var("K").ge(0), bug="trip-mismatch")
    r = verify_kernel(k)
    assert r.verdict == "violation" and r.violations[0].kind == "deadlock", str(r)
    assert r.violations[0].replayed


@pytest.mark.parametrize("how", ["spin", "unbounded", "bound"])
def test_where_the_engine_cannot_show_it_the_op_decides(how):
    """SPIN alone (its search of such a kernel gets no reduction), a launch value with no upper
    bound (the cutoff extrapolates), a model bound among the ops: UNSUPPORTED (INCONCLUSIVE for
    a bound) without running the engine."""
    k = _ring_with(Var("K").gt(100), params=(0, UNBOUNDED) if how == "unbounded" else (0, 3))
    if how == "bound":
        consumer = k.processes[1]
        body = consumer.body[:-1] + (If(Var("K").gt(100), (
            Unsupported(WHAT, Loc("k.py", 9), bound=True),)),)
        k = replace(k, processes=(k.processes[0], replace(consumer, body=body)))
    opts = CheckOptions(engine="spin") if how == "spin" else CheckOptions()
    r = verify_kernel(k, opts=opts)
    assert r.verdict == ("inconclusive" if how == "bound" else "unsupported"), str(r)
    assert r.stats.hb_runs == 0 and not r.stats.states, str(r)



def test_an_op_whose_text_has_braces_is_named_when_a_run_meets_it():
    """Inline PTX names with `{ ... }` blocks: the run's message must not read them as a
    template (an internal error before)."""
    k = ring(stages=2, trips=0, consumers=1, trips_range=(0, 1))
    what = 'llvm.inline_asm "{ .reg .b32 r; mapa.u32 r, $0, $1; }"'
    consumer = k.processes[1]
    k = replace(k, processes=(k.processes[0], replace(
        consumer, body=consumer.body + (Unsupported(what, Loc("k.py", 3)),))))
    r = verify_kernel(k)
    assert r.verdict == "unsupported" and what in r.reasons[0], str(r)
