"""Bench: the tests marked `exhaustive` (pyproject.toml), which `make test` leaves out to keep CI
under 30 minutes on 2 cores: SPIN's proofs of quack's persistent GEMMs (millions of states),
R4's printed resets on quack's SM90 GEMM, the cluster-multicast mutants. They still must pass;
`make exhaustive` runs them and prints one row per test.

    python bench/exhaustive.py [-n JOBS] [PYTEST ARGS...]

One row per test: test, seconds (pytest's call phase, this machine), outcome. Nothing here
asserts on the seconds; a failed test makes the exit code 1.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args: list[str]) -> tuple[int, list[tuple[str, float, str]]]:
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "junit.xml")
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "exhaustive",
                              "-p", "no:cacheprovider", f"--junitxml={xml}", *args], cwd=ROOT)
        rows = []
        for case in ET.parse(xml).iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "FAILED" if child.tag == "failure" else "ERROR"
                elif child.tag == "skipped":
                    outcome = "skipped"
            name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            rows.append((name, float(case.get("time", 0)), outcome))
    return rc, rows


def main(argv: list[str]) -> int:
    rc, rows = run(argv)
    print("\n| test | seconds | outcome |\n|---|---|---|")
    for name, secs, outcome in rows:
        print(f"| {name} | {secs:.1f} | {outcome} |")
    print(f"\n{len(rows)} tests, {sum(r[1] for r in rows):.0f} s")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
