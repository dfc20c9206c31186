"""warpspin: prove CuTe DSL kernels free of deadlocks and synchronization errors with SPIN."""
__version__ = "0.1.0"


def verify(jit_fn, *args, **kw):
    from .api import verify as _verify
    return _verify(jit_fn, *args, **kw)


def verify_kernel(kernel, **kw):
    from .api import verify_kernel as _verify_kernel
    return _verify_kernel(kernel, **kw)
