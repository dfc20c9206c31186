"""The conformance suite on the CPU: every litmus kernel traces, `warpspin check` says what the
litmus states, and the model allows every outcome the H200 showed (conformance/results.json,
committed from the last hardware run; conformance/device.py makes it)."""
import functools
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
pytest.importorskip("cutlass")

from conformance import compare  # noqa: E402
from conformance.rules import RULES  # noqa: E402
from conformance.suite import ALL  # noqa: E402
from warpspin.syncir.interp import Outcomes, Terminal  # noqa: E402

RESULTS = json.load(open(compare.RESULTS))


@functools.lru_cache(maxsize=None)
def _predicted(name: str):
    from conformance.predict import predict
    from conformance.suite import by_name

    lit = by_name(name)
    return lit, predict(lit)


@pytest.mark.parametrize("name", [c.__name__ for c in ALL])
def test_litmus_prediction_matches_hardware(name):
    lit, pred = _predicted(name)
    assert pred.outcomes.complete, f"{name}: the interpreter's search was cut short"
    assert pred.verdict == lit.expect, f"{name}: warpspin says {pred.verdict}, the litmus states {lit.expect}"
    if lit.expect == "not-checked":  # only global memory, which no litmus result could show
        from verdicts import is_global_memory
        assert all(is_global_memory(u.what) for u in pred.kernel.unchecked), \
            pred.kernel.unchecked
    # the verdict and the outcomes agree: VERIFIED means every execution completes
    if pred.verdict == "verified":
        assert not pred.outcomes.violations
        assert {t.end for t in pred.outcomes.terminals} == {"completes"}
    row = RESULTS["litmus"].get(name)
    if lit.arch != "sm_90a":  # no such GPU here: the prediction above is all there is
        assert row is None and compare.judge(lit, pred, row).status == "PTX only"
        return
    if row is None and lit.awaiting_h200:  # listed as "not run" in docs/conformance.md
        assert compare.judge(lit, pred, row).status == "not run"
        return
    assert row is not None, f"{name}: no hardware result in conformance/results.json (run conformance/device.py)"
    j = compare.judge(lit, pred, row)
    assert j.status in ("agrees", "undefined", "unmodelled"), f"{name}: {j.status}: H200 {j.hardware}, model {j.model} {j.violations}"


@pytest.mark.parametrize("name", [c.__name__ for c in ALL])
def test_litmus_hb_verdict_matches_the_interpreter(name):
    """The happens-before engine alone on each litmus kernel: where it decides, VERIFIED iff the
    interpreter's every execution completes with no violation, and a violation's kind is one an
    execution reaches (a deadlock: one hangs)."""
    from warpspin.engine import hb
    from warpspin.syncir.passes import without_noop_fences
    lit, pred = _predicted(name)
    if pred.kernel is None or pred.verdict in ("unsupported", "error"):
        return
    k, _ = without_noop_fences(pred.kernel)
    r = hb.check(k, timeout_s=60)
    o = pred.outcomes
    if r.verdict == "verified":
        assert not o.violations and {t.end for t in o.terminals} == {"completes"}, (name, o)
    elif r.verdict == "violation":
        reach = set(o.violations) | ({"deadlock"} if any(t.end == "hangs" for t in o.terminals)
                                     else set())
        assert r.kind in reach, (name, r.kind, reach)
    else:
        assert r.verdict == "outside" and r.reasons, r


def test_every_rule_has_a_litmus_and_every_litmus_a_rule():
    covered = {r for c in ALL for r in c.rules}
    assert set(RULES) <= covered, f"rules without a litmus kernel: {sorted(set(RULES) - covered)}"
    assert covered <= set(RULES), f"litmus kernels naming unknown rules: {sorted(covered - set(RULES))}"


def test_results_record_the_machine():
    env = RESULTS["environment"]
    for key in ("date", "gpu", "driver", "dsl"):
        assert env.get(key), f"results.json lacks {key}"
    assert set(RESULTS["litmus"]) <= {c.__name__ for c in ALL}, "results for litmus kernels that no longer exist"


def test_comparison_flags_an_outcome_the_model_forbids():
    """The check can fail: a completion with probe values the model never reaches is UNSOUND, a
    hang of a kernel the model says always completes too; with a violation on some execution
    the same outcome is 'undefined'."""
    class Lit:
        name, rules, expect = "X", (), "verified"

    class Pred:
        verdict, where = "verified", ""
        outcomes = Outcomes({Terminal("completes", (0, 1))}, set(), True, 10)

    assert compare.judge(Lit, Pred, {"outcome": "completes", "values": [[0, 1]]}).status == "agrees"
    assert compare.judge(Lit, Pred, {"outcome": "completes", "values": [[1, 1]]}).status == "UNSOUND"
    assert compare.judge(Lit, Pred, {"outcome": "hangs"}).status == "UNSOUND"
    Pred.outcomes = Outcomes({Terminal("completes", (0, 1))}, {"arrival-mismatch"}, True, 10)
    assert compare.judge(Lit, Pred, {"outcome": "hangs"}).status == "undefined"
    assert compare.judge(Lit, Pred, {"outcome": "error before launch"}).status == "error"


def test_conformance_docs_are_current():
    js = [compare.judge(*_predicted(c.__name__), RESULTS["litmus"].get(c.__name__)) for c in ALL]
    want = compare.conformance_doc(js, RESULTS.get("environment", {}))
    assert open(compare.DOC).read() == want, \
        "docs/conformance.md is stale: python -m conformance.compare conformance/results.json --write"
    sem = open(compare.SEMANTICS).read()
    assert compare.semantics_with_table(sem, js) == sem, \
        "the conformance table of docs/semantics.md is stale: python -m conformance.compare --write"
