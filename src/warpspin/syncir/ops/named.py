"""Named barriers: bar.sync (and its resume), bar.arrive (PTX 9.7.13.1); bar.warp.sync
(9.7.13.2)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, NOLOC, Select, _lift_fields
from ..objects import LIMITS
from ..rules import Fail, Live, Local, NamedField, Rule, Set, When, add, any_of
from .base import (ALL, FUSION_RELEASE, RESUME_MOVER, Footprint, SyncOp, _acc, _e, _eq, _ge, _gt,
                   _le, _lt, _ne, complete_named, snap_var, sync_op)
from .base import SASS_OBLIGATION, SASS_SYNC_ORDER


# ----------------------------------------------------------------------------- named barriers

def _named_arrive(c, op, sync: bool) -> list:
    from .buffers import buffer_releases
    T = c.threads
    bid = op.barrier_id
    nb = lambda f: NamedField(c.cta, bid, f)  # noqa: E731
    out = []
    if not isinstance(bid, Const):
        out.append(When(any_of(_lt(bid, 0), _ge(bid, LIMITS.named_barriers)),
                        [Fail("invalid-operand", "{who} names barrier {0}, outside 0.."
                              f"{LIMITS.named_barriers - 1}", (bid,))]))
    if T % 32 != 0:
        out.append(Fail("divergent-barrier", f"{{who}} ({T} threads, not whole warps) executes "
                        "aligned barrier {0}: every thread of the warp must execute it", (bid,)))
        return out
    want = Const(-1) if op.threads is None else op.threads
    if op.threads is not None:
        out.append(When(any_of(_le(want, 0), _ne(BinOp("%", want, Const(32)), 0)),
                        [Fail("arrival-mismatch", "barrier {0} thread count {1} is not a positive "
                              "multiple of 32", (bid, want))]))
    out.append(When(_eq(nb("exp"), 0), [Set(nb("exp"), want)], [
        When(_ne(nb("exp"), want), [Fail("arrival-mismatch", "{who} arrives on barrier {0} "
                                         "expecting {1:threads}, but this generation was started "
                                         "expecting {2:threads}", (bid, want, nb("exp")))])]))
    if sync:
        out.append(Set(Local(snap_var(c.pc)), nb("gen")))
    out += buffer_releases(c, bid, sync)
    target = Select(_eq(nb("exp"), -1), Live(Const(c.cta)), nb("exp"))
    out += [add(nb("arr"), T),
            When(_gt(nb("arr"), target), [Fail("arrival-mismatch", "barrier {0}: {1} threads "
                                               "arrive, more than the {2} it counts",
                                               (bid, nb("arr"), target))]),
            When(_eq(nb("arr"), target), complete_named(c, bid))]
    return out


def _named_footprint() -> Footprint:
    return Footprint((_acc("named-barrier", "rw", "cta"), _acc("live-threads", "read", "cta"),
                      _acc("mbarrier", "rw", "cta")))


@sync_op
@dataclass(frozen=True)
class BarSync(SyncOp):
    """bar.sync / barrier.sync `barrier_id`, `threads` (None: every thread of the CTA, which is
    also the CTA barrier __syncthreads). Flattened into the arrival (this op) and the wait
    (`BarSyncResume`)."""
    barrier_id: Expr = Const(0)
    threads: Expr | None = None
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "bar.sync"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"BAR\.(SYNC|RED)"
    hb_rule: ClassVar[str | None] = "named.arrive"
    ptx: ClassVar[str] = "9.7.13.1"
    summary: ClassVar[str] = ("arrive (whole warps only, else divergent-barrier; the first "
                              "arrival fixes the count, a different one is arrival-mismatch; "
                              "more arrivals than counted: arrival-mismatch); at the count "
                              "(or every live thread, without one): gen += 1 and the CTA's "
                              "fenced inits are published; then wait for gen to move")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(Const(1), Const(64))

    def __post_init__(self): _lift_fields(self, "barrier_id", "threads")

    def own_locals(self, pc): return (snap_var(pc),)

    def resume(self, snap): return BarSyncResume(self.barrier_id, snap, self.loc)

    def fmt(self):
        t = "" if self.threads is None else f", threads={_e(self.threads)}"
        return f"bar.sync {_e(self.barrier_id)}{t}"

    def footprint(self, k):
        f = _named_footprint()
        return Footprint(f.accesses, blocking=True)

    def rule(self, c):
        return Rule(_named_arrive(c, self, sync=True))


@sync_op
@dataclass(frozen=True)
class BarSyncResume(SyncOp):
    """The wait half of a `BarSync` at the previous pc (made by the flattener)."""
    barrier_id: Expr
    snap: str
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "bar.sync.resume"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "named.resume"
    ptx: ClassVar[str] = "9.7.13.1"
    summary: ClassVar[str] = "blocks until the barrier's gen differs from the one seen at arrival"
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls(Const(1), snap_var(0))

    def __post_init__(self): _lift_fields(self, "barrier_id")

    def fmt(self): return f"bar.sync {_e(self.barrier_id)} (resume)"

    def footprint(self, k):
        return Footprint((_acc("named-barrier", "read", "cta"),), blocking=True)

    def rule(self, c):
        gen = NamedField(c.cta, self.barrier_id, "gen")
        return Rule([], guard=_ne(gen, Local(self.snap)))


@sync_op
@dataclass(frozen=True)
class BarArrive(SyncOp):
    """bar.arrive `barrier_id`, `threads`: counts the executing threads, does not wait (PTX
    requires the thread count)."""
    barrier_id: Expr
    threads: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "bar.arrive"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"BAR\.ARV"
    hb_rule: ClassVar[str | None] = "named.arrive"
    ptx: ClassVar[str] = "9.7.13.1"
    summary: ClassVar[str] = "the arrival of bar.sync, without the wait"
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_RELEASE}

    @classmethod
    def example(cls):
        return cls(Const(1), Const(64))

    def __post_init__(self): _lift_fields(self, "barrier_id", "threads")

    def fmt(self): return f"bar.arrive {_e(self.barrier_id)}, threads={_e(self.threads)}"

    def problems(self, k):
        if self.threads is None:
            return ["bar.arrive needs a thread count (PTX 9.7.13.1: a non-zero thread count is "
                    "required for barrier.arrive)"]
        return []

    def footprint(self, k):
        return _named_footprint()

    def rule(self, c):
        return Rule(_named_arrive(c, self, sync=False))


@sync_op
@dataclass(frozen=True)
class WarpSync(SyncOp):
    """bar.warp.sync with every lane in its member mask (`cute.arch.sync_warp()`, CUDA's
    `__syncwarp()`), executed by the whole warp: each lane waits for the others, and the memory
    accesses of every lane before it are ordered before every lane's after it (PTX 9.7.13.2).
    The model's thread is the warp, whose lanes move together: the step changes nothing but its
    pc (R13 drops it), except by the only storing thread of a staged buffer it writes, where it
    hands its lanes' writes to itself (ops/buffers.py, `buffer_self_handover`). The checks of
    hand-offs between lanes of one warp read it (syncir/unchecked.py: a flag's lane-subset
    release and acquire; extract/data.py: shared data)."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "bar.warp.sync"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.13.2"
    summary: ClassVar[str] = ("nothing (the lanes of the model's warp move together); by the "
                              "only storing thread of a staged buffer it writes: its unreleased "
                              "writes of each stage leave pend (unfenced ones: raw += 1)")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),) if k.buffers else ())

    def rule(self, c):
        from .buffers import buffer_self_handover
        return Rule(buffer_self_handover(c))
