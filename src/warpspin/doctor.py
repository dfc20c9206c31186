"""`warpspin doctor`: what warpspin needs on this machine, found or not, and the one command that
installs each missing part. `warpspin --version` prints warpspin's version alone."""
from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata

DSL_PACKAGE = "nvidia-cutlass-dsl"
DSL_PIN = "4.8.1"  # the version CI traces with (pyproject's `dsl` extra)


@dataclass(frozen=True)
class Check:
    name: str
    found: str | None   # version or what was found; None: missing or broken
    fix: str = ""       # the command that installs it
    why: str = ""       # what failed, when something is there but does not work


def version() -> str:
    try:
        return metadata.version("warpspin")
    except metadata.PackageNotFoundError:
        return "unknown (not installed as a package)"


def dsl_version() -> str | None:
    """The installed nvidia-cutlass-dsl's version, or None."""
    try:
        return metadata.version(DSL_PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def _first_line(cmd: list[str]) -> str | None:
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


def _trace_works() -> tuple[str | None, str]:
    """Trace a one-barrier kernel with the DSL on the CPU and extract it."""
    try:
        from .doctor_kernel import launch
        from .extract import extract
        from .frontend import trace

        k = extract(trace(launch)[0])
        return f"traced and extracted a test kernel ({len(k.processes)} process)", ""
    except Exception as e:  # noqa: BLE001  (a report of what failed, not a verdict)
        return None, f"{type(e).__name__}: {e}"[:300]


def checks(trace: bool = True) -> list[Check]:
    dsl = dsl_version()
    out = [Check("warpspin", version()),
           Check("python", platform.python_version()),
           Check(f"CuTe DSL ({DSL_PACKAGE})", dsl,
                 f"python -m pip install '{DSL_PACKAGE}=={DSL_PIN}'"),
           Check("SPIN", _first_line(["spin", "-V"]), "apt-get install -y spin"),
           Check("gcc (compiles SPIN's verifiers)", _first_line(["gcc", "--version"]),
                 "apt-get install -y gcc")]
    from .sass import tools
    for name, wheel in (("ptxas", "nvidia-cuda-nvcc"), ("nvdisasm", "nvidia-cuda-nvdisasm")):
        out.append(Check(f"{name} (warpspin sass)", tools.version(name),
                         f"python -m pip install '{wheel}=={tools.PTXAS_PIN}'"))
    if trace and dsl is not None:
        found, why = _trace_works()
        out.append(Check("tracing on the CPU", found, why=why))
    return out


def report(items: list[Check]) -> tuple[str, bool]:
    """(the text, whether everything needed is there and works)."""
    lines, ok = [], True
    width = max(len(c.name) for c in items)
    for c in items:
        if c.found is not None:
            lines.append(f"  ok       {c.name:<{width}}  {c.found}")
            continue
        ok = False
        state = "broken " if c.why else "missing"
        lines.append(f"  {state}  {c.name:<{width}}  " + (c.why or "not found"))
        if c.fix:
            lines.append(f"  {'':7}  {'':<{width}}  help: {c.fix}")
    head = "warpspin doctor: everything warpspin needs is here" if ok else \
        "warpspin doctor: something warpspin needs is missing or broken"
    return "\n".join([head, *lines]) + "\n", ok
