"""Tensormaps the kernel rewrites in global memory (issue: races): the SyncIR ops in both
backends, the k-grouped protocol of DeepGEMM PR #343 with each way to break it, validity and the
reductions that must not touch a load through a rewritten tensormap."""
import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine.spin import lower_and_check
from warpspin.lower.promela import lower
from warpspin.syncir import (Const, Elect, Kernel, MBarRef, MBarrierDecl, MbarInit, MbarInitFence,
                             Process, TmaLoad, check)
from warpspin.syncir.interp import explore
from warpspin.syncir.ir import Lanes, TensormapDecl
from warpspin.syncir.ops import BulkCommit, BulkWaitRead, TensormapWrite
from warpspin.syncir.protocols import KGROUPED_BUG_EXPECT, KGROUPED_BUGS, kgrouped
from warpspin.syncir.validate import InvalidKernel


def test_kgrouped_correct_verifies_in_both_backends():
    k = kgrouped()
    check(k)
    assert explore(k).violation is None
    r = verify_kernel(k)
    assert r.verdict == "verified", r.verdict


@pytest.mark.parametrize("bug", KGROUPED_BUGS)
def test_kgrouped_bug_is_reported_at_its_line(bug):
    kind, line = KGROUPED_BUG_EXPECT[bug]
    k = kgrouped(bug=bug)
    out = explore(k)
    assert out.violation is not None and out.violation.kind == kind
    assert out.violation.loc.line == line
    r = verify_kernel(k)
    assert r.verdict == "violation"
    v = r.violations[0]
    assert v.kind == kind and v.locations[0].line == line, v


@pytest.mark.parametrize("bug", (None, "no-drain", "drain-one-behind", "no-acquire"))
def test_plain_encoding_agrees(bug):
    """The reduced lowering and the plain one reach the same kind (R8 leaves the loads through
    the tensormap alone: their issue reads and writes its state)."""
    k = kgrouped(groups=2, ktiles=2, consumers=2, bug=bug)
    reduced = lower(k)
    assert not any(r.startswith("R8") for r in reduced.reductions), reduced.reductions
    _, a = lower_and_check(k, timeout_s=60)
    _, b = lower_and_check(k, reduce=False, timeout_s=60)
    assert a.kind == b.kind == (None if bug is None else "tensormap-race")


def test_three_groups_and_deeper_waits():
    """wait_group.read 1 after the second commit retires the first group only: with three
    groups and the rewrite after every group, the newest group's loads are still unretired."""
    assert verify_kernel(kgrouped(groups=3)).verdict == "verified"
    r = verify_kernel(kgrouped(groups=3, bug="drain-one-behind"))
    assert r.verdict == "violation" and r.violations[0].kind == "tensormap-race"


def _one(body, tensormaps=(TensormapDecl("tmA"),)):
    return Kernel("k", (Process("p", (Elect((MbarInit(MBarRef("b"), 1),)), MbarInitFence(),
                                          *body)),), (MBarrierDecl("b"),), tensormaps=tensormaps)


def test_undeclared_tensormap_is_invalid():
    with pytest.raises(InvalidKernel, match="not a declared tensormap"):
        check(_one((Elect((TmaLoad(MBarRef("b"), Const(4), desc="tmB"),)),)))


def test_wait_deeper_than_the_groups_told_apart_is_invalid():
    with pytest.raises(InvalidKernel, match="depth"):
        check(_one((Lanes(1, (BulkCommit(("tmA",), 1), BulkWaitRead(1, ("tmA",), 1))),)))


def test_loads_through_a_tensormap_by_a_whole_warp_are_unsupported():
    """Each thread has its own bulk async-groups: a load by 32 threads of one instance is not
    modelled (the verdict says so; it is never VERIFIED)."""
    k = _one((TmaLoad(MBarRef("b"), Const(4), desc="tmA"),))
    out = explore(k)
    assert out.violation is not None and out.violation.kind == "unsupported"
    r = verify_kernel(k)
    assert r.verdict == "unsupported" and "32 threads" in r.reasons[0], r.reasons


def test_write_races_with_the_writers_own_open_load():
    k = _one((Lanes(1, (TmaLoad(MBarRef("b"), Const(4), desc="tmA"), TensormapWrite("tmA"))),))
    out = explore(k)
    assert out.violation is not None and out.violation.kind == "tensormap-race"
    assert "1 TMA read" in out.violation.message


def test_load_through_a_descriptor_another_instance_rewrote_is_unsupported():
    """No happens-before in the model: that a barrier orders the writer's release before the
    loader's acquire is not checked, so such a load is never part of a VERIFIED verdict."""
    from warpspin.syncir import BarSync
    from warpspin.syncir.ops import TensormapAcquire, TensormapRelease
    init = Elect((MbarInit(MBarRef("b"), 1),))
    writer = Process("writer", (init, MbarInitFence(), BarSync(Const(0), None),
                                Lanes(1, (TensormapWrite("tmA"), TensormapRelease())),
                                BarSync(Const(1), Const(64))), warps=(0, 1))
    loader = Process("loader", (MbarInitFence(), BarSync(Const(0), None),
                                BarSync(Const(1), Const(64)), TensormapAcquire("tmA"),
                                Lanes(1, (TmaLoad(MBarRef("b"), Const(4), desc="tmA"),))),
                     warps=(1, 2))
    k = Kernel("two", (writer, loader), (MBarrierDecl("b"),), tensormaps=(TensormapDecl("tmA"),))
    check(k)
    out = explore(k)
    assert out.violation is not None and out.violation.kind == "unsupported"
    assert "another instance rewrote" in out.violation.message
    assert verify_kernel(k).verdict == "unsupported"
