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
