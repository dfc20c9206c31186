"""warpspin in a kernel repository's pytest run (registered as the `warpspin` pytest plugin).

* `warpspin.assert_verified(jit_fn, *args, params=...)` in any test.
* The `warpspin` fixture: `warpspin.check("kernels/gemm.py:config_a")` (a `warpspin check`
  target) or `warpspin.check_jit(jit_fn, *args, params=...)` asserts that every kernel is
  VERIFIED (or, with `expect=`, reports that kind) and writes the text, JSON and HTML reports into the
  test's directory under `--warpspin-reports` (default `.warpspin-reports/`).
* `warpspin_targets` in the ini file (one `path.py:FUNC` per line, `[expect]` after it, e.g.
  `kernels/gemm.py:broken [deadlock]`) parametrizes every test that takes the
  `warpspin_target` fixture: one test per kernel, for CI.
"""
from __future__ import annotations

import os
import re

import pytest

from .report.failure import failure_text, write_reports

ENTRY = re.compile(r"^(\S+?:\w+)(?:\s+\[([\w-]+)\])?$")


def pytest_addoption(parser):
    parser.addini("warpspin_targets", "kernels to check: one `path.py:FUNC [expect]` per line",
                  type="linelist", default=[])
    parser.addoption("--warpspin-reports", default=".warpspin-reports", metavar="DIR",
                     help="where the warpspin fixture writes each test's reports")
    parser.addoption("--warpspin-timeout", type=float, default=600.0, metavar="S",
                     help="search time limit per kernel")


def pytest_configure(config):
    config.addinivalue_line("markers", "warpspin: a test that model-checks kernels with warpspin")


def _targets(config) -> list[tuple[str, str]]:
    out = []
    for line in config.getini("warpspin_targets"):
        m = ENTRY.match(line.strip())
        if not m:
            raise pytest.UsageError(f"warpspin_targets: {line!r} is not `path.py:FUNC [expect]`")
        out.append((m.group(1), m.group(2) or "verified"))
    return out


def pytest_generate_tests(metafunc):
    if "warpspin_target" in metafunc.fixturenames:
        targets = _targets(metafunc.config)
        metafunc.parametrize("warpspin_target", targets, ids=[t for t, _ in targets])


class Checker:
    """What the `warpspin` fixture hands a test."""

    def __init__(self, request):
        self.request = request
        self.config = request.config
        name = re.sub(r"[^\w.-]+", "_", request.node.nodeid)
        self.dir = os.path.join(str(self.config.rootpath), self.config.getoption("warpspin_reports"),
                                name)
        self.timeout = self.config.getoption("warpspin_timeout")

    def _judge(self, results, what: str, expect: str):
        html = write_reports(results, self.dir, what)
        got = [r.outcome for r in results]
        if not results or any(g != expect for g in got):
            pytest.fail(f"warpspin: {what}: expected {expect}, got {', '.join(got) or 'nothing'}\n"
                        + failure_text(results, html), pytrace=False)
        return results

    def check(self, target, expect: str = "verified", **opts):
        """Check a `warpspin check` target (`path.py:FUNC`, relative to the rootdir)."""
        from .api import CheckOptions, check_target
        if isinstance(target, tuple):  # a `warpspin_target` parameter: (target, expect)
            target, expect = target
        path, func = target.rsplit(":", 1)
        full = path if os.path.isabs(path) else os.path.join(str(self.config.rootpath), path)
        opts.setdefault("timeout_s", self.timeout)
        return self._judge(check_target(f"{full}:{func}", CheckOptions(**opts)), target, expect)

    def check_jit(self, jit_fn, *args, expect: str = "verified", **kw):
        """Trace `jit_fn(*args)` and check every kernel it launches."""
        from .api import verify_all
        kw.setdefault("timeout_s", self.timeout)
        name = getattr(jit_fn, "__name__", type(jit_fn).__name__)
        return self._judge(verify_all(jit_fn, *args, **kw), name, expect)


@pytest.fixture
def warpspin(request) -> Checker:
    return Checker(request)
