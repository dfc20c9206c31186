"""Does an H200 give the SM slot of a CTA that exited to another CTA while the rest of its cluster
still runs? (Whether a late remote arrive into an exited CTA, `cluster-lifetime`, can land in
another CTA's shared memory.) Not run by CI (needs a GPU).

Clusters of two CTAs of one warp, each CTA holding 200 KB of shared memory (one CTA per SM).
CTA 0 of every cluster exits at once; CTA 1 sleeps LATE_US and then arrives on CTA 0's barrier
through mapa. Every CTA records its SM, when it started, and when it exited or arrived; the host
counts the CTAs that started on the SM of an exited CTA 0 before that CTA 0's peer arrived.

    python tests/gpu/cluster_slot_reuse.py [--wait]   # on the GPU machine (.dslbundle/env.sh)

--wait is the control: CTA 0 waits for the arrive before it exits.
"""
import sys

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass._mlir.dialects import nvvm

LATE_US, CLUSTERS, PAD_WORDS = 200, 4096, 50_000


class Probe:
    def __init__(self, wait: bool = False, quiet0: bool = False):
        self.wait = wait  # the control: CTA 0 waits for its peer's arrive before it exits
        self.quiet0 = quiet0  # CTA 0 records nothing (exits right after the cluster barrier)

    @cute.jit
    def __call__(self, rec: cute.Tensor):
        self.kernel(rec).launch(grid=(2 * CLUSTERS, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    @cute.kernel
    def kernel(self, rec: cute.Tensor):
        @cute.struct
        class Smem:
            done: cute.struct.MemRange[Int64, 1]
            pad: cute.struct.MemRange[Int32, PAD_WORDS]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        done = storage.done.data_ptr()
        start = cute.arch.globaltimer()
        bidx, _, _ = cute.arch.block_idx()
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(done, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
        if rank == 1:
            for _ in cutlass.range(LATE_US, unroll=1):
                nvvm.nanosleep(Int32(1000).ir_value())
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(done, 0)
        if cutlass.const_expr(self.wait):
            if rank == 0:
                cute.arch.mbarrier_wait(done, 0)
        end = cute.arch.globaltimer()
        record = cute.arch.lane_idx() == 0
        if cutlass.const_expr(self.quiet0):
            record = record and rank == 1
        if record:
            rec[bidx, 0] = Int64(cute.arch.smid())
            rec[bidx, 1] = start
            rec[bidx, 2] = end


def main(argv) -> int:
    import torch
    from cutlass.cute.runtime import from_dlpack

    rec = torch.zeros(2 * CLUSTERS, 3, device="cuda", dtype=torch.int64)
    args = (from_dlpack(rec, assumed_align=8),)
    compiled = cute.compile(Probe(wait="--wait" in argv, quiet0="--quiet0" in argv), *args)
    for launch in range(3):
        rec.zero_()
        compiled(*args)
        torch.cuda.synchronize()
        r = rec.cpu().tolist()
        by_sm = {}
        for b, (sm, t0, t1) in enumerate(r):
            by_sm.setdefault(sm, []).append((t0, b))
        reused = 0
        windows = []
        for c in range(CLUSTERS):
            sm0, _, exit0 = r[2 * c]
            arrive1 = r[2 * c + 1][2]
            windows.append(arrive1 - exit0)
            if any(exit0 < t0 < arrive1 for t0, b in by_sm[sm0] if b // 2 != c):
                reused += 1
        windows.sort()
        print(f"launch {launch}: {len(by_sm)} SMs; in {reused} of {CLUSTERS} clusters another "
              f"CTA started on CTA 0's SM after it exited and before its peer arrived on it; "
              f"exit-to-arrive window median {windows[len(windows) // 2] / 1000:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
