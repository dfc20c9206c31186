"""MLIR locations (as produced by the DSL with ``loc_tracebacks``) -> ``SourceLoc``.

With tracebacks on, every op's location is a chain ``CallSite(callee=Name(func)(File), caller=...)``
innermost first, possibly wrapped in ``Name(label)(...)`` for ``Scope`` / pipeline ``name=``
labels.  We flatten the chain into frames, then pick the user frame (first frame outside the DSL
package and the standard library) and the DSL API frames between the op and it.
"""
from __future__ import annotations

import os
import re
import sysconfig

from .mlir_data import Frame, SourceLoc, UNKNOWN_LOC

_DSL_MARK = f"{os.sep}nvidia_cutlass_dsl{os.sep}"
_STDLIB = tuple(
    p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")} if p
)
_WRAPPER_FILES = {"typing_extensions.py"}  # decorator wrappers (e.g. @deprecated) between frames
# Libraries that patch the DSL's own classes in place when imported: their wrappers sit between a
# DSL API and whoever called it (quack's ``quack.dsl`` replaces ``Tensor.__getitem__``), so
# without this a kernel's locations would depend on whether quack had been imported.
_DSL_SHIMS = (f"{os.sep}quack{os.sep}dsl{os.sep}",)
_THIS_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../warpspin

# DSL internals that only carry tracing (AST rewriting, op wrappers): never a "library call".
_PLUMBING_DIRS = ("/base_dsl/", "/cutlass_dsl/", "/_mlir_helpers/", "/_mlir/")
# Names the DSL's AST preprocessor gives to staged control-flow bodies.
_SYNTH = re.compile(
    r"^(loop_body|while_region|if_region|then_block|else_block|ifexp_then_block|ifexp_else_block"
    r"|while_before_block|while_after_block)_\d+$"
)


def is_dsl_file(path: str) -> bool:
    return _DSL_MARK in path


def _is_foreign(path: str) -> bool:
    """Frames that are neither user code nor DSL API: stdlib, frozen modules, warpspin itself.
    Installed libraries (site-packages, e.g. quack) are user code: in a venv ``platstdlib`` is
    the venv's ``lib/pythonX.Y``, a prefix of its site-packages."""
    return (
        path.startswith("<")
        or (any(path.startswith(p) for p in _STDLIB) and f"{os.sep}site-packages{os.sep}" not in path)
        or path.startswith(_THIS_PKG)
        or os.path.basename(path) in _WRAPPER_FILES
        or any(d in path for d in _DSL_SHIMS)
    )


def clean_func(qualname: str) -> str:
    """``kern.<locals>.loop_body_2.<locals>.if_region_3`` -> ``kern``."""
    parts = [p for p in qualname.split(".<locals>.") if not _SYNTH.match(p)]
    return ".<locals>.".join(parts) if parts else qualname


def flatten(loc) -> tuple[list[Frame], list[str]]:
    """(frames innermost first, labels outermost first) of an ``ir.Location``."""
    if not hasattr(loc, "is_a_callsite"):  # DSL 4.4's bindings: no accessors, read the text
        return flatten_text(str(loc))
    frames: list[Frame] = []
    labels: list[str] = []

    def rec(l) -> None:
        if l.is_a_callsite():
            rec(l.callee)
            rec(l.caller)
        elif l.is_a_name():
            child = l.child_loc
            if child.is_a_file():  # a frame: Name(qualname)(file:line:col)
                frames.append(_frame(l.name_str, child))
            else:  # a label wrapped around the rest of the chain
                labels.append(l.name_str)
                rec(child)
        elif l.is_a_file():
            frames.append(_frame("", l))
        elif l.is_a_fused():
            for sub in l.locations:
                rec(sub)

    rec(loc)
    return frames, labels


class _LocText:
    """A parser for MLIR's printed locations, ``loc(callsite("f"("a.py":3:4) at ...))``:
    ``unknown``, ``"file":line:col[ to [line]:col]``, ``"name"[(child)]``,
    ``callsite(callee at caller)``, ``fused[<meta>][a, b, ...]``."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.frames: list[Frame] = []
        self.labels: list[str] = []

    def _ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\n":
            self.i += 1

    def _eat(self, tok: str) -> bool:
        self._ws()
        if self.s.startswith(tok, self.i):
            self.i += len(tok)
            return True
        return False

    def _need(self, tok: str) -> None:
        if not self._eat(tok):
            raise ValueError(f"expected {tok!r} at {self.i} in {self.s[:200]!r}")

    def _string(self) -> str:
        self._need('"')
        out = bytearray()
        s = self.s
        while s[self.i] != '"':
            c = s[self.i]
            if c == "\\":
                nxt = s[self.i + 1]
                if nxt in '"\\':
                    out += nxt.encode()
                    self.i += 2
                elif nxt == "n":
                    out += b"\n"
                    self.i += 2
                elif nxt == "t":
                    out += b"\t"
                    self.i += 2
                else:  # \XX: a hex byte
                    out.append(int(s[self.i + 1:self.i + 3], 16))
                    self.i += 3
            else:
                out += c.encode()
                self.i += 1
        self.i += 1
        return out.decode("utf-8", "replace")

    def _int(self) -> int:
        self._ws()
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        return int(self.s[j:self.i] or 0)

    def _file_rest(self, path: str) -> tuple[int, int]:
        """After ``"path"``: ``:line:col`` and an optional range end."""
        line = col = 0
        if self._eat(":"):
            line = self._int()
            if self._eat(":"):
                col = self._int()
        if self._eat("to"):
            if self._eat(":"):
                self._int()
            else:
                self._int()
                if self._eat(":"):
                    self._int()
        return line, col

    def loc(self) -> None:
        """One location; frames and labels in the order ``flatten`` gives them."""
        self._ws()
        if self._eat("callsite("):
            self.loc()
            self._need("at")
            self.loc()
            self._need(")")
        elif self._eat("fused"):
            if self._eat("<"):
                depth = 1
                while depth:
                    c = self.s[self.i]
                    depth += (c == "<") - (c == ">")
                    self.i += 1
            self._need("[")
            if not self._eat("]"):
                self.loc()
                while self._eat(","):
                    self.loc()
                self._need("]")
        elif self._eat("unknown"):
            pass
        elif self.s.startswith('"', self.i):
            text = self._string()
            self._ws()
            if self.s.startswith(":", self.i):  # a file location
                line, col = self._file_rest(text)
                self.frames.append(Frame("", text, line, col, is_dsl_file(text)))
            elif self._eat("("):
                j = self.i
                self._ws()
                child_file = None
                if self.s.startswith('"', self.i):  # Name(File) is a frame, else a label
                    path = self._string()
                    self._ws()
                    if self.s.startswith(":", self.i):
                        line, col = self._file_rest(path)
                        if self._eat(")"):
                            child_file = (path, line, col)
                if child_file is not None:
                    path, line, col = child_file
                    self.frames.append(Frame(text, path, line, col, is_dsl_file(path)))
                else:
                    self.i = j
                    self.labels.append(text)
                    self.loc()
                    self._need(")")
            else:
                self.labels.append(text)
        else:
            raise ValueError(f"unknown location syntax at {self.i} in {self.s[:200]!r}")


def flatten_text(text: str) -> tuple[list[Frame], list[str]]:
    """``flatten`` for a location given as text (``loc(...)``); what cannot be parsed gives no
    frames (the op's location is then unknown, as MLIR's ``unknown``)."""
    t = text.strip()
    if t.startswith("loc(") and t.endswith(")"):
        t = t[4:-1]
    p = _LocText(t)
    try:
        p.loc()
    except (ValueError, IndexError):
        return [], []
    return p.frames, p.labels


def _frame(func: str, floc) -> Frame:
    path = floc.filename
    return Frame(func, path, floc.start_line, floc.start_col, is_dsl_file(path))


SYNC_LABEL = "sync:"  # a label the frontend adds: the pipeline barrier an op names
_SYNC_OBJECT = re.compile(r"\bsync_object_(\w+)\b")  # CUTLASS pipelines' attributes


def sync_object(frames: list[Frame]) -> str | None:
    """The pipeline barrier an op's library call chain names: the pipeline class and the role
    that the library's own source line gives (`self.sync_object_full...` inside
    `PipelineTmaAsync.create`: "PipelineTmaAsync(full)"); None outside pipelines."""
    import linecache
    for f in frames:
        m = _SYNC_OBJECT.search(linecache.getline(f.file, f.line))
        if m:
            return f"{f.func.split('.')[0]}({m.group(1)})"
    return None


def source_loc(frames: list[Frame], labels: list[str]) -> SourceLoc:
    obj = sync_object(frames)
    if obj is not None:
        labels = [*labels, SYNC_LABEL + obj]
    user = None
    lib: list[str] = []
    for f in frames:
        if f.in_dsl:
            if user is None and not any(d in f.file for d in _PLUMBING_DIRS) and "<locals>" not in f.func:
                if f.func and (not lib or lib[-1] != f.func):
                    lib.append(f.func)
            continue
        if _is_foreign(f.file):
            continue
        user = f
        break
    if user is None:
        return SourceLoc(lib_frame=lib[-1] if lib else None, lib_frames=tuple(lib),
                         labels=tuple(labels), frames=tuple(frames))
    return SourceLoc(
        file=user.file,
        line=user.line,
        col=user.col,
        func=clean_func(user.func),
        lib_frame=lib[-1] if lib else None,
        lib_frames=tuple(lib),
        labels=tuple(labels),
        frames=tuple(frames),
    )


class LocCache:
    """Locations are uniqued in MLIR, and many ops share one: convert each once."""

    def __init__(self) -> None:
        self._cache: dict = {}

    def get(self, loc) -> SourceLoc:
        try:
            key = loc.attr
            hit = self._cache.get(key)
        except TypeError:  # unhashable in some binding versions
            key, hit = None, None
        if hit is not None:
            return hit
        frames, labels = flatten(loc)
        sl = source_loc(frames, labels) if (frames or labels) else UNKNOWN_LOC
        if key is not None:
            self._cache[key] = sl
        return sl

