"""wgmma groups and register fragments: wgmma.commit_group, wgmma.wait_group, wgmma.acc,
acc.access, wgmma.fence (PTX 9.7.15.5-6)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, NOLOC
from ..objects import LIMITS
from ..rules import Fail, Local, Rule, Set, When, WordField, add, all_of, sub
from .base import (ALL, RESUME_MOVER, Footprint, SyncOp, _acc, _band, _bit, _eq, _ge, _gt, _ne,
                   sync_op)
from .base import SASS_OBLIGATION, SASS_REGISTERS
from .buffers import FenceProxyAsync, _stage, fence_meets_first
from .reads import wg_group, wg_open
from .words import SmemLoad, SmemStore, StAsync


class _MaskGroups:
    """What the commits and waits of an instance's async groups (wgmma, cp.async) share: `bufs`,
    the buffers its group members touch, and `depth`, the groups told apart (the oldest mask
    holds that group and every older one). Each group is a mask of stages per buffer, in the
    locals `open_local(b)` (not yet committed) and `group_local(b, i)`."""
    unit: ClassVar[str] = "?"

    def __post_init__(self):
        object.__setattr__(self, "bufs", tuple(self.bufs))
        for f in ("accs", "datas"):
            if hasattr(self, f):
                object.__setattr__(self, f, tuple(getattr(self, f)))

    def _told(self) -> str:
        accs = f" acc=[{', '.join(getattr(self, 'accs', ()))}]" if getattr(self, "accs", ()) \
            else ""
        if getattr(self, "datas", ()):
            accs += f" data=[{', '.join(self.datas)}]"
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
                  for n in (wa_open(a), *(wa_group(a, i) for i in range(self.depth)))) + \
            tuple(n for a in getattr(self, "datas", ())
                  for n in (wd_open(a), *(wd_group(a, i) for i in range(self.depth))))

    def _fmt_wait(self) -> str:
        return f"{self.mnemonic} {self.n}" + self._told()

    def _wait_problems(self, k) -> list[str]:
        """A wait for all but the n newest groups needs n + 1 of them told apart."""
        out = self._problems(k)
        if (self.bufs or getattr(self, "accs", ()) or getattr(self, "datas", ())) and \
                self.depth <= self.n:
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

    def _data_problems(self, k) -> list[str]:
        return [p for a in getattr(self, "datas", ()) for p in _data_array_problems(k, a)]

    def _data_footprint(self) -> tuple:
        return (_acc("shared-word", "rw", "cta"),) if getattr(self, "datas", ()) else ()


@sync_op
@dataclass(frozen=True)
class WgmmaCommit(_WgmmaGroups, SyncOp):
    """wgmma.commit_group: the warp's uncommitted wgmmas become its newest wgmma-group."""
    bufs: tuple[str, ...] = ()
    depth: int = 1
    loc: Loc = NOLOC
    accs: tuple[str, ...] = ()
    datas: tuple[str, ...] = ()
    mnemonic: ClassVar[str] = "wgmma.commit_group"
    sass_covered: ClassVar[str] = SASS_REGISTERS
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.6 (wgmma.commit_group)"
    summary: ClassVar[str] = ("per buffer the warp's wgmmas read: the group masks shift by one "
                              "(the oldest absorbs the next, a stage in both counted once), the "
                              "newest gets the open reads; so do the accumulators' and the data "
                              "arrays' group bits (a data array in both: ard -= 1 on its cells)")
    # R10 mover: it moves its own masks; `wrd` it only lowers for a stage the warp still
    # holds in the merged group, so no fill's check (wrd > 0) changes
    proven: ClassVar[frozenset[str]] = ALL | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls(("sA",), 1)

    def fmt(self): return "wgmma.commit_group" + self._told()

    def problems(self, k): return self._problems(k) + self._data_problems(k)

    def footprint(self, k):
        return Footprint(((_acc("buffer-stage", "rw", "cta"),) if self.bufs else ()) +
                         self._data_footprint())

    def _shift_bits(self, opened: Local, groups: list, merged=()) -> list:
        """The one-bit group locals of an accumulator or a data array shifted by the commit:
        the oldest absorbs the next (`merged`: what runs when both are set), the newest gets
        the open bit, which clears."""
        into, other = (groups[-1], groups[-2]) if self.depth > 1 else (groups[0], opened)
        body = [When(all_of(_eq(into, 1), _eq(other, 1)), list(merged))] if merged else []
        body.append(Set(into, BinOp("|", into, other)))
        if self.depth > 1:
            body += [Set(groups[i], groups[i - 1]) for i in range(self.depth - 2, 0, -1)]
            body.append(Set(groups[0], opened))
        return body + [Set(opened, Const(0))]

    def rule(self, c):
        body = []
        for a in self.datas:
            body += self._shift_bits(Local(wd_open(a)),
                                     [Local(wd_group(a, i)) for i in range(self.depth)],
                                     _data_retire(c, a))
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
            body += self._shift_bits(Local(wa_open(a)),
                                     [Local(wa_group(a, i)) for i in range(self.depth)])
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
    datas: tuple[str, ...] = ()
    mnemonic: ClassVar[str] = "wgmma.wait_group"
    sass: ClassVar[str] = r"WARPGROUP\.DEPBAR"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.6 (wgmma.wait_group)"
    summary: ClassVar[str] = ("per buffer the warp's wgmmas read: each stage of the groups older "
                              "than the n newest leaves wrd; per data array they read: ard -= 1 "
                              "on its cells for each such group")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(0, ("sA",), 1)

    def fmt(self): return self._fmt_wait()

    def problems(self, k): return self._wait_problems(k) + self._data_problems(k)

    def footprint(self, k):
        return Footprint(((_acc("buffer-stage", "rw", "cta"),) if self.bufs else ()) +
                         self._data_footprint())

    def rule(self, c):
        body = []
        for a in self.datas:
            for i in range(self.n, self.depth):
                g = Local(wd_group(a, i))
                body += [When(_eq(g, 1), _data_retire(c, a)), Set(g, Const(0))]
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
    sass_covered: ClassVar[str] = SASS_REGISTERS
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
    sass_covered: ClassVar[str] = SASS_REGISTERS
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
    sass_covered: ClassVar[str] = SASS_REGISTERS
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


# ----------------------------------------------------------------------------- wgmma operands threads write

def wd_open(array: str) -> str:
    """1 while the executing warp's uncommitted wgmmas read data array `array`."""
    return f"_wdo_{array}"


def wd_group(array: str, i: int) -> str:
    """1 while its i-th most recent wgmma group (the last: that group or older) reads it."""
    return f"_wdg{i}_{array}"


def _data_retire(c, array: str) -> list:
    """A (warp, group) pair that read `array` retires: ard -= 1 on every cell."""
    size = c.kernel.word_array(array).size
    return [sub(WordField(array, Const(c.cta), Const(j), "ard"), 1) for j in range(size)]


def _data_array_problems(k, array: str) -> list[str]:
    try:
        d = k.word_array(array)
    except KeyError:
        return [f"undeclared shared-data array {array!r}"]
    if not d.data:
        return [f"{array} is an array of words handed between roles, not shared data"]
    return []


def wgmma_data_arrays(k) -> frozenset[str]:
    """The arrays of shared data some wgmma reads, or a wgmma group is told of (their cells
    have `ard`)."""
    from ..ir import walk_stmts
    return k.memo("wgmma_data_arrays", lambda: frozenset(
        a for p in k.processes for s in walk_stmts(p.body)
        for a in ((s.array,) if isinstance(s, WgmmaReadData) else
                  getattr(s, "datas", ()) if isinstance(s, (WgmmaCommit, WgmmaWait)) else ())))


# what a thread may execute between its store of shared data and its fence.proxy.async with
# that fence still on every path the store is ordered along: none of them orders the thread's
# earlier writes before another thread's step (data accesses, its own register bookkeeping)
_BEFORE_FENCE = (SmemStore, SmemLoad, WgmmaAcc, WgmmaFence, WgmmaCommit, WgmmaWait, AccAccess)


def wgmma_data_mode(k, array: str) -> str:
    """How the generic writes of data array `array` reach the wgmmas that read it (PTX 9.7.13.4:
    a generic write and an async-proxy read are ordered only with a fence.proxy.async between
    them in causality order):
    "fenced": every store of it meets its thread's next fence.proxy.async before any other op
      (on every path; loops twice): the fence lies on every path the store is ordered along;
    "unfenced": not so, and the kernel has no proxy fence at all: a store a wgmma read is
      ordered after is a proxy race (`unf`);
    "unknown": neither (whether another thread's fence orders the store is not followed), or
      another CTA stores into it or an st.async writes it (which proxy fence orders those is
      not modelled)."""
    return k.memo(("wgmma_data_mode", array),
                  lambda: data_mode_of([p.body for p in k.processes], array))


def data_mode_of(bodies, array: str) -> str:
    """wgmma_data_mode over the processes' `bodies` (the extractor asks before the kernel is
    built)."""
    from ..ir import walk_stmts
    if any((isinstance(s, SmemStore) and s.ref.name == array and s.ref.cta is not None) or
           (isinstance(s, StAsync) and s.ref.name == array) for b in bodies for s in walk_stmts(b)):
        return "unknown"
    if all(_fenced_first(b, array) for b in bodies):
        return "fenced"
    if not any(isinstance(s, FenceProxyAsync) for b in bodies for s in walk_stmts(b)):
        return "unfenced"
    return "unknown"


def _fenced_first(body, array: str) -> bool:
    return fence_meets_first(body, lambda st: isinstance(st, SmemStore) and st.ref.name == array,
                             lambda st: isinstance(st, FenceProxyAsync), _BEFORE_FENCE)


@sync_op
@dataclass(frozen=True)
class WgmmaReadData(SyncOp):
    """The executing warp's wgmmas read shared data `array` (cells that threads write and read
    as elements, extract/data.py: an operand tile the threads fill) asynchronously, until a
    wgmma.wait_group of the warp retires their group. Every store of a cell must be ordered
    before the read, with a fence.proxy.async between them (PTX 9.7.13.4), or after the wait
    that retires it. The read covers every cell of the array (a sound over-approximation of
    the descriptor's bytes)."""
    array: str
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "wgmma.read.data"
    sass_covered: ClassVar[str] = SASS_REGISTERS
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.5 (wgmma.mma_async), 9.7.15.6 (wait_group), 9.7.13.4"
    summary: ClassVar[str] = ("per cell: another instance about to store it: race; unf = 1: "
                              "proxy-race; then, unless the warp's open group already reads "
                              "the array, ard += 1 on every cell")
    # R6, R8, R11: as st.shared, it reads the race monitor and word state and writes only the
    # cells' `ard` (which no load reads) and its own local
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("tile")

    def fmt(self): return f"wgmma.read.data {self.array}"

    def problems(self, k):
        out = _data_array_problems(k, self.array)
        if not out and wgmma_data_mode(k, self.array) == "unknown":
            out.append(f"wgmma.read.data {self.array}: a store of it is not followed by its "
                       "thread's fence.proxy.async before the thread's next synchronization, "
                       "and the kernel has proxy fences (not modelled)")
        return out

    def own_locals(self, pc): return (wd_open(self.array),)

    def footprint(self, k):
        return Footprint((_acc("shared-word", "rw", "cta", proxy="async"),),
                         retired_by="wgmma.wait_group of the issuing warp")

    def rule(self, c):
        d = c.kernel.word_array(self.array)
        name = d.label or self.array
        unfenced = wgmma_data_mode(c.kernel, self.array) == "unfenced"
        cell = lambda j, f: WordField(self.array, Const(c.cta), Const(j), f)  # noqa: E731
        body = []
        for j in range(d.size):
            body.append(When(_gt(cell(j, "at_st"), 0), [Fail(
                "race", "{who}'s wgmma reads " + name + "[{0}] while another instance is "
                "about to store it: no synchronization orders the store before the wgmma",
                (Const(j),))]))
            if unfenced:
                body.append(When(_eq(cell(j, "unf"), 1), [Fail(
                    "proxy-race", "{who}'s wgmma (async proxy) reads " + name + "[{0}], "
                    "written through the generic proxy with no fence.proxy.async between the "
                    "write and the wgmma", (Const(j),))]))
        opened = Local(wd_open(self.array))
        body.append(When(_eq(opened, 0), [
            When(_ge(cell(0, "ard"), LIMITS.inflight), [Fail(
                "copy-bound", f"more than {LIMITS.inflight} wgmma groups reading {name} "
                "unretired (model bound)")]),
            *(add(cell(j, "ard"), 1) for j in range(d.size)), Set(opened, Const(1))]))
        return Rule(body)
