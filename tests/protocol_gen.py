"""Random small SyncIR protocols for differential testing (hypothesis strategies).

They are small enough for the Python interpreter to search exhaustively, and varied enough to hit
every violation kind: init order, counts, parities, tx bytes, TMA, named barriers, loops, params.
"""
from __future__ import annotations

from hypothesis import strategies as st

from warpspin.syncir import (Assign, BarArrive, BarSync, Const, Elect, For, If, Kernel, Lanes,
                             Loc, MBarRef, MBarrierDecl, MbarArrive, MbarArriveExpectTx,
                             MbarExpectTx, MbarInit, MbarInitFence, MbarTestWait, MbarWait, Param,
                             Process, TmaLoad, Var)

FILE = "random.py"
BARS = ("a", "b")


@st.composite
def bar_ref(draw, sizes):
    name = draw(st.sampled_from(BARS))
    if sizes[name] == 1:
        return MBarRef(name, Const(0))
    idx = draw(st.sampled_from([Const(0), Const(1), Var("k") % sizes[name]]))
    return MBarRef(name, idx)


@st.composite
def sync_op(draw, sizes, line):
    loc = Loc(FILE, line)
    kind = draw(st.sampled_from(["arrive", "arrive1", "aexp", "expect", "tma", "wait", "wait",
                                 "test", "flip", "bar", "bararrive", "if", "reinit", "lanebar"]))
    if kind == "arrive":
        return MbarArrive(draw(bar_ref(sizes)), draw(st.sampled_from([1, 2])), loc)
    if kind == "arrive1":
        return Elect((MbarArrive(draw(bar_ref(sizes)), 1, loc),), loc)
    if kind == "aexp":
        return Elect((MbarArriveExpectTx(draw(bar_ref(sizes)), draw(st.sampled_from([16, 32])), loc),), loc)
    if kind == "expect":
        return Elect((MbarExpectTx(draw(bar_ref(sizes)), 16, loc),), loc)
    if kind == "tma":
        return Elect((TmaLoad(draw(bar_ref(sizes)), draw(st.sampled_from([16, 32])), loc),), loc)
    if kind == "wait":
        return MbarWait(draw(bar_ref(sizes)), Var("ph"), loc)
    if kind == "test":
        return MbarTestWait("ok", draw(bar_ref(sizes)), Var("ph"), loc)
    if kind == "flip":
        return Assign("ph", Var("ph") ^ 1, loc)
    if kind == "bar":
        return BarSync(Const(1), Const(draw(st.sampled_from([32, 64]))), loc)
    if kind == "bararrive":
        return BarArrive(Const(1), Const(draw(st.sampled_from([32, 64]))), loc)
    if kind == "reinit":
        return Elect((MbarInit(draw(bar_ref(sizes)), 1, loc),), loc)
    if kind == "lanebar":
        return Elect((BarArrive(Const(2), Const(32), loc),), loc)
    inner = draw(sync_op(sizes, line + 1))
    return If((Var("k") % 2).eq(0), (inner,), (), loc)


@st.composite
def process_body(draw, sizes, base_line, use_param):
    ops = draw(st.lists(sync_op(sizes, base_line), min_size=1, max_size=3))
    trips = Var("N") if use_param else Const(draw(st.integers(0, 2)))
    return (For("k", 0, trips, tuple(ops), loc=Loc(FILE, base_line - 1)),)


@st.composite
def protocols(draw) -> Kernel:
    sizes = {"a": draw(st.integers(1, 2)), "b": 1}
    use_param = draw(st.booleans()) and draw(st.booleans())
    nproc = draw(st.integers(2, 3))
    init_ops = []
    for name in BARS:
        for i in range(sizes[name]):
            init_ops.append(MbarInit(MBarRef(name, Const(i)), draw(st.sampled_from([1, 1, 2, 32])),
                                     Loc(FILE, 1)))
    fence = draw(st.sampled_from(["fence+sync", "fence+sync", "fence+sync", "sync", "none"]))
    procs = []
    for p in range(nproc):
        body = []
        if p == 0:
            body.append(Elect(tuple(init_ops) + ((MbarInitFence(Loc(FILE, 2)),)
                                                 if fence.startswith("fence") else ()), Loc(FILE, 1)))
        if fence != "none":
            body.append(BarSync(loc=Loc(FILE, 3)))
        body += draw(process_body(sizes, 10 * (p + 1) + 1, use_param))
        instances = draw(st.sampled_from([1, 1, 2])) if p > 0 else 1
        procs.append(Process(f"p{p}", tuple(body), warps=(p * 2, p * 2 + instances),
                             threads=32, instances=instances,
                             init=(("ph", draw(st.integers(0, 1))), ("ok", 0))))
    params = (Param("N", 0, 2),) if use_param else ()
    return Kernel("random", tuple(procs), (MBarrierDecl("a", sizes["a"]), MBarrierDecl("b", 1)),
                  params=params)
