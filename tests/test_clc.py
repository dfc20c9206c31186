"""Cluster launch control (issue 12): `clusterlaunchcontrol.try_cancel` as an async write of its
16-byte response completing on an mbarrier, its outcome bounded by the grid's pool of clusters
not started, in every backend; the UB of a try_cancel after a failed one fail-closed; quack's
SM100 GEMM with `PersistenceMode.CLC` extracted through the library's own compile."""
from __future__ import annotations

import os

import pytest

from backends import kinds_in_every_backend
from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import validate
from warpspin.syncir.protocols import CLC_BUG_EXPECT, CLC_BUGS, CLC_FILE, clc_scheduler


def test_clc_scheduler_verifies_for_every_pool_size_in_every_backend():
    k = clc_scheduler()
    assert validate(k) == []
    assert kinds_in_every_backend(k) == [None, None, None]
    assert verify_kernel(k).verdict == "verified"


@pytest.mark.parametrize("bug", CLC_BUGS)
def test_clc_scheduler_bugs_are_found_at_their_line(bug):
    k = clc_scheduler(bug=bug)
    raw, kind, line = CLC_BUG_EXPECT[bug]
    assert kinds_in_every_backend(k) == [raw, raw, raw]
    r = verify_kernel(k, opts=CheckOptions(timeout_s=120))
    if kind is None:  # undefined or not modelled: never verified, with the op's line
        assert r.verdict == "unsupported" and not r.violations
        assert any("try_cancel after one it issued failed" in x for x in r.reasons), r.reasons
        assert any(loc and loc.line == line for loc in r.reason_locations), r.reason_locations
        return
    v = r.violations[0]
    assert v.kind == kind and v.replayed
    assert (os.path.basename(v.locations[0].file), v.locations[0].line) == (CLC_FILE, line)


@pytest.mark.parametrize("pool, expect", [((2, 2), None), ((3, 3), "deadlock")])
def test_the_pool_bounds_the_grants(pool, expect):
    """The worker that leaves after one tile hangs the scheduler only on its fourth query, which
    needs three grants: a pool of two clusters never gets there."""
    assert kinds_in_every_backend(clc_scheduler(pool, bug="worker-one-tile"))[0] == expect
