"""Shared data: values threads write into shared memory for other warps to read (a block
reduction's partials, written the way quack's `block_reduce` writes them). Each element access
becomes word accesses of the buffer's cells; unordered accesses are a race in both engines; a
buffer whose accesses the extractor cannot place stays "not checked" (fail closed)."""
import os

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Float32  # noqa: E402

from sourcelines import line_of  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.extract import extract  # noqa: E402
from warpspin.frontend import fake_tensor, trace  # noqa: E402
from warpspin.syncir import SmemLoad, SmemStore, walk_stmts  # noqa: E402
from warpspin.syncir.ir import expr_vars  # noqa: E402

WARPS = 4


@cute.kernel
def _reduce(x: cute.Tensor, mode: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    lane_idx, warp_idx = cute.arch.lane_idx(), cute.arch.warp_idx()
    smem = cutlass.memory.SmemAllocator()
    # (rows, warps per row, stages), as quack's ReductionBase lays its buffer out
    reduction_buffer = smem.allocate_tensor(
        Float32, cute.make_ordered_layout((2, 2, 2), order=(1, 0, 2)), byte_alignment=8)
    val = x[tidx]
    row_idx, col_idx = warp_idx // 2, warp_idx % 2
    red = reduction_buffer[None, None, 0]
    if lane_idx == 0:
        red[row_idx, col_idx] = val                                 # @write
    if cutlass.const_expr(mode != "no_barrier"):
        cute.arch.barrier()
    total = Float32(0.0)
    if lane_idx < 2:
        total = red[row_idx, lane_idx]                              # @read
    if cutlass.const_expr(mode in ("reuse", "reuse_fenced")):
        if cutlass.const_expr(mode == "reuse_fenced"):
            cute.arch.barrier()
        if lane_idx == 0:
            red[row_idx, col_idx] = total                           # @rewrite
        cute.arch.barrier()
        if lane_idx < 2:
            total = red[row_idx, lane_idx]
    if cutlass.const_expr(mode == "loop_index"):
        for i in cutlass.range(2, unroll=1):
            if lane_idx == 0:
                red[row_idx, i % 2] = total                         # an index over a loop
    if cutlass.const_expr(mode == "copy"):
        cute.autovec_copy(red, cute.make_fragment_like(red))        # read through a copy
    x[tidx] = total


def _kernel(mode):
    @cute.jit
    def launch(x: cute.Tensor):
        _reduce(x, mode).launch(grid=(1, 1, 1), block=(32 * WARPS, 1, 1))
    (tk,) = trace(launch, fake_tensor(Float32, (32 * WARPS,)))
    return extract(tk)


def _check(k, engine):
    return verify_kernel(k, opts=CheckOptions(timeout_s=120, engine=engine))


def test_a_block_reduction_is_followed_per_cell_and_verifies():
    k = _kernel("correct")
    (w,) = k.words
    assert w.size == 4 and not k.unchecked
    ops = [s for p in k.processes for s in walk_stmts(p.body)]
    assert sum(isinstance(s, SmemStore) for s in ops) == WARPS   # one cell per warp
    assert any(isinstance(s, SmemLoad) for s in ops)
    for engine in ("hb", "spin"):
        r = _check(k, engine)
        assert r.verdict == "verified", (engine, r.reasons)


@pytest.mark.parametrize("mode,line", [("no_barrier", "# @read"), ("reuse", "# @read")])
def test_unordered_accesses_of_the_partials_are_a_race_in_both_engines(mode, line):
    k = _kernel(mode)
    for engine in ("hb", "spin"):
        r = _check(k, engine)
        assert r.outcome == "race", (engine, r.outcome, r.reasons)
        (v,) = r.violations
        lines = {v.locations[0].line} | {n.location.line for n in v.notes if n.location}
        assert line_of(__file__, line) in lines or line_of(__file__, "# @rewrite") in lines \
            or line_of(__file__, "# @write") in lines, (engine, lines)


def test_an_index_over_a_loop_counter_is_one_cell_per_element_and_races_are_found():
    """`red[row_idx, i % 2]` in a loop: the address's lane-free part is over the loop counter,
    so the buffer is split into one cell per element, indexed by it; the two warps of a row both
    write both columns with no barrier between: a race, in both engines."""
    k = _kernel("loop_index")
    (w,) = k.words
    assert w.size == 4  # the stage-0 slice red: 2 x 2 elements
    stores = [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, SmemStore)]
    assert any(expr_vars(s.ref.index) for s in stores)  # indexed by the loop counter
    for engine in ("hb", "spin"):
        r = _check(k, engine)
        assert r.outcome == "race", (engine, r.outcome, r.reasons)
        (v,) = r.violations
        lines = {v.locations[0].line} | {n.location.line for n in v.notes if n.location}
        assert line_of(__file__, "# an index over a loop") in lines, (engine, lines)


def test_split_lane_distributes_constant_products_and_refuses_the_rest():
    from warpspin.extract.values import LANE, split_lane
    from warpspin.syncir.ir import BinOp, Const, Var
    k, lane = Var("k"), Var(LANE)
    free, per_lane = split_lane(BinOp("*", BinOp("+", BinOp("*", k, Const(32)), lane), Const(4)))
    assert LANE not in expr_vars(free) and expr_vars(per_lane) == {LANE}
    assert split_lane(BinOp("*", k, lane)) is None
    assert split_lane(BinOp("//", BinOp("+", k, lane), Const(2))) is None


def test_a_second_reduction_after_a_barrier_verifies():
    r = _check(_kernel("reuse_fenced"), "auto")
    assert r.verdict == "verified", r.reasons


@pytest.mark.parametrize("mode,why", [("copy", "is not an element store or load")])
def test_a_buffer_the_extractor_cannot_place_is_not_checked(mode, why):
    k = _kernel(mode)
    assert not k.words
    (u,) = [u for u in k.unchecked if u.property == "race"]
    assert why in u.why, u
    r = _check(k, "auto")
    assert r.verdict == "inconclusive" and r.outcome == "not-checked", (r.verdict, r.outcome)


def test_cluster_softmax_warps_that_skip_the_wait_read_the_peers_partials_in_flight():
    """quack's cluster softmax (the stored trace): each warp's lanes st.async its partial into
    every CTA's reduction buffer, completing on that CTA's mbarrier; a warp that reads the
    buffer without the wait reads bytes still in flight: a race (it was VERIFIED with races
    not checked on the buffer)."""
    from dataclasses import replace

    from warpspin.frontend.serialize import load
    from warpspin.syncir import MbarWait, rewrite_stmts
    from warpspin.syncir.ops import StAsync
    k = extract(load(os.path.join(os.path.dirname(__file__), "fixtures",
                                  "quack.softmax.cluster.json.gz")))
    # every object followed, the output too (each thread's part of its CTA's rows)
    assert k.unchecked == (), k.unchecked
    assert any(isinstance(s, StAsync) and s.size == 8 for p in k.processes
               for s in walk_stmts(p.body))
    assert _check(k, "hb").outcome == "verified"
    i = next(i for i, p in enumerate(k.processes) if p.cta == 0 and p.warps[0] == 1)
    body = rewrite_stmts(k.processes[i].body, lambda s: () if isinstance(s, MbarWait) else (s,))
    mutant = replace(k, processes=tuple(replace(p, body=body) if j == i else p
                                        for j, p in enumerate(k.processes)))
    r = _check(mutant, "hb")
    assert r.outcome == "race", (r.outcome, r.reasons)


@cute.kernel
def _lanes_hand_over(x: cute.Tensor, mode: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    lane_idx = cute.arch.lane_idx()
    smem = cutlass.memory.SmemAllocator()
    buf = smem.allocate_tensor(Float32, cute.make_layout(32), byte_alignment=16)
    buf[lane_idx] = x[tidx]
    if cutlass.const_expr(mode == "barrier"):
        cute.arch.barrier()
    if cutlass.const_expr(mode == "sync_warp"):
        cute.arch.sync_warp()
    x[tidx] = buf[(lane_idx + 1) % 32]        # the next lane's value


@pytest.mark.parametrize("mode,checked", [("no_barrier", False), ("barrier", True),
                                          ("sync_warp", True)])
def test_a_hand_off_between_lanes_of_one_warp_is_not_taken_as_ordered(mode, checked):
    """The model's thread is a warp: a lane reading what another lane of its warp wrote, with no
    barrier between, is no race it can see (independent thread scheduling makes it one), so
    races on the buffer are "not checked", naming the line (races between warps still are:
    test_unordered_accesses...); with a bar.sync or a bar.warp.sync (`cute.arch.sync_warp()`,
    which orders the warp's lanes: PTX 9.7.13.2) between, it is checked."""
    @cute.jit
    def launch(x: cute.Tensor):
        _lanes_hand_over(x, mode).launch(grid=(1, 1, 1), block=(32, 1, 1))
    (tk,) = trace(launch, fake_tensor(Float32, (32,)))
    k = extract(tk)
    if checked:
        assert k.words and not k.unchecked
        assert _check(k, "auto").verdict == "verified"
    else:
        (u,) = k.unchecked
        assert "lanes of one warp hand it over" in u.why and "warp-synchronous" in u.why, u.why
        assert u.loc.line == line_of(__file__, "# the next lane's value")
        assert _check(k, "auto").outcome == "not-checked"
