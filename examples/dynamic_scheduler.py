"""A persistent warp-specialized kernel with a dynamic tile scheduler: its CTAs take tiles from a
global semaphore with atom.inc (quack's SM90 ``PersistenceMode.DYNAMIC``), correct and with
one-line bugs.

GRID CTAs (a host launch constant) of three warps each.  Warp 0 is the scheduler: CTA b starts
at tile b; each next tile is GRID + the value lane 0 takes from ``sem`` (a kernel argument, one
Int32 in global memory that holds 0 at launch) with ``atom.inc`` wrapping at num_tiles - 1,
shuffled to the warp.  Whichever CTA is first takes the next tile, so how many tiles a CTA gets
depends on the others.  The scheduler hands its CTA each tile below ``num_tiles`` through a
two-stage ``PipelineAsync`` and an Int32 word in shared memory, then the sentinel -1 ("no more
tiles"), then ``producer_tail``.  Warps 1 and 2 are the consumers: each waits for a stage, loads
the tile word, releases the stage and, while the tile is valid, writes
out[64 tile + 32 (warp - 1) + lane] = 2 x[...] + 1.  ``python examples/dynamic_scheduler.py
--run VARIANT`` runs a variant on a GPU (sm_90a) and checks it against PyTorch, with a watchdog.

warpspin reads ``num_tiles`` as a launch parameter (PARAMS: 0..MAX_TILES), the block index as
the CTA's cluster index over the grid, and ``sem`` as a global counter that the grid's other
CTAs take values from between any two steps, so the check covers every tile count and every way
the tiles can be shared out.

Variants (each differs from ``correct`` by one line, selected at trace time):
  correct        verifies for every tile count 0..MAX_TILES, every CTA and every sharing
  no_sentinel    the scheduler never publishes the "no tile" sentinel -> the consumers wait
                 forever at their consumer_wait
  static_count   the consumers take the static schedule's count of hand-offs (their CTA's tiles
                 b, b + GRID, ... and the sentinel) instead of stopping at the sentinel: right for
                 a static scheduler, wrong for a dynamic one -> when another CTA takes one of
                 "their" tiles, they wait for a hand-off that never comes
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import Float32, Int32, Int64
from cutlass.experimental import primitives as prims

GRID = 2        # CTAs (host launch constant)
STAGES = 2      # scheduler pipeline stages
TILE = 64       # elements per tile: 32 per consumer warp
MAX_TILES = 5   # the tensors are sized for this many tiles; the check covers 0..MAX_TILES
DEVICE_TILES = 5  # the tile count of the GPU runs

BUGS = ("no_sentinel", "static_count")


class DynamicScheduler:
    def __init__(self, bug: str | None = None, grid: int = GRID):
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.grid = grid

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor, sem: cute.Tensor, num_tiles: Int32):
        self.kernel(x, out, sem, num_tiles).launch(grid=(self.grid, 1, 1), block=(96, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor, sem: cute.Tensor, num_tiles: Int32):
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[Int64, 2 * STAGES]
            words: cute.struct.MemRange[Int32, STAGES]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        words = storage.words.get_tensor(cute.make_layout(STAGES))
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
                taken = Int32(0)
                if lane == 0:
                    taken = prims.atomicrmw(prims.AtomicOp.INC, sem.iterator, num_tiles - 1)
                tile = gdim + cute.arch.shuffle_sync(taken, 0)               # the next tile
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
            handoffs = (num_tiles - bidx + gdim - 1) // gdim + 1             # static: tiles + sentinel
            k = Int32(0)
            while (tile >= 0 and cutlass.const_expr(self.bug != "static_count")) or \
                    (k < handoffs and cutlass.const_expr(self.bug == "static_count")):  # BUG
                pipe.consumer_wait(state)
                tile = words[state.index]
                pipe.consumer_release(state)
                state.advance()
                k = k + 1
                if tile >= 0:
                    e = tile * TILE + (warp - 1) * 32 + lane
                    out[e] = x[e] * 2.0 + 1.0


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
def variant(bug: str | None = None, *, grid: int = GRID, num_tiles: int = MAX_TILES):
    from warpspin.frontend import fake_tensor

    x = fake_tensor(Float32, (TILE * MAX_TILES,), align=16)
    out = fake_tensor(Float32, (TILE * MAX_TILES,), align=16)
    sem = fake_tensor(Int32, (1,), align=4)
    return DynamicScheduler(bug, grid), (x, out, sem, Int32(num_tiles))


def correct(**kw):
    return variant(None, **kw)


def no_sentinel(**kw):
    return variant("no_sentinel", **kw)


def static_count(**kw):
    return variant("static_count", **kw)


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "not-checked", "no_sentinel": "deadlock", "static_count": "deadlock"}
# the variants whose only property not checked is races on the global memory they write (extract/ownership.py:
# which elements a TMA store, a copy or a scheduler's tile reaches is not followed)
GLOBAL_ONLY = ("correct",)
# the source line each violation must point at (tests/test_examples.py finds it by its text)
EXPECT_AT = {"no_sentinel": "pipe.consumer_wait(state)",
             "static_count": "pipe.consumer_wait(state)"}
# num_tiles is a kernel argument: every count from none to more tiles than CTAs
PARAMS = {name: {"num_tiles": (0, MAX_TILES)} for name in VARIANTS}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str) -> None:
    """Compile and launch on the current GPU; raise if the result is wrong.  A hang never
    returns: run this under a timeout (``--run`` does, in a child process).  Each launch starts
    with the semaphore at 0 (atom.inc wraps it back to 0 at the last tile of a launch; the host
    zeroes it anyway).  static_count hangs only in launches where the CTAs do not take their
    tiles in the static order, so many launches give it chances (each checked)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    n = DEVICE_TILES
    fn, _ = VARIANTS[name]()
    x = torch.randn(TILE * MAX_TILES, device="cuda", dtype=torch.float32)
    out = torch.zeros(TILE * MAX_TILES, device="cuda", dtype=torch.float32)
    sem = torch.zeros(1, device="cuda", dtype=torch.int32)
    tx, to = from_dlpack(x, assumed_align=16), from_dlpack(out, assumed_align=16)
    ts = from_dlpack(sem, assumed_align=4)
    compiled = cute.compile(fn, tx, to, ts, Int32(n))
    ref = torch.zeros_like(x)
    ref[:TILE * n] = x[:TILE * n] * 2.0 + 1.0
    for i in range(200):
        out.zero_()
        sem.zero_()
        compiled(tx, to, ts, Int32(n))
        torch.cuda.synchronize()
        err = (out - ref).abs().max().item()
        if err > 1e-5:
            raise SystemExit(f"{name}: launch {i}: WRONG RESULT (max abs error {err:.3g})")
    print(f"{name}: {n} tiles on {GRID} CTAs, 200 launches, all correct")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
