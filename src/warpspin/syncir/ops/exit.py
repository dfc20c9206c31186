"""exit, and the op that is not modelled (`Unsupported`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Const, Loc, NOLOC
from ..rules import (Fail, Inflight, Live, Local, NamedField, Rule, When, all_of,
                     any_of, sub)
from .base import (ALL, CLUSTER_ARRIVED, CLUSTER_GEN, Footprint, SyncOp, _acc, _eq, _ge, _gt, _ne,
                   cluster_field, cluster_try_complete, complete_named, publish, sync_op)
from .base import SASS_NO_ORDER, SASS_SYNC_ORDER
from .cp_async import cp_pending_at_exit, stores_pending_at_exit
from .tcgen05 import Tcgen05Commit, tmem_freed_at_exit, uses_tmem


# ----------------------------------------------------------------------------- exit, unsupported

@sync_op
@dataclass(frozen=True)
class Exit(SyncOp):
    """The executing threads exit (also implicit at the end of a process body)."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "exit"
    sass_covered: ClassVar[str] = SASS_SYNC_ORDER
    hb_rule: ClassVar[str | None] = "exit"
    ptx: ClassVar[str] = "9.7.19.2"
    summary: ClassVar[str] = ("live -= threads; a barrier for all threads of the CTA held up only "
                              "by the exited threads completes; an arrival on the cluster "
                              "barrier in the current phase is withdrawn (it waits only for "
                              "non-exited threads); the last thread of a CTA exiting while a copy "
                              "into it is in flight, or a buffer's storer exiting with TMA stores "
                              "of it unretired: pending-at-exit; holding TMEM columns: "
                              "tmem-lifetime")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return "exit"

    def footprint(self, k):
        acc = [_acc("live-threads", "write", "cta"), _acc("named-barrier", "rw", "cta"),
               _acc("mbarrier", "rw", "cta"), _acc("async-copy", "read", "cta")]
        if uses_tmem(k):
            acc.append(_acc("tmem", "read", "cta"))
        if k.buffers:
            acc.append(_acc("buffer-stage", "read", "cta"))
        if k.uses_cluster_barrier():
            acc.append(_acc("cluster-barrier", "rw", "cluster"))
        return Footprint(tuple(acc))

    def rule(self, c):
        T = c.instance_threads
        live = Live(Const(c.cta))
        body = [sub(live, T)]
        # the barriers for every thread that this exit completes; the inits are published once
        # when any completes (publishing touches only mbarriers, the completions only named
        # barriers and buffers: the order does not matter, and the exit's d_step stays short)
        completes = []
        for bid in c.named_ids(c.cta):
            nb = lambda f, b=bid: NamedField(c.cta, Const(b), f)  # noqa: E731
            completes.append((bid, all_of(_eq(nb("exp"), -1), _gt(nb("arr"), 0),
                                          _ge(nb("arr"), live))))
        if completes:
            body.append(When(any_of(*(cond for _, cond in completes)), [publish(c, c.cta)]))
        for bid, cond in completes:
            body.append(When(cond, complete_named(c, Const(bid), publish_inits=False)))
        if c.kernel_uses_cluster_barrier:
            if c.process_uses_cluster_barrier:
                carr, cgen = Local(CLUSTER_ARRIVED), Local(CLUSTER_GEN)
                body.append(When(all_of(_ne(carr, 0), _eq(cgen, cluster_field(c, "gen"))),
                                 [sub(cluster_field(c, "arr"), T)]))
            body.append(cluster_try_complete(c))
        # one check per message (the issuing op's kind, line and barrier): the same line issued
        # by every warp of a cluster is one check, not one per warp and target CTA
        sites: dict[str, list] = {}
        for (pi, pc, cta, idx), st in c.async_into(c.cta):
            label = c.kernel.mbarrier(st.bar.name).label or st.bar.name
            what = 'an arrive of the tcgen05.commit' if isinstance(st, Tcgen05Commit) else 'a copy'
            sites.setdefault(f"the last threads of CTA {c.cta} exit while {what} issued at "
                             f"{st.loc} into {label} is still in flight", []).append(
                Inflight(pi, pc, Const(cta), Const(idx)))
        for message, keys in sites.items():
            body.append(When(all_of(_eq(live, 0), any_of(*(_gt(i, 0) for i in keys))),
                             [Fail("pending-at-exit", message)]))
        return Rule([*cp_pending_at_exit(c), *stores_pending_at_exit(c), *body,
                     *tmem_freed_at_exit(c)])


@sync_op
@dataclass(frozen=True)
class Unsupported(SyncOp):
    """An op that matters for synchronization and is not modelled; its rule fails where a run
    meets it. An Unsupported in a kernel makes the verdict UNSUPPORTED, naming `what` and its
    location, unless the happens-before engine shows that no execution reaches one (pipeline.py,
    docs/semantics.md "Verdicts"); when every one is a `bound` (an op the model would follow but
    for a size limit of the model, such as a grid larger than a grid model holds),
    INCONCLUSIVE. Its footprint is unknown, so no reduction is proven for it."""
    what: str
    loc: Loc = NOLOC
    bound: bool = False
    mnemonic: ClassVar[str] = "unsupported"
    # (an op the model does not follow: nothing is known of its order)
    sass_covered: ClassVar[str] = ""
    summary: ClassVar[str] = ("not modelled: a run that meets it ends there, and the verdict is "
                              "UNSUPPORTED (INCONCLUSIVE: a bound) unless no execution does")
    # the happens-before engine's runs end where they meet one; its proof covers the rest
    hb_rule: ClassVar[str | None] = "unreached"

    @classmethod
    def example(cls):
        return cls("an op that is not modelled")

    def fmt(self):
        return f"unsupported {self.what!r}" + (" (model bound)" if self.bound else "")

    def rule(self, c):
        what = self.what.replace("{", "{{").replace("}", "}}")  # (a message template)
        return Rule([Fail("unsupported", f"{what} is not modelled")])
