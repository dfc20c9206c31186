"""The op registry (`OPS`, `sync_op`), the `SyncOp` base, `Footprint` and `Access`, the
reduction names (`ALL`, ...) and the helpers the op families share (expressions, barrier
elements and their checks, phase completion, arrivals, publication of inits)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, MBarRef, Stmt, lift
from ..objects import LIMITS
from ..rules import (Call, ClusterField, El, Fail, Hook, Live, Local, NamedField, Rule, Self, Set,
                     When, add, all_of, any_of, sub)


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
SASS_OBLIGATION = "an ordering obligation names it"
SASS_SYNC_ORDER = ("a synchronization instruction: its order among the others is assumed kept "
                   "(ptxas does not move them across one another)")
SASS_ASYNC_ISSUE = ("an async-unit issue: its order against the barrier instructions around it is "
                    "assumed kept, as theirs among themselves; the tensormap obligations check "
                    "it against the descriptor's writes")
SASS_REGISTERS = ("ordered through registers, which ptxas keeps (it injects the wgmma waits a "
                  "register use needs: C7517, C7519; an atomic's result reaches its users so)")
SASS_NO_ORDER = "needs no order (a read of launch values)"
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
    # the SASS instructions it becomes (a regex on opcode and operands; sass/obligations.py): ""
    # when no ordering obligation names it
    sass: ClassVar[str] = ""
    # why the SASS check may pass a kernel with it (docs/semantics.md, "What the SASS must
    # keep"): OBLIGATION (an obligation of sass/obligations.py names it), SYNC_ORDER, REGISTERS
    # or NO_ORDER; "": nothing checks its order, and a kernel with it is INCONCLUSIVE there
    sass_covered: ClassVar[str] = ""

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
    own = c.kernel.cluster_members(c.cta)
    where = f"a cluster of {len(own)}" if len(own) == c.kernel.num_ctas else \
        f"the cluster of CTAs {own.start}..{own.stop - 1}"
    return [When(any_of(_lt(cta, own.start), _ge(cta, own.stop)),
                 [Fail("invalid-operand", "{who} " + verb + " CTA {0} outside " + where, (cta,))])]


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
    """The executing CTA's cluster barrier completes once every non-exited thread of that
    cluster has arrived; it publishes the fenced inits of every CTA of the cluster."""
    q = c.kernel.cluster_of(c.cta)
    arr, gen = ClusterField("arr", q), ClusterField("gen", q)
    members = c.kernel.cluster_members(c.cta)
    live = Live(Const(members[0]))
    for t in members[1:]:
        live = _plus(live, Live(Const(t)))
    body = [When(all_of(_gt(arr, 0), _ge(arr, live)), [
        Hook(CLUSTER_COMPLETE),
        When(_ge(gen, LIMITS.phase_bound),
             [Fail("phase-bound", f"the cluster barrier completed more than {LIMITS.phase_bound} "
                   "phases (model bound)")]),
        Set(arr, 0), add(gen, 1), *[publish(c, t) for t in members]])]
    return c.subrules.define("cluster_try_complete" + (f"_{q}" if q else ""), body)


def cluster_field(c, name: str) -> ClusterField:
    """Field `name` of the cluster barrier of the executing CTA's cluster."""
    return ClusterField(name, c.kernel.cluster_of(c.cta))


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
