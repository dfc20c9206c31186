"""Packaging: a wheel built from this tree installs into a fresh venv (no DSL there) and works:
--version, doctor (naming the DSL's install command), explain (the pages ship in the wheel),
check of a SyncIR target, and a clear message for a DSL target."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*cmd, cwd=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd)


def test_wheel_installs_and_runs_in_a_fresh_venv(tmp_path):
    wheels = tmp_path / "wheels"
    r = run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), ROOT)
    assert r.returncode == 0, r.stderr
    (wheel,) = glob.glob(str(wheels / "warpspin-*.whl"))
    venv = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", str(venv)).returncode == 0
    bin_ = venv / "bin"
    r = run(str(bin_ / "pip"), "install", "-q", wheel)
    assert r.returncode == 0, r.stderr
    ws = str(bin_ / "warpspin")

    r = run(ws, "--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("warpspin "), r
    r = run(ws, "doctor", cwd=tmp_path)
    assert r.returncode == 2 and "missing  CuTe DSL" in r.stdout
    assert "help: python -m pip install 'nvidia-cutlass-dsl==" in r.stdout
    r = run(ws, "explain", "race", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("# race\n")
    r = run(ws, "check", os.path.join(ROOT, "examples", "syncir_ring.py") + ":ring_correct",
            "--jobs", "1", cwd=tmp_path)
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    r = run(ws, "check", os.path.join(ROOT, "examples", "raw_mbarrier.py") + ":correct",
            "--jobs", "1", cwd=tmp_path)
    assert r.returncode == 3 and "Traceback" not in r.stdout + r.stderr
    assert "the CuTe DSL is not installed here" in r.stdout
