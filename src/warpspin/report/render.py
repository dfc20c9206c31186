"""Text rendering of a Result, shaped like a compiler diagnostic."""
from __future__ import annotations

from .result import (ERROR, INCONCLUSIVE, UNSUPPORTED, VERIFIED, VIOLATION, Result)

# rendered as notes or in the verdict's words, not as `key=value` on the verdict line
SHOWN_CONFIG = ("reductions_refused", "assumptions", "tensormaps", "buffers", "tmem_buffers", "load_races", "unchecked",
                "engine", "hb_refused", "not_shortened", "cutoff")


def checked_objects(config: dict) -> str:
    """The objects a VERIFIED names as race-free, as the headline says them."""
    out = ", no tensormap race" if config.get("tensormaps") else ""
    for key, what in (("buffers", "shared-memory buffer"), ("tmem_buffers", "TMEM buffer")):
        names = config.get(key)
        if names:
            out += f", no race on {what}{'s' * (len(names) > 1)} " + ", ".join(names)
    return out


def _short(path: str) -> str:
    import os
    try:
        rel = os.path.relpath(path)
        return rel if not rel.startswith("..") else path
    except ValueError:
        return path


def render_text(r: Result, max_steps: int = 200) -> str:
    out: list[str] = []
    s = r.stats
    cfg = ", ".join(f"{k}={'+'.join(v) if isinstance(v, list) else v}" for k, v in r.config.items()
                    if k not in SHOWN_CONFIG)
    refused = [f"  = note: reduction not applied: {why}" for why in r.config.get("reductions_refused", ())]
    refused += [f"  = note: assumed: {a}" for a in r.config.get("assumptions", ())]
    if r.verdict != INCONCLUSIVE:  # (an INCONCLUSIVE one says it in its reasons)
        refused += [f"  = note: not checked: {u}" for u in r.config.get("unchecked", ())]
    head = f"{r.target or r.kernel}: "
    if r.verdict == VERIFIED:
        races = checked_objects(r.config)
        cost = (f"{s.hb_runs} execution{'s' * (s.hb_runs != 1)} and its happens-before "
                f"relation" if s.engine == "happens-before" else f"{s.states:,} states")
        out.append(f"{head}VERIFIED: no deadlock{races} and no barrier-protocol error in any "
                   f"interleaving ({cost}, {s.seconds.get('total', 0):.2f} s"
                   f"{'; ' + cfg if cfg else ''})")
        out.append(searched_line(s))
        out += refused + _engine_notes(r)
        if r.config.get("load_races"):
            out.append("  = note: races on the stages this kernel's TMA loads fill (wgmma and "
                       "thread reads) are not checked (`--no-load-races`)")
        return "\n".join(out)
    if r.verdict in (INCONCLUSIVE, UNSUPPORTED, ERROR):
        label = {INCONCLUSIVE: "INCONCLUSIVE", UNSUPPORTED: "UNSUPPORTED", ERROR: "ERROR"}[r.verdict]
        out.append(f"{head}{label}")
        for i, why in enumerate(r.reasons):
            loc = r.reason_locations[i] if i < len(r.reason_locations) else None
            where = f"{_short(loc.file)}:{loc.line}: " if loc and loc.line else ""
            kind = {INCONCLUSIVE: "inconclusive", UNSUPPORTED: "unsupported", ERROR: "error"}[r.verdict]
            out.append(f"{where}{'error' if r.verdict != INCONCLUSIVE else 'warning'}[{kind}]: {why}")
        if s.states or s.hb_runs:
            out.append(searched_line(s))
        return "\n".join(out + refused + _engine_notes(r))
    if r.verdict != VIOLATION:
        return f"{head}ERROR\nerror[internal]: no verdict was reached (verdict {r.verdict!r})"
    out.append(f"{head}VIOLATION")
    for v in r.violations:
        loc = v.locations[0] if v.locations else None
        where = f"{_short(loc.file)}:{loc.line}: " if loc else ""
        out.append(f"{where}error[{v.kind}]: {v.message}")
        for extra in v.locations[1:]:
            frame = f" ({extra.frame})" if extra.frame else ""
            out.append(f"  --> {_short(extra.file)}:{extra.line}{frame}" +
                       (f" [{extra.role}]" if extra.role else ""))
        if v.blocked:
            out.append("  blocked forever:")
            for b in v.blocked:
                warps = f"warps {b.warps[0]}..{b.warps[1] - 1}" if b.warps[1] - b.warps[0] > 1 \
                    else f"warp {b.warps[0]}"
                line = f"    {b.process} (CTA {b.cta}, {warps}) at {b.op}"
                if b.barrier:
                    line += f" {b.barrier}"
                line += f"  {_short(b.file)}:{b.line}"
                out.append(line)
                facts = []
                if b.parity is not None:
                    facts.append(f"waits for parity {b.parity}")
                if b.phase is not None:
                    facts.append(f"barrier has completed {b.phase} phase{'s' if b.phase != 1 else ''} "
                                 f"(phase bit {b.phase & 1})")
                if b.pending_arrivals is not None:
                    exp = f" of {b.expected_arrivals}" if b.expected_arrivals else ""
                    facts.append(f"{b.pending_arrivals}{exp} arrivals pending")
                if b.pending_tx:
                    facts.append(f"{b.pending_tx} tx bytes pending")
                if facts:
                    out.append("      " + "; ".join(facts))
        for n in v.notes:
            where = f" at {_short(n.location.file)}:{n.location.line}" if n.location else ""
            out.append(f"  = note: {n.message}{where}")
        for h in v.help:
            out.append(f"  = help: {h}")
        if v.trace:
            out.append(f"  interleaving ({len(v.trace)} steps{'' if v.replayed else ', NOT replayed'}):")
            shown = v.trace if len(v.trace) <= max_steps else v.trace[-max_steps:]
            if len(shown) < len(v.trace):
                out.append(f"    ... {len(v.trace) - len(shown)} earlier steps omitted")
            width = max(len(t.process) for t in shown)
            for t in shown:
                src = f"{_short(t.file)}:{t.line}" if t.line else ""
                frame = f" ({t.frame})" if t.frame else ""
                out.append(f"    {t.step:>4}. {t.process:<{width}}  {t.op:<48} {src}{frame}")
    out.append(searched_line(s))
    if s.found_by:
        out.append(found_line(s))
    return "\n".join(out + _engine_notes(r))


def _engine_notes(r: Result) -> list[str]:
    out = []
    if r.config.get("cutoff"):
        out.append(f"  = note: every value of {r.config['cutoff']}")
    why = r.config.get("hb_refused")
    if why:
        out.append(f"  = note: outside the happens-before engine's class ({why}): SPIN searched "
                   "the interleavings")
    if r.config.get("not_shortened"):
        out.append(f"  = note: {r.config['not_shortened']}")
    return out


def searched_line(s) -> str:
    """What the check cost: the happens-before engine's executions, ops and edges; or SPIN's
    states, state-vector bytes, memory, seconds, cores and hunts."""
    if s.engine == "happens-before" and not s.states or (s.hb_runs and not s.states):
        return (f"  = decided by the happens-before engine: {s.hb_runs} execution"
                f"{'s' * (s.hb_runs != 1)}, {s.hb_ops:,} ops, {s.hb_edges:,} synchronization "
                f"edges ({s.seconds.get('check', 0):.2f} s)")
    size = f"{s.state_vector}-byte states, " if s.state_vector else ""
    mem = f"{s.memory_mb:,.0f} MB, " if s.memory_mb else ""
    cores = f" on {s.cores} cores" if s.cores > 1 else ""
    hunts = f", {s.hunts} bug-hunt run{'s' if s.hunts != 1 else ''} beside it" if s.hunts else ""
    return (f"  = searched {s.states:,} states ({size}{mem}{s.seconds.get('check', 0):.2f} s"
            f"{cores}{hunts})")


def found_line(s) -> str:
    if s.engine == "happens-before" and s.first_found_by != s.found_by:
        return (f"  = note: found by the {s.first_found_by} after {s.first_found_s:.2f} s "
                f"({s.found_depth} steps); shortened by SPIN's exhaustive BFS")
    if s.first_found_by and s.first_found_by != s.found_by:
        return (f"  = note: found by the {s.first_found_by} after {s.first_found_s:.2f} s at "
                f"depth {s.found_depth}; shortened by the {s.found_by}")
    return f"  = note: found by the {s.found_by} after {s.first_found_s:.2f} s"
