"""A persistent warp-specialized kernel whose scheduler warp hands out tiles through shared memory,
correct and with one-line bugs.

GRID CTAs (a host launch constant) of three warps each.  Warp 0 is the scheduler: it hands its
CTA the tiles block_idx.x + i * grid_dim.x (i = 0, 1, ...) below ``num_tiles`` (a kernel
argument), one at a time: it acquires a stage of a two-stage ``PipelineAsync``, lane 0 writes
the tile index into that stage's Int32 word in shared memory, and the warp commits the stage.
After its last tile it publishes the sentinel -1 ("no more tiles") the same way, then
``producer_tail``.  When it hands out its CTA's first tile it also arrives on the ``first_tile``
mbarrier (standing in for per-CTA setup done once the CTA has work, e.g. loading a descriptor).
Warps 1 and 2 are the consumers: each waits for a stage, loads the tile word, releases the stage
and, while the tile is valid, waits on ``first_tile`` (the setup) and writes
out[64 tile + 32 (warp - 1) + lane] = 2 x[...] + 1 (warp 1 the first half of the tile, warp 2
the second); the sentinel ends the loop.  ``python examples/persistent_scheduler.py --run
VARIANT`` runs a variant on a GPU (sm_90a) and checks it against PyTorch, with a watchdog.

warpspin reads ``num_tiles`` as a launch parameter (PARAMS gives 0..MAX_TILES) and the block
index as the CTA's cluster index over the static grid, so the check covers every CTA and tile
count (a CTA with no tiles, one tile, several); ``correct(grid=1)`` traces the one-CTA launch.

Variants (each differs from ``correct`` by one line, selected at trace time):
  correct              verifies for every tile count 0..MAX_TILES and every CTA of the grid
  no_sentinel          the scheduler never publishes the "no tile" sentinel -> the consumers wait
                       forever at their consumer_wait
  release_before_load  a consumer releases the stage before it loads the tile word -> the
                       scheduler may overwrite the word first (a race on the shared word)
  zero_tile_wait       a consumer waits on ``first_tile`` before it checks the tile word for the
                       sentinel, i.e. for a first tile before checking that its CTA has any ->
                       a CTA with no tiles (num_tiles <= block index) hangs there
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int32, Int64

GRID = 2        # CTAs (host launch constant)
STAGES = 2      # scheduler pipeline stages
TILE = 64       # elements per tile: 32 per consumer warp
MAX_TILES = 5   # the tensors are sized for this many tiles; the check covers 0..MAX_TILES
# the tile count each variant runs with on the GPU: zero_tile_wait with fewer tiles than CTAs
DEVICE_TILES = {"correct": 5, "no_sentinel": 5, "release_before_load": 5, "zero_tile_wait": 1}

BUGS = ("no_sentinel", "release_before_load", "zero_tile_wait")


class PersistentScheduler:
    def __init__(self, bug: str | None = None, grid: int = GRID):
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.grid = grid

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor, num_tiles: Int32):
        self.kernel(x, out, num_tiles).launch(grid=(self.grid, 1, 1), block=(96, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor, num_tiles: Int32):
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[Int64, 2 * STAGES]
            first: cute.struct.MemRange[Int64, 1]
            words: cute.struct.MemRange[Int32, STAGES]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        first_tile = storage.first.data_ptr()
        words = storage.words.get_tensor(cute.make_layout(STAGES))

        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(first_tile, 1)
        pipe = pipeline.PipelineAsync.create(                    # init fence + block sync inside
            num_stages=STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 64),
            barrier_storage=storage.bars.data_ptr(),
            name="sched",
        )

        if warp == 0:                                                        # scheduler warp
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
            tile = bidx
            while tile < num_tiles:
                pipe.producer_acquire(state)
                if lane == 0:
                    words[state.index] = tile
                pipe.producer_commit(state)
                state.advance()
                if tile == bidx:
                    if lane == 0:
                        cute.arch.mbarrier_arrive(first_tile)                # this CTA has work
                tile = tile + gdim
            if cutlass.const_expr(self.bug != "no_sentinel"):
                pipe.producer_acquire(state)                                 # BUG: no sentinel
                if lane == 0:
                    words[state.index] = Int32(-1)
                pipe.producer_commit(state)
                state.advance()
            pipe.producer_tail(state)

        if warp == 1 or warp == 2:                                           # consumer warps
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
            tile = Int32(0)
            while tile >= 0:
                pipe.consumer_wait(state)
                if cutlass.const_expr(self.bug == "release_before_load"):
                    pipe.consumer_release(state)                             # BUG: too early
                tile = words[state.index]
                if cutlass.const_expr(self.bug != "release_before_load"):
                    pipe.consumer_release(state)
                state.advance()
                if cutlass.const_expr(self.bug == "zero_tile_wait"):
                    cute.arch.mbarrier_wait(first_tile, 0)                   # BUG: before the check
                if tile >= 0:
                    cute.arch.mbarrier_wait(first_tile, phase=0)             # the CTA's setup is done
                    e = tile * TILE + (warp - 1) * 32 + lane
                    out[e] = x[e] * 2.0 + 1.0


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
def variant(bug: str | None = None, *, grid: int = GRID, num_tiles: int = MAX_TILES):
    from warpspin.frontend import fake_tensor

    x = fake_tensor(Float32, (TILE * MAX_TILES,), align=16)
    out = fake_tensor(Float32, (TILE * MAX_TILES,), align=16)
    return PersistentScheduler(bug, grid), (x, out, Int32(num_tiles))


def correct(**kw):
    return variant(None, **kw)


def no_sentinel(**kw):
    return variant("no_sentinel", **kw)


def release_before_load(**kw):
    return variant("release_before_load", **kw)


def zero_tile_wait(**kw):
    return variant("zero_tile_wait", **kw)


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "not-checked", "no_sentinel": "deadlock", "release_before_load": "race",
          "zero_tile_wait": "deadlock"}
# the variants whose only property not checked is races on the global memory they write (extract/ownership.py:
# which elements a TMA store, a copy or a scheduler's tile reaches is not followed)
GLOBAL_ONLY = ("correct",)
# the source line each violation must point at (tests/test_examples.py finds it by its text)
EXPECT_AT = {"no_sentinel": "pipe.consumer_wait(state)",
             "release_before_load": "tile = words[state.index]",
             "zero_tile_wait": "cute.arch.mbarrier_wait(first_tile, 0)"}
# num_tiles is a kernel argument: every count from none to more tiles than CTAs
PARAMS = {name: {"num_tiles": (0, MAX_TILES)} for name in VARIANTS}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str) -> None:
    """Compile and launch on the current GPU; raise if the result is wrong.  A hang never
    returns: run this under a timeout (``--run`` does, in a child process)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    n = DEVICE_TILES[name]
    fn, _ = VARIANTS[name]()
    x = torch.randn(TILE * MAX_TILES, device="cuda", dtype=torch.float32)
    out = torch.zeros(TILE * MAX_TILES, device="cuda", dtype=torch.float32)
    tx, to = from_dlpack(x, assumed_align=16), from_dlpack(out, assumed_align=16)
    compiled = cute.compile(fn, tx, to, Int32(n))
    ref = torch.zeros_like(x)
    ref[:TILE * n] = x[:TILE * n] * 2.0 + 1.0
    # the race of release_before_load needs the scheduler to overwrite a word in a window of a
    # few cycles: many launches give it chances (each checked)
    for i in range(200):
        out.zero_()
        compiled(tx, to, Int32(n))
        torch.cuda.synchronize()
        err = (out - ref).abs().max().item()
        if err > 1e-5:
            raise SystemExit(f"{name}: launch {i}: WRONG RESULT (max abs error {err:.3g})")
    print(f"{name}: {n} tiles on {GRID} CTAs, 200 launches, all correct")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
