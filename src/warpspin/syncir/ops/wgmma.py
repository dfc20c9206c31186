"""wgmma groups and register fragments: wgmma.commit_group, wgmma.wait_group, wgmma.acc,
acc.access, wgmma.fence (PTX 9.7.15.5-6)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, NOLOC
from ..rules import Fail, Local, Rule, Set, When, all_of, sub
from .base import ALL, RESUME_MOVER, Footprint, SyncOp, _acc, _band, _bit, _eq, _ne, sync_op
from .buffers import _stage
from .reads import wg_group, wg_open


class _MaskGroups:
    """What the commits and waits of an instance's async groups (wgmma, cp.async) share: `bufs`,
    the buffers its group members touch, and `depth`, the groups told apart (the oldest mask
    holds that group and every older one). Each group is a mask of stages per buffer, in the
    locals `open_local(b)` (not yet committed) and `group_local(b, i)`."""
    unit: ClassVar[str] = "?"

    def __post_init__(self):
        object.__setattr__(self, "bufs", tuple(self.bufs))
        if hasattr(self, "accs"):
            object.__setattr__(self, "accs", tuple(self.accs))

    def _told(self) -> str:
        accs = f" acc=[{', '.join(getattr(self, 'accs', ()))}]" if getattr(self, "accs", ()) \
            else ""
        if not self.bufs:
            return f"{accs}, depth={self.depth}" if accs else ""
        return f" [{', '.join(self.bufs)}]{accs}, depth={self.depth}"

    def _problems(self, k) -> list[str]:
        out = []
        for b in self.bufs:
            try:
                if k.buffer(b).stages > 15:
                    out.append(f"{b}: more than 15 stages in a {self.unit} group mask")
            except KeyError:
                out.append(f"names {b!r}, not a declared buffer")
        if self.depth < 1:
            out.append(f"{self.mnemonic} with depth {self.depth}")
        return out

    def own_locals(self, pc):
        return tuple(n for b in self.bufs
                     for n in (self.open_local(b),
                               *(self.group_local(b, i) for i in range(self.depth)))) + \
            tuple(n for a in getattr(self, "accs", ())
                  for n in (wa_open(a), *(wa_group(a, i) for i in range(self.depth))))

    def _fmt_wait(self) -> str:
        return f"{self.mnemonic} {self.n}" + self._told()

    def _wait_problems(self, k) -> list[str]:
        """A wait for all but the n newest groups needs n + 1 of them told apart."""
        out = self._problems(k)
        if (self.bufs or getattr(self, "accs", ())) and self.depth <= self.n:
            out.append(f"{self.mnemonic} {self.n} needs groups told apart to depth "
                       f"{self.n + 1}, not {self.depth}")
        return out


class _WgmmaGroups(_MaskGroups):
    """wgmma groups: masks of the stages the warp's wgmmas read; `wrd` of a stage counts the
    (warp, group) pairs that read it."""
    unit: ClassVar[str] = "wgmma"
    open_local = staticmethod(lambda b: wg_open(b))
    group_local = staticmethod(lambda b, i: wg_group(b, i))

    def _merge(self, c, b: str, into: Local, other: Expr) -> list:
        """into |= other, each stage in both counted once."""
        out = [When(all_of(_bit(into, s), _ne(_band(other, Const(1 << s)), 0)),
                    [sub(_stage(c, b, Const(s), "wrd"), 1)])
               for s in range(c.kernel.buffer(b).stages)]
        return out + [Set(into, BinOp("|", into, other))]


@sync_op
@dataclass(frozen=True)
class WgmmaCommit(_WgmmaGroups, SyncOp):
    """wgmma.commit_group: the warp's uncommitted wgmmas become its newest wgmma-group."""
    bufs: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    accs: tuple[str, ...] = ()
    mnemonic: ClassVar[str] = "wgmma.commit_group"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.6 (wgmma.commit_group)"
    summary: ClassVar[str] = ("per buffer the warp's wgmmas read: the group masks shift by one "
                              "(the oldest absorbs the next, a stage in both counted once), the "
                              "newest gets the open reads")
    # R10 mover: it moves its own masks; `wrd` it only lowers for a stage the warp still
    # holds in the merged group, so no fill's check (wrd > 0) changes
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls(("sA",), 1)

    def fmt(self): return "wgmma.commit_group" + self._told()

    def problems(self, k): return self._problems(k)

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),) if self.bufs else ())

    def rule(self, c):
        body = []
        for b in self.bufs:
            g = [Local(wg_group(b, i)) for i in range(self.depth)]
            first = Local(wg_open(b))
            if self.depth > 1:
                body += self._merge(c, b, g[-1], g[-2])
                for i in range(self.depth - 2, 0, -1):
                    body.append(Set(g[i], g[i - 1]))
                body.append(Set(g[0], first))
            else:
                body += self._merge(c, b, g[0], first)
            body.append(Set(first, Const(0)))
        for a in self.accs:
            g = [Local(wa_group(a, i)) for i in range(self.depth)]
            if self.depth > 1:
                body.append(Set(g[-1], BinOp("|", g[-1], g[-2])))
                for i in range(self.depth - 2, 0, -1):
                    body.append(Set(g[i], g[i - 1]))
                body.append(Set(g[0], Local(wa_open(a))))
            else:
                body.append(Set(g[0], BinOp("|", g[0], Local(wa_open(a)))))
            body.append(Set(Local(wa_open(a)), Const(0)))
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class WgmmaWait(_WgmmaGroups, SyncOp):
    """wgmma.wait_group n: the warp waits until at most its n newest wgmma-groups are pending;
    the reads of every older group are retired. Never blocks in the model (the hardware
    finishes them by itself)."""
    n: int = 0
    bufs: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    accs: tuple[str, ...] = ()
    mnemonic: ClassVar[str] = "wgmma.wait_group"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.6 (wgmma.wait_group)"
    summary: ClassVar[str] = ("per buffer the warp's wgmmas read: each stage of the groups older "
                              "than the n newest leaves wrd")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(0, ("sA",), 1)

    def fmt(self): return self._fmt_wait()

    def problems(self, k): return self._wait_problems(k)

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),) if self.bufs else ())

    def rule(self, c):
        body = []
        for b in self.bufs:
            for i in range(self.n, self.depth):
                g = Local(wg_group(b, i))
                body += [When(_bit(g, s), [sub(_stage(c, b, Const(s), "wrd"), 1)])
                         for s in range(c.kernel.buffer(b).stages)]
                body.append(Set(g, Const(0)))
        body += [Set(Local(wa_group(a, i)), Const(0))
                 for a in self.accs for i in range(self.n, self.depth)]
        return Rule(body)


def wa_open(acc: str) -> str:
    """1 while the executing warp's uncommitted wgmmas write accumulator `acc`."""
    return f"_wao_{acc}"


def wa_fenced(acc: str) -> str:
    """1 once a wgmma.fence of the warp came after its last access of accumulator `acc`."""
    return f"_waf_{acc}"


def wa_group(acc: str, i: int) -> str:
    """1 while its i-th most recent wgmma group (the last: that group or older) writes it."""
    return f"_wag{i}_{acc}"


@sync_op
@dataclass(frozen=True)
class WgmmaAcc(SyncOp):
    """The executing warp's wgmma uses register fragment `acc` of the warp's threads (its
    accumulator, d and c of the MMA, or an A fragment in registers) asynchronously, until a
    wgmma.wait_group of the warp retires its group. Accessing those registers before then is undefined (PTX 9.7.15.6,
    wgmma.wait_group); a later wgmma that accumulates into the same registers is not such an
    access."""
    acc: str
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "wgmma.acc"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.5 (wgmma.mma_async), 9.7.15.6 (wait_group: the accumulator registers)"
    summary: ClassVar[str] = "the accumulator joins the warp's open (uncommitted) wgmma group"
    proven: ClassVar[frozenset[str]] = ALL  # it writes only its own local

    @classmethod
    def example(cls):
        return cls("acc")

    def fmt(self): return f"wgmma.acc {self.acc}"

    def footprint(self, k):
        return Footprint(())

    def own_locals(self, pc): return (wa_open(self.acc), wa_fenced(self.acc))

    def rule(self, c):
        return Rule([When(_eq(Local(wa_fenced(self.acc)), 0), [Fail(
            "race", f"{{who}}'s wgmma uses registers {self.acc} (accumulator or A fragment) "
            "with no wgmma.fence since the warp last accessed them (or before its first wgmma): the wgmma may "
            "read them before that access completes (PTX 9.7.15.5, wgmma.fence)")]),
            Set(Local(wa_open(self.acc)), Const(1))])


@sync_op
@dataclass(frozen=True)
class AccAccess(SyncOp):
    """The executing threads read or write accumulator `acc` (a load, store or copy of the
    register fragment or a view of it) other than by a wgmma accumulating into it: a race
    while a wgmma group of the warp that writes it is not retired. `depth`: the wgmma groups
    the warp's commits tell apart."""
    acc: str
    depth: int = 1
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "acc.access"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.5 (wgmma.mma_async), 9.7.15.6 (wait_group: the accumulator registers)"
    summary: ClassVar[str] = ("the accumulator in the warp's open wgmma group or in a group not "
                              "retired: race")
    proven: ClassVar[frozenset[str]] = ALL  # it reads only its own locals

    @classmethod
    def example(cls):
        return cls("acc")

    def fmt(self): return f"acc.access {self.acc}, depth={self.depth}"

    def problems(self, k):
        return [f"acc.access with depth {self.depth}"] if self.depth < 1 else []

    def own_locals(self, pc):
        return (wa_open(self.acc), wa_fenced(self.acc),
                *(wa_group(self.acc, i) for i in range(self.depth)))

    def footprint(self, k):
        return Footprint(())

    def rule(self, c):
        pending = BinOp("|", Local(wa_open(self.acc)),
                        Local(wa_group(self.acc, 0))) if self.depth else Local(wa_open(self.acc))
        for i in range(1, self.depth):
            pending = BinOp("|", pending, Local(wa_group(self.acc, i)))
        return Rule([When(_ne(pending, 0), [Fail(
            "race", f"{{who}} accesses registers {self.acc} (a wgmma accumulator or A fragment) "
            "while a wgmma that uses them may still run: no wgmma.wait_group retired that "
            "wgmma's group (PTX "
            "9.7.15.6: the accumulator registers are undefined to access until then)")]),
            Set(Local(wa_fenced(self.acc)), Const(0))])


@sync_op
@dataclass(frozen=True)
class WgmmaFence(SyncOp):
    """wgmma.fence: orders the warp's earlier accesses of registers before its later wgmmas
    that use them. PTX asks for it before the warpgroup's first wgmma and between a thread's
    access of an accumulator and the next wgmma into it (not between wgmmas of one shape).
    `accs`: the accumulators the warp's wgmmas write."""
    accs: tuple[str, ...] = ()
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "wgmma.fence"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.5 (wgmma.fence)"
    summary: ClassVar[str] = "each accumulator of the warp's wgmmas is fenced"
    proven: ClassVar[frozenset[str]] = ALL  # it writes only its own locals

    @classmethod
    def example(cls):
        return cls(("acc",))

    def __post_init__(self):
        object.__setattr__(self, "accs", tuple(self.accs))

    def fmt(self): return f"wgmma.fence acc=[{', '.join(self.accs)}]"

    def own_locals(self, pc): return tuple(wa_fenced(a) for a in self.accs)

    def footprint(self, k):
        return Footprint(())

    def rule(self, c):
        return Rule([Set(Local(wa_fenced(a)), Const(1)) for a in self.accs])
