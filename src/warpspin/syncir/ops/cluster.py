"""The cluster barrier: barrier.cluster.arrive, barrier.cluster.wait (PTX 9.7.13.3)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Loc, NOLOC
from ..rules import Fail, Local, Rule, Set, When, add, any_of
from .base import (ALL, CLUSTER_ARRIVED, CLUSTER_GEN, INDEPENDENT_CTAS, RESUME_MOVER, Footprint,
                   SyncOp, _acc, _eq, _ne, cluster_field, cluster_try_complete,
                   sync_op)
from .base import SASS_OBLIGATION
from .dsmem import CLUSTER_SEEN, DSMEM_STORED, _stores_dsmem


# ----------------------------------------------------------------------------- cluster barrier

@sync_op
@dataclass(frozen=True)
class ClusterArrive(SyncOp):
    """barrier.cluster.arrive[.relaxed]: every thread of the cluster arrives once per phase.
    The completion publishes every CTA's fenced mbarrier inits (the fence is the release)."""
    relaxed: bool = False
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "barrier.cluster.arrive"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"UCGABAR_ARV\b|BAR\.ARV"
    hb_rule: ClassVar[str | None] = "cluster.arrive"
    ptx: ClassVar[str] = "9.7.13.3"
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
                     *release, Set(carr, 1), Set(cgen, cluster_field(c, "gen")),
                     add(cluster_field(c, "arr"), c.threads), cluster_try_complete(c)])


@sync_op
@dataclass(frozen=True)
class ClusterWait(SyncOp):
    """barrier.cluster.wait: blocks until the cluster barrier phase this thread arrived on
    completes."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "barrier.cluster.wait"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"UCGABAR_WAIT\b|BAR\.SYNC"  # (a one-CTA cluster: BAR.SYNC)
    hb_rule: ClassVar[str | None] = "cluster.wait"
    ptx: ClassVar[str] = "9.7.13.3"
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
                    guard=any_of(_eq(carr, 0), _ne(cluster_field(c, "gen"), cgen)))
