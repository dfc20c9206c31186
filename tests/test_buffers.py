"""Staged shared-memory buffers read by TMA stores (issue: races): the SyncIR ops in both
backends, quack's TMA-store epilogue protocol with each way to break it, and validity."""
import pytest

from backends import assert_every_engine
from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine.spin import lower_and_check
from warpspin.syncir import Const, Kernel, Process, check
from warpspin.syncir.interp import explore
from warpspin.syncir.ir import BufferDecl
from warpspin.syncir.ops import BarSync, FenceProxyAsync, SmemWrite, TmaStore
from warpspin.syncir.protocols import (ALIASED_BUG_EXPECT, ALIASED_BUGS, EPILOGUE_BUG_EXPECT,
                                      EPILOGUE_BUGS, PINGPONG_BUG_EXPECT, PINGPONG_BUGS,
                                      aliased_buffer, epilogue, pingpong_epilogue)
from warpspin.syncir.validate import InvalidKernel


@pytest.mark.parametrize("warps", (1, 2, 4))
def test_epilogue_correct_verifies_in_both_backends(warps):
    k = epilogue(warps=warps)
    check(k)
    assert explore(k).violation is None
    assert verify_kernel(k).verdict == "verified"


@pytest.mark.parametrize("bug", EPILOGUE_BUGS)
def test_epilogue_bug_is_reported_with_its_kind_and_line(bug):
    kind, line = EPILOGUE_BUG_EXPECT[bug]
    k = epilogue(bug=bug)
    out = explore(k)
    r = verify_kernel(k)
    if kind is None:
        assert out.violation is None and r.verdict == "verified"
        return
    assert out.violation is not None and out.violation.kind == kind
    assert r.verdict == "violation" and r.violations[0].kind == kind
    if line is not None:
        assert out.violation.loc.line == line
        assert r.violations[0].locations[0].line == line


PLAIN_CASES = [("epilogue", b) for b in (None, "no-fence", "no-wait", "wait-one-short")] + \
    [("mainloop", b) for b in (None, "release-before-wait", "read-after-release", "read-unfenced",
                               "fence-after-release", "write-unfenced")]


@pytest.mark.parametrize("protocol,bug", PLAIN_CASES)
def test_plain_encoding_agrees(protocol, bug):
    """The reductions are exact here too: the plain encoding reaches the same kind."""
    from warpspin.syncir import protocols
    k = epilogue(warps=3, bug=bug) if protocol == "epilogue" else \
        protocols.mainloop(consumers=2, bug=bug)
    expect = (EPILOGUE_BUG_EXPECT if protocol == "epilogue" else
              protocols.MAINLOOP_BUG_EXPECT).get(bug, (None,))[0]
    _, a = lower_and_check(k, timeout_s=60)
    _, b = lower_and_check(k, reduce=False, timeout_s=60)
    if expect is None:
        assert a.kind is None and b.kind is None
    else:
        assert a.kind in expect.split("|") and b.kind in expect.split("|")


def test_one_subtile_per_stage_needs_no_wait():
    """With as many stages as subtiles no stage is reused: no wait is needed before a write."""
    assert verify_kernel(epilogue(subtiles=2, stages=2, bug="no-wait")).verdict == "verified"


def _kernel(body_store, body_write=(), barrier=1, storers=(0,), instances=1):
    procs = [Process("store", body_store, warps=(0, 1), instances=instances)]
    if body_write:
        procs.append(Process("write", body_write, warps=(1, 2)))
    return Kernel("k", tuple(procs), (), buffers=(BufferDecl("sD", 2, storers, barrier),))


def _waited(store):
    from warpspin.syncir.ops import BulkCommit, BulkWaitRead
    srcs = (("sD", 0), ("sD", 1))
    return (*store, BulkCommit(stages=srcs, depth=1), BulkWaitRead(0, stages=srcs, depth=1))


def test_fenced_write_released_without_the_storer_reaches_it_through_another_barrier():
    """A writer fences, releases on the buffer's barrier in a generation without the storer,
    then meets it on another barrier: the fence lies on the way, and the stage's unret check
    makes any store the write is not ordered before a race: followed, verified."""
    store = _waited((BarSync(Const(2), Const(64)), TmaStore("sD", Const(0))))
    write = (SmemWrite("sD", Const(0)), FenceProxyAsync(), BarSync(Const(1), Const(32)),
             BarSync(Const(2), Const(64)))
    k = _kernel(store, write)
    assert explore(k).violation is None
    assert verify_kernel(k).verdict == "verified"


def test_unfenced_write_released_without_the_storer_is_unsupported():
    """The same with the storing thread fencing instead of the writer: whether its fence lies on
    the write's way through barrier 2 is not followed (unsupported, not a verdict)."""
    store = _waited((BarSync(Const(2), Const(64)), FenceProxyAsync(), TmaStore("sD", Const(0))))
    write = (SmemWrite("sD", Const(0)), BarSync(Const(1), Const(32)),
             BarSync(Const(2), Const(64)))
    k = _kernel(store, write)
    out = explore(k)
    assert out.violation is not None and out.violation.kind == "unsupported"
    assert verify_kernel(k).verdict == "unsupported"


def test_write_published_before_its_fence_is_not_counted_fenced():
    """A writer that synchronizes (barrier 2, with the storer) between its write and its fence:
    the write reaches the store along a way without the fence, so its fenced release in a
    generation without the storer is lost (unsupported) or still pending at the store (race),
    never verified."""
    from warpspin.syncir.ops import fence_first
    store = _waited((BarSync(Const(2), Const(64)), TmaStore("sD", Const(0))))
    write = (SmemWrite("sD", Const(0)), BarSync(Const(2), Const(64)), FenceProxyAsync(),
             BarSync(Const(1), Const(32)))
    k = _kernel(store, write)
    assert not fence_first(k, "sD")
    out = explore(k)
    assert out.violation is not None and out.violation.kind in ("unsupported", "race")
    assert verify_kernel(k).verdict != "verified"


@pytest.mark.parametrize("bug", (None, *PINGPONG_BUGS))
def test_pingpong_epilogue_two_storers_agree_in_every_engine(bug):
    """Two storing threads per CTA (a ping-pong epilogue): the interpreter's exhaustive search,
    SPIN (reduced and plain) and the happens-before engine give the same verdict and kind."""
    k = pingpong_epilogue(bug)
    check(k)
    assert_every_engine(k, *PINGPONG_BUG_EXPECT.get(bug, (None, None)))


def test_three_storers_in_a_cta_or_one_named_twice_are_invalid():
    procs = tuple(Process(f"s{i}", (TmaStore("sD", Const(0)),), warps=(i, i + 1))
                  for i in range(3))
    for storers in ((0, 1, 2), (0, 0)):
        k = Kernel("k", procs[:len(storers)] if storers == (0, 0) else procs, (),
                   buffers=(BufferDecl("sD", 2, storers, 1),))
        with pytest.raises(InvalidKernel, match="storing process"):
            check(k)


def test_stage_out_of_range_is_invalid_operand():
    from warpspin.syncir.ir import Var, Assign
    k = _kernel((Assign("s", 2), SmemWrite("sD", Var("s")), TmaStore("sD", Const(0))))
    out = explore(k)
    assert out.violation is not None and out.violation.kind == "invalid-operand"


def test_validity():
    with pytest.raises(InvalidKernel, match="not one of its storing processes"):
        check(_kernel((TmaStore("sD", Const(0)),), storers=()))
    with pytest.raises(InvalidKernel, match="instances"):
        check(Kernel("k", (Process("store", (TmaStore("sD", Const(0)),), warps=(0, 2),
                                   instances=2),), (),
                     buffers=(BufferDecl("sD", 2, (0,), 1),)))
    with pytest.raises(InvalidKernel, match="stage 3"):
        check(_kernel((TmaStore("sD", Const(3)),)))


# -- stages TMA loads fill and wgmma or threads read (the GEMM mainloop) -----------------------

from warpspin.syncir.protocols import MAINLOOP_BUG_EXPECT, MAINLOOP_BUGS, mainloop  # noqa: E402

LOADS = CheckOptions(load_races=True)


@pytest.mark.parametrize("consumers,reads", ((1, "wgmma"), (2, "wgmma"), (2, "generic"),
                                             (2, "write")))
def test_mainloop_correct_verifies_in_both_backends(consumers, reads):
    k = mainloop(consumers=consumers, reads=reads)
    check(k)
    assert explore(k).violation is None
    assert verify_kernel(k, opts=LOADS).verdict == "verified"


@pytest.mark.parametrize("bug", MAINLOOP_BUGS)
def test_mainloop_bug_is_reported_with_its_kind_and_line(bug):
    kinds, line = MAINLOOP_BUG_EXPECT[bug]
    k = mainloop(consumers=2, bug=bug)
    out = explore(k)
    r = verify_kernel(k, opts=LOADS)
    assert out.violation is not None and out.violation.kind in kinds.split("|")
    assert r.verdict == "violation" and r.violations[0].kind in kinds.split("|")
    if line is not None:
        assert out.violation.loc.line == line
        assert r.violations[0].locations[0].line == line


def test_a_fill_never_runs_early():
    """R8 leaves a TMA load that fills a staged buffer alone: its issue reads the stage's
    unretired wgmma reads, which the consumers' waits change."""
    from warpspin.lower.promela import lower
    assert not any(r.startswith("R8") for r in lower(mainloop()).reductions)


def test_load_races_are_checked_by_both_engines_unless_spin_is_told_not_to():
    """SPIN with --no-load-races: a kernel's fills and wgmma reads go before the search, and the
    verdict is not VERIFIED: their races were not checked. By default SPIN checks them, and the
    happens-before engine always: the same kernel is a race."""
    from warpspin.report.render import render_text as render
    k = mainloop(consumers=2, bug="release-before-wait")
    r = verify_kernel(k, opts=CheckOptions(engine="spin", load_races=False))
    assert r.outcome == "not-checked" and r.config["load_races"].startswith("not checked")
    assert "--no-load-races" in render(r).splitlines()[1]
    r = verify_kernel(k, opts=CheckOptions(engine="spin"))
    assert r.verdict == "violation" and r.violations[0].kind == "race", str(r)
    r = verify_kernel(k)
    assert r.stats.engine == "happens-before" and "load_races" not in r.config, str(r)
    assert r.verdict == "violation" and r.violations[0].kind == "race", str(r)


def test_a_buffer_with_an_access_the_extractor_cannot_attribute_is_not_followed():
    """Fail closed: where TMA loads fill a buffer, any other access of its bytes (here inline
    PTX through an address the model does not follow) leaves its races unchecked, and the
    verdict's assumptions say so; writes the same for a buffer TMA stores read."""
    from types import SimpleNamespace
    from warpspin.extract.build import _staged_buffers
    from warpspin.syncir import MBarRef, TmaLoad
    key = (7, 0, 1024, 2, 512)
    for uses, writes, body in (
            ([(None, None, "inline PTX@k.py:9")], [], (TmaLoad(MBarRef("b", Const(0)), 512,
                                                                dst="buf0"),)),
            ([], [(7, (0, 64), "st.shared@k.py:8")], (TmaStore("buf0", Const(0)),))):
        ctx = SimpleNamespace(buffers={key: ["buf0", "sX", "k.py:5"]}, smem_writes=writes,
                              staged_writes={}, smem_uses=uses, staged_uses={},
                              assumptions=set(), unstaged_stores=[], unchecked=[],
                              data_writes=[])
        assert _staged_buffers(ctx, [(0, 0, 32, body, [])]) == {}
        (u,) = ctx.unchecked
        assert (u.property, u.what, u.loc) == ("race", "sX", "k.py:5") and "k.py:" in u.why


@pytest.mark.parametrize("bug", (None,) + ALIASED_BUGS)
@pytest.mark.parametrize("engine", ("hb", "spin"))
def test_a_buffer_filled_read_and_then_written_is_checked_both_ways(bug, engine):
    """flash-attn-4's SM90 forward writes O into the bytes of sQ: a generic write over a stage a
    TMA load still fills or a wgmma still reads is a race, in both engines and the interpreter."""
    k = aliased_buffer(bug)
    out = explore(k)
    r = verify_kernel(k, opts=CheckOptions(engine=engine, load_races=True, timeout_s=120))
    if bug is None:
        assert out.violation is None and r.verdict == "verified", r
        return
    kinds, line = ALIASED_BUG_EXPECT[bug]
    assert out.violation.kind in kinds.split("|")
    assert r.verdict == "violation" and r.violations[0].kind in kinds.split("|"), r
    if line is not None:
        assert out.violation.loc.line == line and r.violations[0].locations[0].line == line


@pytest.mark.parametrize("access", ("read", "write"))
def test_a_warp_keeps_its_proxy_fence_when_it_accesses_a_filled_buffer(access):
    """A warp's fence.proxy.async orders its generic accesses of a stage a TMA load refills:
    the extractor keeps it in a warp that reads or writes a followed buffer even when no TMA
    store reads any (dropped, the fenced access would be a false proxy-race)."""
    from warpspin.extract.build import _only_buffers
    from warpspin.syncir.ops import SmemRead
    staged = {"sA": ["sA", None, 2, False]}
    acc = SmemRead((("sA", Const(0)),)) if access == "read" else SmemWrite("sA", Const(0))
    body = _only_buffers((acc, FenceProxyAsync()), staged)
    assert any(isinstance(s, FenceProxyAsync) for s in body), body
    assert not any(isinstance(s, FenceProxyAsync) for s in _only_buffers((FenceProxyAsync(),),
                                                                         staged))
