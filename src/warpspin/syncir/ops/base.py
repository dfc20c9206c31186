"""The op registry (`OPS`, `sync_op`), the `SyncOp` base, `Footprint` and `Access`, the
reduction names (`ALL`, ...) and the helpers the op families share (expressions, barrier
elements and their checks, phase completion, arrivals, publication of inits)."""
from __future__ import annotations

import weakref

from dataclasses import dataclass, field
from typing import ClassVar

from ..ir import (BinOp, Const, Expr, Loc, MBarRef, NOLOC, Select, Stmt, UnOp, WordRef, eval_expr,
                  _lift_fields, expr_vars, lift)
from ..objects import LIMITS
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
    from .buffers import buffer_handover
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
        from .buffers import _stage_problems
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
        from .buffers import _per_stage
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
