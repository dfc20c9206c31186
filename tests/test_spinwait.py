"""A spin loop on an mbarrier test-wait is its blocking wait (extract/spinwait.py)."""
import os

import pytest

from warpspin.extract.spinwait import spin_waits
from warpspin.syncir.ir import Assign, BinOp, Const, MBarRef, Var, While, walk_stmts
from warpspin.syncir.ops import BarSync, MbarTestWait, MbarWait

B = MBarRef("bars", Const(0))


def _spin(parity_in_loop=Const(0), cond=None, extra=(), after=()):
    """t = test(B, 0); w = t; c = w == 0; while c: {t2 = test(B, p); w = t2; c = w == 0; extra}"""
    pre = (MbarTestWait("t", B, Const(0)), Assign("w", Var("t")),
           Assign("c", BinOp("==", Var("w"), Const(0))))
    loop = While(cond or Var("c"), (MbarTestWait("t2", B, parity_in_loop), Assign("w", Var("t2")),
                                    Assign("c", BinOp("==", Var("w"), Const(0))), *extra))
    return (*pre, loop, *after)


def test_a_spin_on_one_phase_is_its_wait():
    out = spin_waits(_spin())
    assert isinstance(out[0], MbarWait) and out[0].bar == B and out[0].parity == Const(0)
    assert out[1] == Assign("t", Const(1))
    assert not any(isinstance(s, (While, MbarTestWait)) for s in walk_stmts(out))


@pytest.mark.parametrize("case", [
    dict(parity_in_loop=Const(1)),                       # another phase inside the loop
    dict(extra=(BarSync(Const(0)),)),                    # anything else in the body
    dict(cond=BinOp("!=", Var("w"), Const(0))),          # loops while it passed
    dict(after=(Assign("x", Var("t2")),)),               # the loop's own result read after it
    dict(after=(Assign("x", Var("t")),)),                # the first test's result read after it
])
def test_other_loops_stay_loops(case):
    out = spin_waits(_spin(**case))
    assert any(isinstance(s, While) for s in out)


def test_the_condition_form_reuses_its_result_local():
    """`while not try_wait(b, p)`: one result local before and in the loop."""
    pre = (MbarTestWait("t", B, Const(0)), Assign("c", BinOp("==", Var("t"), Const(0))))
    loop = While(Var("c"), (MbarTestWait("t", B, Const(0)),
                            Assign("c", BinOp("==", Var("t"), Const(0)))))
    out = spin_waits((*pre, loop))
    assert isinstance(out[0], MbarWait) and not any(isinstance(s, While) for s in out)
    outer = While(Var("z"), (*pre, loop, Assign("y", Var("t"))))  # read outside: kept
    assert any(isinstance(s, While) for s in walk_stmts(spin_waits((outer,))[0].body))


def test_a_phase_that_moves_inside_the_loop_stays_a_loop():
    pre = (Assign("p", Const(0)), MbarTestWait("t", B, Var("p")),
           Assign("c", BinOp("==", Var("t"), Const(0))))
    loop = While(Var("c"), (MbarTestWait("t", B, Var("p")),
                            Assign("c", BinOp("==", Var("t"), Const(0))),
                            Assign("p", BinOp("^", Var("p"), Const(1)))))
    assert any(isinstance(s, While) for s in spin_waits((*pre, loop)))


if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")


@pytest.mark.parametrize("name", ["mbarrier_try_wait", "mbarrier_test_wait",
                                  "mbarrier_try_wait_in_condition"])
def test_the_dsl_spellings_extract_to_the_wait_and_verify(name):
    from fixtures.api import all_rows
    from warpspin.api import verify_all
    r = next(r for r in all_rows() if r.name == name)
    fn, args = r.make()
    res = verify_all(fn, *args, arch=r.arch)[0]
    assert res.verdict == "verified", str(res)
    body = [ln.split("#")[0] for ln in res.syncir_text.splitlines()
            if any(f"arch_sync.py:{n} " in ln for n in range(r.lines[0], r.lines[1] + 1))]
    assert any("mbarrier.wait bars[0], parity=0" in ln for ln in body), res.syncir_text
    assert not any("while" in ln or "test_wait" in ln for ln in body), res.syncir_text


def _entered(start=Const(0), parity=Const(0), extra=()):
    """done = start; c = done == 0; while c: {t = test(B, parity); done = t; c = done == 0}"""
    pre = (Assign("done", start), Assign("c", BinOp("==", Var("done"), Const(0))))
    loop = While(Var("c"), (MbarTestWait("t", B, parity), Assign("done", Var("t")),
                            Assign("c", BinOp("==", Var("done"), Const(0))), *extra))
    return (*pre, loop)


def test_a_loop_entered_on_a_constant_is_the_wait():
    """`done = 0; while done == 0: done = test(b, p)` (inline PTX's test returns a value): the
    loop runs at least once, so it is the wait, then done = 1."""
    out = spin_waits(_entered())
    assert [type(s).__name__ for s in out] == ["Assign", "Assign", "MbarWait", "Assign",
                                               "Assign", "Assign"]
    assert out[3] == Assign("t", Const(1)) and not any(isinstance(s, While) for s in out)


@pytest.mark.parametrize("case", [dict(start=Const(1)),            # never entered
                                  dict(start=Var("x")),             # entered or not
                                  dict(extra=(Assign("p", Const(1)),), parity=Var("p")),
                                  dict(extra=(BarSync(Const(0)),))])
def test_other_entered_loops_stay_loops(case):
    assert any(isinstance(s, While) for s in spin_waits(_entered(**case)))
