"""A 1-D Jacobi iteration split over the two CTAs of a cluster, exchanging halo cells through
distributed shared memory: the running example of the blog post this project started from
(../shared/seeds), written as public CuTe DSL code writes it.

Each CTA (one warp) owns N cells of a 2N-cell rod, held in shared memory with a halo cell on each
side: `cells[0]` and `cells[N + 1]`; the rod's outer ends stay 0. Per step every CTA
  1. sends its boundary cell into the peer's halo cell: a plain `llvm.store` through the
     `map_dsmem_ptr` address (`st.shared::cluster`), then arrives on the peer's mbarrier at
     cluster scope, which releases the store to the peer;
  2. waits on its own mbarrier for the peer's cell, with the phase bit it tracks;
  3. computes each cell as the mean of its neighbours, writes them back, and
  4. meets the peer at the cluster barrier (so no halo is overwritten before it is read).
Before the first step each CTA fills its cells (both halo cells 0) and meets the peer at the
cluster barrier, whose arrive releases those writes: the peer's first halo store lands on a
cell this CTA wrote.

Variants (each differs from ``correct`` by one line):
  correct      the phase bit flips after every wait
  stale_phase  the phase bit is never flipped (the blog's bug): the second step's wait on parity
               0 passes at once, and the CTA reads its halo cell while the peer stores into it
               -> race (what warpspin reports, at the read), or it waits for a phase no CTA
               completes -> deadlock (the H200 hangs)
  cta_scope    the arrive releases at the DSL's default CTA scope -> scope
  relaxed_init the first cluster arrive is `cluster_arrive_relaxed` (as CUTLASS writes it after
               mbarrier inits): it releases nothing, so the halo cell this CTA zeroed and the
               peer's first store into it are not ordered (a race by the PTX memory model). The
               model's interleavings cannot tell a relaxed arrive from a release, so races on
               the cells are NOT CHECKED (INCONCLUSIVE), never VERIFIED
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass._mlir.dialects import llvm, nvvm

N = 32       # cells per CTA: one per lane
STEPS = 4
BUGS = ("stale_phase", "cta_scope", "relaxed_init")


class JacobiHalo:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, rod: cute.Tensor, out: cute.Tensor):
        self.kernel(rod, out).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    @cute.kernel
    def kernel(self, rod: cute.Tensor, out: cute.Tensor):
        lane = cute.arch.lane_idx()
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        peer = 1 - rank
        smem = cutlass.memory.SmemAllocator()
        bar = smem.allocate_array(Int64, 1)
        cells = smem.allocate_tensor(Float32, cute.make_layout(N + 2), byte_alignment=16)
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)         # one arrival: the peer's
        cute.arch.mbarrier_init_fence()
        cells[lane + 1] = rod[rank * N + lane]
        if lane == 0:
            cells[0] = Float32(0.0)
            cells[N + 1] = Float32(0.0)
        if cutlass.const_expr(self.bug == "relaxed_init"):
            cute.arch.cluster_arrive_relaxed()                          # BUG: releases nothing
        else:
            cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

        phase = Int32(0)
        for _ in cutlass.range(STEPS, unroll=1):
            if lane == 0:
                # CTA 0 sends its last cell into CTA 1's left halo, CTA 1 its first into CTA 0's
                mine = cells[N] if rank == 0 else cells[1]
                slot = cells.iterator + (N + 1) * rank  # the peer's halo cell on this side
                llvm.store(mine.ir_value(), cute.arch.map_dsmem_ptr(slot, peer).llvm_ptr)
                if cutlass.const_expr(self.bug == "cta_scope"):
                    cute.arch.mbarrier_arrive(bar, peer)                # BUG: CTA scope
                else:
                    cute.arch.mbarrier_arrive(bar, peer, scope=nvvm.MemScopeKind.CLUSTER)
            cute.arch.mbarrier_wait(bar, phase)
            if cutlass.const_expr(self.bug != "stale_phase"):
                phase = phase ^ 1                                       # BUG: dropped
            mean = (cells[lane] + cells[lane + 2]) * Float32(0.5)
            cute.arch.sync_threads()
            cells[lane + 1] = mean
            cute.arch.sync_threads()
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
        out[rank * N + lane] = cells[lane + 1]


def variant(bug: str | None = None):
    from warpspin.frontend import fake_tensor

    return JacobiHalo(bug), (fake_tensor(Float32, (2 * N,), align=16),
                             fake_tensor(Float32, (2 * N,), align=16))


def correct():
    return variant(None)


def stale_phase():
    return variant("stale_phase")


def cta_scope():
    return variant("cta_scope")


def relaxed_init():
    return variant("relaxed_init")


VARIANTS = {"correct": correct, "stale_phase": stale_phase, "cta_scope": cta_scope,
            "relaxed_init": relaxed_init}
EXPECT = {"correct": "verified", "stale_phase": "race", "cta_scope": "scope",
          "relaxed_init": "not-checked"}
EXPECT_AT = {"stale_phase": "mean = (cells[lane] + cells[lane + 2])",
             "cta_scope": "# BUG: CTA scope"}


# -- running on a GPU ------------------------------------------------------------------------------
def reference(rod):
    """STEPS Jacobi steps of the rod with zero ends, on the host."""
    import torch

    x = rod.clone()
    for _ in range(STEPS):
        padded = torch.cat([x.new_zeros(1), x, x.new_zeros(1)])
        x = (padded[:-2] + padded[2:]) * 0.5
    return x


def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if any result is wrong."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    rod = torch.randn(2 * N, device="cuda", dtype=torch.float32)
    out = torch.zeros(2 * N, device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=16) for t in (rod, out)]
    compiled = cute.compile(fn, *args)
    from _device import count_wrong
    count_wrong(name, compiled, args, out, reference(rod), repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
