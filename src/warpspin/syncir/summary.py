"""What a kernel's synchronization consists of, as plain data for reports: the lanes (process
instances, as traces name them), the barrier arrays, and who inits, arrives on or waits on each.
"""
from __future__ import annotations

from dataclasses import fields

from .ir import Kernel, MBarRef, walk_stmts
from .ops import (BarArrive, BarSync, ClusterArrive, ClusterWait, GlobalAdd, GlobalWait,
                  MbarInit, MbarInitFence, MbarTestWait, MbarWait, SyncOp)


def lane_name(kernel: Kernel, process: int, instance: int) -> str:
    """An instance as a trace step names it (pipeline._trace_steps)."""
    p = kernel.processes[process]
    who = p.instance_name(instance)
    return f"{who}@cta{p.cta}" if p.cta or kernel.num_ctas > 1 else who


def _relation(op: SyncOp) -> str:
    if isinstance(op, (MbarWait, MbarTestWait, ClusterWait, GlobalWait)):
        return "waits"
    if isinstance(op, (MbarInit, MbarInitFence)):
        return "inits"
    return "arrives"


def _targets(kernel: Kernel, op: SyncOp) -> list[str]:
    """The barriers an op touches, by the names reports use."""
    out = []
    for f in fields(op):
        v = getattr(op, f.name)
        if isinstance(v, MBarRef):
            d = kernel.mbarrier(v.name)
            out.append(d.label or d.name)
    if isinstance(op, (BarSync, BarArrive)):
        from .printer import fmt_expr
        out.append(f"named barrier {fmt_expr(op.barrier_id)}")
    if isinstance(op, (ClusterArrive, ClusterWait)):
        out.append("cluster barrier")
    if isinstance(op, (GlobalAdd, GlobalWait)):
        out.append(f"global flag {kernel.flag(op.flag).label or op.flag}")
    return out


def kernel_summary(kernel: Kernel) -> dict:
    lanes = []
    for pi, p in enumerate(kernel.processes):
        for i in range(p.instances):
            lanes.append({"name": lane_name(kernel, pi, i), "role": p.role, "cta": p.cta,
                          "warps": list(p.instance_warps(i)), "threads": p.threads})
    barriers = [{"name": d.label or d.name, "size": d.size, "elements": list(d.elements),
                 "groups": list(dict.fromkeys(e.split("[", 1)[0] for e in d.elements if e)),
                 "file": d.loc.file, "line": d.loc.line} for d in kernel.mbarriers]
    edges, seen = [], set()
    for p in kernel.processes:
        for op in walk_stmts(p.body):
            if not isinstance(op, SyncOp):
                continue
            for target in _targets(kernel, op):
                key = (p.role, p.cta, target, op.mnemonic, op.loc.file, op.loc.line)
                if key in seen:
                    continue
                seen.add(key)
                edges.append({"role": p.role, "cta": p.cta, "barrier": target,
                              "relation": _relation(op), "op": op.mnemonic,
                              "file": op.loc.file, "line": op.loc.line,
                              "frame": op.loc.frame or ""})
    return {"kernel": kernel.name, "ctas": kernel.num_ctas, "lanes": lanes, "barriers": barriers,
            "edges": edges, "assumptions": list(kernel.assumptions)}
