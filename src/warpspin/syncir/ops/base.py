"""The op registry (`OPS`, `sync_op`), the `SyncOp` base, `Footprint` and `Access`, the
reduction names (`ALL`, ...) and the helpers the op families share (expressions, barrier
elements and their checks, phase completion, arrivals, publication of inits)."""
from __future__ import annotations

import weakref

from dataclasses import dataclass, field
from typing import ClassVar

from ..ir import (BinOp, Const, Expr, Loc, MBarRef, NOLOC, Select, Stmt, UnOp, WordRef, eval_expr,
                  _lift_fields, expr_vars, lift)
from ..objects import LIMITS, storer_field
from ..rules import (BufField, Call, ClusterField, CounterField, El, Fail, Hook, Inflight, Live,
                     Local, NamedField, Obs, Rule, Self, Set, TmapField, When, WordField, add,
                     all_of, any_of, sub)


SCOPES = ("thread", "warp", "cta", "cluster", "grid")

# reductions (docs/semantics.md, "Reductions"); an op lists those whose proof covers it
SYMMETRIC = "symmetric-instances"
INDEPENDENT_CTAS = "independent-ctas"
NARROW_TYPES = "narrow-types"
DEAD_RESET = "dead-variable-reset"
FUSION = "wait-release-fusion"            # the kernel may be fused (every op must allow it)
FUSION_WAIT = "wait-release-fusion:wait"      # this op may be the fused wait
FUSION_RELEASE = "wait-release-fusion:release"  # this op may be the fused release
MERGED_COMPLETIONS = "merged-completions"  # R7: copy sites whose completions are the same step
EARLY_ISSUE = "early-issue"  # R8: the kernel allows an async issue to run with the step before it
FAILED_TEST_BLOCKS = "failed-test-blocks"  # R9: a test-wait bound to fail and then wait, waits
RESUME_FUSION = "resume-fusion"  # R10: a passed barrier resume runs with the step after it
RESUME_MOVER = "resume-fusion:resume"  # this op may be the resume (its guard, once true, stays)
LOAD_RUNS = "load-runs"  # R11: consecutive shared-word loads of an instance are one step
LOAD_RUN_MOVER = "load-runs:load"  # this op may be a load of a run (a left-mover unless a race)
REDUCTIONS = (SYMMETRIC, INDEPENDENT_CTAS, NARROW_TYPES, DEAD_RESET, FUSION)


@dataclass(frozen=True)
class Access:
    """One access of an op to a declared object."""
    obj: str                   # object kind (objects.py): mbarrier, named-barrier, ...
    mode: str                  # read | write | rw
    scope: str                 # thread | warp | cta | cluster | grid: whose object
    proxy: str = "generic"     # generic | async
    identity: str | None = None  # "write": stores the executing instance's identity in the
    #                              object; "compare": compares the object with that identity


@dataclass(frozen=True)
class Footprint:
    accesses: tuple[Access, ...]
    blocking: bool = False
    retired_by: str | None = None  # async ops: what retires them

    @property
    def scope(self) -> str:
        return max((a.scope for a in self.accesses), key=SCOPES.index, default="thread")


class SyncOp(Stmt):
    """Base of every op. Subclasses are frozen dataclasses registered with @sync_op."""
    mnemonic: ClassVar[str] = "?"
    ptx: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    proven: ClassVar[frozenset[str]] = frozenset()
    # the happens-before engine's rule for it (engine/hb; docs/semantics.md, "Happens-before"):
    # "generic" (its places are checked for unordered conflicting accesses), or the barrier or
    # async-copy role it plays; None: outside the class, a kernel with it is checked by SPIN
    hb_rule: ClassVar[str | None] = None

    def hb_family(self) -> str | None:
        return self.hb_rule

    def fmt(self) -> str:
        return self.mnemonic

    def problems(self, kernel) -> list[str]:
        """Static validity (beyond names resolving), as messages."""
        return []

    def footprint(self, kernel) -> Footprint | None:
        return None

    def facts(self) -> frozenset[str]:
        return self.proven

    def facts_in(self, kernel, process: int) -> frozenset[str]:
        """The facts of this op in process `process` of `kernel` (an op whose rule depends on
        what the rest of the kernel does may prove less there)."""
        return self.facts()

    def own_locals(self, pc: int) -> tuple[str, ...]:
        """Locals of the executing instance this op writes (hidden ones included)."""
        return ()

    def resume(self, snap: str) -> "SyncOp | None":
        """An op whose wait is a second step (flattened after it, reading the snapshot local
        `snap` this op wrote): that step's op; None for a one-step op."""
        return None

    @classmethod
    def example(cls) -> "SyncOp":
        """A representative instance (the op table of docs/semantics.md, the op tests)."""
        raise NotImplementedError(f"{cls.__name__} has no example")

    def rule(self, c) -> Rule:
        raise NotImplementedError(f"{type(self).__name__} has no rule")

    def complete(self, c, cta: int, index: int) -> Rule | None:
        """Async ops: the completion of one copy towards element `index` in CTA `cta`."""
        return None


OPS: dict[str, type] = {}


def sync_op(cls):
    """Register an op class (its mnemonic must be unique)."""
    if cls.mnemonic in OPS and OPS[cls.mnemonic] is not cls:
        raise ValueError(f"op {cls.mnemonic!r} defined twice")
    OPS[cls.mnemonic] = cls
    return cls


ALL = frozenset({SYMMETRIC, INDEPENDENT_CTAS, NARROW_TYPES, DEAD_RESET, FUSION, MERGED_COMPLETIONS,
                 EARLY_ISSUE, FAILED_TEST_BLOCKS, RESUME_FUSION, LOAD_RUNS})

# ----------------------------------------------------------------------------- helpers


def fmt_bar(b: MBarRef) -> str:
    from ..printer import fmt_bar as f
    return f(b)


def _e(x) -> str:
    from ..printer import fmt_expr
    return fmt_expr(x)


def ref_scope(ref: MBarRef) -> str:
    return "cta" if ref.cta is None else "cluster"


def _bin(op):
    return lambda a, b: BinOp(op, lift(a), lift(b))


_lt, _le, _gt, _ge, _eq, _ne = (_bin(o) for o in ("<", "<=", ">", ">=", "==", "!="))
_plus, _minus, _times, _band = (_bin(o) for o in ("+", "-", "*", "&"))


def _times_t(t: int, e: Expr) -> Expr:
    return e if t == 1 else _times(Const(t), e)


def _bit(local: Local, s: int) -> Expr:
    return _ne(_band(local, Const(1 << s)), 0)


def _index_checks(name: str, index: Expr, size: int, unit: str) -> list:
    """invalid-operand when a dynamic index leaves its array (constant ones are validated)."""
    if isinstance(index, Const):
        return []
    return [When(any_of(_lt(index, 0), _ge(index, size)),
                 [Fail("invalid-operand", "{who} names " + name + "[{0}], outside the array of "
                       f"{size}{unit}", (index,))])]


def resolve(c, ref: MBarRef) -> tuple[El, list]:
    """The element `ref` names and the checks that it exists (dynamic indices, remote CTAs)."""
    size = c.kernel.mbarrier(ref.name).size
    cta = Const(c.cta) if ref.cta is None else ref.cta
    checks = _index_checks(ref.name, ref.index, size, "") + _cta_checks(c, ref.cta, "names")
    return El(ref.name, cta, ref.index), checks


def _cta_checks(c, cta: Expr | None, verb: str) -> list:
    """invalid-operand when a dynamic CTA rank (None: the executing CTA) leaves the cluster
    (constant ones are validated)."""
    if cta is None or isinstance(cta, Const):
        return []
    return [When(any_of(_lt(cta, 0), _ge(cta, c.kernel.num_ctas)),
                 [Fail("invalid-operand", "{who} " + verb + " CTA {0} of a cluster of "
                       f"{c.kernel.num_ctas}", (cta,))])]


def remote_alive(c, ref: MBarRef, el: El, what: str) -> list:
    """A remote op into a CTA whose threads have all exited (cluster-lifetime)."""
    if ref.cta is None:
        return []
    return [When(all_of(_ne(el.cta, c.cta), _eq(Live(el.cta), 0)),
                 [Fail("cluster-lifetime", "{who} " + what + " {bar}, but the threads of CTA {0} "
                       "have all exited (its shared memory may belong to another CTA by now)",
                       (el.cta,), el)])]


def bad_vis(el: El, tma: bool) -> Expr:
    """Use before init (docs/semantics.md, mbarrier)."""
    me = Self()
    return any_of(_eq(el.vis, 0),
                  all_of(_ne(el.by, me), _lt(el.vis, 3)),
                  all_of(_eq(el.by, me), _lt(el.vis, 2)) if tma else Const(0))


def vis_checks(el: El, tma: bool) -> list:
    me = Self()
    out = [When(_eq(el.vis, 0), [Fail("uninitialized-barrier",
                                      "{who} uses {bar} before it is initialized", (), el)]),
           When(all_of(_ne(el.by, me), _eq(el.vis, 1)),
                [Fail("uninitialized-barrier", "{who} uses {bar} before its init is fenced "
                      "(fence.mbarrier_init) and published by a barrier", (), el)]),
           When(all_of(_ne(el.by, me), _eq(el.vis, 2)),
                [Fail("uninitialized-barrier", "{who} uses {bar} before its init is published "
                      "by a CTA or cluster barrier after the fence", (), el)])]
    if tma:
        out.append(When(all_of(_eq(el.by, me), _eq(el.vis, 1)),
                        [Fail("uninitialized-barrier", "{who} uses {bar} with an async copy "
                              "before its init is fenced (fence.mbarrier_init)", (), el)]))
    return out


# Hooks that open the body a barrier's completion runs (the mbarrier's is "phase"): the
# happens-before engine charges what follows to the completion, not to the step that triggers it
NAMED_COMPLETE, CLUSTER_COMPLETE, PAIR_COMPLETE, PHASE = ("named-complete", "cluster-complete",
                                                          "pair-complete", "phase")


def complete_phase(el: El) -> list:
    """Phase completion (PTX 9.7.13.15.1): no arrival and no transaction byte pending."""
    return [When(all_of(_eq(el.pend, 0), _eq(el.tx, 0)), [
        Hook(PHASE, el),
        When(_ge(el.n, LIMITS.phase_bound),
             [Fail("phase-bound", "{bar} completed more than " f"{LIMITS.phase_bound} phases "
                   "(model bound)", (), el)]),
        add(el.n, 1), Set(el.pend, el.exp)])]


def tx_bytes_check(el: El, nbytes: Expr) -> list:
    if isinstance(nbytes, Const) and 0 <= nbytes.value <= LIMITS.tx_count:
        return []
    return [When(any_of(_lt(nbytes, 0), _gt(nbytes, LIMITS.tx_count)),
                 [Fail("tx-mismatch", "{who} counts {0} transaction bytes on {bar} in one "
                       f"operation, outside 0..{LIMITS.tx_count}", (nbytes,), el)])]


def add_tx(el: El, delta: Expr) -> list:
    return [add(el.tx, delta),
            When(any_of(_gt(el.tx, LIMITS.tx_count), _lt(el.tx, -LIMITS.tx_count)),
                 [Fail("tx-mismatch", "tx-count of {bar} reaches {0}, outside "
                       f"±{LIMITS.tx_count}", (el.tx,), el)])]


def arrive(el: El, count: Expr, threads: int) -> list:
    out = []
    if not (isinstance(count, Const) and 1 <= count.value <= LIMITS.arrive_count):
        out.append(When(any_of(_lt(count, 1), _gt(count, LIMITS.arrive_count)),
                        [Fail("arrival-mismatch", "{who} arrives on {bar} with count {0}, outside "
                              f"1..{LIMITS.arrive_count}", (count,), el)]))
    n = _times_t(threads, count)
    return out + [
        When(_gt(n, el.pend), [Fail("arrival-mismatch", "{who} arrives {0} times on {bar}, whose "
                                    "current phase expects only {1} more of {2} arrivals",
                                    (n, el.pend, el.exp), el)]),
        sub(el.pend, n), Hook("arrive", el), *complete_phase(el)]


def publish(c, cta: int) -> Call:
    """A CTA barrier completing publishes the CTA's fenced inits (vis 2 -> 3)."""
    body = []
    for m in c.kernel.mbarriers:
        for i in range(m.size):
            el = El(m.name, Const(cta), Const(i))
            body.append(When(_eq(el.vis, 2), [Set(el.vis, 3)]))
    return c.subrules.define(f"publish_{cta}", body)


def complete_named(c, bid: Expr, publish_inits: bool = True) -> list:
    """A generation of named barrier `bid` completes (and publishes the CTA's fenced inits,
    unless the caller publishes them once for several barriers)."""
    nb = lambda f: NamedField(c.cta, bid, f)  # noqa: E731
    return [Hook(NAMED_COMPLETE),
            When(_ge(nb("gen"), LIMITS.phase_bound),
                 [Fail("phase-bound", f"named barrier {{0}} of CTA {c.cta} completed more than "
                       f"{LIMITS.phase_bound} generations (model bound)", (bid,))]),
            add(nb("gen"), 1), Set(nb("arr"), 0), Set(nb("exp"), 0),
            *([publish(c, c.cta)] if publish_inits else []), *buffer_handover(c, bid)]


def cluster_try_complete(c) -> Call:
    """The cluster barrier completes once every non-exited thread of the cluster has arrived;
    it publishes the fenced inits of every CTA."""
    arr, gen = ClusterField("arr"), ClusterField("gen")
    live = Live(Const(0))
    for t in range(1, c.kernel.num_ctas):
        live = _plus(live, Live(Const(t)))
    body = [When(all_of(_gt(arr, 0), _ge(arr, live)), [
        Hook(CLUSTER_COMPLETE),
        When(_ge(gen, LIMITS.phase_bound),
             [Fail("phase-bound", f"the cluster barrier completed more than {LIMITS.phase_bound} "
                   "phases (model bound)")]),
        Set(arr, 0), add(gen, 1), *[publish(c, t) for t in range(c.kernel.num_ctas)]])]
    return c.subrules.define("cluster_try_complete", body)


CLUSTER_ARRIVED, CLUSTER_GEN = "_carr", "_cgen"


def snap_var(pc: int) -> str:
    return f"_snap{pc}"


def _acc(obj, mode, scope, **kw) -> Access:
    return Access(obj, mode, scope, **kw)


def _expect_tx(c, ref: MBarRef, nbytes: Expr, what: str) -> tuple[El, list]:
    """The expect-tx part of mbarrier.expect_tx and arrive.expect_tx by c.threads threads: the
    element, and its checks and tx update."""
    el, checks = resolve(c, ref)
    return el, [*checks, *remote_alive(c, ref, el, what), *vis_checks(el, tma=False),
                *tx_bytes_check(el, nbytes), *add_tx(el, _times_t(c.threads, nbytes)),
                Hook("expect", el)]


def _update_footprint(ref: MBarRef) -> Footprint:
    """An arrive or expect-tx on `ref` (a remote one also reads whether the target CTA lives)."""
    acc = [_acc("mbarrier", "rw", ref_scope(ref), identity="compare")]
    if ref.cta is not None:
        acc.append(_acc("live-threads", "read", "cluster"))
    return Footprint(tuple(acc))


# ----------------------------------------------------------------------------- DSMEM stores

DSMEM_STORED = "_dsm"  # the peer CTAs (a bit each) the instance stored into since it released
CLUSTER_SEEN = "_cseen"  # 1 once the instance passed a cluster wait: every CTA of it is running
SCOPES_OF_ARRIVE = ("cta", "cluster", "relaxed")  # what an arrive releases: .release.cta (the
#                                                   PTX default), .release.cluster, or nothing


def _stores_dsmem(c) -> bool:
    """Whether the executing process stores into a peer CTA's shared memory (st.shared::cluster)."""
    from ..ir import walk_stmts
    return any(isinstance(s, DsmemStore) for s in walk_stmts(c.kernel.processes[c.process].body))


def _fmt_scope(scope: str) -> str:
    return "" if scope == "cta" else f", scope={scope}"


def _scope_problems(scope: str) -> list[str]:
    return [] if scope in SCOPES_OF_ARRIVE else [f"scope {scope!r} (one of {SCOPES_OF_ARRIVE})"]


def dsmem_release(c, ref: MBarRef, el: El, scope: str) -> list:
    """An arrive on a peer CTA's barrier releases the instance's stores into that CTA's shared
    memory to the threads that wait on it only at cluster scope (PTX 8.5 scopes, 8.7 release
    patterns): at CTA scope after such a store, `scope`; at cluster scope, the stores into that
    CTA are released."""
    if ref.cta is None or not _stores_dsmem(c):
        return []
    mask = Local(DSMEM_STORED)
    out = []
    for t in range(c.kernel.num_ctas):
        if t == c.cta:
            continue
        stored = all_of(_eq(el.cta, t), _bit(mask, t))
        if scope != "cluster":
            why = ("a relaxed arrive releases nothing" if scope == "relaxed" else
                   "a CTA-scope release orders the stores only for threads of its own CTA")
            out.append(When(stored, [Fail(
                "scope", f"{{who}} arrives on {{bar}} at {scope} scope after storing into CTA "
                f"{t}'s shared memory: {why}, and the threads that wait on that barrier are in "
                f"CTA {t}", (), el)]))
        else:
            out.append(When(stored, [Set(mask, BinOp("^", mask, Const(1 << t)))]))
    return out


@sync_op
@dataclass(frozen=True)
class DsmemStore(SyncOp):
    """st.shared::cluster by the executing threads into shared memory of CTA `cta` of the cluster
    (a generic store through a mapa address: distributed shared memory). Threads of that CTA see
    it through an arrive on one of its barriers only if the arrive releases at cluster scope
    (or a cluster barrier arrive comes between). The bytes it writes are followed when the
    `st.shared @cta(...)` of their cells come right after it, at its line (`dsmem_words`)."""
    cta: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "st.shared::cluster"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.9 (st.shared::cluster), 8.5 (scopes)"
    summary: ClassVar[str] = ("a CTA outside the cluster: invalid-operand; a peer CTA: its bit "
                              "joins the instance's unreleased DSMEM stores")
    # R6, R8, R11: it writes only its own local; R10 mover: no guard, no object. Not R2: which
    # CTAs are peers, and which exist (invalid-operand), is the cluster's: CTA 0 checked alone
    # would take a store into CTA 1 for one outside the cluster
    proven: ClassVar[frozenset[str]] = (ALL - {INDEPENDENT_CTAS}) | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls(Const(1))

    def __post_init__(self): _lift_fields(self, "cta")

    def fmt(self): return f"st.shared::cluster @cta({_e(self.cta)})"

    def own_locals(self, pc): return (DSMEM_STORED, CLUSTER_SEEN)

    def problems(self, k):
        if isinstance(self.cta, Const) and not 0 <= self.cta.value < k.num_ctas:
            return [f"CTA {self.cta.value} of a cluster of {k.num_ctas}"]
        return []

    def footprint(self, k):
        return Footprint(())

    def rule(self, c):
        mask = Local(DSMEM_STORED)
        body = _cta_checks(c, self.cta, "stores into")
        # a peer's shared memory is its only while it runs: a cluster barrier shows it started
        # (CUDA: cluster.sync() before the first distributed shared memory access)
        body.append(When(all_of(_ne(self.cta, c.cta), _eq(Local(CLUSTER_SEEN), 0)),
                         [Fail("cluster-lifetime", "{who} stores into CTA {0}'s shared memory "
                               "before any cluster wait: nothing shows that CTA is running yet "
                               "(its shared memory is its own only once it started)",
                               (self.cta,))]))
        for t in range(c.kernel.num_ctas):
            if t != c.cta:
                body.append(When(_eq(self.cta, t), [Set(mask, BinOp("|", mask, Const(1 << t)))]))
        return Rule(body)


# ----------------------------------------------------------------------------- mbarrier ops

@sync_op
@dataclass(frozen=True)
class MbarInit(SyncOp):
    """mbarrier.init: expected arrival count `count`, phase 0, tx-count 0."""
    bar: MBarRef
    count: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "mbarrier.init"
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


# ----------------------------------------------------------------------------- named barriers

def _named_arrive(c, op, sync: bool) -> list:
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


# ----------------------------------------------------------------------------- cluster barrier

@sync_op
@dataclass(frozen=True)
class ClusterArrive(SyncOp):
    """barrier.cluster.arrive[.relaxed]: every thread of the cluster arrives once per phase.
    The completion publishes every CTA's fenced mbarrier inits (the fence is the release)."""
    relaxed: bool = False
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "barrier.cluster.arrive"
    hb_rule: ClassVar[str | None] = "cluster.arrive"
    ptx: ClassVar[str] = "9.7.13.2"
    summary: ClassVar[str] = ("arriving twice without a wait: arrival-mismatch; arr += threads; "
                              "when every non-exited thread of the cluster has arrived: gen += 1 "
                              "and every CTA's fenced inits are published")
    proven: ClassVar[frozenset[str]] = ALL - {INDEPENDENT_CTAS}

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return "barrier.cluster.arrive" + (".relaxed" if self.relaxed else "")

    def own_locals(self, pc): return (CLUSTER_ARRIVED, CLUSTER_GEN)

    def footprint(self, k):
        return Footprint((_acc("cluster-barrier", "rw", "cluster"),
                          _acc("live-threads", "read", "cluster"),
                          _acc("mbarrier", "rw", "cluster")))

    def rule(self, c):
        carr, cgen = Local(CLUSTER_ARRIVED), Local(CLUSTER_GEN)
        release = [] if self.relaxed or not _stores_dsmem(c) else [Set(Local(DSMEM_STORED), 0)]
        return Rule([When(_ne(carr, 0), [Fail("arrival-mismatch", "{who} arrives on the cluster "
                                              "barrier twice without waiting in between")]),
                     *release, Set(carr, 1), Set(cgen, ClusterField("gen")),
                     add(ClusterField("arr"), c.threads), cluster_try_complete(c)])


@sync_op
@dataclass(frozen=True)
class ClusterWait(SyncOp):
    """barrier.cluster.wait: blocks until the cluster barrier phase this thread arrived on
    completes."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "barrier.cluster.wait"
    hb_rule: ClassVar[str | None] = "cluster.wait"
    ptx: ClassVar[str] = "9.7.13.2"
    summary: ClassVar[str] = ("without a preceding arrive: arrival-mismatch; blocks until gen "
                              "moves past the one seen at arrival")
    proven: ClassVar[frozenset[str]] = (ALL - {INDEPENDENT_CTAS}) | {RESUME_MOVER}

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return "barrier.cluster.wait"

    def own_locals(self, pc): return (CLUSTER_ARRIVED, CLUSTER_GEN)

    def footprint(self, k):
        return Footprint((_acc("cluster-barrier", "read", "cluster"),), blocking=True)

    def rule(self, c):
        carr, cgen = Local(CLUSTER_ARRIVED), Local(CLUSTER_GEN)
        seen = [Set(Local(CLUSTER_SEEN), 1)] if _stores_dsmem(c) else []
        return Rule([When(_eq(carr, 0), [Fail("arrival-mismatch", "{who} waits on the cluster "
                                              "barrier without having arrived on it")]),
                     Set(carr, 0), *seen],
                    guard=any_of(_eq(carr, 0), _ne(ClusterField("gen"), cgen)))


# ----------------------------------------------------------------------------- async copies

def _issue(infl: Inflight, T: int) -> list:
    return [When(_gt(infl, LIMITS.inflight - T),
                 [Fail("copy-bound", f"more than {LIMITS.inflight} copies of one op in flight "
                       "(model bound)")]),
            add(infl, T)]


def _multicast_issue(c, bar: MBarRef, mask: Expr, verb: str, verb_into: str,
                     per_target=lambda t: []) -> list:
    """An async op issued towards the barrier at `bar`'s offset in every CTA of `mask`: the mask
    must name CTAs of the cluster (scope); per target CTA t, t alive (cluster-lifetime), its
    barrier's init visible, `per_target(t)`, and one unit in flight per executing thread."""
    n, T = c.kernel.num_ctas, c.threads
    body = [When(any_of(_le(mask, 0), _ge(mask, 1 << n)),
                 [Fail("scope", "{who} " + verb + " with mask {0}, which names CTAs outside "
                       f"the cluster of {n} (or none)", (mask,))])]
    for t in range(n):
        el = El(bar.name, Const(t), bar.index)
        lifetime = [] if t == c.cta else [When(_eq(Live(Const(t)), 0), [
            Fail("cluster-lifetime", "{who} " + verb_into + " {bar}, but the threads of CTA {0} "
                 "have all exited (its shared memory may belong to another CTA by now)",
                 (Const(t),), el)])]
        body.append(When(_ne(_band(mask, Const(1 << t)), 0), [
            *lifetime, *vis_checks(el, tma=True), *per_target(t),
            *_issue(Inflight(c.process, c.pc, Const(t), bar.index), T)]))
    return body


def _copy_completes(c, bar: MBarRef, nbytes: Expr, cta: int, index: int, first=()) -> Rule:
    """One copy of the op at c towards element `index` of CTA `cta` completes: its in-flight
    count drops, `first` runs, its bytes leave the tx-count, and the phase may complete."""
    el = El(bar.name, Const(cta), Const(index))
    infl = Inflight(c.process, c.pc, Const(cta), Const(index))
    return Rule([sub(infl, 1), *first, *add_tx(el, BinOp("-", Const(0), nbytes)),
                 *complete_phase(el)], guard=_gt(infl, 0))


class _CompletesBytes:
    """An async copy whose completion delivers `bytes` of transaction to its barrier."""

    def completion_text(self, target: str, env: dict) -> str:
        """How a trace step shows one completion of this op on `target`."""
        return f"(copy completes on {target}: {eval_expr(self.bytes, env)} bytes)"


@sync_op
@dataclass(frozen=True)
class TmaLoad(_CompletesBytes, SyncOp):
    """An asynchronous copy into shared memory that completes `bytes` of transaction on `bar`
    at any later point: a TMA load, a bulk copy, an st.async. Issued once per executing thread
    (the DSL's TMA copy elects one lane itself: the extractor puts it inside `Lanes(1)`).
    `multicast`: a CTA bit mask; each copy then completes `bytes` on the barrier at the same
    offset in every CTA of the mask (`bar.cta` must be None)."""
    bar: MBarRef
    bytes: Expr
    loc: Loc = NOLOC
    multicast: Expr | None = None
    desc: str | None = None  # the tensormap it reads, when the kernel rewrites it
    # the staged buffer it fills: the stage is the barrier's index, in the barrier's CTA (the
    # issuing CTA's when the barrier is another's: the cta_group::2 form, whose bytes complete
    # on the pair leader's barrier)
    dst: str | None = None
    mnemonic: ClassVar[str] = "tma.load"
    hb_rule: ClassVar[str | None] = "async.issue"
    ptx: ClassVar[str] = "9.7.9.25, 9.7.9.12 (st.async)"
    summary: ClassVar[str] = ("per thread, per target CTA: one copy in flight (use before the "
                              "init is fenced: uninitialized-barrier; a mask outside the "
                              "cluster: scope; into an exited CTA: cluster-lifetime; into a "
                              "stage: wrd > 0: race, gr > 0: proxy-race); each copy "
                              "completes later, in its own step: tx -= bytes, then phase "
                              "completion")
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_RELEASE}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"), Const(64))

    def __post_init__(self): _lift_fields(self, "bytes", "multicast")

    def fmt(self):
        mc = "" if self.multicast is None else f", multicast={_e(self.multicast)}"
        desc = "" if self.desc is None else f", desc={self.desc}"
        dst = "" if self.dst is None else f", into={self.dst}[{_e(self.bar.index)}]"
        return f"tma.load -> {fmt_bar(self.bar)}, bytes={_e(self.bytes)}{mc}{desc}{dst}"

    def own_locals(self, pc):
        return () if self.desc is None else (tm_open(self.desc), tm_acquired(self.desc))

    def facts(self):
        crosses = self.multicast is not None or self.bar.cta is not None
        return self.proven - ({INDEPENDENT_CTAS, FUSION_RELEASE} if crosses else set())

    def problems(self, k):
        out = []
        if self.multicast is not None and self.bar.cta is not None:
            out.append("a multicast copy names its CTAs by the mask, not by the barrier")
        params = {p.name for p in k.params}
        if not expr_vars(self.bytes) <= params:
            out.append("an async copy's byte count must depend only on launch parameters")
        if self.desc is not None:
            out += _tensormap_problems(k, self.desc)
        if self.dst is not None:
            out += _stage_problems(k, self.dst, self.bar.index)
            if self.multicast is not None and self.bar.cta is not None:
                out.append("a multicast TMA load into a staged buffer through a remote barrier "
                           "is not modelled")
        return out

    def footprint(self, k):
        scope = "cluster" if self.multicast is not None or self.bar.cta is not None else "cta"
        acc = [_acc("mbarrier", "rw", scope, proxy="async", identity="compare"),
               _acc("async-copy", "write", scope, proxy="async")]
        if scope == "cluster":
            acc.append(_acc("live-threads", "read", "cluster"))
        if self.desc is not None:
            acc.append(_acc("tensormap", "rw", "cta", proxy="async", identity="compare"))
        if self.dst is not None:
            acc.append(_acc("buffer-stage", "rw", scope, proxy="async"))
        return Footprint(tuple(acc), retired_by="transaction completion on the mbarrier")

    def _fill(self, c, cta: Expr, T: int) -> list:
        """The copy starts writing its stage of `dst` in CTA `cta`: a wgmma still reading the
        stage (its group not retired by wgmma.wait_group) is a race."""
        if self.dst is None:
            return []
        st = lambda f: BufField(self.dst, cta, self.bar.index, f)  # noqa: E731
        label = c.kernel.buffer(self.dst).label or self.dst
        return [*_per_stage(c, self.dst, self.bar.index, "fills", lambda s: []),
                When(_gt(st("wrd"), 0), [Fail(
                    "race", f"{{who}} issues a TMA load into stage {{0}} of {label} while {{1}} "
                    "wgmma read(s) of it are not retired: the reader released the stage before "
                    "its wgmma.wait_group", (self.bar.index, st("wrd")))]),
                When(_gt(st("mrd"), 0), [Fail(
                    "race", f"{{who}} issues a TMA load into stage {{0}} of {label} while {{1}} "
                    "tcgen05.mma read(s) of it may still run: no tcgen05.commit issued after "
                    "them has arrived (the stage was released before its MMAs completed)",
                    (self.bar.index, st("mrd")))]),
                When(_gt(st("gr"), 0), [Fail(
                    "proxy-race", f"{{who}} issues a TMA load (async proxy) into stage {{0}} of "
                    f"{label} while {{1}} thread group(s) that read or wrote it through the "
                    "generic proxy have not executed fence.proxy.async since: such an access "
                    "must be fenced before the release that lets the stage be refilled",
                    (self.bar.index, st("gr")))]),
                When(_gt(st("fly"), LIMITS.inflight - T), [Fail(
                    "copy-bound", f"more than {LIMITS.inflight} TMA loads into one stage in "
                    "flight (model bound)")]),
                add(st("fly"), T)]

    def _desc_read(self, c) -> list:
        """The issue reads the tensormap through the tensormap proxy: it must have been
        released by its writer and acquired by this thread since the last write; the read stays
        unretired until a wait_group.read of this thread retires its bulk async-group."""
        if self.desc is None:
            return []
        tm = lambda f: TmapField(self.desc, Const(c.cta), f)  # noqa: E731
        T = c.threads
        return [*_one_thread(c, "a TMA load through a rewritten tensormap"),
                When(_eq(tm("st"), 1), [Fail(
                    "tensormap-race", f"{{who}} issues a TMA load through tensormap {self.desc}, "
                    "written and not yet released to the tensormap proxy "
                    "(fence.proxy.tensormap::generic.release)")]),
                When(all_of(_eq(tm("st"), 2), _ne(tm("by"), Self())), [Fail(
                    "unsupported", f"{{who}} loads through tensormap {self.desc}, which another "
                    "instance rewrote: that a barrier orders its release before this thread's "
                    "acquire is not checked")]),
                When(all_of(_eq(tm("st"), 2), _ne(Local(tm_acquired(self.desc)),
                                                 _plus(tm("ver"), Const(1)))), [Fail(
                    "tensormap-race", f"{{who}} issues a TMA load through tensormap {self.desc} "
                    "without acquiring its last write (fence.proxy.tensormap::generic.acquire)")]),
                add(Local(tm_open(self.desc)), T), add(tm("unret"), T)]

    def rule(self, c):
        T = c.threads
        if self.multicast is None:
            el, checks = resolve(c, self.bar)
            # a remote barrier: the cta_group::2 form, which fills the issuing CTA's stage
            into = el.cta if self.bar.cta is None else Const(c.cta)
            return Rule([*checks, *remote_alive(c, self.bar, el, "copies into"),
                         *tx_bytes_check(el, self.bytes), *vis_checks(el, tma=True),
                         *self._desc_read(c), *self._fill(c, into, T),
                         *_issue(Inflight(c.process, c.pc, el.cta, el.index), T)])
        el0, checks = resolve(c, self.bar)
        return Rule([*checks, *tx_bytes_check(el0, self.bytes),
                     *_multicast_issue(c, self.bar, self.multicast, "multicasts", "multicasts into",
                                       lambda t: self._fill(c, Const(t), T)),
                     *self._desc_read(c)])

    def early_issue_condition(self, c) -> Expr | None:
        """R8 (docs/semantics.md): when this holds, the issue commutes left with every step of
        every other instance until it is taken, but the exit of the target CTA's last threads:
        the element exists, its init is published (`vis` never leaves 3 but by a violating
        re-init), and its CTA is the issuing one (whose threads cannot all exit first) or has
        threads left (if they all exit before the unreduced issue, both models report the copy
        into the exited CTA: `cluster-lifetime` at the issue, or `pending-at-exit` at the exit).
        A multicast copy, one that fills a staged buffer (its issue reads the stage's unretired
        wgmma reads, which other instances change), or one that reads a rewritten tensormap (its
        issue reads and writes the
        tensormap's state, which other instances' writes change): None."""
        if self.multicast is not None or self.desc is not None or self.dst is not None:
            return None
        el, checks = resolve(c, self.bar)
        exists = [UnOp("not", ch.cond) for ch in checks]
        alive = _eq(el.cta, Const(c.cta)) if self.bar.cta is None else \
            any_of(_eq(el.cta, Const(c.cta)), _gt(Live(el.cta), 0))
        return all_of(*exists, alive, _eq(el.vis, 3))

    def complete(self, c, cta: int, index: int):
        into = cta if self.bar.cta is None else c.cta  # (the stage it fills: rule)
        done = [] if self.dst is None or index >= c.kernel.buffer(self.dst).stages else \
            [sub(BufField(self.dst, Const(into), Const(index), "fly"), 1)]
        return _copy_completes(c, self.bar, self.bytes, cta, index, done)

    def targets(self, kernel) -> list[int]:
        """CTAs this op may copy into."""
        if self.multicast is None and self.bar.cta is None:
            return []  # the executing CTA (the caller knows it)
        return list(range(kernel.num_ctas))


# ----------------------------------------------------------------------------- shared words

def _word(c, ref: WordRef) -> tuple[WordField, list]:
    """The word `ref` names (in the executing CTA, or in CTA `ref.cta` of the cluster), and the
    checks that it exists."""
    size = c.kernel.word_array(ref.name).size
    checks = _index_checks(ref.name, ref.index, size, " words") + \
        _cta_checks(c, ref.cta, "stores into")
    cta = Const(c.cta) if ref.cta is None else ref.cta
    return WordField(ref.name, cta, ref.index, "val"), checks


def _word_problems(k, ref: WordRef) -> list[str]:
    try:
        size = k.word_array(ref.name).size
    except KeyError:
        return [f"undeclared shared-word array {ref.name!r}"]
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
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.9"
    summary: ClassVar[str] = ("val = value; another instance about to load or store the word: "
                              "race; a value beyond the integer band: integer-range")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls(WordRef("tile", Const(0)), Const(3))

    def __post_init__(self): _lift_fields(self, "value")

    def fmt(self): return f"st.shared {fmt_word(self.ref)}, {_e(self.value)}"

    def problems(self, k): return _word_problems(k, self.ref)

    def footprint(self, k):
        return Footprint((_acc("shared-word", "write",
                               "cta" if self.ref.cta is None else "cluster"),))

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
                     _in_band(self.value, name),
                     Set(w, self.value)])


@sync_op
@dataclass(frozen=True)
class SmemLoad(SyncOp):
    """ld.shared of a shared-memory word into `dest`. Another instance whose next step stores
    the same word makes it a race (the load could see either value)."""
    dest: str
    ref: WordRef
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "ld.shared"
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
        return Footprint((_acc("shared-word", "read", "cta"),))

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
        out = [p for d in self.maps for p in _tensormap_problems(k, d)]
        for b, i in self.stages:
            out += _stage_problems(k, b, Const(i))
        if self.depth < 1:
            out.append(f"{self.mnemonic} with depth {self.depth}")
        return out

    def _sources(self, c) -> list[tuple[str, object, object]]:
        """(open local, group local namer, unretired place) per source."""
        out = [(tm_open(d), lambda i, d=d: tm_group(d, i), _tm(c, d, "unret")) for d in self.maps]
        out += [(bs_open(b, j), lambda i, b=b, j=j: bs_group(b, j, i),
                 BufField(b, Const(c.cta), Const(j), "unret")) for b, j in self.stages]
        return out

    def _locals(self) -> tuple[str, ...]:
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
    from ..ir import For, If, Lanes, While

    def scan(stmts, pending: bool):
        for st in stmts:
            if isinstance(st, SmemWrite) and st.buf == buf:
                pending = True
            elif isinstance(st, FenceProxyAsync) or (
                    isinstance(st, (BarSync, BarArrive)) and st.barrier_id == Const(bid)):
                pending = False  # fenced, or released unfenced (then lost as such)
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
            elif isinstance(st, SyncOp) and pending and not isinstance(st, _FENCE_NEUTRAL):
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


def wg_open(buf: str) -> str:
    """The stages of `buf` the executing warp's uncommitted wgmmas read (a bit mask)."""
    return f"_wgo_{buf}"


def wg_group(buf: str, i: int) -> str:
    """The stages its i-th most recent wgmma group reads (the last: that group or older)."""
    return f"_wgg{i}_{buf}"


def _reads_problems(k, reads) -> list[str]:
    return [p for b, i in reads for p in _stage_problems(k, b, i)]


def _fmt_reads(reads) -> str:
    return ", ".join(f"{b}[{_e(i)}]" for b, i in reads)


class _StageReads:
    """An op that reads stages `reads`: (staged buffer, stage index) pairs."""

    @classmethod
    def example(cls):
        return cls((("sA", Const(0)), ("sB", Const(0))))

    def __post_init__(self):
        object.__setattr__(self, "reads", tuple((b, lift(i)) for b, i in self.reads))

    def problems(self, k): return _reads_problems(k, self.reads)


@sync_op
@dataclass(frozen=True)
class WgmmaRead(_StageReads, SyncOp):
    """Wgmmas (PTX 9.7.15.5, warpgroup MMA with shared-memory operand descriptors) of the
    executing warp read the stages `reads` ((buffer, stage) pairs) asynchronously, until a
    wgmma.wait_group of the warp retires their group. A TMA load into one of them still in
    flight makes it a race. (One op for the operands of consecutive wgmmas: reading never
    blocks and conflicts only with fills, so a run of reads is one step, as R11's loads.)"""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "wgmma.read"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.5 (wgmma.mma_async), 9.7.15.6 (commit_group, wait_group)"
    summary: ClassVar[str] = ("per stage read: fly > 0: race (a TMA load into it is in flight); "
                              "then, unless the warp's open group already reads it, wrd += 1")
    # R6, R8, R11: it reads and writes only staged-buffer state and its own locals
    proven: ClassVar[frozenset[str]] = ALL

    def fmt(self): return f"wgmma.read {_fmt_reads(self.reads)}"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta", proxy="async"),),
                         retired_by="wgmma.wait_group of the issuing warp")

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            def one(s, buf=buf):
                wrd, open_ = _stage(c, buf, Const(s), "wrd"), Local(wg_open(buf))
                return [_in_flight_fill(c, buf, s, "reads (wgmma)"),
                        When(UnOp("not", _bit(open_, s)), [
                            When(_ge(wrd, LIMITS.inflight), [Fail(
                                "copy-bound", f"more than {LIMITS.inflight} wgmma groups "
                                "reading one stage unretired (model bound)")]),
                            add(wrd, 1), Set(open_, BinOp("|", open_, Const(1 << s)))])]
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)


def mma_open(buf: str, peer: bool = False) -> str:
    """The stages of `buf` (in the pair's other CTA with `peer`) that the executing warp's
    tcgen05.mma read since its last tcgen05.commit (a bit mask)."""
    return f"_umo{'p' if peer else ''}_{buf}"


def mma_bufs(kernel, process: int) -> tuple[tuple[str, bool], ...]:
    """(buffer, peer) of every open-read mask of a process: the shared-memory buffers its
    tcgen05.mma read, in its own CTA and, for cta_group::2 MMAs, in the pair's other CTA."""
    return _mma_stages(kernel, process, "smem")


def _mma_stages(kernel, process: int, space: str) -> tuple[tuple[str, bool], ...]:
    """(buffer, peer) of every buffer of `space` the process's tcgen05.mma access, in its own
    CTA and, for cta_group::2, in the pair's other one."""
    def compute():
        from ..ir import walk_stmts
        out: set = set()
        for st in walk_stmts(kernel.processes[process].body):
            if isinstance(st, MmaRead):
                for b, _ in st.reads:
                    if is_tmem(kernel, b) == (space == "tmem"):
                        out.add((b, False))
                        if st.pair:
                            out.add((b, True))
        return tuple(sorted(out))
    return kernel.memo(("mma_stages", process, space), compute)


def is_tmem(kernel, buf: str) -> bool:
    """Whether staged buffer `buf` is tensor memory (an accumulator's stages)."""
    try:
        return kernel.buffer(buf).space == "tmem"
    except KeyError:
        return False


def tmem_mma_bufs(kernel, process: int) -> tuple[tuple[str, bool], ...]:
    """(TMEM buffer, peer) of every accumulator stage the process's tcgen05.mma access, in its
    own CTA and, for cta_group::2, in the pair's other one."""
    return _mma_stages(kernel, process, "tmem")


def tmem_load_bufs(kernel, process: int) -> tuple[str, ...]:
    """The TMEM buffers the process reads with tcgen05.ld."""
    def compute():
        from ..ir import walk_stmts
        return tuple(sorted({b for st in walk_stmts(kernel.processes[process].body)
                             if isinstance(st, TmemLoad) for b, _ in st.reads}))
    return kernel.memo(("tmem_load_bufs", process), compute)


def tl_open(buf: str) -> str:
    """The stages of TMEM buffer `buf` the executing instance read with tcgen05.ld since its
    last tcgen05.wait::ld (a bit mask)."""
    return f"_tlo_{buf}"


COV_BITS = 30  # objects.BUFFER_STAGE `cov`


def commit_bits(layout, process: int) -> dict[int, int]:
    """The first `cov` bit of each tcgen05.commit (by flat pc) of a process: one bit per element
    of its barrier array, in code order."""
    return _commit_bits(layout, process)[0]


def _cov_bit_count(layout, process: int) -> int:
    return _commit_bits(layout, process)[1]


def _commit_bits(layout, process: int) -> tuple[dict[int, int], int]:
    """commit_bits and how many bits they take, once per kernel (its flattening is fixed)."""
    from .tcgen05 import Tcgen05Commit
    def compute():
        out, n = {}, 0
        for pc, ins in layout.flat[process].ops():
            if isinstance(ins.stmt, Tcgen05Commit):
                out[pc] = n
                n += layout.kernel.mbarrier(ins.stmt.bar.name).size
        return out, n
    return layout.kernel.memo(("commit_bits", process), compute)


def tmem_mma_issuer_problem(c) -> str:
    """Why the process's tcgen05.mma accumulator accesses cannot be followed ('' if they can):
    the stage's in-flight state is one thread's (its commits complete only its own MMAs)."""
    k = c.kernel
    mine = {b for b, _ in tmem_mma_bufs(k, c.process)}
    if not mine:
        return ""
    if k.processes[c.process].instances != 1:
        return ("tcgen05.mma on a TMEM buffer by a role of several instances (one thread issues "
                "a CTA's MMAs and their commits)")
    for pi, p in enumerate(k.processes):
        if pi != c.process and p.cta == k.processes[c.process].cta and \
                mine & {b for b, _ in tmem_mma_bufs(k, pi)}:
            return f"tcgen05.mma on one TMEM buffer by two roles ({p.role} too)"
    if _cov_bit_count(c.layout, c.process) > COV_BITS:
        return f"more than {COV_BITS} tcgen05.commit targets in one role (model bound)"
    return ""


@sync_op
@dataclass(frozen=True)
class MmaRead(_StageReads, SyncOp):
    """tcgen05.mma (PTX 9.7.16.10) of the executing warp reads the stages `reads` ((buffer,
    stage) pairs: its shared-memory operands) asynchronously; with `pair` (cta_group::2) the
    same stages of both CTAs of the pair. The reads last until the arrive of a tcgen05.commit
    the warp issues after them lands: a commit tracks every tcgen05 op its thread issued before
    it (9.7.16.12). A TMA load into such a stage before that is a race. (One op for the operands
    of consecutive MMAs, as WgmmaRead.)"""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    pair: bool = False
    mnemonic: ClassVar[str] = "tcgen05.mma.read"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16.10 (tcgen05.mma), 9.7.16.12 (tcgen05.commit)"
    summary: ClassVar[str] = ("per stage read, in its CTA (and the pair's other one with "
                              "cta_group::2): fly > 0: race (a TMA load into it is in flight); "
                              "then, unless the warp's uncommitted MMAs already read it, "
                              "mrd += 1 (until the arrive of its next tcgen05.commit)")
    # it reads and writes only staged-buffer state and its own locals (R6, R8, R11, as a wgmma
    # read); a pair read touches the other CTA's stage
    proven: ClassVar[frozenset[str]] = ALL

    def fmt(self):
        return f"tcgen05.mma.read {_fmt_reads(self.reads)}" + (" (cta_group::2)" if self.pair else "")

    def facts(self):
        return self.proven - {INDEPENDENT_CTAS} if self.pair else self.proven

    def problems(self, k):
        out = _reads_problems(k, self.reads)
        if self.pair and k.num_ctas % 2:
            out.append("a cta_group::2 tcgen05.mma needs CTA pairs (an even cluster size)")
        return out

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cluster" if self.pair else "cta",
                               proxy="async"),),
                         retired_by="the arrive of the warp's next tcgen05.commit")

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            label = c.kernel.buffer(buf).label or buf
            if is_tmem(c.kernel, buf):
                why = tmem_mma_issuer_problem(c)
                if why:
                    return Rule([Fail("unsupported", "{who} issues " + why)])
                body += _per_stage(c, buf, stage, "accumulates into",
                                   lambda s, buf=buf, label=label: self._accumulate(c, buf, s, label))
                continue

            def one(s, buf=buf, label=label):
                out = []
                for peer in ((False, True) if self.pair else (False,)):
                    cta = Const(c.cta ^ 1 if peer else c.cta)
                    st = lambda f: BufField(buf, cta, Const(s), f)  # noqa: E731
                    open_ = Local(mma_open(buf, peer))
                    out += [When(_gt(st("fly"), 0), [Fail(
                                "race", f"{{who}} reads (tcgen05.mma) stage {s} of {label} in "
                                f"CTA {cta.value} while {{0}} TMA load(s) into it are in flight: "
                                "only the completion of their bytes on the stage's mbarrier (a "
                                "wait on it) orders the read after them", (st("fly"),))]),
                            When(UnOp("not", _bit(open_, s)), [
                                When(_ge(st("mrd"), LIMITS.inflight), [Fail(
                                    "copy-bound", f"more than {LIMITS.inflight} tcgen05.mma "
                                    "reads of one stage unretired (model bound)")]),
                                add(st("mrd"), 1), Set(open_, BinOp("|", open_, Const(1 << s)))])]
                return out
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)

    def _accumulate(self, c, buf: str, s: int, label: str) -> list:
        """The MMA writes accumulator stage s (of both CTAs with cta_group::2): a tcgen05.ld of
        it not yet retired is a race; the stage is in flight, covered by no commit yet."""
        out = []
        for cta in ((c.cta, c.cta ^ 1) if self.pair else (c.cta,)):
            st = lambda f: BufField(buf, Const(cta), Const(s), f)  # noqa: E731
            out += [When(_gt(st("tld"), 0), [Fail(
                        "race", f"{{who}} writes (tcgen05.mma) stage {s} of {label} in CTA {cta} "
                        "while {0} tcgen05.ld read(s) of it are not retired: no "
                        "tcgen05.wait::ld of the reading warp comes before this MMA",
                        (st("tld"),))]),
                    Set(st("mip"), Const(1)), Set(st("cov"), Const(0))]
        return out


@sync_op
@dataclass(frozen=True)
class TmemLoad(_StageReads, SyncOp):
    """tcgen05.ld (PTX 9.7.16.8.3) of the executing warp reads stage `reads` of a TMEM buffer
    (an accumulator) asynchronously, until a tcgen05.wait::ld of the warp. A tcgen05.mma writing
    the stage that may still run (no commit issued after it has landed) makes it a race."""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tcgen05.ld.read"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16.8.3 (tcgen05.ld), 9.7.16.8.5 (tcgen05.wait)"
    summary: ClassVar[str] = ("per stage read: mip = 1: race (a tcgen05.mma writing it may still "
                              "run); then, unless the instance's loads since its last "
                              "tcgen05.wait::ld already read it, tld += 1")
    # it reads and writes only staged-buffer state and its own locals (as a wgmma read)
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls((("acc", Const(0)),))

    def fmt(self): return f"tcgen05.ld.read {_fmt_reads(self.reads)}"

    def problems(self, k):
        return _reads_problems(k, self.reads) + [
            f"tcgen05.ld of {b}, which is not a TMEM buffer" for b, _ in self.reads
            if b in {x.name for x in k.buffers} and not is_tmem(k, b)]

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),),
                         retired_by="tcgen05.wait::ld of the issuing warp")

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            label = c.kernel.buffer(buf).label or buf

            def one(s, buf=buf, label=label):
                st = lambda f: _stage(c, buf, Const(s), f)  # noqa: E731
                open_ = Local(tl_open(buf))
                return [When(_eq(st("mip"), 1), [Fail(
                            "race", f"{{who}} reads (tcgen05.ld) stage {s} of {label} while a "
                            "tcgen05.mma writing it may still run: no tcgen05.commit issued "
                            "after that MMA has landed (a wait on its barrier) before this load")]),
                        When(UnOp("not", _bit(open_, s)), [
                            When(_ge(st("tld"), _MAX_LOADS), [Fail(
                                "copy-bound", f"more than {_MAX_LOADS} tcgen05.ld reads of one "
                                "stage unretired (model bound)")]),
                            add(st("tld"), 1), Set(open_, BinOp("|", open_, Const(1 << s)))])]
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class TmemWaitLd(SyncOp):
    """tcgen05.wait::ld: the executing warp waits for its tcgen05.ld issued before; they always
    complete, so it retires them (tld -= 1 per stage the warp read since its last wait)."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tcgen05.wait.ld"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16.8.5 (tcgen05.wait)"
    summary: ClassVar[str] = ("per TMEM stage the instance read since its last wait: tld -= 1")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return "tcgen05.wait::ld"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),))

    def rule(self, c):
        body = []
        for b in tmem_load_bufs(c.kernel, c.process):
            open_ = Local(tl_open(b))
            body += [When(_bit(open_, s), [sub(_stage(c, b, Const(s), "tld"), 1)])
                     for s in range(c.kernel.buffer(b).stages)]
            body.append(Set(open_, Const(0)))
        return Rule(body)


_MAX_LOADS = LIMITS.inflight


@sync_op
@dataclass(frozen=True)
class SmemRead(_StageReads, SyncOp):
    """The executing threads read the stages `reads` of staged buffers through the generic
    proxy (ld.shared, ldmatrix, a shared-to-register copy). A TMA load into one of them still
    in flight makes it a race."""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "smem.read"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.8 (ld.shared), 9.7.9.16 (ldmatrix)"
    summary: ClassVar[str] = ("per stage read: fly > 0: race (a TMA load into it is in flight); "
                              "of a stage TMA loads fill: unless the instance's read is already "
                              "counted, gr += 1 (until its fence.proxy.async)")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls((("sA", Const(0)),))

    def fmt(self): return f"smem.read {_fmt_reads(self.reads)}"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),))

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            def one(s, buf=buf):
                return [_in_flight_fill(c, buf, s, "reads"), *_count_generic(c, buf, s)]
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)


# ops that publish nothing of the executing thread's earlier writes to other threads (accesses
# of buffer stages, the proxy fence, issuing and waiting for its own async units): a write
# followed only by these before its fence has the fence on every path it is ordered along
_FENCE_NEUTRAL = (SmemWrite, SmemRead, FenceProxyAsync, TmaStore, BulkCommit, BulkWaitRead,
                  WgmmaRead, TmemLoad)


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
