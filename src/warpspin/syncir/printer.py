"""Readable text form of SyncIR (for --emit, test failures and docs)."""
from __future__ import annotations

from .ir import (Assign, BinOp, Const, Expr, For, If, Kernel, Lanes, MBarRef, Process, Select, Stmt, UnOp, Var, While)
from .ops import SyncOp

_PREC = {"or": 1, "and": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
         "|": 4, "^": 5, "&": 6, "+": 7, "-": 7, "*": 8, "//": 8, "%": 8}


def fmt_expr(e: Expr, prec: int = 0) -> str:
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, UnOp):
        return f"{e.op}{' ' if e.op == 'not' else ''}{fmt_expr(e.arg, 9)}"
    if isinstance(e, Select):
        return f"select({fmt_expr(e.cond)}, {fmt_expr(e.then)}, {fmt_expr(e.else_)})"
    if isinstance(e, BinOp):
        if e.op in ("min", "max"):
            return f"{e.op}({fmt_expr(e.lhs)}, {fmt_expr(e.rhs)})"
        p = _PREC[e.op]
        s = f"{fmt_expr(e.lhs, p)} {e.op} {fmt_expr(e.rhs, p + 1)}"
        return f"({s})" if p < prec else s
    return repr(e)


def fmt_bar(b: MBarRef) -> str:
    s = f"{b.name}[{fmt_expr(b.index)}]"
    return s if b.cta is None else f"{s}@cta({fmt_expr(b.cta)})"


def fmt_op(s: Stmt) -> str:
    """One line for a sync op or an assignment (no nested bodies)."""
    if isinstance(s, Assign):
        return f"{s.var} = {fmt_expr(s.value)}"
    if isinstance(s, SyncOp):
        return s.fmt()
    return type(s).__name__


def _loc(s) -> str:
    loc = getattr(s, "loc", None)
    if loc is None or loc.line == 0:
        return ""
    return f"    # {loc}"


def fmt_body(body, indent: int) -> list[str]:
    pad = "  " * indent
    out = []
    for s in body:
        if isinstance(s, If):
            out.append(f"{pad}if {fmt_expr(s.cond)}:{_loc(s)}")
            out += fmt_body(s.then, indent + 1) or [pad + "  pass"]
            if s.else_:
                out.append(f"{pad}else:")
                out += fmt_body(s.else_, indent + 1)
        elif isinstance(s, For):
            step = "" if s.step == 1 else f", {s.step}"
            out.append(f"{pad}for {s.var} in range({fmt_expr(s.start)}, {fmt_expr(s.stop)}{step}):{_loc(s)}")
            out += fmt_body(s.body, indent + 1) or [pad + "  pass"]
        elif isinstance(s, While):
            out.append(f"{pad}while {fmt_expr(s.cond)}:  # at most {s.max_iters} iterations{_loc(s)}")
            out += fmt_body(s.body, indent + 1) or [pad + "  pass"]
        elif isinstance(s, Lanes):
            head = "elect_one" if s.count == 1 else f"lanes {s.count}"
            out.append(f"{pad}{head}:{_loc(s)}")
            out += fmt_body(s.body, indent + 1) or [pad + "  pass"]
        else:
            out.append(f"{pad}{fmt_op(s)}{_loc(s)}")
    return out


def fmt_process(p: Process) -> str:
    inst = f" x{p.instances}" if p.instances != 1 else ""
    init = "".join(f" {n}={v}" for n, v in p.init)
    head = (f"process {p.role}{inst}: cta {p.cta}, warps {p.warps[0]}..{p.warps[1] - 1}, "
            f"{p.threads} threads each{(',' + init) if init else ''}")
    return "\n".join([head] + fmt_body(p.body, 1))


def fmt_kernel(k: Kernel) -> str:
    n = k.cluster_ctas or k.num_ctas
    lines = [f"kernel {k.name}: {n} CTA{'s' if n != 1 else ''} per cluster"]
    if n != k.num_ctas:
        lines[0] += f", {k.num_ctas // n} clusters"
    for prm in k.params:
        rng = str(prm.lo) if prm.lo == prm.hi else f"{prm.lo}.." if prm.unbounded \
            else f"{prm.lo}..{prm.hi}"
        lines.append(f"  param {prm.name} = {rng}")
    for c in k.constraints:
        lines.append(f"  assume {fmt_expr(c)}")
    for c, b in enumerate(k.cta_blocks):
        lines.append(f"  cta {c} = block ({', '.join(fmt_expr(x) for x in b)})")
    for m in k.mbarriers:
        named = [f"[{i}] {n}" for i, n in enumerate(m.elements) if n]
        label = f"  # {m.label}" if m.label else ""
        if named:
            label += ("  # " if not label else "; ") + ", ".join(named)
        lines.append(f"  mbarrier {m.name}[{m.size}]{label}")
    for w in k.words:
        kind = "global words" if w.grid else "words"
        lines.append(f"  {kind} {w.name}[{w.size}]" + (f"  # {w.label}" if w.label else ""))
    for c in k.counters:
        others = "" if c.others == Const(1) else f", others={fmt_expr(c.others)}"
        lines.append(f"  counter {c.name}, limit={fmt_expr(c.limit)}{others}" +
                     (f"  # {c.label}" if c.label else ""))
    for g in k.flags:
        lines.append(f"  flag {g.name}" + (f"  # {g.label}" if g.label else ""))
    for t in k.tensormaps:
        lines.append(f"  tensormap {t.name}" + (f"  # {t.label}" if t.label else ""))
    for b in k.buffers:
        storers = ", ".join(k.processes[i].role for i in b.storers)
        bar = "" if b.barrier is None else f", barrier={b.barrier}"
        if b.other_barriers:
            bar += f", others={list(b.other_barriers)}"
        space = "" if b.space == "smem" else f", space={b.space}"
        lines.append(f"  buffer {b.name}[{b.stages}], storers=[{storers}]{bar}{space}" +
                     (f"  # {b.label}" if b.label else ""))
    for p in k.processes:
        lines.append(fmt_process(p))
    return "\n".join(lines)
