"""The exhaustive search and the bug hunts at once (engine/portfolio.py, `--jobs`): the proof is
the same search as on one core, a hunt's counterexample is real, replayed and shortened, and a
hunt that finds nothing never makes a result complete."""
from __future__ import annotations

import time

import pytest

from warpspin.engine import check, lower_and_check
from warpspin.engine.portfolio import HUNT_MB, replay_trail, split_jobs
from warpspin.engine.spin import parse_pan
from warpspin.lower import lower
from warpspin.pipeline import check_kernel
from warpspin.syncir.interp import replay
from warpspin.syncir.protocols import ring


def test_split_jobs():
    assert split_jobs(1) == (1, 0)
    assert split_jobs(2) == (1, 1)
    assert split_jobs(3) == (1, 2)
    assert split_jobs(4) == (3, 1)
    assert split_jobs(16) == (12, 4)


@pytest.mark.parametrize("jobs", [2, 4])
def test_same_proof_on_more_cores(jobs):
    model = lower(ring(stages=4, trips=16, consumers=8), reduce=True, fuse=False)
    one = check(model, timeout_s=300)
    many = check(model, timeout_s=300, jobs=jobs)
    assert one.complete and many.complete and many.kind is None
    assert many.states == one.states
    assert many.cores == split_jobs(jobs)[0]


@pytest.mark.parametrize("bug", ["two-behind", "arrivals-too-few", "tx-bytes"])
def test_violation_same_as_one_core(bug):
    kernel = ring(stages=4, trips=16, consumers=8, bug=bug)
    one = check_kernel(kernel, timeout_s=300, engine="spin")
    two = check_kernel(kernel, timeout_s=300, jobs=2, engine="spin")
    assert one.verdict == two.verdict == "violation"
    assert two.violations[0].kind == one.violations[0].kind
    assert len(two.violations[0].trace) == len(one.violations[0].trace)
    assert two.stats.found_by


def test_parallel_bfs_counterexample_is_rederived_and_replays(monkeypatch):
    """SPIN 6.5.2's parallel BFS writes a trail whose last step can be another transition than
    the failing one; the engine re-derives one (hunts shortening towards its depth, else a
    one-core BFS bounded there). The hunts are held back so that the BFS finds the bug first
    on a loaded machine too (otherwise which search is first is a matter of timing)."""
    from warpspin.engine import portfolio
    monkeypatch.setattr(portfolio, "HUNT_AFTER_S", 60.0)
    kernel = ring(stages=4, trips=16, consumers=8, bug="two-behind")
    model = lower(kernel, reduce=True, fuse=False)
    r = check(model, timeout_s=300, jobs=4)
    assert r.kind == "parity-aliasing"
    assert r.first_found_by == "exhaustive BFS on 3 cores"
    assert "exhaustive BFS on 3 cores" in r.found_by
    rp = replay(model.kernel, r.events, expect_kind="parity-aliasing")
    assert rp.ok, rp.error


def test_hunt_finds_what_the_search_cannot_reach():
    """The exhaustive BFS cannot reach the bug's depth in its budget (its memory, or the
    seconds left to shorten the hunt's trail); a bitstate hunt finds it, the trail is real
    (replayed) and the verdict says which search found it."""
    kernel = ring(stages=4, trips=64, consumers=24, bug="two-behind")
    model = lower(kernel, reduce=True, fuse=False)
    r = check(model, timeout_s=240, memory_mb=300, jobs=2, shorten_s=5)
    assert r.kind == "parity-aliasing"
    assert r.first_found_by.startswith("hunt")
    assert set(r.truncated) & {"memory", "timeout"}, r.truncated
    assert replay(model.kernel, r.events, expect_kind="parity-aliasing").ok


def test_hunts_go_on_after_the_search_stops_at_a_limit(monkeypatch):
    """The search runs out of memory before any hunt has started (hunts held back until the
    search stops, 60 s at most: on a slow host a hunt started at 12 s found the bug first): the
    hunts still run, for as long again as the search ran, and find the bug."""
    from warpspin.engine import portfolio
    monkeypatch.setattr(portfolio, "HUNT_AFTER_S", 60.0)
    model = lower(ring(stages=4, trips=64, consumers=24, bug="two-behind"), reduce=True,
                  fuse=False)
    r = check(model, timeout_s=240, memory_mb=300, jobs=2, shorten_s=3)
    assert "memory" in r.truncated
    assert r.kind == "parity-aliasing" and r.first_found_by.startswith("hunt")
    assert replay(model.kernel, r.events, expect_kind="parity-aliasing").ok


def test_hunts_never_make_a_result_complete(monkeypatch):
    import warpspin.engine.spin as spin
    monkeypatch.setattr(spin, "EXHAUSTIVE_MIN_MB", 64)  # (the search's floor: filled sooner)
    model = lower(ring(stages=4, trips=64, consumers=16), reduce=True, fuse=False)
    r = check(model, timeout_s=240, memory_mb=64 + HUNT_MB, jobs=2)
    assert r.kind is None and not r.complete and "memory" in r.truncated
    assert r.hunts >= 1


def test_parallel_bfs_out_of_shared_memory_is_not_complete(monkeypatch):
    """A core that stops for lack of shared memory leaves the others printing `errors: 0`."""
    import warpspin.engine.spin as spin
    monkeypatch.setattr(spin, "EXHAUSTIVE_MIN_MB", 64)
    model = lower(ring(stages=4, trips=64, consumers=16), reduce=True, fuse=False)
    r = check(model, timeout_s=240, memory_mb=64 + HUNT_MB, jobs=4)
    assert r.kind is None and not r.complete
    assert "memory" in r.truncated


def test_pipeline_with_jobs_reports_the_cost():
    _, single = lower_and_check(ring(stages=2, trips=4, consumers=2), jobs=1)
    res = check_kernel(ring(stages=2, trips=4, consumers=2), jobs=2, engine="spin")
    assert res.verdict == "verified" and res.stats.states == single.states
    from warpspin.report.render import render_text
    text = render_text(res, explain=True)  # the cost in full: --explain-verdict
    assert "-byte states" in text and "MB" in text


@pytest.mark.parametrize("line,why", [
    ("cpu01: stop (out of shared memory)", "memory"),
    ("cpu02: stop (file system error)", "aborted"),
    ("    3 states lost (lack of queue memory)", "memory"),
])
def test_parallel_stops_are_truncations(line, why):
    out = f"pan: using 3 cores\n{line}\nState-vector 308 byte, depth reached 89, errors: 0\n" \
          "   447206 states, stored\n"
    r = parse_pan(out)
    assert not r.complete and why in r.truncated


def test_early_termination_is_not_a_truncation():
    out = ("pan: using 3 cores\ncpu01: pan:1: assertion violated 0 (at depth 63)\n"
           "cpu02: stop (early termination)\nState-vector 212 byte, depth reached 63, errors: 1\n"
           "   1000 states, stored\n")
    r = parse_pan(out)
    assert r.truncated == () and r.pan_error.startswith("assertion violated")


def test_a_replay_that_does_not_finish_is_stopped(tmp_path):
    pan = tmp_path / "pan"
    pan.write_text("#!/bin/sh\nsleep 30\n")
    pan.chmod(0o755)
    t0 = time.monotonic()
    assert replay_trail(str(tmp_path), None, 0.5) is None
    assert time.monotonic() - t0 < 10


def test_a_shortening_whose_replay_times_out_keeps_the_engines_counterexample(monkeypatch):
    """SPIN shortening a happens-before counterexample is best effort: its trail replay running
    out of time (a loaded CI machine) leaves the engine's own, replayed, never an error."""
    import warpspin.engine.spin as spin
    monkeypatch.setattr(spin, "replay_trail", lambda cwd, trail, timeout: None)
    r = check_kernel(ring(stages=2, trips=4, consumers=2, bug="two-behind"), timeout_s=120,
                     engine="auto")
    assert r.verdict == "violation", str(r)
    assert r.violations[0].replayed
    assert r.config.get("not_shortened"), r.config


def test_a_trail_whose_replay_does_not_reach_the_assertion_is_no_counterexample(tmp_path,
                                                                                  monkeypatch):
    """A hunt stopped while it wrote its trail, or a replay past its time, shows no WS|V line:
    that trail is dropped (the hunts go on), never reported as a model error."""
    from warpspin.engine import portfolio
    (tmp_path / "model.pml.trail").write_text("-4:-4:-4\n1:0:3\n")
    run = portfolio._Run("hunt (seed 1, -w20)", str(tmp_path), None, 0.0)
    out = "pan:1: assertion violated 0 (at depth 412)\npan: wrote model.pml.trail\n"
    monkeypatch.setattr(portfolio, "replay_trail", lambda *a: "WS|S|0|0|3\n")
    assert portfolio._trail_of(run, out, 0.0, True) is None
    (tmp_path / "model.pml.trail").write_text("-4:-4:-4\n1:0:3\n")
    monkeypatch.setattr(portfolio, "replay_trail", lambda *a: None)
    assert portfolio._trail_of(run, out, 0.0, True) is None
    (tmp_path / "model.pml.trail").write_text("-4:-4:-4\n1:0:3\n")
    monkeypatch.setattr(portfolio, "replay_trail",
                        lambda *a: "WS|S|0|0|3\nWS|V|parity-aliasing|0|0|3\n")
    found = portfolio._trail_of(run, out, 0.0, True)
    assert found.depth == 412 and "WS|V|parity-aliasing" in found.replay
