"""Scale (issue 3): every broken ring variant is still caught at 8 and 16 consumer warps, with the
expected kind and a trail that replays in the reference interpreter (verify_kernel replays every
counterexample and never shows one that does not replay); the reductions are recorded."""
import shutil

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine import check
from warpspin.lower import lower
from warpspin.syncir.protocols import RING_BUGS, RING_BUG_EXPECT, ring

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")


@pytest.mark.parametrize("consumers", [8, 16])
@pytest.mark.parametrize("bug", RING_BUGS)
def test_broken_rings_caught_at_scale(bug, consumers):
    k = ring(stages=2, trips=4, consumers=consumers, bug=bug)
    res = verify_kernel(k, opts=CheckOptions(timeout_s=300))
    assert res.verdict == "violation", res.reasons
    assert res.violations[0].kind == RING_BUG_EXPECT[bug][0]
    assert res.violations[0].trace


@pytest.mark.parametrize("consumers", [8, 16])
def test_correct_ring_verifies_at_scale(consumers):
    res = verify_kernel(ring(stages=2, trips=4, consumers=consumers, ctas=2),
                        opts=CheckOptions(timeout_s=300))
    assert res.verdict == "verified", res.reasons


def test_reductions_are_recorded():
    m = lower(ring(stages=2, trips=4, consumers=4, ctas=2))
    names = [r.split(":")[0] for r in m.reductions]
    assert names == ["independent-ctas", "symmetric-instances", "narrow-types",
                     "dead-variable-reset"]
    assert lower(ring(stages=2, trips=4, consumers=4, ctas=2), reduce=False).reductions == ()
    r = check(m)
    assert r.reductions == m.reductions and "-DCOLLAPSE" in r.options


def test_states_grow_polynomially_in_warps():
    """Symmetric records: the state count is bounded by a polynomial in the number of identical
    warps (multisets of their local states), far below the plain product."""
    states = [check(lower(ring(stages=2, trips=4, consumers=n))).states for n in (2, 4, 8)]
    # doubling the warps multiplies the states by far less than the plain encoding's square
    assert states[1] < 12 * states[0] and states[2] < 20 * states[1]
