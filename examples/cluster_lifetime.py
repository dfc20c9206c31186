"""A CTA that exits while its cluster peer still arrives on its barrier, and the version that waits.

Clusters of two CTAs, one warp each (each CTA also holds 200 KB of shared memory, as a GEMM's
stages would: one CTA per SM). Both CTAs initialize their barrier ``done`` (count 1) and publish
it to the cluster. CTA 1 works for a while (LATE_US), tells CTA 0 it is done with a remote arrive
on CTA 0's ``done`` (mbarrier.arrive.shared::cluster through mapa) and writes ``out[cluster] = 1``.

Variants:
  correct           CTA 0 waits for that arrive before it exits
  peer_exits_early  CTA 0 does not wait and exits at once: its peer's arrive then reaches the
                    shared memory of an exited CTA (PTX ISA 9.7.13.15.13 and the CUDA guide: a
                    CTA's shared memory must not be accessed after it exits) -> cluster-lifetime.
                    On the H200 launches fail ("unspecified launch failure"), not every one.

``python examples/cluster_lifetime.py --run VARIANT`` launches DEVICE_CLUSTERS clusters LAUNCHES
times and checks that every CTA 1 got to its write.
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass._mlir.dialects import nvvm

LATE_US = 200          # CTA 1's work before its arrive
PAD_WORDS = 50_000     # 200 KB of shared memory: one CTA per SM
CLUSTERS = 2           # traced; the device run launches DEVICE_CLUSTERS
DEVICE_CLUSTERS = 4096
LAUNCHES = 20          # the failure is not in every launch
BUGS = ("peer_exits_early",)


class ClusterLifetime:
    def __init__(self, bug: str | None = None, clusters: int = CLUSTERS):
        assert bug is None or bug in BUGS, bug
        self.bug, self.clusters = bug, clusters

    @cute.jit
    def __call__(self, out: cute.Tensor):
        self.kernel(out).launch(grid=(2 * self.clusters, 1, 1), block=(32, 1, 1),
                                cluster=(2, 1, 1))

    @cute.kernel
    def kernel(self, out: cute.Tensor):
        @cute.struct
        class Smem:
            done: cute.struct.MemRange[Int64, 1]
            pad: cute.struct.MemRange[Int32, PAD_WORDS]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        done = storage.done.data_ptr()
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cluster, _, _ = cute.arch.cluster_idx()
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(done, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()

        if rank == 1:
            for _ in cutlass.range(LATE_US, unroll=1):
                nvvm.nanosleep(Int32(1000).ir_value())
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(done, 0)               # into CTA 0 of this cluster
            out[cluster] = Int32(1)
        if rank == 0:
            if cutlass.const_expr(self.bug != "peer_exits_early"):
                cute.arch.mbarrier_wait(done, 0)                 # BUG: dropped


def variant(bug: str | None = None, clusters: int = CLUSTERS):
    from warpspin.frontend import fake_tensor

    return ClusterLifetime(bug, clusters), (fake_tensor(Int32, (clusters,), align=4),)


def correct(**kw):
    return variant(None, **kw)


def peer_exits_early(**kw):
    return variant("peer_exits_early", **kw)


VARIANTS = {"correct": correct, "peer_exits_early": peer_exits_early}
# what `warpspin check` must say (make demo and tests/test_examples.py check it)
EXPECT = {"correct": "verified", "peer_exits_early": "cluster-lifetime"}
EXPECT_AT = {"peer_exits_early": "cute.arch.mbarrier_arrive(done, 0)"}


def run_on_device(name: str) -> None:
    """Launches DEVICE_CLUSTERS clusters LAUNCHES times and checks every CTA 1 wrote its word (a
    failed launch raises)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    out = torch.zeros(DEVICE_CLUSTERS, device="cuda", dtype=torch.int32)
    args = (from_dlpack(out, assumed_align=4),)
    fn = ClusterLifetime(None if name == "correct" else name, DEVICE_CLUSTERS)
    compiled = cute.compile(fn, *args)
    for launch in range(LAUNCHES):
        out.zero_()
        compiled(*args)
        torch.cuda.synchronize()  # raises on a failed launch
        done = int(out.sum().item())
        if done != DEVICE_CLUSTERS:
            raise SystemExit(f"{name}: WRONG RESULT in launch {launch}: {done} of "
                             f"{DEVICE_CLUSTERS} clusters done")
    print(f"{name}: {LAUNCHES} launches, every cluster done")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
