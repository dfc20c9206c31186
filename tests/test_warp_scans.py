"""Warp scans and votes over values each lane reads from global memory (flash-attn-4's varlen
tile scheduler: `cu_seqlens[lane + start]`, a prefix sum with `shfl.sync.up`, the group's total
from the last lane, `popc(vote.ballot(...))`, a `shfl.sync` from the lane the vote computes).
Each lane's value is an expression over the lane, held in one local per lane across shuffles
and loops; the model must compute what the hardware does, so each kernel below hands over as
many rounds as a plain sum of the loaded counts says: right semantics verify for every count,
a wrong source lane deadlocks naming the counts."""
import os

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs the DSL: never skip there
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402

from warpspin.api import verify  # noqa: E402
from warpspin.syncir import unsupported_ops  # noqa: E402

NB = 2  # lanes that read a count (the others hold 0)


@cute.jit
def _scan(cnt: cute.Tensor, nb: Int32, mode: cutlass.Constexpr):
    """Warp 0's trip count from warp collectives over cnt[lane] (lane < nb)."""
    lane = cute.arch.lane_idx()
    v = Int32(0)
    if lane < nb:
        v = cnt[lane]
    for i in cutlass.range_constexpr(5):                               # inclusive prefix sum
        p = cute.arch.shuffle_sync_up(v, offset=1 << i, mask_and_clamp=0)
        if lane >= (1 << i):
            v += p
    n = Int32(0)
    if cutlass.const_expr(mode == "total"):
        n = cute.arch.shuffle_sync(v, 31)                              # cnt[0] + cnt[1]
    if cutlass.const_expr(mode == "offset_bits"):                      # PTX reads b[4:0]: 33
        n = cute.arch.shuffle_sync(                                     # is 1, lane 1 gets c0
            cute.arch.shuffle_sync_up(v, offset=33, mask_and_clamp=0), 1)
    if cutlass.const_expr(mode == "wrong_lane"):
        n = cute.arch.shuffle_sync(v, 0)                               # cnt[0] only: wrong
    if cutlass.const_expr(mode == "popc"):                             # lanes with a sum over 1
        n = cute.arch.popc(cute.arch.vote_ballot_sync(v > 1))
    if cutlass.const_expr(mode == "computed_lane"):                    # the sum at lane b
        b = cute.arch.popc(cute.arch.vote_ballot_sync(v < 2))
        n = cute.arch.shuffle_sync(v, b)
    return n


@cute.kernel
def _kernel(cnt: cute.Tensor, nb: Int32, mode: cutlass.Constexpr):
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

    @cute.struct
    class Smem:
        bar: cute.struct.MemRange[Int64, 2]

    storage = cutlass.memory.SmemAllocator().allocate(Smem)
    go, ack = storage.bar.data_ptr(), storage.bar.data_ptr() + 1
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(go, 1)
            cute.arch.mbarrier_init(ack, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    if warp == 0:
        n = _scan(cnt, nb, mode)
        for r in cutlass.range(n, unroll=1):
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(go)
            cute.arch.mbarrier_wait(ack, r % 2)
    if warp == 1:                                                      # the plain formula
        c0, c1 = cnt[0], cnt[1]
        n = c0 + c1
        if cutlass.const_expr(mode == "offset_bits"):
            n = c0
        if cutlass.const_expr(mode == "popc"):
            n = Int32(c0 > 1) + 31 * Int32(c0 + c1 > 1)               # lanes 1..31 hold c0 + c1
        if cutlass.const_expr(mode == "computed_lane"):
            b = Int32(c0 < 2) + 31 * Int32(c0 + c1 < 2)
            n = c0 + c1
            if b % 32 == 0:                                            # (shfl takes b & 31)
                n = c0
        for r in cutlass.range(n, unroll=1):
            cute.arch.mbarrier_wait(go, r % 2)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(ack)


def _launcher(mode):
    @cute.jit
    def launch(cnt: cute.Tensor, nb: Int32):
        _kernel(cnt, nb, mode).launch(grid=(1, 1, 1), block=(64, 1, 1))
    return launch


def _check(mode):
    from cutlass.cute.runtime import make_fake_compact_tensor
    cnt = make_fake_compact_tensor(Int32, (cute.sym_int(),), assumed_align=4)
    return verify(_launcher(mode), cnt, Int32(NB), params={"nb": NB, "cnt_extent": NB},
                  timeout_s=300)


@pytest.mark.parametrize("mode", ["total", "popc", "computed_lane", "offset_bits"])
def test_warp_collectives_compute_what_the_plain_formula_does(mode):
    r = _check(mode)
    assert r.verdict == "verified", str(r)
    # one run per value of cnt_0 and cnt_1 (offset_bits reads cnt_0 alone)
    assert r.stats.engine == "happens-before" and \
        r.stats.hb_runs == (4 if mode == "offset_bits" else 16), str(r)


def test_a_wrong_source_lane_deadlocks_naming_the_counts():
    r = _check("wrong_lane")
    assert r.violations and r.violations[0].kind == "deadlock", str(r)
    assert "cnt_1 = " in str(r), str(r)
