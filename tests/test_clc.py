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


def test_quack_sm100_clc_gemm_extracts_the_response_words():
    """quack's SM100 GEMM with `PersistenceMode.CLC` through the library's own compile: the
    scheduler warp's multicast try_cancel writes the response words of its pipeline stage, every
    consumer warp's `clc_response` loads the first word of the stage it waited for, and nothing
    is unsupported (its search is a row of docs/coverage.md)."""
    pytest.importorskip("quack")
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from fixtures import catalog as C
    from warpspin.syncir import Unsupported, check, walk_stmts
    from warpspin.syncir.ops import SmemLoad
    from warpspin.syncir.ops import ClcTryCancel
    k = C.extracted("quack.gemm_sm100.clc")
    check(k)
    stmts = [(p.role, s) for p in k.processes for s in walk_stmts(p.body)]
    assert not [s for _, s in stmts if isinstance(s, Unsupported)]
    issues = [(r, s) for r, s in stmts if isinstance(s, ClcTryCancel)]
    assert len(issues) == 1 and issues[0][1].multicast
    assert issues[0][1].loc.line == 767 and issues[0][1].loc.file.endswith("tile_scheduler.py")
    reads = [(r, s) for r, s in stmts if isinstance(s, SmemLoad) and s.loc.line == 715]
    assert {r for r, _ in reads} >= {r for r, _ in issues}
    assert all(s.ref.name == issues[0][1].ref.name for _, s in reads)
    assert [c.name for c in k.counters] == ["clc"]
    assert {p.name: (p.lo, p.hi) for p in k.params}["clc_pool"] == (0, 2)
