"""--trace-json: a counterexample in the trace-event format Perfetto and chrome://tracing open."""
import json
import os

from warpspin.api import verify_kernel
from warpspin.cli import main
from warpspin.report.perfetto import ASYNC, trace_events
from warpspin.syncir.protocols import ring

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_step_on_its_warps_track_copies_on_their_own_and_barriers_as_counters():
    r = verify_kernel(ring(2, 4, consumers=2, bug="missing-release"))
    (v,) = r.violations
    events = trace_events([r])["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in events if e["ph"] == "X"]
    assert [e["ts"] for e in slices] == [t.step for t in v.trace]
    for e, t in zip(slices, v.trace):
        track = names[(e["pid"], e["tid"])]
        assert track == (ASYNC if t.process == "async" else t.process.split("@")[0])
        assert e["name"] == t.op and e["args"]["where"] == f"{t.file}:{t.line}"
    assert ASYNC in names.values()  # the ring's TMA loads complete on a track of their own
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and {"phases completed", "arrivals pending"} <= set(counters[0]["args"])
    (mark,) = [e for e in events if e["ph"] == "i"]
    assert mark["name"].startswith("deadlock: ")


def test_the_cli_writes_it(tmp_path, capsys):
    out = tmp_path / "cex.json"
    status = main(["check", os.path.join(ROOT, "examples", "syncir_ring.py") + ":ring_missing_release",
                   "--jobs", "1", "--trace-json", str(out)])
    assert status == 1
    doc = json.loads(out.read_text())
    assert any(e["ph"] == "X" for e in doc["traceEvents"])
