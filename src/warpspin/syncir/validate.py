"""Static well-formedness of a SyncIR kernel (before lowering): names resolve, bounds are sane,
async byte counts are launch constants. Returns problems; an empty list means valid."""
from __future__ import annotations

from dataclasses import dataclass

from .ir import (Assign, For, Kernel, Lanes, Loc, MBarRef, MbarTestWait,
                 NOLOC, TmaLoad, Unsupported, While, expr_vars, stmt_exprs,
                 walk_stmts)


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


def validate(k: Kernel) -> list[Problem]:
    probs: list[Problem] = []
    params = {p.name for p in k.params}
    bars = {m.name: m for m in k.mbarriers}
    if len(bars) != len(k.mbarriers):
        probs.append(Problem("two mbarrier arrays share a name", k.loc))
    if k.num_ctas < 1 or k.num_ctas > 16:
        probs.append(Problem(f"cluster of {k.num_ctas} CTAs (1..16 allowed)", k.loc))
    for prm in k.params:
        if prm.hi < prm.lo:
            probs.append(Problem(f"parameter {prm.name}: empty range {prm.lo}..{prm.hi}"))
    for m in k.mbarriers:
        if m.size < 1:
            probs.append(Problem(f"mbarrier array {m.name} has size {m.size}", m.loc))
    if not k.processes:
        probs.append(Problem("kernel has no processes", k.loc))
    for p in k.processes:
        where = f"process {p.role}"
        if not 0 <= p.cta < k.num_ctas:
            probs.append(Problem(f"{where}: CTA {p.cta} outside the cluster of {k.num_ctas}"))
        if p.threads < 1 or p.instances < 1:
            probs.append(Problem(f"{where}: needs at least one thread and one instance"))
        if p.warps[1] <= p.warps[0]:
            probs.append(Problem(f"{where}: empty warp range {p.warps}"))
        names = set(params) | {n for n, _ in p.init}
        for s in walk_stmts(p.body):
            if isinstance(s, Assign):
                names.add(s.var)
            elif isinstance(s, For):
                names.add(s.var)
            elif isinstance(s, MbarTestWait):
                names.add(s.dest)
        for s in walk_stmts(p.body):
            loc = getattr(s, "loc", NOLOC)
            for e in stmt_exprs(s):
                for v in expr_vars(e) - names:
                    probs.append(Problem(f"{where}: variable {v!r} is never assigned", loc))
            bar = getattr(s, "bar", None)
            if isinstance(bar, MBarRef) and bar.name not in bars:
                probs.append(Problem(f"{where}: unknown mbarrier array {bar.name!r}", loc))
            if isinstance(s, TmaLoad) and s.multicast is not None and s.bar.cta is not None:
                probs.append(Problem(f"{where}: a multicast TMA names its CTAs by the mask, not "
                                     "by the barrier", loc))
            if isinstance(s, TmaLoad) and not expr_vars(s.bytes) <= params:
                probs.append(Problem(f"{where}: TMA byte count must depend only on launch "
                                     "parameters", loc))
            if isinstance(s, For) and s.step <= 0:
                probs.append(Problem(f"{where}: loop step {s.step} is not positive", loc))
            if isinstance(s, While) and s.max_iters < 1:
                probs.append(Problem(f"{where}: while loop bound {s.max_iters} < 1", loc))
            if isinstance(s, Lanes) and not 1 <= s.count <= p.threads:
                probs.append(Problem(f"{where}: {s.count} lanes of a {p.threads}-thread instance", loc))
            if isinstance(s, (MbarTestWait, Assign)) and (s.var if isinstance(s, Assign) else s.dest) in params:
                probs.append(Problem(f"{where}: assigns to launch parameter", loc))
    return probs


def check(k: Kernel) -> Kernel:
    probs = validate(k)
    if probs:
        raise InvalidKernel(probs)
    return k


def unsupported_ops(k: Kernel) -> list[Unsupported]:
    return [s for p in k.processes for s in walk_stmts(p.body) if isinstance(s, Unsupported)]
