"""cp.async (non-bulk) into staged buffers: the copies, their groups, and the reads of
the copied parts (PTX 9.7.9.24)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, NOLOC, UnOp, _lift_fields
from ..rules import Fail, Local, Rule, Set, When, add, all_of, sub
from .base import ALL, RESUME_MOVER, Footprint, SyncOp, _acc, _bit, _e, _gt, _ne, _plus, sync_op
from .base import SASS_OBLIGATION, SASS_SYNC_ORDER
from .tensormaps import _BulkGroups
from .buffers import _OneStage, TmaStore, _per_stage, _stage, _stage_problems, bs_group, bs_open
from .wgmma import _MaskGroups


# ----------------------------------------------------------------------------- cp.async buffers

def cp_open(buf: str) -> str:
    """The stages of `buf` the executing thread's uncommitted cp.async copies write (a mask)."""
    return f"_cpo_{buf}"


def cp_group(buf: str, i: int) -> str:
    """The stages its i-th most recent committed cp.async group writes (the last: or older)."""
    return f"_cpg{i}_{buf}"


def _cp_depth_of(st) -> int:
    return getattr(st, "depth", 0) if isinstance(st, (CpAsyncCommit, CpAsyncWait, SmemOwn)) else 0


def cp_pending(buf: str, depth: int) -> Expr:
    """The stages of `buf` with a copy of the executing thread not yet retired."""
    out: Expr = Local(cp_open(buf))
    for i in range(depth):
        out = BinOp("|", out, Local(cp_group(buf, i)))
    return out


def _copies_into(c, buf: str) -> bool:
    from ..ir import walk_stmts
    return any(isinstance(s, (CpAsync, SmemOwn)) and s.buf == buf
               for s in walk_stmts(c.kernel.processes[c.process].body))


def shared_copies(kernel, buf: str) -> bool:
    """Whether threads read `buf` through another partition than its cp.async copies' (a
    `shared` smem.own): its stages then count the instances with copies in flight (`cpw`)."""
    def compute():
        from ..ir import walk_stmts
        return frozenset(s.buf for p in kernel.processes for s in walk_stmts(p.body)
                         if isinstance(s, SmemOwn) and s.shared)
    return buf in kernel.memo("shared_copies", compute)


def cp_depth(c) -> int:
    """The cp.async groups told apart in the executing process (its commits' and waits' depth)."""
    from ..ir import walk_stmts
    return max((_cp_depth_of(s) for s in walk_stmts(c.kernel.processes[c.process].body)),
               default=0)


def cp_pending_at_exit(c) -> list:
    """An instance exiting with cp.async copies into a buffer not retired (PTX 9.7.9.24.3: only
    cp.async.wait_group / wait_all of the thread retires them; the CTA's shared memory may belong
    to another CTA once its threads have exited)."""
    out = []
    depth = cp_depth(c)
    for b in c.kernel.buffers:
        if _copies_into(c, b.name):
            label = b.label or b.name
            out.append(When(_ne(cp_pending(b.name, depth), 0), [Fail(
                "pending-at-exit", f"{{who}} exits while its cp.async copies into {label} may "
                "still be in flight: no cp.async.wait_group retired them")]))
    return out


def stores_pending_at_exit(c) -> list:
    """The storing instance of a buffer exiting with TMA stores of it not retired (PTX
    9.7.9.26.5.2: only cp.async.bulk.wait_group.read retires a store's read of shared memory, and
    the CTA's shared memory may belong to another CTA once its threads have exited)."""
    from ..ir import walk_stmts
    out = []
    for b in c.kernel.buffers:
        body = c.kernel.processes[c.process].body
        if c.process in b.storers and any(isinstance(x, TmaStore) and x.buf == b.name
                                          for x in walk_stmts(body)):
            label = b.label or b.name
            groups = [x for x in walk_stmts(body) if isinstance(x, _BulkGroups)]
            for s in range(b.stages):
                # its own stores (another storing thread of the CTA may still be storing)
                depth = max((x.depth for x in groups if (b.name, s) in x.stages), default=0)
                own = Local(bs_open(b.name, s))
                for i in range(depth):
                    own = _plus(own, Local(bs_group(b.name, s, i)))
                out.append(When(_gt(own, 0), [Fail(
                    "pending-at-exit", f"{{who}} exits while {{0}} TMA store(s) of stage {s} of "
                    f"{label} may still read it: no cp.async.bulk.wait_group.read retired them",
                    (own,))]))
    return out


class _CpGroups(_MaskGroups):
    """cp.async groups: masks of the stages the thread's copies write."""
    unit: ClassVar[str] = "cp.async"
    open_local = staticmethod(lambda b: cp_open(b))
    group_local = staticmethod(lambda b, i: cp_group(b, i))

    def footprint(self, k):
        return Footprint(())


@sync_op
@dataclass(frozen=True)
class CpAsync(_OneStage, SyncOp):
    """A cp.async (PTX 9.7.9.24.3, non-bulk, global -> shared) of the executing threads writing
    their own part of stage `stage` of buffer `buf` (a tiled copy's thread partition: no two
    threads write or read the same bytes through it) until a cp.async.wait_group of the
    issuing thread retires its group."""
    buf: str
    stage: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "cp.async"
    sass: ClassVar[str] = r"LDGSTS\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.24.3 (cp.async)"
    summary: ClassVar[str] = ("the stage joins the thread's open cp.async group (a bit mask); "
                              "of a buffer read `shared`: cpw += 1 unless the thread already "
                              "holds the stage in a mask")
    # R6, R8, R11: it writes only its own locals and a stage's cpw (no mbarrier, counter or
    # word); R10 mover: no guard, and no object unless the buffer is read `shared` (facts_in)
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    def own_locals(self, pc):
        return (cp_open(self.buf),)

    def facts_in(self, kernel, process):
        """Not an R10 mover where it counts in `cpw`, which other threads' reads check."""
        if shared_copies(kernel, self.buf):
            return self.facts() - {RESUME_MOVER}
        return self.facts()

    def footprint(self, k):
        shared = ((_acc("buffer-stage", "rw", "cta"),) if shared_copies(k, self.buf) else ())
        return Footprint(shared, retired_by="cp.async.wait_group of the issuing thread")

    def rule(self, c):
        open_ = Local(cp_open(self.buf))
        counted = shared_copies(c.kernel, self.buf)
        pending = cp_pending(self.buf, cp_depth(c))

        def body(s):
            out = []
            if counted:  # the thread's first copy of the stage not yet retired
                out.append(When(UnOp("not", _bit(pending, s)),
                                [add(_stage(c, self.buf, Const(s), "cpw"), 1)]))
            return out + [Set(open_, BinOp("|", open_, Const(1 << s)))]
        return Rule(_per_stage(c, self.buf, self.stage, "copies into", body))


@sync_op
@dataclass(frozen=True)
class CpAsyncCommit(_CpGroups, SyncOp):
    """cp.async.commit_group: the executing thread's uncommitted cp.async copies become its newest
    cp.async-group."""
    bufs: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "cp.async.commit_group"
    sass: ClassVar[str] = r"LDGDEPBAR\b"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.24.4 (cp.async.commit_group)"
    summary: ClassVar[str] = ("per buffer the thread copies into: the group masks shift by one (the "
                              "oldest absorbs the next), the newest gets the open copies")
    # R10 mover: it moves its own masks
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls(("sX",), 1)

    def fmt(self): return "cp.async.commit_group" + self._told()

    def problems(self, k): return self._problems(k)

    def rule(self, c):
        body = []
        for b in self.bufs:
            g = [Local(cp_group(b, i)) for i in range(self.depth)]
            first = Local(cp_open(b))
            if self.depth > 1:
                body.append(Set(g[-1], BinOp("|", g[-1], g[-2])))
                for i in range(self.depth - 2, 0, -1):
                    body.append(Set(g[i], g[i - 1]))
                body.append(Set(g[0], first))
            else:
                body.append(Set(g[0], BinOp("|", g[0], first)))
            body.append(Set(first, Const(0)))
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class CpAsyncWait(_CpGroups, SyncOp):
    """cp.async.wait_group n: the executing thread waits until at most its n newest cp.async
    groups are pending; the copies of every older group are complete and visible to it. Copies
    not yet committed are not waited for. Never blocks in the model (the copies finish by
    themselves)."""
    n: int = 0
    bufs: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "cp.async.wait_group"
    sass: ClassVar[str] = r"DEPBAR\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.24.5 (cp.async.wait_group)"
    summary: ClassVar[str] = ("per buffer the thread copies into: the masks of the groups older "
                              "than the n newest are cleared; of a buffer read `shared`, cpw -= 1 "
                              "per stage no kept mask holds any more")
    # R10 mover unless it lowers a `shared` buffer's cpw (facts_in)
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    def facts_in(self, kernel, process):
        if any(shared_copies(kernel, b) for b in self.bufs):
            return self.facts() - {RESUME_MOVER}
        return self.facts()

    @classmethod
    def example(cls):
        return cls(0, ("sX",), 1)

    def fmt(self): return self._fmt_wait()

    def problems(self, k): return self._wait_problems(k)

    def rule(self, c):
        body = []
        for b in self.bufs:
            if shared_copies(c.kernel, b) and self.n < self.depth:
                # a stage none of the kept groups (nor the open copies) holds is retired
                kept = cp_pending(b, self.n)
                gone: Expr = Const(0)
                for i in range(self.n, self.depth):
                    gone = BinOp("|", gone, Local(cp_group(b, i)))
                for s in range(c.kernel.buffer(b).stages):
                    body.append(When(all_of(_bit(gone, s), UnOp("not", _bit(kept, s))),
                                     [sub(_stage(c, b, Const(s), "cpw"), 1)]))
        return Rule(body + [Set(Local(cp_group(b, i)), Const(0))
                            for b in self.bufs for i in range(self.n, self.depth)])


@sync_op
@dataclass(frozen=True)
class SmemOwn(SyncOp):
    """The executing threads read (or, `write`, write) their own part of stage `stage` of buffer
    `buf` through the generic proxy, through the same thread partition their cp.async copies
    write: only their own copies touch those bytes. One of them not yet retired by a
    cp.async.wait_group of the thread makes it a race. `depth`: the groups told apart."""
    buf: str
    stage: Expr
    write: bool = False
    depth: int = 1
    loc: Loc = NOLOC
    shared: bool = False
    mnemonic: ClassVar[str] = "smem.own"
    sass: ClassVar[str] = r"(LDS|STS|LD|ST)\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.24.3 (cp.async), 9.7.9.8-9 (ld.shared, st.shared)"
    summary: ClassVar[str] = ("the stage in the thread's open cp.async group or one of its "
                              "committed groups: race (its own copy may still write the bytes); "
                              "`shared` (a read through another partition, of bytes other "
                              "threads copy): cpw > 0 on the stage: race")
    # R6, R8, R11: it reads only its own locals and, `shared`, the stage's cpw (docs/semantics.md)
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("sX", Const(0))

    def __post_init__(self): _lift_fields(self, "stage")

    def fmt(self):
        return (f"smem.own {'write' if self.write else 'read'} {self.buf}[{_e(self.stage)}], "
                f"depth={self.depth}" + (", shared" if self.shared else ""))

    def problems(self, k):
        out = _stage_problems(k, self.buf, self.stage)
        if self.depth < 1:
            out.append(f"smem.own with depth {self.depth}")
        if self.shared and self.write:
            out.append("smem.own shared is a read (another partition's writes are not followed)")
        return out

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "read", "cta"),) if self.shared else ())

    def rule(self, c):
        label = c.kernel.buffer(self.buf).label or self.buf
        pending = cp_pending(self.buf, self.depth)
        what = "writes" if self.write else "reads"

        def body(s):
            if self.shared:
                cpw = _stage(c, self.buf, Const(s), "cpw")
                return [When(_gt(cpw, 0), [Fail(
                    "race", f"{{who}} reads stage {s} of {label} while cp.async copies of {{0}} "
                    "thread(s) into it may still be in flight: no cp.async.wait_group of the "
                    "copying thread, and nothing after it, orders the read after them", (cpw,))])]
            return [When(_bit(pending, s), [Fail(
                "race", f"{{who}} {what} its part of stage {s} of {label} while its own cp.async "
                "copies into it may still be in flight: no cp.async.wait_group of this thread "
                "retired them before the access")])]
        return Rule(_per_stage(c, self.buf, self.stage, what, body))
