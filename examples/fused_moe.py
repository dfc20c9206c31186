"""A persistent fused mixture-of-experts kernel in the seed's architecture: FF1 -> SwiGLU -> FF2
stages on clusters of two CTAs, handing m-tiles across clusters through counters in global
memory, with per-expert token counts read from memory.

The grid is two clusters of two CTAs, one warp each. Cluster 0 runs FF1 and SwiGLU: for every
expert e and each of its ceil(counts[e] / TM) m-tiles, CTA rank r computes its half of the hidden
tile, ``hidden = silu(x * WG[r]) * (x * WU[r])``, writes it to global memory, waits for its warp
(bar.sync) and adds 1 to the expert's counter ``ready[e]`` with ``atom.add.release.gpu``.
Cluster 1 runs FF2: its leader (rank 0) spins with ``ld.acquire.gpu`` until ``ready[e]`` holds
2 * tiles (both halves of every tile), then tells its peer through a remote arrive
(``mbarrier.arrive.release.cluster`` on the peer's ``go`` barrier, mapa); both read the hidden
tiles and write their half of ``out = (h0 + h1) * W2[r]``; the peer hands the expert back with a
remote arrive on the leader's ``done`` barrier, which the leader waits for before it releases
the next expert (the peer's ``go`` would otherwise complete two phases ahead of it). Each
barrier's phase bit flips once per expert (``phase ^= 1``), as pipelines track it.

warpspin checks every CTA of the grid (a grid model of two clusters) for every count 0..3 of
each expert (``--param counts_0=..``): empty experts, one tile, an odd count.

Variants:
  correct            the reference protocol
  off_by_one         FF1 walks floor(counts[e] / TM) tiles, FF2 ceil: with an odd count the
                     leader waits for a tile nobody produces -> deadlock (hangs on the GPU)
  weak_poll          the leader spins on a plain load (no .acquire) -> scope
  cta_release        FF1 adds with .release.cta: no CTA of the other cluster is ordered by it
                     -> scope
  exited_peer        the leader skips the wait on ``done`` after the last expert ("nothing
                     follows it") and may exit before the peer's remote arrive lands in its
                     shared memory -> cluster-lifetime
  empty_expert_skip  the peer skips its wait on ``go`` for an empty expert ("nothing to read")
                     and with it the flip of its phase bit, but still hands the expert back:
                     from then on it runs one phase ahead. Its wait for the next expert passes
                     on the empty expert's phase, so it hands that expert back too, before the
                     leader has waited: ``done`` completes two phases while the leader waits for
                     the first -> parity-aliasing (on the GPU the leader's wait then blocks for
                     good; in other interleavings the peer reads the hidden tiles before FF1
                     wrote them, a race, or has exited when the leader's next arrive lands)
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass._mlir.dialects import nvvm

EXPERTS = 2
TM = 2           # tokens per m-tile
MAX_TOKENS = 3   # the largest count the device run uses (the arrays are sized for it)
MAX_TILES = (MAX_TOKENS + TM - 1) // TM
CLUSTER = 2
WG, WU, W2 = (0.5, -1.25), (1.5, 0.75), (2.0, -0.5)   # per rank: its half of the weights
BUGS = ("off_by_one", "weak_poll", "cta_release", "exited_peer", "empty_expert_skip")
# the counts each variant runs with on the GPU (off_by_one: an odd count; empty_expert_skip: an
# empty first expert)
DEVICE_COUNTS = {"correct": [3, 2], "off_by_one": [3, 2], "weak_poll": [3, 2],
                 "cta_release": [3, 2], "exited_peer": [1, 2], "empty_expert_skip": [0, 3]}


class FusedMoe:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, counts: cute.Tensor, x: cute.Tensor, hidden: cute.Tensor,
                 ready: cute.Tensor, out: cute.Tensor):
        self.kernel(counts, x, hidden, ready, out).launch(
            grid=(2 * CLUSTER, 1, 1), block=(32, 1, 1), cluster=(CLUSTER, 1, 1))

    @cute.kernel
    def kernel(self, counts: cute.Tensor, x: cute.Tensor, hidden: cute.Tensor,
               ready: cute.Tensor, out: cute.Tensor):
        lane = cute.arch.lane_idx()
        cta, _, _ = cute.arch.block_idx()
        rank = cute.arch.block_idx_in_cluster()
        stage = cta // CLUSTER

        @cute.struct
        class Smem:
            go: Int64
            done: Int64

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        go = storage.go.ptr
        done = storage.done.ptr
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(go, 1)
            cute.arch.mbarrier_init(done, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

        if stage == 0:                                                   # FF1 + SwiGLU
            for e in cutlass.range_constexpr(EXPERTS):
                tiles = (counts[e] + TM - 1) // TM
                if cutlass.const_expr(self.bug == "off_by_one"):
                    tiles = counts[e] // TM                                    # BUG
                for t in cutlass.range(tiles, unroll=1):
                    i = e * MAX_TILES + t
                    v = x[i * 32 + lane]
                    g = v * cutlass.select_(rank == 0, Float32(WG[0]), Float32(WG[1]))
                    u = v * cutlass.select_(rank == 0, Float32(WU[0]), Float32(WU[1]))
                    hidden[(i * CLUSTER + rank) * 32 + lane] = g / (1.0 + cute.math.exp(-g)) * u
                    cute.arch.sync_threads()
                    if lane == 0:
                        scope = "cta" if cutlass.const_expr(self.bug == "cta_release") else "gpu"
                        cute.arch.atomic_add((ready.iterator + e).llvm_ptr, Int32(1),
                                             sem="release", scope=scope)
        else:                                                            # FF2
            phase = Int32(0)
            for e in cutlass.range_constexpr(EXPERTS):
                tiles = (counts[e] + TM - 1) // TM
                if rank == 0:
                    if lane == 0:
                        flag = (ready.iterator + e).llvm_ptr
                        if cutlass.const_expr(self.bug == "weak_poll"):
                            while cute.arch.load(flag, Int32) < CLUSTER * tiles:  # BUG: weak
                                pass
                        else:
                            while cute.arch.load(flag, Int32, sem="acquire",
                                                 scope="gpu") < CLUSTER * tiles:
                                pass
                    cute.arch.sync_threads()
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(go, peer_cta_rank_in_cluster=1,
                                                  scope=nvvm.MemScopeKind.CLUSTER)
                    self.ff2(x, hidden, out, e, tiles, rank, lane)
                    if cutlass.const_expr(self.bug != "exited_peer" or e < EXPERTS - 1):
                        cute.arch.mbarrier_wait(done, phase)     # (exited_peer: BUG, skipped last)
                    phase = phase ^ 1
                else:
                    if cutlass.const_expr(self.bug == "empty_expert_skip"):
                        if tiles > 0:                   # BUG: "nothing to read, no need to wait"
                            cute.arch.mbarrier_wait(go, phase)
                            phase = phase ^ 1
                    else:
                        cute.arch.mbarrier_wait(go, phase)
                        phase = phase ^ 1
                    self.ff2(x, hidden, out, e, tiles, rank, lane)
                    cute.arch.sync_warp()   # the release below covers every lane's reads
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(done, peer_cta_rank_in_cluster=0,
                                                  scope=nvvm.MemScopeKind.CLUSTER)

    @cute.jit
    def ff2(self, x: cute.Tensor, hidden: cute.Tensor, out: cute.Tensor, e: cutlass.Constexpr,
            tiles: Int32, rank: Int32, lane: Int32):
        """This CTA's half of FF2 for expert e's tiles: out = (h0 + h1) * W2[rank]."""
        for t in cutlass.range(tiles, unroll=1):
            i = e * MAX_TILES + t
            h = hidden[(i * CLUSTER + 0) * 32 + lane] + hidden[(i * CLUSTER + 1) * 32 + lane]
            w2 = cutlass.select_(rank == 0, Float32(W2[0]), Float32(W2[1]))
            out[(i * CLUSTER + rank) * 32 + lane] = h * w2


def _args():
    from warpspin.frontend import fake_tensor

    n = EXPERTS * MAX_TILES * 32
    return (fake_tensor(Int32, (EXPERTS,), align=16), fake_tensor(Float32, (n,), align=16),
            fake_tensor(Float32, (n * CLUSTER,), align=16),
            fake_tensor(Int32, (EXPERTS,), align=16),
            fake_tensor(Float32, (n * CLUSTER,), align=16))


def variant(bug: str | None = None):
    return FusedMoe(bug), _args()


def correct():
    return variant()


def off_by_one():
    return variant("off_by_one")


def weak_poll():
    return variant("weak_poll")


def cta_release():
    return variant("cta_release")


def exited_peer():
    return variant("exited_peer")


def empty_expert_skip():
    return variant("empty_expert_skip")


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "verified", "off_by_one": "deadlock", "weak_poll": "scope",
          "cta_release": "scope", "exited_peer": "cluster-lifetime",
          "empty_expert_skip": "parity-aliasing"}
EXPECT_AT = {
    "weak_poll": "while cute.arch.load(flag, Int32) < CLUSTER * tiles:",
    "cta_release": "cute.arch.atomic_add((ready.iterator + e).llvm_ptr, Int32(1),",
    "exited_peer": "cute.arch.mbarrier_arrive(done, peer_cta_rank_in_cluster=0,",
}


def reference(counts, x):
    """out as the kernel computes it, for the tiles the counts cover (the rest stays 0)."""
    import torch

    out = torch.zeros(EXPERTS * MAX_TILES * CLUSTER * 32, dtype=torch.float32, device=x.device)
    for e, c in enumerate(counts):
        for t in range((c + TM - 1) // TM):
            i = e * MAX_TILES + t
            v = x[i * 32:(i + 1) * 32]
            h = sum(torch.nn.functional.silu(v * WG[r]) * (v * WU[r]) for r in range(CLUSTER))
            for r in range(CLUSTER):
                out[(i * CLUSTER + r) * 32:(i * CLUSTER + r + 1) * 32] = h * W2[r]
    return out


def run_on_device(name: str) -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    from _device import count_wrong

    fn, _ = VARIANTS[name]()
    counts = DEVICE_COUNTS[name]
    n = EXPERTS * MAX_TILES * 32
    tc = torch.tensor(counts, device="cuda", dtype=torch.int32)
    x = torch.randn(n, device="cuda", dtype=torch.float32)
    hidden = torch.zeros(n * CLUSTER, device="cuda", dtype=torch.float32)
    ready = torch.zeros(EXPERTS, device="cuda", dtype=torch.int32)
    out = torch.zeros(n * CLUSTER, device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=16) for t in (tc, x, hidden, ready, out)]
    compiled = cute.compile(fn, *args)

    def launch(*a):
        hidden.zero_()
        ready.zero_()
        compiled(*a)
    count_wrong(f"{name} (counts {counts})", launch, args, out, reference(counts, x), 200)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
