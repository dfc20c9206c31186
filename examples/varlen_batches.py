"""A persistent variable-length kernel (the shape of flash-attention's varlen forward): sequence
boundaries ``cu_seqlens`` in global memory, read at a batch index the tile scheduler computes,
decide a producer's and a consumer's trip counts.

GRID CTAs of two warps. Each CTA takes the batches block_idx.x + i * grid_dim.x below
``num_batch`` (a kernel argument). For batch b the sequence is tokens cu_seqlens[b] ..
cu_seqlens[b + 1] - 1 of ``x``; warp 0 (producer) copies it BLOCK tokens at a time into one of
two shared-memory slots (a raw two-stage mbarrier ring: ``full`` / ``empty``), warp 1 (consumer)
adds each block into a per-lane sum and writes out[b * 32 + lane].

warpspin cannot bound the batch index when it extracts the kernel (it is the scheduler's loop
variable), so each read of ``cu_seqlens`` is a run-time read (`ld.launch`): the tensor's extent
is a launch value (``cu_seqlens_extent``, PARAMS: num_batch + 1), every element a launch value
(0..3 by default: empty, one and several blocks of BLOCK = 2 tokens), and a read outside the
tensor is an invalid-operand, naming the index.

Variants (each differs from ``correct`` by one line, selected at trace time):
  correct          no violation for any boundary value 0..3 and any CTA of the grid (races on
                   ``out`` are NOT CHECKED: the place a CTA's loop writes is not followed)
  overread         the scheduler loop runs to num_batch inclusive: the extra trip
                   reads cu_seqlens[num_batch + 1], past the end of the tensor
  padded_producer  the producer walks the blocks of max_seqlen (a padded length) while the
                   consumer walks the sequence's own: for a short sequence the producer waits
                   on ``empty`` for a consumer that has moved on (names the boundary values)
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

GRID = 2          # CTAs (host launch constant)
STAGES = 2
BLOCK = 2         # tokens per block
NUM_BATCH = 3     # sequences the device run uses (and PARAMS states)
MAX_SEQLEN = 3    # the padded length of padded_producer, and the longest sequence on the GPU
# the boundaries each variant runs with on the GPU: padded_producer with a short sequence
DEVICE_CU = {"correct": [0, 3, 4, 6], "overread": [0, 3, 4, 6], "padded_producer": [0, 0, 1, 3]}

BUGS = ("overread", "padded_producer")


class VarlenBatches:
    def __init__(self, bug: str | None = None):
        assert bug is None or bug in BUGS, bug
        self.bug = bug

    @cute.jit
    def __call__(self, cu_seqlens: cute.Tensor, x: cute.Tensor, out: cute.Tensor,
                 num_batch: Int32):
        self.kernel(cu_seqlens, x, out, num_batch).launch(grid=(GRID, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, cu_seqlens: cute.Tensor, x: cute.Tensor, out: cute.Tensor,
               num_batch: Int32):
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        bidx, _, _ = cute.arch.block_idx()
        gdim, _, _ = cute.arch.grid_dim()

        @cute.struct
        class Smem:
            full: cute.struct.MemRange[Int64, STAGES]
            empty: cute.struct.MemRange[Int64, STAGES]
            buf: cute.struct.Align[cute.struct.MemRange[Float32, 32 * STAGES], 16]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        full = storage.full.data_ptr()
        empty = storage.empty.data_ptr()
        buf = storage.buf.get_tensor(cute.make_layout(32 * STAGES))

        if warp == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(STAGES):
                    cute.arch.mbarrier_init(full + s, 32)
                    cute.arch.mbarrier_init(empty + s, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

        last = num_batch
        if cutlass.const_expr(self.bug == "overread"):
            last = num_batch + 1                                             # BUG: one too many
        k = Int32(0)
        for tile in cutlass.range(bidx, last, gdim, unroll=1):              # this CTA's batches
            start = cu_seqlens[tile]
            seqlen = cu_seqlens[tile + 1] - start
            n_blocks = (seqlen + BLOCK - 1) // BLOCK
            if warp == 0:                                                    # producer
                if cutlass.const_expr(self.bug == "padded_producer"):
                    n_blocks = (MAX_SEQLEN + BLOCK - 1) // BLOCK             # BUG: padded length
                for blk in cutlass.range(n_blocks, unroll=1):
                    s = k % STAGES
                    cute.arch.mbarrier_wait(empty + s, ((k // STAGES) % 2) ^ 1)
                    t = blk * BLOCK + lane
                    v = Float32(0.0)
                    if lane < BLOCK and t < seqlen:
                        v = x[start + t]
                    buf[s * 32 + lane] = v
                    cute.arch.mbarrier_arrive(full + s)
                    k = k + 1
            if warp == 1:                                                    # consumer
                acc = Float32(0.0)
                for blk in cutlass.range(n_blocks, unroll=1):
                    s = k % STAGES
                    cute.arch.mbarrier_wait(full + s, (k // STAGES) % 2)
                    acc = acc + buf[s * 32 + lane]
                    cute.arch.mbarrier_arrive(empty + s)
                    k = k + 1
                out[tile * 32 + lane] = acc
            tile = tile + gdim


def _args():
    from warpspin.frontend import fake_tensor, sym_int

    return (fake_tensor(Int32, (sym_int(),), align=4),
            fake_tensor(Float32, (sym_int(),), align=16),
            fake_tensor(Float32, (32 * (NUM_BATCH + 1),), align=16), Int32(NUM_BATCH))


def correct():
    return VarlenBatches(), _args()


def overread():
    return VarlenBatches("overread"), _args()


def padded_producer():
    return VarlenBatches("padded_producer"), _args()


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# the launch: NUM_BATCH sequences, so cu_seqlens has NUM_BATCH + 1 elements
PARAMS = {name: {"num_batch": NUM_BATCH, "cu_seqlens_extent": NUM_BATCH + 1}
          for name in VARIANTS}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "not-checked", "overread": "invalid-operand", "padded_producer": "deadlock"}
# the variants whose only property not checked is races on the global memory they write
# (out[tile * 32 + lane]: which CTA's loop reaches which tile is not followed, extract/ownership.py)
GLOBAL_ONLY = ("correct",)
EXPECT_AT = {"overread": "seqlen = cu_seqlens[tile + 1] - start",
             "padded_producer": "cute.arch.mbarrier_wait(empty + s, ((k // STAGES) % 2) ^ 1)"}


def run_on_device(name: str) -> None:
    """Compile and launch on the current GPU; raise if the result is wrong. A hang never
    returns: run this under a timeout (``--run`` does, in a child process)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    cu_list = DEVICE_CU[name]
    # a guard element past the tensor the kernel is given: a read past the end sees one more
    # block, and the extra trip writes row NUM_BATCH of out, which no batch owns
    backing = torch.tensor(cu_list + [cu_list[-1] + BLOCK], device="cuda", dtype=torch.int32)
    cu = backing[:len(cu_list)]
    x = torch.randn(cu_list[-1] + BLOCK, device="cuda", dtype=torch.float32)
    out = torch.zeros(32 * (NUM_BATCH + 1), device="cuda", dtype=torch.float32)
    tc, tx, to = (from_dlpack(t, assumed_align=4) for t in (cu, x, out))
    compiled = cute.compile(fn, tc, tx, to, Int32(NUM_BATCH))
    compiled(tc, tx, to, Int32(NUM_BATCH))
    torch.cuda.synchronize()
    want = torch.zeros(NUM_BATCH, device="cuda")
    for b in range(NUM_BATCH):
        want[b] = x[cu_list[b]:cu_list[b + 1]].sum()
    got = out.view(NUM_BATCH + 1, 32)[:NUM_BATCH, :BLOCK].sum(1)
    err = (got - want).abs().max().item()
    print(f"{name}: cu_seqlens {cu_list}, max abs error {err:.3g}")
    if err > 1e-4:
        raise SystemExit(f"{name}: WRONG RESULT")
    if out.view(NUM_BATCH + 1, 32)[NUM_BATCH].abs().sum().item() != 0:
        raise SystemExit(f"{name}: WRONG RESULT: row {NUM_BATCH} of out written, so "
                         f"cu_seqlens[{NUM_BATCH + 1}] was read (past the end)")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
