"""Differential tests: SPIN on the lowered model against the reference interpreter, and the reduced
encoding against the plain one, on random small protocols (tests/protocol_gen.py), on the
hand-minimized disagreements in tests/regressions/, and on the reference ring and cluster examples.

For every protocol: SPIN finds a violation iff the interpreter's exhaustive search reaches one;
SPIN's kind is one of the kinds the interpreter can reach; SPIN's trail replays in
`interp.replay` to that kind and is a shortest counterexample: its error depth (below) is the
interpreter's.

CI must not depend on luck: under `make test` the random tests run a fixed, derandomized set of
examples (the same protocols on every run, no example database). `make fuzz`
(WARPSPIN_DIFF_FUZZ=1, WARPSPIN_DIFF_EXAMPLES=n) draws fresh random ones and prints how many ran.
"""
import collections
import contextlib
import importlib.util
import os
import dataclasses
import pathlib
import shutil

import pytest

from warpspin.syncir.flat import VISIBLE, flatten
from hypothesis import HealthCheck, given, settings

from diffstats import write_lines
from hb_gen import flag_protocols, flag_stages, mutants, read_ring
from protocol_gen import (DRAWN, REJECTED, REQUIRED_CONSTRUCTS, constructs, prefix_protocols, protocols,
                          with_prefix_copies)
from warpspin.syncir.ops import GlobalAdd, GlobalWait, MmaRead, SmemLoad
from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine import REDUCTION_UNSOUND, check, lower_and_check
from warpspin.lower import lower
from warpspin.syncir import interp, validate
from warpspin.syncir.ir import Const, Elect, For, Kernel, Lanes, MBarRef, MBarrierDecl, Process, walk_stmts
from warpspin.syncir.ops import (Tcgen05Commit, BarArrive, ClusterArrive, ClusterWait, Exit, MbarArrive, MbarArriveExpectTx, MbarInit, MbarInitFence, MbarTestWait, MbarWait, SmemStore, TmaLoad)
from warpspin.lower import promela
from warpspin.syncir.protocols import PREFIX_BUG_EXPECT, PREFIX_BUGS, RING_BUGS, prefix_ring, ring

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")

FUZZ = bool(os.environ.get("WARPSPIN_DIFF_FUZZ"))
EXAMPLES = int(os.environ.get("WARPSPIN_DIFF_EXAMPLES", "1000" if FUZZ else "64"))
ENGINE_KINDS = {"deadlock"}  # SPIN reports deadlocks unclassified; every other kind is its own
REGRESSIONS = pathlib.Path(__file__).parent / "regressions"


def diff_settings(n: int):
    """Derandomized (a fixed seed from the test itself, no database: every CI run checks the same
    protocols) unless WARPSPIN_DIFF_FUZZ is set; `n` examples."""
    return settings(max_examples=n, deadline=None, database=None, derandomize=not FUZZ,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# examples per test: ran (drawn), checked (the interpreter's search completed and every
# comparison held); printed at the end of the module (make fuzz reports them)
STATS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request):
    yield
    if not STATS:
        return
    mode = "random (fuzz)" if FUZZ else "derandomized"
    lines = [f"differential examples ({mode}):"]
    for name, c in sorted(STATS.items()):
        lines.append(f"  {name}: {c['ran']} ran, {c['checked']} checked and agreed, "
                     f"{c['skipped']} too large for the interpreter")
    total = sum(c["checked"] for c in STATS.values())
    lines.append(f"  total: {sum(c['ran'] for c in STATS.values())} ran, {total} agreed")
    for gen, n in sorted(DRAWN.items()):
        lines.append(f"  generator {gen}: {REJECTED[gen]} of {n} draws rejected as invalid "
                     f"SyncIR ({REJECTED[gen] / n:.1%})")
    write_lines(request, lines)


def error_depth(events, kind) -> int:
    """Steps to the state where the error shows: a deadlock is its state (every event), a step
    violation is found on a step out of the state before it. Both breadth-first searches return
    an error of least depth; at equal depth they may pick different kinds (a deadlock after d
    steps ties with a violation on the (d+1)-th step, tests/regressions/tie_deadlock_vs_step.py),
    so trails are compared by depth, not by their number of events."""
    steps = len([e for e in events if type(e).__name__ != "ParamChoice"])
    return steps if kind == "deadlock" else steps - 1


def spin_agrees(k, reduce: bool, max_states: int = 50_000, fuse: bool = False, stats: str = ""):
    """With `fuse` (R6): a `reduction-unsound` run is re-checked unfused (lower_and_check) and
    that result is compared; a fused counterexample may be longer in trace events than the
    interpreter's shortest (a fused block is one step of the model but two events).
    `stats`: the STATS entry counting this example."""
    c = STATS[stats] if stats else collections.Counter()
    assert validate(k) == [], validate(k)  # the backends take valid SyncIR only
    c["ran"] += 1
    kinds, complete = interp.violation_kinds(k, max_states=max_states)
    if not complete:
        c["skipped"] += 1
        return None
    m, r = lower_and_check(k, reduce=reduce, fuse=fuse, timeout_s=60, memory_mb=512)
    if m.integer_problems:
        # the model's 32-bit integers may wrap where SyncIR's do not: no agreement is expected,
        # and the pipeline must then never say VERIFIED nor show a trail that does not replay
        res = verify_kernel(k, opts=CheckOptions(timeout_s=60, memory_mb=512, reduce=reduce, engine="spin"))
        assert res.verdict in ("inconclusive", "violation"), str(res)
        if res.verdict == "violation":
            assert res.violations[0].kind in kinds and res.violations[0].replayed
        else:
            assert "integer range" in " ".join(res.reasons), res.reasons
        c["checked"] += 1
        return r
    assert r.truncated == (), r.truncated
    assert r.kind != REDUCTION_UNSOUND
    if not kinds:
        assert r.kind is None and r.complete, (r.kind, r.trail_output[-2000:])
        c["checked"] += 1
        return r
    assert r.kind is not None, f"interpreter reaches {kinds}, SPIN nothing"
    assert r.kind in kinds, (r.kind, kinds)
    rp = interp.replay(k, r.events, expect_kind=r.kind)
    assert rp.ok, rp.error
    ref = interp.explore(k, max_states=max_states)
    got = error_depth(r.events, r.kind)
    want = error_depth(ref.trace, ref.violation.kind)
    fused_r6 = fuse and not r.refused and any(x.startswith("R6") for x in r.reductions)
    if fused_r6 or any(x.startswith(("R8", "R10")) for x in r.reductions):
        # a fused step (R6, R8's early issue, R10) is one model step but two trace events
        assert got >= want
    else:
        # a process encoded as its own proctype whose code starts with local computation spends
        # one (invisible) SPIN step on it, so BFS is shortest in SPIN steps: at most that many
        # visible steps longer than the interpreter's shortest (docs/spin.md, "Trails")
        hidden = sum(fp.process.instances for fp in flatten(k)
                     if not isinstance(fp.code[0], VISIBLE))
        assert want <= got <= want + hidden, (got, want, hidden, r.kind, ref.violation.kind)
    c["checked"] += 1
    return r


@diff_settings(EXAMPLES)
@given(protocols())
def test_reduced_spin_matches_interpreter(k):
    spin_agrees(k, reduce=True, stats="reduced vs interpreter")


@diff_settings(max(20, EXAMPLES // 2))
@given(protocols(extra="tensormap"))
def test_tensormap_protocols_match_interpreter(k):
    """Loads through a rewritten tensormap, its writes and fences, bulk commits and waits."""
    spin_agrees(k, reduce=True, fuse=True, stats="tensormaps vs interpreter")


@diff_settings(max(20, EXAMPLES // 2))
@given(protocols(extra="buffer"))
def test_buffer_protocols_match_interpreter(k):
    """Staged buffers: writes, proxy fences, TMA stores and their bulk groups, the hand-over
    barrier, fills, wgmma reads and groups, thread reads."""
    spin_agrees(k, reduce=True, fuse=True, stats="buffers vs interpreter")


@diff_settings(max(20, EXAMPLES // 4))
@given(protocols(extra="counter"))
def test_counter_protocols_match_interpreter(k):
    """atom.inc of a global counter whose value decides an arrive, with the environment's takes."""
    spin_agrees(k, reduce=True, fuse=True, stats="counters vs interpreter")


@diff_settings(max(20, EXAMPLES // 4))
@given(protocols(extra="wdata"))
def test_wgmma_data_protocols_match_interpreter(k):
    """Shared data a wgmma reads: element stores and loads of its cells, proxy fences, wgmma
    reads and the groups that retire them."""
    spin_agrees(k, reduce=True, fuse=True, stats="wgmma data vs interpreter")


@diff_settings(max(20, EXAMPLES // 4))
@given(protocols(extra="cpasync"))
def test_cp_async_protocols_match_interpreter(k):
    """cp.async copies into a thread's own part, their groups, accesses through that part, and
    the check at exit."""
    spin_agrees(k, reduce=True, fuse=True, stats="cp.async vs interpreter")


@diff_settings(max(20, EXAMPLES // 4))
@given(protocols(extra="dsmem"))
def test_dsmem_protocols_match_interpreter(k):
    """Two CTAs: stores into a CTA's shared memory (some with their word: a cell of that CTA's
    shared data) and the scope of the arrives that release them to the peer."""
    spin_agrees(k, reduce=True, fuse=True, stats="DSMEM vs interpreter")


@diff_settings(max(20, EXAMPLES // 4))
@given(protocols(extra="tcgen05"))
def test_tcgen05_protocols_match_interpreter(k):
    """tcgen05 commits (arrives that land later, multicast with two CTAs), TMEM allocation
    (a blocking alloc, frees, the relinquished permit, the check at exit) and accumulator data
    (MMA writes of a TMEM buffer's stages, tcgen05.ld reads and their wait::ld)."""
    spin_agrees(k, reduce=True, fuse=True, stats="tcgen05 vs interpreter")


@diff_settings(max(16, EXAMPLES // 6))
@given(protocols(extra="flag"))
def test_flag_protocols_match_interpreter(k):
    """Adds to a global flag and spin loops on it, with one CTA, two CTAs of one cluster and two
    clusters (the scope each needs), sems that do and do not order."""
    spin_agrees(k, reduce=True, fuse=True, stats="flags vs interpreter")


@diff_settings(max(16, EXAMPLES // 4))
@given(flag_protocols())
def test_clustered_flag_protocols_match_interpreter(k):
    """Two clusters of two CTAs: flags across the clusters, remote arrives and the cluster
    barrier inside each (hb_gen.flag_protocols)."""
    spin_agrees(k, reduce=True, fuse=True, stats="clustered flags vs interpreter")


@pytest.mark.parametrize("tiles,data", [((1, 0), False), ((1, 1), True), ((2, 0), True)])
def test_fused_moe_synchronization_matches_interpreter(tiles, data):
    """The fused-MoE example's synchronization (hb_gen.flag_stages) and, without the leader's
    wait for the hand-back, its parity-aliasing."""
    for bp in (True, False):
        spin_agrees(flag_stages(tiles, backpressure=bp, data=data), reduce=True, fuse=True,
                    stats="clustered flags vs interpreter")


@pytest.mark.parametrize("bug", [None, "consumer-next", "overread"])
def test_run_time_reads_match_interpreter(bug):
    """Trip counts read at a run-time index (hb_gen.read_ring: GlobalRead's index check and its
    select of the launch values), and every one-edit mutant of the correct ring."""
    spin_agrees(read_ring(bug=bug), reduce=True, fuse=True, stats="run-time reads vs interpreter")
    if bug is None:
        for m in mutants(read_ring()):
            if not validate(m):
                spin_agrees(m, reduce=True, fuse=True, stats="run-time reads vs interpreter")


@diff_settings(max(20, EXAMPLES // 2))
@given(protocols())
def test_fused_spin_matches_interpreter(k):
    """R6: reduced + fused (falling back to unfused on reduction-unsound) against the
    interpreter: a violation iff the interpreter reaches one, a kind it reaches, a trail that
    replays to that kind."""
    spin_agrees(k, reduce=True, fuse=True, stats="fused vs interpreter")


@diff_settings(max(20, EXAMPLES // 4))
@given(prefix_protocols())
def test_prefix_symmetry_matches_interpreter(k):
    """R12: the initializing process joins the records of the process that runs its code after
    the inits; SPIN on that model against the interpreter on the kernel as written."""
    spin_agrees(k, reduce=True, fuse=True, stats="prefix symmetry vs interpreter")


@diff_settings(3)
@given(prefix_protocols(extra="tensormap"))
def test_prefix_symmetry_with_a_tensormap_matches_interpreter(k):
    """The case `make fuzz` found: R12 on a protocol with a tensormap (its rewrites, release,
    acquire and loads through it), in CI's derandomized profile too."""
    assert k.tensormaps
    spin_agrees(k, reduce=True, fuse=True, stats="prefix symmetry (tensormap) vs interpreter")


def test_prefix_copies_keep_every_declaration():
    """Regression (`make fuzz` on f10baf9): the prefix-symmetry generator rebuilt its kernel
    without the tensormaps, so a TmaLoad named an undeclared one; validate() rejects that kernel,
    and the interpreter and the lowering raised KeyError on it. The copy keeps every
    declaration, and the generators reject a draw validate() refuses."""
    import warpspin.syncir.ir as ir_mod
    import warpspin.syncir.ops as ops_mod
    from warpspin.syncir.ir import TensormapDecl
    names = {n: getattr(m, n) for m in (ir_mod, ops_mod) for n in dir(m) if not n.startswith("_")}
    text = (pathlib.Path(__file__).parent / "data" / "fuzz_undeclared_tensormap.txt").read_text()
    broken = eval(text, names)  # the falsifying kernel as Hypothesis printed it
    assert any("not a declared tensormap" in p.message for p in validate(broken))
    base = dataclasses.replace(broken, tensormaps=(TensormapDecl("t"),), processes=tuple(
        p for p in broken.processes if p.role != "p0x"))
    k = with_prefix_copies(base, lambda: 1)
    assert validate(k) == [] and k.tensormaps == base.tensormaps
    assert [p.role for p in k.processes].count("p0x") == 1
    assert spin_agrees(k, reduce=True, fuse=True) is not None


@pytest.mark.parametrize("fence_in_prefix", [False, True])
@pytest.mark.parametrize("bug", [None, *PREFIX_BUGS])
def test_prefix_ring(bug, fence_in_prefix):
    """The ring whose first consumer warp initializes the barriers: R12 applies, and every bug
    (one where only the initializing warp may use a barrier before it is published) keeps its
    kind, its replay and its shortest depth."""
    k = prefix_ring(bug=bug, fence_in_prefix=fence_in_prefix)
    assert any(x.startswith("R12") for x in lower(k).reductions)
    r = spin_agrees(k, reduce=True, fuse=True)
    assert r.kind == PREFIX_BUG_EXPECT.get(bug)


def test_fusion_refusal_falls_back():
    """The monitor fires on a ring whose empty barrier completes a phase while the producer's
    passing wait is pending (two-behind): the unfused model then decides (parity-aliasing)."""
    k = ring(2, 4, 2, bug="two-behind")
    r = check(lower(k, fuse=True))
    assert r.kind == REDUCTION_UNSOUND
    m, r = lower_and_check(k)
    assert r.refused and r.kind == "parity-aliasing" and m.fused == ()
    assert interp.replay(k, r.events, expect_kind=r.kind).ok


@diff_settings(max(20, EXAMPLES // 5))
@given(protocols())
def test_plain_and_reduced_agree(k):
    red = spin_agrees(k, reduce=True)
    plain = spin_agrees(k, reduce=False, stats="plain and reduced vs interpreter")
    if red is not None:
        assert (red.kind is None) == (plain.kind is None)
        assert plain.states >= red.states or red.kind is not None


def test_never_taken_early_issue_keeps_a_local_step():
    """make fuzz found it: an R8 early issue inside a loop of 0 trips put its barrier's guard
    into the step before the loop, which made that step global and SPIN's partial-order
    reduction interleave it (16 reduced states against 13 plain). A branch on known values
    now takes only its way."""
    a = MBarRef("a")
    p0 = Process("p0", (Elect((MbarInit(a, 1), MbarInit(MBarRef("b"), 1))),
                        For("k", 0, 0, (MbarArrive(a),))), warps=(0, 1))
    p1 = Process("p1", (For("k", 0, 0, (Elect((TmaLoad(a, 16),)),)),), warps=(2, 3))
    k = Kernel("random", (p0, p1), (MBarrierDecl("a"), MBarrierDecl("b")))
    assert any(x.startswith("R8") for x in lower(k).reductions)
    red = spin_agrees(k, reduce=True)
    plain = spin_agrees(k, reduce=False)
    assert red.kind is None and plain.kind is None
    assert red.states <= plain.states, (red.states, plain.states)


def cluster_kernel(mask=3, wait=True, expect=64):
    """Two CTAs: each initializes b, fences and joins the cluster barrier (relaxed arrive + wait);
    CTA 0 multicasts one TMA load into b of the CTAs in `mask`; consumers wait on b."""
    b = MBarRef("b")
    prod = (Elect((MbarInit(b, 1), MbarInitFence())), ClusterArrive(True),
            *((ClusterWait(),) if wait else ()), Elect((MbarArriveExpectTx(b, expect),)))
    lead = prod + (Elect((TmaLoad(b, 64, multicast=Const(mask)),)),)
    procs = []
    for c in range(2):
        procs.append(Process("p", lead if c == 0 else prod, cta=c, threads=32))
        procs.append(Process("c", (ClusterArrive(), ClusterWait(), MbarWait(b, 0)), cta=c,
                             threads=32, instances=2, warps=(1, 3)))
    return Kernel("cluster", tuple(procs), (MBarrierDecl("b"),), num_ctas=2)


@pytest.mark.parametrize("args,kind", [
    (dict(), None), (dict(mask=1), "deadlock"), (dict(mask=4), "scope"),
    (dict(wait=False), "uninitialized-barrier"), (dict(expect=32), "deadlock")])
@pytest.mark.parametrize("reduce", [True, False])
def test_cluster_barrier_and_multicast(args, kind, reduce):
    k = cluster_kernel(**args)
    r = spin_agrees(k, reduce)
    assert r.kind == kind
    assert lower(k, reduce=reduce).cta_procs == ()  # the CTAs interact: no split


@pytest.mark.parametrize("bug", (None,) + RING_BUGS)
def test_independent_ctas_are_exact(bug):
    """Two identical CTAs that never interact: one is checked; the verdict, the kind and the
    trail length (deadlocks: completed by the other CTA's shortest path to a terminal state)
    are those of the whole kernel."""
    k = ring(2, 3 if bug != "two-behind" else 2, 2 if bug == "two-behind" else 1, ctas=2, bug=bug)
    m = lower(k)
    assert m.cta_procs == ((0, 1), (2, 3)) and m.checked.num_ctas == 1
    assert any(r.startswith("independent-ctas") for r in m.reductions)
    r = spin_agrees(k, reduce=True, max_states=100_000)
    assert r is not None, "the interpreter's search did not complete"
    if bug is None:
        assert r.kind is None


# ---------------------------------------------------------------------------- the generator

def _in_lanes(body, inside=False):
    """(statement, inside a Lanes) for every statement of a body."""
    for s in body:
        yield s, inside
        for sub in ("then", "else_", "body"):
            if hasattr(s, sub):
                yield from _in_lanes(getattr(s, sub), inside or isinstance(s, Lanes))


@diff_settings(300)
@given(protocols())
def test_generated_protocols_are_valid(k):
    """Only SyncIR that is valid under the core's rules: an instance is at most one warp,
    bar.arrive names a thread count, no exit inside Lanes, TMA loads only inside Lanes, waits
    and test-waits only on the executing CTA's own barriers."""
    assert validate(k) == []
    for p in k.processes:
        assert 1 <= p.threads <= 32
        for s, lanes in _in_lanes(p.body):
            if isinstance(s, BarArrive):
                assert s.threads is not None
            if isinstance(s, Exit):
                assert not lanes
            if isinstance(s, TmaLoad):
                assert lanes
            if isinstance(s, (MbarWait, MbarTestWait)):
                assert s.bar.cta is None


def test_generator_covers_every_construct():
    """The random protocols reach every construct (cluster barriers, several CTAs, multicast,
    remote arrives, While, dynamic barrier ids, Lanes > 1, test-waits, exits, params...)."""
    seen = collections.Counter()

    @diff_settings(500)
    @given(protocols())
    def draw(k):
        seen.update(constructs(k))

    draw()
    missing = [c for c in REQUIRED_CONSTRUCTS if not seen[c]]
    assert not missing, (missing, seen)


# ---------------------------------------------------------------------------- regressions

def _regressions():
    return sorted(p for p in REGRESSIONS.glob("*.py") if not p.name.startswith("_"))


def load_regression(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"regression_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("mode", ["reduced", "plain", "fused"])
@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.stem)
def test_regression_protocols(path, mode):
    """Each disagreement the random protocols found, minimized by hand (tests/regressions/*.py):
    the interpreter reaches exactly the kinds the hardware semantics reaches (`KINDS`, or one of
    the module's `ALTERNATIVES`: a model bound instead), and SPIN agrees with it in every
    encoding."""
    mod = load_regression(path)
    k = mod.kernel()
    kinds, complete = interp.violation_kinds(k, max_states=200_000)
    assert complete
    allowed = [set(mod.KINDS)] + [set(x) for x in getattr(mod, "ALTERNATIVES", ())]
    assert kinds in allowed, (kinds, allowed)
    r = spin_agrees(k, reduce=mode != "plain", fuse=mode == "fused", max_states=200_000)
    assert r is not None


@contextlib.contextmanager
def _shared_slots(n: int):
    """Every symmetric process with at least `n` records in shared record slots."""
    old = promela.SHARED_SLOTS_MIN
    promela.SHARED_SLOTS_MIN = n
    try:
        yield
    finally:
        promela.SHARED_SLOTS_MIN = old


@diff_settings(max(20, EXAMPLES // 4))
@given(protocols())
def test_shared_slots_match_interpreter(k):
    """Record slots as SPIN processes of one proctype (and the deadlock watcher), for every
    symmetric process of two or more records: kinds, replays and depths as the interpreter's."""
    with _shared_slots(2):
        spin_agrees(k, reduce=True, fuse=True, stats="shared slots vs interpreter")


@diff_settings(max(20, EXAMPLES // 8))
@given(prefix_protocols())
def test_shared_slots_with_prefix_symmetry_match_interpreter(k):
    with _shared_slots(2):
        spin_agrees(k, reduce=True, fuse=True, stats="shared slots + R12 vs interpreter")


@pytest.mark.parametrize("ctas", [1, 2])
@pytest.mark.parametrize("bug", [None, *RING_BUGS])
def test_shared_slots_on_rings(bug, ctas):
    """Shared slots change the text, not the transition system: the same states and
    transitions as one proctype per process, plus the watcher's one step at each terminal state
    of a kernel whose threads all exited; the same kind."""
    k = ring(stages=2, trips=3, consumers=4, bug=bug, ctas=ctas)
    with _shared_slots(0):
        plain = lower_and_check(k, timeout_s=60)[1]
    with _shared_slots(2):
        m, shared = lower_and_check(k, timeout_s=60)
    assert m.shared and "ws_watch" in m.text
    assert shared.kind == plain.kind
    assert len(shared.events) == len(plain.events)
    if plain.kind is None:
        assert shared.states - plain.states == shared.transitions - plain.transitions >= 1
    else:
        rp = interp.replay(k, shared.events, expect_kind=shared.kind)
        assert rp.ok, rp.error


def test_shared_slots_stay_within_spins_process_limit():
    """pan runs at most 255 processes: a process whose slots would exceed that stays one
    proctype (printed once per slot); a smaller one is shared."""
    k = ring(stages=2, trips=2, consumers=260, consumer_threads=32)
    m = lower(k)
    assert not m.shared
    k = ring(stages=2, trips=2, consumers=8)
    assert lower(k).shared


def _missing(extra: str, examples: int, want: tuple[str, ...], more=lambda s: None) -> list:
    """What of `want` the protocols drawn with `extra` never use: the constructs' names, and
    `more(stmt)` for every statement (a finer name, or None)."""
    seen = collections.Counter()

    @diff_settings(examples)
    @given(protocols(extra=extra))
    def draw(k):
        seen.update(constructs(k))
        seen.update(x for p in k.processes for s in walk_stmts(p.body) if (x := more(s)))

    draw()
    return [c for c in want if not seen[c]]


def test_buffer_protocols_cover_every_buffer_op():
    """The staged-buffer protocols draw every buffer op: writes, fences, stores (by the storing
    process), fills, wgmma, tcgen05.mma (of one CTA and of a pair) and thread reads, both kinds
    of groups, the tcgen05.commits that retire MMA reads, and wgmma register fragments."""
    assert not _missing("buffer", 300, (
        "SmemWrite", "FenceProxyAsync", "TmaStore", "BulkCommit", "BulkWaitRead", "TmaLoad(into)",
        "WgmmaRead", "WgmmaCommit", "WgmmaWait", "SmemRead", "MmaRead", "MmaRead(pair)",
        "Tcgen05Commit", "WgmmaAcc", "AccAccess", "WgmmaFence"),
        lambda s: "TmaLoad(into)" if isinstance(s, TmaLoad) and s.dst is not None else
        "MmaRead(pair)" if isinstance(s, MmaRead) and s.pair else None)


def test_wgmma_data_protocols_cover_every_op():
    assert not _missing("wdata", 200, ("SmemStore", "SmemLoad", "FenceProxyAsync",
                                        "WgmmaReadData", "WgmmaCommit", "WgmmaWait"))


def test_cp_async_protocols_cover_every_cp_async_op():
    assert not _missing("cpasync", 200, ("CpAsync", "CpAsyncCommit", "CpAsyncWait", "SmemOwn"))


def test_tcgen05_protocols_cover_every_tcgen05_op():
    assert not _missing("tcgen05", 200, (
        "Tcgen05Commit", "TmemAlloc", "TmemDealloc", "TmemRelinquish", "TmemAccess",
        "multicast commit", "TmemLoad", "TmemWaitLd", "MmaRead(accumulator)"),
        lambda s: "multicast commit" if isinstance(s, Tcgen05Commit) and s.multicast is not None
        else "MmaRead(accumulator)" if isinstance(s, MmaRead) and s.reads[0][0] == "ta"
        else None)


def test_flag_protocols_cover_every_flag_op():
    def finer(s):
        if isinstance(s, GlobalAdd):
            return "add(old value)" if s.dest else "add(relaxed)" if s.sem == "relaxed" \
                else f"add({s.scope})"
        if isinstance(s, (SmemStore, SmemLoad)) and s.ref.name == "g":
            return f"global data {'store' if isinstance(s, SmemStore) else 'load'}"
        return "wait(relaxed)" if isinstance(s, GlobalWait) and s.sem == "relaxed" else None
    assert not _missing("flag", 200, ("GlobalAdd", "GlobalWait", "add(relaxed)", "add(cta)",
                                      "add(cluster)", "add(old value)", "wait(relaxed)",
                                      "two-clusters", "global data store", "global data load"),
                        finer)


def test_dsmem_protocols_cover_stores_and_every_scope():
    assert not _missing("dsmem", 200, (
        "DsmemStore", "arrive(cluster)", "arrive(cta)", "arrive(relaxed)", "data(peer word)"),
        lambda s: f"arrive({s.scope})" if isinstance(s, MbarArrive) and s.bar.cta is not None
        else "data(peer word)" if isinstance(s, SmemStore) and s.ref.cta is not None
        else None)
