"""A persistent cluster whose scheduler sends each CTA its next tile with st.async, correct and with
one-line bugs (the shape of quack's persistent GEMM with a cluster of two).

One cluster of two CTAs (grid 2, cluster (2,1,1)), two warps per CTA.  Warp 0 of CTA 0 is the
cluster's scheduler: for each tile i < ``num_tiles`` (a kernel argument) it waits until every
CTA released the stage (``empty``, in CTA 0), then lane r (r = 0, 1) arms CTA r's ``full``
barrier of that stage for 4 bytes (``mbarrier.arrive.expect_tx`` through ``mapa``) and
``st.async``'s the tile index into CTA r's word of that stage, which completes the 4 bytes on
that barrier.  After the last tile it sends the sentinel -1 the same way.  Warp 1 of each CTA is
the consumer: it waits for the stage's ``full`` phase, loads the word, releases the stage (one
lane arrives on CTA 0's ``empty``) and, while the tile is valid, writes
out[64 tile + 32 rank + lane] = 2 x[...] + 1.  A final cluster barrier keeps each CTA alive
while its peer may still arrive on its barriers.  ``python examples/cluster_scheduler.py --run
VARIANT`` runs a variant on a GPU (sm_90a) against PyTorch, with a watchdog.

warpspin follows the words the st.async's write (pending until their bytes complete) and reads
``num_tiles`` as a launch parameter (PARAMS: 0..MAX_TILES).

Variants:
  correct              verifies for every tile count 0..MAX_TILES
  no_peer_sentinel     the sentinel goes to CTA 0 only -> CTA 1's consumer waits forever at its
                       full-barrier wait
  release_before_load  the consumer releases the stage before it loads the word -> the scheduler
                       may st.async the next tile into the word first (a race)
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

CLUSTER = 2
STAGES = 2
TILE = 64        # elements per tile: 32 per CTA
MAX_TILES = 4    # the tensors are sized for this many tiles; the check covers 0..MAX_TILES
DEVICE_TILES = 4

BUGS = ("no_peer_sentinel", "release_before_load")
ST_ASYNC = "st.async.shared::cluster.mbarrier::complete_tx::bytes.s32 [{$r0}], {$r1}, [{$r2}];"


class ClusterScheduler:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor, num_tiles: Int32):
        self.kernel(x, out, num_tiles).launch(grid=(CLUSTER, 1, 1), block=(64, 1, 1),
                                              cluster=(CLUSTER, 1, 1))

    def send(self, full, words, stage, value, lane):
        """Lane r arms CTA r's full[stage] for 4 bytes and st.async's `value` into its word."""
        cute.arch.mbarrier_arrive_and_expect_tx(full + stage, 4, lane)
        rword = Int32(cute.arch.map_dsmem_ptr(words + stage, lane).toint())
        rbar = Int32(cute.arch.map_dsmem_ptr(full + stage, lane).toint())
        cute.arch.inline_ptx(ST_ASYNC, read_only_args=[rword, value, rbar])

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor, num_tiles: Int32):
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())

        @cute.struct
        class Smem:
            full: cute.struct.MemRange[Int64, STAGES]
            empty: cute.struct.MemRange[Int64, STAGES]
            words: cute.struct.Align[cute.struct.MemRange[Int32, STAGES], 16]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        full = storage.full.data_ptr()
        empty = storage.empty.data_ptr()
        words = storage.words.data_ptr()
        tiles = storage.words.get_tensor(cute.make_layout(STAGES))

        if warp == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(STAGES):
                    cute.arch.mbarrier_init(full + s, 1)          # the scheduler's arrive.expect_tx
                    cute.arch.mbarrier_init(empty + s, CLUSTER)   # one release per CTA
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()

        if warp == 0 and rank == 0:                                       # the scheduler
            stage, phase = Int32(0), Int32(0)
            i = Int32(0)
            while i < num_tiles:
                cute.arch.mbarrier_wait(empty + stage, phase ^ 1)
                if lane < CLUSTER:
                    self.send(full, words, stage, i, lane)
                stage = stage + 1
                if stage == STAGES:
                    stage = Int32(0)
                    phase = phase ^ 1
                i = i + 1
            cute.arch.mbarrier_wait(empty + stage, phase ^ 1)
            if cutlass.const_expr(self.bug == "no_peer_sentinel"):
                if lane < 1:                                              # BUG: CTA 0 only
                    self.send(full, words, stage, Int32(-1), lane)
            else:
                if lane < CLUSTER:
                    self.send(full, words, stage, Int32(-1), lane)

        if warp == 1:                                                     # the consumers
            stage, phase = Int32(0), Int32(0)
            tile = Int32(0)
            while tile >= 0:
                cute.arch.mbarrier_wait(full + stage, phase)
                if cutlass.const_expr(self.bug == "release_before_load"):
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(empty + stage, 0)       # BUG: too early
                tile = tiles[stage]
                if cutlass.const_expr(self.bug != "release_before_load"):
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(empty + stage, 0)       # CTA 0's empty
                stage = stage + 1
                if stage == STAGES:
                    stage = Int32(0)
                    phase = phase ^ 1
                if tile >= 0:
                    e = tile * TILE + rank * 32 + lane
                    out[e] = x[e] * 2.0 + 1.0
        # no CTA exits while its peer may still arrive on its barriers or store into it
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
def variant(bug: str | None = None, *, num_tiles: int = MAX_TILES):
    from warpspin.frontend import fake_tensor

    x = fake_tensor(Float32, (TILE * MAX_TILES,), align=16)
    out = fake_tensor(Float32, (TILE * MAX_TILES,), align=16)
    return ClusterScheduler(bug), (x, out, Int32(num_tiles))


def correct(**kw):
    return variant(None, **kw)


def no_peer_sentinel(**kw):
    return variant("no_peer_sentinel", **kw)


def release_before_load(**kw):
    return variant("release_before_load", **kw)


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "not-checked", "no_peer_sentinel": "deadlock", "release_before_load": "race"}
# the variants whose only property not checked is races on the global memory they write (extract/ownership.py:
# which elements a TMA store, a copy or a scheduler's tile reaches is not followed)
GLOBAL_ONLY = ("correct",)
# the source line each violation must point at (tests/test_examples.py finds it by its text)
# the race is reported at the st.async that lands on a word the consumer is about to load (the
# report's note names that load)
EXPECT_AT = {"no_peer_sentinel": "cute.arch.mbarrier_wait(full + stage, phase)",
             "release_before_load": "cute.arch.inline_ptx(ST_ASYNC, read_only_args"}
PARAMS = {name: {"num_tiles": (0, MAX_TILES)} for name in VARIANTS}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str) -> None:
    """Compile and launch on the current GPU; raise if the result is wrong.  A hang never
    returns: run this under a timeout (``--run`` does, in a child process)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    n = DEVICE_TILES
    fn, _ = VARIANTS[name]()
    x = torch.randn(TILE * MAX_TILES, device="cuda", dtype=torch.float32)
    out = torch.zeros(TILE * MAX_TILES, device="cuda", dtype=torch.float32)
    tx, to = from_dlpack(x, assumed_align=16), from_dlpack(out, assumed_align=16)
    compiled = cute.compile(fn, tx, to, Int32(n))
    ref = torch.zeros_like(x)
    ref[:TILE * n] = x[:TILE * n] * 2.0 + 1.0
    for i in range(200):  # the race needs the next st.async to land in a window: many chances
        out.zero_()
        compiled(tx, to, Int32(n))
        torch.cuda.synchronize()
        err = (out - ref).abs().max().item()
        if err > 1e-5:
            raise SystemExit(f"{name}: launch {i}: WRONG RESULT (max abs error {err:.3g})")
    print(f"{name}: {n} tiles on a cluster of {CLUSTER}, 200 launches, all correct")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
