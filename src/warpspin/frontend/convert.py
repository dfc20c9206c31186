"""Live MLIR module -> plain ``TracedKernel`` data.  Runs inside the trace-finalize hook only.

Pitfall P2: the DSL registers *value casters* that wrap ``!cute.*`` values into Python objects,
some of whose constructors build IR.  ``raw_values()`` swaps in identity casters while we walk.
"""
from __future__ import annotations

import contextlib
import linecache
import os
from typing import Any, Optional

from .locations import LocCache
from .mlir_data import GRID_EXTENTS_ATTR, Block, KernelArg, Op, Region, TracedKernel


@contextlib.contextmanager
def raw_values():
    """Identity value casters for the cute dialect types; the DSL's classes are restored after."""
    from cutlass._mlir import ir
    import cutlass._mlir.dialects.cute as c
    import cutlass._mlir.dialects.cute_nvgpu as cn
    import cutlass.cute.core as core
    import cutlass.cute.tensor as tensor

    wanted = [
        (c, "SwizzleType", core, "Swizzle"),
        (c, "LayoutType", core, "_Layout"),
        (c, "ComposedLayoutType", core, "_ComposedLayout"),
        (c, "PtrType", core, "_Pointer"),
        (c, "SparseElemType", core, "SparseElem"),  # not in DSL 4.4
        (c, "MemRefType", tensor, "_Tensor"),
        (c, "CoordTensorType", tensor, "_Tensor"),
        (cn, "SmemDescViewType", tensor, "_Tensor"),
    ]
    # a type or class this DSL release lacks has no caster to replace
    regs = [(getattr(tm, t), getattr(cm, cls)) for tm, t, cm, cls in wanted
            if hasattr(tm, t) and hasattr(cm, cls)]
    for t, _ in regs:
        ir.register_value_caster(t.get_static_typeid(), replace=True)(lambda v: v)
    try:
        yield
    finally:
        for t, cls in regs:
            ir.register_value_caster(t.get_static_typeid(), replace=True)(cls)


def _raw(v):
    from cutlass._mlir import ir

    while not isinstance(v, ir.Value):
        v = v.value
    return v


def _as_op(o):
    return o.operation if hasattr(o, "operation") else o


def attr_value(a) -> Any:
    """An MLIR attribute as a Python value: bool/int/float/str/tuple/list/dict, else its text."""
    from cutlass._mlir import ir

    if hasattr(a, "maybe_downcast"):
        a = a.maybe_downcast()
    try:
        if isinstance(a, ir.BoolAttr):
            return bool(a.value)
        if isinstance(a, ir.IntegerAttr):
            return int(a.value)
        if isinstance(a, ir.FloatAttr):
            return float(a.value)
        if isinstance(a, ir.StringAttr):
            return a.value
        if isinstance(a, ir.UnitAttr):
            return True
        if isinstance(a, (ir.DenseI32ArrayAttr, ir.DenseI64ArrayAttr)):
            return tuple(int(x) for x in a)
        if isinstance(a, ir.FlatSymbolRefAttr):
            return a.value
        if isinstance(a, ir.TypeAttr):
            return str(a.value)
        if isinstance(a, ir.ArrayAttr):
            return [attr_value(x) for x in a]
        if isinstance(a, ir.DictAttr):
            return {na.name: attr_value(na.attr) for na in a}
    except Exception:  # odd attribute kinds: fall back to text
        pass
    return str(a)


def op_attrs(op) -> dict[str, Any]:
    out = {}
    attrs = op.attributes
    for i in range(len(attrs)):
        na = attrs[i]
        out[na.name] = attr_value(na.attr)
    return out


class _Converter:
    def __init__(self) -> None:
        self.ids: dict = {}
        self.locs = LocCache()

    def vid(self, v) -> int:
        v = _raw(v)
        i = self.ids.get(v)
        if i is None:
            i = self.ids[v] = len(self.ids)
        return i

    def block(self, b) -> Block:
        args = list(b.arguments)
        out = Block([self.vid(a) for a in args], [str(a.type) for a in args])
        out.ops = [self.op(_as_op(o)) for o in b.operations]
        return out

    def region(self, r) -> Region:
        return Region([self.block(b) for b in r.blocks])

    def op(self, o) -> Op:
        operands = [_raw(v) for v in o.operands]
        results = [_raw(v) for v in o.results]
        return Op(
            name=o.name,
            operands=[self.vid(v) for v in operands],
            operand_types=[str(v.type) for v in operands],
            results=[self.vid(v) for v in results],
            result_types=[str(v.type) for v in results],
            attrs=op_attrs(o),
            regions=[self.region(r) for r in o.regions],
            loc=self.locs.get(o.location),
        )


def _dim3(v) -> Optional[tuple[int, int, int]]:
    if isinstance(v, (tuple, list)) and len(v) == 3 and all(isinstance(x, int) for x in v):
        return (int(v[0]), int(v[1]), int(v[2]))
    return None


def convert_kernel(kop, *, arch: Optional[str] = None, function_name: str = "",
                   keep_text: bool = False) -> TracedKernel:
    """One live ``cuda.kernel`` op -> ``TracedKernel``."""
    conv = _Converter()
    attrs = op_attrs(kop)
    body_region = kop.regions[0]
    entry = body_region.blocks[0]
    arg_attrs = attrs.get("arg_attrs") or []
    args = []
    for i, a in enumerate(entry.arguments):
        extra = arg_attrs[i] if i < len(arg_attrs) and isinstance(arg_attrs[i], dict) else {}
        args.append(KernelArg(i, conv.vid(a), str(a.type), extra))
    body = conv.region(body_region)
    facts = attrs.get("cutlass_launch_facts") or {}
    facts = facts if isinstance(facts, dict) else {}
    block = _dim3(attrs.get("nvvm.reqntid")) or _dim3(facts.get("exact_block_dim"))
    return TracedKernel(
        name=str(attrs.get("sym_name", "")),
        args=args,
        body=body,
        attrs=attrs,
        block_dim=block,
        cluster_dim=_dim3(facts.get("exact_cluster_dim")),
        grid_dim=_dim3(facts.get("exact_grid_dim")),
        arch=arch,
        function_name=function_name,
        loc=conv.locs.get(kop.location),
        mlir_text=kop.get_asm(enable_debug_info=False) if keep_text else None,
    )


def find_kernels(module_op) -> list:
    """All ``cuda.kernel`` ops (inside ``gpu.module``) of a live module."""
    from cutlass._mlir import ir

    found = []

    def visit(op):
        op = _as_op(op)
        if op.name == "cuda.kernel":
            found.append(op)
            return ir.WalkResult.SKIP
        if op.name in ("func.func", "llvm.func"):
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module_op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


_HOST_ARITH = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divsi": "//",
               "arith.floordivsi": "//", "arith.remsi": "%", "arith.divui": "//",
               "arith.remui": "%", "arith.ceildivsi": "ceildiv"}
_HOST_CASTS = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast",
               "builtin.unrealized_conversion_cast")


def _host_expr(v, fn_args: dict, depth: int = 0) -> Optional[tuple]:
    """A launch operand as an expression over the host function's arguments."""
    from cutlass._mlir import ir

    v = _raw(v)
    if depth > 20:
        return None
    if v in fn_args:  # a dict: ir.Value hashes by identity; ``==`` may be overloaded
        return ("host", fn_args[v])
    owner = v.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if not isinstance(owner, ir.Operation):
        return None
    name = owner.name
    if name == "arith.constant":
        val = attr_value(owner.attributes["value"])
        return ("const", int(val)) if isinstance(val, (int, bool)) else None
    if name in _HOST_CASTS and len(owner.operands) == 1:
        return _host_expr(owner.operands[0], fn_args, depth + 1)
    if name in _HOST_ARITH and len(owner.operands) == 2:
        a = _host_expr(owner.operands[0], fn_args, depth + 1)
        b = _host_expr(owner.operands[1], fn_args, depth + 1)
        if a is not None and b is not None:
            return (_HOST_ARITH[name], a, b)
    return _host_op(owner)


def _host_op(owner) -> Optional[tuple]:
    """An operand computed on the host by an op the expressions above do not follow:
    ("op", the DSL call that made it, "file:line" of the user code that called it, that line's
    text), for a message that says where the value comes from (never evaluated)."""
    from .locations import flatten, source_loc
    try:
        loc = source_loc(*flatten(owner.location))
    except Exception:  # a location this reader does not know: no description
        return None
    if not loc.file:
        return None
    text = " ".join(linecache.getline(loc.file, loc.line).split("#", 1)[0].split())
    return ("op", loc.lib_frame or owner.name, f"{os.path.basename(loc.file)}:{loc.line}", text)


def launch_args(module_op) -> dict[str, tuple[int, list[Optional[tuple]]]]:
    """kernel symbol -> (host function's argument count, the host expression of each launch
    operand), from ``cuda.launch*``."""
    from cutlass._mlir import ir

    out: dict[str, tuple[int, list[Optional[tuple]]]] = {}

    def visit_fn(fn):
        entry = fn.regions[0].blocks[0]
        fn_args = {_raw(a): i for i, a in enumerate(entry.arguments)}

        def visit(op):
            op = _as_op(op)
            if op.name in ("cuda.launch_ex", "cuda.launch", "gpu.launch_func"):
                callee = str(op_attrs(op).get("callee") or op_attrs(op).get("kernel") or "")
                sym = callee.rsplit("@", 1)[-1]
                out[sym] = (len(fn_args), [_host_expr(o, fn_args) for o in op.operands])
            return ir.WalkResult.ADVANCE

        fn.walk(visit, ir.WalkOrder.PRE_ORDER)

    for op in module_op.regions[0].blocks[0].operations:
        op = _as_op(op)
        if op.name == "func.func" and op.regions and op.regions[0].blocks:
            visit_fn(op)
    return out


UNKNOWN_CLUSTER_ATTR = "warpspin.cluster_dim_unknown"


def launch_dims(module_op) -> dict[str, dict]:
    """kernel symbol -> the static dims of its launch, read from the host function's
    ``cuda.launch_cfg.create`` (block, dynamic smem, grid, stream) and
    ``cuda.launch_cfg.cluster_dim`` (cfg, x, y, z) ops: ``{"block": .., "grid": .., "cluster":
    ..}``, each a 3-tuple of ints or None when not constant.  DSL 4.8 records the same as the
    kernel's ``cutlass_launch_facts``; 4.4 does not, and this is where it is read then."""
    from cutlass._mlir import ir

    out: dict[str, dict] = {}

    def each3(vals, fn_args) -> tuple:
        es = [_host_expr(v, fn_args) for v in vals]
        return tuple(int(e[1]) if e is not None and e[0] == "const" else None for e in es)

    def const3(vals, fn_args) -> Optional[tuple[int, int, int]]:
        dims = each3(vals, fn_args)
        return dims if len(dims) == 3 and None not in dims else None  # type: ignore[return-value]

    def visit_fn(fn):
        entry = fn.regions[0].blocks[0]
        fn_args = {_raw(a): i for i, a in enumerate(entry.arguments)}
        cfgs: dict = {}

        def visit(op):
            op = _as_op(op)
            if op.name == "cuda.launch_cfg.create" and len(op.operands) >= 7 and op.results:
                ops = list(op.operands)
                cfgs[_raw(op.results[0])] = {"block": const3(ops[0:3], fn_args),
                                             "grid": const3(ops[4:7], fn_args),
                                             "grid_each": each3(ops[4:7], fn_args)}
            elif op.name == "cuda.launch_cfg.cluster_dim" and len(op.operands) == 4:
                cfg = cfgs.get(_raw(op.operands[0]))
                if cfg is not None:
                    dims = const3(list(op.operands)[1:], fn_args)
                    cfg["cluster"] = dims if dims is not None else "unknown"
            elif op.name == "cuda.launch_ex" and op.operands:
                callee = str(op_attrs(op).get("callee") or "")
                cfg = cfgs.get(_raw(op.operands[0]))
                if cfg is not None:
                    sym = callee.rsplit("@", 1)[-1]
                    prev = out.get(sym)
                    # one kernel launched twice with other dims: none of them is its own
                    out[sym] = cfg if prev is None or prev == cfg else {
                        "block": cfg["block"] if prev.get("block") == cfg["block"] else None,
                        "grid": None, "grid_each": (None, None, None), "cluster": "unknown"}
            return ir.WalkResult.ADVANCE

        fn.walk(visit, ir.WalkOrder.PRE_ORDER)

    for op in module_op.regions[0].blocks[0].operations:
        op = _as_op(op)
        if op.name == "func.func" and op.regions and op.regions[0].blocks:
            visit_fn(op)
    return out


def _launch_from_host(k: TracedKernel, dims: Optional[dict]) -> None:
    """A kernel without ``cutlass_launch_facts`` (DSL 4.4): its grid and cluster from the host's
    launch config, when that config's block size is the kernel's own (the same launch).  A
    launch that cannot be found or matched, or whose cluster size is not constant, is marked:
    the extractor then refuses the kernel rather than model one CTA of an unknown cluster."""
    if k.attrs.get("cutlass_launch_facts"):
        return
    if dims is None or dims.get("block") is None or dims["block"] != k.block_dim:
        k.attrs[UNKNOWN_CLUSTER_ATTR] = True
        return
    k.grid_dim = dims.get("grid")
    cluster = dims.get("cluster")
    if cluster == "unknown":
        k.attrs[UNKNOWN_CLUSTER_ATTR] = True
    elif cluster is not None:
        k.cluster_dim = cluster


def convert_module(module_op, **kw) -> list[TracedKernel]:
    """Every kernel of a live module.  Call with the module's context entered (the hook's)."""
    with module_op.context, raw_values():
        from .inline_ptx import canonical_ptx
        from .normalize import normalize

        kernels = [canonical_ptx(normalize(convert_kernel(k, **kw)))
                   for k in find_kernels(module_op)]
        try:
            launches = launch_args(module_op)
        except Exception:  # host side is a convenience; never fail the trace for it
            launches = {}
        try:
            dims = launch_dims(module_op)
        except Exception:  # unreadable: a cluster launch cannot be ruled out
            dims = None
        for k in kernels:
            if dims is None:
                if not k.attrs.get("cutlass_launch_facts"):
                    k.attrs[UNKNOWN_CLUSTER_ATTR] = True
                continue
            _launch_from_host(k, dims.get(k.name))
            d = dims.get(k.name) or {}
            if d.get("block") == k.block_dim and d.get("grid_each") is not None:
                k.attrs[GRID_EXTENTS_ATTR] = d["grid_each"]
        for k in kernels:
            nargs, ops = launches.get(k.name, (None, []))
            k.host_nargs = nargs
            if ops and len(ops) >= len(k.args):
                for a, h in zip(k.args, ops[len(ops) - len(k.args):]):
                    a.host = h
        return kernels
