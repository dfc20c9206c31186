"""cp.async groups (issue: races): each thread's copies into its own partition of a buffer, its
commits and waits, the accesses through that partition and its exit. The SyncIR ops in both
backends, an Ampere-style double-buffered loop with each way to break it, validity."""
import pytest

from backends import assert_every_engine
from warpspin.api import verify_kernel
from warpspin.engine.spin import lower_and_check
from warpspin.syncir import Const, Kernel, Process, check
from warpspin.syncir.interp import explore
from warpspin.syncir.ir import BufferDecl, For, Param, Var
from warpspin.syncir.ops import CpAsync, CpAsyncCommit, CpAsyncWait, SmemOwn
from warpspin.syncir.protocols import (CP_ASYNC_BUG_EXPECT, CP_ASYNC_BUGS, SHARED_VECTOR_BUG_EXPECT,
                                      SHARED_VECTOR_BUGS, cp_async_loop, shared_vector)
from warpspin.syncir.validate import InvalidKernel


@pytest.mark.parametrize("warps", (1, 3))
def test_loop_correct_verifies_in_both_backends(warps):
    k = cp_async_loop(warps=warps)
    check(k)
    assert explore(k).violation is None
    assert verify_kernel(k).verdict == "verified"


@pytest.mark.parametrize("bug", CP_ASYNC_BUGS)
def test_loop_bug_is_reported_with_its_kind_and_line(bug):
    kind, line = CP_ASYNC_BUG_EXPECT[bug]
    k = cp_async_loop(bug=bug)
    out = explore(k)
    r = verify_kernel(k)
    assert out.violation is not None and out.violation.kind == kind
    assert r.verdict == "violation" and r.violations[0].kind == kind
    if line is not None:
        assert out.violation.loc.line == line
        assert r.violations[0].locations[0].line == line


@pytest.mark.parametrize("bug", (None, *CP_ASYNC_BUGS))
def test_plain_encoding_agrees(bug):
    k = cp_async_loop(warps=2, bug=bug)
    _, a = lower_and_check(k, timeout_s=60)
    _, b = lower_and_check(k, reduce=False, timeout_s=60)
    assert a.kind == b.kind == CP_ASYNC_BUG_EXPECT.get(bug, (None,))[0]


def test_no_drain_is_a_race_only_when_the_loop_runs_zero_times():
    """Without the drain after the loop the write races only for N = 0: a loop that runs waits
    for the copy of tile 0 itself, and prefetches nothing past the last tile."""
    k = cp_async_loop(bug="no-drain")
    for n, kind in ((0, "race"), (1, None), (3, None)):
        one = Kernel(k.name, k.processes, k.mbarriers, params=(Param("N", n),),
                     buffers=k.buffers)
        assert explore(one).violation is None if kind is None else \
            explore(one).violation.kind == kind, n


def _kernel(body, depth=1, stages=1):
    return Kernel("k", (Process("t", body, warps=(0, 1)),), (),
                  buffers=(BufferDecl("sX", stages),))


def test_uncommitted_copies_are_not_waited_for():
    """cp.async.wait_group waits for committed groups only (PTX 9.7.9.24.5)."""
    k = _kernel((CpAsync("sX", Const(0)), CpAsyncWait(0, ("sX",), 1),
                 SmemOwn("sX", Const(0), False, 1)))
    assert explore(k).violation.kind == "race"
    fixed = _kernel((CpAsync("sX", Const(0)), CpAsyncCommit(("sX",), 1),
                     CpAsyncWait(0, ("sX",), 1), SmemOwn("sX", Const(0), False, 1)))
    assert explore(fixed).violation is None


def test_a_wait_for_older_groups_leaves_the_newest():
    """wait_group 1 with two groups: the older one retires, the newer does not."""
    body = (CpAsync("sX", Const(0)), CpAsyncCommit(("sX",), 2),
            CpAsync("sX", Const(1)), CpAsyncCommit(("sX",), 2),
            CpAsyncWait(1, ("sX",), 2))
    ok = _kernel((*body, SmemOwn("sX", Const(0), False, 2), CpAsyncWait(0, ("sX",), 2)),
                 stages=2)
    bad = _kernel((*body, SmemOwn("sX", Const(1), False, 2), CpAsyncWait(0, ("sX",), 2)),
                  stages=2)
    assert explore(ok).violation is None
    out = explore(bad)
    assert out.violation.kind == "race" and "stage 1" in out.violation.message


def test_validity():
    with pytest.raises(InvalidKernel):
        check(_kernel((CpAsync("sY", Const(0)),)))
    with pytest.raises(InvalidKernel):
        check(_kernel((CpAsync("sX", Const(1)),)))
    with pytest.raises(InvalidKernel):
        check(_kernel((CpAsyncWait(1, ("sX",), 1),)))


def test_computed_stage_out_of_range_is_invalid_operand():
    k = Kernel("k", (Process("t", (For("i", 0, 3, (CpAsync("sX", Var("i")),
                                                   CpAsyncCommit(("sX",), 1),
                                                   CpAsyncWait(0, ("sX",), 1))),),
                               warps=(0, 1)),), (), buffers=(BufferDecl("sX", 2),))
    assert explore(k).violation.kind == "invalid-operand"


def test_cp_async_buffers_stay_when_load_races_are_not_checked():
    """Leaving load races out (the default) keeps a cp.async buffer of a kernel that also has
    a stage TMA loads fill: the cp.async checks still run."""
    from warpspin.syncir.passes import without_load_races
    from warpspin.syncir.ops import SmemRead
    k = cp_async_loop(bug="no-drain")
    reader = Process("reader", (SmemRead((("sA", Const(0)),)),), warps=(4, 5))
    both = Kernel(k.name, (*k.processes, reader), k.mbarriers, params=k.params,
                  buffers=(*k.buffers, BufferDecl("sA", 1)))
    out = without_load_races(both)
    check(out)
    assert [b.name for b in out.buffers] == ["sX"]
    assert verify_kernel(both).violations[0].kind == "race"


@pytest.mark.parametrize("bug", (None, *SHARED_VECTOR_BUGS))
def test_shared_vector_agrees_in_every_engine(bug):
    """A vector every thread copies a part of and reads whole (quack's row-vector epilogue):
    the interpreter's exhaustive search, SPIN (reduced and plain) and the happens-before
    engine give the same verdict and kind, at the read."""
    k = shared_vector(bug=bug)
    check(k)
    assert_every_engine(k, *SHARED_VECTOR_BUG_EXPECT.get(bug, (None, None)))


def test_shared_reads_and_own_writes_of_one_buffer_are_invalid():
    """A thread writing its own part while others read the whole: the others' reads would race
    with that write, which `cpw` does not count, so such a kernel is refused."""
    body = (CpAsync("v", Const(0)), SmemOwn("v", Const(0), True),
            SmemOwn("v", Const(0), False, shared=True))
    k = Kernel("k", (Process("t", body, warps=(0, 2), instances=2),), (),
               buffers=(BufferDecl("v", 1),))
    with pytest.raises(InvalidKernel, match="only cp.async copies may write it"):
        check(k)
