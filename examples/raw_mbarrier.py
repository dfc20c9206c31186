"""Raw mbarrier ring between two warps, correct and with one-line bugs.

Warp 0 (producer) copies 32 floats per step from global memory into one of STAGES shared-memory
slots and arrives on that slot's ``full`` barrier (all 32 lanes); warp 1 (consumer) waits on
``full``, adds the slot into a per-lane accumulator and arrives on ``empty``.  The result is
out[lane] = sum_k a[32 k + lane].  Only ``cute.arch.mbarrier_*`` primitives are used: no
pipeline classes.  ``python examples/raw_mbarrier.py --run VARIANT`` runs a variant on a GPU.

Variants:
  correct           the reference protocol
  wrong_init_count  ``full`` expects 1 arrival but 32 lanes arrive -> over-arrival / early phase
  wrong_parity      consumer waits on the wrong parity               -> reads before the data lands
                    (the race is the first violation; on the GPU the ring then hangs)
  missing_arrive    consumer never arrives on ``empty``              -> producer hangs
  no_init_sync      no fence/sync between init and first use         -> use before init
  read_before_wait  consumer reads a slot before waiting on ``full``  -> race with the producer
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int64

STAGES = 2
BUGS = ("wrong_init_count", "wrong_parity", "missing_arrive", "no_init_sync", "read_before_wait")


class RawRing:
    def __init__(self, bug: str | None = None, stages: int = STAGES):
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.stages = stages

    @cute.jit
    def __call__(self, a: cute.Tensor, out: cute.Tensor):
        self.kernel(a, out).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, a: cute.Tensor, out: cute.Tensor):
        stages = self.stages
        tidx, _, _ = cute.arch.thread_idx()
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        @cute.struct
        class Smem:
            full: cute.struct.MemRange[Int64, stages]
            empty: cute.struct.MemRange[Int64, stages]
            buf: cute.struct.Align[cute.struct.MemRange[Float32, 32 * stages], 16]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        full = storage.full.data_ptr()
        empty = storage.empty.data_ptr()
        buf = storage.buf.get_tensor(cute.make_layout(32 * stages))
        n = cute.size(a) // 32

        full_count = 32
        if cutlass.const_expr(self.bug == "wrong_init_count"):
            full_count = 1                                                   # BUG
        if warp == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(stages):
                    cute.arch.mbarrier_init(full + s, full_count)
                    cute.arch.mbarrier_init(empty + s, 32)
        if cutlass.const_expr(self.bug != "no_init_sync"):
            cute.arch.mbarrier_init_fence()                                  # BUG: dropped
            cute.arch.sync_threads()

        if warp == 0:                                                        # producer
            for k in cutlass.range(n, unroll=1):
                s = k % stages
                cute.arch.mbarrier_wait(empty + s, ((k // stages) % 2) ^ 1)
                buf[s * 32 + lane] = a[k * 32 + lane]
                cute.arch.mbarrier_arrive(full + s)
        if warp == 1:                                                        # consumer
            acc = Float32(0.0)
            for k in cutlass.range(n, unroll=1):
                s = k % stages
                parity = (k // stages) % 2
                if cutlass.const_expr(self.bug == "wrong_parity"):
                    parity = parity ^ 1                                      # BUG
                if cutlass.const_expr(self.bug == "read_before_wait"):
                    acc = acc + buf[s * 32 + lane]                           # BUG: too early
                cute.arch.mbarrier_wait(full + s, parity)
                if cutlass.const_expr(self.bug != "read_before_wait"):
                    acc = acc + buf[s * 32 + lane]                           # after the wait
                if cutlass.const_expr(self.bug != "missing_arrive"):
                    cute.arch.mbarrier_arrive(empty + s)                     # BUG: dropped
            out[lane] = acc


def variant(bug: str | None = None, *, steps: int = 6, stages: int = STAGES):
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (32 * steps,), align=16)
    out = fake_tensor(Float32, (32,), align=16)
    return RawRing(bug, stages), (a, out)


def correct(**kw):
    return variant(None, **kw)


def wrong_init_count(**kw):
    return variant("wrong_init_count", **kw)


def wrong_parity(**kw):
    return variant("wrong_parity", **kw)


def missing_arrive(**kw):
    return variant("missing_arrive", **kw)


def no_init_sync(**kw):
    return variant("no_init_sync", **kw)


def read_before_wait(**kw):
    return variant("read_before_wait", **kw)


VARIANTS = {"correct": correct, **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
# (the slots `buf[s * 32 + lane]`, s = k % stages, are data cells: one per element, indexed by
# the loop counter)
EXPECT = {"correct": "verified", "wrong_init_count": "arrival-mismatch", "wrong_parity": "race",
          "missing_arrive": "deadlock", "no_init_sync": "uninitialized-barrier",
          "read_before_wait": "race"}
EXPECT_AT = {"wrong_init_count": "cute.arch.mbarrier_arrive(full + s)",
             "wrong_parity": "acc = acc + buf[s * 32 + lane]                           # after the wait",
             "missing_arrive": "cute.arch.mbarrier_wait(empty + s, ((k // stages) % 2) ^ 1)",
             "no_init_sync": "cute.arch.mbarrier_wait(full + s, parity)",
             "read_before_wait": "acc = acc + buf[s * 32 + lane]                           # BUG: too early"}


def run_on_device(name: str, steps: int = 6) -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    a = torch.randn(32 * steps, device="cuda", dtype=torch.float32)
    out = torch.zeros(32, device="cuda", dtype=torch.float32)
    ta, to = from_dlpack(a, assumed_align=16), from_dlpack(out, assumed_align=16)
    compiled = cute.compile(fn, ta, to)
    compiled(ta, to)
    torch.cuda.synchronize()
    err = (out - a.view(steps, 32).sum(0)).abs().max().item()
    print(f"{name}: max abs error {err:.3g}")
    if err > 1e-4:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
