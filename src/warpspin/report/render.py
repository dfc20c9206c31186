"""Text rendering of a Result, shaped like a compiler diagnostic."""
from __future__ import annotations

from .result import (ERROR, INCONCLUSIVE, UNSUPPORTED, VERIFIED, VIOLATION, Result)

# rendered as notes or in the verdict's words, not as `key=value` on the verdict line
SHOWN_CONFIG = ("reductions_refused", "assumptions", "tensormaps", "buffers", "tmem_buffers", "load_races", "unchecked",
                "engine", "hb_refused", "not_shortened", "cutoff", "params_not_in_kernel",
                "unreached", "sass")


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


TRACE_LINES = 40  # the interleaving's lines shown without --full-trace


def render_text(r: Result, full_trace: bool = False, explain: bool = False) -> str:
    """rustc-shaped text. A VERIFIED is one line plus the assumptions it rests on (`explain`:
    also the reductions, refusals and engine notes). A violation: the primary location with its
    source line, the blocked warps with the culprit first, and the interleaving folded to
    TRACE_LINES lines (`full_trace`: every step)."""
    out: list[str] = []
    s = r.stats
    cfg = ", ".join(f"{k}={'+'.join(v) if isinstance(v, list) else v}" for k, v in r.config.items()
                    if k not in SHOWN_CONFIG and (explain or k not in ("reductions", "search")))
    assumed = [f"  = note: assumed: {a}" for a in r.config.get("assumptions", ())]
    assumed += [f"  = note: --param {n} left out: this kernel has no launch value of that name"
                for n in r.config.get("params_not_in_kernel", ())]
    assumed += [f"  = note: not modelled, and no execution reaches it: {u}"
                for u in r.config.get("unreached", ())]
    refused = [f"  = note: reduction not applied: {why}"
               for why in r.config.get("reductions_refused", ())] if explain else []
    if r.verdict != INCONCLUSIVE:  # (an INCONCLUSIVE one says it in its reasons)
        assumed += [f"  = note: not checked: {u}" for u in r.config.get("unchecked", ())]
    head = f"{r.target or r.kernel}: "
    if s.engine == "sass":
        return _sass_text(r, head)
    assumed += _sass_note(r)
    if r.verdict == VERIFIED:
        races = checked_objects(r.config)
        engine = "happens-before" if s.engine == "happens-before" else "SPIN"
        cost = (f"{s.hb_runs} execution{'s' * (s.hb_runs != 1)}" if engine == "happens-before"
                else f"{s.states:,} states")
        out.append(f"{head}VERIFIED: no deadlock{races} and no barrier-protocol error in any "
                   f"interleaving ({engine}, {cost}, {s.seconds.get('total', 0):.2f} s"
                   f"{'; ' + cfg if cfg else ''}{'' if explain else '; details: --explain-verdict'})")
        if explain:
            out.append(searched_line(s))
        out += assumed + refused + _engine_notes(r, explain)
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
            tag = {INCONCLUSIVE: "warning[inconclusive]", UNSUPPORTED: "error[unsupported]",
                   ERROR: "error"}[r.verdict]
            out.append(f"{where}{tag}: {why}")
        if s.states or s.hb_runs:
            out.append(searched_line(s))
        return "\n".join(out + assumed + refused + _engine_notes(r))
    if r.verdict != VIOLATION:
        return f"{head}ERROR\nerror: internal: no verdict was reached (verdict {r.verdict!r})"
    out.append(f"{head}VIOLATION")
    for v in r.violations:
        out += violation_lines(v)
        if v.trace:
            out += _trace_lines(v, full_trace)
    out.append(searched_line(s))
    if s.found_by:
        out.append(found_line(s))
    return "\n".join(out + _engine_notes(r))


def _sass_note(r: Result) -> list[str]:
    """What a SASS check (`warpspin sass`, `check --sass`) held, from its config."""
    s = r.config.get("sass")
    if not s:
        return []
    held = sum(o["status"] == "holds" for o in s["obligations"])
    return [f"  = note: SASS ({s['assembler']}, {s['function'][:60]}, {s['instructions']} "
            f"instructions): {held} of {len(s['obligations'])} ordering obligations hold on every "
            "path"]


def _sass_text(r: Result, head: str) -> str:
    """`warpspin sass`: whether the SASS keeps every ordering obligation."""
    total = r.stats.seconds.get("total") or r.stats.seconds.get("check", 0.0)
    if r.verdict == VERIFIED:
        n = len(r.config["sass"]["obligations"])
        out = [f"{head}ORDER KEPT: the SASS keeps all {n} ordering obligation{'s' * (n != 1)} "
               f"on every path ({total:.2f} s)"]
    elif r.verdict == VIOLATION:
        out = [f"{head}VIOLATION"]
        for v in r.violations:
            out += violation_lines(v)
    else:
        tag = "warning[inconclusive]" if r.verdict == INCONCLUSIVE else "error"
        out = [f"{head}{r.verdict.upper()}"] + [f"{tag}: {why}" for why in r.reasons]
    for o in r.config.get("sass", {}).get("obligations", ()):
        out.append(f"  = note: {o['status']}: {o['name']}: {o['text']}")
    return "\n".join(out + _sass_note(r))


def violation_lines(v, unordered: bool = True) -> list[str]:
    """A violation's diagnostic without its interleaving: the message, the locations with their
    source lines, the blocked warps, the notes (`unordered`: with the happens-before engine's
    why-unordered lines) and the help."""
    out = [f"error[{v.kind}]: {v.message}"]
    shown = set()
    for i, loc in enumerate(v.locations):
        if (loc.file, loc.line) in shown:
            continue
        shown.add((loc.file, loc.line))
        frame = f" ({loc.frame})" if loc.frame else ""
        out.append(f"  {'-->' if i == 0 else ':::'} {_short(loc.file)}:{loc.line}{frame}")
        out += _snippet(loc.file, loc.line, loc.role)
    out += _blocked_lines(v)
    for n in v.notes:
        if n.location and (n.location.file, n.location.line) in shown and \
                n.message.endswith(" waits here"):
            continue  # the snippet above labels it
        where = f" at {_short(n.location.file)}:{n.location.line}" if n.location else ""
        out.append(f"  = note: {n.message}{where}")
    for n in (v.unordered if unordered else ()):
        where = f" at {_short(n.location.file)}:{n.location.line}" if n.location else ""
        out.append(f"  = note: {n.message}{where}")
    out += [f"  = help: {h}" for h in v.help]
    return out


def headline(r: Result) -> str:
    """One line: the target, the verdict and what decided it (`kernels/gemm.py:a: VIOLATION:
    error[deadlock] at gemm.py:94: producer waits forever ...`)."""
    head = f"{r.target or r.kernel}: {r.verdict.upper()}"
    if r.verdict == VIOLATION and r.violations:
        v = r.violations[0]
        loc = v.locations[0] if v.locations else None
        where = f" at {_short(loc.file)}:{loc.line}" if loc else ""
        return f"{head}: error[{v.kind}]{where}: {v.message}"
    if r.reasons:
        loc = r.reason_locations[0] if r.reason_locations else None
        where = f" at {_short(loc.file)}:{loc.line}" if loc and loc.line else ""
        return f"{head}{where}: {r.reasons[0]}"
    return head


def _snippet(file: str, line: int, label: str = "") -> list[str]:
    """rustc's source excerpt: the line, and carets under its code."""
    import linecache
    text = linecache.getline(file, line).rstrip("\n").expandtabs(4)
    if not text.strip():
        return []
    code = text.lstrip()
    pad = " " * len(str(line))
    caret = " " * (len(text) - len(code)) + "^" * len(code.rstrip())
    return [f"  {pad} |", f"  {line} | {text}",
            f"  {pad} | {caret}" + (f" {label}" if label else "")]


def blocked_facts(b) -> list[str]:
    """What a blocked wait waits for and where its barrier stands."""
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
    return facts


def _blocked_lines(v) -> list[str]:
    """The blocked warps, those the violation names first, the others grouped where they wait
    on the same barrier, at the same line, in the same state."""
    if not v.blocked:
        return []
    named = {loc.role for loc in v.locations if loc.role}
    order = sorted(v.blocked, key=lambda b: b.process not in named)
    groups: dict = {}
    for b in order:
        key = (b.op, b.barrier, b.file, b.line, b.cta, b.parity, b.phase, b.pending_arrivals,
               b.expected_arrivals, b.pending_tx, b.process in named)
        groups.setdefault(key, []).append(b)
    out = ["  blocked forever:"]
    for bs in groups.values():
        b = bs[0]
        lo, hi = min(x.warps[0] for x in bs), max(x.warps[1] for x in bs) - 1
        warps = f"warps {lo}..{hi}" if hi > lo else f"warp {lo}"
        who = b.process if len(bs) == 1 else f"{b.process} and {len(bs) - 1} more"
        line = f"    {who} (CTA {b.cta}, {warps}) at {b.op}"
        if b.barrier:
            line += f" {b.barrier}"
        out.append(line + f"  {_short(b.file)}:{b.line}")
        facts = blocked_facts(b)
        if facts:
            out.append("      " + "; ".join(facts))
    return out


def involved_roles(v) -> set[str] | None:
    """A deadlock on mbarrier waits: the roles that matter, those blocked or named by the
    violation, and, transitively, those whose steps changed a barrier an involved role waits on
    (or waited on in the trail). None: every role (a race's synchronization chain can run
    through any; a wait on a flag or a named barrier is released by ops these changes do not
    show)."""
    if not v.blocked or any(b.op != "mbarrier wait" for b in v.blocked):
        return None  # (only mbarrier waits say, by the barrier changes, who could release them)
    roles = {_role_name(b.process) for b in v.blocked}
    roles |= {_role_name(loc.role) for loc in v.locations if loc.role}
    waited = {b.barrier for b in v.blocked}
    while True:
        waited |= {t.waits for t in v.trace if t.waits and _role_name(t.process) in roles}
        more = {_role_name(t.process) for t in v.trace
                if any(x.barrier in waited for x in t.barriers)} - roles
        if not more:
            return roles | {"async"}
        roles |= more


def _role_name(process: str) -> str:
    """"warps1_7" of "warps1_7[3]@cta1"."""
    name = process.split("@")[0]
    return name.rsplit("[", 1)[0] if name.endswith("]") else name


def _trace_lines(v, full: bool) -> list[str]:
    """The interleaving. Without `full`: a deadlock's steps of roles it does not involve are
    folded into a count; the consecutive turns of instances of one role that run the same ops
    at the same lines are one group (`144-171. warps1_7[0..6]`, each in turn); and the last
    TRACE_LINES lines are shown, the earlier ones folded into a count."""
    rows = []  # (step number text, who, op, where)
    keep = None if full else involved_roles(v)
    steps = [t for t in v.trace if keep is None or _role_name(t.process) in keep]
    hidden = sorted({_role_name(t.process) for t in v.trace} - (keep or set()))
    for group in ([[[t]] for t in steps] if full else _turn_groups(steps)):
        first, last = group[0][0].step, group[-1][-1].step
        roles = [_role_index(turn[0].process) for turn in group]
        who = group[0][0].process if len(group) == 1 else \
            _group_name(roles[0][0], [i for _, i in roles])
        for n, t in enumerate(group[0]):
            if len(group) == 1:
                num = f"{t.step}."
            else:
                num = f"{first}-{last}." if n == 0 else ""
            rows.append((num, who if n == 0 or len(group) == 1 else "", t.op, _where(t)))
    if not full:
        rows = _merge_runs(rows)
    shown = rows if full or len(rows) <= TRACE_LINES else rows[-TRACE_LINES:]
    while shown and not shown[0][0]:  # never start inside a group
        shown = rows[-len(shown) - 1:]
    if not shown:
        return [f"  interleaving ({len(v.trace)} steps)"]
    note = "" if v.replayed else ", NOT replayed"
    if hidden and len(steps) < len(v.trace):
        note += (f"; {len(v.trace) - len(steps)} steps of {', '.join(hidden)} (not involved) "
                 "left out")
    out = [f"  interleaving ({len(v.trace)} steps{note}):"]
    if len(shown) < len(rows):
        folded = int(shown[0][0].split("-")[0].rstrip(".")) - 1
        out.append(f"    ... steps 1-{folded} folded (--full-trace shows them)")
    width = max(len(r[1]) for r in shown)
    numw = max(len(r[0]) for r in shown)
    for num, who, op, where in shown:
        out.append(f"    {num:>{numw}} {who:<{width}}  {op:<48} {where}")
    return out


def _merge_runs(rows: list) -> list:
    """Consecutive single steps of one process at one line whose ops differ only in numbers
    (`st.shared buf[58], 0` ... `buf[63], 0`) become one row: `104-109. warp0  st.shared
    buf[58..63], 0`."""
    import re
    out: list = []
    run: list = []

    def flush():
        if len(run) < 3:
            out.extend(run)
        else:
            parts = [re.split(r"(\d+)", r[2]) for r in run]
            op = "".join(p if i % 2 == 0 else _span([int(q[i]) for q in parts])
                         for i, p in enumerate(parts[0]))
            first, last = run[0][0].rstrip("."), run[-1][0].rstrip(".")
            out.append((f"{first}-{last}.", run[0][1], op, run[0][3]))
        run.clear()

    for row in rows:
        num, who, op, where = row
        single = num.endswith(".") and "-" not in num and who
        if run and single and who == run[-1][1] and where == run[-1][3] and \
                int(num[:-1]) == int(run[-1][0][:-1]) + 1 and \
                re.split(r"\d+", op) == re.split(r"\d+", run[-1][2]):
            run.append(row)
            continue
        flush()
        if single:
            run.append(row)
        else:
            out.append(row)
    flush()
    return out


def _span(values: list[int]) -> str:
    if len(set(values)) == 1:
        return str(values[0])
    if values == list(range(values[0], values[0] + len(values))):
        return f"{values[0]}..{values[-1]}"
    return ",".join(map(str, values[:3])) + (",…" if len(values) > 3 else "")


def _where(t) -> str:
    src = f"{_short(t.file)}:{t.line}" if t.line else ""
    return src + (f" ({t.frame})" if t.frame else "")


def _turn_groups(trace) -> list[list[list]]:
    """Turns (consecutive steps of one process), and consecutive turns of distinct instances of
    one role with the same ops at the same lines merged into one group."""
    turns: list[list] = []
    for t in trace:
        if turns and turns[-1][0].process == t.process and t.process != "async":
            turns[-1].append(t)
        else:
            turns.append([t])
    groups: list[list[list]] = []
    sig = lambda turn: [(t.op, t.file, t.line) for t in turn]  # noqa: E731
    for turn in turns:
        role, idx = _role_index(turn[0].process)
        if groups and role is not None:
            g = groups[-1]
            prev = [_role_index(x[0].process) for x in g]
            if prev[0][0] == role and idx not in {i for _, i in prev} and sig(g[0]) == sig(turn):
                g.append(turn)
                continue
        groups.append([turn])
    return groups


def _role_index(process: str):
    """("warps1_7", 3) for "warps1_7[3]"; (None, None) for a process not of a role's instances."""
    if process.endswith("]") and "[" in process:
        role, _, rest = process.rpartition("[")
        idx = rest[:-1]
        if idx.isdigit():
            return role, int(idx)
    if "]@" in process:
        name, _, cta = process.partition("@")
        role, idx = _role_index(name)
        return (f"{role}@{cta}", idx) if role is not None else (None, None)
    return None, None


def _group_name(role: str, idxs: list) -> str:
    lo, hi = min(idxs), max(idxs)
    base, _, cta = role.partition("@")
    span = f"{lo}..{hi}" if sorted(idxs) == list(range(lo, hi + 1)) else ",".join(map(str, idxs))
    return f"{base}[{span}]" + (f"@{cta}" if cta else "")


def _engine_notes(r: Result, details: bool = True) -> list[str]:
    """The cutoff's argument (part of what a verdict claims); with `details`, why SPIN decided
    and why a trail was not shortened."""
    out = []
    if r.config.get("cutoff"):
        out.append(f"  = note: every value of {r.config['cutoff']}")
    if not details:
        return out
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
