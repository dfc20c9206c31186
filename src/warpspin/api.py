"""Python API: verify a CuTe DSL kernel (traced on the CPU) or a SyncIR kernel.

    result = warpspin.verify(jit_fn, *example_args, arch="sm_90a", params={"K": (1, 8)})
    result.verdict, result.violations, result.stats, result.to_json(), str(result)
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import sys
import time
import traceback
from dataclasses import dataclass, field

from .report.result import ERROR, Location, Result, Stats
from .pipeline import check_kernel
from .syncir.ir import UNBOUNDED
from .syncir import Kernel, fmt_kernel


@dataclass
class CheckOptions:
    arch: str = "sm_90a"
    params: dict[str, tuple[int, int]] = field(default_factory=dict)
    timeout_s: float = 600.0
    memory_mb: int = 4096
    emit_promela: str | None = None
    reduce: bool = True
    jobs: int = 1                 # > 1: exhaustive search and bug hunts at once (engine/portfolio.py)
    # SPIN checks races on stages TMA loads fill and wgmma or threads read (several times the
    # states of a GEMM mainloop: docs/semantics.md, "Staged buffers"); False leaves them out of
    # SPIN's search, and the verdict is then not VERIFIED
    load_races: bool = True
    # which engine decides: "auto" (the happens-before engine, and SPIN for a kernel outside its
    # class), "hb" or "spin" alone (pipeline.check_kernel)
    engine: str = "auto"
    # what VERIFIED must cover: ("deadlock", "race") by default; a property not checked on some
    # object of the kernel then makes the verdict INCONCLUSIVE
    properties: tuple[str, ...] = ("deadlock", "race")
    # a --param name the kernel has no launch value of: "error" (its result is an ERROR that
    # lists the names it has), or "ignore" (the names are left out and listed in the result's
    # config["params_not_in_kernel"]: a command of several targets, each with its own values)
    unknown_params: str = "error"
    # `check --sass`: also compile the kernel to SASS and check the orderings its model assumed
    # (sass/); `ptxas`: assemble with the PyPI ptxas instead of the DSL's own compiler
    sass: bool = False
    ptxas: bool = False


def verify_kernel(kernel: Kernel, *, target: str = "", opts: CheckOptions | None = None,
                  stats: Stats | None = None) -> Result:
    """Check a SyncIR kernel (built by hand or extracted)."""
    opts = opts or CheckOptions()
    stats = stats or Stats()
    t0 = time.perf_counter()
    r = check_kernel(kernel, target=target, timeout_s=opts.timeout_s, memory_mb=opts.memory_mb,
                     emit_promela=opts.emit_promela, reduce=opts.reduce, stats=stats,
                     jobs=opts.jobs, engine=opts.engine, load_races=opts.load_races,
                     properties=tuple(opts.properties))
    r.syncir_text = fmt_kernel(kernel)
    stats.seconds["total"] = stats.seconds.get("trace", 0) + stats.seconds.get("extract", 0) + \
        (time.perf_counter() - t0)
    return r


def verify(jit_fn, *args, arch: str = "sm_90a", params: dict | None = None,
           timeout_s: float = 600.0, memory_mb: int = 4096, target: str = "",
           jobs: int = 1) -> Result:
    """Trace `jit_fn(*args)` with the CuTe DSL on the CPU and check every kernel it launches.
    With several kernels, the result of the worst one is returned (see verify_all)."""
    results = verify_all(jit_fn, *args, arch=arch, params=params, timeout_s=timeout_s,
                         memory_mb=memory_mb, target=target, jobs=jobs)
    order = ["error", "violation", "unsupported", "inconclusive", "verified"]
    return min(results, key=lambda r: order.index(r.verdict))


def verify_all(jit_fn, *args, arch: str = "sm_90a", params: dict | None = None,
               timeout_s: float = 600.0, memory_mb: int = 4096, target: str = "",
               jobs: int = 1) -> list[Result]:
    """`jobs` > 1: the exhaustive search and randomized bug hunts on that many cores (a hunt's
    counterexample is shortened, so the one shown can differ from run to run; 1 is
    deterministic)."""
    opts = CheckOptions(arch=arch, params=_norm_params(params or {}), timeout_s=timeout_s,
                        memory_mb=memory_mb, jobs=jobs)
    return _check_jit(jit_fn, args, opts, target or getattr(jit_fn, "__name__", "kernel"))


def _norm_params(params: dict) -> dict[str, tuple[int, int]]:
    out = {}
    for k, v in params.items():
        if isinstance(v, int):
            out[k] = (v, v)
        elif isinstance(v, range):
            out[k] = (v.start, v.stop - 1)
        else:
            lo, hi = v
            out[k] = (int(lo), UNBOUNDED if hi is None or hi == UNBOUNDED else int(hi))
    return out


def _internal(e: Exception) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
    return (f"internal error (a bug of warpspin's, please report it): "
            f"{type(e).__name__}: {e}{where}")


def _error(target: str, message: str, file: str = "", line: int = 0, kernel: str = "") -> Result:
    r = Result(target=target, kernel=kernel, verdict=ERROR, reasons=[message])
    if file:
        r.reason_locations = [Location(file, line)]
    return r


def _check_jit(jit_fn, args, opts: CheckOptions, target: str) -> list[Result]:
    from .frontend import TraceError, trace
    from .extract import ExtractError

    stats = Stats()
    t0 = time.perf_counter()
    try:
        traced = trace(jit_fn, *args, arch=opts.arch)
    except TraceError as e:
        return [_error(target, f"the kernel fails to trace: {e.message}", e.file or "", e.line or 0)]
    except Exception as e:
        return [_error(target, _internal(e))]
    stats.seconds["trace"] = time.perf_counter() - t0
    if not traced:
        return [_error(target, "tracing produced no kernel launch (is the @cute.kernel launched?)")]
    from .extract.build import UnknownParams
    results, unknown_to, extracted = [], {}, []
    for tk in traced:
        kstats = Stats(seconds=dict(stats.seconds))
        t1 = time.perf_counter()
        try:
            try:
                kernel = _extract(tk, opts.params)
            except UnknownParams as e:
                if len(traced) == 1 and opts.unknown_params == "error":
                    raise
                # a target that launches several kernels: a value may be another kernel's
                for name in e.unknown:
                    unknown_to.setdefault(name, []).append(tk.name)
                kernel = _extract(tk, {k: v for k, v in opts.params.items() if k not in e.unknown})
        except ExtractError as e:
            results.append(_error(target, str(e), kernel=tk.name))
            continue
        except Exception as e:  # ExtractorBug or any other: a bug of warpspin's, never a verdict
            results.append(_error(target, _internal(e), kernel=tk.name))
            continue
        kstats.seconds["extract"] = time.perf_counter() - t1
        results.append(verify_kernel(kernel, target=target, opts=opts, stats=kstats))
        extracted.append((results[-1], tk.name, kernel))
    if opts.sass:
        from .sass.run import merge_into
        merge_into(extracted, jit_fn, args, opts.arch, opts.ptxas)
    nowhere = [n for n, ks in unknown_to.items() if len(ks) == len(traced)]
    if nowhere and opts.unknown_params == "error":
        return [_error(target, f"--param {', '.join(nowhere)}: no kernel the target launches has "
                       "a launch value of that name")]
    for r in results:  # (every extracted kernel's result has the key: the CLI reads it)
        r.config["params_not_in_kernel"] = nowhere
    return results


def _extract(tk, params: dict):
    """SyncIR of a traced kernel. One launch value the synchronization needs and nobody gave
    (a trip count) is left open, every value from its lowest up, for the happens-before
    engine's cutoff; the verdict says so. Several: the extractor's error names them."""
    from .extract import extract
    from .extract.build import MissingParams
    try:
        return extract(tk, params=params)
    except MissingParams as e:
        if len(e.missing) != 1:
            raise
        (name, low), = e.missing.items()
        low = 1 if low is None else max(1, low)
        kernel = extract(tk, params={**params, name: (low, UNBOUNDED)})
        note = (f"{name} was not given: every value from {low} up is checked "
                f"(--param {name}=V fixes one)")
        return dataclasses.replace(kernel, assumptions=(*kernel.assumptions, note))


def load_target(target: str):
    """`path/to/file.py:FUNC` -> the function object (raises ValueError with a clear message)."""
    if ":" not in target:
        raise ValueError(f"target {target!r} must be path/to/file.py:FUNC")
    path, func = target.rsplit(":", 1)
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file")
    name = "warpspin_target_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(path))
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            del sys.modules[name]
            hint = ""
            if isinstance(e, ModuleNotFoundError) and e.name == "cutlass":
                from .doctor import DSL_PACKAGE, DSL_PIN
                hint = (f" (the CuTe DSL is not installed here: python -m pip install "
                        f"'{DSL_PACKAGE}=={DSL_PIN}'; `warpspin doctor` checks the rest)")
            elif isinstance(e, ModuleNotFoundError) and (e.name or "").startswith("cutlass."):
                from .doctor import dsl_version
                hint = (f" (the CuTe DSL installed here, {dsl_version() or 'unknown'}, has no "
                        f"{e.name}: the file needs a newer release)")
            raise ValueError(f"{path}: importing it failed: {type(e).__name__}: {e}{hint}") from e
    fn = getattr(module, func, None)
    if fn is None or not callable(fn):
        raise ValueError(f"{path}: no function {func!r}")
    return fn


@contextlib.contextmanager
def target_arch(arch: str):
    """The DSL configured for `arch` while a target's FUNC() runs: libraries read the arch in
    their constructors (flash-attn-4's FlashAttentionForwardSm90 asserts it). Without the DSL
    installed (SyncIR targets) nothing is configured."""
    try:
        from .frontend.trace import configured
        ctx = configured(arch)
        ctx.__enter__()
    except ImportError:
        yield
        return
    try:
        yield
    finally:
        ctx.__exit__(None, None, None)


def declared_arch(target: str) -> str | None:
    """The ARCH a target's module declares (an example written for sm_100a), or None."""
    try:
        fn = load_target(target)
    except ValueError:
        return None
    return getattr(sys.modules.get(getattr(fn, "__module__", ""), None), "ARCH", None)


def _produce(target: str, arch: str) -> tuple[list, list[Result]]:
    """What a target's FUNC() returns, as a list of items; or the error result."""
    try:
        fn = load_target(target)
        with target_arch(arch):
            produced = fn()
    except ValueError as e:
        return [], [_error(target, str(e))]
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        last = tb[-1] if tb else None
        return [], [_error(target, f"{target} raised {type(e).__name__}: {e}",
                           last.filename if last else "", last.lineno if last else 0)]
    return (produced if isinstance(produced, list) else [produced]), []


def check_target(target: str, opts: CheckOptions) -> list[Result]:
    items, errors = _produce(target, opts.arch)
    if errors:
        return errors
    results = []
    for item in items:
        if isinstance(item, Kernel):
            results.append(verify_kernel(item, target=target, opts=opts))
        elif isinstance(item, tuple) and len(item) == 2 and callable(item[0]) and \
                isinstance(item[1], (tuple, list)):
            jit_fn, args = item
            results.extend(_check_jit(jit_fn, tuple(args), opts, target))
        elif isinstance(item, tuple) and len(item) == 2:
            fn, args = item
            why = (f"its first element is a {type(fn).__name__}, not the @cute.jit function"
                   if not callable(fn) else
                   f"its second element is a {type(args).__name__}, not the tuple of launch "
                   "arguments (one argument: (jit_fn, (arg,)))")
            results.append(_error(target, f"{target} must return (jit_fn, args): {why}"))
        else:
            results.append(_error(target, f"{target} must return (jit_fn, args), a list of such "
                                  f"pairs, or a SyncIR Kernel; it returned {type(item).__name__}"))
    return results


def sass_target(target: str, opts: CheckOptions) -> list[Result]:
    """`warpspin sass TARGET`: each kernel's SASS against the orderings its model assumed."""
    from .frontend import TraceError, trace
    from .extract import ExtractError
    from .sass.run import check_kernels
    items, errors = _produce(target, opts.arch)
    out = errors
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and callable(item[0])):
            out.append(_error(target, "a SyncIR kernel has no SASS: warpspin sass needs a "
                              "target that returns (jit_fn, args)"))
            continue
        jit_fn, args = item
        try:
            traced = trace(jit_fn, *args, arch=opts.arch)
            kernels = [(tk.name, _extract(tk, opts.params)) for tk in traced]
        except TraceError as e:
            out.append(_error(target, f"the kernel fails to trace: {e.message}", e.file or "",
                              e.line or 0))
            continue
        except ExtractError as e:
            out.append(_error(target, str(e)))
            continue
        except Exception as e:
            out.append(_error(target, _internal(e)))
            continue
        out += check_kernels(jit_fn, tuple(args), opts.arch, kernels, opts.ptxas, target)
    return out
