"""A CTA that exits while its cluster peer still arrives on its barrier, and the version that waits.

Clusters of two CTAs, one warp each. Both CTAs initialize their barrier ``done`` (count 1) and
publish it to the cluster. CTA 1 works for a while (LATE_US) and then tells CTA 0 it is done with
a remote arrive on CTA 0's ``done`` (mbarrier.arrive.shared::cluster through mapa). Even
clusters are watchers: their CTA 0 waits for that arrive, then looks whether its barrier
completed a second phase, which only an arrive nobody in its cluster sent can do, and writes
what it saw to ``seen[cluster]``. Odd clusters are the subject of the variants:

  correct          CTA 0 of an odd cluster waits for the arrive too, and both CTAs end with a
                   cluster barrier: no CTA exits while its peer may still reach its shared memory
  peer_exits_early CTA 0 of an odd cluster does not wait and exits at once: its peer's arrive
                   then reaches the shared memory of an exited CTA (PTX ISA 9.7.13.15.13 and the
                   CUDA guide: a CTA's shared memory must not be accessed after it exits; the SM
                   may have given it to a CTA of another cluster) -> cluster-lifetime

On a GPU, each CTA takes most of an SM's shared memory (one CTA per SM), so a watcher CTA may be
placed where an exited CTA was, its ``done`` at the same address; an early arrive that lands
there completes a phase of the watcher's barrier that its own peer did not. ``python
examples/cluster_lifetime.py --run VARIANT`` counts the watchers that saw one.
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass._mlir.dialects import nvvm

LATE_US = 200          # CTA 1's work before its arrive
LOOK_US = 400          # how long a watcher keeps looking for a second phase
PAD_WORDS = 50_000     # 200 KB of shared memory: one CTA per SM
CLUSTERS = 2           # traced; the device run launches DEVICE_CLUSTERS
DEVICE_CLUSTERS = 4096
LAUNCHES = 10
BUGS = ("peer_exits_early",)


class ClusterLifetime:
    def __init__(self, bug: str | None = None, clusters: int = CLUSTERS):
        assert bug is None or bug in BUGS, bug
        self.bug, self.clusters = bug, clusters

    @cute.jit
    def __call__(self, seen: cute.Tensor):
        self.kernel(seen).launch(grid=(2 * self.clusters, 1, 1), block=(32, 1, 1),
                                 cluster=(2, 1, 1))

    @cute.jit
    def sleep(self, us: int):
        for _ in cutlass.range(us, unroll=1):
            nvvm.nanosleep(Int32(1000).ir_value())

    @cute.kernel
    def kernel(self, seen: cute.Tensor):
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

        watcher = cluster % 2 == 0
        if rank == 1:
            self.sleep(LATE_US)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(done, 0)               # into CTA 0 of this cluster
        if rank == 0:
            if watcher:
                cute.arch.mbarrier_wait(done, 0)
                extra = Int32(0)
                for _ in cutlass.range(LOOK_US, unroll=1):
                    if cute.arch.mbarrier_test_wait(done, 1):
                        extra = Int32(1)
                    nvvm.nanosleep(Int32(1000).ir_value())
                seen[cluster] = extra
            else:
                if cutlass.const_expr(self.bug != "peer_exits_early"):
                    cute.arch.mbarrier_wait(done, 0)             # BUG: dropped
        if watcher or cutlass.const_expr(self.bug != "peer_exits_early"):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()


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
# which cluster the model holds: a watcher (even) and a subject (odd)
PARAMS = {"correct": {"clusterid_x": (0, 1)}, "peer_exits_early": {"clusterid_x": (0, 1)}}


def run_on_device(name: str) -> None:
    """Launches DEVICE_CLUSTERS clusters LAUNCHES times; prints how many watchers saw an arrive
    their own peer did not send (a correct run: none). A launch error is reported by the
    watchdog."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    seen = torch.zeros(DEVICE_CLUSTERS, device="cuda", dtype=torch.int32)
    args = (from_dlpack(seen, assumed_align=4),)
    fn = ClusterLifetime(None if name == "correct" else name, DEVICE_CLUSTERS)
    compiled = cute.compile(fn, *args)
    hits = 0
    for _ in range(LAUNCHES):
        seen.zero_()
        compiled(*args)
        torch.cuda.synchronize()
        hits += int(seen.sum().item())
    print(f"{name}: {hits} of {LAUNCHES * DEVICE_CLUSTERS // 2} watcher clusters saw a foreign "
          f"arrive ({LAUNCHES} launches)")
    if hits:
        raise SystemExit(f"{name}: FOREIGN ARRIVE in {hits} watcher clusters")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
