"""One self-contained HTML page per run (no network): a violation's interleaving as swimlanes, one
lane per warp or warp group, time flowing down, the barriers each step changed beside it and
the blocked warps at the end; a verified kernel's roles and barriers as a diagram of who arrives
on what and who waits on it. Everything is rendered here from a Result; the page's script only
shows details (the source around a step, the barrier state at that step) on a click."""
from __future__ import annotations

import html
import json
import linecache
import os

from .render import (SHOWN_CONFIG, _role_name, _short, blocked_facts, checked_objects,
                     found_line, involved_roles, searched_line, violation_lines)
from .result import VERIFIED, VIOLATION, Result

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:12px 20px}header h1{font-size:18px;margin:0}
main{padding:12px 20px}section.result{background:#fff;border:1px solid #d8dce3;border-radius:6px;
margin:0 0 20px;padding:12px 16px}
.verdict{display:inline-block;padding:2px 8px;border-radius:4px;color:#fff;font-weight:600;
margin-right:8px}.v-verified{background:#1f7a3a}.v-violation{background:#b3261e}
.v-inconclusive,.v-unsupported{background:#a86500}.v-error{background:#5a5a5a}
code,.mono,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.diag{white-space:pre-wrap;background:#fbf3f2;border-left:4px solid #b3261e;padding:6px 10px;
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;overflow-x:auto}
.facts{color:#4a5160;font-size:12px}dl.kv{display:grid;grid-template-columns:max-content auto;
gap:2px 12px;font-size:12px;margin:6px 0}dl.kv dt{color:#4a5160}dl.kv dd{margin:0}
.lanes{display:grid;gap:0;border:1px solid #d8dce3;font-size:12px;overflow:auto;max-height:80vh}
.lanes:not(.all) .lane-other{display:none}
.lanes>div{border-bottom:1px solid #eef0f3;padding:2px 4px;min-height:20px}
.lane-head{position:sticky;top:0;background:#eef1f6;font-weight:600;z-index:1}
.lane-head .sub{display:block;font-weight:400;color:#4a5160}
.stepno{color:#8a90a0;text-align:right}
.step{background:#e8f0fe;border:1px solid #b8cbef;border-radius:3px;cursor:pointer;
white-space:normal;overflow-wrap:anywhere}
.step.async{background:#f1ecfb;border-color:#cbbcea}
.step.culprit{background:#fde2df;border-color:#b3261e;font-weight:600}
.step.sel{outline:2px solid #1d2330}.step .src{color:#4a5160}
.bars{color:#4a5160;white-space:normal;overflow-wrap:anywhere}
.blocked{background:#fde2df;border:1px dashed #b3261e;border-radius:3px;white-space:normal}
.missing{color:#b3261e;font-weight:600;white-space:normal}
#detail{position:fixed;right:12px;bottom:12px;width:440px;max-height:60vh;overflow:auto;
background:#fff;border:1px solid #1d2330;border-radius:6px;padding:8px 12px;display:none;
box-shadow:0 4px 16px rgba(0,0,0,.2);font-size:12px}#detail pre{background:#f6f7f9;padding:6px}
#detail .hl{background:#fff3b0}table.bs{border-collapse:collapse}
table.bs td,table.bs th{border:1px solid #d8dce3;padding:1px 6px;text-align:left}
svg.graph text{font:12px system-ui,sans-serif}
.hb{background:#f1f5fe;border-left:4px solid #1a56c4;padding:4px 10px;margin:8px 0;font-size:12px}
.hb h3{margin:4px 0;font-size:14px}.hb .src{color:#4a5160}
"""

_JS = """
const DATA = JSON.parse(document.getElementById('warpspin-data').textContent);
function esc(s){return String(s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));}
function barrierStateAt(r, upto){
  const st = {};
  for (const t of DATA.results[r].trace) {
    if (t.step > upto) break;
    for (const b of t.barriers) st[b.barrier] = b;
  }
  return st;
}
function show(r, n){
  document.querySelectorAll('.step.sel').forEach(e=>e.classList.remove('sel'));
  const el = document.getElementById('s'+r+'_'+n); if (el) el.classList.add('sel');
  const t = DATA.results[r].trace.find(x=>x.step===n);
  const src = (DATA.sources[t.file]||{});
  let lines = '';
  for (let l=t.line-2; l<=t.line+2; l++) if (src[l]!==undefined)
    lines += (l===t.line?'<span class="hl">':'') + esc(String(l).padStart(5)+'  '+src[l]) + (l===t.line?'</span>':'') + '\\n';
  const st = barrierStateAt(r, n);
  let rows = '';
  for (const [name,b] of Object.entries(st))
    rows += '<tr><td>'+esc(name)+'</td><td>'+b.phase+'</td><td>'+b.pending_arrivals+' of '+b.expected_arrivals+'</td><td>'+b.pending_tx+'</td></tr>';
  const d = document.getElementById('detail');
  d.innerHTML = '<b>step '+n+'</b> · '+esc(t.process)+'<br><code>'+esc(t.op)+'</code><br>'+
    esc(t.shown)+':'+t.line+(t.frame?' ('+esc(t.frame)+')':'')+
    (lines?'<pre>'+lines+'</pre>':'')+
    '<b>barriers after this step</b>'+(rows?'<table class="bs"><tr><th>barrier</th><th>phases done</th><th>arrivals pending</th><th>tx bytes pending</th></tr>'+rows+'</table>':' (none initialized yet)')+
    '<div style="text-align:right"><a href="#" onclick="document.getElementById(\\'detail\\').style.display=\\'none\\';return false">close</a></div>';
  d.style.display = 'block';
}
document.addEventListener('click', e=>{
  const s = e.target.closest('.step'); if (s) show(+s.dataset.r, +s.dataset.n);
});
// a deadlock's end row (the blocked warps) is what matters first: show the end of the lanes
// a lanes box that starts on the first screen ends on it, so that its end row is seen at once
document.querySelectorAll('.lanes').forEach(g=>{
  const top = g.getBoundingClientRect().top;
  if (top < innerHeight) g.style.maxHeight = Math.max(320, innerHeight - top - 12) + 'px';
  if (g.querySelector('.blocked')) g.scrollTop = g.scrollHeight;
});
document.addEventListener('change', e=>{
  if (!e.target.classList.contains('show-all')) return;
  const g = document.getElementById('lanes'+e.target.dataset.r);
  g.classList.toggle('all', e.target.checked);
  g.style.gridTemplateColumns = e.target.checked ? g.dataset.full : g.dataset.compact;
});
"""

_E = html.escape


def write_html(results: list[Result], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_html(results))


def render_html(results: list[Result]) -> str:
    sources: dict[str, dict[int, str]] = {}
    body = [_section(i, r, sources) for i, r in enumerate(results)]
    data = {"results": [{"target": r.target, "verdict": r.verdict,
                         "trace": [_step_data(t) for t in _trace(r)]} for r in results],
            "sources": sources}
    payload = json.dumps(data).replace("</", "<\\/")
    title = ", ".join(r.target or r.kernel for r in results) or "no kernels"
    verdicts = ", ".join(f"{r.verdict.upper()}" for r in results)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>warpspin: {_E(title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>warpspin: {_E(verdicts)}</h1></header><main>{''.join(body)}</main>"
            f"<div id=\"detail\"></div>"
            f"<script type=\"application/json\" id=\"warpspin-data\">{payload}</script>"
            f"<script>{_JS}</script></body></html>\n")


def _trace(r: Result):
    return r.violations[0].trace if r.verdict == VIOLATION and r.violations else ()


def _step_data(t) -> dict:
    return {"step": t.step, "process": t.process, "op": t.op, "file": t.file, "line": t.line,
            "shown": _short(t.file),
            "frame": t.frame, "barriers": [b.__dict__ for b in t.barriers]}


def _remember(sources, file: str, line: int) -> str:
    """The source line (and two on each side, for the detail panel), read now."""
    if not file or not line:
        return ""
    lines = sources.setdefault(file, {})
    for n in range(max(1, line - 2), line + 3):
        if n not in lines:
            text = linecache.getline(file, n)
            if text:
                lines[n] = text.rstrip("\n")
    return lines.get(line, "").strip()


def _section(i: int, r: Result, sources) -> str:
    out = [f"<section class=\"result\" id=\"r{i}\"><h2><span class=\"verdict v-{_E(r.verdict)}\">"
           f"{_E(r.verdict.upper())}</span>{_E(r.target or r.kernel)}</h2>"]
    if r.verdict == VIOLATION:
        out += [_violation(i, r, v, sources) for v in r.violations]
    elif r.verdict != VERIFIED:
        for n, why in enumerate(r.reasons):
            loc = r.reason_locations[n] if n < len(r.reason_locations) else None
            where = f"{_short(loc.file)}:{loc.line}: " if loc and loc.line else ""
            src = _remember(sources, loc.file, loc.line) if loc else ""
            out.append(f"<div class=\"diag\">{_E(where + why)}"
                       f"{'<br><code>' + _E(src) + '</code>' if src else ''}</div>")
    else:
        out.append(f"<p>No deadlock and no barrier-protocol error in any interleaving"
                   f"{_E(checked_objects(r.config))}.</p>")
    out.append(_facts(r))
    if r.model.get("lanes") and r.verdict != VIOLATION:
        out.append(_roles_and_barriers(r))
    out.append("</section>")
    return "".join(out)


def _facts(r: Result) -> str:
    s = r.stats
    rows = [("configuration", ", ".join(f"{k}={'+'.join(map(str, v)) if isinstance(v, list) else v}"
                                        for k, v in r.config.items() if k not in SHOWN_CONFIG)
             or "(none)"),
            ("search", searched_line(s).strip(" =")),
            ("processes", str(s.processes)),
            ("seconds", ", ".join(f"{k} {v:.2f}" for k, v in s.seconds.items()))]
    if s.found_by:
        rows.append(("found by", found_line(s).strip(" =").removeprefix("note: ")))
    for why in r.config.get("reductions_refused", ()):
        rows.append(("reduction not applied", why))
    if r.config.get("cutoff"):
        rows.append(("every value of", r.config["cutoff"]))
    for a in r.config.get("assumptions", ()):
        rows.append(("assumed", a))
    for u in r.config.get("unchecked", ()):
        rows.append(("not checked", u))
    for u in r.config.get("unreached", ()):
        rows.append(("not modelled, unreached", u))
    if r.config.get("load_races"):
        rows.append(("not checked", "races on the stages this kernel's TMA loads fill (wgmma and "
                     "thread reads): --no-load-races"))
    for n in r.config.get("params_not_in_kernel", ()):
        rows.append(("left out", f"--param {n}: this kernel has no launch value of that name"))
    sass = r.config.get("sass")
    if sass:
        rows.append(("SASS", f"{sass['assembler']}, {sass['instructions']} instructions"))
        rows += [(f"obligation {o['status']}", f"{o['name']}: {o['text']}"
                  + (f" ({o['reason']})" if o["reason"] else ""))
                 for o in sass["obligations"]]
        rows += [("order not checked", u) for u in sass.get("uncovered_ops", ())]
    return "<dl class=\"kv\">" + "".join(f"<dt>{_E(k)}</dt><dd>{_E(v)}</dd>" for k, v in rows) + "</dl>"


def _violation(i: int, r: Result, v, sources) -> str:
    text = violation_lines(v, unordered=False)
    out = [f"<div class=\"diag\">{_E(chr(10).join(text))}</div>"]
    if v.unordered:  # the happens-before view: the two ops and the second one's synchronization
        items = "".join(_unordered_item(n, sources) for n in v.unordered)
        out.append(f"<div class=\"hb\"><h3>Happens-before</h3><ol>{items}</ol></div>")
    if not v.replayed:
        out.append("<p><b>This interleaving was NOT replayed.</b></p>")
    out.append(_lanes(i, r, v, sources))
    return "".join(out)


def _unordered_item(n, sources) -> str:
    if n.location is None:
        return f"<li>{_E(n.message)}</li>"
    src = _remember(sources, n.location.file, n.location.line)
    return (f"<li>{_E(n.message)} <span class=\"src\">{_E(_short(n.location.file))}:"
            f"{n.location.line}</span>{'<br><code>' + _E(src) + '</code>' if src else ''}</li>")


def _role_of(r: Result, name: str) -> tuple[str, int]:
    """The lane (a role of one CTA) an instance's steps go to: instances of one role share it."""
    for l in r.model.get("lanes", ()):
        if l["name"] == name:
            return (l["role"], l["cta"])
    return (name, -1)


def _lane_columns(r: Result, v) -> list[dict]:
    """One lane per role and CTA that acts in the trace or blocks at its end (its instances
    share it), in the model's order; async completions and other CTAs get lanes of their own.
    `involved`: render.involved_roles; the others are shown on request."""
    acting = {_role_of(r, t.process) for t in v.trace} | \
        {_role_of(r, _blocked_lane(b)) for b in v.blocked}
    lanes, seen = [], set()
    for l in r.model.get("lanes", ()):
        key = (l["role"], l["cta"])
        if key in acting and key not in seen:
            seen.add(key)
            ws = [x["warps"] for x in r.model["lanes"] if (x["role"], x["cta"]) == key]
            lanes.append({"key": key, "name": l["role"], "cta": l["cta"],
                          "warps": (min(w[0] for w in ws), max(w[1] for w in ws)),
                          "instances": len(ws)})
    for t in v.trace:
        key = _role_of(r, t.process)
        if key not in seen:
            seen.add(key)
            lanes.append({"key": key, "name": t.process, "cta": t.cta, "warps": None,
                          "instances": 1})
    roles = involved_roles(v)
    involved = None if roles is None else {l["key"] for l in lanes if _role_name(l["name"]) in roles}
    for l in lanes:  # (a race: every lane, its synchronization chain runs through them)
        l["involved"] = involved is None or l["key"] in involved
    return lanes


def _blocked_lane(b) -> str:
    return b.process if "@" in b.process or not b.cta else f"{b.process}@cta{b.cta}"


def _culprit_steps(r: Result, v) -> set[int]:
    """The steps to highlight: the step that violates (not a deadlock's: its blocked waits are
    the end row), and each other process's last step at a line the violation names."""
    out = set()
    if v.trace and not v.blocked:
        out.add(v.trace[-1].step)
    for loc in v.locations[1:]:
        last = [t.step for t in v.trace if (t.file, t.line) == (loc.file, loc.line)
                and loc.role and t.process.split("@")[0] == loc.role.split("@")[0]]
        out |= set(last[-1:])
    return out


def _lanes(i: int, r: Result, v, sources) -> str:
    lanes = _lane_columns(r, v)
    if not lanes:
        return ""
    col = {l["key"]: n + 2 for n, l in enumerate(lanes)}
    other = {l["key"] for l in lanes if not l["involved"]}
    last = len(lanes) + 2
    culprit = _culprit_steps(r, v)
    cells = ["<div class=\"lane-head\" style=\"grid-column:1\">step</div>"]
    for l in lanes:
        sub = []
        if l.get("warps"):
            lo, hi = l["warps"]
            sub.append(f"CTA {l['cta']}, " + (f"warp {lo}" if hi - lo == 1 else f"warps {lo}..{hi - 1}"))
        elif l["name"] == "async":
            sub.append("copy completions")
        hide = " lane-other" if l["key"] in other else ""
        cells.append(f"<div class=\"lane-head{hide}\" data-lane=\"{_E(l['name'])}\" "
                     f"style=\"grid-column:{col[l['key']]}\">{_E(l['name'])}<span class=\"sub\">"
                     f"{_E('; '.join(sub))}</span></div>")
    cells.append(f"<div class=\"lane-head\" style=\"grid-column:{last}\">barriers changed</div>")
    for row, t in enumerate(v.trace, start=2):
        key = _role_of(r, t.process)
        lane = next(l for l in lanes if l["key"] == key)
        hide = " lane-other" if key in other else ""
        src = _remember(sources, t.file, t.line)
        hover = f"{t.process}: {t.op}\n{t.file}:{t.line}" + (f" ({t.frame})" if t.frame else "") + \
            (f"\n{src}" if src else "")
        if t.issued_at:
            hover += f"\nthe copy issued at step {t.issued_at}"
        cls = "step" + (" async" if t.process == "async" else "") + \
            (" culprit" if t.step in culprit else "") + hide
        who = t.process.split("@")[0]
        who = who[len(lane["name"]):] if lane["instances"] > 1 and who.startswith(lane["name"]) \
            else ""
        where = f"{os.path.basename(t.file)}:{t.line}" if t.line else ""
        cells.append(f"<div class=\"stepno{hide}\" style=\"grid-row:{row};grid-column:1\">"
                     f"{t.step}</div>")
        cells.append(f"<div class=\"{cls}\" id=\"s{i}_{t.step}\" data-r=\"{i}\" data-n=\"{t.step}\" "
                     f"data-process=\"{_E(t.process)}\" title=\"{_E(hover)}\" "
                     f"style=\"grid-row:{row};grid-column:{col[key]}\">"
                     f"{'<b>' + _E(who) + '</b> ' if who else ''}{_E(t.op)} "
                     f"<span class=\"src\">{_E(where)}</span></div>")
        bars = "; ".join(f"{b.barrier}: {b.phase} done, {b.pending_arrivals}/{b.expected_arrivals}"
                         f" pending" + (f", {b.pending_tx} B" if b.pending_tx else "")
                         for b in t.barriers)
        cells.append(f"<div class=\"bars{hide}\" style=\"grid-row:{row};grid-column:{last}\">"
                     f"{_E(bars)}</div>")
    row = len(v.trace) + 2
    if v.blocked:
        cells.append(f"<div class=\"stepno\" style=\"grid-row:{row};grid-column:1\">end</div>")
    by_lane: dict = {}
    for b in v.blocked:
        by_lane.setdefault(_role_of(r, _blocked_lane(b)), []).append(b)
    for key, bs in by_lane.items():
        if key not in col:
            continue
        same: dict = {}  # instances blocked in one state: one entry
        for b in bs:
            same.setdefault((b.op, b.barrier, b.parity, b.phase, b.pending_arrivals,
                             b.expected_arrivals, b.pending_tx), []).append(b)
        parts = []
        for group in same.values():
            b = group[0]
            facts = blocked_facts(b)
            who = ", ".join(x.process for x in group)
            parts.append(f"<div data-blocked=\"{_E(' '.join(x.process for x in group))}\" "
                         f"title=\"{_E(b.file)}:{b.line}\"><b>{_E(who)}</b> blocked forever at "
                         f"{_E(b.op)} {_E(b.barrier)}<br><span class=\"facts\">"
                         f"{_E('; '.join(facts))}</span></div>")
        cells.append(f"<div class=\"blocked\" style=\"grid-row:{row};grid-column:{col[key]}\">"
                     f"{''.join(parts)}</div>")
    missing = {}  # the end row's barrier column: what each blocked warp's barrier still lacks
    for b in v.blocked:
        lack = []
        if b.pending_arrivals:
            lack.append(f"{b.pending_arrivals} of {b.expected_arrivals} arrivals missing")
        if b.pending_tx:
            lack.append(f"{b.pending_tx} tx bytes missing")
        if lack and b.barrier:
            missing[b.barrier] = f"{b.barrier}: {', '.join(lack)}"
    if missing:
        cells.append(f"<div class=\"missing\" style=\"grid-row:{row};grid-column:{last}\">"
                     f"{'<br>'.join(_E(x) for x in missing.values())}</div>")
    widths = ["3em"] + [("minmax(180px, 1fr)" if l["involved"] else "0") for l in lanes]
    full = ["3em"] + ["minmax(180px, 1fr)" for _ in lanes]
    tail = "minmax(220px, 1.2fr)"
    toggle = ""
    if other:
        toggle = (f"<label class=\"facts\"><input type=\"checkbox\" class=\"show-all\" "
                  f"data-r=\"{i}\"> show the {len(other)} other lane{'s' * (len(other) > 1)} "
                  f"(roles not involved in the violation)</label>")
    return (f"<h3>Interleaving ({len(v.trace)} steps; click a step for its source and the "
            f"barriers' state)</h3>{toggle}<div class=\"lanes\" id=\"lanes{i}\" "
            f"data-compact=\"{' '.join(widths + [tail])}\" data-full=\"{' '.join(full + [tail])}\" "
            f"style=\"grid-template-columns:{' '.join(widths + [tail])}\">"
            f"{''.join(cells)}</div>")


def _roles_and_barriers(r: Result) -> str:
    m = r.model
    roles: dict[tuple[str, int], list[dict]] = {}
    for l in m["lanes"]:
        roles.setdefault((l["role"], l["cta"]), []).append(l)
    rows = []
    for (role, cta), ls in roles.items():
        lo, hi = min(l["warps"][0] for l in ls), max(l["warps"][1] for l in ls)
        rows.append(f"<tr><td>{_E(role)}</td><td>{cta}</td><td>{lo}..{hi - 1}</td>"
                    f"<td>{len(ls)}</td><td>{ls[0]['threads']}</td></tr>")
    out = ["<h3>Roles</h3><table class=\"bs roles\"><tr><th>role</th><th>CTA</th><th>warps</th>"
           "<th>instances</th><th>threads each</th></tr>" + "".join(rows) + "</table>"]
    if m.get("barriers"):
        out.append("<h3>Barriers</h3><table class=\"bs barriers\"><tr><th>barrier</th>"
                   "<th>elements</th><th>declared</th></tr>" + "".join(
                       f"<tr><td>{_E(b['name'])}</td><td>{b['size']}"
                       f"{' (' + _E(', '.join(b['groups'])) + ')' if b.get('groups') else ''}</td>"
                       f"<td>{_E(_short(b['file']))}:{b['line']}</td></tr>" for b in m["barriers"])
                   + "</table>")
    out.append(_graph(m))
    return "".join(out)


def _graph(m: dict) -> str:
    """Who arrives on what (role -> barrier, green) and who waits on it (barrier -> role, blue):
    roles on the left, barriers on the right."""
    edges = [e for e in m.get("edges", ()) if e["relation"] in ("arrives", "waits")]
    if not edges:
        return ""
    roles = list(dict.fromkeys((e["role"], e["cta"]) for e in edges))
    bars = list(dict.fromkeys(e["barrier"] for e in edges))
    h = 34 * max(len(roles), len(bars)) + 30
    lx, rx, w = 20, 520, 840
    ry = {r: 30 + n * 34 for n, r in enumerate(roles)}
    by = {b: 30 + n * 34 for n, b in enumerate(bars)}
    multi = m.get("ctas", 1) > 1
    parts = [f"<h3>Who arrives on what, who waits on it</h3><svg class=\"graph\" width=\"{w}\" "
             f"height=\"{h}\" xmlns=\"http://www.w3.org/2000/svg\">"
             "<defs><marker id=\"ah\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
             "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#555\"/></marker>"
             "</defs>"]
    grouped: dict[tuple, list[dict]] = {}  # one arrow per (role, barrier, relation)
    for e in edges:
        grouped.setdefault(((e["role"], e["cta"]), e["barrier"], e["relation"]), []).append(e)
    for (role, barrier, relation), es in grouped.items():
        lines = sorted({f"{e['op']} at {os.path.basename(e['file'])}:{e['line']}" for e in es})
        y1, y2 = ry[role], by[barrier]
        colour = "#1f7a3a" if relation == "arrives" else "#1a56c4"
        if relation == "arrives":
            x1, ya, x2, yb = lx + 200, y1 - 4, rx, y2 - 4
        else:
            x1, ya, x2, yb = rx, y2 + 4, lx + 200, y1 + 4
        parts.append(f"<line class=\"edge {relation}\" x1=\"{x1}\" y1=\"{ya}\" x2=\"{x2}\" "
                     f"y2=\"{yb}\" stroke=\"{colour}\" stroke-width=\"1.5\" marker-end=\"url(#ah)\">"
                     f"<title>{_E(role[0])} {relation} {_E(barrier)}: "
                     f"{_E('; '.join(lines))}</title></line>")
    for (role, cta), y in ry.items():
        label = f"{role} (CTA {cta})" if multi else role
        parts.append(f"<rect x=\"{lx}\" y=\"{y - 12}\" width=\"200\" height=\"22\" rx=\"4\" "
                     f"fill=\"#eef1f6\" stroke=\"#8a90a0\"/><text class=\"role\" x=\"{lx + 6}\" "
                     f"y=\"{y + 4}\">{_E(label)}</text>")
    groups = {b["name"]: b.get("groups") for b in m.get("barriers", ())}
    for b, y in by.items():
        label = f"{b} ({', '.join(groups[b])})" if groups.get(b) else b
        parts.append(f"<rect x=\"{rx}\" y=\"{y - 12}\" width=\"300\" height=\"22\" rx=\"4\" "
                     f"fill=\"#fff7e6\" stroke=\"#a86500\"/><text class=\"barrier\" x=\"{rx + 6}\" "
                     f"y=\"{y + 4}\">{_E(label)}</text>")
    parts.append("</svg><p class=\"facts\">green: arrives on (or completes bytes on) the barrier; "
                 "blue: waits on it. Hover an arrow for the ops and lines.</p>")
    return "".join(parts)
