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


@pytest.mark.parametrize("jobs", ("1", "2"))
def test_ctrl_c_gives_inconclusive_with_what_was_searched(tmp_path, jobs):
    (tmp_path / "big.py").write_text(BIG)
    p = subprocess.Popen([sys.executable, "-c", "import sys; from warpspin.cli import main; "
                          "sys.exit(main(sys.argv[1:]))", "check", f"{tmp_path}/big.py:big",
                          f"{tmp_path}/big.py:big", "--jobs", jobs, "--timeout", "600", "--engine", "spin"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    time.sleep(8)  # the search runs by then (the ring has millions of states)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
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
