"""Compare what the H200 did with what warpspin's model allows, litmus by litmus.

    python -m conformance.compare conformance/results.json            # table; exit 1 if unsound
    python -m conformance.compare conformance/results.json --write    # also docs/conformance.md
                                                                      # and the table in semantics.md

A hardware outcome is one terminal: "hangs" (the watchdog killed it), "completes" with the
probe words of one launch, or "faults" (the launch ended in a CUDA error: the kernel trapped;
the model has no such terminal).  The model's outcomes come from the reference interpreter
(`predict.py`): the terminals of its violation-free executions and the violation kinds some
execution reaches (the model predicts nothing after a violation).  Per litmus:

  agrees       every outcome the hardware showed is one the model allows
  undefined    the hardware showed an outcome outside the terminals, but the model reports a
               violation (undefined behaviour or a checker rule) on some execution: allowed,
               and recorded as what the H200 does
  unmodelled   the same, where the model stops at an op it does not model (UNSUPPORTED)
  UNSOUND      the hardware showed an outcome the model says is impossible: a bug in the model
  not run      no hardware result for it (yet)
  PTX only     it needs a GPU the suite does not have (sm_100a: tcgen05, TMEM): traced and
               predicted on the CPU, its rules are the PTX ISA's as docs/semantics.md states them
  error        it failed on the device (a broken litmus)

Outcomes the model allows that the hardware was not seen to produce are listed as conservative.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field

from warpspin.syncir.interp import Terminal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "conformance.md")
SEMANTICS = os.path.join(ROOT, "docs", "semantics.md")
RESULTS = os.path.join(ROOT, "conformance", "results.json")


@dataclass
class Judgement:
    name: str
    rules: tuple
    expect: str
    verdict: str
    where: str
    model: list[str]
    violations: list[str]
    hardware: list[str]
    status: str
    conservative: list[str] = field(default_factory=list)
    gpu: str = ""  # the row's own GPU, when it is not the run's (results.json "environment")


def _text(t: Terminal) -> str:
    if t.end == "faults":
        return f"faults ({t.values[0]})"
    return t.end if t.end == "hangs" or not t.values else f"completes {list(t.values)}"


def hardware_terminals(row: dict) -> set[Terminal] | None:
    if row["outcome"] == "hangs":
        return {Terminal("hangs")}
    if row["outcome"] == "faults":
        return {Terminal("faults", (row["fault"],))}
    if row["outcome"] == "completes":
        return {Terminal("completes", tuple(v)) for v in row["values"]} or {Terminal("completes")}
    return None


def judge(lit, pred, row: dict | None) -> Judgement:
    model = pred.outcomes.terminals
    j = Judgement(lit.name, lit.rules, lit.expect, pred.verdict, pred.where,
                  sorted(_text(t) for t in model), sorted(pred.outcomes.violations), [], "not run")
    if row is None:
        if lit.arch != "sm_90a":
            j.status = "PTX only"
        return j
    j.gpu = row.get("gpu", "")
    hw = hardware_terminals(row)
    if hw is None:
        j.hardware, j.status = [row["outcome"]], "error"
        return j
    j.hardware = sorted(_text(t) for t in hw)
    outside = [t for t in hw if t not in model]
    if not outside:
        j.status = "agrees"
    elif pred.outcomes.violations == {"unsupported"}:
        j.status = "unmodelled"
    elif pred.outcomes.violations:
        j.status = "undefined"
    else:
        j.status = "UNSOUND"
    j.conservative = sorted(_text(t) for t in model if t not in hw)
    return j


def judge_all(results: dict | None = None) -> tuple[list[Judgement], dict]:
    from conformance.predict import predict
    from conformance.suite import ALL

    if results is None:
        results = json.load(open(RESULTS)) if os.path.exists(RESULTS) else {"litmus": {}}
    out = []
    for cls in ALL:
        lit = cls()
        out.append(judge(lit, predict(lit), results["litmus"].get(lit.name)))
    return out, results.get("environment", {})


def _cell(xs: list[str]) -> str:
    return "; ".join(xs) if xs else "-"


def litmus_table(js: list[Judgement]) -> str:
    rows = ["| litmus | rules | warpspin check | model: outcomes | model: violations | H200 | status |",
            "|---|---|---|---|---|---|---|"]
    for j in js:
        said = j.verdict + (f" ({j.where})" if j.where else "")
        on = f" (on an {j.gpu.replace('NVIDIA ', '')})" if j.gpu else ""
        rows.append(f"| `{j.name}` | {', '.join(j.rules)} | {said} | {_cell(j.model)} | "
                    f"{_cell(j.violations)} | {_cell(j.hardware)}{on} | {j.status} |")
    return "\n".join(rows)


def rules_table(js: list[Judgement]) -> str:
    from conformance.rules import RULES

    rows = ["| rule | PTX | statement | litmus: H200 outcome |", "|---|---|---|---|"]
    for rid, (_, ptx, text) in RULES.items():
        seen = [f"[`{j.name}`](conformance.md#{j.name.lower()}): {_cell(j.hardware)} ({j.status})"
                for j in js if rid in j.rules]
        rows.append(f"| `{rid}` | {ptx} | {text} | {'<br>'.join(seen) or 'none'} |")
    return "\n".join(rows)


def environment_line(env: dict) -> str:
    if not env:
        return "No hardware run recorded yet."
    keys = ["date", "gpu", "driver", "cuda", "dsl", "torch", "python", "arch", "also"]
    return "Hardware run: " + ", ".join(f"{k} {env[k]}" for k in keys if env.get(k)) + "."


def conformance_doc(js: list[Judgement], env: dict) -> str:
    from conformance.suite import ALL

    bad = [j for j in js if j.status in ("UNSOUND", "error", "not run")]
    parts = [
        "# Conformance: the hardware model against the H200",
        "",
        "Generated by `python -m conformance.compare conformance/results.json --write`; "
        "`tests/test_conformance.py` fails when it drifts from the litmus kernels or the "
        "committed results. How the suite works: `conformance/` (litmus kernels, one class "
        "each), `conformance/device.py` (the GPU runner), `conformance/compare.py` (the "
        "statuses below).",
        "",
        environment_line(env),
        "",
        f"{len(js)} litmus kernels; " + ", ".join(
            f"{sum(j.status == s for j in js)} {s}" for s in ("agrees", "undefined", "unmodelled", "UNSOUND",
                                                              "error", "not run", "PTX only")) + ".",
        "",
        "Status: **agrees**: every outcome the H200 showed is one the model allows; "
        "**undefined**: the model reports a violation on some execution (undefined behaviour "
        "or a checker rule) and predicts nothing after it, the H200 column records what the "
        "hardware did; **unmodelled**: the same where the model stops at an op it does not model (the verdict is UNSUPPORTED); **UNSOUND**: the H200 showed an outcome the model calls impossible; **PTX only**: "
        "the litmus needs an sm_100a GPU (none is available here): it is traced and its outcomes "
        "predicted, and the rule is the PTX ISA's; **not run**: an sm_90a litmus written in a "
        "session that had no H200 (its class says when), predicted only until the next run. "
        "Model outcomes are the terminals of every violation-free execution the reference "
        "interpreter explores (`completes` with the probe words, or `hangs`).",
        "",
        "## Rules",
        "",
        rules_table(js),
        "",
        "## Litmus kernels",
        "",
        litmus_table(js),
        "",
    ]
    for cls, j in zip(ALL, js):
        doc = " ".join((cls.__doc__ or "").split())
        cons = f" Allowed by the model, not seen: {_cell(j.conservative)}." if j.conservative else ""
        parts += [f"### {j.name}", "", f"`{cls.__module__.replace('.', '/')}.py`. {doc}{cons}", ""]
    if bad:
        parts += ["Open: " + ", ".join(f"`{j.name}` ({j.status})" for j in bad), ""]
    return "\n".join(parts)


SEM_BEGIN, SEM_END = "<!-- conformance:begin (generated) -->", "<!-- conformance:end -->"


def semantics_with_table(text: str, js: list[Judgement]) -> str:
    block = f"{SEM_BEGIN}\n{rules_table(js).replace('(conformance.md#', '(conformance.md#')}\n{SEM_END}"
    if SEM_BEGIN in text:
        return re.sub(re.escape(SEM_BEGIN) + ".*?" + re.escape(SEM_END), lambda m: block, text,
                      flags=re.S)
    return text.rstrip("\n") + "\n\n## Conformance on the H200\n\nEach rule below is tested " \
        "by litmus kernels run on an H200 (`conformance/`, [conformance.md](conformance.md)).\n\n" \
        + block + "\n"


def main(argv: list[str]) -> int:
    path = argv[0] if argv and not argv[0].startswith("--") else RESULTS
    results = json.load(open(path))
    js, env = judge_all(results)
    print(environment_line(env))
    print(litmus_table(js))
    if "--write" in argv:
        with open(DOC, "w") as f:
            f.write(conformance_doc(js, env))
        text = open(SEMANTICS).read()
        with open(SEMANTICS, "w") as f:
            f.write(semantics_with_table(text, js))
    return 1 if any(j.status in ("UNSOUND", "error") for j in js) else 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main(sys.argv[1:]))
