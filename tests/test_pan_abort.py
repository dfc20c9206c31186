"""pan stopping itself is a truncation, never a counterexample.

When the state vector outgrows VECTORSZ, pan prints "pan: error, VECTORSZ too small", then
"pan:1: aborting (at depth 0)", and writes a trail to where it stopped. No property failed there
(the trail has no WS|V line), but the engine used to take it as a counterexample of kind
`model-error`; the pipeline then replayed it and reported "SPIN reported model-error, but its
trail does not replay in the reference interpreter" (INCONCLUSIVE as an internal disagreement)
instead of naming the limit. The kernel is the regression protocol of
regressions/records_exit_hidden_step.py; VECTORSZ is made small to hit the limit.
"""
import functools
import shutil

import pytest

from regressions.records_exit_hidden_step import kernel
from warpspin import pipeline
from warpspin.engine import spin_engine
from warpspin.engine import check, lower_and_check
from warpspin.lower import lower
from warpspin.report.result import INCONCLUSIVE

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")


@pytest.mark.parametrize("reduce", [True, False])
def test_vector_abort_is_no_counterexample(reduce):
    res = check(lower(kernel(), reduce=reduce), vector_size=16, timeout_s=60, grow_vector=False)
    assert "aborting" in res.pan_error
    assert res.kind is None and res.events == []
    assert "vector" in res.truncated and not res.complete


def test_vector_abort_is_inconclusive_with_its_limit(monkeypatch):
    monkeypatch.setattr(spin_engine, "lower_and_check",
                        functools.partial(lower_and_check, vector_size=16, grow_vector=False))
    r = pipeline.check_kernel(kernel(), timeout_s=60, engine="spin")
    assert r.verdict == INCONCLUSIVE
    assert not r.violations
    assert any("state vector too large" in x for x in r.reasons), r.reasons
    assert not any("does not replay" in x for x in r.reasons), r.reasons


@pytest.mark.parametrize("jobs", [1, 2])
def test_vector_grows_to_what_pan_names(jobs):
    """By default the engine compiles again with room for the vector pan says it needs: the
    same search as with a large VECTORSZ from the start."""
    model = lower(kernel())
    big = check(model, timeout_s=60)
    grown = check(model, vector_size=16, timeout_s=60, jobs=jobs)
    assert grown.truncated == () and grown.kind == big.kind
    assert grown.states == big.states


def test_hunt_abort_is_no_counterexample():
    """A hunt that stops itself leaves no trail the portfolio takes for a counterexample."""
    res = check(lower(kernel()), vector_size=16, timeout_s=60, jobs=2, grow_vector=False)
    assert res.kind is None and res.events == [] and not res.complete


def test_time_limit_while_compiling_is_inconclusive_not_an_error():
    """A model too big to translate and compile within the time limit (the 64-warp cluster-8
    cross-entropy's pan.c took minutes of gcc) is a limit reached: INCONCLUSIVE, never ERROR."""
    from warpspin.pipeline import check_kernel
    from warpspin.syncir.protocols import ring
    r = check_kernel(ring(stages=4, trips=16, consumers=8), timeout_s=0.05, engine="spin")
    assert r.verdict == "inconclusive", r
    assert "time limit" in r.reasons[0] and "nothing was searched" in r.reasons[0]
