"""A value handed to the peer CTA through distributed shared memory (DSMEM): correct, and with the
release at the wrong scope.

One cluster of two CTAs, one warp each. Every lane of CTA 0 stores 2 x[lane] + 1 into word lane
of CTA 1's shared-memory box (a generic store through ``map_dsmem_ptr``: ``st.shared::cluster``)
and then arrives on CTA 1's mbarrier (``mbarrier.arrive`` through ``mapa``), which expects 32
arrivals. CTA 1's warp waits for that phase and writes its box to ``out``. A final cluster
barrier keeps CTA 1 alive while CTA 0 may still store into it.

The arrive must release the stores at cluster scope (``scope=cluster``, PTX 9.7.13.15.13 and the
memory model's scopes, 8.5): a release at CTA scope orders them only for threads of CTA 0, and
the reader is in CTA 1. The DSL's ``mbarrier_arrive`` defaults to CTA scope even for a peer CTA's
barrier (its own comment says to pass scope=CLUSTER for DSMEM data hand-offs).

The store is written three ways, as public code writes it: inline PTX ``st.shared::cluster``, an
``llvm.store`` through the ``map_dsmem_ptr`` pointer, and a ``cute.copy`` with the universal copy
atom into a tensor over that pointer (the DSL refuses element stores into a ``dsmem`` tensor).

Variants:
  correct          the remote arrive at cluster scope
  cta_scope        the remote arrive at the DSL's default CTA scope -> scope, at the arrive
  no_arrive        no arrive: CTA 1 waits forever -> deadlock
  read_before_wait CTA 1 reads its box before waiting for the hand-off -> race, at the read
  store_after_arrive  CTA 0 arrives first and stores after -> race (at CTA 1's read)
  store_before_cluster_wait  the first cluster wait comes after CTA 0's store: nothing shows
                   that CTA 1 is running when CTA 0 writes its shared memory -> cluster-lifetime
  store_correct    correct, the store written as llvm.store
  store_cta_scope  cta_scope, the store written as llvm.store -> scope
  copy_correct     correct, the store written as cute.copy
  copy_cta_scope   cta_scope, the store written as cute.copy -> scope
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass._mlir.dialects import llvm, nvvm

CLUSTER = 2
BUGS = ("cta_scope", "no_arrive", "read_before_wait", "store_after_arrive",
        "store_before_cluster_wait")
ST_CLUSTER = "st.shared::cluster.u32 [$0], $1;"


class DsmemHandoff:
    def __init__(self, bug: str | None = None, spelling: str = "ptx"):
        assert bug is None or bug in BUGS, bug
        assert spelling in ("ptx", "store", "copy"), spelling
        self.bug = bug
        self.spelling = spelling

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor):
        self.kernel(x, out).launch(grid=(CLUSTER, 1, 1), block=(32, 1, 1),
                                   cluster=(CLUSTER, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor):
        lane = cute.arch.lane_idx()
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())

        @cute.struct
        class Smem:
            bar: cute.struct.MemRange[Int64, 1]
            box: cute.struct.Align[cute.struct.MemRange[Int32, 32], 16]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        bar = storage.bar.data_ptr()
        box = storage.box.get_tensor(cute.make_layout(32))
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 32)              # one arrival per lane of CTA 0
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        if cutlass.const_expr(self.bug != "store_before_cluster_wait"):
            cute.arch.cluster_wait()

        if rank == 0:
            value = x[lane] * 2 + 1
            remote = cute.arch.map_dsmem_ptr(storage.box.data_ptr() + lane, 1)
            if cutlass.const_expr(self.bug == "store_after_arrive"):
                cute.arch.mbarrier_arrive(bar, 1, scope=nvvm.MemScopeKind.CLUSTER)  # BUG: early
            if cutlass.const_expr(self.spelling == "ptx"):
                cute.arch.inline_ptx(ST_CLUSTER, read_only_args=[Int32(remote.toint()), value])
            elif cutlass.const_expr(self.spelling == "store"):
                llvm.store(value.ir_value(), remote.llvm_ptr)
            else:
                staged = cute.make_rmem_tensor((1,), Int32)
                staged[0] = value
                cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Int32), staged,
                          cute.make_tensor(remote, cute.make_layout(1)))
            if cutlass.const_expr(self.bug == "cta_scope"):
                cute.arch.mbarrier_arrive(bar, 1)                          # BUG: CTA scope
            elif cutlass.const_expr(self.bug in (None, "read_before_wait")):
                cute.arch.mbarrier_arrive(bar, 1, scope=nvvm.MemScopeKind.CLUSTER)
        if cutlass.const_expr(self.bug == "store_before_cluster_wait"):
            cute.arch.cluster_wait()                                 # BUG: after the store
            if rank == 0:
                cute.arch.mbarrier_arrive(bar, 1, scope=nvvm.MemScopeKind.CLUSTER)
        if rank == 1:
            if cutlass.const_expr(self.bug == "read_before_wait"):
                out[lane] = box[lane]                                # BUG: before the wait
            cute.arch.mbarrier_wait(bar, 0)
            if cutlass.const_expr(self.bug != "read_before_wait"):
                out[lane] = box[lane]                                # the hand-off's read
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


def variant(bug: str | None = None, spelling: str = "ptx"):
    from warpspin.frontend import fake_tensor

    return DsmemHandoff(bug, spelling), (fake_tensor(Int32, (32,), align=16),
                               fake_tensor(Int32, (32,), align=16))


def correct():
    return variant(None)


def cta_scope():
    return variant("cta_scope")


def no_arrive():
    return variant("no_arrive")


def read_before_wait():
    return variant("read_before_wait")


def store_after_arrive():
    return variant("store_after_arrive")


def store_before_cluster_wait():
    return variant("store_before_cluster_wait")


def store_correct():
    return variant(None, "store")


def store_cta_scope():
    return variant("cta_scope", "store")


def copy_correct():
    return variant(None, "copy")


def copy_cta_scope():
    return variant("cta_scope", "copy")


VARIANTS = {"correct": correct, "cta_scope": cta_scope, "no_arrive": no_arrive,
            "read_before_wait": read_before_wait, "store_after_arrive": store_after_arrive,
            "store_before_cluster_wait": store_before_cluster_wait,
            "store_correct": store_correct, "store_cta_scope": store_cta_scope,
            "copy_correct": copy_correct, "copy_cta_scope": copy_cta_scope}
EXPECT = {"correct": "verified", "cta_scope": "scope", "no_arrive": "deadlock",
          "read_before_wait": "race", "store_after_arrive": "race",
          "store_before_cluster_wait": "cluster-lifetime",
          "store_correct": "verified", "store_cta_scope": "scope",
          "copy_correct": "verified", "copy_cta_scope": "scope"}
EXPECT_AT = {"cta_scope": "# BUG: CTA scope", "no_arrive": "cute.arch.mbarrier_wait(bar, 0)",
             "read_before_wait": "# BUG: before the wait",
             "store_after_arrive": "# the hand-off's read",
             "store_before_cluster_wait": "ST_CLUSTER, read_only_args",
             "store_cta_scope": "# BUG: CTA scope", "copy_cta_scope": "# BUG: CTA scope"}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if any result is wrong."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    x = torch.randint(0, 1000, (32,), device="cuda", dtype=torch.int32)
    out = torch.zeros(32, device="cuda", dtype=torch.int32)
    args = [from_dlpack(t, assumed_align=16) for t in (x, out)]
    compiled = cute.compile(fn, *args)
    from _device import count_wrong
    count_wrong(name, compiled, args, out, x * 2 + 1, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
