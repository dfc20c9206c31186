"""What differs between CuTe DSL releases (nvidia-cutlass-dsl 4.4 .. 4.8) where the frontend hooks
into the DSL, and how it reaches the same point in each.  Everything here detects the feature
(``hasattr``, a failed import), never the version string.

* The target architecture: 4.6+ keeps it in ``envar._arch`` behind an ``arch`` property that
  detects a GPU when read unset; 4.4 and 4.5 keep it in a plain ``envar.arch`` attribute.
* Call chains on ops: 4.6+ has ``envar.loc_tracebacks`` (MLIR's own traceback locations, every
  op created without an explicit ``loc=`` gets the Python call chain).  4.4 has neither the
  setting nor the MLIR binding; 4.5 has the setting but not the binding (and ignores the
  setting then); their ``@dsl_user_op`` passes every op the single frame that called the API.
  There, ``traceback_locations`` wraps the op builders of the MLIR bindings
  (``OpView.build_generic``, ``Operation.create``) for the duration of a trace and gives each op
  the same chain MLIR would: ``CallSite(Name(qualname)(File(file:line:col)), ...)``, innermost
  first, frames of the bindings themselves left out, at most ``depth`` frames.
* Reading locations: 4.6+'s ``ir.Location`` has ``is_a_callsite``/``callee``/``child_loc``/...;
  4.4's and 4.5's have none of them.  ``locations.flatten`` then parses the location's text
  (``loc(...)``).
* The traced module: 4.6+ hands it to trace-finalize hooks; 4.4 and 4.5 have none, and
  ``finalize_hook`` wraps the DSL's ``build_module`` (which every release calls on it) instead.
* Shared memory: 4.4 and 4.5's ``SmemAllocator`` carves the dynamic shared memory up from one
  base pointer and names no fields in the IR; ``record_smem_fields`` writes down what it hands
  out (``normalize`` turns it into 4.8's form).
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

# the DSL's MLIR bindings (cutlass/_mlir/...): MLIR's traceback locations leave these frames out
_MLIR_DIR = f"{os.sep}cutlass{os.sep}_mlir{os.sep}"
_THIS_FILE = os.path.abspath(__file__)


# -- the architecture setting --------------------------------------------------------------------
def _arch_key(env) -> str:
    """The attribute that stores the arch without detecting a GPU when read."""
    return "_arch" if hasattr(env, "_arch") else "arch"


def save_env(env) -> tuple:
    key = _arch_key(env)
    return (env.dryrun, key, getattr(env, key), getattr(env, "loc_tracebacks", None))


def restore_env(env, saved: tuple) -> None:
    dryrun, key, arch, loc_tb = saved
    env.dryrun = dryrun
    setattr(env, key, arch)
    if loc_tb is not None:
        env.loc_tracebacks = loc_tb


def has_loc_tracebacks(env) -> bool:
    """The setting and MLIR's traceback locations behind it: 4.5 has the setting, but its MLIR
    bindings lack ``ir.loc_tracebacks`` and the DSL then silently traces without call chains."""
    from cutlass._mlir import ir

    return hasattr(env, "loc_tracebacks") and hasattr(ir, "loc_tracebacks")


# -- call chains where the DSL has no loc_tracebacks ---------------------------------------------
class _Tracebacks:
    """Builds MLIR traceback locations from the Python stack, one cache per trace."""

    def __init__(self, ir, depth: int) -> None:
        self.ir = ir
        self.depth = depth
        self.frames: dict = {}
        self.context = None  # the MLIR context the cached locations belong to

    def _frame_loc(self, frame):
        code = frame.f_code
        key = (code, frame.f_lasti)
        loc = self.frames.get(key)
        if loc is None:
            line, col = frame.f_lineno, 0
            positions = getattr(code, "co_positions", None)
            if positions is not None and frame.f_lasti >= 0:
                for i, pos in enumerate(positions()):
                    if i == frame.f_lasti // 2:
                        if pos[0] is not None:
                            line, col = pos[0], pos[2] or 0
                        break
            name = getattr(code, "co_qualname", code.co_name)
            loc = self.ir.Location.name(name, childLoc=self.ir.Location.file(code.co_filename,
                                                                               line or 0, col))
            self.frames[key] = loc
        return loc

    def location(self):
        ctx = self.ir.Context.current
        if ctx is not self.context:  # a new compile: locations of another context are no use
            self.frames.clear()
            self.context = ctx
        frames = []
        f = sys._getframe(2)
        while f is not None and len(frames) < self.depth:
            path = f.f_code.co_filename
            if _MLIR_DIR not in path and path != _THIS_FILE:
                frames.append(self._frame_loc(f))
            f = f.f_back
        if not frames:
            return None
        if len(frames) == 1:
            return frames[0]
        return self.ir.Location.callsite(frames[0], frames[1:])


@contextlib.contextmanager
def traceback_locations(depth: int) -> Iterator[Any]:
    """Give every op built inside the block the Python call chain as its location (what MLIR's
    ``loc_tracebacks`` does in newer DSLs), replacing the single frame the DSL passes."""
    from cutlass._mlir import ir

    tb = _Tracebacks(ir, depth)
    view_build = ir.OpView.__dict__.get("build_generic")
    op_create = ir.Operation.__dict__.get("create")
    patched = []

    def with_chain(kw: dict) -> dict:
        try:
            loc = tb.location()
        except Exception:  # no context yet, or an odd frame: keep what the DSL passed
            loc = None
        if loc is not None:
            kw["loc"] = loc
        return kw

    if isinstance(view_build, classmethod):
        inner_build = view_build.__func__

        def build_generic(cls, *args, **kw):
            if len(args) < 6:  # loc is the 6th parameter
                kw = with_chain(kw)
            return inner_build(cls, *args, **kw)

        ir.OpView.build_generic = classmethod(build_generic)
        patched.append((ir.OpView, "build_generic", view_build))
    if op_create is not None:  # a nanobind static function, or a staticmethod
        inner_create = op_create.__func__ if isinstance(op_create, staticmethod) else op_create

        def create(*args, **kw):
            if len(args) < 7:  # name, results, operands, attributes, successors, regions, loc
                kw = with_chain(kw)
            return inner_create(*args, **kw)

        ir.Operation.create = staticmethod(create)
        patched.append((ir.Operation, "create", op_create))
    try:
        yield tb
    finally:
        for owner, name, orig in reversed(patched):
            setattr(owner, name, orig)
        tb.frames.clear()
        tb.context = None


# -- the trace-finalize hook ---------------------------------------------------------------------
def has_finalize_hooks(dsl) -> bool:
    """4.8: ``cute.compile(..., trace_finalize_hooks=)`` and ``register_trace_finalize_hook``."""
    return hasattr(dsl, "register_trace_finalize_hook") and hasattr(dsl, "_trace_finalize_hooks")


@contextlib.contextmanager
def finalize_hook(dsl, hook) -> Iterator[None]:
    """Call ``hook(dsl, module, function_name)`` on every module the DSL traces inside the block,
    after tracing and before the DSL verifies it.  4.8 has a hook for this; 4.4 has none, but
    both hand each traced module to ``build_module(module, function_name)`` (which verifies it):
    there the DSL singleton's ``build_module`` is wrapped for the duration of the block."""
    if has_finalize_hooks(dsl):
        dsl.register_trace_finalize_hook(hook)
        try:
            yield
        finally:
            with contextlib.suppress(ValueError):
                dsl._trace_finalize_hooks.remove(hook)
        return
    own = "build_module" in vars(dsl)
    inner = dsl.build_module

    def build_module(module, function_name, *args, **kw):
        hook(dsl, module, function_name)
        return inner(module, function_name, *args, **kw)

    dsl.build_module = build_module
    try:
        yield
    finally:
        if own:
            dsl.build_module = inner
        else:
            with contextlib.suppress(AttributeError):
                del dsl.build_module


# -- shared memory on the dynamic base (DSL 4.4) -------------------------------------------------
SMEM_FIELDS_ATTR = "warpspin.smem_fields"


def _struct_fields(struct_type) -> list[tuple[str, int, int]]:
    """(name, bytes, offset) of each field of a ``cute.struct`` (what 4.8's allocator records in
    ``smem.struct_fields``); [] when the struct does not say."""
    from cutlass.cute.core import struct

    out = []
    for name, member in getattr(struct_type, "_annotations", {}).items():
        offset = getattr(struct_type, "_offsets", {}).get(name)
        if offset is None:
            return []
        if isinstance(member, getattr(struct, "_AlignMeta", ())):
            member = member.dtype
        if getattr(struct, "_is_scalar_type", lambda m: False)(member):
            size = max(1, member.width // 8)
        elif isinstance(member, getattr(struct, "_MemRangeMeta", ())):
            size = member.size_in_bytes
        elif isinstance(member, struct):
            size = member.__sizeof__()
        else:
            return []
        out.append((name, int(size), int(offset)))
    return out


def _dyn_smem_allocator():
    """The DSL's ``SmemAllocator`` when it carves the dynamic shared memory up from one base
    pointer (``cute_nvgpu.arch.get_dyn_smem``: DSL 4.4's and 4.5's ``cutlass.utils.SmemAllocator``)
    instead of allocating each block with ``cute.memref.alloca`` (4.6+); else None."""
    try:
        from cutlass.utils import SmemAllocator
    except ImportError:
        return None
    if hasattr(SmemAllocator, "_smem_alloca") or not hasattr(SmemAllocator, "allocate"):
        return None
    return SmemAllocator


@contextlib.contextmanager
def record_smem_fields() -> Iterator[None]:
    """While tracing with an allocator over the dynamic shared memory, record on its base op
    (``get_dyn_smem``) the byte range of every block it hands out, and the fields of the struct
    in it: ``warpspin.smem_fields = ["name:bytes:offset", ...]``, offsets from the base.  4.8
    records the same per allocation in ``smem.struct_fields``; ``normalize`` turns the base into
    one allocation with these fields.  A block whose size is not static is not recorded (an
    access to it then lies in no field: UNSUPPORTED)."""
    cls = _dyn_smem_allocator()
    if cls is None:
        yield
        return
    from cutlass._mlir import ir
    import cutlass.cute as cute

    init, allocate = cls.__dict__.get("__init__"), cls.__dict__.get("allocate")

    def base_op(ptr):
        v = getattr(ptr, "value", None)
        owner = getattr(v, "owner", None)
        return getattr(owner, "operation", owner)

    def save(self) -> None:
        op = getattr(self, "_warpspin_base_op", None)
        if op is None:
            return
        op.attributes[SMEM_FIELDS_ATTR] = ir.ArrayAttr.get(
            [ir.StringAttr.get(f"{n}:{s}:{o}") for n, s, o in self._warpspin_fields])

    def init_(self, *args, **kw):
        init(self, *args, **kw)
        self._warpspin_fields = []
        try:
            self._warpspin_base_op = base_op(self._base)
        except Exception:
            self._warpspin_base_op = None

    def allocate_(self, size_or_type, *args, **kw):
        fields = getattr(self, "_warpspin_fields", None)
        before = len(fields) if fields is not None else 0
        res = allocate(self, size_or_type, *args, **kw)
        if fields is None:
            return res
        try:
            end = int(self._allocated_bytes)
            if isinstance(size_or_type, cute.struct):
                inner = _struct_fields(size_or_type)
                if inner and len(fields) == before + 1:  # the struct's block: its fields instead
                    _, size, start = fields.pop()
                    fields.extend((n, s, start + o) for n, s, o in inner)
            elif cute.is_integer(size_or_type) and isinstance(size_or_type, int) and \
                    len(fields) == before:
                fields.append((f"smem{end - size_or_type}", size_or_type, end - size_or_type))
            save(self)
        except Exception:  # what cannot be recorded stays outside every field
            pass
        return res

    cls.__init__, cls.allocate = init_, allocate_
    try:
        yield
    finally:
        cls.__init__, cls.allocate = init, allocate
