"""warpspin: prove CuTe DSL kernels free of deadlocks and synchronization errors with SPIN."""
__version__ = "0.1.0"


def verify(jit_fn, *args, **kw):
    from .api import verify as _verify
    return _verify(jit_fn, *args, **kw)


def verify_kernel(kernel, **kw):
    from .api import verify_kernel as _verify_kernel
    return _verify_kernel(kernel, **kw)


def assert_verified(jit_fn, *args, **kw):
    """`verify(jit_fn, *args, **kw)` (params=, arch=, timeout_s=, ...), raising AssertionError
    with the report unless every kernel it launches is VERIFIED. Returns the results."""
    from .api import verify_all as _verify_all
    results = _verify_all(jit_fn, *args, **kw)
    bad = [r for r in results if r.verdict != "verified"]
    if bad:
        raise AssertionError("warpspin: not verified\n" + "\n".join(str(r) for r in bad))
    return results
