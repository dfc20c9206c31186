"""SARIF 2.1.0 rendering of Results (`warpspin check ... --sarif FILE`), for GitHub code scanning
and editors' SARIF viewers.

One run; one rule per kind reported (its descriptions from the `warpspin explain` page); one
result per violation, with the interleaving as a codeFlow (one threadFlow per process, each step
with its global step number as `executionOrder`, so the total order is recoverable); one result
per reason of an UNSUPPORTED (error), INCONCLUSIVE (warning) or ERROR (error) verdict. A VERIFIED
kernel gives no result: `run.properties["verdicts"]` lists every target's verdict."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

from .render import blocked_facts
from .result import (ERROR, INCONCLUSIVE, UNDECIDED, UNSUPPORTED, VERIFIED, VIOLATION, Result,
                     exit_status)

# the $id of the official schema (tests/data/sarif-schema-2.1.0.json)
SCHEMA_URI = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"
# the project has no homepage yet: its package page
INFORMATION_URI = "https://pypi.org/project/warpspin/"
SRCROOT = "SRCROOT"

# the verdicts that are not violations, as rules: level and description (no explain page)
_VERDICT_RULES = {
    UNSUPPORTED: ("error", "The kernel uses an operation that matters for synchronization and is "
                  "not modelled, so warpspin gives no verdict on it.",
                  "warpspin reports UNSUPPORTED (exit status 2) when a kernel uses an operation "
                  "that matters for synchronization and is not modelled; the result names the "
                  "operation and its line. Nothing about the kernel is proved or refuted."),
    INCONCLUSIVE: ("warning", "The search was truncated or reached a bound of the model: neither a "
                   "proof nor a violation.", ""),
    ERROR: ("error", "warpspin could not check the target: bad input or an internal error.",
            "warpspin reports ERROR (exit status 3) when the target cannot be loaded or checked: "
            "the file or function does not exist, it raised, it returned something that is not a "
            "kernel, or warpspin met an internal error. The result gives the reason."),
}


def write_sarif(results: list[Result], path: str, root: str | None = None) -> None:
    """Write the SARIF log of `results` to `path` (JSON, indent 2)."""
    doc = to_sarif(results, root=root)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def to_sarif(results: list[Result], root: str | None = None) -> dict:
    """The SARIF 2.1.0 log of `results` as a dict. Paths under `root` (default: the current
    directory) become URIs relative to the uriBaseId SRCROOT; others absolute file URIs."""
    from ..doctor import version
    b = _Builder(os.path.abspath(root or os.getcwd()))
    for r in results:
        b.add(r)
    verdicts = [r.verdict for r in results]
    run = {
        "tool": {"driver": {
            "name": "warpspin",
            "version": version(),
            "informationUri": INFORMATION_URI,
            "rules": b.rules,
        }},
        "invocations": [{
            "executionSuccessful": ERROR not in verdicts and UNDECIDED not in verdicts,
            "exitCode": exit_status(results),
            "exitCodeDescription": _EXIT.get(exit_status(results), ""),
        }],
        "originalUriBaseIds": {SRCROOT: {"uri": Path(b.root).as_uri().rstrip("/") + "/"}},
        "results": b.results,
        "properties": {"verdicts": [_verdict(r) for r in results]},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


_EXIT = {0: "all verified", 1: "a violation", 2: "inconclusive or unsupported",
         3: "bad input or an internal error"}


def _verdict(r: Result) -> dict:
    return {"target": r.target, "kernel": r.kernel, "verdict": r.verdict,
            "engine": r.stats.engine, "states": r.stats.states, "ops": r.stats.hb_ops,
            "violations": len(r.violations),
            "seconds": round(r.stats.seconds.get("total", 0.0), 3)}


def _paragraph(page: str) -> str:
    """The first paragraph of an explain page (after its `# title`), on one line."""
    lines, out = page.splitlines(), []
    for line in lines:
        s = line.strip()
        if not out and (not s or s.startswith("#")):
            continue
        if not s or s.startswith("#"):
            break
        out.append(s)
    return " ".join(out)


def _first_sentence(text: str) -> str:
    for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z`(])", text):
        if not text[:m.start()].endswith(("e.g.", "i.e.", "etc.", "cf.")):
            return text[:m.start()]
    return text


def _rule(kind: str) -> dict:
    from .explain import page
    text = page(kind)
    level, short, full = _VERDICT_RULES.get(kind, ("error", "", ""))
    if text:
        full = _paragraph(text) or full
        short = _first_sentence(full)
        if len(short) > 160 and ": " in short:  # a title, not the whole list of cases
            short = short[:short.index(": ")] + "."
    short = short or f"warpspin reports `{kind}`."
    rule = {"id": kind, "name": kind,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full or short},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["correctness", "concurrency", "gpu"]}}
    if text:
        rule["help"] = {"text": f"Run `warpspin explain {kind}` for what `{kind}` means (what the "
                                "hardware does), a minimal example and the usual fixes.",
                        "markdown": text}
    else:
        rule["help"] = {"text": "The result gives the reason and its line. `warpspin explain` "
                                "lists the kinds of violations, each with its page."}
    return rule


class _Builder:
    def __init__(self, root: str):
        self.root = root
        self.rules: list[dict] = []
        self.index: dict[str, int] = {}
        self.results: list[dict] = []

    def rule_index(self, kind: str) -> int:
        if kind not in self.index:
            self.index[kind] = len(self.rules)
            self.rules.append(_rule(kind))
        return self.index[kind]

    # -- locations --------------------------------------------------------------------------
    def artifact(self, file: str) -> dict:
        path = os.path.abspath(os.path.join(self.root, file))
        try:
            rel = os.path.relpath(path, self.root)
        except ValueError:  # another drive
            rel = ""
        if rel and rel != "." and not rel.startswith(".." + os.sep) and rel != "..":
            return {"uri": quote(Path(rel).as_posix(), safe="/"), "uriBaseId": SRCROOT}
        return {"uri": Path(path).as_uri()}

    def physical(self, file: str, line: int) -> dict | None:
        if not file or (file.startswith("<") and file.endswith(">")):  # no file: <unknown>, <string>
            return None
        p = {"artifactLocation": self.artifact(file)}
        if isinstance(line, int) and line >= 1:
            p["region"] = {"startLine": line}
        return p

    def location(self, file: str, line: int, message: str = "", frame: str = "") -> dict | None:
        """A location object, or None when it would say nothing (no file, no message)."""
        loc: dict = {}
        phys = self.physical(file, line)
        if phys:
            loc["physicalLocation"] = phys
        if frame:
            loc["logicalLocations"] = [{"name": frame.rsplit(".", 1)[-1],
                                        "fullyQualifiedName": frame, "kind": "function"}]
        if message:
            loc["message"] = {"text": message}
        return loc or None

    def fallback(self, r: Result) -> list[dict]:
        """The target's own file, when a result has no location of its own (code scanning
        wants one)."""
        file = r.target.rsplit(":", 1)[0] if ":" in r.target else r.target
        if file.endswith(".py"):
            loc = self.location(file, 0)
            if loc:
                return [loc]
        return []

    # -- results ----------------------------------------------------------------------------
    def add(self, r: Result) -> None:
        if r.verdict == VERIFIED:
            return
        if r.verdict == VIOLATION:
            for v in r.violations:
                self.violation(r, v)
            return
        kind = r.verdict if r.verdict in (UNSUPPORTED, INCONCLUSIVE) else ERROR
        reasons = list(r.reasons) or [f"{r.verdict}, with no reason given"]
        if r.verdict not in (UNSUPPORTED, INCONCLUSIVE, ERROR):
            reasons = [f"no verdict was reached (verdict {r.verdict!r}): {why}" for why in reasons]
        for i, why in enumerate(reasons):
            where = r.reason_locations[i] if i < len(r.reason_locations) else None
            res = {"ruleId": kind, "ruleIndex": self.rule_index(kind),
                   "level": _VERDICT_RULES[kind][0],
                   "message": {"text": why}}
            loc = self.location(where.file, where.line, frame=where.frame) if where else None
            locs = [loc] if loc and "physicalLocation" in loc else self.fallback(r)
            if locs:
                res["locations"] = locs
            res["properties"] = {"target": r.target, "kernel": r.kernel, "verdict": r.verdict}
            self.results.append(res)

    def violation(self, r: Result, v) -> None:
        text = [v.message]
        text += [f"note: {n.message}" for n in v.notes if n.location is None]
        text += [f"help: {h}" for h in v.help]
        res = {"ruleId": v.kind, "ruleIndex": self.rule_index(v.kind), "level": "error",
               "message": {"text": "\n".join(text)}}
        first = v.locations[0] if v.locations else None
        loc = self.location(first.file, first.line, frame=first.frame) if first else None
        locs = [loc] if loc and "physicalLocation" in loc else self.fallback(r)
        if locs:
            res["locations"] = locs

        related: list[dict] = []

        def relate(file, line, message, frame=""):
            loc = self.location(file, line, message, frame)
            if loc and "physicalLocation" in loc:
                loc["id"] = len(related) + 1
                related.append(loc)

        for extra in v.locations[1:]:
            bits = [b for b in (extra.role, extra.frame) if b]
            relate(extra.file, extra.line, ", ".join(bits) or "related location", extra.frame)
        for n in v.notes:
            if n.location is not None:
                relate(n.location.file, n.location.line, n.message, n.location.frame)
        for bw in v.blocked:
            relate(bw.file, bw.line, _blocked_text(bw))
        if related:
            res["relatedLocations"] = related
        if v.trace:
            res["codeFlows"] = [self.code_flow(v)]
        res["properties"] = {"target": r.target, "kernel": r.kernel, "replayed": v.replayed,
                             "steps": len(v.trace)}
        self.results.append(res)

    def code_flow(self, v) -> dict:
        flows: dict[str, list[dict]] = {}
        for t in v.trace:
            loc = self.location(t.file, t.line, t.op, t.frame) or {"message": {"text": t.op}}
            props = {"step": t.step, "process": t.process, "cta": t.cta}
            if t.frame:
                props["frame"] = t.frame
            flows.setdefault(t.process, []).append(
                {"executionOrder": t.step, "location": loc, "properties": props})
        replayed = "" if v.replayed else ", NOT replayed"
        return {"message": {"text": f"interleaving ({len(v.trace)} steps{replayed}): each step's "
                                    "executionOrder is its place in the total order"},
                "threadFlows": [{"id": p, "message": {"text": p}, "locations": locs}
                                for p, locs in flows.items()]}


def _blocked_text(b) -> str:
    first, last = b.warps
    warps = f"warps {first}..{last - 1}" if last - first > 1 else f"warp {first}"
    text = f"blocked forever: {b.process} (CTA {b.cta}, {warps}) at {b.op}"
    if b.barrier:
        text += f" {b.barrier}"
    facts = blocked_facts(b)
    return text + ("; " + "; ".join(facts) if facts else "")

