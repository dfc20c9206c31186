"""Static well-formedness of a SyncIR kernel (before lowering): names resolve, bounds are sane,
every op is a registered op (syncir/ops/) and satisfies its own validity rules. Returns problems; an
empty list means valid. The extractor never produces an invalid kernel (a test walks every
traced kernel); hand-built SyncIR that is invalid gives an ERROR verdict that lists these."""
from __future__ import annotations

from dataclasses import dataclass, fields

from .ir import (Assign, Const, For, If, Kernel, Lanes, Loc, MBarRef, NOLOC, While, WordRef,
                 expr_vars, stmt_exprs, walk_stmts)
from .objects import LIMITS, MAX_STORERS
from .printer import fmt_expr
from .ops import (OPS, AtomInc, GlobalAdd, GlobalRead, StAsync, BarArrive, BarSync, ClusterArrive, ClusterWait, DsmemStore, Exit,
                  MbarArrive, MbarTestWait, SmemLoad, SmemOwn, SmemStore, SyncOp, Unsupported, peer_word_store)

DEST_OPS = (MbarTestWait, SmemLoad, AtomInc, GlobalAdd, GlobalRead)  # ops that may assign a local (`dest`)


@dataclass(frozen=True)
class Problem:
    message: str
    loc: Loc = NOLOC

    def __str__(self):
        return f"{self.loc}: {self.message}"


class InvalidKernel(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("invalid SyncIR:\n" + "\n".join(f"  {p}" for p in problems))


CONTROL = (Assign, If, For, While, Lanes)


def validate(k: Kernel) -> list[Problem]:
    probs: list[Problem] = []
    params = {p.name for p in k.params}
    bars = {m.name: m for m in k.mbarriers}
    if len(bars) != len(k.mbarriers):
        probs.append(Problem("two mbarrier arrays share a name", k.loc))
    if not 1 <= k.num_ctas <= LIMITS.cluster_ctas:
        probs.append(Problem(f"cluster of {k.num_ctas} CTAs (1..{LIMITS.cluster_ctas} allowed)",
                             k.loc))
    if k.cta_blocks and len(k.cta_blocks) != k.num_ctas:
        probs.append(Problem(f"{len(k.cta_blocks)} block indices for {k.num_ctas} CTAs", k.loc))
    for b in k.cta_blocks:
        for e in b:
            for v in expr_vars(e) - params:
                probs.append(Problem(f"a CTA's block index reads {v!r}, not a launch parameter",
                                     k.loc))
    for prm in k.params:
        if prm.hi < prm.lo:
            probs.append(Problem(f"parameter {prm.name}: empty range {prm.lo}..{prm.hi}"))
    for m in k.mbarriers:
        if m.size < 1:
            probs.append(Problem(f"mbarrier array {m.name} has size {m.size}", m.loc))
    if len({w.name for w in k.words}) != len(k.words):
        probs.append(Problem("two shared-word arrays share a name", k.loc))
    for w in k.words:
        if w.size < 1:
            probs.append(Problem(f"shared-word array {w.name} has size {w.size}", w.loc))
    for c in k.constraints:
        for v in expr_vars(c) - params:
            probs.append(Problem(f"a launch constraint reads {v!r}, not a launch parameter", k.loc))
    if k.constraints and not some_launch(k):  # else every check would be vacuously VERIFIED
        probs.append(Problem("no values of the launch parameters satisfy the launch constraints "
                             f"({', '.join(fmt_expr(c) for c in k.constraints)}): give other "
                             "--param values", k.loc))
    if len({t.name for t in k.tensormaps}) != len(k.tensormaps):
        probs.append(Problem("two tensormaps share a name", k.loc))
    probs += _buffer_problems(k)
    if len({c.name for c in k.counters}) != len(k.counters):
        probs.append(Problem("two global counters share a name", k.loc))
    for c in k.counters:
        for v in (expr_vars(c.limit) | expr_vars(c.others)) - params:
            probs.append(Problem(f"global counter {c.name}: its limit or `others` reads {v!r}, "
                                 "not a launch parameter", c.loc))
    if len({f.name for f in k.flags}) != len(k.flags):
        probs.append(Problem("two global flags share a name", k.loc))
    probs += _several_clusters_problems(k)
    probs += _grid_word_problems(k)
    if not k.processes:
        probs.append(Problem("kernel has no processes", k.loc))
    for c in range(k.num_ctas):
        if k.cta_threads(c) > LIMITS.cta_threads:
            probs.append(Problem(f"CTA {c} has {k.cta_threads(c)} threads (at most "
                                 f"{LIMITS.cta_threads})", k.loc))
    for p in k.processes:
        where = f"process {p.role}"
        if not 0 <= p.cta < k.num_ctas:
            probs.append(Problem(f"{where}: CTA {p.cta} outside the cluster of {k.num_ctas}"))
        if not 1 <= p.threads <= LIMITS.warp_threads or p.instances < 1:
            probs.append(Problem(f"{where}: an instance is 1..{LIMITS.warp_threads} threads (one "
                                 f"warp at most; a warpgroup is 4 instances) and a process has "
                                 f"at least one instance, not {p.threads} threads x "
                                 f"{p.instances}"))
        if p.warps[1] <= p.warps[0]:
            probs.append(Problem(f"{where}: empty warp range {p.warps}"))
        names = set(params) | {n for n, _ in p.init}
        for s in walk_stmts(p.body):
            if isinstance(s, Assign):
                names.add(s.var)
            elif isinstance(s, For):
                names.add(s.var)
            elif isinstance(s, DEST_OPS) and s.dest is not None:
                names.add(s.dest)
        probs += _body_problems(k, p, p.body, names, params, bars, where, lanes=None)
    return probs


CLUSTER_OPS = (ClusterArrive, ClusterWait, DsmemStore)


def reaches_another_cta(s) -> bool:
    """Whether op `s` reaches another CTA through the cluster: the cluster barrier, DSMEM, a
    remote mbarrier, a multicast."""
    return isinstance(s, CLUSTER_OPS) or getattr(s, "multicast", None) is not None or any(
        isinstance(getattr(s, f.name), (MBarRef, WordRef)) and getattr(s, f.name).cta is not None
        for f in fields(s))


def cross_cta_modelled(s, own: range) -> bool:
    """Whether op `s`, which reaches another CTA through the cluster, is modelled in a model of
    several clusters for a thread of the cluster of CTAs `own`."""
    if isinstance(s, (ClusterArrive, ClusterWait)):
        return True
    return type(s) is MbarArrive and not (isinstance(s.bar.cta, Const)
                                          and s.bar.cta.value not in own)


def _several_clusters_problems(k: Kernel) -> list[Problem]:
    """In a model of several clusters (cluster_ctas < num_ctas; CTA c is in cluster c // n) the
    ops that reach another CTA through the cluster are the cluster barrier (one per cluster) and
    mbarrier.arrive into a CTA of the arriving thread's cluster; remote waits, multicast, DSMEM
    and remote copies are modelled for a model of one cluster only."""
    n = k.cluster_ctas
    if n == 0:
        return []
    if n < 0 or k.num_ctas % n:
        return [Problem(f"{k.num_ctas} CTAs do not form clusters of {n}", k.loc)]
    if n == k.num_ctas:
        return []
    probs = []
    for p in k.processes:
        own = k.cluster_members(p.cta)
        for s in walk_stmts(p.body):
            if not isinstance(s, SyncOp) or not reaches_another_cta(s):
                continue
            if cross_cta_modelled(s, own):
                continue
            probs.append(Problem(f"process {p.role}: {type(s).__name__} reaches another CTA "
                                 f"of its cluster (CTAs {own.start}..{own.stop - 1}), in a model "
                                 f"of {k.num_ctas // n} clusters (modelled there: the cluster "
                                 "barrier and mbarrier.arrive into a CTA of the cluster)",
                                 getattr(s, "loc", NOLOC)))
    return probs


def _grid_word_problems(k: Kernel) -> list[Problem]:
    """An array of global data (`WordsDecl.grid`) holds cells of data only, and only st.shared /
    ld.shared of its cells name it (the other word ops' rules are for shared memory)."""
    grid = {w.name for w in k.words if w.grid}
    probs = [Problem(f"{w.name}: global data (grid) that is not data cells", w.loc)
             for w in k.words if w.grid and not w.data]
    for p in k.processes:
        for s in walk_stmts(p.body):
            if isinstance(s, (SmemStore, SmemLoad)) or not isinstance(s, SyncOp):
                continue
            named = {getattr(s, f.name).name for f in fields(s)
                     if isinstance(getattr(s, f.name), WordRef)}
            named |= {getattr(s, "array", None)} & grid
            for name in sorted(named & grid):
                probs.append(Problem(f"process {p.role}: {s.mnemonic} names {name}, global data "
                                     "(only st.shared / ld.shared of its cells do)",
                                     getattr(s, "loc", NOLOC)))
    return probs


def _body_problems(k, p, body, names, params, bars, where, lanes) -> list[Problem]:
    probs = []
    for i, s in enumerate(body):
        loc = getattr(s, "loc", NOLOC)
        if isinstance(s, SmemStore) and s.ref.cta is not None and not (
                i and (isinstance(body[i - 1], DsmemStore) and peer_word_store(s, body[i - 1])
                       or isinstance(body[i - 1], SmemStore) and body[i - 1].ref.cta == s.ref.cta
                       and body[i - 1].loc == s.loc)):
            # its DsmemStore carries the release's scope and the peer's running: without it, a
            # CTA-scope arrive after the store would go unreported
            probs.append(Problem(f"{where}: st.shared into CTA {fmt_expr(s.ref.cta)} not right "
                                 "after the st.shared::cluster of its line", loc))
        if not isinstance(s, (SyncOp, *CONTROL)):
            probs.append(Problem(f"{where}: {type(s).__name__} is not a SyncIR statement", loc))
            continue
        if isinstance(s, SyncOp) and OPS.get(type(s).mnemonic) is not type(s):
            probs.append(Problem(f"{where}: op {type(s).__name__} is not registered (ops.sync_op)",
                                 loc))
        for e in stmt_exprs(s):
            for v in expr_vars(e) - names:
                probs.append(Problem(f"{where}: variable {v!r} is never assigned", loc))
        for f in fields(s):
            ref = getattr(s, f.name)
            if isinstance(ref, MBarRef):
                m = bars.get(ref.name)
                if m is None:
                    probs.append(Problem(f"{where}: unknown mbarrier array {ref.name!r}", loc))
                elif isinstance(ref.index, Const) and not 0 <= ref.index.value < m.size:
                    probs.append(Problem(f"{where}: {ref.name}[{ref.index.value}] outside the "
                                         f"array of {m.size}", loc))
                if isinstance(ref.cta, Const) and not 0 <= ref.cta.value < k.num_ctas:
                    probs.append(Problem(f"{where}: {ref.name} of CTA {ref.cta.value}, outside "
                                         f"the cluster of {k.num_ctas}", loc))
        if isinstance(s, SyncOp) and not isinstance(s, Unsupported):
            probs += [Problem(f"{where}: {msg}", loc) for msg in s.problems(k)]
        if isinstance(s, (BarSync, BarArrive)) and isinstance(s.barrier_id, Const) \
                and not 0 <= s.barrier_id.value < LIMITS.named_barriers:
            probs.append(Problem(f"{where}: named barrier id {s.barrier_id.value} outside "
                                 f"0..{LIMITS.named_barriers - 1}", loc))
        if isinstance(s, AtomInc) and (p.threads if lanes is None else lanes) != 1:
            probs.append(Problem(f"{where}: atom.inc on {s.counter} by "
                                 f"{p.threads if lanes is None else lanes} threads: each would "
                                 "get its own value, which is not modelled (one lane: Lanes(1))",
                                 loc))
        if isinstance(s, StAsync) and (p.threads if lanes is None else lanes) != 1:
            probs.append(Problem(f"{where}: st.async of words by "
                                 f"{p.threads if lanes is None else lanes} threads: one lane "
                                 "(Lanes(1)) is modelled", loc))
        if isinstance(s, Exit) and lanes is not None:
            probs.append(Problem(f"{where}: exit inside a lane subset (Lanes({lanes})): an exit "
                                 "by part of a warp is not modelled", loc))
        if isinstance(s, (*DEST_OPS, Assign)) and \
                (s.var if isinstance(s, Assign) else s.dest) in params:
            probs.append(Problem(f"{where}: assigns to launch parameter", loc))
        if isinstance(s, For) and s.step <= 0:
            probs.append(Problem(f"{where}: loop step {s.step} is not positive", loc))
        if isinstance(s, While) and s.max_iters < 1:
            probs.append(Problem(f"{where}: while loop bound {s.max_iters} < 1", loc))
        if isinstance(s, Lanes) and not 1 <= s.count <= p.threads:
            probs.append(Problem(f"{where}: {s.count} lanes of a {p.threads}-thread instance", loc))
        inner = s.count if isinstance(s, Lanes) else lanes
        if isinstance(s, If):
            probs += _body_problems(k, p, s.then, names, params, bars, where, inner)
            probs += _body_problems(k, p, s.else_, names, params, bars, where, inner)
        elif isinstance(s, (For, While, Lanes)):
            probs += _body_problems(k, p, s.body, names, params, bars, where, inner)
    return probs


def check(k: Kernel) -> Kernel:
    probs = validate(k)
    if probs:
        raise InvalidKernel(probs)
    return k


def unsupported_ops(k: Kernel) -> list[Unsupported]:
    return [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, Unsupported)]


def some_launch(k: Kernel) -> bool:
    """Whether some values of the parameters the constraints read satisfy all of them."""
    from itertools import product

    from .ir import eval_expr
    names = sorted(set().union(*(expr_vars(c) for c in k.constraints)))
    params = {p.name: p for p in k.params}
    if any(n not in params for n in names):
        return True  # reported above as a constraint that reads no parameter
    if any(params[n].unbounded for n in names):
        return True  # not enumerable: the cutoff refuses a family the constraints cut
    for values in product(*(params[n].values for n in names)):
        env = dict(zip(names, values))
        if all(eval_expr(c, env) for c in k.constraints):
            return True
    return False


def _buffer_problems(k: Kernel) -> list[Problem]:
    """Staged buffers: unique names, at least one stage, a barrier id in range, and their TMA
    stores only in their storing processes, of one instance, at most one per CTA."""
    from .ir import walk_stmts
    from .ops import TmaStore
    out = []
    if len({b.name for b in k.buffers}) != len(k.buffers):
        out.append(Problem("two staged buffers share a name", k.loc))
    for b in k.buffers:
        owns = [s for p in k.processes for s in walk_stmts(p.body)
                if isinstance(s, SmemOwn) and s.buf == b.name]
        if any(s.shared for s in owns) and any(s.write for s in owns):
            out.append(Problem(f"buffer {b.name}: threads read it whole (smem.own shared) and "
                               "write their own parts: only cp.async copies may write it then",
                               b.loc))
        if b.stages < 1:
            out.append(Problem(f"staged buffer {b.name} has {b.stages} stages", b.loc))
        if b.space not in ("smem", "tmem"):
            out.append(Problem(f"staged buffer {b.name}: space {b.space!r} is neither smem nor "
                               "tmem", b.loc))
        if b.space == "tmem" and (b.storers or b.barrier is not None or b.other_barriers):
            out.append(Problem(f"TMEM buffer {b.name}: TMA stores and named-barrier hand-overs "
                               "are of shared memory", b.loc))
        if b.barrier is not None and not 0 <= b.barrier < LIMITS.named_barriers:
            out.append(Problem(f"staged buffer {b.name}: barrier {b.barrier} is not a named "
                               "barrier id", b.loc))
        for i in b.storers:
            if not 0 <= i < len(k.processes):
                out.append(Problem(f"staged buffer {b.name}: no process {i}", b.loc))
            elif k.processes[i].instances != 1:
                out.append(Problem(f"staged buffer {b.name}: its storing process "
                                   f"{k.processes[i].role} has {k.processes[i].instances} "
                                   "instances (a storing process is one thread)", b.loc))
        ctas = [k.processes[i].cta for i in b.storers if 0 <= i < len(k.processes)]
        if any(ctas.count(c) > MAX_STORERS for c in ctas):
            out.append(Problem(f"staged buffer {b.name}: more than {MAX_STORERS} storing "
                               "processes in one CTA", b.loc))
        if len(set(b.storers)) != len(b.storers):
            out.append(Problem(f"staged buffer {b.name}: a storing process named twice", b.loc))
        for pi, p in enumerate(k.processes):
            for s in walk_stmts(p.body):
                if isinstance(s, TmaStore) and s.buf == b.name and pi not in b.storers:
                    out.append(Problem(f"{p.role} stores {b.name} and is not one of its storing "
                                       "processes", s.loc))
    return out
