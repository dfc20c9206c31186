"""Ctrl-C during a search: INCONCLUSIVE with what was searched, no traceback, no pan left."""
import os
import signal
import subprocess
import sys
import time

import pytest

BIG = """from warpspin.syncir.protocols import ring
def big():
    return ring(stages=4, trips=0, consumers=4, consumer_threads=128, trips_range=(0, 40))
"""


def _default_sigint() -> None:
    """Ctrl-C as at a terminal: a shell starts background jobs with SIGINT ignored, and Python
    keeps an ignored SIGINT ignored (no KeyboardInterrupt), so a test run from one would see none."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_pan(parent: int, limit_s: float = 180) -> None:
    """Until a pan process the CLI started runs (tracing and compiling take longer on a loaded
    machine than any fixed sleep; pan runs in a session of its own)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if int(fields[1]) == parent and comm.startswith("pan"):  # field 4: the parent
                return
        time.sleep(0.2)
    raise AssertionError("no pan process started")


@pytest.mark.parametrize("jobs", ("1", "2"))
def test_ctrl_c_gives_inconclusive_with_what_was_searched(tmp_path, jobs):
    (tmp_path / "big.py").write_text(BIG)
    p = subprocess.Popen([sys.executable, "-c", "import sys; from warpspin.cli import main; "
                          "sys.exit(main(sys.argv[1:]))", "check", f"{tmp_path}/big.py:big",
                          f"{tmp_path}/big.py:big", "--jobs", jobs, "--timeout", "600", "--engine", "spin"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, preexec_fn=_default_sigint)
    _wait_for_pan(p.pid)  # Ctrl-C during the search (the ring has millions of states)
    time.sleep(2)
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # say where it stands before failing
        tree = subprocess.run(["ps", "-eo", "pid,ppid,pgid,stat,etime,args"], capture_output=True,
                              text=True).stdout
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"still running 60 s after Ctrl-C; its output:\n{out}\nprocesses:\n{tree}")
    assert p.returncode == 2, out
    assert "Traceback" not in out
    assert "INCONCLUSIVE" in out and "interrupted (Ctrl-C)" in out, out
    assert "searched" in out and out.count("big.py:big") == 1, out  # the second target never ran
    try:
        os.killpg(p.pid, 0)
        alive = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout
    except ProcessLookupError:
        alive = ""
    assert not alive.strip(), f"processes left: {alive}"
