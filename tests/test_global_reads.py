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
    ("unbounded", "not shown to lie in 0..3"),
])
def test_reads_that_are_not_launch_choices_stay_unsupported(mode, why):
    k = _kernel(mode)
    uns = unsupported_ops(k)
    assert uns and all("cute.memref.load" in u.what for u in uns), [u.what for u in uns]
    assert any(why in u.what for u in uns), [u.what for u in uns]
    assert not [p for p in k.params if p.name.startswith("counts_")]


def test_each_lane_reading_its_own_element_is_a_value_per_lane():
    """`counts[lane % 4]`: each lane's element (tests/test_warp_scans.py follows such values
    through shuffles and votes); a trip count that differs between the lanes is not modelled."""
    k = _kernel("lane")
    uns = unsupported_ops(k)
    assert [u.what for u in uns] == ["loop depends on the lane index"], [u.what for u in uns]


def test_a_constant_index_is_one_parameter():
    k = _kernel("constant")
    assert not unsupported_ops(k)
    assert [(p.name, p.lo, p.hi) for p in k.params] == [("counts_2", 0, 3)]
    r = verify(_launcher("constant"), fake_tensor(Int32, (4,)), fake_tensor(Int32, (cute.sym_int(),)),
               params={"counts_2": (0, 5)})
    assert r.verdict == "verified" and "counts_2=0..5" in str(r), str(r)


# ---- reads at an index known only at run time (a scheduler's batch index) ---------------------

@cute.kernel
def _batch_reads(cu: cute.Tensor, num: Int32, mode: cutlass.Constexpr):
    bidx, _, _ = cute.arch.block_idx()
    gdim, _, _ = cute.arch.grid_dim()
    for b in cutlass.range(bidx, num, gdim, unroll=1):                    # this CTA's batches
        n = Int32(1)
        if cutlass.const_expr(mode == "view"):
            n = cute.make_tensor(cu.iterator + 1, cute.make_layout(2))[b]  # a view at an offset
        elif cutlass.const_expr(mode == "written"):
            cu[0] = 1                                                      # the kernel writes it
            n = cu[b]
        elif cutlass.const_expr(mode == "hidden_store"):                  # the same memory
            addr = cu.iterator.toint()                                     # through an address
            alias = cute.make_tensor(cute.make_ptr(Int32, addr, cute.AddressSpace.generic,
                                                   assumed_align=4), cute.make_layout(4))
            alias[0] = 1
            n = cu[b]
        elif cutlass.const_expr(mode == "unused"):
            cu[b]                                                          # read, never used
        else:
            n = cu[b]
        for _ in cutlass.range(n, unroll=1):
            cute.arch.sync_threads()


def _batch_launcher(mode):
    @cute.jit
    def launch(cu: cute.Tensor, num: Int32):
        _batch_reads(cu, num, mode).launch(grid=(2, 1, 1), block=(64, 1, 1))
    return launch


def _batch_args(memspace=None):
    from cutlass.cute.runtime import make_fake_compact_tensor
    kw = {"memspace": memspace} if memspace is not None else {}
    return make_fake_compact_tensor(Int32, (cute.sym_int(),), assumed_align=4, **kw), Int32(2)


def _batch_kernel(mode, memspace=None, params=None):
    (tk,) = trace(_batch_launcher(mode), *_batch_args(memspace))
    return extract(tk, params=params)


def _reads_of(k):
    from warpspin.syncir.ir import walk_stmts
    from warpspin.syncir.ops import GlobalRead
    return [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, GlobalRead)]


@pytest.mark.parametrize("memspace", [None, "generic"])
def test_a_run_time_index_is_checked_when_it_runs(memspace):
    """The batch index is the scheduler loop's variable: the read is an `ld.launch` whose index
    the model checks, over the tensor's extent (a launch value, 3 by default) and its elements.
    A kernel argument in the generic address space is global memory too."""
    from cutlass.base_dsl.enums import AddressSpace
    k = _batch_kernel("read", getattr(AddressSpace, memspace) if memspace else None,
                      params={"num": 2})
    assert not unsupported_ops(k)
    reads = _reads_of(k)
    assert reads and all(r.tensor == "cu" for r in reads), reads
    got = {p.name: (p.lo, p.hi) for p in k.params}
    assert got["cu_extent"] == (3, 3) and {f"cu_{i}" for i in range(3)} <= set(got), got
    assert "cu_3" not in got


def test_a_given_extent_sets_the_elements_and_a_read_past_it_is_invalid():
    k = _batch_kernel("read", params={"num": 2, "cu_extent": 5})
    assert {p.name for p in k.params} >= {f"cu_{i}" for i in range(5)}
    r = verify(_batch_launcher("read"), *_batch_args(), params={"num": 2, "cu_extent": 2})
    assert r.verdict == "verified", str(r)
    r = verify(_batch_launcher("read"), *_batch_args(), params={"num": 3, "cu_extent": 2})
    assert r.violations and r.violations[0].kind == "invalid-operand", str(r)
    assert "reads cu[2], outside its 2 elements" in str(r), str(r)


def test_run_time_reads_that_are_not_modelled_say_why():
    k = _batch_kernel("read", params={"num": 2, "cu_extent": 20})
    assert any("at most 16 are modelled" in u.what for u in unsupported_ops(k)), k
    k = _batch_kernel("view", params={"num": 2})
    assert any("a view of kernel argument 0" in u.what for u in unsupported_ops(k)), k


def test_a_generic_argument_the_kernel_writes_is_not_launch_values():
    from cutlass.base_dsl.enums import AddressSpace
    k = _batch_kernel("written", AddressSpace.generic, params={"num": 2})
    assert any("which the kernel writes" in u.what for u in unsupported_ops(k)), k
    assert not _reads_of(k)


def test_a_generic_store_the_extractor_cannot_root_may_write_the_argument():
    """A store through a generic pointer made from an integer address: the extractor cannot
    tell which memory it writes, so the argument is not launch values (fail closed)."""
    from cutlass.base_dsl.enums import AddressSpace
    k = _batch_kernel("hidden_store", AddressSpace.generic, params={"num": 2})
    assert any("may write" in u.what for u in unsupported_ops(k)), [u.what for u in
                                                                    unsupported_ops(k)]
    assert not _reads_of(k)


def test_a_read_whose_value_is_unused_is_dropped():
    k = _batch_kernel("unused", params={"num": 2})
    assert not _reads_of(k) and not [p for p in k.params if p.name.startswith("cu")]
