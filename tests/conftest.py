"""Under `make test` (WARPSPIN_REQUIRE_ALL=1, what CI runs) a skipped test is a failure: the
Makefile installs SPIN, the CuTe DSL and quack, so a skip there means a broken set-up that would
otherwise pass silently."""
import os
import tempfile

import pytest

REQUIRE_ALL = bool(os.environ.get("WARPSPIN_REQUIRE_ALL"))
# compiled pan executables (engine/pan_cache.py) in a directory of this process's own, not the
# user's cache: a test run starts with none
os.environ.setdefault("WARPSPIN_CACHE_DIR", tempfile.mkdtemp(prefix="warpspin-pan-"))


def _fail_skips(report):
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under WARPSPIN_REQUIRE_ALL: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skips(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skips(outcome.get_result())
