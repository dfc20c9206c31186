"""tcgen05 and tensor memory: tcgen05.commit, tcgen05.alloc / dealloc /
relinquish_alloc_permit and the cta_group::2 resume, TMEM accesses (PTX 9.7.16)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, MBarRef, NOLOC, For, While, _lift_fields, stmt_bodies
from ..objects import TMEM_COLUMNS
from ..rules import (BufField, Carried, El, Fail, Hook, Inflight, Live, Local, Rule, Set, TmemField,
                     When, add, all_of, any_of, sub)
from .base import (ALL, INDEPENDENT_CTAS, PAIR_COMPLETE, Footprint, SyncOp, _acc, _band, _bit, _e,
                   _eq, _gt, _le, _lt, _minus, _ne, _plus, complete_phase, fmt_bar, remote_alive,
                   resolve, snap_var, sync_op, vis_checks)
from .base import SASS_OBLIGATION, SASS_SYNC_ORDER
from .copies import _issue, _multicast_issue
from .reads import MmaRead, commit_bits, mma_bufs, mma_open, tmem_mma_bufs


# ----------------------------------------------------------------------------- tcgen05 and TMEM

@sync_op
@dataclass(frozen=True)
class Tcgen05Commit(SyncOp):
    """tcgen05.commit.mbarrier::arrive::one: the barrier tracks every tcgen05 async op (mma, cp,
    shift) the executing thread issued before it; once they complete, one arrive (count 1) lands
    on it, later, in its own step. Per executing thread (the DSL commits inside elect_one: the
    extractor keeps its Lanes). `multicast` (.multicast::cluster, a CTA bit mask): the arrive
    lands on the barrier at the same offset in every CTA of the mask."""
    bar: MBarRef
    loc: Loc = NOLOC
    multicast: Expr | None = None
    mnemonic: ClassVar[str] = "tcgen05.commit"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"UTCBAR\b"
    hb_rule: ClassVar[str | None] = "async.issue"
    ptx: ClassVar[str] = "9.7.16 (tcgen05.commit)"
    summary: ClassVar[str] = ("per thread, per target CTA: one arrive in flight (use before the "
                              "init is fenced: uninitialized-barrier; a mask outside the cluster: "
                              "scope; into an exited CTA: cluster-lifetime); each lands later, "
                              "in its own step: pend -= 1 (none due: arrival-mismatch), then "
                              "phase completion")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(MBarRef("b"))

    def __post_init__(self): _lift_fields(self, "multicast")

    def fmt(self):
        mc = "" if self.multicast is None else f", multicast={_e(self.multicast)}"
        return f"tcgen05.commit -> {fmt_bar(self.bar)}{mc}"

    def facts(self):
        crosses = self.multicast is not None or self.bar.cta is not None
        return self.proven - ({INDEPENDENT_CTAS} if crosses else set())

    def problems(self, k):
        if self.multicast is not None and self.bar.cta is not None:
            return ["a multicast commit names its CTAs by the mask, not by the barrier"]
        return []

    def footprint(self, k):
        scope = "cluster" if self.multicast is not None or self.bar.cta is not None else "cta"
        acc = [_acc("mbarrier", "rw", scope, proxy="async", identity="compare"),
               _acc("async-copy", "write", scope, proxy="async")]
        if scope == "cluster":
            acc.append(_acc("live-threads", "read", "cluster"))
        if k.memo("has_mma_read", lambda: any(isinstance(s, MmaRead) for s in k.ops())):
            # its arrive retires MMA reads and completes accumulator writes
            acc.append(_acc("buffer-stage", "rw", scope, proxy="async"))
        return Footprint(tuple(acc), retired_by="the arrive on the mbarrier")

    def rule(self, c):
        T = c.threads
        if self.multicast is None:
            el, checks = resolve(c, self.bar)
            carry = [*self._carry(c, c.cta), *self._cover(c, c.cta)] \
                if self.bar.cta is None else self._no_carry(c)
            return Rule([*checks, *remote_alive(c, self.bar, el, "commits to"),
                         *vis_checks(el, tma=True), *carry,
                         *_issue(Inflight(c.process, c.pc, el.cta, el.index), T),
                         *self._opened(c)])
        _, checks = resolve(c, self.bar)
        return Rule([*checks, *_multicast_issue(c, self.bar, self.multicast, "commits",
                                                "commits to",
                                                lambda t: [*self._carry(c, t), *self._cover(c, t)]),
                     *self._opened(c)])

    def _masks(self, c) -> list[tuple[str, bool, Local]]:
        return [(b, peer, Local(mma_open(b, peer))) for b, peer in mma_bufs(c.kernel, c.process)]

    def _carry(self, c, t: int) -> list:
        """The open MMA reads of the stages in CTA `t` ride on this commit's arrive there: its
        slot carries their mask (one thread: each commit of a warp's thread would carry the
        same reads; a slot with commits in flight carrying other reads: not modelled)."""
        out = []
        for b, peer, open_ in self._masks(c):
            if t != (c.cta ^ 1 if peer else c.cta):
                continue
            carried = Carried(c.process, c.pc, Const(t), self.bar.index, b)
            infl = Inflight(c.process, c.pc, Const(t), self.bar.index)
            if c.threads != 1:
                out.append(When(_ne(open_, 0), [Fail(
                    "unsupported", f"{{who}} commits tcgen05.mma reads of {b} with {c.threads} "
                    "threads (one thread commits what its warp issued)")]))
            out += [When(all_of(_gt(infl, 0), _ne(carried, open_)), [Fail(
                        "unsupported", f"{{who}} commits tcgen05.mma reads of {b} while a commit "
                        "of the same op into the same barrier carrying other reads is in flight "
                        "(not modelled)")]),
                    Set(carried, open_)]
        return out

    def _no_carry(self, c) -> list:
        out = [When(_ne(open_, 0), [Fail(
                    "unsupported", f"{{who}} commits tcgen05.mma reads of {b} to a barrier of "
                    "another CTA named by address (not modelled)")])
               for b, _, open_ in self._masks(c)]
        if tmem_mma_bufs(c.kernel, c.process):
            out.append(Fail("unsupported", "{who} commits tcgen05.mma accumulator writes to a "
                            "barrier of another CTA named by address (not modelled)"))
        return out

    def _cover(self, c, t: int) -> list:
        """This commit covers every accumulator stage in CTA `t` the thread's MMAs may still
        write: its landing there completes them (its slot's bit joins their `cov`). The arrives
        of one slot are not told apart, so a commit issued while another of its op into the
        same barrier is in flight covers nothing new (conservative: the stages it would cover
        stay in flight until another commit lands)."""
        bufs = [b for b, peer in tmem_mma_bufs(c.kernel, c.process)
                if t == (c.cta ^ 1 if peer else c.cta)]
        if not bufs:
            return []
        if c.threads != 1:
            return [Fail("unsupported", f"{{who}} commits tcgen05.mma accumulator writes with "
                         f"{c.threads} threads (one thread commits what its warp issued)")]
        infl = Inflight(c.process, c.pc, Const(t), self.bar.index)
        out = []
        base = commit_bits(c.layout, c.process)[c.pc]
        size = c.kernel.mbarrier(self.bar.name).size
        for b in bufs:
            for s in range(c.kernel.buffer(b).stages):
                st = lambda f, b=b, s=s: BufField(b, Const(t), Const(s), f)  # noqa: E731
                def cover(i, st=st):
                    return [When(all_of(_eq(st("mip"), 1), _eq(infl, 0)),
                                 [Set(st("cov"), BinOp("|", st("cov"), Const(1 << (base + i))))])]
                if isinstance(self.bar.index, Const):
                    out += cover(self.bar.index.value)
                else:
                    out += [When(_eq(self.bar.index, i), cover(i)) for i in range(size)]
        return out

    def _opened(self, c) -> list:
        return [Set(open_, Const(0)) for _, _, open_ in self._masks(c)]

    def complete(self, c, cta: int, index: int):
        el = El(self.bar.name, Const(cta), Const(index))
        infl = Inflight(c.process, c.pc, Const(cta), Const(index))
        retire = []
        for b, peer in tmem_mma_bufs(c.kernel, c.process):
            if cta != (c.cta ^ 1 if peer else c.cta):
                continue
            bit = Const(1 << (commit_bits(c.layout, c.process)[c.pc] + index))
            for s in range(c.kernel.buffer(b).stages):
                st = lambda f, b=b, s=s: BufField(b, Const(cta), Const(s), f)  # noqa: E731
                retire.append(When(_ne(_band(st("cov"), bit), 0),
                                   [Set(st("mip"), Const(0)), Set(st("cov"), Const(0))]))
        for b, peer in mma_bufs(c.kernel, c.process):
            if cta != (c.cta ^ 1 if peer else c.cta):
                continue
            carried = Carried(c.process, c.pc, Const(cta), Const(index), b)
            retire += [When(_bit(carried, s), [sub(BufField(b, Const(cta), Const(s), "mrd"), 1)])
                       for s in range(c.kernel.buffer(b).stages)]
            retire.append(When(_eq(infl, 0), [Set(carried, Const(0))]))
        return Rule([sub(infl, 1), *retire,
                     When(_gt(Const(1), el.pend), [Fail(
                         "arrival-mismatch", "the arrive of a tcgen05.commit lands on {bar}, "
                         "whose current phase expects no more arrivals", (), el)]),
                     sub(el.pend, 1), Hook("arrive", el), *complete_phase(el)],
                    guard=_gt(infl, 0))

    def completion_text(self, target: str, env: dict) -> str:
        return f"(tcgen05 ops complete: the commit arrives on {target})"

    def targets(self, kernel) -> list[int]:
        if self.multicast is None and self.bar.cta is None:
            return []
        return list(range(kernel.num_ctas))


def uses_tmem(kernel) -> bool:
    """Whether the kernel allocates tensor memory (its CTAs then have an objects.TMEM)."""
    return kernel.memo("uses_tmem", lambda: any(
        isinstance(s, (TmemAlloc, TmemDealloc, TmemRelinquish, TmemAccess)) for s in kernel.ops()))


def _tmem(c, f: str) -> TmemField:
    return TmemField(Const(c.cta), f)


def _whole_warp(c, what: str) -> list:
    """tcgen05.alloc/dealloc are .sync.aligned: one warp executes each, all 32 threads of it."""
    if c.threads == 32:
        return []
    return [Fail("unsupported", f"{{who}} executes {what} with {c.threads} threads: the model "
                 "follows it only when a whole warp executes it (.sync.aligned)")]


def _bad_column_count(n: Expr) -> Expr | None:
    """A column count is a power of two in 32..512 (PTX tcgen05.alloc); None: it is."""
    if isinstance(n, Const) and n.value in (32, 64, 128, 256, 512):
        return None
    return any_of(_lt(n, 32), _gt(n, TMEM_COLUMNS), _ne(_band(n, _minus(n, 1)), 0))


def _column_count(n: Expr, what: str) -> list:
    bad = _bad_column_count(n)
    if bad is None:
        return []
    return [When(bad, [Fail("invalid-operand", "{who} " + what + " {0} TMEM columns: not a power "
                            "of two in 32..512", (n,))])]


class _TmemColumns:
    """What an op on `cols` TMEM columns shares (once per executing warp)."""
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(Const(128))

    def __post_init__(self): _lift_fields(self, "cols")

    def fmt(self): return f"{self.mnemonic}{_pair_suffix(self)} cols={_e(self.cols)}"


# ---- cta_group::2: one warp in each CTA of a pair (ranks 2k and 2k+1) issues the op; the
# first to issue it waits for its peer's; the second applies it to both CTAs (docs/semantics.md)
PAIR_KINDS = {"tcgen05.alloc": 1, "tcgen05.dealloc": 2, "tcgen05.relinquish_alloc_permit": 3}


def _pair_suffix(op) -> str:
    return ".cta_group::2" if getattr(op, "pair", False) else ""


def _pair_leader(c) -> int:
    return c.cta - c.cta % 2


def _pair_problems(k) -> list[str]:
    size = k.cluster_ctas or k.num_ctas
    if size % 2:
        return [f"a cta_group::2 op in a cluster of {size} CTAs (the pairs are CTAs 2k and "
                "2k+1 of a cluster)"]
    return []


def _pair_rule(c, op, cols: Expr, effect) -> list:
    """The collective issue of `op` by this CTA's warp: the first of the pair records what it
    issued; the second checks that it issued the same, applies `effect(cta)` to both CTAs and
    moves the pair's generation, which the first waits for (`TmemPairResume`)."""
    lead = Const(_pair_leader(c))
    pf = lambda f: TmemField(lead, f)  # noqa: E731
    kind, side = PAIR_KINDS[op.mnemonic], c.cta % 2
    both = [a for cta in (_pair_leader(c), _pair_leader(c) + 1) for a in effect(Const(cta))]
    return [Set(Local(snap_var(c.pc)), pf("pg")),
            When(_eq(pf("pa"), 0), [Set(pf("pa"), 1), Set(pf("pk"), kind), Set(pf("pw"), side),
                                    Set(pf("pn"), cols)], [
                Hook(PAIR_COMPLETE),
                When(_eq(pf("pw"), side), [Fail(
                    "arrival-mismatch", "{who} issues " + op.mnemonic + ".cta_group::2 while "
                    "another warp of its CTA waits in one: one warp of each CTA of the pair "
                    "issues it")]),
                *(When(_eq(pf("pk"), k), [Fail(
                    "arrival-mismatch", "{who} issues " + op.mnemonic + ".cta_group::2 while "
                    "the warp of the peer CTA waits in " + other + ".cta_group::2: the pair's "
                    "warps must issue the same op")])
                  for other, k in PAIR_KINDS.items() if k != kind),
                When(_ne(pf("pn"), cols), [Fail(
                    "arrival-mismatch", "{who} issues " + op.mnemonic + ".cta_group::2 of {0} "
                    "columns while the warp of the peer CTA issued it with {1}", (cols, pf("pn")))]),
                *both, Set(pf("pa"), 0), Set(pf("pg"), _minus(Const(1), pf("pg")))])]


def _alloc_effect(c, cols: Expr):
    def effect(cta: Expr) -> list:
        return [When(_ne(TmemField(cta, "rel"), 0), [Fail(
                    "tmem-lifetime", "{who} allocates tensor memory after CTA {0} relinquished "
                    "the allocation permit (tcgen05.relinquish_alloc_permit)", (cta,))]),
                add(TmemField(cta, "cols"), cols)]
    return effect


def _dealloc_effect(c, cols: Expr):
    def effect(cta: Expr) -> list:
        held = TmemField(cta, "cols")
        return [When(_gt(cols, held), [Fail(
                    "tmem-lifetime", "{who} frees {0} TMEM columns, but CTA {2} holds only {1}",
                    (cols, held, cta))]),
                *_in_flight_at_free(c, cta.value), sub(held, cols)]
    return effect


def _in_flight_at_free(c, cta: int) -> list:
    """Freeing a CTA's tensor memory while a tcgen05.ld or tcgen05.mma of an accumulator stage
    may still run: tmem-lifetime."""
    out = []
    for b in c.kernel.buffers:
        if b.space != "tmem":
            continue
        label = b.label or b.name
        for s in range(b.stages):
            st = lambda f, s=s: BufField(b.name, Const(cta), Const(s), f)  # noqa: E731
            out += [When(_gt(st("tld"), 0), [Fail(
                        "tmem-lifetime", f"{{who}} frees the tensor memory of CTA {cta} while "
                        f"{{0}} tcgen05.ld read(s) of stage {s} of {label} are not retired: no "
                        "tcgen05.wait::ld of the reading warp comes before the free",
                        (st("tld"),))]),
                    When(_eq(st("mip"), 1), [Fail(
                        "tmem-lifetime", f"{{who}} frees the tensor memory of CTA {cta} while a "
                        f"tcgen05.mma writing stage {s} of {label} may still run: no "
                        "tcgen05.commit issued after it has landed before the free")])]
    return out


def _pair_footprint(blocking: bool) -> Footprint:
    return Footprint((_acc("tmem", "rw", "cluster"),), blocking=blocking)


class _PairOp:
    """What the three TMEM allocation ops share: `pair` (cta_group::2) makes the op collective
    across the CTA pair, a second step (`TmemPairResume`) waiting for the peer's."""

    def own_locals(self, pc): return (snap_var(pc),) if self.pair else ()

    def hb_family(self):
        return "tmem.pair" if self.pair else self.hb_rule

    def resume(self, snap):
        return TmemPairResume(self.mnemonic, snap, self.loc) if self.pair else None

    def facts(self):
        return self.proven - {INDEPENDENT_CTAS} if self.pair else self.proven

    def problems(self, k):
        return _pair_problems(k) if self.pair else []


@sync_op
@dataclass(frozen=True)
class TmemAlloc(_PairOp, _TmemColumns, SyncOp):
    """tcgen05.alloc of `cols` columns, once per executing warp: blocks while the CTA's columns
    and these would exceed the 512 of the SM (in the model only this CTA's allocations count: a
    CTA elsewhere on the SM that frees its columns is assumed to). `pair` (.cta_group::2): one
    warp in each CTA of the pair issues it; both CTAs get the columns once both issued it."""
    cols: Expr
    loc: Loc = NOLOC
    pair: bool = False
    mnemonic: ClassVar[str] = "tcgen05.alloc"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16 (tcgen05.alloc)"
    summary: ClassVar[str] = ("once per warp: waits until cols + n <= 512, then cols += n (after "
                              "tcgen05.relinquish_alloc_permit: tmem-lifetime; n not a power of "
                              "two in 32..512: invalid-operand); cta_group::2: the first warp of "
                              "the pair waits for the peer's, the second (once n fits in both "
                              "CTAs) allocates in both (a different op or count: "
                              "arrival-mismatch)")

    def footprint(self, k):
        if self.pair:
            return _pair_footprint(True)
        return Footprint((_acc("tmem", "rw", "cta"),), blocking=True)

    def rule(self, c):
        checks = [*_whole_warp(c, "tcgen05.alloc"), *_column_count(self.cols, "allocates")]
        if self.pair:
            lead = _pair_leader(c)
            fits = all_of(*(_le(_plus(TmemField(Const(x), "cols"), self.cols), TMEM_COLUMNS)
                            for x in (lead, lead + 1)))
            bad = _bad_column_count(self.cols)
            first = _eq(TmemField(Const(lead), "pa"), 0)
            guard = any_of(first, fits) if bad is None else any_of(bad, first, fits)
            return Rule([*checks, *_pair_rule(c, self, self.cols, _alloc_effect(c, self.cols))],
                        guard=guard)
        cols = _tmem(c, "cols")
        return Rule([*checks, *_alloc_effect(c, self.cols)(Const(c.cta))],
                    guard=self._guard(cols))

    def _guard(self, cols) -> Expr:
        """Enabled when the columns fit, or at once when the count is invalid (to report it)."""
        fits = _le(_plus(cols, self.cols), TMEM_COLUMNS)
        bad = _bad_column_count(self.cols)
        return fits if bad is None else any_of(bad, fits)


@sync_op
@dataclass(frozen=True)
class TmemDealloc(_PairOp, _TmemColumns, SyncOp):
    """tcgen05.dealloc of `cols` columns, once per executing warp; `pair` (.cta_group::2): one
    warp in each CTA of the pair, freeing the columns in both once both issued it."""
    cols: Expr
    loc: Loc = NOLOC
    pair: bool = False
    mnemonic: ClassVar[str] = "tcgen05.dealloc"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16 (tcgen05.dealloc)"
    summary: ClassVar[str] = ("once per warp: cols -= n (more than the CTA holds: tmem-lifetime; "
                              "n not a power of two in 32..512: invalid-operand); cta_group::2: "
                              "collective as tcgen05.alloc's, freeing in both CTAs")

    def footprint(self, k):
        fp = _pair_footprint(True) if self.pair else Footprint((_acc("tmem", "rw", "cta"),))
        if any(b.space == "tmem" for b in k.buffers):  # it reads the accumulators' in-flight state
            fp = Footprint((*fp.accesses, _acc("buffer-stage", "read",
                                               "cluster" if self.pair else "cta")),
                           blocking=fp.blocking)
        return fp

    def rule(self, c):
        checks = [*_whole_warp(c, "tcgen05.dealloc"), *_column_count(self.cols, "frees")]
        if self.pair:
            return Rule([*checks, *_pair_rule(c, self, self.cols,
                                              _dealloc_effect(c, self.cols))])
        return Rule([*checks, *_dealloc_effect(c, self.cols)(Const(c.cta))])


@sync_op
@dataclass(frozen=True)
class TmemRelinquish(_PairOp, SyncOp):
    """tcgen05.relinquish_alloc_permit: the CTA allocates no more; `pair` (.cta_group::2): both
    CTAs of the pair, once the warps of both issued it."""
    loc: Loc = NOLOC
    pair: bool = False
    mnemonic: ClassVar[str] = "tcgen05.relinquish_alloc_permit"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16 (tcgen05.relinquish_alloc_permit)"
    summary: ClassVar[str] = ("rel = 1 (a later tcgen05.alloc of the CTA: tmem-lifetime); "
                              "cta_group::2: collective as tcgen05.alloc's, in both CTAs")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return f"tcgen05.relinquish_alloc_permit{_pair_suffix(self)}"

    def footprint(self, k):
        return _pair_footprint(True) if self.pair else Footprint((_acc("tmem", "write", "cta"),))

    def rule(self, c):
        effect = lambda cta: [Set(TmemField(cta, "rel"), 1)]  # noqa: E731
        if self.pair:
            return Rule(_pair_rule(c, self, Const(0), effect))
        return Rule(effect(Const(c.cta)))


@sync_op
@dataclass(frozen=True)
class TmemPairResume(SyncOp):
    """The wait half of a cta_group::2 TMEM allocation op `what` at the previous pc (made by the
    flattener): until the peer CTA's warp has issued it too."""
    what: str
    snap: str
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tcgen05.pair.resume"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "tmem.pair.resume"
    ptx: ClassVar[str] = "9.7.16 (tcgen05 issue granularity: .cta_group::2)"
    summary: ClassVar[str] = ("blocks until the pair's generation differs from the one seen at "
                              "the issue (the peer's warp issued the op too)")
    proven: ClassVar[frozenset[str]] = ALL - {INDEPENDENT_CTAS}

    @classmethod
    def example(cls):
        return cls("tcgen05.alloc", snap_var(0))

    def fmt(self): return f"{self.what}.cta_group::2 (resume)"

    def footprint(self, k):
        return Footprint((_acc("tmem", "read", "cluster"),), blocking=True)

    def rule(self, c):
        return Rule([], guard=_ne(TmemField(Const(_pair_leader(c)), "pg"), Local(self.snap)))


TMEM_ACCESSES = ("tcgen05.mma", "tcgen05.ld", "tcgen05.st", "tcgen05.cp")


@sync_op
@dataclass(frozen=True)
class TmemAccess(SyncOp):
    """The issue of a tcgen05 op that reads or writes the CTA's tensor memory (`what`: one of
    TMEM_ACCESSES). The check is that the CTA holds columns at the issue: an access before the
    alloc or after the dealloc. Which columns, and an access still in flight when they are
    freed, are not followed (tmem_access_checked says when holding any column is the same as
    holding the accessed ones)."""
    what: str
    loc: Loc = NOLOC
    pair: bool = False  # a cta_group::2 MMA: it accesses the TMEM of both CTAs of the pair
    data: bool = False  # its data is followed: an MmaRead / TmemLoad of a TMEM buffer stage
    mnemonic: ClassVar[str] = "tmem.access"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16 (tcgen05 memory consistency; tcgen05.dealloc)"
    summary: ClassVar[str] = ("the CTA holds no TMEM columns (before tcgen05.alloc or after "
                              "tcgen05.dealloc): tmem-lifetime")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("tcgen05.ld")

    def fmt(self):
        return f"tmem.access {self.what}{_pair_suffix(self)}" + (" (data followed)" if self.data else "")

    def facts(self):
        return self.proven - {INDEPENDENT_CTAS} if self.pair else self.proven

    def problems(self, k):
        out = [] if self.what in TMEM_ACCESSES else [f"unknown TMEM access {self.what!r}"]
        if self.data and not any(b.space == "tmem" for b in k.buffers):
            out.append("a TMEM access whose data is followed, in a kernel with no TMEM buffer")
        return out + (_pair_problems(k) if self.pair else [])

    def footprint(self, k):
        return Footprint((_acc("tmem", "read", "cluster" if self.pair else "cta"),))

    def rule(self, c):
        if not self.pair:
            return Rule([When(_eq(_tmem(c, "cols"), 0), [Fail(
                "tmem-lifetime", "{who} issues " + self.what + " while its CTA holds no tensor "
                "memory (before tcgen05.alloc, or after tcgen05.dealloc freed it)")])])
        lead = _pair_leader(c)
        return Rule([When(_eq(TmemField(Const(x), "cols"), 0), [Fail(
            "tmem-lifetime", "{who} issues " + self.what + ".cta_group::2 while CTA "
            f"{x} of its pair holds no tensor memory (before tcgen05.alloc, or after "
            "tcgen05.dealloc freed it)")]) for x in (lead, lead + 1)])


def tmem_access_checked(kernel, cta: int) -> bool:
    """Whether a TMEM access of `cta` while it holds no columns is every access to freed or
    unallocated columns: one alloc op, outside any loop, in a process of one instance, and every
    dealloc frees as many columns (so the CTA holds either the one allocation or nothing)."""
    allocs, deallocs = [], []
    for p in kernel.processes:
        if p.cta != cta:
            continue
        for s, loops in _with_loop_depth(p.body, 0):
            if isinstance(s, TmemAlloc):
                allocs.append((s, loops, p.instances))
            elif isinstance(s, TmemDealloc):
                deallocs.append(s)
    if len(allocs) != 1:
        return len(allocs) == 0
    alloc, loops, instances = allocs[0]
    return loops == 0 and instances == 1 and all(d.cols == alloc.cols for d in deallocs)


def _with_loop_depth(body, depth: int):
    for s in body:
        yield s, depth
        inner = depth + isinstance(s, (For, While))
        for b in stmt_bodies(s):
            yield from _with_loop_depth(b, inner)


def tmem_freed_at_exit(c) -> list:
    """The last threads of a CTA exit holding TMEM columns: the next CTA on the SM that
    allocates blocks forever (PTX: a CTA frees all it allocated before it exits)."""
    if not uses_tmem(c.kernel):
        return []
    cols = _tmem(c, "cols")
    return [When(all_of(_eq(Live(Const(c.cta)), 0), _gt(cols, 0)), [Fail(
        "tmem-lifetime", f"the last threads of CTA {c.cta} exit holding {{0}} TMEM columns "
        "(tcgen05.dealloc missing): the next CTA on the SM blocks in tcgen05.alloc forever",
        (cols,))])]
