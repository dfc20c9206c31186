"""An atomic on a kernel argument that is neither a counter (atom.inc) nor a flag (atom.add), outside
grid models, is data: the search runs, races on what it writes are NOT CHECKED, and what depends
on its result is Unsupported (extract/rules/globals.py, `atomic_rmw`). So is an atom.add at no
static word of an argument nothing spins on, in a grid model too."""
import os

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32  # noqa: E402

from warpspin.api import verify_all  # noqa: E402


class RunningMax:
    """One warp per 32 elements of x (a grid the host sizes from x): lane l folds its element
    into h[l] with atom.max; `branch`: a CTA barrier only where the old value was large."""

    def __init__(self, branch: bool):
        self.branch = branch

    @cute.jit
    def __call__(self, x: cute.Tensor, h: cute.Tensor):
        self.kernel(x, h).launch(grid=(cute.size(x) // 32, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, h: cute.Tensor):
        b, _, _ = cute.arch.block_idx()
        lane = cute.arch.lane_idx()
        old = cute.arch.atomic_max((h.iterator + lane).llvm_ptr, x[b * 32 + lane])
        if cutlass.const_expr(self.branch):
            if old > 3:
                cute.arch.sync_threads()


class CounterAndMax:
    """A dynamic scheduler's counter (`atom.inc` by one thread) and an `atom.max` on the same
    word: the max changes the counter, which only atom.inc may: stays Unsupported."""

    @cute.jit
    def __call__(self, x: cute.Tensor, sem: cute.Tensor):
        self.kernel(x, sem).launch(grid=(cute.size(x) // 32, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, sem: cute.Tensor):
        from cutlass.experimental import primitives as prims
        lane = cute.arch.lane_idx()
        taken = Int32(0)
        if lane == 0:
            taken = prims.atomicrmw(prims.AtomicOp.INC, sem.iterator, Int32(7))
        if lane == 1:
            cute.arch.atomic_max(sem.iterator.llvm_ptr, Int32(3))
        x[lane] = taken


def _check(branch: bool):
    from warpspin.frontend import fake_tensor, sym_int
    return verify_all(RunningMax(branch), fake_tensor(Int32, (sym_int(),), align=16),
                      fake_tensor(Int32, (32,), align=16))[0]


def test_a_data_atomic_leaves_races_not_checked_and_checks_the_rest():
    r = _check(False)
    assert r.verdict == "inconclusive" and "NOT CHECKED" in str(r) and "atomicrmw" in str(r), str(r)
    assert "no deadlock" in str(r)


def test_control_flow_on_its_result_is_unsupported():
    r = _check(True)
    assert r.verdict == "unsupported" and "branch depends on nvvm.atomicrmw" in str(r), str(r)


def test_an_atomic_on_a_counters_word_stays_unsupported():
    from warpspin.frontend import fake_tensor, sym_int
    r = verify_all(CounterAndMax(), fake_tensor(Int32, (sym_int(),), align=16),
                   fake_tensor(Int32, (1,), align=4))[0]
    assert r.verdict == "unsupported" and "atomic_op max" in str(r), str(r)


class Histogram:
    """Two CTAs: CTA 0 counts its lanes into h[lane % 4] with atom.add (a histogram: the bin is
    no static word), then releases `done`; CTA 1 waits for it. `spin_on_h`: CTA 1 also spins on
    h[0], so a word of h may be a flag someone waits for: the add stays a flag op (Unsupported at
    a dynamic place)."""

    def __init__(self, spin_on_h: bool = False):
        self.spin_on_h = spin_on_h

    @cute.jit
    def __call__(self, h: cute.Tensor, done: cute.Tensor):
        self.kernel(h, done).launch(grid=(2, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, h: cute.Tensor, done: cute.Tensor):
        cta, _, _ = cute.arch.block_idx()
        lane = cute.arch.lane_idx()
        if cta == 0:
            cute.arch.atomic_add((h.iterator + lane % 4).llvm_ptr, Int32(1), sem="relaxed",
                                 scope="gpu")
            cute.arch.sync_threads()
            if lane == 0:
                cute.arch.atomic_add(done.iterator.llvm_ptr, Int32(1), sem="release", scope="gpu")
        else:
            if lane == 0:
                while cute.arch.load(done.iterator.llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < 1:
                    pass
                if cutlass.const_expr(self.spin_on_h):
                    while cute.arch.load(h.iterator.llvm_ptr, Int32, sem="acquire",
                                         scope="gpu") < 1:
                        pass


@pytest.mark.parametrize("spin_on_h", [False, True])
def test_an_add_at_no_static_word_in_a_grid_model(spin_on_h):
    """In a grid model, an add at a per-lane place of an argument nothing spins on is data:
    the check runs (the flag `done` is checked) and races on `h` are NOT CHECKED, named; when
    something spins on a word of `h`, the add at no static word is Unsupported."""
    from warpspin.api import verify
    from warpspin.frontend import fake_tensor
    r = verify(Histogram(spin_on_h), fake_tensor(Int32, (4,), align=16),
               fake_tensor(Int32, (1,), align=16))
    if spin_on_h:
        assert r.verdict == "unsupported", str(r)
        assert any("not an element of the kernel argument at a static offset" in x
                   for x in r.reasons), str(r)
    else:
        assert r.outcome == "not-checked", str(r)
        assert "global data h" in str(r) and "no static word" in str(r), str(r)
