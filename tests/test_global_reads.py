"""Values read from global memory (issue: values handed through memory): each element of a
tensor the kernel only reads is a value chosen at launch, every reader of it sees the same one,
and the check covers every value in the stated range (0..3 by default, --param widens it)."""
import os
import sys

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs the DSL: never skip there
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32  # noqa: E402

from warpspin.api import CheckOptions, check_target, verify  # noqa: E402
from warpspin.extract import extract  # noqa: E402
from warpspin.frontend import fake_tensor, trace  # noqa: E402
from warpspin.syncir import unsupported_ops  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOE = os.path.join(ROOT, "examples", "moe_counts.py")


def test_moe_correct_verifies_for_every_count_in_the_default_range():
    r = check_target(f"{MOE}:correct", CheckOptions(timeout_s=300))[0]
    # no violation for any count, races on the slots in `buf` checked (one cell per element)
    assert r.verdict == "verified" and not r.violations, str(r)
    text = str(r)
    assert "256 executions" in text, text  # one per choice of the four counts, each 0..3


def test_moe_producer_cap_names_the_count_that_hangs():
    r = check_target(f"{MOE}:producer_caps", CheckOptions(timeout_s=300))[0]
    assert r.violations and r.violations[0].kind == "deadlock", str(r)
    text = str(r)
    assert "counts_3 = 3" in text or any(f"counts_{e} = 3" in text for e in range(4)), text


def test_a_range_that_excludes_the_trigger_verifies():
    """The count decides the verdict: without the value 3 the capped producer is correct."""
    params = {f"counts_{e}": (0, 2) for e in range(4)}
    r = check_target(f"{MOE}:producer_caps", CheckOptions(timeout_s=300, params=params))[0]
    assert r.verdict == "verified" and not r.violations, str(r)


# ---- what stays a per-thread value -------------------------------------------------------------

@cute.kernel
def _reads(counts: cute.Tensor, out: cute.Tensor, mode: cutlass.Constexpr):
    lane = cute.arch.lane_idx()
    n = Int32(0)
    if cutlass.const_expr(mode == "written"):
        counts[1] = 2                                      # the kernel writes the tensor it reads
        n = counts[0]
    if cutlass.const_expr(mode == "lane"):
        n = counts[lane % 4]                               # each lane reads its own element
    if cutlass.const_expr(mode == "unbounded"):
        for i in cutlass.range(8, unroll=1):               # past the end of the 4 elements
            n = n + counts[i]
    if cutlass.const_expr(mode == "constant"):
        n = counts[2]
    for _ in cutlass.range(n, unroll=1):
        cute.arch.sync_threads()


def _launcher(mode):
    @cute.jit
    def launch(counts: cute.Tensor, out: cute.Tensor):
        _reads(counts, out, mode).launch(grid=(1, 1, 1), block=(64, 1, 1))
    return launch


def _kernel(mode):
    (tk,) = trace(_launcher(mode), fake_tensor(Int32, (4,)), fake_tensor(Int32, (cute.sym_int(),)))
    return extract(tk)


@pytest.mark.parametrize("mode,why", [
    ("written", "which the kernel writes"),
    ("lane", "differs between threads"),
    ("unbounded", "not shown to lie in 0..3"),
])
def test_reads_that_are_not_launch_choices_stay_unsupported(mode, why):
    k = _kernel(mode)
    uns = unsupported_ops(k)
    assert uns and all("cute.memref.load" in u.what for u in uns), [u.what for u in uns]
    assert any(why in u.what for u in uns), [u.what for u in uns]
    assert not [p for p in k.params if p.name.startswith("counts_")]


def test_a_constant_index_is_one_parameter():
    k = _kernel("constant")
    assert not unsupported_ops(k)
    assert [(p.name, p.lo, p.hi) for p in k.params] == [("counts_2", 0, 3)]
    r = verify(_launcher("constant"), fake_tensor(Int32, (4,)), fake_tensor(Int32, (cute.sym_int(),)),
               params={"counts_2": (0, 5)})
    assert r.verdict == "verified" and "counts_2=0..5" in str(r), str(r)
