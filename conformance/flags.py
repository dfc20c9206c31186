"""Litmus kernels for global flags between CTAs: one CTA adds to a word of global memory, the
other spins on it with ld.acquire (a grid of two CTAs, each its own cluster: warpspin models
every CTA of the grid)."""
import cutlass.cute as cute
from cutlass import Int32

from .litmus import Litmus


class _Flag(Litmus):
    """CTA 0's lane 0 adds 1 to x[0] (0 at launch) with `sem` at `scope`; CTA 1's lane 0 spins
    until x[0] >= `total`."""
    grid = 2
    warps = 1
    nbars = 1
    zero_x = (0,)
    sem = "release"
    scope = "gpu"
    total = 1

    @cute.jit
    def body(self):
        if self.rank == 0:
            if self.lane == 0:
                cute.arch.atomic_add(self.x.iterator.llvm_ptr, Int32(1), sem=self.sem,
                                     scope=self.scope)
        else:
            if self.lane == 0:
                while cute.arch.load(self.x.iterator.llvm_ptr, Int32, sem="acquire",
                                     scope="gpu") < self.total:
                    pass


class FlagReleaseAcquire(_Flag):
    """The add (release, gpu scope) lets the spinning CTA go. warpspin: verified."""
    rules = ("gmem.flag-handoff", "gmem.flag-order")
    expect = "not-checked"  # no violation; the data it hands over is not followed


class FlagWaitsForMore(_Flag):
    """The spinning CTA waits for 2 but only one add ever comes: it spins forever. warpspin:
    deadlock at the loop."""
    rules = ("gmem.flag-handoff",)
    expect = "deadlock"
    total = 2
    launches = 1


class FlagRelaxedAdd(_Flag):
    """A relaxed add: the loop still ends (the value arrives), but it orders nothing before the
    waiter's reads (PTX 8.7). warpspin: scope at the add."""
    rules = ("gmem.flag-order",)
    expect = "scope"
    sem = "relaxed"


class FlagCtaScopeAdd(_Flag):
    """An add at .cta scope, waited for by another CTA: not in each other's scope (PTX 8.5).
    warpspin: scope at the add."""
    rules = ("gmem.flag-order",)
    expect = "scope"
    scope = "cta"


LITMUS = [FlagReleaseAcquire, FlagWaitsForMore, FlagRelaxedAdd, FlagCtaScopeAdd]
