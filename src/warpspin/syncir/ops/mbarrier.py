"""mbarrier ops: init, fence.mbarrier_init, arrive, expect_tx, wait, test_wait (PTX
9.7.13.15, 9.7.13.4)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Const, Expr, Loc, MBarRef, NOLOC, _lift_fields
from ..objects import LIMITS
from ..rules import El, Fail, Hook, Local, Obs, Rule, Self, Set, When, all_of, any_of
from .base import (ALL, FUSION_RELEASE, FUSION_WAIT, SYMMETRIC, Footprint, SyncOp, _acc, _band, _e,
                   _eq, _expect_tx, _ge, _gt, _lt, _minus, _ne, _update_footprint, arrive, bad_vis,
                   complete_phase, fmt_bar, ref_scope, remote_alive, resolve, sync_op, vis_checks)
from .base import SASS_OBLIGATION, SASS_SYNC_ORDER
from .dsmem import _fmt_scope, _scope_problems, dsmem_release


# ----------------------------------------------------------------------------- mbarrier ops

@sync_op
@dataclass(frozen=True)
class MbarInit(SyncOp):
    """mbarrier.init: expected arrival count `count`, phase 0, tx-count 0."""
    bar: MBarRef
    count: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "mbarrier.init"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "mbar.init"
    ptx: ClassVar[str] = "9.7.13.15.9"
    summary: ClassVar[str] = ("vis = 1, exp = pend = count (1..2^20-1, else arrival-mismatch), "
                              "tx = 0, n = 0, by = the instance; on an initialized barrier: "
                              "barrier-reinit; only in the own CTA (else scope)")
    # the initializer's identity is stored: instances that init are not symmetric
    proven: ClassVar[frozenset[str]] = ALL - {SYMMETRIC}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"), Const(1))

    def __post_init__(self): _lift_fields(self, "count")

    def fmt(self): return f"mbarrier.init {fmt_bar(self.bar)}, count={_e(self.count)}"

    def footprint(self, k):
        return Footprint((_acc("mbarrier", "write", ref_scope(self.bar), identity="write"),))

    def rule(self, c):
        el, checks = resolve(c, self.bar)
        return Rule([
            *_own_cta_only(c, self.bar, el, "mbarrier.init"), *checks,
            Hook("init", el),
            When(_ne(el.vis, 0), [Fail("barrier-reinit", "{who} initializes {bar} again while "
                                       "it is live (no mbarrier.inval)", (), el)]),
            *([] if isinstance(self.count, Const) and 1 <= self.count.value <= LIMITS.arrive_count
              else [When(any_of(_lt(self.count, 1), _gt(self.count, LIMITS.arrive_count)),
                         [Fail("arrival-mismatch", "{bar} initialized with count {0}, outside "
                               f"1..{LIMITS.arrive_count}", (self.count,), el)])]),
            Set(el.vis, 1), Set(el.exp, self.count), Set(el.pend, self.count), Set(el.tx, 0),
            Set(el.n, 0), Set(el.by, Self())])


def _own_cta_only(c, ref: MBarRef, el: El, what: str) -> list:
    """Ops that PTX defines on .shared::cta only."""
    if ref.cta is None:
        return []
    return [When(_ne(el.cta, c.cta), [Fail("scope", "{who} executes " + what + " on {bar} in CTA "
                                           "{0}: it supports only the executing CTA's shared "
                                           "memory (.shared::cta)", (el.cta,), el)])]


@sync_op
@dataclass(frozen=True)
class MbarInitFence(SyncOp):
    """fence.mbarrier_init.release.cluster: the executing instance's earlier inits become
    visible once a CTA or cluster barrier completes after it."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "fence.mbarrier_init"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "mbar.fence"
    ptx: ClassVar[str] = "9.7.13.4"
    summary: ClassVar[str] = "every element of the own CTA with vis = 1 and by = the instance: vis = 2"
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def footprint(self, k):
        return Footprint((_acc("mbarrier", "rw", "cta", identity="compare"),))

    def rule(self, c):
        body = []
        for m in c.kernel.mbarriers:
            if m.name not in c.inited_arrays:
                continue
            for i in range(m.size):
                el = El(m.name, Const(c.cta), Const(i))
                body.append(When(all_of(_eq(el.vis, 1), _eq(el.by, Self())), [Set(el.vis, 2)]))
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class MbarArrive(SyncOp):
    """mbarrier.arrive with `count`, once per executing thread (also on a peer CTA's barrier
    through mapa: `bar.cta`)."""
    bar: MBarRef
    count: Expr = Const(1)
    loc: Loc = NOLOC
    scope: str = "cta"   # the release's scope (.release.cta, the PTX default, or .cluster)
    mnemonic: ClassVar[str] = "mbarrier.arrive"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"SYNCS\.ARRIVE"
    hb_rule: ClassVar[str | None] = "mbar.update"
    ptx: ClassVar[str] = "9.7.13.15.13"
    summary: ClassVar[str] = ("per thread: pend -= count (count 1..2^20-1; more than pend: "
                              "arrival-mismatch), then phase completion; use before init: "
                              "uninitialized-barrier; into an exited CTA: cluster-lifetime; on a "
                              "peer's barrier at CTA scope after a DSMEM store into it: scope")
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_RELEASE}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"))

    def __post_init__(self): _lift_fields(self, "count")

    def fmt(self):
        c = "" if self.count == Const(1) else f", count={_e(self.count)}"
        return f"mbarrier.arrive {fmt_bar(self.bar)}{c}{_fmt_scope(self.scope)}"

    def problems(self, k): return _scope_problems(self.scope)

    def footprint(self, k):
        return _update_footprint(self.bar)

    def rule(self, c):
        el, checks = resolve(c, self.bar)
        return Rule([*checks, *remote_alive(c, self.bar, el, "arrives on"),
                     *vis_checks(el, tma=False), *dsmem_release(c, self.bar, el, self.scope),
                     *arrive(el, self.count, c.threads)])


@sync_op
@dataclass(frozen=True)
class MbarArriveExpectTx(SyncOp):
    """mbarrier.arrive.expect_tx: tx-count += bytes, then arrive(1); once per executing thread."""
    bar: MBarRef
    bytes: Expr
    loc: Loc = NOLOC
    scope: str = "cta"
    mnemonic: ClassVar[str] = "mbarrier.arrive.expect_tx"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    sass: ClassVar[str] = r"SYNCS\.ARRIVE"
    hb_rule: ClassVar[str | None] = "mbar.update"
    ptx: ClassVar[str] = "9.7.13.15.12, 9.7.13.15.13"
    summary: ClassVar[str] = ("per thread: tx += bytes (0..2^20-1; tx beyond ±(2^20-1): "
                              "tx-mismatch), then arrive(1)")
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_RELEASE}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"), Const(64))

    def __post_init__(self): _lift_fields(self, "bytes")

    def fmt(self):
        return (f"mbarrier.arrive.expect_tx {fmt_bar(self.bar)}, bytes={_e(self.bytes)}"
                f"{_fmt_scope(self.scope)}")

    def problems(self, k): return _scope_problems(self.scope)

    def footprint(self, k):
        return _update_footprint(self.bar)

    def rule(self, c):
        el, expect = _expect_tx(c, self.bar, self.bytes, "arrives on")
        return Rule([*expect, *dsmem_release(c, self.bar, el, self.scope),
                     *arrive(el, Const(1), c.threads)])


@sync_op
@dataclass(frozen=True)
class MbarExpectTx(SyncOp):
    """mbarrier.expect_tx: tx-count += bytes, no arrival; once per executing thread."""
    bar: MBarRef
    bytes: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "mbarrier.expect_tx"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "mbar.update"
    ptx: ClassVar[str] = "9.7.13.15.11"
    summary: ClassVar[str] = "per thread: tx += bytes, then phase completion"
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_RELEASE}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"), Const(64))

    def __post_init__(self): _lift_fields(self, "bytes")

    def fmt(self): return f"mbarrier.expect_tx {fmt_bar(self.bar)}, bytes={_e(self.bytes)}"

    def footprint(self, k):
        return _update_footprint(self.bar)

    def rule(self, c):
        el, expect = _expect_tx(c, self.bar, self.bytes, "expects bytes on")
        return Rule([*expect, *complete_phase(el)])


class _ParityWait(SyncOp):
    """What a parity wait or test-wait sees (docs/semantics.md, parity aliasing)."""

    def conditions(self, c):
        """(element, checks, bad visibility, aliased, passes) for this wait in context c."""
        el, checks = resolve(c, self.bar)
        checks = [*_own_cta_only(c, self.bar, el, self.mnemonic), *checks]
        par = _band(self.parity, Const(1))
        o = Obs(self.bar.name, self.bar.index)
        lag = _minus(el.n, o)
        aliased = any_of(all_of(_ge(lag, 2), _eq(par, _band(o, Const(1)))), _ge(lag, 3))
        passed = _ne(_band(el.n, Const(1)), par)
        return el, checks, bad_vis(el, tma=False), aliased, passed

    def check_conditions(self, c, el, bad, aliased):
        par = _band(self.parity, Const(1))
        lag = _minus(el.n, Obs(self.bar.name, self.bar.index))
        return [When(bad, vis_checks(el, tma=False), [
            When(aliased, [Fail("parity-aliasing", "{who} waits on {bar} with parity {0}, but the "
                                "barrier completed {1} phases since this waiter last observed "
                                "it: the parity no longer names the phase it waits for",
                                (par, lag), el)])])]

    def footprint(self, k):
        return Footprint((_acc("mbarrier", "read", ref_scope(self.bar), identity="compare"),
                          _acc("observation", "rw", "thread")),
                         blocking=isinstance(self, MbarWait))


def _scope_guard(c, ref: MBarRef, el: El, checks: list) -> Expr:
    """Waits are enabled when they would violate scope or name a missing element, so that the
    violation is found where the hardware would block."""
    conds = []
    if ref.cta is not None:
        conds.append(_ne(el.cta, c.cta))
    for ch in checks:
        conds.append(ch.cond)
    return any_of(*conds)


@sync_op
@dataclass(frozen=True)
class MbarWait(_ParityWait):
    """mbarrier.try_wait.parity in a retry loop: blocks until the phase of parity `parity` has
    completed, i.e. until the current phase's parity differs from `parity`."""
    bar: MBarRef
    parity: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "mbarrier.wait"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"SYNCS\.PHASECHK"
    hb_rule: ClassVar[str | None] = "mbar.wait"
    ptx: ClassVar[str] = "9.7.13.15.16"
    summary: ClassVar[str] = ("blocks until (n & 1) != parity; a waiter two or more phases "
                              "behind: parity-aliasing; then obs = n")
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_WAIT}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"), Const(0))

    def __post_init__(self): _lift_fields(self, "parity")

    def fmt(self): return f"mbarrier.wait {fmt_bar(self.bar)}, parity={_e(self.parity)}"

    def rule(self, c):
        el, checks, bad, aliased, passed = self.conditions(c)
        return Rule([*checks, *self.check_conditions(c, el, bad, aliased),
                     Set(Obs(self.bar.name, self.bar.index), el.n)],
                    guard=any_of(_scope_guard(c, self.bar, el, checks), passed, aliased, bad))


@sync_op
@dataclass(frozen=True)
class MbarTestWait(_ParityWait):
    """mbarrier.test_wait.parity: non-blocking; `dest` := 1 if the phase completed, else 0."""
    dest: str
    bar: MBarRef
    parity: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "mbarrier.test_wait"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"SYNCS\.PHASECHK"
    hb_rule: ClassVar[str | None] = "mbar.test"
    ptx: ClassVar[str] = "9.7.13.15.16"
    summary: ClassVar[str] = "dest = ((n & 1) != parity), never blocks; aliasing as for the wait"
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("ok", MBarRef("b"), Const(0))

    def __post_init__(self): _lift_fields(self, "parity")

    def own_locals(self, pc): return (self.dest,)

    def fmt(self):
        return f"{self.dest} = mbarrier.test_wait {fmt_bar(self.bar)}, parity={_e(self.parity)}"

    def wait_guard(self, c) -> Expr:
        """When the wait on the same phase would be enabled (R9 blocks the test otherwise)."""
        el, checks, bad, aliased, passed = self.conditions(c)
        return any_of(_scope_guard(c, self.bar, el, checks), passed, aliased, bad)

    def rule(self, c):
        el, checks, bad, aliased, passed = self.conditions(c)
        return Rule([*checks, *self.check_conditions(c, el, bad, aliased),
                     When(passed, [Set(Obs(self.bar.name, self.bar.index), el.n),
                                   Set(Local(self.dest), 1)],
                          [Set(Local(self.dest), 0)])])
