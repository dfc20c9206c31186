"""Per-expert token counts read from global memory decide a producer's and a consumer's trip
counts (the shape of a fused MoE kernel's expert loop), with a raw two-stage mbarrier ring.

Warp 0 (producer) walks the experts e = 0..E-1 and, for each, copies counts[e] tiles of 32
floats from global memory into one of two shared-memory slots and arrives on the slot's
``full`` barrier; warp 1 (consumer) walks the same experts, waits on ``full``, adds the slot
into a per-lane accumulator and arrives on ``empty``.  out[lane] = sum over the tiles read.

warpspin reads each count as a value chosen at launch: every element of ``counts`` is a
parameter (0..3 by default: empty, one and many tiles; ``--param arg0_2=0..5`` widens one), and
the check covers every combination.

Variants:
  correct        both roles loop counts[e] times for every expert
  producer_caps  the producer skips an expert with 3 or more tokens (a capacity limit the
                 consumer does not know about): the consumer waits for tiles that never come;
                 the report names the count that triggers it
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

EXPERTS = 4
MAX_TILES = 3   # the largest count the device run uses (the arrays are sized for it)
STAGES = 2
CAP = 3         # producer_caps: experts with this many tokens or more are skipped
# the counts each variant runs with on the GPU: producer_caps with the counts the report names
DEVICE_COUNTS = {"correct": [2, 0, 3, 1], "producer_caps": [0, 0, 0, 3]}


class MoeCounts:
    def __init__(self, bug: str | None = None):
        assert bug in (None, "producer_caps"), bug
        self.bug = bug

    @cute.jit
    def __call__(self, counts: cute.Tensor, a: cute.Tensor, out: cute.Tensor):
        self.kernel(counts, a, out).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, counts: cute.Tensor, a: cute.Tensor, out: cute.Tensor):
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

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

        if warp == 0:                                                        # producer
            k = Int32(0)
            for e in cutlass.range(EXPERTS, unroll=1):
                n = counts[e]                                                # tokens of expert e
                if cutlass.const_expr(self.bug == "producer_caps"):
                    if n >= CAP:                                             # BUG: skipped here only
                        n = 0
                for t in cutlass.range(n, unroll=1):
                    s = k % STAGES
                    cute.arch.mbarrier_wait(empty + s, ((k // STAGES) % 2) ^ 1)
                    buf[s * 32 + lane] = a[(e * MAX_TILES + t) * 32 + lane]
                    cute.arch.mbarrier_arrive(full + s)
                    k = k + 1
        if warp == 1:                                                        # consumer
            acc = Float32(0.0)
            k = Int32(0)
            for e in cutlass.range(EXPERTS, unroll=1):
                n = counts[e]
                for t in cutlass.range(n, unroll=1):
                    s = k % STAGES
                    cute.arch.mbarrier_wait(full + s, (k // STAGES) % 2)
                    acc = acc + buf[s * 32 + lane]
                    cute.arch.mbarrier_arrive(empty + s)
                    k = k + 1
            out[lane] = acc


def _args():
    from warpspin.frontend import fake_tensor

    return (fake_tensor(Int32, (EXPERTS,), align=16),
            fake_tensor(Float32, (EXPERTS * MAX_TILES * 32,), align=16),
            fake_tensor(Float32, (32,), align=16))


def correct():
    return MoeCounts(), _args()


def producer_caps():
    return MoeCounts("producer_caps"), _args()


VARIANTS = {"correct": correct, "producer_caps": producer_caps}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
# (the slots `buf[s * 32 + lane]`, s = k % STAGES, are data cells, one per element)
EXPECT = {"correct": "verified", "producer_caps": "deadlock"}
EXPECT_AT = {"producer_caps": "cute.arch.mbarrier_wait(full + s, (k // STAGES) % 2)"}


def run_on_device(name: str) -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    counts = torch.tensor(DEVICE_COUNTS[name], device="cuda", dtype=torch.int32)
    a = torch.randn(EXPERTS * MAX_TILES * 32, device="cuda", dtype=torch.float32)
    out = torch.zeros(32, device="cuda", dtype=torch.float32)
    tc, ta, to = (from_dlpack(t, assumed_align=16) for t in (counts, a, out))
    compiled = cute.compile(fn, tc, ta, to)
    compiled(tc, ta, to)
    torch.cuda.synchronize()
    tiles = a.view(EXPERTS, MAX_TILES, 32)
    want = sum(tiles[e, :c].sum(0) for e, c in enumerate(DEVICE_COUNTS[name]))
    err = (out - want).abs().max().item()
    print(f"{name}: counts {DEVICE_COUNTS[name]}, max abs error {err:.3g}")
    if err > 1e-4:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
