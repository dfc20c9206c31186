"""The warpspin pytest plugin on a small sample kernel project (pytester): the fixture, the
ini list of targets (one test each), assert_verified, readable failures and the reports."""
import os
import shutil

import pytest

pytest_plugins = ["pytester"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SYNCIR = """
from warpspin.syncir.protocols import ring
def good():
    return ring(stages=2, trips=3, consumers=1)
def broken():
    return ring(stages=2, trips=3, consumers=1, bug="missing-release")
"""


def test_ini_targets_are_one_test_each_with_readable_failures(pytester):
    pytester.makepyfile(kernels=SYNCIR)
    pytester.makeini("""
        [pytest]
        warpspin_targets =
            kernels.py:good
            kernels.py:broken [deadlock]
            kernels.py:broken
    """)
    pytester.makepyfile(test_kernels="""
        def test_kernel(warpspin_target, warpspin):
            warpspin.check(warpspin_target, jobs=1)
    """)
    r = pytester.runpytest_subprocess("-q")  # the plugin loads through its entry point
    r.assert_outcomes(passed=2, failed=1)
    out = r.stdout.str()
    assert "warpspin: kernels.py:broken: expected verified, got deadlock" in out
    assert "error[deadlock]" in out and "waits forever" in out  # the text report
    # the headline names the target, and the failure says where the whole report is
    assert "kernels.py:broken: VIOLATION: error[deadlock] at " in out
    assert "report: .warpspin-reports/" in out and "kernels.py_broken.html" in out
    reports = pytester.path / ".warpspin-reports"
    names = sorted(p.name for d in reports.iterdir() for p in d.iterdir())
    assert "kernels.py_good.json" in names and "kernels.py_broken.txt" in names
    assert "kernels.py_broken.html" in names


def test_assert_verified_and_the_fixture_on_a_traced_kernel(pytester):
    pytest.importorskip("cutlass")
    shutil.copy(os.path.join(ROOT, "examples", "hopper_pipeline.py"), pytester.path / "raw.py")
    shutil.copy(os.path.join(ROOT, "examples", "_device.py"), pytester.path / "_device.py")
    pytester.makepyfile(test_raw="""
        import pytest
        import warpspin
        import raw

        def test_correct_verifies():
            fn, args = raw.correct()
            results = warpspin.assert_verified(fn, *args)
            assert results and results[0].verdict == "verified"

        def test_a_bug_fails_with_the_report():
            fn, args = raw.wrong_tx_bytes()
            with pytest.raises(AssertionError, match="error\\\\[tx-mismatch\\\\]") as e:
                warpspin.assert_verified(fn, *args, target="raw.wrong_tx_bytes")
            text = str(e.value)
            assert text.startswith("warpspin: raw.wrong_tx_bytes: not verified")
            assert "raw.wrong_tx_bytes: VIOLATION: error[tx-mismatch] at raw.py:" in text
            assert "report: .warpspin-reports/raw.wrong_tx_bytes/" in text
            import os
            assert os.path.exists(".warpspin-reports/raw.wrong_tx_bytes/raw.wrong_tx_bytes.html")

        def test_a_failure_points_at_the_test_not_into_warpspin():
            fn, args = raw.wrong_tx_bytes()
            warpspin.assert_verified(fn, *args)

        def test_fixture_expecting_the_kind(warpspin):
            fn, args = raw.wrong_tx_bytes()
            warpspin.check_jit(fn, *args, expect="tx-mismatch")
    """)
    # in a child process: the DSL's native libraries load once per process
    r = pytester.runpytest_subprocess("-q")
    r.assert_outcomes(passed=3, failed=1)
    out = r.stdout.str()
    assert "warpspin/__init__.py" not in out, out  # __tracebackhide__
    assert "report: .warpspin-reports/" in out
