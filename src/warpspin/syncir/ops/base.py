"""The op registry (`OPS`, `sync_op`), the `SyncOp` base, `Footprint` and `Access`, the
reduction names (`ALL`, ...) and the helpers the op families share (expressions, barrier
elements and their checks, phase completion, arrivals, publication of inits)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, MBarRef, NOLOC, Select, Stmt, _lift_fields, lift
from ..objects import LIMITS
from ..rules import (Call, ClusterField, El, Fail, Hook, Live, Local, NamedField, Obs, Rule, Self,
                     Set, When, add, all_of, any_of, sub)


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
