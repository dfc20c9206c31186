"""Tensormaps rewritten in global memory, extracted from small real DSL kernels
(``fixtures/kernels.py TensormapShapes``): the descriptor a load names, its writes and fences,
and every pointer the extractor cannot follow made ``Unsupported`` with its line (fail-closed)."""
from __future__ import annotations

import pytest

from sourcelines import line_of

pytestmark = pytest.mark.dsl
pytest.importorskip("cutlass")

from fixtures import kernels as K  # noqa: E402
from warpspin.api import verify_kernel  # noqa: E402
from warpspin.extract import extract  # noqa: E402
from warpspin.frontend import trace  # noqa: E402
from warpspin.syncir import TmaLoad, unsupported_ops, walk_stmts  # noqa: E402
from warpspin.syncir.ops import TensormapAcquire, TensormapRelease, TensormapWrite  # noqa: E402


def _extract(mode):
    fn, args = K.tensormap_shapes(mode)
    (k,) = trace(fn, *args)
    return extract(k)


def _ops(sk, cls):
    return [s for p in sk.processes for s in walk_stmts(p.body) if isinstance(s, cls)]


def test_descriptor_per_cta_is_followed_and_verifies():
    sk = _extract("slot")
    assert [t.name for t in sk.tensormaps] == ["tmap0"]
    assert {s.desc for s in _ops(sk, TmaLoad)} == {"tmap0"}
    assert _ops(sk, TensormapWrite) and _ops(sk, TensormapRelease) and _ops(sk, TensormapAcquire)
    # the slot of CTA b is row b of `ws` (128 bytes): proven apart from every other CTA's
    assert not any("depends on the block index" in a for a in sk.assumptions), sk.assumptions
    r = verify_kernel(sk)
    assert r.verdict == "verified", r.verdict


def test_load_without_acquire_is_a_tensormap_race_at_the_load():
    r = verify_kernel(_extract("no_acquire"))
    assert r.verdict == "violation" and r.violations[0].kind == "tensormap-race"
    assert r.violations[0].locations[0].line == line_of(K.__file__, "# @load")


@pytest.mark.parametrize("mode,tag,why", [
    ("shared_slot", "# @copy-tensormap", "does not depend on the block index"),
    ("overlapping_slot", "# @overlapping-slot", "a second tensormap pointer whose address"),
    ("loop_slot", "# @loop-slot", "not one fixed global address"),
    ("lane_drain", "# @lane-drain", "by a lane subset that may not include"),
    ("plain_store", "# @plain-store", "a write into the memory a TMA descriptor pointer"),
])
def test_pointers_not_followed_are_unsupported(mode, tag, why):
    sk = _extract(mode)
    unsup = unsupported_ops(sk)
    assert any(why in u.what and u.loc.line == line_of(K.__file__, tag) for u in unsup), unsup
    assert verify_kernel(sk).verdict == "unsupported"


@pytest.mark.parametrize("acquire", [True, False])
def test_a_store_through_a_rewritten_descriptor_is_unsupported_not_verified(acquire):
    """The model orders rewrites of a descriptor only against TMA loads: a TMA store through it
    (with or without the acquire it needs) is Unsupported at the store, never VERIFIED."""
    fn, args = K.tensormap_store(acquire)
    (k,) = trace(fn, *args)
    sk = extract(k)
    unsup = unsupported_ops(sk)
    assert any("tma_store through the tensormap" in u.what and
               u.loc.line == line_of(K.__file__, "# @store") for u in unsup), unsup
    assert verify_kernel(sk).verdict == "unsupported"


def test_two_slots_are_two_descriptors_and_one_pointer_computed_twice_is_one():
    sk = _extract("two_slots")  # rows b and b + 2 of `ws`: 256 bytes apart
    assert [t.name for t in sk.tensormaps] == ["tmap0", "tmap1"]
    assert {s.desc for s in _ops(sk, TensormapWrite)} == {"tmap0", "tmap1"}
    # row b + 2 is another CTA's row b when the grid is larger: not shown apart, assumed
    assert any("depends on the block index" in a for a in sk.assumptions)
    assert verify_kernel(sk).verdict == "verified"
    sk = _extract("same_slot_twice")
    assert [t.name for t in sk.tensormaps] == ["tmap0"]
    assert verify_kernel(sk).verdict == "verified"


def test_descriptor_addresses_are_compared_by_their_constant_difference():
    from warpspin.extract.descriptors import Address, one_slot_per_cta, same_descriptor
    from warpspin.syncir.ir import Var
    row = frozenset({(Var("clusterid_x"), 256)})
    a, b = Address(3, row, 0), Address(3, row, 128)
    assert same_descriptor(a, a) is True and same_descriptor(a, b) is False
    assert same_descriptor(a, Address(3, row, 64)) is None  # overlapping
    assert same_descriptor(a, Address(3, frozenset({(Var("clusterid_x"), 128)}), 0)) is None
    assert same_descriptor(a, Address(4, row, 0)) is False  # other tensors: the host's contract
    assert one_slot_per_cta([a, b]) and not one_slot_per_cta([a, Address(3, row, 192)])
    assert not one_slot_per_cta([a, Address(4, row, 128)])


def test_a_drain_by_lane_0_is_on_the_lane_that_issued_the_copies():
    sk = _extract("lane0_drain")
    assert not unsupported_ops(sk)
    assert any("elects lane 0" in a for a in sk.assumptions), sk.assumptions
    assert verify_kernel(sk).verdict == "verified"
