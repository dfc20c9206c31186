"""A CuTe DSL program compiled to a cubin on the CPU (no GPU, no dry run), and its SASS.

The DSL's own compiler makes the cubin ``cute.compile`` would load, with line information (the
Python lines); nvdisasm (PyPI) prints it. ``ptxas=True`` assembles the DSL's PTX again with the
PyPI ptxas instead (a pinned release, e.g. the one a team ships with), each PTX instruction
annotated with its own line, so that every SASS instruction maps to its PTX line exactly
(sass/ptxmap.py; the SASS is the same as without the annotation)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from dataclasses import dataclass

from . import tools


@dataclass(frozen=True)
class Compiled:
    ptx: str
    cubin: bytes
    arch: str
    assembler: str   # "the DSL's compiler (CUDA 13.4 NVVM)" or "ptxas release 13.2, V13.2.78"
    # --ptxas: PTX line -> (file, Python line, PTX text) of the annotated PTX (sass/ptxmap.py)
    ptx_table: dict | None = None


class CompileError(Exception):
    pass


KEEP_OPTIONS = " --keep-ptx --keep-cubin --generate-line-info"


def _ptx_release(ptx: str) -> str:
    for line in ptx.splitlines()[:8]:
        if "Cuda compilation tools" in line:
            return line.split("tools, ", 1)[-1].strip()
    return "unknown release"


def compile_jit(jit_fn, args, arch: str, ptxas: bool = False) -> Compiled:
    """Compile ``jit_fn(*args)`` for `arch` on the CPU; raise CompileError with the DSL's text."""
    import cutlass.cute as cute

    from ..frontend.trace import configured
    with configured(arch) as env, tempfile.TemporaryDirectory(prefix="warpspin-dump-") as dump:
        env.dryrun = False
        try:  # (the kept files go to `dump`, not the working directory; the artifacts hold them)
            compiled = cute.compile(jit_fn, *args, options=KEEP_OPTIONS + f" --dump-dir={dump}")
        except Exception as e:  # the DSL's rejection, in its words
            raise CompileError(f"{type(e).__name__}: {str(e).strip()[:2000]}") from e
    art = compiled.artifacts
    if not art.PTX or not art.CUBIN:
        raise CompileError("the DSL kept no PTX or cubin for this program")
    if not ptxas:
        return Compiled(art.PTX, bytes(art.CUBIN), arch,
                        f"the DSL's compiler ({_ptx_release(art.PTX)})")
    from .ptxmap import annotate
    annotated, table = annotate(art.PTX)
    return Compiled(art.PTX, assemble(annotated, arch), arch, f"ptxas {tools.version('ptxas')}",
                    table)


def assemble(ptx: str, arch: str) -> bytes:
    exe = tools.require("ptxas")
    with tempfile.TemporaryDirectory(prefix="warpspin-sass-") as tmp:
        src, out = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        run = subprocess.run([exe, f"-arch={arch}", "-lineinfo", src, "-o", out],
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise CompileError(f"ptxas failed: {run.stderr.strip()[:2000]}")
        with open(out, "rb") as f:
            return f.read()


def disassemble(cubin: bytes) -> str:
    """nvdisasm's listing of every kernel in `cubin`, with a `//## File` line before each
    instruction whose Python line changes."""
    exe = tools.require("nvdisasm")
    with tempfile.TemporaryDirectory(prefix="warpspin-sass-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        run = subprocess.run([exe, "-c", "-g", path], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise CompileError(f"nvdisasm failed: {run.stderr.strip()[:2000]}")
    return run.stdout


@contextlib.contextmanager
def capture(arch: str):
    """Compile for `arch` every program a library compiles inside the block (quack, flash-attn
    call ``cute.compile`` themselves), keeping PTX, cubin and line information; yields the list
    of `Compiled` it fills."""
    import cutlass.cute as cute

    from ..frontend.trace import configured
    plain = cute.compile
    out: list[Compiled] = []

    def compile_and_keep(*args, **kwargs):
        # TVM-FFI wants the launch stream of real GPU tensors: the cubin is the same without it
        options = (kwargs.get("options") or "").replace("--enable-tvm-ffi", "")
        kwargs["options"] = options + keep
        compiled = plain(*args, **kwargs)
        art = getattr(compiled, "artifacts", None)
        if art is None:
            return compiled
        if art.PTX and art.CUBIN:
            out.append(Compiled(art.PTX, bytes(art.CUBIN), arch,
                                f"the DSL's compiler ({_ptx_release(art.PTX)})"))
        return compiled

    with configured(arch) as env, tempfile.TemporaryDirectory(prefix="warpspin-dump-") as dump:
        env.dryrun = False
        keep = KEEP_OPTIONS + f" --dump-dir={dump}"
        cute.compile = compile_and_keep
        try:
            yield out
        finally:
            cute.compile = plain
