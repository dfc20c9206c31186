"""Trace a CuTe DSL program on the CPU and return its kernels as plain data.

    kernels = trace(host_jit_fn, *example_args, arch="sm_90a")

The DSL is configured in-process (dryrun: stop after tracing; an explicit arch: nothing to
detect; loc_tracebacks: a Python call chain on every op), ``cute.compile`` runs with a
trace-finalize hook, and the hook converts a cleaned clone of the module into ``TracedKernel``s
before returning.  No MLIR object outlives the hook and no file is written.

``capture()`` does the same for compiles made inside a library (quack-kernels calls
``cute.compile`` itself): it registers a process-wide hook for the duration of a ``with`` block.
"""
from __future__ import annotations

import contextlib
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from .locations import _is_foreign, is_dsl_file
from .mlir_data import TracedKernel

DEFAULT_ARCH = "sm_90a"
LOC_DEPTH = 64
CLEAN_PIPELINE = "builtin.module(pyir-prelower,canonicalize,cse)"
CLEAN_PIPELINE_NO_PYIR = "builtin.module(canonicalize,cse)"


class TraceError(Exception):
    """The DSL could not trace a kernel.  ``message`` is the DSL's own text; ``file``/``line``
    point at the user's code when they can be found."""

    def __init__(self, message: str, file: Optional[str] = None, line: Optional[int] = None,
                 cause: Optional[BaseException] = None):
        self.message = message
        self.file = file
        self.line = line
        self.cause = cause
        where = f"{file}:{line}: " if file else ""
        super().__init__(f"{where}{message}")


# -- DSL configuration ---------------------------------------------------------------------------
def _dsl():
    from cutlass.cutlass_dsl import CuTeDSL

    return CuTeDSL._get_dsl()


@contextlib.contextmanager
def configured(arch: str = DEFAULT_ARCH, loc_depth: int = LOC_DEPTH) -> Iterator[Any]:
    """Set dryrun / arch / loc_tracebacks on the DSL singleton; restore the old values after.
    A DSL without ``loc_tracebacks`` (4.4) gets the same call chains from ``compat``."""
    from . import compat

    env = _dsl().envar
    saved = compat.save_env(env)
    env.dryrun = True
    env.arch = arch
    with contextlib.ExitStack() as stack:
        if compat.has_loc_tracebacks(env):
            env.loc_tracebacks = loc_depth
        else:
            stack.enter_context(compat.traceback_locations(loc_depth))
        stack.enter_context(compat.record_smem_fields())
        try:
            yield env
        finally:
            compat.restore_env(env, saved)


# -- the hook -----------------------------------------------------------------------------------
@dataclass
class _Collector:
    arch: str
    clean: bool = True
    keep_text: bool = False
    kernels: list[TracedKernel] = field(default_factory=list)
    failure: Optional[BaseException] = None

    def __call__(self, dsl, module, function_name: str) -> None:
        try:
            clone = _clean_clone(module) if self.clean else module.operation.clone()
            from .convert import convert_module

            self.kernels.extend(convert_module(
                clone, arch=self.arch, function_name=function_name, keep_text=self.keep_text))
            del clone
        except Exception as e:  # a warpspin bug: keep the DSL going, report after the compile
            self.failure = e


def _clean_clone(module):
    """Clone + pyir-prelower/canonicalize/cse.  The pass manager also verifies, so a module
    the DSL would later reject itself (pitfall P4) is taken raw: the DSL then reports it."""
    from cutlass._mlir import passmanager

    clone = module.operation.clone()
    try:
        pm = passmanager.PassManager.parse(CLEAN_PIPELINE, context=clone.context)
    except Exception:  # DSL 4.4 has no pyir-prelower pass (nor the PyIR it lowers)
        pm = passmanager.PassManager.parse(CLEAN_PIPELINE_NO_PYIR, context=clone.context)
    try:
        pm.run(clone)
        return clone
    except Exception:
        return module.operation.clone()


# -- errors -------------------------------------------------------------------------------------
def _user_frame(exc: BaseException) -> tuple[Optional[str], Optional[int]]:
    """Innermost traceback frame in user code, over the exception and its causes. Frames of
    installed libraries (site-packages, e.g. quack) count only when no other frame does."""
    seen = set()
    e: Optional[BaseException] = exc
    best = lib = (None, None)
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        for fs in traceback.extract_tb(e.__traceback__):
            if is_dsl_file(fs.filename) or _is_foreign(fs.filename):
                continue
            if f"{os.sep}site-packages{os.sep}" in fs.filename:
                lib = (fs.filename, fs.lineno)
            else:
                best = (fs.filename, fs.lineno)
        if best[0] is not None:
            return best
        e = e.__cause__ or e.__context__
    return best if best[0] is not None else lib


def _dsl_message(exc: BaseException) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {msg}"


def _trace_error(exc: BaseException) -> TraceError:
    file, line = _user_frame(exc)
    return TraceError(_dsl_message(exc), file, line, exc)


# -- public API ---------------------------------------------------------------------------------
def trace(jit_fn, *args, arch: str = DEFAULT_ARCH, clean: bool = True, keep_text: bool = False,
          loc_depth: int = LOC_DEPTH, **kwargs) -> list[TracedKernel]:
    """Trace ``jit_fn(*args, **kwargs)`` (a ``@cute.jit`` host function or callable object) and
    return every kernel it launches.  Raises ``TraceError`` when the DSL rejects the program."""
    import cutlass.cute as cute

    from . import compat

    collector = _Collector(arch, clean, keep_text)
    dsl = _dsl()
    with configured(arch, loc_depth):
        try:
            if compat.has_finalize_hooks(dsl):
                cute.compile(jit_fn, *args, trace_finalize_hooks=collector, **kwargs)
            else:  # DSL 4.4: no hook argument
                with compat.finalize_hook(dsl, collector):
                    cute.compile(jit_fn, *args, **kwargs)
        except Exception as e:
            raise _trace_error(e) from e
    if collector.failure is not None:
        raise RuntimeError(f"warpspin frontend failed converting the module: "
                           f"{collector.failure!r}") from collector.failure
    if not collector.kernels:
        raise TraceError(f"{getattr(jit_fn, '__name__', jit_fn)!s} launched no kernel")
    for k in collector.kernels:
        bind_example_args(k, jit_fn, args)
    return collector.kernels


def _host_params(jit_fn) -> list[str]:
    import inspect

    fn = getattr(jit_fn, "__call__", jit_fn) if not inspect.isfunction(jit_fn) else jit_fn
    fn = getattr(fn, "__wrapped__", fn)
    try:
        ps = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    if ps and ps[0].name == "self" and not inspect.ismethod(fn):
        ps = ps[1:]
    return [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _example_int(x) -> Optional[int]:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    v = getattr(x, "value", None)  # cutlass.Int32(8) etc.
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def _eval_host(e, values: list) -> Optional[int]:
    if e is None:
        return None
    if e[0] == "const":
        return e[1]
    if e[0] == "host":
        return values[e[1]] if e[1] < len(values) else None
    if e[0] == "op":
        return None
    a, b = _eval_host(e[1], values), _eval_host(e[2], values)
    if a is None or b is None:
        return None
    if e[0] in ("//", "%", "ceildiv") and b <= 0:
        return None
    return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0,
            "%": a % b if b else 0, "ceildiv": -(-a // b) if b else 0}[e[0]]


def describe_host(e) -> str:
    """How the host computes a launch operand (KernelArg.host), its parameters by position."""
    return _fmt_host(e, [])


def _fmt_host(e, names: list[str]) -> str:
    if e[0] == "const":
        return str(e[1])
    if e[0] == "host":
        return names[e[1]] if e[1] < len(names) else f"host{e[1]}"
    if e[0] == "op":  # the user's line, which names the value (`total = a * b`), else the call
        return f"{e[3]} ({e[2]})" if len(e) > 3 and e[3] else f"{e[1]}(...) at {e[2]}"
    return f"({_fmt_host(e[1], names)} {e[0]} {_fmt_host(e[2], names)})"


def bind_example_args(k: TracedKernel, jit_fn, args: tuple) -> None:
    """Name the kernel's integer arguments after the host function's parameters and give them
    the example values they get in this trace (``Int32(8)`` -> 8), when the host function
    passes them through (possibly with arithmetic).  Positional: host arguments that the DSL
    does not pass to the MLIR function (``Constexpr``) would shift them, so nothing is bound
    unless the counts agree."""
    names = _host_params(jit_fn)
    values = [_example_int(a) for a in args]
    ok = len(names) == len(args) == k.host_nargs
    for a in k.args:
        h = a.host
        if h is None:
            continue
        if h[0] == "host" and ok and h[1] < len(names):
            a.name = names[h[1]]
        elif ok:
            a.name = _fmt_host(h, names)
        if ok:
            a.example = _eval_host(h, values)


@contextlib.contextmanager
def capture(arch: str = DEFAULT_ARCH, clean: bool = True, keep_text: bool = False,
            loc_depth: int = LOC_DEPTH) -> Iterator[list[TracedKernel]]:
    """Catch every compile made inside the block, e.g. by a library::

        with capture("sm_90a") as kernels:
            quack.gemm._compile_gemm.__wrapped__(...)
        kernels  # -> [TracedKernel, ...]

    DSL errors propagate as ``TraceError``.
    """
    from . import compat

    collector = _Collector(arch, clean, keep_text)
    dsl = _dsl()
    with configured(arch, loc_depth), compat.finalize_hook(dsl, collector):
        try:
            yield collector.kernels
        except TraceError:
            raise
        except Exception as e:
            if _looks_like_dsl_error(e):
                raise _trace_error(e) from e
            raise
    if collector.failure is not None:
        raise RuntimeError(f"warpspin frontend failed converting the module: "
                           f"{collector.failure!r}") from collector.failure


def _looks_like_dsl_error(e: BaseException) -> bool:
    mod = type(e).__module__ or ""
    return mod.startswith("cutlass")


# -- fake arguments for targets -----------------------------------------------------------------
def fake_tensor(dtype, shape, *, stride_order=None, align: int = 16):
    """A compact fake tensor (no memory) for tracing: ``cute.runtime.make_fake_compact_tensor``.
    Entries of ``shape`` may be ``sym_int()`` for dynamic dims."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    kw = {"assumed_align": align}
    if stride_order is not None:
        kw["stride_order"] = stride_order
    return make_fake_compact_tensor(dtype, shape, **kw)


def fake_stream():
    """A fake CUDA stream for host functions that take one."""
    import cutlass

    return cutlass.runtime.make_fake_stream()


def sym_int(divisibility: int = 1):
    """A symbolic (dynamic) int for fake tensor shapes."""
    import cutlass.cute as cute

    return cute.sym_int(divisibility=divisibility) if divisibility != 1 else cute.sym_int()

