"""Human-readable listing of a ``TracedKernel`` (debugging, docs): one op per line, nested."""
from __future__ import annotations

from typing import Iterable, Optional

from .mlir_data import Op, TracedKernel

_HIDE_ATTRS = {"operandSegmentSizes", "resultSegmentSizes"}


def _fmt_attrs(attrs: dict) -> str:
    items = [f"{k}={v}" for k, v in attrs.items() if k not in _HIDE_ATTRS]
    return (" {" + ", ".join(items) + "}") if items else ""


def format_op(op: Op, with_types: bool = False) -> str:
    res = ", ".join(f"%{r}" for r in op.results)
    head = f"{res} = " if res else ""
    ops = ", ".join(f"%{o}" for o in op.operands)
    s = f"{head}{op.name}({ops}){_fmt_attrs(op.attrs)}"
    if with_types and op.result_types:
        s += " : " + ", ".join(op.result_types)
    return s


def format_kernel(k: TracedKernel, *, only: Optional[Iterable[str]] = None, with_types: bool = True,
                  with_loc: bool = True) -> str:
    """Listing of the kernel.  ``only``: op-name prefixes to show (structure ops always shown)."""
    prefixes = tuple(only) if only else None
    lines = [f"kernel {k.name}  block={k.block_dim} cluster={k.cluster_dim} grid={k.grid_dim}"]
    for a in k.args:
        lines.append(f"  arg{a.index} %{a.value} : {a.type}")

    def emit(op: Op, depth: int) -> None:
        structural = bool(op.regions)
        if prefixes is None or structural or op.name.startswith(prefixes):
            text = "  " * depth + format_op(op, with_types)
            if with_loc and op.loc.file:
                lib = f" [{op.loc.lib_frame}]" if op.loc.lib_frame else ""
                text = f"{text:<100s} # {op.loc.short()}{lib}"
            lines.append(text)
        for ri, r in enumerate(op.regions):
            for b in r.blocks:
                if b.args:
                    lines.append("  " * (depth + 1) + f"^region{ri}(" +
                                 ", ".join(f"%{a}: {t}" for a, t in zip(b.args, b.arg_types)) + ")")
                for o in b.ops:
                    emit(o, depth + 1)

    for b in k.body.blocks:
        for o in b.ops:
            emit(o, 1)
    return "\n".join(lines)
