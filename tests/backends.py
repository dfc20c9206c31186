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


def assert_every_engine(k: Kernel, kind: str | None, line: int | None = None) -> None:
    """The interpreter's exhaustive search, SPIN (reduced and plain) and the happens-before
    engine all give `kind` (None: verified; then `verify_kernel` says VERIFIED too), the
    interpreter's at `line` when given."""
    from warpspin.api import verify_kernel
    from warpspin.engine import hb
    out = explore(k)
    _, a = lower_and_check(k, timeout_s=60)
    _, b = lower_and_check(k, reduce=False, timeout_s=60)
    h = hb.check(k)
    if kind is None:
        assert out.violation is None and a.kind is None and b.kind is None
        assert h.verdict == "verified" and verify_kernel(k).verdict == "verified"
        return
    assert out.violation is not None and out.violation.kind == kind
    assert a.kind == kind and b.kind == kind
    assert h.verdict == "violation" and h.kind == kind
    if line is not None:
        assert out.violation.loc.line == line
