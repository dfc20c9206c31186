"""Global work counters (issue 9: values handed through memory, dynamic tile schedulers): the
SyncIR `atom.inc` op and the environment step in which a CTA outside the model takes a value, in
both backends; their extraction from CuTe DSL kernels (lane 0's atom.inc shuffled to the warp),
fail-closed for every other atomic or shuffle."""
from __future__ import annotations

import os

import pytest

from backends import kinds_in_every_backend
from warpspin.api import CheckOptions, verify_kernel
from warpspin.engine import hb
from warpspin.syncir import (AtomInc, BarSync, Const, CounterDecl, If, Kernel, Lanes, Param,
                             Process, Var, validate, walk_stmts)
from warpspin.syncir.interp import explore, replay, violation_kinds
from warpspin.syncir.protocols import (DYNAMIC_BUG_EXPECT, DYNAMIC_BUGS, DYNAMIC_FILE,
                                       dynamic_scheduler)
from warpspin.syncir.trace import Take

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _kinds(k: Kernel) -> list:
    """kinds_in_every_backend, and the happens-before engine agreeing with the interpreter's
    search wherever it decides (it runs each sequence of values the other CTAs leave)."""
    kinds = kinds_in_every_backend(k)
    r = hb.check(k, timeout_s=60)
    if r.verdict == "verified":
        assert kinds[0] is None, (k.name, kinds)
    elif r.verdict == "violation":
        assert r.kind in violation_kinds(k)[0] and replay(k, r.events, r.kind).ok, (k.name, r)
    else:
        assert r.verdict == "outside" and r.reasons, r
    return kinds


def test_dynamic_scheduler_verifies_for_every_tile_count_grid_and_sharing():
    k = dynamic_scheduler()
    assert validate(k) == []
    assert _kinds(k) == [None, None, None]


@pytest.mark.parametrize("bug", DYNAMIC_BUGS)
def test_dynamic_scheduler_bugs_are_found_at_their_line(bug):
    k = dynamic_scheduler(bug=bug)
    kind, line = DYNAMIC_BUG_EXPECT[bug]
    assert _kinds(k) == [kind, kind, kind]
    r = verify_kernel(k, opts=CheckOptions(timeout_s=120))
    v = r.violations[0]
    assert v.kind == kind and v.replayed
    assert (os.path.basename(v.locations[0].file), v.locations[0].line) == (DYNAMIC_FILE, line)


def test_static_count_needs_another_cta_to_take_a_tile():
    """The static-count consumer only hangs when another CTA takes one of its tiles: the trail
    has a Take, and without other CTAs (a grid of one is then exact: no Take can happen when
    nothing is left to take, T = 1) there is no deadlock."""
    k = dynamic_scheduler(bug="static-count")
    o = explore(k)
    assert o.violation.kind == "deadlock"
    assert any(isinstance(e, Take) for e in o.trace)
    assert replay(k, o.trace, "deadlock").ok
    assert explore(dynamic_scheduler(tiles=(0, 1), bug="static-count")).violation is None


def _fetcher(body_after, L=(0, 2), n=3) -> Kernel:
    """One warp: lane 0 takes `n` values t0..t(n-1) from counter `sem` (limit L), then
    `body_after` (which deadlocks on a bar.sync for 64 threads when a property fails)."""
    fetch = tuple(Lanes(1, (AtomInc(f"t{i}", "sem", Var("L")),)) for i in range(n))
    return Kernel("fetcher", (Process("w", (*fetch, *body_after), warps=(0, 1)),), (),
                  params=(Param("L", *L),), counters=(CounterDecl("sem", Var("L")),))


HANG = (BarSync(Const(1), Const(64)),)  # one warp at a 64-thread barrier: a deadlock


def test_values_increase_until_the_wrap():
    """Each value is above the previous one unless the previous one was the limit (atom.inc
    wraps to 0 there), and none is above the limit: checked for every limit 0..2 and every way
    other CTAs take values."""
    t0, t1, t2, L = Var("t0"), Var("t1"), Var("t2"), Var("L")
    bad = (If(t1.le(t0), (If(t0.lt(L), HANG),)),
           If(t2.le(t1), (If(t1.lt(L), HANG),)),
           If(L.lt(t0), HANG), If(L.lt(t1), HANG), If(L.lt(t2), HANG))
    assert _kinds(_fetcher(bad)) == [None, None, None]


def test_other_ctas_take_values_between_two_fetches():
    """Without other CTAs t1 would be t0 + 1; the model lets them take values in between."""
    k = _fetcher((If(Var("t1").eq(Var("t0") + 2), HANG),), L=(2, 2), n=2)
    assert _kinds(k) == ["deadlock", "deadlock", "deadlock"]


def test_a_negative_limit_never_wraps_and_nobody_else_takes():
    """atom.inc compares unsigned: a limit of -1 is beyond any count, so values run 0, 1, 2."""
    k = _fetcher((If(Var("t2").eq(2), (), HANG),), L=(-1, -1))
    assert _kinds(k) == [None, None, None]


def test_atom_inc_by_a_whole_warp_is_invalid_syncir():
    """The extractor emits atom.inc only for one lane (else Unsupported); SyncIR written by hand
    with atom.inc by a whole warp is rejected, and the rule itself would refuse it."""
    k = Kernel("fetch32", (Process("w", (AtomInc("t", "sem", Const(3)),), warps=(0, 1)),), (),
               counters=(CounterDecl("sem", Const(3)),))
    assert any("by 32 threads" in str(p) for p in validate(k))
    r = verify_kernel(k, opts=CheckOptions(timeout_s=60))
    assert r.verdict == "error" and "by 32 threads" in str(r), str(r)
    assert explore(k).violation.kind == "unsupported"


def test_validate_checks_the_counter_and_its_limit():
    k = Kernel("bad", (Process("w", (Lanes(1, (AtomInc("t", "nope", Const(3)),)),),
                               warps=(0, 1)),), ())
    assert any("not a declared global counter" in str(p) for p in validate(k))
    k = Kernel("bad", (Process("w", (Lanes(1, (AtomInc("t", "sem", Const(2)),)),),
                               warps=(0, 1)),), (), counters=(CounterDecl("sem", Const(3)),))
    assert any("wraps at 3" in str(p) for p in validate(k))


# ---- extraction from CuTe DSL kernels ---------------------------------------------------------------
dsl = pytest.mark.dsl


@dsl
def test_example_counter_is_extracted():
    pytest.importorskip("cutlass")
    import importlib.util

    from warpspin.extract import extract
    from warpspin.frontend import trace
    path = os.path.join(ROOT, "examples", "dynamic_scheduler.py")
    spec = importlib.util.spec_from_file_location("dyn_ex", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn, args = mod.correct()
    (tk,) = trace(fn, *args)
    k = extract(tk, params={"num_tiles": (0, 5)})
    (decl,) = k.counters
    assert decl.label == "sem"
    ops = [(p, s) for p in k.processes for s in walk_stmts(p.body) if isinstance(s, AtomInc)]
    assert len(ops) == 1 and ops[0][0].role == "warp0"
    lanes = [s for s in walk_stmts(ops[0][0].body) if isinstance(s, Lanes)
             and any(isinstance(x, AtomInc) for x in s.body)]
    assert lanes and lanes[0].count == 1
    assert not [s for p in k.processes for s in walk_stmts(p.body)
                if type(s).__name__ == "Unsupported"]
    assert any("global counter sem" in a for a in k.assumptions)


@dsl
@pytest.mark.parametrize("mode,why", [
    ("every_lane", "atom.inc by 32 threads"),
    ("lane_from_data", "depends on the lane index"),  # (the shuffle is followed; its per-lane
    #                                                    result decides a barrier per lane)
    ("per_lane_word", "nvvm.shfl.sync"),
    ("reset", "also stores to or copies into"),
    ("raw_store", "writes global memory it cannot place"),
])
def test_other_atomics_and_shuffles_are_unsupported_with_their_line(mode, why):
    pytest.importorskip("cutlass")
    from fixtures.fetch_kernels import fetch_variant
    r = check_target_fn(*fetch_variant(mode))
    assert r.verdict == "unsupported", str(r)
    assert any(why in reason for reason in r.reasons), r.reasons


@dsl
def test_lane0_add_on_a_grid_of_one_is_a_ticket():
    """atom.add by lane 0 (not atom.inc) on a one-CTA grid: every CTA of the grid is in the
    model, so the add is a global flag whose old value (0) is lane 0's ticket; for n = 0 the
    ticket is not below n, warp 0 skips the barrier and warp 1 waits alone."""
    pytest.importorskip("cutlass")
    from fixtures.fetch_kernels import fetch_variant
    r = check_target_fn(*fetch_variant("add"))
    v = r.violations[0]
    assert v.kind == "deadlock" and v.replayed, str(r)
    assert "n = 0" in str(r) and "atom.add" in str(r)


def test_without_other_ctas_nobody_else_takes():
    """A counter whose grid has no CTA outside the model (`others` 0): the static hand-off count
    is then right, since the one CTA gets every tile."""
    k = dynamic_scheduler(bug="static-count")
    (decl,) = k.counters
    k1 = Kernel(k.name, k.processes, k.mbarriers, params=k.params, words=k.words,
                counters=(CounterDecl(decl.name, decl.limit, decl.loc, decl.label, others=0),))
    assert _kinds(k1) == [None, None, None]


@dsl
def test_a_static_grid_of_one_cta_has_no_other_ctas():
    """The example launched on one CTA: no other CTA can take a tile, so the consumers' static
    hand-off count is right and the variant verifies; on two CTAs it deadlocks."""
    pytest.importorskip("cutlass")
    import importlib.util

    from warpspin.api import verify
    spec = importlib.util.spec_from_file_location(
        "dyn_grid", os.path.join(ROOT, "examples", "dynamic_scheduler.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kinds = {}
    for grid in (1, 2):
        fn, args = mod.variant("static_count", grid=grid)
        r = verify(fn, *args, params={"num_tiles": (0, 5)})
        kinds[grid] = r.violations[0].kind if r.violations else r.outcome
        if grid == 1:  # out's place is the tile the counter hands out: not followed
            from verdicts import verified_but_global_memory
            assert verified_but_global_memory(r), str(r)
    assert kinds == {1: "not-checked", 2: "deadlock"}


@dsl
def test_lane0_fetch_decides_a_barrier():
    """Lane 0's value, shuffled to the warp, decides whether warp 0 joins warp 1 at a named
    barrier: for n = 0 every value is past the last tile and warp 1 waits alone."""
    pytest.importorskip("cutlass")
    from fixtures.fetch_kernels import fetch_variant
    r = check_target_fn(*fetch_variant("lane0"))
    v = r.violations[0]
    assert v.kind == "deadlock" and v.replayed
    assert "n = 0" in str(r)


def check_target_fn(fn, args):
    from warpspin.api import verify
    return verify(fn, *args, params={"n": (0, 3)})


def test_constraints_no_launch_satisfies_are_invalid():
    """Launch constraints that no parameter values satisfy would leave nothing to check (a
    vacuous VERIFIED): the kernel is rejected, naming the constraint."""
    k = dynamic_scheduler()
    bad = Kernel(k.name, k.processes, k.mbarriers, params=k.params, words=k.words,
                 counters=k.counters, constraints=(Var("G").lt(1),))
    assert any("no values of the launch parameters" in str(p) for p in validate(bad))
    r = verify_kernel(bad, opts=CheckOptions(timeout_s=60))
    assert r.verdict == "error", str(r)
    ok = Kernel(k.name, k.processes, k.mbarriers, params=k.params, words=k.words,
                counters=k.counters, constraints=(Var("G").lt(2),))
    assert validate(ok) == []
