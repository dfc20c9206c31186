"""Progress of a long search: a status line on a terminal (stderr a tty), nothing with --json or
when stderr is not a terminal (CI logs)."""
import os
import pty
import subprocess
import sys

import pytest

BIG = """from warpspin.syncir.protocols import ring
def big():
    return ring(stages=4, trips=0, consumers=4, consumer_threads=128, trips_range=(0, 40))
"""
CLI = "import sys; from warpspin.cli import main; sys.exit(main(sys.argv[1:]))"


def _run(tmp_path, *extra, tty: bool, jobs: int = 2):
    (tmp_path / "big.py").write_text(BIG)
    cmd = [sys.executable, "-c", CLI, "check", f"{tmp_path}/big.py:big", "--jobs", str(jobs),
           "--timeout", "6", "--engine", "spin", *extra]
    if not tty:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return r.stdout, r.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    out, _ = p.communicate(timeout=120)
    os.close(master)
    return out, err.decode(errors="replace")


@pytest.mark.parametrize("jobs", (1, 2))  # pan alone, and the portfolio
def test_a_terminal_sees_progress_and_the_verdict_stays_clean(tmp_path, jobs):
    out, err = _run(tmp_path, tty=True, jobs=jobs)
    assert "searching: " in err and " states (" in err and "/s), depth " in err, err
    assert "INCONCLUSIVE" in out and "searching:" not in out


def test_no_progress_in_json_or_without_a_terminal(tmp_path):
    out, err = _run(tmp_path, "--json", tty=True)
    assert "searching:" not in err and '"verdict": "inconclusive"' in out
    out, err = _run(tmp_path, tty=False)
    assert "searching:" not in err and "INCONCLUSIVE" in out


def test_the_search_line_moves_every_second(tmp_path):
    """pan prints a progress line every PAN_FREQ states, not only each 10 depth levels or 10^6
    states: a half-million-state search must not sit on one count for many seconds."""
    import re
    out, err = _run(tmp_path, tty=True, jobs=1)
    counts = [int(c.replace(",", "")) for c in re.findall(r"searching: ([\d,]+) states", err)]
    assert len(set(counts)) >= 3, counts  # 6 s of search
    assert counts == sorted(counts)


def _collect():
    from warpspin.engine.progress import REPORTER
    seen = []
    return seen, REPORTER.set(seen.append)


def test_the_compiler_says_it_still_runs():
    from warpspin.engine import spin
    from warpspin.engine.progress import REPORTER
    seen, token = _collect()
    try:
        spin._run(["sh", "-c", "sleep 2.5"], ".", 30, "gcc pan.c")
    finally:
        REPORTER.reset(token)
    assert len(seen) >= 2 and all(p.phase == "compiling" for p in seen), seen
    assert "compiling the model (gcc pan.c): 2 s" in seen[-1].line()


def test_the_happens_before_engine_reports_its_executions():
    from warpspin.engine import hb
    from warpspin.engine.progress import REPORTER
    from warpspin.syncir.protocols import ring
    seen, token = _collect()
    try:
        r = hb.check(ring(stages=4, trips=0, consumers=4, consumer_threads=128,
                          trips_range=(0, 40)), timeout_s=120)
    finally:
        REPORTER.reset(token)
    assert r.verdict == "verified"
    assert seen and all(p.phase == "executions" for p in seen), seen
    runs = [p.runs for p in seen]
    assert runs == sorted(runs) and runs[-1] <= r.cost.runs
    assert "happens-before engine: " in seen[-1].line() and " executions, " in seen[-1].line()
