"""Staged buffers: stage state and the hand-over of generic writes on the buffer's
barrier; smem.write, fence.proxy.async, TMA stores (PTX 9.7.9.9, 9.7.9.25, 9.7.13.4)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Const, Expr, Loc, NOLOC, _lift_fields
from ..objects import storer_field
from ..rules import BufField, Fail, Local, Rule, Set, When, add, all_of, any_of, sub
from .base import (ALL, RESUME_MOVER, Footprint, SyncOp, _acc, _e, _eq, _ge, _gt, _lt, _minus,
                   _plus, sync_op)
from .base import SASS_ASYNC_ISSUE, SASS_OBLIGATION
from .named import BarArrive, BarSync
from .copies import TmaLoad


# ----------------------------------------------------------------------------- staged buffers

def bs_open(buf: str, stage: int) -> str:
    """The executing thread's TMA stores of `buf`'s stage not yet in a bulk async-group."""
    return f"_bso{stage}_{buf}"


def bs_group(buf: str, stage: int, i: int) -> str:
    """Its stores of that stage in the i-th most recent committed group (the last: or older)."""
    return f"_bsg{i}_{stage}_{buf}"


def bw_unfenced(buf: str, stage: int) -> str:
    """1: the instance wrote the stage since its last fence.proxy.async."""
    return f"_bwu{stage}_{buf}"


def bw_fenced(buf: str, stage: int) -> str:
    """1: it wrote the stage and fenced, and has not released the write yet."""
    return f"_bwf{stage}_{buf}"


def bw_released_raw(buf: str) -> str:
    """1: it once released a write of the buffer without fencing it first."""
    return f"_bwr_{buf}"


def br_unfenced(buf: str, stage: int) -> str:
    """1: the instance read or wrote the stage through the generic proxy since its last
    fence.proxy.async (it is counted in the stage's `gr`)."""
    return f"_bru{stage}_{buf}"


def touches_filled(kernel, process: int, buf: str) -> bool:
    """Whether process `process` reads or writes staged buffer `buf` through the generic proxy
    and some TMA load (async proxy) fills it: those accesses then count in `gr` until a proxy
    fence."""
    return touches_filled_in(kernel, kernel.processes[process].body, buf)


def touches_filled_in(kernel, body, buf: str) -> bool:
    from ..ir import walk_stmts
    from .reads import SmemRead
    return any((isinstance(s, SmemRead) and buf in {r[0] for r in s.reads})
               or (isinstance(s, SmemWrite) and s.buf == buf) for s in walk_stmts(body)) and \
        any(isinstance(s, TmaLoad) and s.dst == buf
            for p in kernel.processes for s in walk_stmts(p.body))


def _count_generic(c, buf: str, s: int) -> list:
    """A generic-proxy access of stage s of a buffer TMA loads fill: the instance's first since
    its last proxy fence counts it in the stage's `gr`, which a refill reads."""
    if not touches_filled(c.kernel, c.process, buf):
        return []
    r, gr = Local(br_unfenced(buf, s)), BufField(buf, Const(c.cta), Const(s), "gr")
    return [When(_eq(r, 0), [add(gr, 1), Set(r, Const(1))])]


def _stage_problems(k, buf: str, stage: Expr) -> list[str]:
    try:
        n = k.buffer(buf).stages
    except KeyError:
        return [f"names {buf!r}, not a declared staged buffer"]
    if isinstance(stage, Const) and not 0 <= stage.value < n:
        return [f"stage {stage.value} of {buf}, which has {n}"]
    return []


def _writes_buffer(c, buf: str) -> bool:
    """Whether the executing process writes staged buffer `buf` (it then has its write bits)."""
    from ..ir import walk_stmts
    return any(isinstance(s, SmemWrite) and s.buf == buf
               for s in walk_stmts(c.kernel.processes[c.process].body))


def _stage(c, buf: str, stage: Expr, field: str) -> BufField:
    return BufField(buf, Const(c.cta), stage, field)


def _per_stage(c, buf: str, stage: Expr, what: str, body) -> list:
    """`body(s)` for the stage `stage` names (a When per stage when it is computed), after the
    check that it names one."""
    n = c.kernel.buffer(buf).stages
    if isinstance(stage, Const):
        return body(stage.value)
    label = c.kernel.buffer(buf).label or buf
    return [When(any_of(_lt(stage, 0), _ge(stage, n)),
                 [Fail("invalid-operand", f"{{who}} {what} stage {{0}} of {label}, which has {n}",
                       (stage,))]),
            *(When(_eq(stage, s), body(s)) for s in range(n))]


def _in_flight_fill(c, buf: str, s: int, what: str) -> When:
    label = c.kernel.buffer(buf).label or buf
    fly = _stage(c, buf, Const(s), "fly")
    return When(_gt(fly, 0), [Fail(
        "race", f"{{who}} {what} stage {s} of {label} while {{0}} TMA load(s) into it are in "
        "flight: only the completion of their bytes on the stage's mbarrier (a wait on it) "
        "orders the read after them", (fly,))])


def buffer_releases(c, bid: Expr, sync: bool) -> list:
    """An arrive on named barrier `bid`: on a buffer's barrier, the instance's unreleased writes
    of it join the open generation's batches (unfenced ones: cu, and the instance remembers it
    released one raw); a bar.sync by the storing process marks that it waits in the generation."""
    out = []
    for b in c.kernel.buffers:
        if _writes_buffer(c, b.name) and b.other_barriers:
            label = b.label or b.name
            pending = any_of(*(_eq(Local(f(b.name, s)), 1) for s in range(b.stages)
                               for f in (bw_unfenced, bw_fenced)))
            other = any_of(*(_eq(bid, i) for i in b.other_barriers))
            out.append(When(all_of(other, pending), [Fail(
                "unsupported", f"{{who}} releases a write of {label} on named barrier {{0}}, "
                f"which the storing warp also waits on; hand-overs through barrier {b.barrier} "
                "alone are modelled", (bid,))]))
        if b.barrier is None:
            continue
        body = []
        if _writes_buffer(c, b.name):
            for s in range(b.stages):
                u, f = Local(bw_unfenced(b.name, s)), Local(bw_fenced(b.name, s))
                cu, cf = _stage(c, b.name, Const(s), "cu"), _stage(c, b.name, Const(s), "cf")
                body += [When(_eq(u, 1), [batches_bound(cu, Const(1)), add(cu, 1),
                                          Set(Local(bw_released_raw(b.name)), Const(1))],
                              [When(_eq(f, 1), [batches_bound(cf, Const(1)), add(cf, 1)])]),
                         Set(u, Const(0)), Set(f, Const(0))]
        if sync and c.process in b.storers:
            slot = storer_slot(c.kernel, b, c.process)
            body.append(Set(BufField(b.name, Const(c.cta), None, storer_field("swait", slot)),
                            Const(1)))
        if not body or (isinstance(bid, Const) and bid.value != b.barrier):
            continue
        out += body if isinstance(bid, Const) else [When(_eq(bid, b.barrier), body)]
    return out


def self_handover_buffers(kernel, process: int) -> tuple[str, ...]:
    """The buffers `process` writes and alone stores in its CTA: a `bar.warp.sync` of it
    hands its lanes' writes of them to itself (`buffer_self_handover`)."""
    def find():
        from ..ir import walk_stmts
        body = kernel.processes[process].body
        cta = kernel.processes[process].cta
        return tuple(b.name for b in kernel.buffers
                     if storers_in_cta(kernel, b, cta) == [process] and any(
                         isinstance(st, SmemWrite) and st.buf == b.name for st in walk_stmts(body)))
    return kernel.memo(("self_handover", process), find)


def buffer_self_handover(c) -> list:
    """bar.warp.sync by the only storing thread of a buffer in its CTA, which writes it too (a
    warp; storers are one instance each): every lane's access before it is ordered before every
    lane's after it (PTX 9.7.13.2), so its unreleased writes of each stage are ordered before
    its own later stores: its batch leaves `pend`, and an unfenced one is handed over raw
    (its `fence.proxy.async` before the store clears that)."""
    out = []
    for name in self_handover_buffers(c.kernel, c.process):
        b = c.kernel.buffer(name)
        raw = storer_field("raw", storer_slot(c.kernel, b, c.process))
        for s in range(b.stages):
            u, f = Local(bw_unfenced(name, s)), Local(bw_fenced(name, s))
            st = lambda fld, s=s: _stage(c, name, Const(s), fld)  # noqa: E731
            out += [When(any_of(_eq(u, 1), _eq(f, 1)), [sub(st("pend"), 1)]),
                    When(_eq(u, 1), [batches_bound(st(raw), Const(1)), add(st(raw), 1)]),
                    Set(u, Const(0)), Set(f, Const(0))]
    return out


def buffer_handover(c, bid: Expr) -> list:
    """A generation of named barrier `bid` completes: on a buffer's barrier, its batches are
    released (pend drops by them), and for each storing thread of the CTA handed over if it
    waited in this generation (unfenced ones become its raw), else lost to it where no fence is
    known to lie on their way to its stores (the unfenced ones; all of them where a writer may
    synchronize between a write and its fence). A fenced batch lost to a storing thread reaches
    its stores only through other synchronization: the stage's `unret` check of the write
    makes every store that the write is not ordered before a race (docs/semantics.md, "Several
    storing threads")."""
    out = []
    for b in c.kernel.buffers:
        if b.barrier is None or (isinstance(bid, Const) and bid.value != b.barrier):
            continue
        body = []
        for s in range(b.stages):
            st = lambda f, s=s: _stage(c, b.name, Const(s), f)  # noqa: E731
            body.append(Set(st("pend"), _minus(st("pend"), _plus(st("cf"), st("cu")))))
        unknown = (lambda st: st("cu")) if fence_first(c.kernel, b.name) else \
            (lambda st: _plus(st("cf"), st("cu")))
        for slot, _ in enumerate(storers_in_cta(c.kernel, b, c.cta)):
            swait = BufField(b.name, Const(c.cta), None, storer_field("swait", slot))
            raw, lost = storer_field("raw", slot), storer_field("lost", slot)
            given, gone = [], []
            for s in range(b.stages):
                st = lambda f, s=s: _stage(c, b.name, Const(s), f)  # noqa: E731
                given += [batches_bound(st(raw), st("cu")), add_expr(st(raw), st("cu"))]
                gone += [batches_bound(st(lost), unknown(st)), add_expr(st(lost), unknown(st))]
            body += [When(_eq(swait, 1), given, gone), Set(swait, Const(0))]
        body += [Set(_stage(c, b.name, Const(s), f), Const(0))
                 for s in range(b.stages) for f in ("cf", "cu")]
        out += body if isinstance(bid, Const) else [When(_eq(bid, b.barrier), body)]
    return out


def storers_in_cta(kernel, b, cta: int) -> list[int]:
    """The storing processes of buffer `b` in CTA `cta`, in slot order."""
    return [i for i in b.storers if kernel.processes[i].cta == cta]


def storer_slot(kernel, b, process: int) -> int:
    """Which storing thread of its CTA `process` is (0 or 1; objects.storer_field)."""
    return storers_in_cta(kernel, b, kernel.processes[process].cta).index(process)


def fence_first(kernel, buf: str) -> bool:
    """Whether every write of `buf` meets its writer's next fence.proxy.async (or a release on
    the buffer's barrier, which hands it over unfenced) before any other synchronization op of
    the writer, on every path (loops twice): a fence of such a write then lies on every path
    along which the write is ordered before anything."""
    bid = kernel.buffer(buf).barrier
    return kernel.memo(("fence_first", buf), lambda: all(
        _fence_first_in(p.body, buf, bid) for p in kernel.processes))


def _fence_first_in(body, buf: str, bid) -> bool:
    from .reads import _FENCE_NEUTRAL
    return fence_meets_first(
        body, lambda st: isinstance(st, SmemWrite) and st.buf == buf,
        # fenced, or released unfenced (then lost as such)
        lambda st: isinstance(st, FenceProxyAsync) or (
            isinstance(st, (BarSync, BarArrive)) and st.barrier_id == Const(bid)),
        _FENCE_NEUTRAL)


def fence_meets_first(body, writes, clears, neutral) -> bool:
    """Whether, on every path of `body` (a loop's body twice), each statement `writes` accepts
    meets one `clears` accepts before any SyncOp that is not an instance of `neutral`."""
    from ..ir import For, If, Lanes, While

    def scan(stmts, pending: bool):
        for st in stmts:
            if writes(st):
                pending = True
            elif clears(st):
                pending = False
            elif isinstance(st, (For, While)):
                for _ in range(2):
                    pending = scan(st.body, pending)
                    if pending is None:
                        return None
            elif isinstance(st, If):
                a, b = scan(st.then, pending), scan(st.else_, pending)
                if a is None or b is None:
                    return None
                pending = a or b
            elif isinstance(st, Lanes):
                pending = scan(st.body, pending)
                if pending is None:
                    return None
            elif isinstance(st, SyncOp) and pending and not isinstance(st, neutral):
                return None
        return pending
    return scan(tuple(body), False) is not None


def add_expr(place, value: Expr) -> Set:
    return Set(place, _plus(place, value))


def batches_bound(place, value: Expr) -> When:
    """A count of write batches that would leave its declared range (objects.BUFFER_STAGE):
    copy-bound (model bound), before the count is raised by `value`."""
    from ..objects import BUFFER_STAGE
    hi = BUFFER_STAGE.field(place.field).hi
    return When(_gt(_plus(place, value), hi), [Fail(
        "copy-bound", f"more than {hi} write batches of one stage pending (model bound)")])


class _OneStage:
    """What an op on one stage of one staged buffer (`buf`, `stage`) shares."""

    @classmethod
    def example(cls):
        return cls("sD", Const(0))

    def __post_init__(self): _lift_fields(self, "stage")

    def fmt(self): return f"{self.mnemonic} {self.buf}[{_e(self.stage)}]"

    def problems(self, k): return _stage_problems(k, self.buf, self.stage)


@sync_op
@dataclass(frozen=True)
class SmemWrite(_OneStage, SyncOp):
    """The executing threads write stage `stage` of staged buffer `buf` through the generic
    proxy (st.shared, stmatrix, a register-to-shared copy). A TMA store still reading the stage
    makes it a race. The write is then pending until the instance releases it on the buffer's
    barrier in a generation the storing thread waits in."""
    buf: str
    stage: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "smem.write"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"(STS|STSM|ST|STAS)\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.9 (st.shared), 9.7.9.17 (stmatrix)"
    summary: ClassVar[str] = ("unret > 0 on the stage: race (a TMA store still reads it); fly > 0 "
                              "or wrd > 0: race (a TMA load still fills it, a wgmma still reads "
                              "it); a new "
                              "batch (pend += 1) unless the instance's earlier write of the stage "
                              "is not yet released; the write is unfenced; of a stage TMA loads "
                              "fill: gr += 1 unless already counted (until its fence)")
    # R6, R8, R11: it reads and writes only staged-buffer state and its own locals (docs/semantics.md)
    proven: ClassVar[frozenset[str]] = ALL

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),))

    def rule(self, c):
        label = c.kernel.buffer(self.buf).label or self.buf

        def body(s):
            u, f = Local(bw_unfenced(self.buf, s)), Local(bw_fenced(self.buf, s))
            unret = _stage(c, self.buf, Const(s), "unret")
            wrd = _stage(c, self.buf, Const(s), "wrd")
            return [When(_gt(unret, 0), [Fail(
                        "race", f"{{who}} writes stage {s} of {label} while {{0}} TMA store(s) "
                        "of it may still read it: no cp.async.bulk.wait_group.read of the "
                        "storing thread retired them before this write", (unret,))]),
                    _in_flight_fill(c, self.buf, s, "writes"),
                    When(_gt(wrd, 0), [Fail(
                        "race", f"{{who}} writes stage {s} of {label} while {{0}} wgmma read(s) "
                        "of it are not retired: no wgmma.wait_group of the reading warp retired "
                        "them before this write", (wrd,))]),
                    When(all_of(_eq(u, 0), _eq(f, 0)),
                         [batches_bound(_stage(c, self.buf, Const(s), "pend"), Const(1)),
                          add(_stage(c, self.buf, Const(s), "pend"), 1)]),
                    Set(u, Const(1)), *_count_generic(c, self.buf, s)]
        return Rule(_per_stage(c, self.buf, self.stage, "writes", body))


@sync_op
@dataclass(frozen=True)
class FenceProxyAsync(SyncOp):
    """fence.proxy.async(.shared::cta): the executing thread's earlier generic-proxy writes are
    ordered before async-proxy accesses that follow the fence in causality order; by the
    storing thread, also every write already handed over to it (PTX 9.7.13.4; the fence may sit
    anywhere between the write and the TMA store in causality order). Its earlier generic
    reads, too, are ordered before async-proxy writes (a TMA load refilling the stage) that
    follow the fence in causality order: without it the refill may overwrite bytes still being
    read (the write-after-read of the proxies)."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "fence.proxy.async"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"FENCE\.VIEW\.ASYNC"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.13.4"
    summary: ClassVar[str] = ("the instance's unfenced writes of every buffer stage become fenced "
                              "(after a raw release: unsupported); by the storing process: raw = "
                              "0 on every stage of its buffers; its unfenced generic accesses of "
                              "a stage TMA loads fill: gr -= 1")
    # R6, R8, R11: it reads and writes only staged-buffer state and its own locals (docs/semantics.md)
    # R10 mover: it writes its own locals, and `raw`, which only the storing thread's own ops
    # and a hand-over while it waits touch (docs/semantics.md)
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return "fence.proxy.async"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),))

    def facts_in(self, kernel, process):
        """Not an R10 mover in a process whose generic accesses of a TMA-filled stage it fences:
        it then lowers the stage's `gr`, which a TMA load into the stage reads."""
        if any(touches_filled(kernel, process, b.name) for b in kernel.buffers):
            return self.facts() - {RESUME_MOVER}
        return self.facts()

    def rule(self, c):
        body = []
        for b in c.kernel.buffers:
            label = b.label or b.name
            if touches_filled(c.kernel, c.process, b.name):
                for s in range(b.stages):
                    r = Local(br_unfenced(b.name, s))
                    body.append(When(_eq(r, 1), [sub(_stage(c, b.name, Const(s), "gr"), 1),
                                                 Set(r, Const(0))]))
            if _writes_buffer(c, b.name):
                units = [Local(bw_unfenced(b.name, s)) for s in range(b.stages)]
                body.append(When(all_of(_eq(Local(bw_released_raw(b.name)), 1),
                                        any_of(*(_eq(u, 1) for u in units))), [Fail(
                    "unsupported", f"{{who}} fences writes of {label} after it released an "
                    "unfenced write of it: whether the later release orders the earlier write "
                    "before the TMA store is not modelled")]))
                for s, u in enumerate(units):
                    body.append(When(_eq(u, 1), [Set(Local(bw_fenced(b.name, s)), Const(1)),
                                                 Set(u, Const(0))]))
            if c.process in b.storers:
                raw = storer_field("raw", storer_slot(c.kernel, b, c.process))
                body += [Set(_stage(c, b.name, Const(s), raw), Const(0))
                         for s in range(b.stages)]
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class TmaStore(_OneStage, SyncOp):
    """A TMA store (cp.async.bulk.tensor shared::cta -> global) reading stage `stage` of staged
    buffer `buf` until a cp.async.bulk.wait_group.read of the issuing thread retires its bulk
    async-group. Every write of the stage must be handed over to the storing thread before:
    written, fenced (fence.proxy.async) and released on the buffer's barrier in a generation the
    storing thread waited in."""
    buf: str
    stage: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tma.store"
    sass_covered: ClassVar[str] = SASS_ASYNC_ISSUE
    sass: ClassVar[str] = r"UTMASTG|UTMAREDG|UBLKCP|UBLKRED"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.25.5.2 (cp.async.bulk.tensor), 9.7.13.4"
    summary: ClassVar[str] = ("fly > 0: race (a TMA load still fills the stage); pend > 0 on the "
                              "stage: race (a write not ordered before the "
                              "store); lost > 0: unsupported; raw > 0: proxy-race (handed over "
                              "without fence.proxy.async; lost1/raw1 for the CTA's second "
                              "storing thread); then unret += threads, and the "
                              "thread's open stores of the stage too")
    # R6, R8, R11: it reads and writes only staged-buffer state and its own locals (docs/semantics.md)
    proven: ClassVar[frozenset[str]] = ALL

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta", proxy="async"),),
                         retired_by="cp.async.bulk.wait_group.read of the issuing thread")

    def rule(self, c):
        b = c.kernel.buffer(self.buf)
        label = b.label or self.buf
        T = c.threads
        slot = storer_slot(c.kernel, b, c.process) if c.process in b.storers else 0
        raw, lost = storer_field("raw", slot), storer_field("lost", slot)

        def body(s):
            st = lambda f: _stage(c, self.buf, Const(s), f)  # noqa: E731
            return [_in_flight_fill(c, self.buf, s, "issues a TMA store of"),
                    When(_gt(st("pend"), 0), [Fail(
                        "race", f"{{who}} issues a TMA store of stage {s} of {label} while {{0}} "
                        "write(s) of it are not ordered before the store: their writers have not "
                        "released them on the buffer's named barrier in a generation this thread "
                        "waited in", (st("pend"),))]),
                    When(_gt(st(lost), 0), [Fail(
                        "unsupported", f"{{who}} issues a TMA store of stage {s} of {label} after "
                        "a write of it was released with no fence.proxy.async known on its way "
                        "in a barrier generation this thread did not wait in: whether a fence "
                        "orders it before the store through other threads is not followed")]),
                    When(_gt(st(raw), 0), [Fail(
                        "proxy-race", f"{{who}} issues a TMA store (async proxy) of stage {s} of "
                        f"{label}, written through the generic proxy and handed over with no "
                        "fence.proxy.async between the write and the store")]),
                    add(st("unret"), T), add(Local(bs_open(self.buf, s)), T)]
        return Rule(_per_stage(c, self.buf, self.stage, "stores", body))
