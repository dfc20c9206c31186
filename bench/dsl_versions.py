"""Bench: warpspin with every CuTe DSL release and Python, on the DSL examples.

    python bench/dsl_versions.py [--versions 4.4.0,4.8.1] [--pythons 3.12,3.13]
                                 [--examples FILE[:NAME] ...] [--cache DIR] [--timeout S]

For each (python, dsl) it makes a virtualenv under the cache directory (reused when there),
installs ``nvidia-cutlass-dsl==DSL`` and warpspin from this tree (editable, no dependencies:
warpspin has none), then runs ``warpspin check --json --timeout S --jobs 1`` on every target of
the DSL examples (files that import ``cutlass``; ``examples/syncir_ring.py`` is pure SyncIR) and
of ``examples/portable/``, and compares each target's verdict, violation kinds and the first
location of the first violation (file and line) with the reference: the same run in this tree's
``.venv`` (DSL 4.8.1, Python 3.11), cached per tree.  It prints a markdown table.

A target counts as *needs a newer DSL* (not a disagreement) when the DSL release itself rejects
the example: the file imports a module the release lacks, or tracing fails in the example's own
code (a function or keyword argument the release does not have).  The examples are written in
4.8's API; ``examples/portable/`` uses the API every release since 4.4 has.  Two names that
moved in 4.8 are aliased for older releases so the examples reach their kernels there:
``cutlass.memory`` (``SmemAllocator``, from ``cutlass.utils``) and ``cutlass.tensor_utils``
(``TensorMapManager``, ``TensorMapUpdateMode``, from ``cutlass.utils``); ``--no-aliases`` turns
that off.  A Python that a release ships no wheel for is reported as *no wheel*.

The same file, run with ``--list-targets`` or ``--cli`` by the virtualenv's Python, lists the
targets of some files or runs warpspin's command line (with the aliases); the driver uses both.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = os.path.abspath(__file__)
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "warpspin-dsl")
DEFAULT_VERSIONS = "4.4.0,4.5.3,4.6.3,4.7.1,4.8.1"
DEFAULT_PYTHONS = "3.12"
REFERENCE = ("3.11", "4.8.1")  # what this tree's .venv has (make setup)
PIP_TIMEOUT = 900


# -- inside a virtualenv: list targets, run the CLI ----------------------------------------------
def _alias_moved_names() -> None:
    """4.8 moved SmemAllocator to cutlass.memory and the tensormap manager to
    cutlass.tensor_utils; older releases have both in cutlass.utils."""
    import types

    import cutlass
    try:
        import cutlass.memory  # noqa: F401
    except ImportError:
        import cutlass.utils as u
        m = types.ModuleType("cutlass.memory")
        m.SmemAllocator = u.SmemAllocator
        sys.modules["cutlass.memory"] = m
        cutlass.memory = m
    try:
        import cutlass.tensor_utils  # noqa: F401
    except ImportError:
        import cutlass.utils as u
        m = types.ModuleType("cutlass.tensor_utils")
        for name in ("TensorMapManager", "TensorMapUpdateMode"):
            if hasattr(u, name):
                setattr(m, name, getattr(u, name))
        sys.modules["cutlass.tensor_utils"] = m
        cutlass.tensor_utils = m


def _list_targets(files: list[str], aliases: bool) -> list[dict]:
    """[{file, name, params} | {file, error}] for the given example files."""
    if aliases:
        _alias_moved_names()
    from warpspin.demo import _module

    out = []
    for path in files:
        try:
            mod = _module(path)
        except ValueError as e:
            out.append({"file": path, "error": str(e)})
            continue
        names = getattr(mod, "TARGETS", None) or list(getattr(mod, "VARIANTS", {}))
        for name in names:
            params = getattr(mod, "PARAMS", {}).get(name, {})
            out.append({"file": path, "name": name,
                        "params": {k: list(v) for k, v in params.items()}})
    return out


def _inside(argv: list[str]) -> int:
    aliases = "--no-aliases" not in argv
    argv = [a for a in argv if a != "--no-aliases"]
    if argv[0] == "--list-targets":
        print(json.dumps(_list_targets(argv[1:], aliases)))
        return 0
    if aliases:  # --cli
        _alias_moved_names()
    from warpspin.cli import main
    return main(argv[1:])


# -- the driver ----------------------------------------------------------------------------------
def find_python(version: str) -> Optional[str]:
    """An interpreter for ``version`` (e.g. "3.12"): pyenv's, ``pythonX.Y`` on PATH, or the one
    running this when it is that version."""
    for exe in sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python")),
                      reverse=True):
        if os.access(exe, os.X_OK):
            return exe
    exe = shutil.which(f"python{version}")
    if exe is None and version == f"{sys.version_info.major}.{sys.version_info.minor}":
        exe = getattr(sys, "_base_executable", None) or sys.executable
    return exe


def venv_python(cache: str, py: str, dsl: str) -> str:
    return os.path.join(cache, f"py{py}-dsl{dsl}", "bin", "python")


def _pip(python: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           *args], capture_output=True, text=True, timeout=PIP_TIMEOUT)


def _no_wheel(text: str) -> bool:
    return bool(re.search(r"No matching distribution found|Could not find a version that "
                          r"satisfies|is not a supported wheel on this platform", text))


def ensure_venv(cache: str, py: str, dsl: str, root: str = ROOT) -> tuple[Optional[str], str]:
    """(the virtualenv's python, "ok") once nvidia-cutlass-dsl==dsl and warpspin (editable, from
    ``root``) are installed in it; (None, why) otherwise: "no python", "no wheel", or the
    failing step's last lines.  An existing virtualenv is reused; a stamp file says what it
    holds, and warpspin is reinstalled when it pointed at another tree."""
    base = find_python(py)
    if base is None:
        return None, f"no python {py}"
    d = os.path.dirname(os.path.dirname(venv_python(cache, py, dsl)))
    exe = venv_python(cache, py, dsl)
    stamp = os.path.join(d, ".warpspin-dsl")
    want = json.dumps({"dsl": dsl, "root": os.path.abspath(root)})
    if os.path.isfile(stamp) and open(stamp).read() == want and os.access(exe, os.X_OK):
        return exe, "ok"
    os.makedirs(cache, exist_ok=True)
    if not os.access(exe, os.X_OK):
        r = subprocess.run([base, "-m", "venv", d], capture_output=True, text=True)
        if r.returncode:
            return None, f"venv failed: {(r.stderr or r.stdout).strip()[-300:]}"
    if subprocess.run([exe, "-c", f"import importlib.metadata as m; "
                       f"assert m.version('nvidia-cutlass-dsl') == {dsl!r}"],
                      capture_output=True).returncode:
        r = _pip(exe, f"nvidia-cutlass-dsl=={dsl}")
        if r.returncode:
            text = r.stderr + r.stdout
            return None, "no wheel" if _no_wheel(text) else \
                "pip failed: " + " / ".join(text.strip().splitlines()[-3:])[-300:]
    r = _pip(exe, "--no-deps", "-e", os.path.abspath(root))
    if r.returncode:
        return None, "installing warpspin failed: " + (r.stderr or r.stdout).strip()[-300:]
    with open(stamp, "w") as f:
        f.write(want)
    return exe, "ok"


def dsl_example_files(paths: list[str]) -> list[str]:
    """The files among ``paths`` (files or directories) that import the CuTe DSL."""
    out = []
    for p in paths:
        files = sorted(glob.glob(os.path.join(p, "*.py"))) if os.path.isdir(p) else [p]
        for f in files:
            if os.path.basename(f).startswith("_"):
                continue
            text = open(f, encoding="utf-8").read()
            if re.search(r"^\s*(import|from)\s+cutlass\b", text, re.M):
                out.append(os.path.relpath(f, ROOT) if os.path.isabs(f) else f)
    return out


def default_examples() -> list[str]:
    return dsl_example_files([os.path.join(ROOT, "examples"),
                              os.path.join(ROOT, "examples", "portable")])


@dataclass
class Outcome:
    """What warpspin said about one target."""

    verdict: str            # the first violation's kind, else the verdict
    kinds: tuple = ()       # every violation kind, sorted
    where: str = ""         # file:line of the first violation's first location
    reason: str = ""        # the first reason (errors, unsupported)
    dsl_rejects: bool = False  # the DSL release itself rejects the example (needs a newer one)

    def key(self) -> tuple:
        return (self.verdict, self.kinds, self.where)

    def show(self) -> str:
        return f"{self.verdict}{' at ' + self.where if self.where else ''}"


# what a DSL release says about an example written for a newer one (the test on the location
# below keeps warpspin's own failures out: those are "internal error" or carry no location)
_REJECT = re.compile(r"has no attribute|unexpected keyword argument|No module named 'cutlass|"
                     r"cannot import name|the file needs a newer release|"
                     r"encountered a user-defined Python object|"
                     r"AttributeError: [A-Za-z_]\w*\s*$")  # an Enum member, as 3.11 says it


def outcome(result: dict, example_file: str) -> Outcome:
    vs = result.get("violations") or []
    reasons = result.get("reasons") or []
    where = ""
    if vs and vs[0].get("locations"):
        loc = vs[0]["locations"][0]
        where = f"{os.path.basename(loc.get('file') or '?')}:{loc.get('line')}"
    reason = reasons[0] if reasons else ""
    rejects = False
    if result.get("verdict") == "error":
        locs = result.get("reason_locations") or []
        in_example = any(os.path.abspath(l.get("file") or "") == os.path.abspath(example_file)
                         for l in locs)
        rejects = bool(_REJECT.search(reason)) and "internal error" not in reason and \
            ("importing it failed" in reason or in_example)
    return Outcome(vs[0]["kind"] if vs else result.get("verdict", "?"),
                   tuple(sorted({v["kind"] for v in vs})), where, reason, rejects)


def _cli_args(t: dict) -> list[str]:
    args = []
    for k, (lo, hi) in sorted(t.get("params", {}).items()):
        args += ["--param", f"{k}={lo}" if lo == hi else f"{k}={lo}..{hi}"]
    return args


def run_targets(python: str, selected: list[str], timeout: float, aliases: bool = True,
                log=None) -> dict[str, Outcome]:
    """target ("file:name") -> Outcome, with ``python`` (a virtualenv's); ``selected`` holds
    files or file:name targets.  One ``warpspin check`` per option set (``--param``)."""
    files = sorted({s if s.endswith(".py") else s.rsplit(":", 1)[0] for s in selected})
    only = {s for s in selected if not s.endswith(".py")}
    extra = [] if aliases else ["--no-aliases"]
    r = subprocess.run([python, THIS, "--list-targets", *extra, *files], capture_output=True,
                       text=True, cwd=ROOT)
    if r.returncode:
        raise RuntimeError(f"listing targets failed: {(r.stderr or r.stdout)[-2000:]}")
    out: dict[str, Outcome] = {}
    groups: dict[tuple, list[str]] = {}
    for t in json.loads(r.stdout.strip().splitlines()[-1]):
        if "error" in t:
            reason = t["error"]
            out[f"{t['file']}:*"] = Outcome("error", (), "", reason, bool(_REJECT.search(reason)))
            continue
        target = f"{t['file']}:{t['name']}"
        if only and target not in only and t["file"] not in selected:
            continue
        groups.setdefault(tuple(_cli_args(t)), []).append(target)
    for args, targets in groups.items():  # one DSL import per option set
        cmd = [python, THIS, "--cli", *extra, "check", "--json", "--timeout", str(timeout),
               "--jobs", "1", *args, *targets]
        if log:
            log(f"  {' '.join(os.path.basename(c) if c in (python, THIS) else c for c in cmd)}")
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                           timeout=timeout * (len(targets) + 1) + 300)
        try:
            results = json.loads(r.stdout)["targets"]
        except (ValueError, KeyError):
            for t in targets:
                out[t] = Outcome("error", (), "", f"warpspin check exited {r.returncode} without "
                                 f"JSON: {(r.stderr or r.stdout).strip()[-300:]}")
            continue
        for res in results:
            t = res.get("target", "")
            o = outcome(res, t.rsplit(":", 1)[0])
            prev = out.get(t)
            # several kernels in one target: keep the worst (a violation or error wins)
            if prev is None or (prev.verdict == "verified" and o.verdict != "verified"):
                out[t] = o
    return out


def _tree_hash(files: list[str]) -> str:
    h = hashlib.sha256()
    for f in sorted(glob.glob(os.path.join(ROOT, "src", "warpspin", "**", "*.py"), recursive=True)
                    + [os.path.join(ROOT, f) for f in files] + [THIS]):
        h.update(f.encode())
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def reference(selected: list[str], timeout: float, cache: str, python: Optional[str] = None,
              log=None) -> dict[str, Outcome]:
    """The reference outcomes: ``python``'s (default: this tree's .venv, DSL 4.8.1, Python
    3.11), cached under ``cache`` per tree state (warpspin's sources, the example files),
    interpreter and selection."""
    if python is None:
        python = os.path.join(ROOT, ".venv", "bin", "python")
        if not os.access(python, os.X_OK):
            python = sys.executable
    files = sorted({s if s.endswith(".py") else s.rsplit(":", 1)[0] for s in selected})
    key = hashlib.sha256(json.dumps([_tree_hash(files), sorted(selected), timeout,
                                     os.path.realpath(python)]).encode())
    path = os.path.join(cache, f"reference-{key.hexdigest()[:16]}.json")
    if os.path.isfile(path):
        with open(path) as f:
            return {t: Outcome(**{**o, "kinds": tuple(o["kinds"])}) for t, o in json.load(f).items()}
    got = run_targets(python, selected, timeout, log=log)
    os.makedirs(cache, exist_ok=True)
    with open(path, "w") as f:
        json.dump({t: o.__dict__ for t, o in got.items()}, f)
    return got


@dataclass
class Row:
    python: str
    dsl: str
    status: str = "ok"               # ok, no wheel, no python, an install error
    targets: int = 0
    agree: list[str] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)        # "target: ref -> got"
    needs_newer: list[str] = field(default_factory=list)   # "target: why"
    setup_s: float = 0.0
    check_s: float = 0.0


def compare(ref: dict[str, Outcome], got: dict[str, Outcome], row: Row) -> None:
    whole = {t[:-2]: o for t, o in got.items() if t.endswith(":*")}  # a file that fails to load
    for t in sorted((set(ref) | set(got)) - {t for t in got if t.endswith(":*")}):
        r, g = ref.get(t), got.get(t)
        if g is None:
            g = whole.get(t.rsplit(":", 1)[0])
        row.targets += 1
        if g is not None and g.dsl_rejects:
            row.needs_newer.append(f"{t}: {g.reason[:160]}")
        elif r is not None and g is not None and r.key() == g.key():
            row.agree.append(t)
        else:
            row.differ.append(f"{t}: {r.show() if r else 'absent'} -> "
                              f"{(g.show() + (' (' + g.reason[:160] + ')' if g.reason else '')) if g else 'absent'}")


def run_config(py: str, dsl: str, selected: list[str], ref: dict[str, Outcome], cache: str,
               timeout: float, aliases: bool = True, log=None) -> Row:
    row = Row(py, dsl)
    t0 = time.perf_counter()
    python, status = ensure_venv(cache, py, dsl)
    row.setup_s = time.perf_counter() - t0
    if python is None:
        row.status = status
        return row
    t1 = time.perf_counter()
    got = run_targets(python, selected, timeout, aliases, log=log)
    row.check_s = time.perf_counter() - t1
    compare(ref, got, row)
    return row


def _short(t: str) -> str:
    return t.replace("examples/portable/", "portable/").replace("examples/", "")


def table(rows: list[Row]) -> str:
    head = ["python", "dsl", "targets", "agree", "differ", "needs a newer DSL", "setup s",
            "check s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.status != "ok":
            lines.append(f"| {r.python} | {r.dsl} | {r.status} | | | | {r.setup_s:.0f} | |")
            continue
        differ = f"{len(r.differ)}" + (": " + "; ".join(_short(d) for d in r.differ) if r.differ else "")
        newer = f"{len(r.needs_newer)}" + (
            " (" + ", ".join(sorted({_short(x.split(":")[0]) for x in r.needs_newer})) + ")"
            if r.needs_newer else "")
        lines.append(f"| {r.python} | {r.dsl} | {r.targets} | {len(r.agree)} | {differ} | "
                     f"{newer} | {r.setup_s:.0f} | {r.check_s:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("--list-targets", "--cli"):
        return _inside(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", default=DEFAULT_VERSIONS, help="nvidia-cutlass-dsl versions")
    ap.add_argument("--pythons", default=DEFAULT_PYTHONS, help="Python versions (X.Y)")
    ap.add_argument("--examples", nargs="+", metavar="FILE[:NAME]",
                    help="example files or targets (default: the DSL examples and "
                         "examples/portable/)")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help="where the virtualenvs live")
    ap.add_argument("--timeout", type=float, default=120.0, help="search time limit per kernel")
    ap.add_argument("--no-aliases", action="store_true",
                    help="do not alias 4.8's moved names (cutlass.memory, cutlass.tensor_utils)")
    ap.add_argument("--details", action="store_true", help="also list each disagreement and "
                    "each example a release rejects")
    args = ap.parse_args(argv)
    selected = args.examples or default_examples()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    log(f"reference: .venv (python {REFERENCE[0]}, nvidia-cutlass-dsl {REFERENCE[1]})")
    t0 = time.perf_counter()
    ref = reference(selected, args.timeout, args.cache, log=log)
    log(f"reference: {len(ref)} targets, {time.perf_counter() - t0:.0f} s")
    rows = []
    for py in args.pythons.split(","):
        for dsl in args.versions.split(","):
            log(f"python {py}, nvidia-cutlass-dsl {dsl}")
            row = run_config(py.strip(), dsl.strip(), selected, ref, args.cache, args.timeout,
                             not args.no_aliases, log=log)
            log(f"  {row.status}: {len(row.agree)} agree, {len(row.differ)} differ, "
                f"{len(row.needs_newer)} need a newer DSL ({row.setup_s:.0f} s setup, "
                f"{row.check_s:.0f} s checks)")
            rows.append(row)
    print(table(rows))
    if args.details:
        for r in rows:
            for d in r.differ:
                print(f"- differ, python {r.python}, dsl {r.dsl}: {d}")
            for d in r.needs_newer:
                print(f"- needs a newer DSL, python {r.python}, dsl {r.dsl}: {d}")
    return 1 if any(r.differ for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
