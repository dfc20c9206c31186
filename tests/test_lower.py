"""SyncIR -> Promela: the text is valid Promela, and its pieces mean what docs/semantics.md says."""
import random
import re
import shutil
import subprocess

import pytest

from warpspin.syncir.protocols import RING_BUGS, ring
from warpspin.lower import lower
from warpspin.lower.promela import expr_text
from warpspin.syncir import validate
from warpspin.syncir.interp import eval_expr
from warpspin.syncir.ir import (BinOp, Const, Elect, Kernel, Loc, MBarRef, MBarrierDecl, Param, Process, Select, UnOp, Var, While, Assign)
from warpspin.syncir.ops import (BarArrive, BarSync, MbarArrive, MbarInit, MbarInitFence, MbarTestWait, MbarWait, TmaLoad)

pytestmark = pytest.mark.skipif(shutil.which("spin") is None, reason="needs SPIN")


def spin_syntax(text: str, tmp_path) -> None:
    (tmp_path / "m.pml").write_text(text)
    r = subprocess.run(["spin", "-a", "m.pml"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and "error" not in r.stdout.lower(), r.stdout + r.stderr


@pytest.mark.parametrize("bug", (None,) + RING_BUGS)
@pytest.mark.parametrize("reduce", [True, False])
def test_ring_lowers_to_valid_promela(bug, reduce, tmp_path):
    k = ring(stages=3, trips="K", trips_range=(1, 4), consumers=2, ctas=2, bug=bug)
    spin_syntax(lower(k, reduce=reduce).text, tmp_path)


def test_layout_metadata():
    m = lower(ring(stages=4, trips=8, consumers=3))
    assert m.proctypes == ("p0_producer", "p1_consumer")
    assert m.layout.first_gid == [0, 1]
    # one in-flight counter per (TMA op, CTA, stage)
    keys = m.layout.async_keys
    assert len(keys) == 4 and {k[3] for k in keys} == {0, 1, 2, 3}
    assert m.layout.named_slots == [(0, 0)]  # only barrier 0 is used: one slot, not 16
    assert m.symmetric == (1,)         # the consumers; the producer initializes barriers
    assert lower(ring(consumers=3), reduce=False).symmetric == ()
    assert "run p1_consumer()" in m.text and "run p0_producer(0)" in m.text


def test_every_visible_pc_prints_its_step():
    k = ring(stages=2, trips=2, consumers=1)
    m = lower(k, reduce=False)
    for pi, fp in enumerate(m.flat):
        for pc, ins in enumerate(fp.code):
            visible = type(ins).__name__ == "Op"
            assert (f'"WS|S|{pi}|%d|{pc}\\n"' in m.text) == visible, (pi, pc, ins)


def test_tma_bytes_must_not_depend_on_locals():
    k = Kernel("k", (Process("p", (MbarInit(MBarRef("b"), 1), Assign("x", 8),
                                   TmaLoad(MBarRef("b"), Var("x"))), threads=32),),
               (MBarrierDecl("b"),))
    assert any("launch parameters" in p.message for p in validate(k))


def test_named_barrier_ids_dynamic_use_all_sixteen(tmp_path):
    k = Kernel("k", (Process("p", (Assign("i", 3), BarSync(Var("i"), 64),
                                   BarArrive(Const(1), 64)), threads=32, instances=2),))
    m = lower(k)
    assert len(m.layout.named_slots) == 16
    spin_syntax(m.text, tmp_path)


def test_misc_ops_lower(tmp_path):
    """Test-wait, While with a bound, Select, lanes, remote arrive in a 2-CTA cluster."""
    loc = Loc("t.py", 1)
    bar = MBarRef("b", 0)
    body = (MbarInit(bar, 2, loc), MbarInitFence(loc), BarSync(0, loc=loc),
            Assign("i", 0), While(Var("i").lt(3), (Assign("i", Var("i") + 1),
                                                   MbarTestWait("ok", bar, 0, loc)), 4, loc),
            Elect((MbarArrive(MBarRef("b", 0, cta=Select(Var("i").eq(3), Const(1), Const(0))), 1, loc),), loc),
            MbarWait(bar, Var("ok") ^ 1, loc))
    procs = tuple(Process(f"w{c}", body, cta=c, threads=32) for c in range(2))
    k = Kernel("misc", procs, (MBarrierDecl("b"),), (Param("N", 1, 3),), num_ctas=2)
    spin_syntax(lower(k).text, tmp_path)


def _random_expr(rng, depth=0):
    if depth > 2 or rng.random() < 0.3:
        return rng.choice([Const(rng.randint(-9, 9)), Var("a"), Var("b")])
    op = rng.choice(["+", "-", "*", "//", "%", "min", "max", "^", "&", "|", "==", "!=", "<",
                     "<=", ">", ">=", "and", "or", "neg", "not", "sel"])
    x, y = _random_expr(rng, depth + 1), _random_expr(rng, depth + 1)
    if op in ("//", "%"):
        return BinOp(op, x, Const(rng.randint(1, 5)))  # divisors are positive
    if op in ("neg", "not"):
        return UnOp("-" if op == "neg" else "not", x)
    if op == "sel":
        return Select(x, y, _random_expr(rng, depth + 1))
    return BinOp(op, x, y)


def test_expressions_match_the_interpreter(tmp_path):
    """Promela arithmetic (C: truncating division) vs SyncIR's floor division and the rest."""
    rng = random.Random(7)
    cases = [(_random_expr(rng), rng.randint(-20, 20), rng.randint(-20, 20)) for _ in range(150)]
    lines = ["int a, b;", "init {"]
    for i, (e, a, b) in enumerate(cases):
        lines.append(f'  a = {a}; b = {b}; printf("R|{i}|%d\\n", {expr_text(e, {"a": "a", "b": "b"})});')
    lines.append("}")
    (tmp_path / "e.pml").write_text("\n".join(lines))
    out = subprocess.run(["spin", "e.pml"], cwd=tmp_path, capture_output=True, text=True).stdout
    got = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"R\|(\d+)\|(-?\d+)", out)}
    for i, (e, a, b) in enumerate(cases):
        assert got[i] == eval_expr(e, {"a": a, "b": b}), (e, a, b)


def test_index_variable_read_only_by_the_wait_stays_live():
    """Dead-variable reset must treat the variables of an op's barrier index as reads: here `s`
    is read only by the wait's index; resetting it to 0 would wait on b[0], which never
    completes (a false deadlock), instead of b[1]."""
    from warpspin.api import verify_kernel
    b0, b1 = MBarRef("b", 0), MBarRef("b", 1)
    body = (Elect((MbarInit(b0, 1), MbarInit(b1, 1), MbarInitFence())), BarSync(),
            Assign("s", 1), Elect((MbarArrive(b1, 1),)), MbarWait(MBarRef("b", Var("s")), 0))
    k = Kernel("live_index", (Process("p", body),), (MBarrierDecl("b", 2),))
    for reduce in (True, False):
        r = verify_kernel(k, opts=__import__("warpspin.api", fromlist=["CheckOptions"]).CheckOptions(
            reduce=reduce))
        assert r.verdict == "verified", str(r)
