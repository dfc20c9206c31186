"""The SASS check's cost and verdict on every example variant and every catalog kernel
(quack-kernels, flash-attn-4): compiled on the CPU by the DSL's own compiler with line
information, disassembled by nvdisasm, checked against the obligations of its SyncIR model.

    python bench/sass.py [--examples-only | --catalog-only] [--ptxas] [NAME ...]   (bench/sass.md)

--ptxas: the PyPI ptxas assembles the DSL's PTX, annotated so that every SASS instruction maps
to its PTX line (sass/ptxmap.py); compile s then includes that assembly.

Columns: kernel, arch, SASS instructions, obligations (holding / all), compile s (the DSL's trace,
lowering and ptxas: what `cute.compile` costs), disassemble s, check s (all obligations), the
largest search's path states, verdict, and why (the obligation reordered or undecided).
Seconds are this machine's; nothing here asserts on them.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time

os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")  # cold compiles: what a check costs
os.environ.setdefault("CUTE_DSL_NO_CACHE", "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

from warpspin.sass import compile as sc  # noqa: E402
from warpspin.sass.ptxmap import annotate  # noqa: E402
from warpspin.sass.run import check_kernel, functions_of, pick  # noqa: E402

HEAD = ("kernel", "arch", "SASS instructions", "obligations holding", "compile s",
        "disassemble s", "check s", "path states", "verdict", "why")


def _why(rep) -> str:
    out = [f"{r.obligation.name} {r.status}" + (f": {r.reason[:90]}" if r.reason else "")
           for r in rep.results if r.status != "holds"]
    out += [f"unknown SASS {i.base}" for i in rep.unknown]
    out += [f"order not checked: {u}" for u in rep.uncovered]
    return "; ".join(out)[:400].replace("|", "\\|")


PTXAS = False


def _assembled(compiled):
    """With --ptxas: the same PTX through the PyPI ptxas, annotated (sass/ptxmap.py)."""
    if not PTXAS:
        return compiled
    annotated, table = annotate(compiled.ptx)
    return sc.Compiled(compiled.ptx, sc.assemble(annotated, compiled.arch), compiled.arch,
                       "ptxas", table)


def _row(name, arch, kernel, tk_name, compiled, seconds) -> tuple:
    t0 = time.perf_counter()
    compiled = _assembled(compiled)
    seconds += time.perf_counter() - t0
    t1 = time.perf_counter()
    functions = functions_of(compiled)
    t2 = time.perf_counter()
    f = pick(functions, tk_name)
    if f is None:
        return (name, arch, "", "", f"{seconds:.1f}", f"{t2 - t1:.2f}", "", "", "ERROR",
                "no SASS function of that name")
    rep = check_kernel(compiled, functions, f, kernel)
    t3 = time.perf_counter()
    held = sum(r.status == "holds" for r in rep.results)
    return (name, arch, len(f.instrs), f"{held} / {len(rep.results)}", f"{seconds:.1f}",
            f"{t2 - t1:.2f}", f"{t3 - t2:.2f}", max((r.states for r in rep.results), default=0),
            rep.verdict.upper(), _why(rep))


def examples(only):
    from warpspin.api import _extract, target_arch
    from warpspin.frontend import trace
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if not f.endswith(".py") or f.startswith("_"):
            continue
        mod = importlib.import_module(f[:-3])
        arch = getattr(mod, "ARCH", "sm_90a")
        for v in getattr(mod, "VARIANTS", {}):
            name = f"{f[:-3]}:{v}"
            if only and name not in only and f[:-3] not in only:
                continue
            with target_arch(arch):
                jf, args = mod.VARIANTS[v]()
            tk = trace(jf, *args, arch=arch)[0]
            kernel = _extract(tk, {})
            t0 = time.perf_counter()
            compiled = sc.compile_jit(jf, args, arch)
            yield _row(name, arch, kernel, tk.name, compiled, time.perf_counter() - t0)


@contextlib.contextmanager
def _compiling():
    """The catalog's library entry points, compiling for real instead of tracing."""
    import warpspin.frontend as fe
    saved = fe.capture
    fe.capture = sc.capture
    try:
        yield
    finally:
        fe.capture = saved


def catalog(only):
    from fixtures import catalog as C
    for e in C.entries():
        if e.group not in ("quack", "fa4") or (only and e.name not in only):
            continue
        tk = C.traced(e.name)
        kernel = C.extracted(e.name)
        arch = "sm_100a" if "sm100" in e.name else "sm_90a"
        t0 = time.perf_counter()
        try:
            with _compiling():
                compiled = e.trace()
        except Exception as ex:  # noqa: BLE001 - a row, not a crash
            yield (e.name, arch, "", "", "", "", "", "", "ERROR", f"{type(ex).__name__}: {ex}"[:160])
            continue
        secs = time.perf_counter() - t0
        mine = [c for c in compiled if tk.name in c.ptx] or compiled
        yield _row(e.name, arch, kernel, tk.name, mine[0], secs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--examples-only", action="store_true")
    ap.add_argument("--catalog-only", action="store_true")
    ap.add_argument("--ptxas", action="store_true")
    args = ap.parse_args(argv)
    global PTXAS
    PTXAS = args.ptxas
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD), flush=True)
    parts = ([] if args.catalog_only else [examples]) + ([] if args.examples_only else [catalog])
    for part in parts:
        for row in part(set(args.names)):
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
