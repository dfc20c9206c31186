"""`warpspin sass`: a kernel's SASS checked against the obligations its model assumed, or a
listing (cuobjdump / nvdisasm text, e.g. of a C++ kernel) against obligations a file states."""
from __future__ import annotations

import re
import time
import tomllib

from ..report.result import ERROR, INCONCLUSIVE, VERIFIED, Result
from . import compile as sass_compile
from .check import check_function
from .listing import Function, parse
from .lines import LineMap
from .ptxmap import resolve
from .obligations import Obligation, Selector, from_kernel, patterns_by_line, uncovered
from .tools import ToolMissing
from .results import merge, to_result


def pick(functions: list[Function], kernel_name: str) -> Function | None:
    """The SASS function of a traced kernel: the one of that name, else the only kernel."""
    kernels = [f for f in functions if not f.name.startswith("$")]
    named = [f for f in kernels if f.name == kernel_name]
    if named:
        return named[0]
    return kernels[0] if len(kernels) == 1 else None


def functions_of(compiled) -> list[Function]:
    """The cubin's functions, with the annotated PTX's lines where it has them (--ptxas)."""
    functions = parse(sass_compile.disassemble(compiled.cubin))
    if compiled.ptx_table is not None:
        functions = [resolve(f, compiled.ptx_table) for f in functions]
    return functions


def check_kernel(compiled, functions: list[Function], f: Function, kernel):
    """The SASS report of function `f` of `compiled` against `kernel`'s obligations."""
    # the DSL's line information needs the PTX's word on inline asm; the annotated one not
    lines = (LineMap() if compiled.ptx_table is not None else
             LineMap.from_ptx(compiled.ptx, patterns_by_line(kernel)))
    return check_function(f, from_kernel(kernel), functions, lines, uncovered(kernel))


def compile_and_parse(jit_fn, args, arch: str, ptxas: bool):
    t0 = time.perf_counter()
    compiled = sass_compile.compile_jit(jit_fn, args, arch, ptxas=ptxas)
    t1 = time.perf_counter()
    functions = functions_of(compiled)
    return compiled, functions, {"compile": t1 - t0, "disassemble": time.perf_counter() - t1}


def _check_kernels(jit_fn, args, arch: str, kernels: list, ptxas: bool, target: str) -> list:
    """(Result, SassReport or None) per (traced name, SyncIR kernel) pair."""
    try:
        compiled, functions, seconds = compile_and_parse(jit_fn, args, arch, ptxas)
    except (sass_compile.CompileError, ToolMissing) as e:
        return [(Result(target=target, kernel=name, verdict=ERROR, reasons=[f"SASS: {e}"]), None)
                for name, _ in kernels]
    out = []
    for name, kernel in kernels:
        f = pick(functions, name)
        if f is None:
            out.append((Result(target=target, kernel=name, verdict=ERROR, reasons=[
                f"SASS: no function of the cubin is kernel {name} (it has "
                f"{', '.join(g.name for g in functions)})"]), None))
            continue
        t0 = time.perf_counter()
        rep = check_kernel(compiled, functions, f, kernel)
        secs = {**seconds, "check": time.perf_counter() - t0}
        secs["total"] = sum(secs.values())
        out.append((to_result(rep, target, name, compiled.assembler, secs), rep))
    return out


def check_kernels(jit_fn, args, arch: str, kernels: list, ptxas: bool = False,
                  target: str = "") -> list[Result]:
    """One Result per (traced name, SyncIR kernel) pair: its SASS against its obligations."""
    return [r for r, _ in _check_kernels(jit_fn, args, arch, kernels, ptxas, target)]


def merge_into(results_kernels: list, jit_fn, args, arch: str, ptxas: bool = False) -> None:
    """`check --sass`: each (Result, traced name, kernel) gets its SASS report merged in; a
    SASS that cannot be made keeps a VERIFIED from standing."""
    if not results_kernels:
        return
    pairs = _check_kernels(jit_fn, args, arch, [(n, k) for _, n, k in results_kernels], ptxas,
                           "")
    for (model, _, _), (sass, rep) in zip(results_kernels, pairs):
        if rep is None:
            if model.verdict == VERIFIED:
                model.verdict = INCONCLUSIVE
            model.reasons = list(model.reasons) + sass.reasons
            continue
        merge(model, rep, sass.config["sass"]["assembler"])


# -- listings ------------------------------------------------------------------------------------
class ObligationsError(ValueError):
    pass


def load_obligations(path: str) -> list[Obligation]:
    """A TOML file of [[obligation]] tables: name, fence, then (regexes on a SASS instruction's
    opcode and operands), and optionally first and rule. With `first`: no path from a `first`
    instruction reaches a `then` one without a `fence` one. Without: no `then` instruction may
    come before a `fence` one in one pass of the code (what a listing grepped out of a larger
    one can still show)."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ObligationsError(f"{path}: {e}") from e
    out = []
    for k, t in enumerate(doc.get("obligation", [])):
        missing = [key for key in ("name", "fence", "then") if key not in t]
        if missing:
            raise ObligationsError(f"{path}: obligation {k + 1} has no {', '.join(missing)}")
        for key in ("first", "fence", "then"):
            try:
                re.compile(t.get(key, ""))
            except (re.error, TypeError) as e:
                raise ObligationsError(f"{path}: obligation {k + 1}: {key} = {t.get(key)!r} is "
                                       f"not a regular expression ({e})") from e
        fence = Selector(f"`{t['fence']}`", t["fence"])
        then = Selector(f"`{t['then']}`", t["then"])
        rule = t.get("rule", "race")
        if "first" in t:
            out.append(Obligation(t["name"], rule, t.get("text", t["name"]),
                                  Selector(f"`{t['first']}`", t["first"]), fence, then))
        else:
            out.append(Obligation(t["name"], rule, t.get("text", t["name"]), then, None, fence,
                                  form="order"))
    if not out:
        raise ObligationsError(f"{path}: no [[obligation]] table")
    return out


def check_listing(path: str, obligations_path: str) -> list[Result]:
    t0 = time.perf_counter()
    try:
        with open(path) as f:
            functions = parse(f.read())
        obligations = load_obligations(obligations_path)
    except (OSError, ObligationsError) as e:
        return [Result(target=path, kernel="", verdict=ERROR, reasons=[str(e)])]
    if not functions:
        return [Result(target=path, kernel="", verdict=ERROR,
                       reasons=[f"{path}: no SASS instruction (/*addr*/ OPCODE ...;) in it"])]
    out = []
    for f in functions:
        if f.name.startswith("$"):
            continue
        rep = check_function(f, obligations, functions)
        res = to_result(rep, path, f.name, "a listing", {"check": time.perf_counter() - t0})
        out.append(res)
    return out
