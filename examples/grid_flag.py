"""A hand-off between CTAs through a counter in global memory (the shape of split-K's semaphore
and of a fused MoE kernel's cross-CTA counters).

The grid has PRODUCERS + 1 CTAs of one warp each. Producer CTA p writes its 32 partial sums to
global memory, waits for its own warp (bar.sync), and one thread adds 1 to ``count`` with
``atom.add.release.gpu``. The last CTA spins with ``ld.acquire.gpu`` until ``count`` reaches
PRODUCERS, then its warp adds the partials into ``out``.  out[lane] = sum_p a[32 p + lane].
warpspin models every CTA of the grid; the verdict assumes they are all resident at once (a
spinning CTA whose producer never gets an SM waits forever).

Variants:
  correct        the reference protocol
  fenced_add     fence.acq_rel.gpu, then a relaxed add (the release pattern of PTX 8.7; CUDA's
                 __threadfence(); atomicAdd()): also correct
  red_add        red.add.release.gpu (cute.arch.red, no old value): also correct
  tiled          the partials written and read through 32-element tiles of ``partial``
                 (``cute.local_tile(partial, (32,), (cta,))``, as CuTe kernels address a CTA's
                 slice of a workspace): also correct
  off_by_one     the consumer waits for PRODUCERS + 1 increments -> it spins forever (deadlock;
                 it hangs on the H200)
  relaxed_add    the producers add with ``.relaxed``: their writes of the partials are not
                 ordered before the consumer's reads -> scope
  cta_scope      the producers add at ``.cta`` scope: no CTA but their own is ordered by it -> scope
  weak_load      the consumer spins on a plain load (no .acquire): nothing orders the partials
                 before its reads, and nothing makes the load see a later value -> scope (on the
                 H200 it spins forever)
  no_wait        the consumer reads the partials without waiting for the count -> race (it
                 may read them before a producer wrote them)
  unsynced_readers  the consumer's bar.sync after lane 0's wait is gone: the acquire orders
                 only lane 0's reads -> races on partial not checked (the model's thread is the
                 warp), INCONCLUSIVE naming the line
  unsynced_writers  the producers' bar.sync before lane 0's add is gone: the release covers
                 only lane 0's writes -> races on partial not checked, INCONCLUSIVE
  same_tile      the tiled form, but every producer writes tile 0 (the CTA's coordinate left
                 out): the producers' writes race -> race (wrong sums on the GPU)

The partials are global data the flag hands over: every element store and load of them is
checked against the others (docs/semantics.md, "Global data a flag hands over").
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32

PRODUCERS = 3
BUGS = ("off_by_one", "relaxed_add", "cta_scope", "weak_load", "no_wait", "unsynced_readers",
        "unsynced_writers", "same_tile")
CORRECT = (None, "fenced_add", "red_add", "tiled")


class GridFlag:
    def __init__(self, bug: str | None = None, producers: int = PRODUCERS):
        assert bug in CORRECT or bug in BUGS, bug
        self.bug = bug
        self.producers = producers

    @cute.jit
    def __call__(self, a: cute.Tensor, partial: cute.Tensor, count: cute.Tensor,
                 out: cute.Tensor):
        self.kernel(a, partial, count, out).launch(grid=(self.producers + 1, 1, 1),
                                                   block=(32, 1, 1))

    @cute.kernel
    def kernel(self, a: cute.Tensor, partial: cute.Tensor, count: cute.Tensor,
               out: cute.Tensor):
        lane = cute.arch.lane_idx()
        cta, _, _ = cute.arch.block_idx()
        sem, scope = "release", "gpu"
        if cutlass.const_expr(self.bug == "relaxed_add"):
            sem = "relaxed"                                                    # BUG
        if cutlass.const_expr(self.bug == "cta_scope"):
            scope = "cta"                                                      # BUG
        total = self.producers
        if cutlass.const_expr(self.bug == "off_by_one"):
            total = self.producers + 1                                         # BUG
        tiled = self.bug in ("tiled", "same_tile")
        if cta < self.producers:                                               # producers
            if cutlass.const_expr(tiled):
                mine = cute.local_tile(partial, (32,), (cta,))
                if cutlass.const_expr(self.bug == "same_tile"):
                    mine = cute.local_tile(partial, (32,), (0,))               # BUG
                mine[lane] = a[cta * 32 + lane] * 2.0
            else:
                partial[cta * 32 + lane] = a[cta * 32 + lane] * 2.0
            if cutlass.const_expr(self.bug != "unsynced_writers"):
                cute.arch.sync_threads()
            if lane == 0:
                if cutlass.const_expr(self.bug == "fenced_add"):
                    cute.arch.fence_acq_rel_gpu()
                    cute.arch.atomic_add(count.iterator.llvm_ptr, Int32(1), sem="relaxed",
                                         scope="gpu")
                elif cutlass.const_expr(self.bug == "red_add"):
                    cute.arch.red(count.iterator.llvm_ptr, Int32(1), op="add", dtype=Int32,
                                  sem="release", scope="gpu")
                else:
                    cute.arch.atomic_add(count.iterator.llvm_ptr, Int32(1), sem=sem, scope=scope)
        else:                                                                  # consumer
            if lane == 0:
                if cutlass.const_expr(self.bug == "weak_load"):
                    while cute.arch.load(count.iterator.llvm_ptr, Int32) < total:     # BUG
                        pass
                elif cutlass.const_expr(self.bug != "no_wait"):
                    while cute.arch.load(count.iterator.llvm_ptr, Int32, sem="acquire",
                                         scope="gpu") < total:
                        pass
            if cutlass.const_expr(self.bug != "unsynced_readers"):
                cute.arch.sync_threads()
            acc = Float32(0.0)
            for p in cutlass.range(self.producers, unroll=1):
                if cutlass.const_expr(tiled):
                    acc = acc + cute.local_tile(partial, (32,), (p,))[lane]
                else:
                    acc = acc + partial[p * 32 + lane]
            out[lane] = acc


def variant(bug: str | None = None, *, producers: int = PRODUCERS):
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (32 * producers,), align=16)
    partial = fake_tensor(Float32, (32 * producers,), align=16)
    count = fake_tensor(Int32, (1,), align=4)
    out = fake_tensor(Float32, (32,), align=16)
    return GridFlag(bug, producers), (a, partial, count, out)


def correct(**kw):
    return variant(None, **kw)


def fenced_add(**kw):
    return variant("fenced_add", **kw)


def red_add(**kw):
    return variant("red_add", **kw)


def off_by_one(**kw):
    return variant("off_by_one", **kw)


def relaxed_add(**kw):
    return variant("relaxed_add", **kw)


def cta_scope(**kw):
    return variant("cta_scope", **kw)


def weak_load(**kw):
    return variant("weak_load", **kw)


def tiled(**kw):
    return variant("tiled", **kw)


def same_tile(**kw):
    return variant("same_tile", **kw)


def no_wait(**kw):
    return variant("no_wait", **kw)


def unsynced_readers(**kw):
    return variant("unsynced_readers", **kw)


def unsynced_writers(**kw):
    return variant("unsynced_writers", **kw)


VARIANTS = {"correct": correct, "fenced_add": fenced_add, "red_add": red_add, "tiled": tiled,
            **{b: globals()[b] for b in BUGS}}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "verified", "fenced_add": "verified", "red_add": "verified",
          "off_by_one": "deadlock", "relaxed_add": "scope", "cta_scope": "scope",
          "weak_load": "scope", "no_wait": "race", "unsynced_readers": "not-checked",
          "unsynced_writers": "not-checked", "tiled": "verified", "same_tile": "race"}
EXPECT_AT = {"off_by_one": "while cute.arch.load(count.iterator.llvm_ptr, Int32, sem=\"acquire\",",
             "weak_load": "while cute.arch.load(count.iterator.llvm_ptr, Int32) < total:",
             "relaxed_add": "cute.arch.atomic_add(count.iterator.llvm_ptr, Int32(1), sem=sem, scope=scope)",
             "cta_scope": "cute.arch.atomic_add(count.iterator.llvm_ptr, Int32(1), sem=sem, scope=scope)",
             "no_wait": "acc = acc + partial[p * 32 + lane]",
             "same_tile": "mine[lane] = a[cta * 32 + lane] * 2.0"}


def run_on_device(name: str, producers: int = PRODUCERS) -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name](producers=producers)
    a = torch.randn(32 * producers, device="cuda", dtype=torch.float32)
    partial = torch.zeros(32 * producers, device="cuda", dtype=torch.float32)
    count = torch.zeros(1, device="cuda", dtype=torch.int32)
    out = torch.zeros(32, device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=4) for t in (a, partial, count, out)]
    compiled = cute.compile(fn, *args)
    compiled(*args)
    torch.cuda.synchronize()
    err = (out - 2.0 * a.view(producers, 32).sum(0)).abs().max().item()
    print(f"{name}: max abs error {err:.3g}, count {count.item()}")
    if err > 1e-4:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
