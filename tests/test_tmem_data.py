"""TMEM accumulator data followed by the extractor (extract/tmem.py): the accumulator stages of
an sm100 MMA are a TMEM buffer, the MMA's accumulator is among its tcgen05.mma reads, an
epilogue's tcgen05.ld reads the stage its pipeline state names (retired by tcgen05.wait::ld),
and every TMEM access says its data is followed; a kernel with one TMEM access the extractor
cannot attribute follows none (the verdict says TMEM data is NOT CHECKED)."""
import os
import sys

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs the DSL: never skip there
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

sys.path.insert(0, os.path.dirname(__file__))

from fixtures import catalog as C  # noqa: E402
from warpspin.extract import tmem  # noqa: E402
from warpspin.extract.cleanup import finish  # noqa: E402
from warpspin.syncir.ir import Const, Loc, Var, expr_vars, walk_stmts  # noqa: E402
from warpspin.syncir.ops import MbarWait  # noqa: E402
from warpspin.syncir.ops import MmaRead, TmemAccess, TmemLoad, TmemWaitLd  # noqa: E402
from warpspin.syncir.unchecked import unchecked_objects  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTITION = '!cute.memref<f32, tmem, align<16>, "(((64,32),1),1,1,2):(((1,65536),0),0,0,64)">'


def _stmts(k, cls):
    return [(p, s) for p in k.processes for s in walk_stmts(p.body) if isinstance(s, cls)]


def _tmem_buffers(k):
    return [b for b in k.buffers if b.space == "tmem"]


@pytest.mark.parametrize("example", ["blackwell_gemm", "blackwell_gemm_2cta"])
def test_example_accumulator_stages_are_a_tmem_buffer(example):
    """The examples' accumulator `acc` (ACC_STAGES stages of 64 columns): the MMA warp's
    tcgen05.mma reads the stage its accumulator pipeline state names (with its pair in the
    2-CTA kernel), each epilogue warp reads, with tcgen05.ld, the stage of the acc.full barrier
    it waited on and retires it with tcgen05.wait::ld."""
    mod = C._example_module(os.path.join(ROOT, "examples", f"{example}.py"))
    k = C.extracted(f"{example}.correct")
    bufs = _tmem_buffers(k)
    assert [(b.stages, b.label, b.storers, b.barrier) for b in bufs] == \
        [(mod.ACC_STAGES, "acc", (), None)], k.buffers
    acc = bufs[0].name
    accesses = [s for _, s in _stmts(k, TmemAccess)]
    assert accesses and all(s.data for s in accesses), accesses
    mma = _stmts(k, MmaRead)
    assert mma
    for p, s in mma:
        (idx,) = [i for b, i in s.reads if b == acc]
        assert s.pair == (example == "blackwell_gemm_2cta")
        # the accumulator pipeline's state: the stage whose acc.empty the MMA warp waited on
        assert isinstance(idx, Var) and any(
            isinstance(w, MbarWait) and w.bar.name == "acc_bars" and
            idx.name in expr_vars(w.bar.index) for w in walk_stmts(p.body)), (p.role, idx)
    loads = _stmts(k, TmemLoad)
    assert loads and {p.role for p, _ in loads} == {p.role for p in k.processes if any(
        isinstance(s, TmemAccess) and s.what == "tcgen05.ld" for s in walk_stmts(p.body))}
    for p, s in loads:
        ((buf, idx),) = s.reads
        assert buf == acc and isinstance(idx, Var)
        # the consumer state's index: the stage of acc.full it waited on
        assert any(isinstance(w, MbarWait) and w.bar.name == "acc_bars" and w.bar.index == idx
                   for w in walk_stmts(p.body)), (p.role, idx)
        body = list(walk_stmts(p.body))
        assert any(isinstance(w, TmemWaitLd) for w in body[body.index(s):]), p.role
    readers = {p.role for p, _ in loads}
    assert all(p.role in readers for p, _ in _stmts(k, TmemWaitLd))
    assert not [u for u in unchecked_objects(k) if u.what == "TMEM data"]


def _small(how: str):
    from warpspin.api import target_arch
    from warpspin.extract import extract
    from warpspin.frontend import trace
    with target_arch("sm_100a"):
        import tmem_kernels
        fn, args = tmem_kernels.variant(how)
        (tk,) = trace(fn, *args, arch="sm_100a")
    return extract(tk)


def test_two_stages_read_by_four_warps():
    """acc (128 lanes x 32 columns x 2 stages): each warp's tcgen05.ld of `tTR_tAcc[..., s]`
    reads stage s (the loop counter), then tcgen05.wait::ld."""
    k = _small("stage")
    (b,) = _tmem_buffers(k)
    assert (b.stages, b.label) == (2, "acc")
    loads = _stmts(k, TmemLoad)
    assert loads and all(s.reads[0][0] == b.name and isinstance(s.reads[0][1], Var)
                         for _, s in loads)
    assert all(s.data for _, s in _stmts(k, TmemAccess))
    assert len(_stmts(k, TmemWaitLd)) == len(loads)


def test_an_accumulator_with_no_stage_mode_is_a_buffer_of_one_stage():
    k = _small("single")
    (b,) = _tmem_buffers(k)
    assert (b.stages, b.label) == (1, "one")
    assert {s.reads for _, s in _stmts(k, TmemLoad)} == {((b.name, Const(0)),)}
    assert all(s.data for _, s in _stmts(k, TmemAccess))


@pytest.mark.parametrize("how", ["store", "whole", "offset"])
def test_an_access_not_attributed_leaves_tmem_data_not_checked(how):
    """A tcgen05.st (its data is not followed), a load of every stage at once through another
    view (a buffer overlapping the staged one), a tensor made at a computed column: no TMEM
    buffer, no tcgen05.ld read, no wait, every access data=False, and the verdict's not-checked
    list names TMEM data."""
    k = _small(how)
    assert not _tmem_buffers(k) and not _stmts(k, TmemLoad) and not _stmts(k, TmemWaitLd)
    accesses = _stmts(k, TmemAccess)
    assert accesses and not any(s.data for _, s in accesses)
    assert [u for u in unchecked_objects(k) if u.what == "TMEM data"]


def test_why_an_access_is_not_attributed():
    from warpspin.extract import build
    from warpspin.frontend import trace
    from warpspin.api import target_arch
    import tmem_kernels
    seen = []
    orig = build.tmem_check

    def spy(ctx):
        seen.append(orig(ctx))
        return seen[-1]
    with target_arch("sm_100a"):
        fn, args = tmem_kernels.variant("store")
        (tk,) = trace(fn, *args, arch="sm_100a")
    build.tmem_check = spy
    try:
        build.build(tk)
    finally:
        build.tmem_check = orig
    assert seen and seen[0].startswith("the tcgen05.st at tmem_kernels.py:"), seen


def test_column_span_and_stage_mode():
    """A TMEM stride moves (d >> 16) lanes and (d & 0xffff) columns: only 32-bit elements with
    non-negative strides are followed; a stage mode is a fixed mode whose one non-unit leaf's
    columns times its extent are the tensor's columns."""
    assert tmem.column_span(PARTITION) == 63 + 64
    assert tmem.column_span(PARTITION.replace("f32", "bf16")) is None
    assert tmem.column_span('!cute.memref<f32, tmem, align<16>, "(4,2):(1,-64)">') is None
    assert tmem.stage_mode(PARTITION, "(_,_,_,?)", 128) == ("?", 2, 64, 0)
    assert tmem.stage_mode(PARTITION, "(_,_,_,1)", 128) == ("1", 2, 64, 0)
    assert tmem.stage_mode(PARTITION, "(_,?,_,?)", 128) == ("?", 2, 64, 1)
    assert tmem.stage_mode(PARTITION, "(_,_,_,?)", 256) is None  # not the tensor's columns
    assert tmem.stage_mode(PARTITION, "(_,_,_,_)", 128) is None  # fixes nothing
    lanes = '!cute.memref<f32, tmem, align<16>, "(128,2):(65536,2097152)">'
    assert tmem.stage_mode(lanes, "(_,?)", 1) is None  # a mode of lanes is no stage


def test_adjacent_accesses_follow_data_only_if_both_do():
    loc = Loc("f.py", 5)
    (kept,) = finish([TmemAccess("tcgen05.ld", loc, data=True), TmemAccess("tcgen05.st", loc)])
    assert kept.what == "tcgen05.ld" and not kept.data
    (kept,) = finish([TmemAccess("tcgen05.ld", loc, data=True),
                      TmemAccess("tcgen05.ld", loc, data=True)])
    assert kept.data
