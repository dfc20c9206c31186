"""What a kernel's synchronization consists of, as plain data for reports: the lanes (process
instances, as traces name them), the barrier arrays, and who inits, arrives on or waits on each.
"""
from __future__ import annotations

from dataclasses import fields

from .ir import Const, Kernel, MBarRef, walk_stmts
from .ops import (FLAG_OPS, BarArrive, BarSync, ClusterArrive, ClusterWait, GlobalLock,
                  GlobalWait,
                  MbarInit, MbarInitFence, MbarTestWait, MbarWait, SyncOp)


def lane_name(kernel: Kernel, process: int, instance: int) -> str:
    """An instance as a trace step names it (pipeline._trace_steps)."""
    p = kernel.processes[process]
    who = p.instance_name(instance)
    return f"{who}@cta{p.cta}" if p.cta or kernel.num_ctas > 1 else who


def _relation(op: SyncOp) -> str:
    if isinstance(op, (MbarWait, MbarTestWait, ClusterWait, GlobalWait, GlobalLock)):
        return "waits"
    if isinstance(op, (MbarInit, MbarInitFence)):
        return "inits"
    return "arrives"


def _targets(kernel: Kernel, op: SyncOp, known: dict) -> list[str]:
    """The barriers an op touches, by the names reports use (`known`: the group of an index
    expression another op of the process names, as a TMA load's index is its expect_tx's)."""
    out = []
    for f in fields(op):
        v = getattr(op, f.name)
        if isinstance(v, MBarRef):
            group = _barrier_group(kernel, op, v)
            out.append(known.get((v.name, v.index), group) if group == _array(kernel, v) else group)
    if isinstance(op, (BarSync, BarArrive)):
        from .printer import fmt_expr
        out.append(f"named barrier {fmt_expr(op.barrier_id)}")
    if isinstance(op, (ClusterArrive, ClusterWait)):
        out.append("cluster barrier")
    if isinstance(op, FLAG_OPS):
        out.append(f"global flag {kernel.flag(op.flag).label or op.flag}")
    return out


def _group(element: str) -> str:
    return element.split("[", 1)[0]


def _barrier_group(kernel: Kernel, op: SyncOp, ref: MBarRef) -> str:
    """The barrier an op uses, by the group its elements form where that is known (a pipeline's
    full and empty barriers share one array): the element of a constant index, or the group the
    op's pipeline label names; else the array."""
    d = kernel.mbarrier(ref.name)
    groups = {_group(e) for e in d.elements if e}
    if isinstance(ref.index, Const) and 0 <= ref.index.value < len(d.elements) and \
            d.elements[ref.index.value]:
        return _group(d.elements[ref.index.value])
    if op.loc.label in groups:
        return op.loc.label
    return _array(kernel, ref)


def _array(kernel: Kernel, ref: MBarRef) -> str:
    d = kernel.mbarrier(ref.name)
    return d.label or d.name


def _known_groups(kernel: Kernel, body) -> dict:
    """{(array, index expression): group} of a process's ops whose group is known, where no two
    ops with one index expression name different groups."""
    seen: dict = {}
    for op in walk_stmts(body):
        if isinstance(op, SyncOp):
            for f in fields(op):
                v = getattr(op, f.name)
                if isinstance(v, MBarRef):
                    g = _barrier_group(kernel, op, v)
                    if g != _array(kernel, v):
                        seen.setdefault((v.name, v.index), set()).add(g)
    return {k: next(iter(gs)) for k, gs in seen.items() if len(gs) == 1}


def kernel_summary(kernel: Kernel) -> dict:
    lanes = []
    for pi, p in enumerate(kernel.processes):
        for i in range(p.instances):
            lanes.append({"name": lane_name(kernel, pi, i), "role": p.role, "cta": p.cta,
                          "warps": list(p.instance_warps(i)), "threads": p.threads})
    barriers = [{"name": d.label or d.name, "size": d.size, "elements": list(d.elements),
                 "groups": list(dict.fromkeys(_group(e) for e in d.elements if e)),
                 "file": d.loc.file, "line": d.loc.line} for d in kernel.mbarriers]
    edges, seen = [], set()
    for p in kernel.processes:
        known = _known_groups(kernel, p.body)
        for op in walk_stmts(p.body):
            if not isinstance(op, SyncOp):
                continue
            for target in _targets(kernel, op, known):
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
