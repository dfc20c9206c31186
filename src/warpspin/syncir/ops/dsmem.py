"""DSMEM stores: st.shared::cluster into a peer CTA, and the scope of the arrive that
releases it (PTX 9.7.9.9, 8.5)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, MBarRef, NOLOC, _lift_fields
from ..rules import El, Fail, Local, Rule, Set, When, all_of
from .base import (ALL, INDEPENDENT_CTAS, RESUME_MOVER, Footprint, SyncOp, _bit, _cta_checks, _e,
                   _eq, _ne, sync_op)
from .base import SASS_OBLIGATION


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
    sass: ClassVar[str] = r"(STS|ST|STAS)\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
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
