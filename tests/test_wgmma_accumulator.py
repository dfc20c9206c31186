"""wgmma accumulator registers (rule `wgmma.accumulator`): a thread access of the registers a
wgmma accumulates into is a race until a wgmma.wait_group of the warp retires the wgmma's group.

SyncIR protocols checked by every engine (the interpreter's exhaustive search, SPIN and the
happens-before engine must agree), the extractor's view/access split on a real trace, and a
one-edit mutant of quack's SM90 GEMM that the bench found surviving before the rule."""
import os
import sys

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import For, Kernel, Loc, Process, validate
from warpspin.syncir.interp import violation_kinds
from warpspin.syncir.ops import AccAccess, WgmmaAcc, WgmmaCommit, WgmmaFence, WgmmaWait

HERE = os.path.dirname(os.path.abspath(__file__))
L = lambda n: Loc("acc.py", n)  # noqa: E731


def _kernel(body, depth=2, fenced=True) -> Kernel:
    """One warpgroup running `body` after a wgmma.fence (`fenced`), its group ops told of the
    accumulator as the extractor tells them."""
    from dataclasses import replace

    def told(st):
        if isinstance(st, AccAccess):
            return replace(st, depth=depth)
        if isinstance(st, WgmmaFence):
            return replace(st, accs=("acc",))
        if isinstance(st, (WgmmaCommit, WgmmaWait)):
            return replace(st, accs=("acc",), depth=depth)
        if isinstance(st, For):
            return replace(st, body=tuple(told(s) for s in st.body))
        return st
    body = ((WgmmaFence(loc=L(0)),) if fenced else ()) + tuple(body)
    k = Kernel("acc", (Process("mma", tuple(told(s) for s in body), warps=(0, 4)),), ())
    assert not validate(k), validate(k)
    return k


MMA = WgmmaAcc("acc", L(1))
COMMIT = WgmmaCommit(loc=L(2))
READ = AccAccess("acc", loc=L(9))

CASES = {
    # name: (body, verdict, line of the violation)
    "read after wait 0": ((MMA, COMMIT, WgmmaWait(0, loc=L(3)), READ), "verified", None),
    "read with no wait": ((MMA, COMMIT, READ), "race", 9),
    "read before commit": ((MMA, READ), "race", 9),
    "wait 1 with one group": ((MMA, COMMIT, WgmmaWait(1, loc=L(3)), READ), "race", 9),
    # the accumulator in the older of two groups: wait_group 1 retires it
    "older group retired": ((MMA, COMMIT, WgmmaCommit(loc=L(4)), WgmmaWait(1, loc=L(5)), READ),
                            "verified", None),
    "newest group pending": ((WgmmaCommit(loc=L(4)), MMA, COMMIT, WgmmaWait(1, loc=L(5)), READ),
                             "race", 9),
    # quack's mainloop: wait_group 1 in the loop, wait_group 0 after it
    "mainloop then wait 0": ((For("k", 0, 3, (MMA, COMMIT, WgmmaWait(1, loc=L(6))), loc=L(7)),
                              WgmmaWait(0, loc=L(8)), READ), "verified", None),
    "mainloop, wait 0 deleted": ((For("k", 0, 3, (MMA, COMMIT, WgmmaWait(1, loc=L(6))),
                                      loc=L(7)), READ), "race", 9),
    # wgmma.fence: before the first wgmma, and between a thread access and the next wgmma
    "fill, fence, wgmma": ((AccAccess("acc", loc=L(0)), WgmmaFence(loc=L(1)), MMA, COMMIT,
                            WgmmaWait(0, loc=L(3)), READ), "verified", None),
    "fill, wgmma with no fence": ((AccAccess("acc", loc=L(0)), MMA, COMMIT,
                                   WgmmaWait(0, loc=L(3)), READ), "race", 1),
    "two wgmmas, one fence": ((MMA, WgmmaAcc("acc", L(5)), COMMIT, WgmmaWait(0, loc=L(3)),
                               READ), "verified", None),
    "rescale between groups unfenced": ((MMA, COMMIT, WgmmaWait(0, loc=L(3)), READ,
                                         WgmmaAcc("acc", L(6)), COMMIT,
                                         WgmmaWait(0, loc=L(7))), "race", 6),
}


@pytest.mark.parametrize("engine", ["spin", "hb"])
@pytest.mark.parametrize("name", list(CASES))
def test_engines_agree(name, engine):
    body, verdict, line = CASES[name]
    k = _kernel(body)
    kinds, complete = violation_kinds(k)  # the reference interpreter, every interleaving
    assert complete and kinds == (set() if verdict == "verified" else {verdict}), (name, kinds)
    r = verify_kernel(k, opts=CheckOptions(engine=engine, timeout_s=60))
    got = r.violations[0].kind if r.violations else r.verdict
    assert got == verdict, (name, engine, str(r))
    if line is not None:
        assert r.violations[0].locations[0].line == line


def test_no_fence_before_the_first_wgmma():
    k = _kernel((MMA, COMMIT, WgmmaWait(0, loc=L(3)), READ), fenced=False)
    kinds, complete = violation_kinds(k)
    assert complete and kinds == {"race"}
    r = verify_kernel(k, opts=CheckOptions(timeout_s=60))
    assert r.violations[0].locations[0].line == 1 and "wgmma.fence" in r.violations[0].message


def test_the_message_names_the_accumulator_and_the_wait():
    r = verify_kernel(_kernel(CASES["read with no wait"][0]), opts=CheckOptions(timeout_s=60))
    msg = r.violations[0].message
    assert "registers acc" in msg and "wgmma.wait_group" in msg, msg


def test_views_are_not_accesses_and_copies_are():
    """The example's trace: the wgmma's d/c, the fragment's views and iterator are no access;
    the fill before the MMA and the copy to global memory are."""
    pytest.importorskip("cutlass")
    from warpspin.demo import _module
    from warpspin.extract import extract
    from warpspin.extract.accumulators import accessed, accumulators
    from warpspin.frontend.trace import trace

    path = os.path.join(os.path.dirname(HERE), "examples", "wgmma_accumulator.py")
    mod = _module(path)
    fn, args = mod.correct()
    k = trace(fn, *args)[0]
    accs = accumulators(k)
    assert set(accs.values()) == {"acc0"}
    hits = [(op.name, op.loc.line) for top in k.body.blocks[0].ops for op in top.walk()
            if accessed(accs, op)]
    src = open(path).read().splitlines()
    fill = next(i + 1 for i, t in enumerate(src) if "acc.fill(0.0)" in t)
    store = next(i + 1 for i, t in enumerate(src) if "# the store of the accumulator" in t)
    assert hits == [("cute.memref.store_vec", fill), ("cute.copy", store)], hits
    body = extract(k).processes[0].body
    assert any(isinstance(s, WgmmaAcc) for s in body)


def test_quack_mutant_without_the_final_wait_is_a_race():
    """quack's SM90 GEMM with its `warpgroup.wait_group(0)` after the mainloop deleted: the
    epilogue copies the accumulator while the last wgmmas may still write it. It stayed VERIFIED
    before the rule (bench/mutants.md)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
    from fixtures import catalog as C
    if C.available("quack"):
        pytest.skip(C.available("quack"))
    import mutants as M
    k = C.extracted("quack.gemm_sm90")
    hits = [m for m, e in M.described_mutants(k)
            if isinstance(e.stmt, WgmmaWait) and e.stmt.n == 0 and e.what == "deleted"]
    assert hits
    for m in hits:
        r = verify_kernel(m, opts=CheckOptions(timeout_s=60))
        assert r.violations and r.violations[0].kind == "race", str(r)
        assert "accumulator" in r.violations[0].message
    from verdicts import verified_but_global_memory
    assert verified_but_global_memory(verify_kernel(k, opts=CheckOptions(timeout_s=60)))


def test_spin_without_load_races_keeps_the_fragments_retired():
    """`--no-load-races` drops the stage reads of wgmma groups, not the register fragments they
    retire: the fragment read after wait_group 0 stays VERIFIED, the one with no wait a race
    (quack's persistent GEMM was a false race before)."""
    for name in ("read after wait 0", "read with no wait"):
        body, verdict, _ = CASES[name]
        r = verify_kernel(_kernel(body), opts=CheckOptions(engine="spin", load_races=False,
                                                           timeout_s=60))
        got = r.violations[0].kind if r.violations else r.verdict
        assert got == verdict, str(r)



def test_a_pointer_made_from_a_fragment_stays_the_fragment():
    """A fragment's iterator cast to an LLVM pointer is a view; the load through it is the
    access (not the cast), so a load after a later wgmma is still checked."""
    from types import SimpleNamespace as NS
    from warpspin.extract.accumulators import accessed, accumulators
    from warpspin.frontend.mlir_data import Op
    rmem = '!cute.memref<f32, rmem, align<32>, "(4):(1)">'
    ops = [Op("cute.memref.alloca", [], [], [1], [rmem]),
           Op("cute.gemm", [0, 1, 2, 3, 1], ["!mma_atom<sm90>", rmem, "a", "b", rmem]),
           Op("cute.get_iter", [1], [rmem], [4], ["!cute.ptr<f32, rmem, align<32>>"]),
           Op("builtin.unrealized_conversion_cast", [4], ["!cute.ptr<f32, rmem>"], [5],
              ["!llvm.ptr"]),
           Op("llvm.load", [5], ["!llvm.ptr"], [6], ["f32"])]
    k = NS(body=NS(blocks=[NS(ops=ops)]))
    accs = accumulators(k)
    assert {accs[v] for v in (1, 4, 5)} == {"acc0"}
    assert [op.name for op in ops if accessed(accs, op)] == ["llvm.load"]
