"""Shared-memory words handed between roles (issue: values handed through memory): the SyncIR ops
in both backends, the race monitor, and their extraction from CuTe DSL kernels, fail-closed."""
import os

import pytest

from warpspin.engine.spin import lower_and_check
from warpspin.syncir import (BarSync, Const, Elect, If, Kernel, MBarRef, MBarrierDecl, MbarArrive,
                             MbarInit, MbarInitFence, MbarWait, Process, SmemLoad, SmemStore, Var,
                             WordRef, WordsDecl, validate)
from warpspin.syncir.interp import explore

W = WordRef("tile", Const(0))


def _kernel(producer_tail=(), consumers=1, consumer_extra=()):
    """A producer stores a word and arrives; `consumers` identical warps wait, load it and
    branch on it (a bar.sync only for the value 8)."""
    prod = Process("prod", (
        Elect((MbarInit(MBarRef("full"), consumers),)), MbarInitFence(), BarSync(Const(0), None),
        SmemStore(W, Const(7)), Elect((MbarArrive(MBarRef("full"), Const(consumers)),)),
        *producer_tail), cta=0, warps=(0, 1), threads=32, instances=1)
    cons = Process("cons", (
        MbarInitFence(), BarSync(Const(0), None), MbarWait(MBarRef("full"), Const(0)),
        SmemLoad("t", W), *consumer_extra,
        If(Var("t").eq(8), (BarSync(Const(1), Const(64)),), ())),
        cta=0, warps=(1, 1 + consumers), threads=32, instances=consumers, init=(("t", 0),))
    return Kernel("words", (prod, cons), (MBarrierDecl("full", 1),), words=(WordsDecl("tile", 1),))


CASES = {
    "handoff": (_kernel(), None),
    "handoff_two_consumers": (_kernel(consumers=2), None),
    # a store after the release races with the consumer's load
    "store_after_release": (_kernel(producer_tail=(SmemStore(W, Const(8)),)), "race"),
    # two consumers storing the word they both load
    "consumers_store": (_kernel(consumers=2, consumer_extra=(SmemStore(W, Var("t") + 1),)), "race"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_both_backends_agree_with_the_expected_kind(name):
    k, want = CASES[name]
    assert validate(k) == []
    o = explore(k)
    assert o.complete
    got = o.violation.kind if o.violation else None
    assert got == want, (name, o.violation)
    for reduce in (True, False):
        r = lower_and_check(k, reduce=reduce)[1]
        assert r.complete or r.kind is not None
        assert r.kind == want, (name, reduce, r.kind)


def test_the_value_decides_the_synchronization():
    """The consumer's bar.sync 1, 64 runs only when it loads 8: with 7 stored it never does;
    storing 8 instead makes the lone consumer wait at a 64-thread barrier forever."""
    k, _ = CASES["handoff"]
    assert explore(k).violation is None
    prod = k.processes[0]
    body = tuple(SmemStore(W, Const(8)) if isinstance(s, SmemStore) else s for s in prod.body)
    k8 = Kernel(k.name, (Process(prod.role, body, cta=0, warps=prod.warps, threads=32),
                         k.processes[1]), k.mbarriers, words=k.words)
    o = explore(k8)
    assert o.violation is not None and o.violation.kind in ("deadlock", "arrival-mismatch")


# ---- extraction from CuTe DSL kernels ----------------------------------------------------------

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs the DSL: never skip there
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Float32, Int32, Int64  # noqa: E402

from warpspin.extract import extract  # noqa: E402
from warpspin.frontend import fake_tensor, trace  # noqa: E402
from warpspin.syncir import unsupported_ops, walk_stmts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_persistent_scheduler_words_are_extracted():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "ps", os.path.join(ROOT, "examples", "persistent_scheduler.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn, args = mod.correct()
    (tk,) = trace(fn, *args)
    k = extract(tk)
    assert not unsupported_ops(k)
    assert [(w.label, w.size) for w in k.words] == [("words", 2)]
    ops = [s for p in k.processes for s in walk_stmts(p.body)]
    assert any(isinstance(s, SmemStore) for s in ops) and any(isinstance(s, SmemLoad) for s in ops)


@cute.kernel
def _mixed(out: cute.Tensor, mode: cutlass.Constexpr):
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

    @cute.struct
    class S:
        bar: cute.struct.MemRange[Int64, 1]
        words: cute.struct.Align[cute.struct.MemRange[Int32, 2], 16]

    st = cutlass.memory.SmemAllocator().allocate(S)
    bar = st.bar.data_ptr()
    words = st.words.get_tensor(cute.make_layout(2))
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp == 0:
        words[0] = Int32(3)
        if cutlass.const_expr(mode == "float_alias"):      # the same bytes written as a float
            fl = cute.make_tensor(cute.recast_ptr(words.iterator, dtype=Float32), cute.make_layout(2))
            fl[0] = Float32(1.0)
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bar, relaxed=(mode == "relaxed"))
    if warp == 1:
        cute.arch.mbarrier_wait(bar, 0)
        n = words[0]
        for _ in cutlass.range(n, unroll=1):
            cute.arch.barrier(barrier_id=1, number_of_threads=32)


def _extract(mode):
    @cute.jit
    def launch(out: cute.Tensor):
        _mixed(out, mode).launch(grid=(1, 1, 1), block=(64, 1, 1))
    (tk,) = trace(launch, fake_tensor(Int32, (4,)))
    return extract(tk)


def test_a_word_handed_over_by_an_mbarrier_is_modelled():
    k = _extract("plain")
    assert not unsupported_ops(k)
    assert [w.label for w in k.words] == ["words"]


@pytest.mark.parametrize("mode,why", [("float_alias", "may also write"),
                                      ("relaxed", "relaxed")])
def test_words_that_other_writes_may_change_are_not_modelled(mode, why):
    k = _extract(mode)
    uns = unsupported_ops(k)
    assert uns and any(why in u.what for u in uns), [u.what for u in uns]
    assert not k.words


def test_a_race_report_names_both_accesses():
    from sourcelines import line_of
    from warpspin.api import CheckOptions, check_target
    path = os.path.join(ROOT, "examples", "persistent_scheduler.py")
    r = check_target(f"{path}:release_before_load", CheckOptions(timeout_s=300,
                                                                    params={"num_tiles": (0, 5)}))[0]
    (v,) = r.violations
    assert v.kind == "race" and v.locations[0].line == line_of(path, "tile = words[state.index]")
    stores = {line_of(path, "words[state.index] = tile"),   # a tile, or the sentinel
              line_of(path, "words[state.index] = Int32(-1)")}
    assert any(n.location is not None and n.location.line in stores for n in v.notes), str(r)


@pytest.mark.parametrize("grid", [1, 2, 3])
def test_persistent_scheduler_over_grids_and_tile_counts(grid):
    """Every grid 1..3 and tile count 0..5 (every CTA of the grid): the correct kernel has no
    violation (races on out NOT CHECKED: its place is a tile a shared word hands over);
    the consumer that waits for a first tile hangs, for a tile count that leaves a CTA none."""
    import importlib.util
    from warpspin.api import verify
    spec = importlib.util.spec_from_file_location(
        "ps_grid", os.path.join(ROOT, "examples", "persistent_scheduler.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from verdicts import verified_but_global_memory
    ok = verify(*_flat(mod.correct(grid=grid)), params={"num_tiles": (0, 5)})
    assert verified_but_global_memory(ok), str(ok)  # out's place is the tile a word hands over
    bad = verify(*_flat(mod.zero_tile_wait(grid=grid)), params={"num_tiles": (0, 5)})
    assert bad.violations and bad.violations[0].kind == "deadlock", str(bad)
    assert "num_tiles = " in str(bad)


def _flat(pair):
    fn, args = pair
    return (fn, *args)


# ---------------------------------------------------------------------------- st.async words

def _st_async_kernel(variant: str = "correct"):
    """Two CTAs. CTA 0's scheduler warp arms each CTA's `full` barrier for 8 bytes and st.async's
    two words (a tile and a valid flag) into that CTA, one lane per CTA (quack's persistent
    scheduler with a cluster). A reader warp in each CTA waits for the phase, loads both words,
    and waits for a second phase only when the flag says there is no tile (it never comes: the
    kernel is correct only because the flag is 1). Variants: `no_wait` (the reader loads without
    waiting), `store_twice` (a second st.async into the same words before the first completes),
    `flag_zero` (the flag says no tile: the reader waits for a phase nobody completes)."""
    from warpspin.syncir import ClusterArrive, ClusterWait, MbarArriveExpectTx, StAsync
    full = lambda cta=None: MBarRef("full", Const(0), None if cta is None else Const(cta))  # noqa
    procs = []
    for cta in (0, 1):
        procs.append(Process(f"init{cta}", (Elect((MbarInit(full(), 1),)), MbarInitFence(),
                                            ClusterArrive(False), ClusterWait()),
                             cta=cta, warps=(0, 1), threads=32, instances=1))
    flag = Const(0 if variant == "flag_zero" else 1)
    sched = [ClusterArrive(False), ClusterWait()]
    for t in (0, 1):
        stores = [StAsync(WordRef("tile", Const(0)), (Const(5 + t), flag), full(t))]
        if variant == "store_twice" and t == 1:
            stores.append(stores[0])
        sched.append(Elect((MbarArriveExpectTx(full(t), Const(8 * len(stores))), *stores)))
    procs.append(Process("sched", tuple(sched), cta=0, warps=(1, 2), threads=32, instances=1))
    for cta in (0, 1):
        body = [ClusterArrive(False), ClusterWait()]
        if variant != "no_wait":
            body.append(MbarWait(full(), Const(0)))
        body += [SmemLoad("t", WordRef("tile", Const(0))), SmemLoad("v", WordRef("tile", Const(1))),
                 If(Var("v").eq(0), (MbarWait(full(), Const(1)),), ())]
        procs.append(Process(f"reader{cta}", tuple(body), cta=cta, warps=(2, 3), threads=32,
                             instances=1, init=(("t", 0), ("v", 0))))
    return Kernel("st_async_words", tuple(procs), (MBarrierDecl("full", 1),), num_ctas=2,
                  words=(WordsDecl("tile", 2),))


@pytest.mark.parametrize("variant, want, words", [
    ("correct", None, ""), ("no_wait", "race", "st.async"),
    ("store_twice", "race", "earlier async write"), ("flag_zero", "deadlock", "")])
def test_st_async_words_in_both_backends(variant, want, words):
    k = _st_async_kernel(variant)
    assert validate(k) == []
    o = explore(k)
    assert o.complete and (o.violation.kind if o.violation else None) == want, o.violation
    if words:
        assert words in o.violation.message, o.violation.message
    for reduce in (True, False):
        r = lower_and_check(k, reduce=reduce)[1]
        assert r.complete or r.kind is not None
        assert r.kind == want, (variant, reduce, r.kind)


def test_st_async_words_by_more_than_one_thread_are_invalid():
    from dataclasses import replace
    from warpspin.syncir import Lanes, StAsync
    k = _st_async_kernel()
    sched = k.processes[2]
    body = tuple(Lanes(2, s.body) if isinstance(s, Lanes) else s for s in sched.body)
    k2 = replace(k, processes=(*k.processes[:2], replace(sched, body=body), *k.processes[3:]))
    assert any("st.async of words by 2 threads" in p.message for p in validate(k2))
    assert any(isinstance(s, StAsync) for s in walk_stmts(body))


def test_st_async_race_reports_name_the_other_access():
    from warpspin.api import verify_kernel
    (v,) = verify_kernel(_st_async_kernel("no_wait")).violations
    assert v.kind == "race" and any("reader" in n.message and "loads" in n.message
                                    for n in v.notes), v.notes
    (v,) = verify_kernel(_st_async_kernel("store_twice")).violations
    assert any("still in flight" in n.message for n in v.notes), v.notes


def test_st_async_words_by_several_lanes_are_not_modelled():
    """An st.async of words the walker could not split per lane (here two lanes storing the same
    word) leaves that array not modelled, naming the st.async: never invalid SyncIR."""
    from dataclasses import replace
    from warpspin.extract.build import _wide_st_async
    from warpspin.syncir import Lanes
    k = _st_async_kernel()
    sched = k.processes[2]
    body = tuple(Lanes(2, s.body) if isinstance(s, Lanes) else s for s in sched.body)
    procs = [*k.processes[:2], replace(sched, body=body), *k.processes[3:]]
    assert _wide_st_async(procs) == {"tile": ["st.async by 2 lanes@<unknown>:0"] * 2}
    assert _wide_st_async(list(k.processes)) == {}


def test_inline_ptx_with_two_st_async_is_not_read_as_one():
    """The extractor reads one st.async per inline PTX block; a block with two is not followed
    (its stores count as unknown writes and the block is UNSUPPORTED), never half-read."""
    from warpspin.extract.walker import _one_st_async
    one = "st.async.shared::cluster.mbarrier::complete_tx::bytes.s32 [$0], $1, [$2];"
    two = one + "\n" + one.replace("$0", "$3")
    assert _one_st_async(one) and not _one_st_async(two)
