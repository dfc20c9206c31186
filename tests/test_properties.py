"""VERIFIED covers every default property on every object (issue: honest verdicts). A property
the model does not follow on some object makes the verdict INCONCLUSIVE, the first line naming
the object and why; `properties` narrows what VERIFIED must cover."""
from __future__ import annotations

import pytest

from sourcelines import line_of

pytestmark = pytest.mark.dsl
pytest.importorskip("cutlass")

from fixtures import kernels as K  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.extract import extract  # noqa: E402
from warpspin.frontend import trace  # noqa: E402
from warpspin.report.render import render_text  # noqa: E402
from warpspin.syncir import protocols as P  # noqa: E402


def _plain_store(fence: bool = False):
    fn, args = K.tensormap_store(False, plain=True, fence=fence)
    (k,) = trace(fn, *args)
    return extract(k)


@pytest.mark.parametrize("engine", ["auto", "spin"])
def test_a_plain_shared_tensor_stored_by_tma_is_followed(engine):
    """Generic writes to a plain shared tensor (no pipeline, no stage mode), then a TMA store of
    it with no fence.proxy.async: the tensor is followed as a buffer of one stage, and the
    missing fence is a proxy-race at the store."""
    r = verify_kernel(_plain_store(), opts=CheckOptions(engine=engine, timeout_s=120))
    assert r.verdict == "violation" and r.violations[0].kind == "proxy-race", render_text(r)
    assert r.violations[0].locations[0].line == line_of(K.__file__, "# @unfenced-store")
    r = verify_kernel(_plain_store(fence=True), opts=CheckOptions(engine=engine, timeout_s=120))
    from verdicts import verified_but_global_memory  # (the TMA store's global tile)
    assert verified_but_global_memory(r), render_text(r)


def _grid_flag(variant: str):
    from warpspin.api import check_target
    return lambda opts: check_target(f"examples/grid_flag.py:{variant}", opts)[0]


@pytest.mark.parametrize("engine", ["auto", "spin"])
def test_an_object_not_followed_makes_the_verdict_inconclusive(engine):
    """The data a global flag hands over, read by lanes lane 0's acquire does not order (no
    bar.sync after it), is not checked for races: no violation, and the headline says what was
    not checked, where, with exit code 2's verdict."""
    r = _grid_flag("unsynced_readers")(CheckOptions(engine=engine, timeout_s=120))
    assert r.verdict == "inconclusive", render_text(r)
    first = r.reasons[0]
    assert first.startswith("no deadlock in any interleaving; races NOT CHECKED on ") and \
        "global data partial" in first and "the acquire orders only" in first, first
    assert "NOT CHECKED" in render_text(r).splitlines()[1]


def test_asking_for_deadlock_alone_verifies_what_was_asked():
    r = _grid_flag("correct")(CheckOptions(properties=("deadlock",)))
    assert r.verdict == "verified" and r.config["properties"] == ["deadlock"], render_text(r)


def test_spin_without_load_races_does_not_verify_a_kernel_with_filled_stages():
    """SPIN told to leave the races on stages TMA loads fill out of its search (--no-load-races):
    that is a property not checked, so not VERIFIED; by default, or from the happens-before
    engine, VERIFIED."""
    k = P.mainloop()
    from warpspin.syncir.passes import has_load_races
    assert has_load_races(k)
    spin = verify_kernel(k, opts=CheckOptions(engine="spin", load_races=False, timeout_s=120))
    assert spin.verdict == "inconclusive" and "--no-load-races" in spin.reasons[0], spin.reasons
    assert verify_kernel(k, opts=CheckOptions(engine="spin", timeout_s=120)).verdict == "verified"
    assert verify_kernel(k).verdict == "verified"


def test_unknown_properties_are_refused():
    with pytest.raises(ValueError):
        verify_kernel(P.ring(stages=2, trips=2), opts=CheckOptions(properties=("deadlocks",)))
