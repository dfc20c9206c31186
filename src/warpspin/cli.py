"""warpspin command line.

  warpspin check TARGET... [--arch sm_90a|sm_100a] [--param NAME=V|NAME=LO..HI|NAME=LO..]... [--json]
                 [--engine auto|hb|spin] [--properties deadlock,race] [--timeout S] [--memory MB] [--emit-promela DIR] [--no-reduce]
                 [--html FILE] [--sarif FILE|-] [--trace-json FILE] [--full-trace]
                 [--explain-verdict]
  warpspin sass TARGET... [--arch A] [--param ...] [--ptxas] [--json] [--html FILE] [--sarif FILE|-]
  warpspin sass --listing FILE --obligations FILE.toml   (a cuobjdump/nvdisasm listing, e.g. C++)
  warpspin explain [KIND]    what a violation kind means, an example and the usual fixes
  warpspin doctor            the versions of the DSL, SPIN and gcc; whether tracing works
  warpspin --version

TARGET is path/to/file.py:FUNC; FUNC() returns (jit_fn, args), a list of such pairs, or SyncIR
Kernel objects (checked directly). Exit status: 0 all verified, 1 a violation, 2 inconclusive or
unsupported, 3 bad input or an internal error (one line on stderr; WARPSPIN_TRACEBACK=1 adds the
traceback of an internal error).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys

from .api import CheckOptions, check_target, declared_arch
from .syncir.ir import UNBOUNDED
from .engine.portfolio import default_jobs
from .report.render import TRACE_LINES, render_text
from .report.result import exit_status


def parse_param(text: str) -> tuple[str, tuple[int, int]]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param {text!r}: expected NAME=V, NAME=LO..HI or "
                                         "NAME=LO..")
    name, value = text.split("=", 1)
    try:
        if ".." in value:
            lo, hi = value.split("..", 1)
            rng = (int(lo), UNBOUNDED if not hi.strip() else int(hi))
        else:
            rng = (int(value), int(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--param {text!r}: values must be integers") from None
    if rng[1] < rng[0]:
        raise argparse.ArgumentTypeError(f"--param {text!r}: empty range")
    return name.strip(), rng


BAD_INPUT = 3


class _Parser(argparse.ArgumentParser):
    """argparse with bad input reported in one line and exit status 3, as the README says."""

    def error(self, message: str):
        self.exit(BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(kind, least, what: str):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if v < least:
            raise argparse.ArgumentTypeError(f"{text!r}: {what}")
        return v
    parse.__name__ = kind.__name__
    return parse


def build_parser() -> argparse.ArgumentParser:
    from .doctor import version
    ap = _Parser(prog="warpspin", description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", action="version", version=f"warpspin {version()}")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="verify kernels: deadlocks and synchronization errors")
    c.add_argument("targets", nargs="+", metavar="TARGET", help="path/to/file.py:FUNC")
    c.add_argument("--arch", default=None, choices=["sm_90a", "sm_100a"],
                   help="the architecture to trace for (default: the ARCH the target's module "
                        "declares, else sm_90a)")
    c.add_argument("--param", action="append", type=parse_param, default=[],
                   metavar="NAME=V|NAME=LO..HI|NAME=LO..",
                   help="value or range of a launch parameter (LO..: every value from LO up, "
                        "decided by the happens-before engine's cutoff)")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page: the "
                   "interleaving as swimlanes, or the roles and barriers of a verified kernel")
    c.add_argument("--sarif", metavar="FILE", help="also write the findings as SARIF 2.1.0 (GitHub "
                   "code scanning, editors); - prints it as the only output on stdout")
    c.add_argument("--trace-json", metavar="FILE",
                   help="also write a counterexample as a Chrome/Perfetto trace (ui.perfetto.dev, "
                        "chrome://tracing): a track per warp, one for async copies, barrier "
                        "phases as counters")
    c.add_argument("--timeout", type=_number(float, 0.001, "the time limit must be positive"),
                   default=600.0, metavar="S", help="search time limit per kernel")
    c.add_argument("--memory", type=_number(int, 1, "the memory limit must be at least 1 MB"),
                   default=4096, metavar="MB", help="search memory limit per kernel")
    c.add_argument("--emit-promela", metavar="DIR", help="write each generated Promela model here")
    c.add_argument("--no-reduce", action="store_true", help="plain encoding: one Promela process per instance")
    c.add_argument("--print-syncir", action="store_true", help="print the extracted SyncIR")
    c.add_argument("--full-trace", action="store_true",
                   help="print every step of a counterexample (default: the last "
                        f"{TRACE_LINES} lines, instances of a role taking the same turn grouped)")
    c.add_argument("--explain-verdict", action="store_true",
                   help="with a verdict, what it rests on: the engine's cost, the reductions "
                        "applied and refused, why an engine was not used")
    c.add_argument("--no-load-races", dest="load_races", action="store_false",
                   help="SPIN leaves out races on stages TMA loads fill and wgmma or threads read "
                        "(they cost SPIN several times the states of a GEMM mainloop; the verdict "
                        "is then not VERIFIED); the happens-before engine checks them always")
    c.add_argument("--load-races", dest="load_races", action="store_true",
                   help="(the default) check those races with SPIN too")
    c.add_argument("--engine", default="auto", choices=["auto", "hb", "spin"],
                   help="hb: the happens-before engine (one execution per launch choice, "
                        "exact for kernels that synchronize the same way in every schedule); "
                        "spin: SPIN's exhaustive search; auto (default): hb, and SPIN for a "
                        "kernel outside its class")
    c.add_argument("--properties", type=_properties, default=("deadlock", "race"),
                   metavar="deadlock,race",
                   help="what VERIFIED must cover (default: both); a property the model does not "
                        "check on some object makes the verdict INCONCLUSIVE unless left out here")
    c.add_argument("--jobs", type=_number(int, 1, "at least one core"), default=default_jobs(),
                   metavar="N",
                   help="cores to use: the exhaustive search and, beside it, randomized bug hunts "
                        "(default: the cores available)")
    c.add_argument("--sass", action="store_true",
                   help="also compile each kernel to SASS on the CPU and check that ptxas kept "
                        "the orderings the model assumed (a reorder is error[reordered])")
    c.add_argument("--ptxas", action="store_true",
                   help="with --sass: assemble the DSL's PTX with the PyPI ptxas instead of the "
                        "DSL's own compiler")
    s = sub.add_parser("sass", help="check that the SASS keeps the orderings the model assumed "
                                    "(error[reordered] when ptxas moved an access across one)")
    s.add_argument("targets", nargs="*", metavar="TARGET", help="path/to/file.py:FUNC")
    s.add_argument("--listing", metavar="FILE", help="a cuobjdump -sass / nvdisasm listing to "
                   "check instead (with --obligations)")
    s.add_argument("--obligations", metavar="FILE", help="TOML: the [[obligation]]s a --listing "
                   "must keep (docs/sass.md)")
    s.add_argument("--arch", default=None, choices=["sm_90a", "sm_100a"])
    s.add_argument("--param", action="append", type=parse_param, default=[],
                   metavar="NAME=V|NAME=LO..HI")
    s.add_argument("--ptxas", action="store_true", help="assemble with the PyPI ptxas instead "
                   "of the DSL's own compiler")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--html", metavar="FILE", help="also write an HTML page")
    s.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (- : stdout)")
    e = sub.add_parser("explain", help="what a violation kind means, a minimal example and the "
                                       "usual fixes")
    e.add_argument("kind", nargs="?", metavar="KIND", help="a kind a report names, e.g. race")
    sub.add_parser("doctor", help="the versions of what warpspin needs (the CuTe DSL, SPIN, "
                                  "gcc) and whether tracing works")
    return ap


def explain(kind: str | None) -> int:
    from .report.explain import kinds, page
    if kind is None:
        print("warpspin explain KIND, for KIND one of:\n  " + "\n  ".join(kinds()))
        return 0
    text = page(kind)
    if text is None:
        print(f"warpspin explain: no page for {kind!r}; the kinds are: {', '.join(kinds())}",
              file=sys.stderr)
        return 3
    print(text, end="")
    return 0


def _properties(text: str) -> tuple[str, ...]:
    from .syncir import PROPERTIES
    got = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not got or set(got) - set(PROPERTIES):
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of "
                                         f"{', '.join(PROPERTIES)}")
    return got


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (`warpspin explain | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C outside a search (a search returns what it searched)
        print("warpspin: interrupted (Ctrl-C) before a verdict", file=sys.stderr)
        return 2
    except Exception as e:  # a bug of warpspin's: one line, never a traceback posing as a verdict
        from .api import _internal
        if os.environ.get("WARPSPIN_TRACEBACK"):
            import traceback
            traceback.print_exc()
        print(f"warpspin: {_internal(e)}", file=sys.stderr)
        return BAD_INPUT


def _show_progress(p) -> None:
    """One status line on the terminal, rewritten in place (cleared before the verdict)."""
    sys.stderr.write("\r\033[K  " + p.line())
    sys.stderr.flush()


def _clear_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


@contextlib.contextmanager
def _stdout_to_stderr(on: bool):
    """While `on`: whatever the checks print (the user's FUNC, a library, a subprocess) goes to
    stderr, so that stdout carries one document: Python's sys.stdout, and file descriptor 1 for
    writes below Python."""
    if not on:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _params_in_no_target(args, results) -> list[str]:
    """With several targets, a --param name no checked kernel has (a typo, not another
    target's value)."""
    if len(args.targets) < 2 or not args.param:
        return []
    extracted = [r for r in results if "params_not_in_kernel" in r.config]
    return [n for n in dict.fromkeys(name for name, _ in args.param) if extracted and all(
        n in r.config.get("params_not_in_kernel", ()) for r in extracted)]


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "explain":
        return explain(args.kind)
    if args.command == "doctor":
        from .doctor import checks, report
        text, ok = report(checks())
        print(text, end="")
        return 0 if ok else 2
    if args.command == "sass":
        return _sass(args)
    if args.json and args.sarif == "-":
        print("warpspin check: error: --json and --sarif - both want stdout; write the SARIF to "
              "a file", file=sys.stderr)
        return BAD_INPUT
    for flag, path in (("--html", args.html), ("--sarif", args.sarif),
                       ("--trace-json", args.trace_json)):
        folder = os.path.dirname(os.path.abspath(path)) if path and path != "-" else None
        if folder is not None and not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
            print(f"warpspin check: error: {flag} {path}: no writable folder {folder}",
                  file=sys.stderr)
            return BAD_INPUT
    opts = CheckOptions(params=dict(args.param), timeout_s=args.timeout,
                        memory_mb=args.memory, emit_promela=args.emit_promela,
                        reduce=not args.no_reduce, jobs=args.jobs,
                        load_races=args.load_races, engine=args.engine,
                        properties=args.properties,
                        unknown_params="ignore" if len(args.targets) > 1 else "error",
                        sass=args.sass, ptxas=args.ptxas)
    from .pipeline import INTERRUPTED
    if not args.json and sys.stderr.isatty():
        from .engine.progress import REPORTER
        REPORTER.set(_show_progress)
    document = args.json or args.sarif == "-"
    results = []
    with _stdout_to_stderr(document):
        for target in args.targets:
            arch = args.arch or declared_arch(target) or "sm_90a"
            for r in check_target(target, dataclasses.replace(opts, arch=arch)):
                results.append(r)
                _clear_progress()
                if not args.json:
                    if args.print_syncir and getattr(r, "syncir_text", ""):
                        print(r.syncir_text)
                    print(render_text(r, full_trace=args.full_trace,
                                      explain=args.explain_verdict), flush=True)
                if any(INTERRUPTED in reason for reason in r.reasons):
                    break  # Ctrl-C: no further kernel
            else:
                continue
            break
    unused = _params_in_no_target(args, results)
    if unused:
        print(f"warpspin check: error: --param {', '.join(unused)}: no kernel of the targets has "
              "a launch value of that name", file=sys.stderr)
        return BAD_INPUT
    from .report.sarif import to_sarif, write_sarif
    if document:
        doc = {"targets": [r.to_dict() for r in results]} if args.json else to_sarif(results)
        print(json.dumps(doc, indent=2), flush=True)
    from .report.html import write_html
    from .report.perfetto import write_trace
    for path, write in ((args.html, write_html), (args.sarif, write_sarif),
                        (args.trace_json, write_trace)):
        if path and path != "-":
            try:
                write(results, path)
            except OSError as e:
                print(f"warpspin: cannot write {path}: {e.strerror or e}", file=sys.stderr)
                return 3
    return exit_status(results)


def _sass(args) -> int:
    from .api import sass_target
    from .sass.run import check_listing
    if bool(args.listing) != bool(args.obligations) or bool(args.listing) == bool(args.targets):
        print("warpspin sass: error: give TARGETs, or --listing FILE with --obligations FILE",
              file=sys.stderr)
        return BAD_INPUT
    if args.json and args.sarif == "-":
        print("warpspin sass: error: --json and --sarif - both want stdout", file=sys.stderr)
        return BAD_INPUT
    document = args.json or args.sarif == "-"
    results = []
    with _stdout_to_stderr(document):
        if args.listing:
            results = check_listing(args.listing, args.obligations)
        for target in args.targets:
            arch = args.arch or declared_arch(target) or "sm_90a"
            opts = CheckOptions(arch=arch, params=dict(args.param), ptxas=args.ptxas)
            results += sass_target(target, opts)
        if not document:
            for r in results:
                print(render_text(r), flush=True)
    from .report.sarif import to_sarif, write_sarif
    from .report.html import write_html
    if document:
        doc = {"targets": [r.to_dict() for r in results]} if args.json else to_sarif(results)
        print(json.dumps(doc, indent=2), flush=True)
    for path, write in ((args.html, write_html), (args.sarif, write_sarif)):
        if path and path != "-":
            try:
                write(results, path)
            except OSError as e:
                print(f"warpspin: cannot write {path}: {e.strerror or e}", file=sys.stderr)
                return BAD_INPUT
    return exit_status(results)


if __name__ == "__main__":
    sys.exit(main())
