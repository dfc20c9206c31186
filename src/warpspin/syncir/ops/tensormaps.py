"""Tensormaps and bulk async-groups: tensormap writes, the tensormap proxy fences,
cp.async.bulk.commit_group / wait_group.read (PTX 9.7.9.26-27, 9.7.13.4)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Const, Loc, NOLOC, Select
from ..rules import BufField, Fail, Local, Rule, Self, Set, TmapField, When, add, all_of
from .base import ALL, RESUME_MOVER, Footprint, SyncOp, _acc, _eq, _gt, _le, _minus, _plus, sync_op
from .base import SASS_OBLIGATION, SASS_SYNC_ORDER


# ----------------------------------------------------------------------------- tensormaps

def tm_open(desc: str) -> str:
    """The executing thread's TMA reads of tensormap `desc` not yet in a bulk async-group."""
    return f"_tmo_{desc}"


def tm_group(desc: str, i: int) -> str:
    """Its reads in the i-th most recent committed group (the last one: that one or older)."""
    return f"_tmg{i}_{desc}"


def tm_acquired(desc: str) -> str:
    """1 + the number of writes of `desc` its last acquire saw released (0: none)."""
    return f"_tma_{desc}"


def _tensormap_problems(k, desc: str) -> list[str]:
    try:
        k.tensormap(desc)
    except KeyError:
        return [f"names {desc!r}, not a declared tensormap"]
    return []


def _tm(c, desc: str, field: str) -> TmapField:
    return TmapField(desc, Const(c.cta), field)


def _one_thread(c, what: str) -> list:
    if c.threads == 1:
        return []
    return [Fail("unsupported", f"{what} by {c.threads} threads of one instance (each thread "
                 "has its own bulk async-groups) is not modelled")]


@sync_op
@dataclass(frozen=True)
class TensormapWrite(SyncOp):
    """The executing thread writes tensormap `desc` in global memory through the generic proxy
    (st.global of the descriptor, tensormap.replace on it, or the copy of
    tensormap.cp_fenceproxy, which also releases it: `release`). A TMA read of it that no
    wait_group.read has retired may still be reading it: tensormap-race."""
    desc: str
    release: bool = False
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tensormap.write"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"(ST|STG|STS|ATOMG|REDG|ATOM|RED)\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.27 (tensormap.replace), 9.7.9.26.5.2, 9.7.13.4"
    summary: ClassVar[str] = ("unret > 0: tensormap-race (a TMA load may still read it); then "
                              "st = 1 (2 with .release), ver += 1, by = the instance, wt = its "
                              "threads")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("tmA")

    def fmt(self):
        return f"tensormap.write {self.desc}" + (", release" if self.release else "")

    def problems(self, k):
        return _tensormap_problems(k, self.desc)

    def footprint(self, k):
        return Footprint((_acc("tensormap", "rw", "cta", identity="write"),))

    def rule(self, c):
        unret = _tm(c, self.desc, "unret")
        return Rule([When(_gt(unret, 0), [Fail(
                        "tensormap-race", f"{{who}} writes tensormap {self.desc} while {{0}} TMA "
                        "read(s) of it may still be in flight: no cp.async.bulk.wait_group.read "
                        "of their issuing thread retired them", (unret,))]),
                     Set(_tm(c, self.desc, "st"), Const(2 if self.release else 1)),
                     add(_tm(c, self.desc, "ver"), 1),
                     Set(_tm(c, self.desc, "by"), Self()),
                     Set(_tm(c, self.desc, "wt"), Const(min(c.threads, 32)))])


@sync_op
@dataclass(frozen=True)
class TensormapRelease(SyncOp):
    """fence.proxy.tensormap::generic.release: the executing thread's earlier writes of
    tensormaps become visible to the tensormap proxy of threads that acquire them."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "fence.tensormap.release"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"MEMBAR\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.13.4"
    summary: ClassVar[str] = ("every tensormap the instance wrote last, with at most as many "
                              "threads, and left at st 1: st = 2")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def fmt(self):
        return "fence.tensormap.release"

    def footprint(self, k):
        return Footprint((_acc("tensormap", "rw", "cta", identity="compare"),))

    def rule(self, c):
        body = []
        for t in c.kernel.tensormaps:
            st = _tm(c, t.name, "st")
            body.append(When(all_of(_eq(st, 1), _eq(_tm(c, t.name, "by"), Self()),
                                    _le(_tm(c, t.name, "wt"), min(c.threads, 32))),
                             [Set(st, Const(2))]))
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class TensormapAcquire(SyncOp):
    """fence.proxy.tensormap::generic.acquire on tensormap `desc`: the executing thread's later
    TMA loads through it see the last released write."""
    desc: str
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "fence.tensormap.acquire"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"(UTMACCTL|CCTL)\.IV"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.13.4"
    summary: ClassVar[str] = "acquired = ver + 1 when st = 2 (released), else 0"
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("tmA")

    def fmt(self):
        return f"fence.tensormap.acquire {self.desc}"

    def own_locals(self, pc):
        return (tm_acquired(self.desc),)

    def problems(self, k):
        return _tensormap_problems(k, self.desc)

    def footprint(self, k):
        return Footprint((_acc("tensormap", "read", "cta"),))

    def rule(self, c):
        st, ver = _tm(c, self.desc, "st"), _tm(c, self.desc, "ver")
        return Rule([Set(Local(tm_acquired(self.desc)),
                         Select(_eq(st, 2), _plus(ver, Const(1)), Const(0)))])


class _BulkGroups:
    """What a bulk commit and a wait share: `maps`, the tensormaps their process loads through,
    `stages`, the staged-buffer stages it stores from ((buffer, stage) pairs), and `depth`, the
    groups told apart (the oldest counter holds that group and every older one)."""

    def __post_init__(self):
        object.__setattr__(self, "maps", tuple(self.maps))
        object.__setattr__(self, "stages", tuple(tuple(x) for x in self.stages))

    def _told(self) -> str:
        if not self.maps and not self.stages:
            return ""
        srcs = [*self.maps, *(f"{b}[{i}]" for b, i in self.stages)]
        return f" [{', '.join(srcs)}], depth={self.depth}"

    def _group_problems(self, k) -> list[str]:
        from .buffers import _stage_problems
        out = [p for d in self.maps for p in _tensormap_problems(k, d)]
        for b, i in self.stages:
            out += _stage_problems(k, b, Const(i))
        if self.depth < 1:
            out.append(f"{self.mnemonic} with depth {self.depth}")
        return out

    def _sources(self, c) -> list[tuple[str, object, object]]:
        """(open local, group local namer, unretired place) per source."""
        from .buffers import bs_group, bs_open
        out = [(tm_open(d), lambda i, d=d: tm_group(d, i), _tm(c, d, "unret")) for d in self.maps]
        out += [(bs_open(b, j), lambda i, b=b, j=j: bs_group(b, j, i),
                 BufField(b, Const(c.cta), Const(j), "unret")) for b, j in self.stages]
        return out

    def _locals(self) -> tuple[str, ...]:
        from .buffers import bs_group, bs_open
        return (*(n for d in self.maps for n in (tm_open(d), *(tm_group(d, i)
                                                               for i in range(self.depth)))),
                *(n for b, j in self.stages for n in (bs_open(b, j), *(bs_group(b, j, i)
                                                                      for i in range(self.depth)))))


@sync_op
@dataclass(frozen=True)
class BulkCommit(_BulkGroups, SyncOp):
    """cp.async.bulk.commit_group: the executing thread's uncommitted bulk async operations
    (here: the TMA loads' reads of the tensormaps `maps`, the TMA stores' reads of the buffer
    stages `stages`) become its newest bulk async-group. `depth`: the groups told apart (the
    oldest one counts that one and every older group)."""
    maps: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    stages: tuple[tuple[str, int], ...] = ()
    mnemonic: ClassVar[str] = "bulk.commit_group"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    sass: ClassVar[str] = r"UTMACMDFLUSH"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.26.5.1 (cp.async.bulk.commit_group)"
    summary: ClassVar[str] = ("per tensormap or buffer stage the process reads: the groups shift "
                              "by one (the oldest absorbs the next), the newest gets the open "
                              "reads")
    # R10 mover: it writes only its own group counters
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls(("tmA",), 1)

    def fmt(self):
        return "bulk.commit_group" + self._told()

    def own_locals(self, pc):
        return self._locals()

    def problems(self, k):
        return self._group_problems(k)

    def footprint(self, k):
        return Footprint(())

    def rule(self, c):
        body = [*(_one_thread(c, "cp.async.bulk.commit_group") if self.maps else [])]
        for first_name, group, _ in self._sources(c):
            g = [Local(group(i)) for i in range(self.depth)]
            if self.depth > 1:
                body.append(Set(g[-1], _plus(g[-1], g[-2])))
            for i in range(self.depth - 2, 0, -1):
                body.append(Set(g[i], g[i - 1]))
            first = Local(first_name)
            body += [Set(g[0], first if self.depth > 1 else _plus(g[0], first)),
                     Set(first, Const(0))]
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class BulkWaitRead(_BulkGroups, SyncOp):
    """cp.async.bulk.wait_group.read n: the executing thread waits until at most its n newest
    bulk async-groups still read their sources; the reads (of tensormaps, of buffer stages) of
    every older group are retired. Never blocks in the model: the hardware completes the reads
    by itself."""
    n: int
    maps: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    stages: tuple[tuple[str, int], ...] = ()
    mnemonic: ClassVar[str] = "bulk.wait_group.read"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"DEPBAR\.LE SB0\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.26.5.2 (cp.async.bulk.wait_group)"
    summary: ClassVar[str] = ("per tensormap or buffer stage the process reads: the reads of the "
                              "groups older than the n newest leave unret")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(0, ("tmA",), 1)

    def fmt(self):
        return f"bulk.wait_group.read {self.n}" + self._told()

    def own_locals(self, pc):
        return self._locals()

    def problems(self, k):
        out = self._group_problems(k)
        if (self.maps or self.stages) and self.depth <= self.n:
            out.append(f"bulk.wait_group.read {self.n} needs groups told apart to depth "
                       f"{self.n + 1}, not {self.depth}")
        return out

    def footprint(self, k):
        acc = ((_acc("tensormap", "rw", "cta"),) if self.maps else ()) + \
            ((_acc("buffer-stage", "rw", "cta"),) if self.stages else ())
        return Footprint(acc)

    def rule(self, c):
        body = [*(_one_thread(c, "cp.async.bulk.wait_group.read") if self.maps else [])]
        for _, group, unret in self._sources(c):
            for i in range(self.n, self.depth):
                g = Local(group(i))
                body += [Set(unret, _minus(unret, g)), Set(g, Const(0))]
        return Rule(body)
