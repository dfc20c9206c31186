"""SASS reports as warpspin Results (text, JSON, SARIF and HTML come from report/), and the merge
of a SASS report into a model check's Result (`warpspin check --sass`)."""
from __future__ import annotations

import os

from ..report.result import (INCONCLUSIVE, VERIFIED, VIOLATION, Location, Note, Result, Stats,
                             Violation)
from .check import INCONCLUSIVE as OB_INCONCLUSIVE, VIOLATED, SassReport

HELP = {
    "tensormap.drain": ("a warp sync after the wait (`cute.arch.sync_warp()`, with the copy in its "
                        "own `elect_one` block) kept ptxas from moving the stores above it in "
                        "examples/kgrouped_tensormap.py and in DeepGEMM PR #343; a thread-scope "
                        "fence did not"),
}


def _loc(ops) -> tuple[Location, ...]:
    return tuple(dict.fromkeys(Location(o.loc.file, o.loc.line, frame=o.loc.frame or "")
                               for o in ops if o.loc.file))


def _ins_loc(ins, files: set) -> Location | None:
    """Where an instruction came from, when that is a file of the kernel's ops (the DSL puts
    some instructions on an outer frame: the script that ran it)."""
    if ins.file and (not files or os.path.realpath(ins.file) in files):
        return Location(ins.file, ins.line)
    return None


def violation(r) -> Violation:
    ob = r.obligation
    y, x = r.path[-1], r.path[0]
    fence = ob.fence.what if ob.fence is not None else ""
    if ob.form == "order":
        msg = (f"{ob.first.what} at {x.addr:#06x} ({x.text}) can run before {ob.then.what} at "
               f"{y.addr:#06x} ({y.text}): {ob.text}")
    else:
        msg = (f"{ob.then.what} at {y.addr:#06x} ({y.text}) can run after {ob.first.what} at "
               f"{x.addr:#06x} ({x.text}) without {fence} between: {ob.text}")
    sels = [sel for sel in (ob.first, ob.fence, ob.then) if sel is not None]
    files = {os.path.realpath(o.loc.file) for sel in sels for o in sel.ops if o.loc.file}
    locs = tuple(dict.fromkeys(l for l in (_ins_loc(y, files), *_loc(ob.fence.ops if ob.fence
                                                                       else ()),
                                           _ins_loc(x, files)) if l))
    notes = [Note(f"SASS {i.addr:#06x}: {i.text}" + (f" (PTX line {i.ptx}: {i.ptx_text})"
                                                   if i.ptx else ""), _ins_loc(i, files))
             for i in r.path]
    if r.fences:
        notes.append(Note(f"{fence or 'the fence'}: " + ", ".join(
            f"{i.addr:#06x} {i.text}" for i in r.fences) + " (not on this path)"))
    if r.others:
        notes.append(Note("also: " + ", ".join(f"{a:#06x}" for a in r.others)))
    notes.append(Note(f"the obligation ({ob.name}) protects against `{ob.rule}`; the path was "
                      "replayed on the control-flow graph"))
    return Violation("reordered", msg, locs, notes=tuple(notes),
                     help=(HELP[ob.name],) if ob.name in HELP else ())


def summary(rep: SassReport, assembler: str) -> dict:
    from . import tools
    return {"function": rep.function, "instructions": rep.instructions, "assembler": assembler,
            "nvdisasm": tools.version("nvdisasm") or "", "obligations": [
                {"name": r.obligation.name, "rule": r.obligation.rule, "text": r.obligation.text,
                 "status": r.status, "reason": r.reason, "instructions": list(r.counts),
                 "states": r.states} for r in rep.results],
            "unknown_sass": [f"{i.addr:#06x} {i.text}" for i in rep.unknown],
            "uncovered_ops": list(rep.uncovered)}


def reasons(rep: SassReport) -> list[str]:
    out = [f"SASS: unknown instruction {i.text} at {i.addr:#06x} (family {i.base}): it could be a "
           "memory or synchronization operation no obligation names" for i in rep.unknown]
    out += [f"SASS: no obligation checks the order of {u}, and no assumption covers it"
            for u in rep.uncovered]
    out += [f"SASS: obligation {r.obligation.name} ({r.obligation.text}) undecided: {r.reason}"
            for r in rep.results if r.status == OB_INCONCLUSIVE]
    return out


def to_result(rep: SassReport, target: str, kernel: str, assembler: str,
              seconds: dict) -> Result:
    res = Result(target=target, kernel=kernel,
                 stats=Stats(engine="sass", seconds=dict(seconds)))
    res.config["sass"] = summary(rep, assembler)
    res.violations = [violation(r) for r in rep.results if r.status == VIOLATED]
    res.reasons = reasons(rep)
    res.verdict = rep.verdict   # decided by check.decide alone
    return res


def merge(model: Result, rep: SassReport, assembler: str) -> None:
    """`check --sass`: a reorder is a violation whatever the model said; an undecided obligation
    keeps a VERIFIED from standing."""
    model.config["sass"] = summary(rep, assembler)
    found = [violation(r) for r in rep.results if r.status == VIOLATED]
    if found:
        model.violations = list(model.violations) + found
        model.verdict = VIOLATION
    elif rep.verdict != VERIFIED and model.verdict == VERIFIED:
        model.verdict = INCONCLUSIVE
        model.reasons = list(model.reasons) + reasons(rep)
