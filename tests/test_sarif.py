"""`warpspin check --sarif FILE`: SARIF 2.1.0 logs of real runs (SyncIR kernels, about a second
each), validated against the official schema (tests/data/sarif-schema-2.1.0.json, see
tests/data/README.md): a deadlock with its interleaving as a codeFlow, a verified kernel, and
UNSUPPORTED, INCONCLUSIVE and ERROR verdicts."""
import copy
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="pip install jsonschema (the test extra)")

from warpspin.api import CheckOptions, check_target  # noqa: E402
from warpspin.report.result import Location, Note, Result, TraceStep, Violation  # noqa: E402
from warpspin.report.sarif import to_sarif, write_sarif  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")

ROOT = Path(__file__).resolve().parent.parent
RING = ROOT / "examples" / "syncir_ring.py"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())

# kernels whose verdicts are UNSUPPORTED, INCONCLUSIVE (a loop bound) and ERROR (the target raises),
# at lines of their own file (outside the current directory: absolute file URIs)
KERNELS = textwrap.dedent('''\
    from warpspin.syncir.ir import (Assign, Kernel, Loc, MBarRef, MBarrierDecl, MbarInit, Process,
                                    Var, While)
    from warpspin.syncir.ops import Unsupported


    def unsupported():
        return Kernel("unsupported", (Process("p", (
            Unsupported("setmaxnreg.inc", Loc(__file__, 8)),)),))


    def loop_bound():
        b = MBarRef("b")
        return Kernel("loop_bound", (Process("p", (
            MbarInit(b, 1, Loc(__file__, 14)), Assign("i", 0),
            While(Var("i").lt(10), (Assign("i", Var("i") + 1),), max_iters=4,
                  loc=Loc(__file__, 15))), threads=32),), (MBarrierDecl("b"),))


    def raises():
        raise RuntimeError("no kernel here")
''')


def validate(doc: dict) -> None:
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)


def check(target: str) -> Result:
    (r,) = check_target(target, CheckOptions(timeout_s=120))
    return r


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sarif") / "kernels.py"
    path.write_text(KERNELS)
    return path


@pytest.fixture(scope="module")
def deadlock() -> Result:
    r = check(f"{RING}:ring_missing_release")
    assert r.verdict == "violation" and r.violations[0].kind == "deadlock", str(r)
    return r


def run_of(doc: dict) -> dict:
    (run,) = doc["runs"]
    return run


def path_of(run: dict, art: dict) -> str:
    """The local path an artifactLocation names (resolving uriBaseId)."""
    uri = art["uri"]
    if "uriBaseId" in art:
        uri = run["originalUriBaseIds"][art["uriBaseId"]]["uri"] + uri
    u = urlparse(uri)
    assert u.scheme == "file", uri
    return unquote(u.path)


def where(run: dict, loc: dict) -> tuple[str, int]:
    phys = loc["physicalLocation"]
    return path_of(run, phys["artifactLocation"]), phys.get("region", {}).get("startLine", 0)


def test_schema_is_sarif_2_1_0():
    assert SCHEMA["$id"].endswith("sarif-schema-2.1.0.json")
    assert SCHEMA["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    jsonschema.validators.validator_for(SCHEMA).check_schema(SCHEMA)


def test_deadlock(deadlock):
    doc = to_sarif([deadlock])
    validate(doc)
    run = run_of(doc)
    v = deadlock.violations[0]
    assert run["tool"]["driver"]["name"] == "warpspin"
    (res,) = run["results"]
    assert res["ruleId"] == v.kind == "deadlock" and res["level"] == "error"
    rule = run["tool"]["driver"]["rules"][res["ruleIndex"]]
    assert rule["id"] == "deadlock" and "warpspin explain deadlock" in rule["help"]["text"]
    assert rule["fullDescription"]["text"].startswith("warpspin reports `deadlock` when")
    # the message, then the help lines
    assert res["message"]["text"].startswith(v.message)
    assert all(f"help: {h}" in res["message"]["text"] for h in v.help) and v.help
    # the first location, relative to SRCROOT = the current directory
    (loc,) = res["locations"]
    assert loc["physicalLocation"]["artifactLocation"]["uriBaseId"] == "SRCROOT"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == Path.cwd().as_uri().rstrip("/") + "/"
    assert where(run, loc) == (os.path.abspath(v.locations[0].file), v.locations[0].line)
    # notes with a location and the blocked waits are related locations, with their messages
    related = {(where(run, r), r["message"]["text"]) for r in res["relatedLocations"]}
    for n in v.notes:
        if n.location:
            assert ((os.path.abspath(n.location.file), n.location.line), n.message) in related
    assert v.blocked and all(any(b.process in text and "blocked forever" in text
                                 for _, text in related) for b in v.blocked)
    assert run["properties"]["verdicts"] == [{
        "target": deadlock.target, "kernel": deadlock.kernel, "verdict": "violation",
        "engine": deadlock.stats.engine, "states": deadlock.stats.states,
        "ops": deadlock.stats.hb_ops, "violations": 1,
        "seconds": round(deadlock.stats.seconds["total"], 3)}]
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is True and inv["exitCode"] == 1


def test_code_flow_is_the_interleaving(deadlock):
    """Ordered by executionOrder, the threadFlowLocations of all threadFlows (one per process)
    give back the trace step by step: process, line and op."""
    doc = to_sarif([deadlock])
    run = run_of(doc)
    trace = deadlock.violations[0].trace
    (flow,) = run["results"][0]["codeFlows"]
    ids = [tf["id"] for tf in flow["threadFlows"]]
    assert len(ids) == len(set(ids)) and set(ids) == {t.process for t in trace}
    steps = sorted((tfl["executionOrder"], tf["id"], where(run, tfl["location"])[1],
                    tfl["location"]["message"]["text"])
                   for tf in flow["threadFlows"] for tfl in tf["locations"])
    assert [s[0] for s in steps] == [t.step for t in trace]  # unique, the global step numbers
    assert [(p, line) for _, p, line, _ in steps] == [(t.process, t.line) for t in trace]
    assert [op for *_, op in steps] == [t.op for t in trace]
    # within a threadFlow the locations are in execution order
    for tf in flow["threadFlows"]:
        orders = [tfl["executionOrder"] for tfl in tf["locations"]]
        assert orders == sorted(orders)


def test_verified_gives_no_result_but_its_verdict():
    r = check(f"{RING}:epilogue_correct")
    assert r.verdict == "verified", str(r)
    doc = to_sarif([r])
    validate(doc)
    run = run_of(doc)
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
    (entry,) = run["properties"]["verdicts"]
    assert entry["verdict"] == "verified" and entry["target"] == r.target
    assert entry["engine"] == r.stats.engine == "happens-before"
    assert entry["ops"] == r.stats.hb_ops > 0 and entry["states"] == r.stats.states
    assert run["invocations"][0] == {"executionSuccessful": True, "exitCode": 0,
                                     "exitCodeDescription": "all verified"}


def test_unsupported_inconclusive_error(kernels):
    results = [check(f"{kernels}:{name}") for name in ("unsupported", "loop_bound", "raises")]
    assert [r.verdict for r in results] == ["unsupported", "inconclusive", "error"], \
        "\n".join(map(str, results))
    doc = to_sarif(results, root=str(ROOT))  # the kernels' file lies outside the root
    validate(doc)
    run = run_of(doc)
    got = [(res["ruleId"], res["level"], res["message"]["text"]) for res in run["results"]]
    assert got == [("unsupported", "error", results[0].reasons[0]),
                   ("inconclusive", "warning", results[1].reasons[0]),
                   ("error", "error", results[2].reasons[0])]
    for r, res in zip(results, run["results"]):
        (loc,) = res["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert "uriBaseId" not in art and art["uri"] == kernels.as_uri()  # absolute
        assert where(run, loc) == (str(kernels), r.reason_locations[0].line)
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
    assert [r.reason_locations[0].line for r in results[:2]] == [8, 15]  # as KERNELS says
    assert [e["verdict"] for e in run["properties"]["verdicts"]] == \
        ["unsupported", "inconclusive", "error"]
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False and inv["exitCode"] == 3  # an ERROR among them


def test_missing_and_zero_lines_do_not_crash():
    """A location with no file or line 0, a note without location, a step with no source line:
    the region or the location is left out, never an invalid log."""
    v = Violation("race", "two writes", (Location("", 0), Location("k.py", 0, frame="A.b")),
                  trace=(TraceStep(1, "w[0]", "smem.write x", "", 0),
                         TraceStep(2, "w[1]", "smem.write x", "k.py", 0, frame="A.b")),
                  notes=(Note("no place"), Note("at 0", Location("k.py", 0))), help=("fence",))
    r = Result("t.py:f", "k", verdict="violation", violations=[v])
    bad = Result("u.py:g", "k2", verdict="unsupported", reasons=["x", "y"],
                 reason_locations=[Location("<unknown>", 0)])
    doc = to_sarif([r, bad])
    validate(doc)
    res, u1, u2 = run_of(doc)["results"]
    # no location of its own: the target's file, no region
    assert res["locations"] == [{"physicalLocation": {"artifactLocation": {
        "uri": "t.py", "uriBaseId": "SRCROOT"}}}]
    assert "region" not in res["relatedLocations"][0]["physicalLocation"]
    assert "note: no place" in res["message"]["text"]
    steps = [tfl for tf in res["codeFlows"][0]["threadFlows"] for tfl in tf["locations"]]
    assert "physicalLocation" not in steps[0]["location"]
    assert steps[1]["location"]["logicalLocations"][0]["fullyQualifiedName"] == "A.b"
    assert u1["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "u.py"
    assert u2["message"]["text"] == "y"


def test_cli_writes_a_valid_log(tmp_path, kernels):
    out = tmp_path / "out.sarif"
    p = subprocess.run([sys.executable, "-m", "warpspin.cli", "check",
                        f"{RING}:epilogue_no_wait", f"{kernels}:unsupported",
                        "--jobs", "1", "--sarif", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr  # a violation
    text = out.read_text()
    assert text.startswith('{\n  "$schema"')  # indent 2
    doc = json.loads(text)
    validate(doc)
    run = run_of(doc)
    assert [res["ruleId"] for res in run["results"]] == ["race", "unsupported"]
    assert run["results"][0]["codeFlows"][0]["threadFlows"]
    assert [e["verdict"] for e in run["properties"]["verdicts"]] == ["violation", "unsupported"]
    assert run["invocations"][0]["exitCode"] == 1


def test_write_sarif_and_an_invalid_log_fails(tmp_path, deadlock):
    """The validator is live: a level SARIF does not have is rejected."""
    path = tmp_path / "d.sarif"
    write_sarif([deadlock], str(path))
    doc = json.loads(path.read_text())
    validate(doc)
    bad = copy.deepcopy(doc)
    bad["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError, match="fatal"):
        validate(bad)
    bad = copy.deepcopy(doc)
    bad["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"][0]["locations"][0][
        "executionOrder"] = "first"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
