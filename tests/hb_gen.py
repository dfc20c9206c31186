"""Well-synchronized SyncIR protocols and their one-edit mutants, for the happens-before engine's
differential tests (tests/test_hb.py).

The random protocols of protocol_gen.py are mostly broken or schedule-dependent; the engine must
also be tested where it decides: protocols that synchronize the same way in every schedule
(rings of any depth and width, a consumer that peeks with a test-wait, a producer that expects
its bytes before it arrives, a ping-pong over named barriers, a cluster whose producer
multicasts into both CTAs, a TMA-store epilogue, a wgmma mainloop, a Blackwell accumulator
pipeline, cp.async, rewritten tensormaps, CLC), drawn with random sizes; and every mutant one
edit away from them: an op deleted, a count or byte count off by one step, a parity swapped, two
neighbouring statements swapped (across a barrier among others).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from hypothesis import strategies as st

from warpspin.syncir import (Assign, BarArrive, BarSync, ClusterArrive, ClusterWait, Const,
                             Elect, For, If, Kernel, Lanes, Loc, MBarRef, MBarrierDecl, MbarArrive,
                             MbarArriveExpectTx, MbarExpectTx, MbarInit, MbarInitFence,
                             MbarTestWait, MbarWait, Process, TmaLoad, Var)
from protocol_gen import valid
from warpspin.syncir import protocols as P
from warpspin.syncir.ir import BinOp, Select, stmt_bodies, with_bodies
from warpspin.syncir.ops import (BulkWaitRead, CpAsyncWait, FenceProxyAsync, GlobalAdd,
                                 GlobalWait, SyncOp,
                                 Tcgen05Commit, TmemWaitLd, WgmmaWait)

FILE = "wellsync.py"


def _l(n: int) -> Loc:
    return Loc(FILE, n)


def _advance(stage: str, phase: str, stages: int):
    return P.advance(stage, phase, stages)


def peek_ring(stages: int = 2, trips: int = 3, consumers: int = 1, expect_first: bool = False
              ) -> Kernel:
    """A ring whose consumer peeks: it tests the full barrier, releases the previous stage, then
    waits only if the test failed (quack's consumer_try_wait / consumer_wait shape). With
    `expect_first`, the producer expects the bytes with a standalone expect_tx before its arrive
    (the expect is ordered before the phase's arrival)."""
    full, empty = MBarRef("full", Var("s")), MBarRef("empty", Var("s"))
    init = Elect((For("i", 0, stages, (MbarInit(MBarRef("full", Var("i")), 1, _l(1)),
                                       MbarInit(MBarRef("empty", Var("i")), consumers, _l(2)))),
                  MbarInitFence(_l(3))))
    arm = ((MbarExpectTx(full, 64, _l(11)), MbarArrive(full, 1, _l(12))) if expect_first
           else (MbarArriveExpectTx(full, 64, _l(12)),))
    producer = (init, BarSync(loc=_l(4)), For("k", 0, trips, (
        MbarWait(empty, Var("ph"), _l(10)),
        Elect((*arm, TmaLoad(full, 64, _l(13)))),
        *_advance("s", "ph", stages)), loc=_l(9)))
    consumer = (BarSync(loc=_l(4)), For("k", 0, trips, (
        MbarTestWait("ok", full, Var("ph"), _l(20)),
        If(Var("k").gt(0), (Elect((MbarArrive(MBarRef("empty", Var("prev")), 1, _l(21)),)),)),
        If(Var("ok").eq(0), (MbarWait(full, Var("ph"), _l(22)),)),
        Assign("prev", Var("s")),
        *_advance("s", "ph", stages)), loc=_l(19)),
        If(Const(trips).gt(0), (Elect((MbarArrive(MBarRef("empty", Var("prev")), 1, _l(24)),)),)))
    return Kernel(f"peek_ring_s{stages}_k{trips}_c{consumers}" + ("_expect" if expect_first else ""),
                  (Process("producer", producer, warps=(0, 1), init=(("ph", 1),)),
                   Process("consumer", consumer, warps=(1, 1 + consumers), instances=consumers,
                           init=(("ph", 0), ("ok", 0), ("prev", 0)))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)))


def named_pingpong(rounds: int = 3, warps: int = 2) -> Kernel:
    """Two groups of warps take turns through named barriers 1 and 2 (a producer's bar.arrive
    and the consumers' bar.sync, as the ordered sequence barriers of a pingpong GEMM do)."""
    T = 32 * (warps + 1)
    a = (BarSync(loc=_l(30)), For("r", 0, rounds, (
        BarArrive(Const(1), Const(T), _l(31)),
        BarSync(Const(2), Const(T), _l(32))), loc=_l(33)))
    b = (BarSync(loc=_l(30)), For("r", 0, rounds, (
        BarSync(Const(1), Const(T), _l(34)),
        BarArrive(Const(2), Const(T), _l(35))), loc=_l(36)))
    return Kernel(f"named_pingpong_r{rounds}_w{warps}",
                  (Process("a", a, warps=(0, 1)),
                   Process("b", b, warps=(1, 1 + warps), instances=warps)), ())


def cluster_multicast(stages: int = 2, trips: int = 2) -> Kernel:
    """Two CTAs: the producer of CTA 0 multicasts each tile into both CTAs' full[s] (each CTA's
    own producer arms its barrier), the consumer of each CTA releases empty[s] of CTA 0 (a remote
    arrive); the inits are published by the cluster barrier."""
    procs = []
    for cta in (0, 1):
        full = MBarRef("full", Var("s"))
        init = Elect((For("i", 0, stages, (MbarInit(MBarRef("full", Var("i")), 1, _l(40)),
                                           MbarInit(MBarRef("empty", Var("i")), 2, _l(41)))),
                      MbarInitFence(_l(42))))
        sync = (ClusterArrive(False, _l(43)), ClusterWait(_l(44)))
        done = (ClusterArrive(False, _l(55)), ClusterWait(_l(56)))  # no CTA exits while the
        #                                                    other may still arrive on its barriers
        load = (Elect((TmaLoad(full, 32, _l(47), multicast=Const(3)),)),) if cta == 0 else ()
        producer = (init, *sync, For("k", 0, trips, (
            *((MbarWait(MBarRef("empty", Var("s")), Var("ph"), _l(45)),) if cta == 0 else ()),
            Elect((MbarArriveExpectTx(full, 32, _l(46)),)),
            *load, *_advance("s", "ph", stages)), loc=_l(48)), *done)
        consumer = (*sync, For("k", 0, trips, (
            MbarWait(full, Var("ph"), _l(50)),
            Elect((MbarArrive(MBarRef("empty", Var("s"), cta=Const(0)), 1, _l(51), "cluster"),)),
            *_advance("s", "ph", stages)), loc=_l(52)), *done)
        if cta == 1:  # no copies of its own: it arms its barrier for the multicast's bytes
            producer = (init, *sync, For("k", 0, trips, (
                Elect((MbarArriveExpectTx(full, 32, _l(46)),)),
                MbarWait(full, Var("pw"), _l(53)),
                *_advance("s", "pw", stages)), loc=_l(54)), *done)
        procs += [Process("producer", producer, cta=cta, warps=(0, 1),
                          init=(("ph", 1), ("pw", 0))),
                  Process("consumer", consumer, cta=cta, warps=(1, 2), init=(("ph", 0),))]
    return Kernel(f"cluster_multicast_s{stages}_k{trips}", tuple(procs),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)), num_ctas=2)


def flag_stages(tiles: tuple = (1, 2), backpressure: bool = True, data: bool = False) -> Kernel:
    """The synchronization of examples/fused_moe.py: two clusters of two CTAs, one warp each.
    Cluster 0's CTAs add 1 to global flag ready<e> per tile of expert e (after a bar.sync;
    with `data`, after writing the tile's cell of global data); cluster 1's leader waits until
    ready<e> reaches 2 * tiles[e], then arrives on its peer's `go` (a remote arrive at cluster
    scope) and, with `backpressure`, waits for the peer's hand-back on its own `done`; the peer
    waits on `go` and hands back (reading the tile's cells, with `data`). Cluster 1's inits are
    published by its cluster barrier (cluster 0 meets at its own, and uses no mbarrier)."""
    from warpspin.syncir.ir import FlagDecl, WordRef, WordsDecl
    from warpspin.syncir.ops import GlobalAdd, GlobalWait, SmemLoad, SmemStore, WarpSync
    init = (Elect((MbarInit(MBarRef("go"), 1, _l(60)), MbarInit(MBarRef("done"), 1, _l(61)),
                   MbarInitFence(_l(62)))), ClusterArrive(False, _l(63)), ClusterWait(_l(64)))
    cells = [sum(tiles[:e]) for e in range(len(tiles))]

    def cell(e, t):  # the data cell of tile t of expert e written by producer CTA r
        return WordRef("data", Const(cells[e] + t))
    procs = []
    for cta in range(4):
        body = list(init if cta >= 2 else init[1:])  # (cluster 0 uses no mbarrier)
        for e, n in enumerate(tiles):
            if cta < 2:
                for t in range(n):
                    if data:
                        body.append(SmemStore(WordRef("data", Const(2 * (cells[e] + t) + cta)),
                                              Const(0), _l(65)))
                    body += [BarSync(loc=_l(66)), Elect((GlobalAdd(f"ready{e}", Const(1),
                                                                   "release", "gpu", _l(67)),))]
            elif cta == 2:
                body += [Elect((GlobalWait(f"ready{e}", ">=", Const(2 * n), "acquire", "gpu",
                                           _l(68)),)), BarSync(loc=_l(69)),
                         Elect((MbarArrive(MBarRef("go", cta=Const(3)), 1, _l(70), "cluster"),))]
                if backpressure:
                    body.append(MbarWait(MBarRef("done"), Const(e % 2), _l(71)))
            else:
                body.append(MbarWait(MBarRef("go"), Const(e % 2), _l(72)))
                if data:  # (every lane's reads before the elected lane's release)
                    body += [SmemLoad("v", WordRef("data", Const(2 * (cells[e] + t) + r)), _l(73))
                             for t in range(n) for r in (0, 1)] + [WarpSync(loc=_l(75))]
                body.append(Elect((MbarArrive(MBarRef("done", cta=Const(2)), 1, _l(74),
                                              "cluster"),)))
        procs.append(Process(f"cta{cta}", tuple(body), cta=cta, warps=(0, 1),
                             init=(("v", 0),) if data and cta == 3 else ()))
    words = (WordsDecl("data", max(1, 2 * sum(tiles)), data=True, grid=True),) if data else ()
    return Kernel(f"flag_stages_{'_'.join(map(str, tiles))}" + ("" if backpressure else "_nobp")
                  + ("_data" if data else ""), tuple(procs),
                  (MBarrierDecl("go"), MBarrierDecl("done")), num_ctas=4, cluster_ctas=2,
                  flags=tuple(FlagDecl(f"ready{e}") for e in range(len(tiles))), words=words)


def cumulative_counter(tiles: int = 3, producers: int = 1, data: bool = True) -> Kernel:
    """One counter for every tile: each producer CTA writes its cell of tile t (with `data`),
    passes a bar.sync and adds 1; the consumer CTA waits until the counter reaches
    producers * (t + 1), then reads the tile's cells. With one producer every wait needs the
    adds before it; with two, a producer may run a tile ahead of the other, and the consumer's
    wait for tile t can pass before the slower one wrote it: a race."""
    from warpspin.syncir.ir import FlagDecl, WordRef, WordsDecl
    from warpspin.syncir.ops import GlobalAdd, GlobalWait, SmemLoad, SmemStore
    t = Var("t")
    procs = []
    for c in range(producers):
        cell = WordRef("d", BinOp("+", BinOp("*", t, Const(producers)), Const(c)))
        body = ((SmemStore(cell, Const(0), _l(90)),) if data else ()) + (
            BarSync(loc=_l(91)), Elect((GlobalAdd("n", Const(1), loc=_l(92)),)))
        procs.append(Process(f"p{c}", (For("t", 0, tiles, body, loc=_l(93)),), cta=c,
                             warps=(0, 1)))
    need = BinOp("*", BinOp("+", t, Const(1)), Const(producers))
    reads = tuple(SmemLoad("v", WordRef("d", BinOp("+", BinOp("*", t, Const(producers)),
                                                   Const(c))), _l(96)) for c in range(producers))
    body = (Elect((GlobalWait("n", ">=", need, loc=_l(94)),)), BarSync(loc=_l(95)),
            *(reads if data else ()))
    procs.append(Process("consumer", (For("t", 0, tiles, body, loc=_l(97)),), cta=producers,
                         warps=(0, 1), init=(("v", 0),)))
    words = (WordsDecl("d", max(1, tiles * producers), data=True, grid=True),) if data else ()
    return Kernel(f"cumulative_k{tiles}_p{producers}" + ("_data" if data else ""), tuple(procs),
                  (), num_ctas=producers + 1, cluster_ctas=1, flags=(FlagDecl("n"),),
                  words=words)


@st.composite
def flag_protocols(draw) -> Kernel:
    """Random protocols over two global flags and a remote mbarrier in a grid model of two
    clusters of two CTAs (one warp each): each CTA initializes its barrier `b` (count 1) and
    meets its cluster, then runs 1-4 ops drawn from: an elected add of 1 or 2 to a flag, an
    elected wait until a flag reaches 0-3, an elected store of 0-2 (release or relaxed), an
    elected lock (swap 0 or 1 for 0-2), an elected arrive on the peer's `b` (cluster scope), a
    wait on its own `b` with parity 0 or 1, a cluster barrier."""
    from warpspin.syncir.ir import FlagDecl
    from warpspin.syncir.ops import GlobalAdd, GlobalLock, GlobalStore, GlobalWait
    init = (Elect((MbarInit(MBarRef("b"), 1, _l(80)), MbarInitFence(_l(81)))),
            ClusterArrive(False, _l(82)), ClusterWait(_l(83)))
    procs = []
    for cta in range(4):
        body = list(init)
        for i in range(draw(st.integers(1, 4))):
            what = draw(st.sampled_from(("add", "add", "wait", "wait", "arrive", "mwait",
                                         "cluster", "store", "lock")))
            f = draw(st.sampled_from(("f", "g")))
            if what == "add":
                body.append(Elect((GlobalAdd(f, Const(draw(st.integers(1, 2))), "release", "gpu",
                                             _l(84 + i)),)))
            elif what == "wait":
                body.append(Elect((GlobalWait(f, ">=", Const(draw(st.integers(0, 3))),
                                              "acquire", "gpu", _l(84 + i)),)))
            elif what == "store":
                body.append(Elect((GlobalStore(f, Const(draw(st.integers(0, 2))),
                                               draw(st.sampled_from(("release", "relaxed"))),
                                               "gpu", _l(84 + i)),)))
            elif what == "lock":
                body.append(Elect((GlobalLock(f, Const(draw(st.integers(0, 1))),
                                              Const(draw(st.integers(0, 2))), "acquire", "gpu",
                                              _l(84 + i)),)))
            elif what == "arrive":
                body.append(Elect((MbarArrive(MBarRef("b", cta=Const(cta ^ 1)), 1, _l(84 + i),
                                              "cluster"),)))
            elif what == "mwait":
                body.append(MbarWait(MBarRef("b"), Const(draw(st.integers(0, 1))), _l(84 + i)))
            else:
                body += [ClusterArrive(False, _l(84 + i)), ClusterWait(_l(84 + i))]
        procs.append(Process(f"cta{cta}", tuple(body), cta=cta, warps=(0, 1)))
    return valid(Kernel("flag_protocol", tuple(procs), (MBarrierDecl("b"),), num_ctas=4,
                        cluster_ctas=2, flags=(FlagDecl("f"), FlagDecl("g"))), "flag_protocols")


@st.composite
def well_synchronized(draw) -> Kernel:
    return valid(_well_synchronized(draw), "well_synchronized")


def _well_synchronized(draw) -> Kernel:
    kind = draw(st.sampled_from(("ring", "ring", "peek", "pingpong", "exchange", "cluster",
                                 "epilogue", "mainloop", "umma", "cp_async", "kgrouped",
                                 "prefix", "clc", "flags", "cumulative")))
    n = lambda lo, hi: draw(st.integers(lo, hi))  # noqa: E731
    if kind == "ring":
        return P.ring(stages=n(1, 3), trips=n(0, 4), consumers=n(1, 3),
                      consumer_threads=draw(st.sampled_from([32, 64])), ctas=n(1, 2))
    if kind == "peek":
        return peek_ring(stages=n(1, 3), trips=n(0, 4), consumers=n(1, 2),
                         expect_first=draw(st.booleans()))
    if kind == "pingpong":
        return named_pingpong(rounds=n(1, 3), warps=n(1, 2))
    if kind == "exchange":
        return P.exchange(rounds=n(1, 4))
    if kind == "cluster":
        return cluster_multicast(stages=n(1, 2), trips=n(1, 3))
    if kind == "epilogue":
        return P.epilogue(warps=n(1, 2), subtiles=n(1, 3), stages=n(1, 2))
    if kind == "mainloop":
        return P.mainloop(stages=n(1, 2), ktiles=n(1, 3), consumers=n(1, 2))
    if kind == "umma":
        return P.umma_acc(tiles=n(1, 3), stages=n(1, 2), epi_warps=n(1, 2),
                          data=draw(st.booleans()))
    if kind == "cp_async":
        return P.cp_async_loop(warps=n(1, 2), max_tiles=n(1, 2))
    if kind == "kgrouped":
        return P.kgrouped(groups=n(1, 2), ktiles=n(1, 2), stages=n(1, 2))
    if kind == "prefix":
        return P.prefix_ring(consumers=n(2, 3), stages=n(1, 2), trips=n(1, 2))
    if kind == "flags":
        return flag_stages(tiles=tuple(n(0, 2) for _ in range(n(1, 2))), data=draw(st.booleans()))
    if kind == "cumulative":
        return cumulative_counter(tiles=n(0, 3), data=draw(st.booleans()))
    return P.clc_scheduler(pool=(0, n(0, 2)), stages=n(1, 2))


# ----------------------------------------------------------------------------- mutants

_DROPPABLE = (MbarArrive, MbarArriveExpectTx, MbarExpectTx, MbarWait, MbarTestWait, BarSync,
              BarArrive, ClusterArrive, ClusterWait, MbarInitFence, FenceProxyAsync, BulkWaitRead,
              WgmmaWait, CpAsyncWait, Tcgen05Commit, TmaLoad, TmemWaitLd, GlobalAdd, GlobalWait)


def _edits(s) -> list:
    """The one-edit variants of one statement: (replacement tuple, what the edit is)."""
    out = []
    if isinstance(s, _DROPPABLE):
        out.append(((), "deleted"))
    if isinstance(s, SyncOp):
        for f in fields(s):
            v = getattr(s, f.name)
            if f.name in ("count", "bytes", "threads", "delta", "target") and \
                    isinstance(v, Const):
                step = {"count": 1, "bytes": 16, "threads": 32, "delta": 1, "target": 1}[f.name]
                for d in (-step, step):
                    if v.value + d > 0:
                        out.append(((replace(s, **{f.name: Const(v.value + d)}),),
                                    f"{f.name} {v.value} -> {v.value + d}"))
            if f.name == "n" and isinstance(v, int):
                out += [((replace(s, n=v + d),), f"n {v} -> {v + d}")
                        for d in (-1, 1) if 0 <= v + d < getattr(s, "depth", 9)]
            if f.name == "parity":
                out.append(((replace(s, parity=BinOp("^", v, Const(1))),), "parity flipped"))
    if type(s).__name__ == "GlobalRead":  # the next element, and a tensor one element shorter
        out.append(((_shifted_read(s),), "index + 1"))
        if isinstance(s.extent, Const) and s.extent.value > 1:
            out.append(((replace(s, extent=Const(s.extent.value - 1)),),
                        f"extent {s.extent.value} -> {s.extent.value - 1}"))
    return out


def _shifted_read(s):
    """A GlobalRead of the element after the one `s` reads (its index and its select, alike)."""
    new = BinOp("+", s.index, Const(1))

    def shift(e):
        if isinstance(e, Select):
            c = e.cond
            if isinstance(c, BinOp) and c.op == "==" and c.lhs == s.index:
                c = BinOp("==", new, c.rhs)
            return Select(c, shift(e.then), shift(e.else_))
        return e
    return replace(s, index=new, value=shift(s.value))


@dataclass(frozen=True)
class Edit:
    """One edit of a process body: `what` ("deleted", "count 2 -> 3", "swapped", ...) done to the
    statement `stmt` (for a swap: with the statement `other` that followed it)."""
    process: int
    what: str
    stmt: object
    other: object = None


def _mutate_body(body: tuple) -> list[tuple[tuple, str, object, object]]:
    out = []
    for i, s in enumerate(body):
        for rep, what in _edits(s):
            out.append((body[:i] + rep + body[i + 1:], what, s, None))
        if i + 1 < len(body) and (isinstance(s, SyncOp) or isinstance(body[i + 1], SyncOp)):
            out.append((body[:i] + (body[i + 1], s) + body[i + 2:], "swapped", s, body[i + 1]))
        inner = stmt_bodies(s)
        for j, b in enumerate(inner):
            for nb, what, a, other in _mutate_body(b):
                bodies = tuple(nb if k == j else x for k, x in enumerate(inner))
                out.append((body[:i] + (with_bodies(s, bodies),) + body[i + 1:], what, a, other))
    return out


def described_mutants(k: Kernel) -> list[tuple[Kernel, Edit]]:
    """Every kernel one edit away from `k` (per process body; identical instances share one),
    with the edit."""
    out = []
    for pi, p in enumerate(k.processes):
        for body, what, s, other in _mutate_body(p.body):
            procs = tuple(replace(q, body=body) if i == pi else q
                          for i, q in enumerate(k.processes))
            out.append((replace(k, name=f"{k.name}~{pi}.{len(out)}", processes=procs),
                        Edit(pi, what, s, other)))
    return out


def mutants(k: Kernel) -> list[Kernel]:
    """Every kernel one edit away from `k`."""
    return [m for m, _ in described_mutants(k)]


def read_ring(batches: int = 2, extent: int = 3, stages: int = 2, bug: str | None = None,
              values: tuple = (0, 2)) -> Kernel:
    """A two-role ring whose trip count per batch is read from global memory at a run-time index
    (examples/varlen_batches.py's synchronization): for batch b both roles read cnt[b]
    (`ld.launch`, elements cnt_0.. each a launch value in `values`) and hand that many tiles
    over full/empty. Bugs: `consumer-next` (the consumer reads cnt[b + 1]: a deadlock, a wait
    for tiles that never come, or a producer waiting on a slot never freed), `overread` (one
    batch more than the tensor has: invalid-operand)."""
    from warpspin.syncir.ir import Param
    from warpspin.syncir.ops import GlobalRead
    elems = [Var(f"cnt_{i}") for i in range(extent)]

    def read(off: int):
        idx = BinOp("+", Var("b"), Const(off)) if off else Var("b")
        value = elems[-1]
        for i in reversed(range(extent - 1)):
            value = Select(BinOp("==", idx, Const(i)), elems[i], value)
        return GlobalRead("n", "cnt", idx, Const(extent), value, _l(100 + off))
    trips = extent + 1 if bug == "overread" else batches
    init = Elect((For("i", 0, stages, (MbarInit(MBarRef("full", Var("i")), 1, _l(101)),
                                       MbarInit(MBarRef("empty", Var("i")), 1, _l(102)))),
                  MbarInitFence(_l(103))))
    full, empty = MBarRef("full", Var("s")), MBarRef("empty", Var("s"))
    producer = (init, BarSync(loc=_l(104)), For("b", 0, trips, (read(0), For("t", 0, Var("n"), (
        MbarWait(empty, Var("ph"), _l(105)), Elect((MbarArrive(full, 1, _l(106)),)),
        *_advance("s", "ph", stages)), loc=_l(107))), loc=_l(108)))
    consumer = (BarSync(loc=_l(104)), For("b", 0, trips, (
        read(1 if bug == "consumer-next" else 0), For("t", 0, Var("n"), (
            MbarWait(full, Var("ph"), _l(109)), Elect((MbarArrive(empty, 1, _l(110)),)),
            *_advance("s", "ph", stages)), loc=_l(111))), loc=_l(112)))
    return Kernel(f"read_ring_b{batches}_e{extent}" + (f"_{bug}" if bug else ""),
                  (Process("producer", producer, warps=(0, 1), init=(("ph", 1), ("n", 0))),
                   Process("consumer", consumer, warps=(1, 2), init=(("ph", 0), ("n", 0)))),
                  (MBarrierDecl("full", stages), MBarrierDecl("empty", stages)),
                  params=tuple(Param(f"cnt_{i}", *values) for i in range(extent)))
