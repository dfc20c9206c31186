"""Per-lane ``st.async`` into a peer CTA's shared memory, counted by one mbarrier in bytes.

A cluster of two CTAs (grid 2, cluster (2,1,1)), two warps per CTA.  Warp 0 of each CTA sends:
each of its 32 lanes writes one 4-byte word into the peer CTA's ``buf[lane]`` with
``st.async.shared::cluster.mbarrier::complete_tx::bytes`` (``cute.arch.store_async_dsmem``), which
completes 4 bytes on the peer's ``full`` barrier.  Warp 1 of each CTA receives: one lane arms its
own ``full`` barrier with ``mbarrier.arrive.expect_tx(EXPECT_BYTES)`` (the barrier's one arrival),
the warp waits for phase 0 and copies ``buf`` out.  The result is the input with the two CTAs'
halves swapped: ``out[32 r + l] = x[32 (r ^ 1) + l]``.  32 lanes x 4 bytes = 128 bytes arrive.

The arming lane and the peer's stores are not ordered: the stores may complete (tx-count going
negative) before the barrier is armed.  That is fine when exactly 128 bytes are announced.

Variants:
  correct         expect_tx(128): verified
  correct_self    expect_tx(128), each CTA's lanes store into its *own* shared memory (mapa to its
                  own rank): verified
  correct_ptx     expect_tx(128), the store written as inline PTX ``st.async...complete_tx::bytes.s32``
                  after two ``mapa`` (quack's ``store_shared_remote``): verified
  expect_too_few  expect_tx(124), one word short of what arrives.  If the barrier is armed before
                  the stores land, the phase completes after 31 of the 32 words (the consumer may
                  read the 32nd before it lands, and its 4 bytes then count against the next
                  phase); if all 32 land first, the tx-count is -128 + 124 = -4 after the arrival,
                  never reaches zero, and the consumer waits forever.  Which happens is a race;
                  on an H200 the first launch hung (docs/ground-truth.md).
  expect_too_many expect_tx(132): 4 bytes never arrive, the consumer waits forever.

``python examples/st_async_lanes.py --run VARIANT`` runs a variant on a GPU (``LAUNCHES`` launches
in one process, each checked).
"""
from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64

CLUSTER = 2
LAUNCHES = 200  # launches per device run: expect_too_few is a race, so give it many chances
CONFIGS = {"correct": (128, "peer"), "correct_self": (128, "self"), "correct_ptx": (128, "peer", "ptx"),
           "expect_too_few": (124, "peer"), "expect_too_many": (132, "peer")}


class StAsyncExchange:
    def __init__(self, expect_bytes: int = 128, target: str = "peer", sender: str = "dsl"):
        assert target in ("peer", "self") and sender in ("dsl", "ptx"), (target, sender)
        self.expect_bytes, self.target, self.sender = expect_bytes, target, sender

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor):
        self.kernel(x, out).launch(grid=(CLUSTER, 1, 1), block=(64, 1, 1), cluster=(CLUSTER, 1, 1))

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor):
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        bidx, _, _ = cute.arch.block_idx()

        @cute.struct
        class Smem:
            full: cute.struct.MemRange[Int64, 1]
            buf: cute.struct.Align[cute.struct.MemRange[Int32, 32], 16]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        full = storage.full.data_ptr()
        buf = storage.buf.data_ptr()

        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(full, 1)
        cute.arch.mbarrier_init_fence()
        # the peer's barrier is initialized (and the init visible) before anyone stores into it
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()

        dst = rank ^ 1
        if cutlass.const_expr(self.target == "self"):
            dst = rank
        if warp == 0:                                                        # sender: 32 lanes
            if cutlass.const_expr(self.sender == "dsl"):
                cute.arch.store_async_dsmem(buf + lane, x[bidx * 32 + lane], full, dst)  # 4 bytes each
            else:  # the same instruction as inline PTX, the way quack writes it (store_shared_remote)
                rbuf = Int32(cute.arch.map_dsmem_ptr(buf + lane, dst).toint())
                rbar = Int32(cute.arch.map_dsmem_ptr(full, dst).toint())
                cute.arch.inline_ptx(
                    "st.async.shared::cluster.mbarrier::complete_tx::bytes.s32 [{$r0}], {$r1}, [{$r2}];",
                    read_only_args=[rbuf, x[bidx * 32 + lane], rbar])         # 4 bytes each (PTX)
        if warp == 1:                                                        # receiver
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(full, self.expect_bytes)  # announces bytes
            cute.arch.mbarrier_wait(full, 0)                                 # waits for the words
            out[bidx * 32 + lane] = cute.make_tensor(buf, cute.make_layout(32))[lane]
        # no CTA exits while its peer may still store into it or arrive on its barrier
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


def _args():
    from warpspin.frontend import fake_tensor

    return fake_tensor(Int32, (32 * CLUSTER,), align=16), fake_tensor(Int32, (32 * CLUSTER,), align=16)


def variant(name: str):
    return StAsyncExchange(*CONFIGS[name]), _args()


def correct():
    return variant("correct")


def correct_self():
    return variant("correct_self")


def correct_ptx():
    return variant("correct_ptx")


def expect_too_few():
    return variant("expect_too_few")


def expect_too_many():
    return variant("expect_too_many")


VARIANTS = {n: globals()[n] for n in CONFIGS}
# what `warpspin check` must say (make demo and tests/test_examples.py check it): 32 lanes x 4
# bytes complete 128 bytes on the receiving CTA's `full`; announcing 124 or 132 is a tx-mismatch,
# reported at the arrive.expect_tx
EXPECT = {"correct": "verified", "correct_self": "verified", "correct_ptx": "verified",
          "expect_too_few": "tx-mismatch",
          "expect_too_many": "tx-mismatch"}
EXPECT_AT = {"expect_too_few": "cute.arch.mbarrier_arrive_and_expect_tx(full, self.expect_bytes)",
             "expect_too_many": "cute.arch.mbarrier_arrive_and_expect_tx(full, self.expect_bytes)"}


def run_on_device(name: str, launches: int = LAUNCHES) -> None:
    import torch
    from cutlass.cute.runtime import from_dlpack

    fn = StAsyncExchange(*CONFIGS[name])
    base = torch.randint(-2**30, 2**30, (32 * CLUSTER,), device="cuda", dtype=torch.int32)
    x = base.clone()
    out = torch.zeros(32 * CLUSTER, device="cuda", dtype=torch.int32)
    tx, to = from_dlpack(x, assumed_align=16), from_dlpack(out, assumed_align=16)
    compiled = cute.compile(fn, tx, to)
    wrong = 0
    for i in range(launches):
        # new words every launch: a word read before it landed shows the previous launch's value
        x.copy_(base + i)
        out.zero_()
        compiled(tx, to)
        torch.cuda.synchronize()
        want = x.view(CLUSTER, 32) if fn.target == "self" else x.view(CLUSTER, 32).flip(0)
        bad = (out.view(CLUSTER, 32) != want).sum().item()
        if bad:
            wrong += 1
            if wrong <= 3:
                print(f"{name}: launch {i}: {bad} of {32 * CLUSTER} words wrong")
        if i % 50 == 0 or i == launches - 1:
            print(f"{name}: launch {i} returned", flush=True)
    print(f"{name}: {launches} launches, {wrong} with a wrong result")
    if wrong:
        raise SystemExit(f"{name}: WRONG RESULT")


if __name__ == "__main__":
    from _device import example_main

    sys.exit(example_main(__file__, VARIANTS, run_on_device, sys.argv[1:]))
