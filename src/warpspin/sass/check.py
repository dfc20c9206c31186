"""Check a SASS function against ordering obligations, and replay every path it reports.

    report = check_function(function, obligations, functions)
    report.verdict   # "verified" | "violation" | "inconclusive", decided by `decide` alone
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from . import cfg as cfgmod
from .listing import Function, Instr
from .lines import LineMap
from .obligations import Obligation
from .opcodes import unknown as unknown_opcodes
from .search import search

HOLDS, VIOLATED, INCONCLUSIVE = "holds", "violated", "inconclusive"


@dataclass(frozen=True)
class ObligationResult:
    obligation: Obligation
    status: str
    reason: str = ""
    path: tuple[Instr, ...] = ()
    counts: tuple[int, int, int] = (0, 0, 0)   # instructions of first, fence, then
    states: int = 0
    others: tuple[int, ...] = ()   # "order": the addresses of every other `first` that does too
    fences: tuple[Instr, ...] = ()  # violated: the fence's instructions (where the order was)


@dataclass
class SassReport:
    function: str
    instructions: int
    results: list[ObligationResult] = field(default_factory=list)
    unknown: list[Instr] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)  # model ops whose order nothing checks
    verdict: str = "undecided"


def _indices(f: Function, sel, lines: LineMap, sure: bool = False) -> set[int]:
    """The instructions of a selector: those on its lines, and those on a line that an inline asm
    block of one of its lines took (`sure`: only where that line is no other block's and no op's
    of that pattern, for a fence must not be counted where it may be another op's)."""
    if sel is None:
        return set()
    return {i for i, ins in enumerate(f.instrs) if sel.matches(ins) or
            lines.belongs(ins, sel, sure)}


def _callees(f: Function, functions: list[Function]) -> dict[str, list[Instr]]:
    """The instructions of each function `f` calls, by its label."""
    out = {}
    for ins in f.instrs:
        if ins.base == "CALL":
            t = ins.target()
            g = next((g for g in functions if g.name == t or t in g.labels), None)
            if g is None:
                out[t] = None
            elif g is f:
                start = f.labels[t]
                out[t] = [x for x in f.instrs if x.addr >= start]
            else:
                out[t] = g.instrs
    return out


def _replay(f: Function, c: cfgmod.Cfg, ob: Obligation, path: tuple[int, ...]) -> str:
    """An independent walk of a reported path: "" when it is a path of the control flow from an
    instruction of `first` to one of `then` on which no `fence` instruction surely runs."""
    if not path or not ob.first.matches(f.instrs[path[0]]) and not (ob.first.entry and path[0] == 0):
        return "it does not start at an instruction of the first set"
    if not ob.then.matches(f.instrs[path[-1]]):
        return "it does not end at an instruction of the then set"
    for a, b in zip(path, path[1:]):
        if b not in c.succ[a] and not (f.instrs[a].base in cfgmod.BRANCHES and b == a + 1):
            return f"{f.instrs[b].addr:#06x} does not follow {f.instrs[a].addr:#06x}"
        if ob.form == "order" and (a, b) in c.back:
            return "it takes a back edge"
    for k in path[1:-1]:
        ins = f.instrs[k]
        if ob.fence is not None and ob.fence.matches(ins) and cfgmod.always(ins.pred):
            return f"the fence at {ins.addr:#06x} runs on it"
    return ""


def check_obligation(f: Function, c: cfgmod.Cfg, ob: Obligation,
                     callees: dict[str, list[Instr] | None],
                     lines: LineMap | None = None) -> ObligationResult:
    if ob.form == "undecided":
        return ObligationResult(ob, INCONCLUSIVE, ob.text)
    lines = lines or LineMap()
    first, then = _indices(f, ob.first, lines), _indices(f, ob.then, lines)
    fence = _indices(f, ob.fence, lines, sure=True)
    counts = (len(first), len(fence), len(then))
    missing = [s for s, n in ((ob.first, first), (ob.fence, fence), (ob.then, then))
               if s is not None and not n and not (s.entry and s is ob.first)]
    if missing:
        return ObligationResult(ob, INCONCLUSIVE, "no SASS instruction found for " + "; ".join(
            f"{s.what} ({_where(s)})" for s in missing), counts=counts)
    for label, body in callees.items():
        if body is None:
            return ObligationResult(ob, INCONCLUSIVE, f"a call to {label}, not in the listing",
                                    counts=counts)
        # a fence in the callee only blocks (not following it is conservative); what arms or
        # hits must not hide there
        hit = next((i for i in body if re.match(ob.first.pattern, i.body) or
                    re.match(ob.then.pattern, i.body)), None)
        if hit is not None:
            return ObligationResult(ob, INCONCLUSIVE, f"the called {label} has {hit.text} at "
                                    f"{hit.addr:#06x}; calls are not followed", counts=counts)
    if ob.form == "order":
        found = search(c, first, set(), then, follow_back=False)
    else:
        found = search(c, first, fence, then, arm_at_entry=ob.first.entry)
    if found.status != VIOLATED:
        return ObligationResult(ob, found.status, found.reason, counts=counts, states=found.states)
    if ob.fence is not None and ob.form != "order":
        # a reorder is shown only on a path with no instruction of the fence's kind at all: one
        # on another line (or none) may be this fence's (an unrolled copy ptxas gave no line)
        # (and one a predicate may skip: whether it runs may be what orders the path)
        broad = {i for i, ins in enumerate(f.instrs) if re.match(ob.fence.pattern, ins.body)}
        strict = search(c, first, broad, then, arm_at_entry=ob.first.entry,
                        block=frozenset(broad))
        if strict.status != VIOLATED:
            others = [f.instrs[i] for i in found.path if i in broad]
            return ObligationResult(ob, INCONCLUSIVE, (
                f"every path found from {ob.first.what} to {ob.then.what} passes an instruction "
                f"of the fence's kind that is on another line or that a predicate may skip ("
                + ", ".join(f"{i.addr:#06x} {i.text} line {i.line or 'none'}" for i in others[:3])
                + "), which may be it"), counts=counts, states=found.states + strict.states)
        found = strict
    why = _replay(f, c, ob, found.path)
    if why:  # a bug of the search: never shown as a reorder
        return ObligationResult(ob, INCONCLUSIVE, f"internal error: the path found does not "
                                f"replay ({why})", counts=counts, states=found.states)
    others = ()
    if ob.form == "order":
        others = tuple(f.instrs[i].addr for i in sorted(first) if i != found.path[0] and
                       search(c, {i}, set(), then, follow_back=False).status == VIOLATED)
    return ObligationResult(ob, VIOLATED, path=tuple(f.instrs[i] for i in found.path),
                            counts=counts, states=found.states, others=others,
                            fences=tuple(f.instrs[i] for i in sorted(fence))[:8])


def _where(sel) -> str:
    lines = sorted({f"{os.path.basename(f)}:{n}" for f, n in sel.lines})
    return ("lines " + ", ".join(lines) if lines else "any line") + f", pattern {sel.pattern}"


def check_function(f: Function, obligations: list[Obligation],
                   functions: list[Function] | None = None,
                   lines: LineMap | None = None, uncovered: list[str] = ()) -> SassReport:
    """`lines`: what the kernel's PTX says of the line information (none for a listing);
    `uncovered`: the model's ops whose order no obligation checks."""
    rep = SassReport(f.name, len(f.instrs), uncovered=list(uncovered))
    rep.unknown = unknown_opcodes(f.instrs)
    c = cfgmod.build(f)
    callees = _callees(f, functions or [f])
    for ob in obligations:
        rep.results.append(check_obligation(f, c, ob, callees, lines or LineMap()))
    rep.verdict = decide(rep)
    return rep


def decide(rep: SassReport) -> str:
    """The one place a SASS check says verified: every obligation holds on every path, every
    instruction's family is known, and every op of the model is covered (an obligation checks
    its order or an assumption the docs state covers it)."""
    if any(r.status == VIOLATED for r in rep.results):
        return "violation"
    if rep.unknown or rep.uncovered or any(r.status != HOLDS for r in rep.results):
        return "inconclusive"
    return "verified"
