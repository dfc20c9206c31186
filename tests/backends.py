"""Helpers for tests that run a SyncIR kernel in every backend."""
from __future__ import annotations

from warpspin.engine.spin import lower_and_check
from warpspin.syncir import Kernel
from warpspin.syncir.interp import explore


def kinds_in_every_backend(k: Kernel) -> list:
    """(interpreter's kind, SPIN's kind reduced, SPIN's kind plain); None: verified."""
    o = explore(k)
    assert o.complete
    out = [o.violation.kind if o.violation else None]
    for reduce in (True, False):
        r = lower_and_check(k, reduce=reduce)[1]
        assert r.complete or r.kind is not None
        out.append(r.kind)
    return out
