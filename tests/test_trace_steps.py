"""Every step of a reported trail has its op text and its line, and each async completion is
attributed to a line that issued a copy still in flight into its CTA (tests/trace_checks.py):
on random protocols through both engines. The examples' violations are checked the same way in
tests/test_examples.py."""
import shutil

import pytest
from hypothesis import HealthCheck, given, settings

from protocol_gen import protocols
from trace_checks import assert_trace_readable
from warpspin.api import CheckOptions, verify_kernel

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(protocols())
@pytest.mark.parametrize("engine", ["spin", "auto"])
def test_every_step_of_a_random_trail_is_shown(engine, k):
    res = verify_kernel(k, opts=CheckOptions(timeout_s=60, memory_mb=512, engine=engine))
    for v in res.violations:
        assert v.replayed and v.trace
        assert_trace_readable(v)
