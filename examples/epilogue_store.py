"""A TMA-store epilogue in the shape of quack's and CUTLASS's Hopper GEMM epilogues: correct, and
with each step of its protocol broken in turn.

Each CTA writes one row block of the output, C[b*TM + r, j] = 2 * A[b*TM + r, j] + b, in SUBTILES
subtiles of (TM, TN) fp32. Its four warps compute a subtile from A (plain global loads) and write
it into one stage of a two-stage staging buffer in shared memory (one tensor, stage mode last);
warp 0 then stores the stage to C with TMA and commits the store to a bulk async-group. For
subtile i, stage s = i % STAGES:

  1. warp 0 waits until at most STAGES - 1 of its bulk groups still read shared memory
     (``cp.async.bulk.wait_group.read``, PTX 9.7.9.26.5.2): the store that last read stage s
     is done with it;
  2. the warps meet on named barrier 1 (nobody writes stage s before that wait);
  3. every thread writes its elements of the subtile into stage s (generic proxy);
  4. every thread fences its writes to the async proxy (``fence.proxy.async.shared::cta``);
  5. the warps meet on named barrier 1 again (all writes are in before the store);
  6. warp 0 stores stage s with TMA and commits a bulk group.

After the last subtile warp 0 waits for every group's reads (``wait_group.read 0``).

The ``plain_*`` variants write the same protocol as much public code does, with no staging
buffer: one plain shared tensor (``smem.allocate_tensor``), rewritten for every subtile once warp
0 has waited for all of its stores' reads (``wait_group.read 0``). warpspin follows it as a buffer
of one stage.

Variants (each differs from ``correct`` by one line):
  correct      wait, meet, write, fence, meet, store
  no_fence     the writes are not fenced to the async proxy -> proxy-race at the TMA store
  no_wait      warp 0 does not wait for the stores' reads: a stage is rewritten while the TMA
               store two subtiles back may still read it -> race at the write
  wait_short   warp 0 waits for at most STAGES pending groups instead of STAGES - 1: the group
               that reads the stage about to be rewritten may still be pending -> race
  no_barrier   no barrier between the writes and the store: warp 0 may store a stage the
               other warps are still writing -> race
  no_final_wait  warp 0 exits without waiting for its last stores' reads: the CTA's shared memory
               may be another CTA's while they still read it -> pending-at-exit
  plain_correct, plain_no_fence, plain_no_wait, plain_no_barrier
               the same with the plain tensor
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.cute.nvgpu import cpasync

TM, TN = 64, 32     # one subtile: 64 x 32 fp32 = 8 KiB
STAGES = 2          # stages of the staging buffer sD
SUBTILES = 4        # subtiles per CTA: C is (TM * M_TILES, SUBTILES * TN)
THREADS = 128       # 4 warps; warp 0 also issues the TMA stores
EPI_BARRIER = 1     # named barrier of the epilogue warps
BUGS = ("no_fence", "no_wait", "wait_short", "no_barrier", "no_final_wait")


class EpilogueStore:
    def __init__(self, subtiles: int = SUBTILES, bug: str | None = None, plain: bool = False):
        assert bug is None or bug in BUGS, bug
        self.subtiles = subtiles
        self.bug = bug
        self.plain = plain

    @cute.jit
    def __call__(self, a: cute.Tensor, c: cute.Tensor):
        one_stage = cute.make_layout((TM, TN), stride=(TN, 1))
        atom, tma_c = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, one_stage, (TM, TN))
        m_tiles = cute.size(a, mode=[0]) // TM
        self.kernel(atom, tma_c, a).launch(grid=(m_tiles, 1, 1), block=(THREADS, 1, 1))

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_c: cute.Tensor, a: cute.Tensor):
        stages = 1 if cutlass.const_expr(self.plain) else STAGES
        wait_depth = stages if cutlass.const_expr(self.bug == "wait_short") else stages - 1
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        @cute.struct
        class Smem:
            sD: cute.struct.Align[cute.struct.MemRange[Float32, TM * TN * STAGES], 1024]

        gC = cute.local_tile(tma_c, (TM, TN), (bidx, None))  # (TM, TN, SUBTILES)
        if cutlass.const_expr(self.plain):
            sP = cutlass.memory.SmemAllocator().allocate_tensor(
                Float32, cute.make_layout((TM, TN), stride=(TN, 1)), byte_alignment=1024)
            tPsP, tDgD = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                               cute.group_modes(sP, 0, 2),
                                               cute.group_modes(gC, 0, 2))
        else:
            storage = cutlass.memory.SmemAllocator().allocate(Smem)
            sD = storage.sD.get_tensor(cute.make_layout((TM, TN, STAGES), stride=(TN, 1, TM * TN)))
            tDsD, tDgD = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                               cute.group_modes(sD, 0, 2),
                                               cute.group_modes(gC, 0, 2))
        bias = Float32(bidx)

        for i in cutlass.range(self.subtiles, unroll=1):
            stage = i % STAGES
            if warp == 0:
                if cutlass.const_expr(self.bug != "no_wait"):
                    cute.arch.cp_async_bulk_wait_group(wait_depth, read=True)  # BUG: dropped
            cute.arch.barrier(barrier_id=EPI_BARRIER, number_of_threads=THREADS)
            sDs = sP if cutlass.const_expr(self.plain) else sD[None, None, stage]
            for j in cutlass.range_constexpr(TM * TN // THREADS):
                e = tidx + j * THREADS
                r, col = e // TN, e % TN
                sDs[r, col] = a[bidx * TM + r, i * TN + col] * 2.0 + bias
            if cutlass.const_expr(self.bug != "no_fence"):
                cute.arch.fence_proxy("async.shared", space="cta")            # BUG: dropped
            if cutlass.const_expr(self.bug != "no_barrier"):
                cute.arch.barrier(barrier_id=EPI_BARRIER, number_of_threads=THREADS)  # BUG: dropped
            if warp == 0:
                if cutlass.const_expr(self.plain):
                    cute.copy(atom, tPsP, tDgD[None, i])
                else:
                    cute.copy(atom, tDsD[None, stage], tDgD[None, i])
                cute.arch.cp_async_bulk_commit_group()
        if warp == 0:
            if cutlass.const_expr(self.bug != "no_final_wait"):
                cute.arch.cp_async_bulk_wait_group(0, read=True)                # BUG: dropped


# -- variants: each returns (jit_fn, args) ---------------------------------------------------------
M_TILES = 132  # one CTA per SM of an H200


def _args(subtiles: int = SUBTILES):
    from warpspin.frontend import fake_tensor

    a = fake_tensor(Float32, (TM * M_TILES, subtiles * TN), stride_order=(1, 0), align=16)
    c = fake_tensor(Float32, (TM * M_TILES, subtiles * TN), stride_order=(1, 0), align=16)
    return a, c


def variant(bug: str | None = None, subtiles: int = SUBTILES, plain: bool = False):
    return EpilogueStore(subtiles=subtiles, bug=bug, plain=plain), _args(subtiles)


def correct():
    return variant(None)


def no_fence():
    return variant("no_fence")


def no_wait():
    return variant("no_wait")


def wait_short():
    return variant("wait_short")


def no_barrier():
    return variant("no_barrier")


def no_final_wait():
    return variant("no_final_wait")


def plain_correct():
    return variant(None, plain=True)


def plain_no_fence():
    return variant("no_fence", plain=True)


def plain_no_wait():
    return variant("no_wait", plain=True)


def plain_no_barrier():
    return variant("no_barrier", plain=True)


VARIANTS = {"correct": correct, "no_fence": no_fence, "no_wait": no_wait,
            "wait_short": wait_short, "no_barrier": no_barrier, "no_final_wait": no_final_wait,
            "plain_correct": plain_correct, "plain_no_fence": plain_no_fence,
            "plain_no_wait": plain_no_wait, "plain_no_barrier": plain_no_barrier}
# what `warpspin check` must say
EXPECT = {"correct": "verified", "no_fence": "proxy-race", "no_wait": "race",
          "wait_short": "race", "no_barrier": "race", "no_final_wait": "pending-at-exit",
          "plain_correct": "verified", "plain_no_fence": "proxy-race", "plain_no_wait": "race",
          "plain_no_barrier": "race"}
EXPECT_AT = {"no_fence": "cute.copy(atom, tDsD[None, stage], tDgD[None, i])",
             "no_wait": "sDs[r, col] = a[bidx * TM + r, i * TN + col] * 2.0 + bias",
             "wait_short": "sDs[r, col] = a[bidx * TM + r, i * TN + col] * 2.0 + bias",
             "no_barrier": "cute.copy(atom, tDsD[None, stage], tDgD[None, i])",
             "plain_no_fence": "cute.copy(atom, tPsP, tDgD[None, i])",
             "plain_no_wait": "sDs[r, col] = a[bidx * TM + r, i * TN + col] * 2.0 + bias",
             "plain_no_barrier": "cute.copy(atom, tPsP, tDgD[None, i])"}


# -- running on a GPU ------------------------------------------------------------------------------
def run_on_device(name: str, repeats: int = 200) -> None:
    """Compile and launch `repeats` times on the current GPU; fail if any result is wrong (a race
    shows only when a store reads a stage before, or while, it is written)."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn, _ = VARIANTS[name]()
    n = fn.subtiles * TN
    a = torch.randn(TM * M_TILES, n, device="cuda", dtype=torch.float32)
    c = torch.zeros(TM * M_TILES, n, device="cuda", dtype=torch.float32)
    args = [from_dlpack(x, assumed_align=16) for x in (a, c)]
    compiled = cute.compile(fn, *args)
    rows = torch.arange(TM * M_TILES, device="cuda", dtype=torch.float32) // TM
    ref = a * 2.0 + rows[:, None]
    from _device import count_wrong
    count_wrong(name, compiled, args, c, ref, repeats)


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
