"""warpspin: prove CuTe DSL kernels free of deadlocks and synchronization errors with SPIN."""
__version__ = "0.1.0"


def verify(jit_fn, *args, **kw):
    from .api import verify as _verify
    return _verify(jit_fn, *args, **kw)


def verify_kernel(kernel, **kw):
    from .api import verify_kernel as _verify_kernel
    return _verify_kernel(kernel, **kw)


def assert_verified(jit_fn, *args, reports: str = ".warpspin-reports", **kw):
    """`verify(jit_fn, *args, **kw)` (params=, arch=, timeout_s=, ...), raising AssertionError
    unless every kernel it launches is VERIFIED: the headline of each, the start of the report
    and where the text, JSON and HTML reports are (written under `reports`). Returns the
    results."""
    __tracebackhide__ = True  # pytest: the failure points at the test, not into warpspin
    import os
    from .api import verify_all as _verify_all
    from .report.failure import failure_text, write_reports
    name = kw.get("target") or getattr(jit_fn, "__name__", type(jit_fn).__name__)
    kw.setdefault("target", name)
    results = _verify_all(jit_fn, *args, **kw)
    if any(r.verdict != "verified" for r in results) or not results:
        html = write_reports(results, os.path.join(reports, name), name)
        raise AssertionError(f"warpspin: {name}: not verified\n" + failure_text(results, html))
    return results
