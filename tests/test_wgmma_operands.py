"""wgmma operands that threads write (rule `wgmma.operand`): shared data a wgmma reads must be
written before it (ordered by synchronization, with a fence.proxy.async between the generic
write and the async-proxy read) and not rewritten before a wgmma.wait_group of the reading warp
retires the wgmma's group.

SyncIR protocols checked by every engine (the interpreter's exhaustive search, SPIN and the
happens-before engine must agree), and the extraction of a plain DSL kernel whose warpgroup
fills its own A and B tiles."""
from dataclasses import replace

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import Const, For, Kernel, Loc, Process, WordRef, WordsDecl, validate
from warpspin.syncir.interp import violation_kinds
from warpspin.syncir.ops import (BarSync, FenceProxyAsync, SmemLoad, SmemStore, WgmmaCommit,
                                 WgmmaReadData, WgmmaWait, wgmma_data_mode)

L = lambda n: Loc("operand.py", n)  # noqa: E731


def _told(body, depth):
    def one(st):
        if isinstance(st, (WgmmaCommit, WgmmaWait)):
            return replace(st, datas=("tile",), depth=depth)
        if isinstance(st, For):
            return replace(st, body=tuple(one(s) for s in st.body))
        return st
    return tuple(one(s) for s in body)


def _kernel(writer, mma, depth=1) -> Kernel:
    """A filling warp and an MMA warp of one CTA, sharing the two cells of `tile`."""
    k = Kernel("operand", (Process("fill", tuple(writer), warps=(0, 1)),
                           Process("mma", _told(mma, depth), warps=(1, 2))), (),
               words=(WordsDecl("tile", 2, L(0), "sA", data=True),))
    assert not validate(k), validate(k)
    return k


def st(n, cell=0):
    return SmemStore(WordRef("tile", Const(cell)), Const(0), L(n))


FENCE = FenceProxyAsync(L(3))
SYNC = BarSync(Const(1), Const(64), L(4))
SYNC2 = BarSync(Const(2), Const(64), L(6))
READ = WgmmaReadData("tile", L(5))
COMMIT = WgmmaCommit(loc=L(7))
WAIT = WgmmaWait(0, loc=L(8))

CASES = {
    # name: (writer, mma, verdict, line of the violation)
    "fill, fence, sync, wgmma": ((st(1), st(2, 1), FENCE, SYNC), (SYNC, READ, COMMIT, WAIT),
                                 "verified", None),
    "fill, no sync": ((st(1), FENCE), (READ, COMMIT, WAIT), "race", None),
    # the refill of the next k-tile: only after the reader's wait and a barrier
    "refill after wait and sync": ((st(1), FENCE, SYNC, SYNC2, st(9), FENCE),
                                   (SYNC, READ, COMMIT, WAIT, SYNC2), "verified", None),
    "refill before the wait": ((st(1), FENCE, SYNC, SYNC2, st(9), FENCE),
                               (SYNC, READ, COMMIT, SYNC2, WAIT), "race", 9),
    "refill with no wait at all": ((st(1), FENCE, SYNC, SYNC2, st(9), FENCE),
                                   (SYNC, READ, COMMIT, SYNC2), "race", 9),
    # the filling warp reads its own data back: no conflict with the wgmma's read
    "read back while the wgmma reads": ((st(1), FENCE, SYNC, SmemLoad("_d", WordRef("tile", Const(0)), L(9))),
                                        (SYNC, READ, COMMIT, WAIT), "verified", None),
}


@pytest.mark.parametrize("engine", ["spin", "hb"])
@pytest.mark.parametrize("name", list(CASES))
def test_engines_agree(name, engine):
    writer, mma, verdict, line = CASES[name]
    k = _kernel(writer, mma)
    kinds, complete = violation_kinds(k)  # the reference interpreter, every interleaving
    assert complete and kinds == (set() if verdict == "verified" else {verdict}), (name, kinds)
    r = verify_kernel(k, opts=CheckOptions(engine=engine, timeout_s=60))
    got = r.violations[0].kind if r.violations else r.verdict
    assert got == verdict, (name, engine, str(r))
    if line is not None:
        assert any(x.line == line for x in r.violations[0].locations), str(r)


def test_no_fence_in_the_kernel_is_a_proxy_race():
    k = _kernel((st(1), SYNC), (SYNC, READ, COMMIT, WAIT))
    assert wgmma_data_mode(k, "tile") == "unfenced"
    kinds, complete = violation_kinds(k)
    assert complete and kinds == {"proxy-race"}
    for engine in ("spin", "hb"):
        r = verify_kernel(k, opts=CheckOptions(engine=engine, timeout_s=60))
        assert r.violations and r.violations[0].kind == "proxy-race", (engine, str(r))
        assert "fence.proxy.async" in r.violations[0].message


def test_the_fence_must_come_before_the_writer_synchronizes():
    # the fence after the barrier: whether it orders the write is not followed (invalid IR;
    # the extractor reports the operand's races as not checked instead)
    k = Kernel("operand", (Process("fill", (st(1), SYNC, FENCE), warps=(0, 1)),
                           Process("mma", _told((SYNC, READ, COMMIT, WAIT), 1), warps=(1, 2))),
               (), words=(WordsDecl("tile", 2, L(0), "sA", data=True),))
    assert wgmma_data_mode(k, "tile") == "unknown"
    assert any("fence.proxy.async" in str(p) for p in validate(k))


def test_fence_first_follows_loops_and_branches():
    loop = For("i", 0, 2, (st(1), FENCE, SYNC), loc=L(2))
    k = _kernel((loop,), (For("i", 0, 2, (SYNC, READ, COMMIT, WAIT), loc=L(2)),))
    assert wgmma_data_mode(k, "tile") == "fenced"
    # the store meets the next trip's fence first: fenced; the next trip's sync first: not
    early = For("i", 0, 2, (FENCE, SYNC, st(1)), loc=L(2))
    assert wgmma_data_mode(replace(k, processes=(Process("fill", (early,), warps=(0, 1)),)),
                           "tile") == "fenced"
    late = For("i", 0, 2, (SYNC, st(1)), loc=L(2))
    k2 = Kernel("operand", (Process("fill", (late, FENCE), warps=(0, 1)),), (),
                words=(WordsDecl("tile", 2, L(0), "sA", data=True),))
    assert wgmma_data_mode(k2, "tile") == "unknown"


def test_a_store_from_another_cta_or_an_st_async_is_not_followed():
    """Which proxy fence orders a peer CTA's st.shared::cluster, or an st.async, before a wgmma
    is not modelled: the mode is unknown (the extractor reports the operand's races as not
    checked), even where every store meets its thread's fence first."""
    from warpspin.syncir import MBarRef
    from warpspin.syncir.ops import StAsync
    remote = SmemStore(WordRef("tile", Const(0), Const(1)), Const(0), L(1))
    k = Kernel("operand", (Process("fill", (remote, FENCE, SYNC), warps=(0, 1)),
                           Process("mma", _told((SYNC, READ, COMMIT, WAIT), 1), warps=(1, 2))),
               (), words=(WordsDecl("tile", 2, L(0), "sA", data=True),), num_ctas=2)
    assert wgmma_data_mode(k, "tile") == "unknown"
    assert any("fence.proxy.async" in str(p) for p in validate(k))
    st_async = StAsync(WordRef("tile", Const(0)), (Const(0),), MBarRef("b", Const(0)), L(1))
    k2 = replace(k, processes=(replace(k.processes[0], body=(st_async, FENCE, SYNC)),
                               k.processes[1]))
    assert wgmma_data_mode(k2, "tile") == "unknown"
