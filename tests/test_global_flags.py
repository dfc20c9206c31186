"""Global flags between CTAs (issue 12): atom.add / red.add on a word of global memory and spin
loops on it, in a model of every CTA of a small grid (clusters of one CTA) or of one cluster.
Both backends on hand-built SyncIR (deadlock, the scope each pair of CTAs needs, the release and
acquire the hand-off needs), and the extraction from CuTe DSL kernels: the grid model, the
fence + relaxed patterns, and fail-closed for what is not modelled."""
from __future__ import annotations

import os

import pytest

from backends import kinds_in_every_backend
from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import BarSync, Const, Kernel, Lanes, Loc, Process, validate, walk_stmts
from warpspin.syncir.ir import FlagDecl, MBarRef, MBarrierDecl
from warpspin.syncir.ops import GlobalAdd, GlobalWait, MbarArrive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = "flags.py"
ADD_LINE, WAIT_LINE = 10, 20
dsl = pytest.mark.skipif(not os.environ.get("WARPSPIN_REQUIRE_ALL") and
                         __import__("importlib").util.find_spec("cutlass") is None,
                         reason="needs nvidia-cutlass-dsl (make test installs it)")


def handoff(producers=2, *, sem="release", scope="gpu", total=None, wait_sem="acquire",
            wait_scope="gpu", cluster_ctas=1, until=">=") -> Kernel:
    """`producers` CTAs each add 1 (one thread, after a bar.sync of their warp); the last CTA
    spins until the flag reaches `total` (default: producers)."""
    total = producers if total is None else total
    procs = [Process("producer", (BarSync(loc=Loc(FILE, 9)),
                                  Lanes(1, (GlobalAdd("count", Const(1), sem, scope,
                                                      Loc(FILE, ADD_LINE)),))), cta=c)
             for c in range(producers)]
    procs = [Process(f"producer_cta{c}", p.body, cta=c) for c, p in enumerate(procs)]
    procs.append(Process("consumer", (Lanes(1, (GlobalWait("count", until, Const(total), wait_sem,
                                                           wait_scope, Loc(FILE, WAIT_LINE)),)),
                                      BarSync(loc=Loc(FILE, 21))), cta=producers))
    return Kernel("handoff", tuple(procs), num_ctas=producers + 1, cluster_ctas=cluster_ctas,
                  flags=(FlagDecl("count", label="count"),))


_kinds = kinds_in_every_backend


CASES = {
    "correct": (dict(), None, None),
    "exact value": (dict(until="=="), None, None),
    "total off by one": (dict(total=3), "deadlock", WAIT_LINE),
    "relaxed add": (dict(sem="relaxed"), "scope", ADD_LINE),
    "acquire-only add": (dict(sem="acquire"), "scope", ADD_LINE),
    "relaxed wait": (dict(wait_sem="relaxed"), "scope", WAIT_LINE),
    "weak wait": (dict(wait_sem="weak"), "scope", WAIT_LINE),
    "cta-scope add across clusters": (dict(scope="cta"), "scope", ADD_LINE),
    "cluster-scope add across clusters": (dict(scope="cluster"), "scope", ADD_LINE),
    "cluster-scope wait across clusters": (dict(wait_scope="cluster"), "scope", WAIT_LINE),
    "cluster scope in one cluster": (dict(scope="cluster", wait_scope="cluster",
                                          cluster_ctas=0), None, None),
    "cta-scope add in one cluster": (dict(scope="cta", cluster_ctas=0), "scope", ADD_LINE),
    "sys scope": (dict(scope="sys", wait_scope="sys"), None, None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_handoff(case):
    kw, kind, line = CASES[case]
    k = handoff(**kw)
    assert validate(k) == []
    assert _kinds(k) == [kind] * 3
    r = verify_kernel(k, opts=CheckOptions(timeout_s=120))
    if kind is None:  # complete and no violation (the SyncIR declares no global data)
        assert r.outcome == "verified", str(r)
        return
    v = r.violations[0]
    assert v.kind == kind and v.replayed
    assert (v.locations[0].file, v.locations[0].line) == (FILE, line)


def test_deadlock_report_says_what_the_loop_waits_for():
    r = verify_kernel(handoff(total=3), opts=CheckOptions(timeout_s=120))
    assert "global flag count (it holds 2; the loop waits until it is >= 3)" in str(r)


def test_scope_message_names_the_other_cta_and_the_scope_needed():
    r = verify_kernel(handoff(scope="cluster"), opts=CheckOptions(timeout_s=120))
    assert ".cluster scope" in r.violations[0].message
    assert ".gpu or wider" in r.violations[0].message


def test_flags_within_one_cta_need_no_wider_scope():
    """Two warps of one CTA: an add and a wait at .cta scope are enough."""
    add = Lanes(1, (GlobalAdd("count", Const(1), "release", "cta", Loc(FILE, ADD_LINE)),))
    wait = Lanes(1, (GlobalWait("count", ">=", Const(1), "acquire", "cta", Loc(FILE, WAIT_LINE)),))
    k = Kernel("one_cta", (Process("a", (add,), warps=(0, 1)), Process("b", (wait,), warps=(1, 2))),
               flags=(FlagDecl("count"),))
    assert _kinds(k) == [None] * 3


def test_a_whole_warp_adds_once_per_thread():
    """32 threads each add 1: a wait for 32 passes, one for 33 deadlocks."""
    for total, kind in ((32, None), (33, "deadlock")):
        k = Kernel("warp", (Process("a", (GlobalAdd("count", Const(1)),), cta=0),
                            Process("b", (Lanes(1, (GlobalWait("count", ">=", Const(total)),)),),
                                    cta=1)),
                   num_ctas=2, cluster_ctas=1, flags=(FlagDecl("count"),))
        assert _kinds(k) == [kind] * 3


def test_validate_rejects_unknown_flags_and_cluster_ops_across_clusters():
    k = handoff()
    bad = Kernel(k.name, k.processes, num_ctas=k.num_ctas, cluster_ctas=1)  # no flag declared
    assert any("not a declared global flag" in p.message for p in validate(bad))
    arrive = MbarArrive(MBarRef("b", Const(0), cta=Const(1)))
    remote = Kernel("r", (Process("p", (arrive,), cta=0), Process("q", (), cta=1)),
                    (MBarrierDecl("b"),), num_ctas=2, cluster_ctas=1)
    assert any("reaches another CTA of its cluster (CTAs 0..0)" in p.message
               for p in validate(remote))
    # two clusters of two: an arrive into the CTA's own cluster is modelled, not beyond it
    def two_pairs(op):
        return Kernel("r", (Process("p", (op,), cta=0),) + tuple(
            Process(f"q{c}", (), cta=c) for c in (1, 2, 3)), (MBarrierDecl("b"),), num_ctas=4,
            cluster_ctas=2)
    assert validate(two_pairs(arrive)) == []
    beyond = two_pairs(MbarArrive(MBarRef("b", Const(0), cta=Const(2))))
    assert any("(CTAs 0..1)" in p.message for p in validate(beyond))
    odd = Kernel("o", (Process("p", ()),), num_ctas=3, cluster_ctas=2)
    assert any("do not form clusters" in p.message for p in validate(odd))
    sems = Kernel("s", (Process("p", (GlobalAdd("f", Const(1), "seq", "grid"),)),),
                  flags=(FlagDecl("f"),))
    assert {"memory order 'seq' (one of ('relaxed', 'release', 'acquire', 'acq_rel'))",
            "scope 'grid' (one of ('cta', 'cluster', 'gpu', 'sys'))"} <= \
        {p.message.split(": ", 1)[1] for p in validate(sems)}


# ----------------------------------------------------------------------------- from the DSL

def _example():
    from warpspin.demo import _module
    return _module(os.path.join(ROOT, "examples", "grid_flag.py"))


@dsl
def test_example_is_a_grid_model():
    """Every CTA of the example's grid is in the model, with its own concrete block index; the
    flag is declared once with its name; nothing is unsupported."""
    from warpspin.extract import extract
    from warpspin.frontend import trace
    fn, args = _example().correct()
    (tk,) = trace(fn, *args)
    k = extract(tk)
    assert (k.num_ctas, k.cluster_ctas) == (4, 1)
    assert [tuple(x.value for x in b) for b in k.cta_blocks] == [(c, 0, 0) for c in range(4)]
    assert [f.label for f in k.flags] == ["count"]
    ops = [(p.cta, s) for p in k.processes for s in walk_stmts(p.body)
           if isinstance(s, (GlobalAdd, GlobalWait))]
    assert sorted((c, type(s).__name__) for c, s in ops) == [
        (0, "GlobalAdd"), (1, "GlobalAdd"), (2, "GlobalAdd"), (3, "GlobalWait")]
    assert all(s.sem == "release" for _, s in ops if isinstance(s, GlobalAdd))
    wait = next(s for _, s in ops if isinstance(s, GlobalWait))
    assert (wait.until, wait.target, wait.sem, wait.scope) == (">=", Const(3), "acquire", "gpu")
    assert not [s for p in k.processes for s in walk_stmts(p.body)
                if type(s).__name__ == "Unsupported"]
    assert any("every CTA of the grid is resident" in a for a in k.assumptions)


@dsl
@pytest.mark.parametrize("producers", [7, 8])
def test_grid_model_holds_at_most_eight_ctas(producers):
    """8 CTAs are modelled; 9 are beyond the grid model's bound: INCONCLUSIVE (not UNSUPPORTED:
    the ops are modelled, the grid is too large) naming the add and the loop with their lines."""
    from warpspin.api import verify
    mod = _example()
    fn, args = mod.variant(None, producers=producers)
    r = verify(fn, *args)
    if producers == 7:
        assert r.outcome == "verified", str(r)
        return
    assert r.verdict == "inconclusive", str(r)
    assert any("the grid has 9 CTAs (a grid model holds at most 8)" in x and
               "beyond a bound of the model" in x for x in r.reasons)
    lines = {loc.line for loc in r.reason_locations}
    from sourcelines import line_of
    path = os.path.join(ROOT, "examples", "grid_flag.py")
    assert line_of(path, "cute.arch.atomic_add(count.iterator.llvm_ptr, Int32(1), sem=sem, "
                   "scope=scope)") in lines
    assert line_of(path, "while cute.arch.load(count.iterator.llvm_ptr, Int32, sem=\"acquire\",") \
        in lines


@dsl
@pytest.mark.parametrize("mode", ["cluster", "cluster_barrier"])
def test_clustered_grids_are_grid_models(mode):
    """A flag in a clustered launch (two CTAs in one cluster) and the cluster barrier in a grid
    model (clusters of one CTA) are modelled: every CTA of the grid, the cluster barrier one per
    cluster; both engines verify them."""
    from fixtures.flag_kernels import flag_variant
    from warpspin.api import verify_kernel
    from warpspin.extract import extract
    from warpspin.frontend import trace
    fn, args = flag_variant(mode)
    k = extract(trace(fn, *args)[0])
    assert (k.num_ctas, k.cluster_ctas) == ((2, 2) if mode == "cluster" else (2, 1))
    for engine in ("spin", "hb"):
        r = verify_kernel(k, opts=CheckOptions(engine=engine))
        assert r.verdict == "verified", str(r)


@dsl
def test_a_target_read_from_memory_is_a_launch_value():
    """The spin loop's target read from another kernel argument (`want[0]`, which only the flag's
    atomics could have written before: they write `count`) is a launch value: the loop waits
    for more adds than come when want_0 >= 2, a deadlock naming the value."""
    from fixtures.flag_kernels import flag_variant
    from warpspin.api import verify
    fn, args = flag_variant("data_target")
    r = verify(fn, *args)
    assert r.verdict == "violation" and r.outcome == "deadlock", str(r)
    assert "want_0 = 2" in str(r) or "want_0 = 3" in str(r), str(r)
    assert verify(fn, *args, params={"want_0": (0, 1)}).verdict == "verified"


@dsl
@pytest.mark.parametrize("mode,why", [
    ("old_value_per_lane", "its old value is used by 32 threads"),
    ("plain_store", "also stores to or copies into"),
    ("per_lane_add", "the value added differs between the lanes that add"),
    ("unsigned", "an unsigned comparison"),
    ("raw_store", "writes global memory it cannot place"),
])
def test_what_is_not_modelled_is_unsupported(mode, why):
    from fixtures.flag_kernels import flag_variant
    from warpspin.api import verify
    fn, args = flag_variant(mode)
    r = verify(fn, *args)
    assert r.verdict == "unsupported", str(r)
    assert any(why in reason for reason in r.reasons), r.reasons


@dsl
@pytest.mark.parametrize("short,kind", [(False, "verified"), (True, "deadlock")])
def test_reusable_grid_barrier(short, kind):
    """Three CTAs meet twice at a barrier over one counter; each round's target reads the loop
    counter. The last round waiting for one arrival too many deadlocks at the loop."""
    from fixtures.flag_kernels import grid_barrier
    from warpspin.api import verify
    fn, args = grid_barrier(short=short)
    r = verify(fn, *args)
    got = r.outcome
    assert got == kind, str(r)
    if r.violations:
        assert r.violations[0].replayed
        assert "global flag count" in str(r)


@dsl
@pytest.mark.parametrize("sem,hang,kind", [
    ("acq_rel", False, "verified"),
    ("acq_rel", True, "arrival-mismatch"),
    ("release", False, "scope"),
    ("relaxed", False, "scope"),
])
def test_last_block_takes_a_ticket(sem, hang, kind):
    """Split-K's last-CTA reduction: lane 0's ticket (the add's old value), shuffled to the
    warp, decides which CTA reduces. With acq_rel it verifies; a 64-thread barrier only the last
    CTA's one warp reaches hangs (arrival-mismatch: 32 of 64 arrive), and the report's
    interleaving has the three adds; without acquire (or without release) the hand-off is not
    ordered: scope."""
    from fixtures.flag_kernels import last_block
    from warpspin.api import verify
    fn, args = last_block(sem=sem, hang=hang)
    r = verify(fn, *args)
    got = r.outcome
    assert got == kind, str(r)
    if kind == "arrival-mismatch":
        steps = [t.op for t in r.violations[0].trace]
        assert sum("atom.add" in s for s in steps) == 3, steps


@dsl
def test_a_fence_on_some_paths_does_not_make_the_add_a_release():
    """fence.acq_rel inside `if cond:` before a relaxed add: on the path without it the add
    releases nothing, so it is scope (whatever cond is)."""
    from fixtures.flag_kernels import fence_in_branch
    from warpspin.api import verify
    fn, args = fence_in_branch()
    r = verify(fn, *args, params={"cond": (0, 1)})
    assert r.violations and r.violations[0].kind == "scope", str(r)


@dsl
@pytest.mark.parametrize("form,kind,why", [
    ("correct", "verified", None),
    ("early_read", "race", None),
    ("no_sync", "not-checked", "the acquire orders only the lanes that executed it"),
    ("view", "verified", None),
    ("sync_warp", "verified", None),
    ("tile_overlap", "race", None),
    ("divided", "not-checked", "through a view of the argument (cute.zipped_divide)"),
    ("pointer", "not-checked", "nvvm.load.ext@flag_kernels.py"),
])
def test_split_k_partials_are_global_data(form, kind, why):
    """Split-K's last CTA reads every CTA's partial back: the partials are global data the
    ticket hands over. Correct, written through the CTA's tile (`local_tile`), and with
    bar.warp.sync ordering the one warp's lanes in place of bar.sync: verified; a
    read of CTA 0's slot before any ticket, or every CTA writing through tile 0: a race
    (replayed); lane 0's acquire with no bar.sync to the other lanes, a write through a
    zipped_divide of the tensor and a read through its pointer: races on the data NOT CHECKED,
    naming why."""
    from fixtures.flag_kernels import split_k
    from warpspin.api import verify
    fn, args = split_k(form)
    r = verify(fn, *args)
    assert r.outcome == kind, str(r)
    if why is not None:
        assert any("races NOT CHECKED on global data" in x and why in x for x in r.reasons), \
            r.reasons
    if r.violations:
        assert r.violations[0].replayed
        assert "partial[" in r.violations[0].message


def test_global_data_needs_release_and_acquire():
    """A relaxed add hands no data over: races on the global data are NOT CHECKED, naming the
    add, whatever properties are asked, so `--properties race` alone never verifies what the
    flag's order would not give."""
    from dataclasses import replace
    from warpspin.syncir import SmemLoad, SmemStore, WordRef, WordsDecl
    from warpspin.syncir.unchecked import unchecked_objects

    def with_data(k):  # each producer stores its cell before its bar.sync; the consumer reads
        procs = tuple(replace(p, body=(SmemStore(WordRef("g", Const(p.cta)), Const(0)), *p.body))
                      if p.role != "consumer" else
                      replace(p, body=(*p.body, SmemLoad("data_ld", WordRef("g", Const(0))),
                                       SmemLoad("data_ld", WordRef("g", Const(1)))))
                      for p in k.processes)
        return replace(k, processes=procs,
                       words=(WordsDecl("g", 2, label="partial", data=True, grid=True),))
    relaxed = unchecked_objects(with_data(handoff(sem="relaxed")))
    assert [u.what for u in relaxed] == ["global data partial"], relaxed
    assert "relaxed at gpu scope" in relaxed[0].why
    assert unchecked_objects(with_data(handoff())) == []
    r = verify_kernel(with_data(handoff(sem="relaxed")),
                      opts=CheckOptions(properties=("race",), timeout_s=120))
    assert r.verdict != "verified", str(r)  # (the scope violation, or races NOT CHECKED)


@pytest.mark.parametrize("sync,checked", [
    ("bar.sync", True), ("bar.warp.sync", True), ("bar.warp.sync by lane 0", False),
    ("none", False)])
def test_the_lanes_an_acquire_orders(sync, checked):
    """The consumer's lane 0 waits (Lanes(1)) and the whole warp reads the data after it: a
    bar.sync, or a bar.warp.sync by the whole warp, orders the other lanes after the acquire
    (PTX 9.7.13.1-2, causality order 8.9); one by lane 0 alone, or none, leaves the data's races
    NOT CHECKED, naming the read."""
    from dataclasses import replace
    from warpspin.syncir import SmemLoad, SmemStore, WordRef, WordsDecl
    from warpspin.syncir.ops import WarpSync
    from warpspin.syncir.unchecked import unchecked_objects
    k = handoff()
    between = {"bar.sync": (BarSync(loc=Loc(FILE, 21)),), "bar.warp.sync": (WarpSync(),),
               "bar.warp.sync by lane 0": (Lanes(1, (WarpSync(),)),), "none": ()}[sync]
    procs = tuple(
        replace(p, body=(SmemStore(WordRef("g", Const(p.cta)), Const(0)), *p.body))
        if p.role != "consumer" else
        replace(p, body=(p.body[0], *between,
                         SmemLoad("data_ld", WordRef("g", Const(0)), Loc(FILE, 30))))
        for p in k.processes)
    k = replace(k, processes=procs, words=(WordsDecl("g", 2, label="partial", data=True,
                                                     grid=True),))
    got = unchecked_objects(k)
    if checked:
        assert got == [], got
        assert verify_kernel(k, opts=CheckOptions(timeout_s=120)).verdict == "verified"
    else:
        assert [u.what for u in got] == ["global data partial"], got
        assert "acquire orders only the lanes that executed it" in got[0].why
        assert got[0].loc.line == 30


@dsl
def test_ctas_storing_the_same_global_elements_are_not_verified():
    """Two CTAs store into the same 32 elements of `out` (no flag: the model is one cluster):
    a race between them, never VERIFIED; the headline names the store (extract/ownership.py)."""
    from fixtures.flag_kernels import same_output
    from warpspin.api import verify
    fn, args = same_output()
    r = verify(fn, *args)
    assert r.outcome == "not-checked", str(r)
    assert "races NOT CHECKED on global data out (line 265" in str(r).splitlines()[1]


# ----------------------------------------------------------------------------- locks, stores

_CAS = "while cute.arch.atomic_cas(word, cmp=Int32(0), val=Int32(1), sem=sem,"
LOCKS = {"cas": ("verified", None), "exch": ("verified", None),
         "store_unlock": ("verified", None),
         "no_unlock": ("deadlock", _CAS),
         "relaxed_lock": ("scope", _CAS),
         "relaxed_unlock": ("scope", "cute.arch.atomic_exch(word, Int32(0), sem=sem, "
                                     "scope=\"gpu\")"),
         "outside": ("race", "total[lane] = total[lane] + cta  # outside the lock"),
         "third_value": ("unsupported", "while cute.arch.atomic_exch(word, Int32(1), sem=sem"),
         "every_lane": ("unsupported", "while cute.arch.atomic_cas(word, cmp=Int32(0), "
                                       "val=Int32(1), sem=\"acquire\",")}


@dsl
@pytest.mark.parametrize("mode", list(LOCKS))
def test_spin_locks(mode):
    """A lock over a global word guarding global data, as CuTe DSL code writes one (atomic_cas or
    atomic_exch in a while loop; atomic_exch or store to unlock): the critical sections are
    checked as global data; each bug is found at its line."""
    from fixtures.flag_kernels import lock_variant
    from sourcelines import line_of
    from warpspin.api import verify
    fn, args = lock_variant(mode)
    r = verify(fn, *args)
    want, where = LOCKS[mode]
    assert r.outcome == want, str(r)
    if where:
        path = os.path.join(ROOT, "tests", "fixtures", "flag_kernels.py")
        locs = r.violations[0].locations if r.violations else r.reason_locations
        assert any(loc.line == line_of(path, where) for loc in locs), str(r)


@dsl
@pytest.mark.parametrize("mode,want", [("release", "verified"), ("relaxed", "scope"),
                                       ("weak", "scope"), ("fenced", "verified"),
                                       ("every_lane", "unsupported")])
def test_a_flag_set_by_a_store(mode, want):
    """A flag set with cute.arch.store (a release, a relaxed or plain store, a fence and then a
    relaxed store) and read by an acquire spin: the data it hands over is checked."""
    from fixtures.flag_kernels import store_flag_variant
    from warpspin.api import verify
    fn, args = store_flag_variant(mode)
    r = verify(fn, *args)
    assert r.outcome == want, str(r)


@dsl
def test_prefix_sums_of_loaded_counts():
    """Counts read from memory in a dynamic expert loop, clamped with min, summed into each
    tile's position on one counter: VERIFIED for every count 0..3 of each expert (by the
    happens-before engine: one counter, one producer); the consumer that does not clamp waits for
    a tile that never comes, a deadlock naming a count above the cap."""
    from fixtures.flag_kernels import prefix_counter
    from warpspin.api import verify
    r = verify(*_split(prefix_counter()))
    assert r.outcome == "verified" and r.stats.engine == "happens-before", str(r)
    bad = verify(*_split(prefix_counter(unclamped=True)))
    assert bad.outcome == "deadlock", str(bad)
    assert any(f"counts_{e} = 3" in str(bad) for e in range(3)), str(bad)


def _split(made):
    fn, args = made
    return (fn, *args)
