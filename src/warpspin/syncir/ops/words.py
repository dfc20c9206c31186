"""Shared words: st.shared / ld.shared of followed words, st.async,
clusterlaunchcontrol.try_cancel (PTX 9.7.9.8-9, 9.7.9.12)."""
from __future__ import annotations

import weakref

from dataclasses import dataclass, field
from typing import ClassVar

from ..ir import Const, Expr, Loc, MBarRef, NOLOC, Select, WordRef, _lift_fields, lift
from ..objects import LIMITS
from ..rules import (CounterField, El, Fail, Inflight, Live, Local, Rule, Set, When, WordField,
                     any_of)
from .base import (ALL, INDEPENDENT_CTAS, LOAD_RUN_MOVER, Footprint, SyncOp, _acc, _cta_checks, _e,
                   _eq, _gt, _index_checks, _lt, _minus, _ne, _plus, _times, fmt_bar, remote_alive,
                   resolve, sync_op, vis_checks)
from .base import SASS_OBLIGATION
from .dsmem import DsmemStore
from .copies import _CompletesBytes, _copy_completes, _issue


# ----------------------------------------------------------------------------- shared words

def _word(c, ref: WordRef) -> tuple[WordField, list]:
    """The word `ref` names (in the executing CTA, or in CTA `ref.cta` of the cluster), and the
    checks that it exists."""
    decl = c.kernel.word_array(ref.name)
    checks = _index_checks(ref.name, ref.index, decl.size, " words")
    if decl.grid:  # global data: one array for the grid
        return WordField(ref.name, Const(0), ref.index, "val"), checks
    checks += _cta_checks(c, ref.cta, "stores into")
    cta = Const(c.cta) if ref.cta is None else ref.cta
    return WordField(ref.name, cta, ref.index, "val"), checks


def word_scope(k, ref: WordRef) -> str:
    """Where the word `ref` names lives, for footprints: the executing CTA, some CTA of the
    cluster, or the grid (global data)."""
    if any(w.grid for w in k.words if w.name == ref.name):
        return "grid"
    return "cta" if ref.cta is None else "cluster"


def _word_problems(k, ref: WordRef) -> list[str]:
    try:
        decl = k.word_array(ref.name)
    except KeyError:
        return [f"undeclared shared-word array {ref.name!r}"]
    size = decl.size
    if decl.grid and ref.cta is not None:
        return [f"{ref.name} is global data (one array for the grid): an access names no CTA"]
    if isinstance(ref.index, Const) and not 0 <= ref.index.value < size:
        return [f"{ref.name}[{ref.index.value}] is outside the array of {size} words"]
    if isinstance(ref.cta, Const) and not 0 <= ref.cta.value < k.num_ctas:
        return [f"{ref.name} in CTA {ref.cta.value} of a cluster of {k.num_ctas}"]
    return []


def _in_band(value: Expr, name: str) -> When:
    """A value stored into word array `name` must lie in the model's integer band."""
    band = LIMITS.local_band
    return When(any_of(_gt(value, band), _lt(value, -band)),
                [Fail("integer-range", "{who} stores {0} into " + name + ", outside the model's "
                      f"integer band ±{band}", (value,))])


_ASYNC_WORDS: dict[int, tuple] = {}  # id(kernel) -> (a weak reference to it, its arrays)


def async_word_arrays(k) -> frozenset[str]:
    """The word arrays some st.async writes (their words have a `pend` field); once per kernel
    (every word access's rule asks)."""
    got = _ASYNC_WORDS.get(id(k))
    if got is not None and got[0]() is k:
        return got[1]
    from ..ir import walk_stmts
    arrays = frozenset(s.ref.name for p in k.processes for s in walk_stmts(p.body)
                       if isinstance(s, StAsync))
    key = id(k)
    _ASYNC_WORDS[key] = (weakref.ref(k, lambda _: _ASYNC_WORDS.pop(key, None)), arrays)
    return arrays


def _pending_check(c, w: WordField, what: str, name: str) -> list:
    if w.array not in async_word_arrays(c.kernel):
        return []
    return [When(_ne(WordField(w.array, w.cta, w.index, "pend"), 0),
                 [Fail("race", "{who} " + what + " " + name + "[{0}] while an st.async into it "
                       "is in flight: only the completion of its transaction on the mbarrier "
                       "orders it before other accesses", (w.index,))])]


DATA_DEST = "data_ld"  # the local a load of shared data writes (0; read by nothing)


def peer_word_store(s, store: DsmemStore) -> bool:
    """Whether `s` is an st.shared of a cell that the DSMEM store `store` writes: into its CTA,
    from its line. The extractor puts each right after the store (extract/data.py)."""
    return isinstance(s, SmemStore) and s.ref.cta is not None and s.ref.cta == store.cta and \
        s.loc == store.loc


def fmt_word(ref: WordRef) -> str:
    at = "" if ref.cta is None else f" @cta({_e(ref.cta)})"
    return f"{ref.name}[{_e(ref.index)}]{at}"


@sync_op
@dataclass(frozen=True)
class SmemStore(SyncOp):
    """st.shared of a value into a shared-memory word (the same value from every executing
    thread), of the executing CTA or, with `ref.cta`, of that CTA of the cluster (the data an
    st.shared::cluster writes; its DsmemStore beside it carries the release's scope). Another
    instance whose next step loads or stores the same word makes it a race: nothing orders the
    two accesses."""
    ref: WordRef
    value: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "st.shared"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"(STS|STG|ST|STAS)\b"  # (words in global memory too)
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.9"
    summary: ClassVar[str] = ("val = value; another instance about to load or store the word: "
                              "race; a cell a wgmma group not retired reads (ard > 0): race; a "
                              "value beyond the integer band: integer-range")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(WordRef("tile", Const(0)), Const(3))

    def __post_init__(self): _lift_fields(self, "value")

    def fmt(self): return f"st.shared {fmt_word(self.ref)}, {_e(self.value)}"

    def problems(self, k): return _word_problems(k, self.ref)

    def footprint(self, k):
        return Footprint((_acc("shared-word", "write", word_scope(k, self.ref)),))

    def facts_in(self, kernel, process):
        """A store of a cell of data (its value always 0: it changes no state, never blocks,
        and reports only a race or an index outside its array) may be a step of an R11 run, as
        a load is; not in an array st.async or wgmma reads also track (`pend`, `ard`)."""
        from .wgmma import wgmma_data_arrays
        name = self.ref.name
        if self.value == Const(0) and kernel.word_array(name).data and \
                name not in async_word_arrays(kernel) and name not in wgmma_data_arrays(kernel):
            return self.facts() | {LOAD_RUN_MOVER}
        return self.facts()

    def rule(self, c):
        w, checks = _word(c, self.ref)
        others = lambda f: WordField(w.array, w.cta, w.index, f)  # noqa: E731
        name = c.kernel.word_array(self.ref.name).label or self.ref.name
        return Rule([*checks,
                     When(_gt(_plus(others("at_ld"), others("at_st")), 0),
                          [Fail("race", "{who} stores " + name + "[{0}] while another "
                                "instance is about to load or store it: no synchronization "
                                "orders the two accesses", (w.index,))]),
                     *_pending_check(c, w, "stores", name),
                     *_wgmma_read_check(c, w, name),
                     _in_band(self.value, name),
                     Set(w, self.value)])


def _wgmma_read_check(c, w: WordField, name: str) -> list:
    """A store of a cell of shared data a wgmma reads: a race while a wgmma group that reads
    it is not retired; in a kernel with no proxy fence, the cell is unfenced from now on."""
    from .wgmma import wgmma_data_arrays, wgmma_data_mode
    if w.array not in wgmma_data_arrays(c.kernel):
        return []
    field = lambda f: WordField(w.array, w.cta, w.index, f)  # noqa: E731
    out = [When(_gt(field("ard"), 0), [Fail(
        "race", "{who} stores " + name + "[{0}] while {1} wgmma group(s) that read it are not "
        "retired: no wgmma.wait_group of the reading warp retired them before this store",
        (w.index, field("ard")))])]
    if wgmma_data_mode(c.kernel, w.array) == "unfenced":
        out.append(Set(field("unf"), Const(1)))
    return out


@sync_op
@dataclass(frozen=True)
class SmemLoad(SyncOp):
    """ld.shared of a shared-memory word into `dest`. Another instance whose next step stores
    the same word makes it a race (the load could see either value)."""
    dest: str
    ref: WordRef
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "ld.shared"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"(LDS|LDG|LD)\b"  # (words in global memory too)
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.8"
    summary: ClassVar[str] = "dest = val; another instance about to store the word: race"
    proven: ClassVar[frozenset[str]] = ALL | {LOAD_RUN_MOVER}

    @classmethod
    def example(cls):
        return cls("t", WordRef("tile", Const(0)))

    def own_locals(self, pc): return (self.dest,)

    def fmt(self):
        dest = "" if self.dest == DATA_DEST else f"{self.dest} = "
        return f"{dest}ld.shared {fmt_word(self.ref)}"

    def problems(self, k):
        if self.ref.cta is not None:
            return ["ld.shared of a word in another CTA (ld.shared::cluster) is not modelled"]
        return _word_problems(k, self.ref)

    def footprint(self, k):
        return Footprint((_acc("shared-word", "read", word_scope(k, self.ref)),))

    def rule(self, c):
        w, checks = _word(c, self.ref)
        name = c.kernel.word_array(self.ref.name).label or self.ref.name
        return Rule([*checks,
                     When(_gt(WordField(w.array, w.cta, w.index, "at_st"), 0),
                          [Fail("race", "{who} loads " + name + "[{0}] while another "
                                "instance is about to store it: no synchronization orders the "
                                "two accesses", (w.index,))]),
                     *_pending_check(c, w, "loads", name),
                     Set(Local(self.dest), w)])


@sync_op
@dataclass(frozen=True)
class StAsync(_CompletesBytes, SyncOp):
    """st.async...mbarrier::complete_tx::bytes of `values` (32-bit each) into consecutive shared
    words from `ref` of the CTA that holds `bar` (`bar.cta`, or the executing CTA), completing
    4 bytes per word on `bar` at some later point; by one thread (`Lanes(1)`). The words are
    written at the issue and are *pending* until the completion: any load or store of a pending
    word, or a store of this one onto a word another instance is about to access, is a race
    (what a load before the completion sees is not defined). One such store per op, target
    CTA and barrier element in flight at a time (model bound)."""
    ref: WordRef
    values: tuple[Expr, ...]
    bar: MBarRef
    loc: Loc = NOLOC
    size: int = 0  # bytes it completes; 0: 4 per value (a cell of shared data may be wider)
    mnemonic: ClassVar[str] = "st.async"
    sass: ClassVar[str] = r"STAS\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "async.issue"
    ptx: ClassVar[str] = "9.7.9.12"
    summary: ClassVar[str] = ("by one thread: val = values and pend = this copy, word by word "
                              "(a word pending, or about to be accessed by another instance: "
                              "race); one copy in flight (a second one: copy-bound); it completes "
                              "later, in its own step: pend = 0 on its words, tx -= bytes, then "
                              "phase completion")
    # every kernel-wide reduction's proof covers it (R11's with `pend`: docs/semantics.md); it is
    # neither a fused release (it may cross CTAs) nor an R8 site (no early_issue_condition)
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(WordRef("tile", Const(0)), (Const(3), Const(1)), MBarRef("b", Const(0), Const(1)))

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(lift(v) for v in self.values))

    @property
    def bytes(self) -> Expr:
        return Const(self.size or 4 * len(self.values))

    def fmt(self):
        vals = ", ".join(_e(v) for v in self.values)
        size = f", bytes={self.size}" if self.size else ""
        return f"st.async {fmt_word(self.ref)} <- ({vals}) -> {fmt_bar(self.bar)}{size}"

    def facts(self):
        return self.proven - ({INDEPENDENT_CTAS} if self.bar.cta is not None else set())

    def problems(self, k):
        out = _word_problems(k, self.ref)
        if not self.values:
            out.append("st.async stores no value")
        elif self.size < 0 or (self.size and self.size % len(self.values)):
            out.append(f"st.async of {len(self.values)} words completing {self.size} bytes")
        elif not out and isinstance(self.ref.index, Const) and \
                self.ref.index.value + len(self.values) > k.word_array(self.ref.name).size:
            out.append(f"st.async of {len(self.values)} words from {fmt_word(self.ref)} leaves "
                       f"the array of {k.word_array(self.ref.name).size} words")
        return out

    def footprint(self, k):
        scope = "cluster" if self.bar.cta is not None else "cta"
        acc = [_acc("mbarrier", "rw", scope, proxy="async", identity="compare"),
               _acc("async-copy", "write", scope, proxy="async"),
               _acc("shared-word", "write", scope, proxy="async")]
        if scope == "cluster":
            acc.append(_acc("live-threads", "read", "cluster"))
        return Footprint(tuple(acc), retired_by="transaction completion on the mbarrier")

    def targets(self, kernel) -> list[int]:
        return [] if self.bar.cta is None else list(range(kernel.num_ctas))

    def _pend_code(self, c, cta: Expr, index: Expr) -> Expr:
        """What the copy towards element `index` of CTA `cta` marks its words with: the number
        + 1 of its in-flight counter (`Layout.async_slot`; a site's counters are consecutive,
        target CTA-major)."""
        slot = c.layout.async_slot
        if isinstance(cta, Const) and isinstance(index, Const):
            return Const(slot[(c.process, c.pc, cta.value, index.value)] + 1)
        ctas = self.targets(c.kernel) or [c.cta]
        first = Const(slot[(c.process, c.pc, ctas[0], 0)] + 1)
        size = c.kernel.mbarrier(self.bar.name).size
        return _plus(first if len(ctas) == 1 else _plus(first, _times(cta, size)), index)

    def rule(self, c):
        if c.threads != 1:  # validate refuses it; kept for SyncIR built by hand
            return Rule([Fail("copy-bound", f"st.async by {c.threads} threads is not modelled")])
        el, checks = resolve(c, self.bar)
        return Rule([*checks, *remote_alive(c, self.bar, el, "stores into"),
                     *self._store_words(c, el, self.values, "st.async")])

    def _store_words(self, c, el: El, values: tuple, what: str) -> list:
        """The copy towards `el` (a barrier element of CTA `el.cta`) writes `values` into the
        words from `ref` of that CTA: race checks, the words pending until its completion, and
        one copy in flight."""
        decl = c.kernel.word_array(self.ref.name)
        name, n = decl.label or decl.name, len(values)
        infl = Inflight(c.process, c.pc, el.cta, el.index)
        body = [*vis_checks(el, tma=True)]
        if not isinstance(self.ref.index, Const):
            body.append(When(any_of(_lt(self.ref.index, 0),
                                    _gt(self.ref.index, Const(decl.size - n))),
                             [Fail("invalid-operand", "{who} stores " + name + "[{0}] and the "
                                   f"{n - 1} words after it, outside the array of {decl.size} "
                                   "words", (self.ref.index,))]))
        words = [_plus(self.ref.index, Const(j)) for j in range(n)]
        word = lambda i, f: WordField(self.ref.name, el.cta, i, f)  # noqa: E731
        for i in words:
            body.append(When(_gt(_plus(word(i, "at_ld"), word(i, "at_st")), 0),
                             [Fail("race", "{who} stores " + name + "[{0}] of CTA {1} with "
                                   f"{what} while another instance is about to load or store "
                                   "it: no synchronization orders the two accesses",
                                   (i, el.cta))]))
            body.append(When(_ne(word(i, "pend"), 0),
                             [Fail("race", "{who} stores " + name + "[{0}] of CTA {1} with "
                                   f"{what} while an earlier async write into it is in flight",
                                   (i, el.cta))]))
        body += [_in_band(v, name) for v in values]
        body.append(When(_gt(infl, 0), [Fail("copy-bound", "{who} issues a second " + what +
                                             " into {bar} before the first one completed (one in "
                                             "flight per op is modelled)", (), el)]))
        code = self._pend_code(c, el.cta, el.index)
        for i, v in zip(words, values):
            body += [Set(word(i, "val"), v), Set(word(i, "pend"), code)]
        return [*body, *_issue(infl, 1)]

    def complete(self, c, cta: int, index: int):
        code = self._pend_code(c, Const(cta), Const(index))
        clear = []
        # the words the issue marked with this copy's code: its own at a constant index
        marked = range(self.ref.index.value, self.ref.index.value + len(self.values)) \
            if isinstance(self.ref.index, Const) else \
            range(c.kernel.word_array(self.ref.name).size)
        for i in marked:
            pend = WordField(self.ref.name, Const(cta), Const(i), "pend")
            clear.append(When(_eq(pend, code), [Set(pend, Const(0))]))
        return _copy_completes(c, self.bar, self.bytes, cta, index, clear)


CLC_WORDS = 4  # the 16-byte response of clusterlaunchcontrol.try_cancel


def clc_failed(pool: str) -> str:
    """The executing instance's hidden local: 1 once a try_cancel it issued on `pool` failed."""
    return f"_clcf_{pool}"


@sync_op
@dataclass(frozen=True)
class ClcTryCancel(StAsync):
    """clusterlaunchcontrol.try_cancel by one thread: it asks to cancel a cluster of the grid
    that has not started. The outcome is decided at the issue: a success while fewer than
    `limit` of the pool `pool` (a global counter of the grants, declared like atom.inc's, with
    no environment steps) were granted, else a failure; every run with any number of successes
    up to the pool's size comes from some value of the size (a launch parameter range). The
    response is written like an st.async of 16 bytes into the four words from `ref`: word 0 is
    1 (cancelled) or 0, the other three the ctaid (not followed: the extractor reads only the
    first word); with `multicast`, into the words and the barrier at the same offsets in every
    CTA of the cluster. `values` only counts the words (`make` builds it). A try_cancel after
    one of the same instance failed is `unsupported`: undefined if the CTA observed the failure
    (PTX), and a success after a failure (a spurious one) is not modelled."""
    pool: str = field(default="clc", kw_only=True)
    multicast: bool = field(default=False, kw_only=True)
    mnemonic: ClassVar[str] = "clc.try_cancel"
    ptx: ClassVar[str] = "clusterlaunchcontrol.try_cancel, clusterlaunchcontrol.query_cancel"
    summary: ClassVar[str] = ("by one thread: an earlier failure of its instance: unsupported; "
                              "ok = granted < limit; granted += ok; then per target CTA as an "
                              "st.async of ok into the 4 response words (16 bytes); each "
                              "completes later: pend = 0, tx -= 16, then phase completion")

    @classmethod
    def make(cls, ref: WordRef, bar: MBarRef, pool: str = "clc", multicast: bool = False,
             loc: Loc = NOLOC) -> "ClcTryCancel":
        return cls(ref, (Const(0),) * CLC_WORDS, bar, loc, pool=pool, multicast=multicast)

    @classmethod
    def example(cls):
        return cls.make(WordRef("resp", Const(0)), MBarRef("b", Const(0)), multicast=True)

    @property
    def bytes(self) -> Expr:
        return Const(4 * CLC_WORDS)

    def own_locals(self, pc): return (clc_failed(self.pool),)

    def fmt(self):
        mc = ", multicast" if self.multicast else ""
        return f"clc.try_cancel {fmt_word(self.ref)} -> {fmt_bar(self.bar)}, pool={self.pool}{mc}"

    def facts(self):
        return self.proven - {INDEPENDENT_CTAS}  # the pool is the grid's

    def problems(self, k):
        out = super().problems(k)
        if len(self.values) != CLC_WORDS:
            out.append(f"clc.try_cancel writes {CLC_WORDS} words, not {len(self.values)}")
        if self.multicast and self.bar.cta is not None:
            out.append("a multicast try_cancel names its barrier in every CTA, not in one")
        try:
            k.counter(self.pool)
        except KeyError:
            out.append(f"clc.try_cancel names {self.pool!r}, not a declared pool (counter)")
        return out

    def footprint(self, k):
        fp = super().footprint(k)
        acc = fp.accesses + (_acc("global-counter", "rw", "grid"),)
        if self.multicast:
            acc += (_acc("live-threads", "read", "cluster"),)
        return Footprint(acc, retired_by=fp.retired_by)

    def targets(self, kernel) -> list[int]:
        return list(range(kernel.num_ctas)) if self.multicast else super().targets(kernel)

    def rule(self, c):
        if c.threads != 1:
            return Rule([Fail("unsupported", f"clusterlaunchcontrol.try_cancel by {c.threads} "
                              "threads (each issues its own request) is not modelled")])
        failed, granted = Local(clc_failed(self.pool)), CounterField(self.pool)
        limit = c.kernel.counter(self.pool).limit
        body = [When(_ne(failed, 0), [Fail(
                    "unsupported", "{who} issues clusterlaunchcontrol.try_cancel after one it "
                    "issued failed: undefined if its CTA observed the failure (PTX), and a "
                    "success after a failure is not modelled")]),
                Set(failed, Select(_lt(granted, limit), Const(0), Const(1))),
                Set(granted, _plus(granted, _minus(Const(1), failed)))]
        ok = (_minus(Const(1), failed),) * CLC_WORDS
        if not self.multicast:
            el, checks = resolve(c, self.bar)
            return Rule([*checks, *remote_alive(c, self.bar, el, "stores into"), *body,
                         *self._store_words(c, el, ok, "try_cancel")])
        _, checks = resolve(c, self.bar)
        for t in range(c.kernel.num_ctas):
            el = El(self.bar.name, Const(t), self.bar.index)
            if t != c.cta:
                body.append(When(_eq(Live(Const(t)), 0), [Fail(
                    "cluster-lifetime", "{who} multicasts a try_cancel response into {bar}, but "
                    "the threads of CTA {0} have all exited (its shared memory may belong to "
                    "another CTA by now)", (Const(t),), el)]))
            body += self._store_words(c, el, ok, "try_cancel")
        return Rule([*checks, *body])
