"""Inline PTX that is exactly one instruction the DSL also has an op for -> that op.

A kernel may write `llvm.inline_asm "bar.sync 0;"` where the DSL's `cute.arch.sync_threads()`
emits `nvvm.barrier`: both are the same instruction, so the extractor should read them the same
way. Only these forms, with no results and the operands named, are rewritten (whitespace and a
trailing `;` aside); any other inline PTX stays as it is, and the extractor reads it or reports
it UNSUPPORTED with its text and line.

| inline PTX | becomes |
|---|---|
| `bar.sync 0` / `barrier.sync.aligned 0` | `nvvm.barrier` (the CTA barrier) |
| `bar.sync $0` / `barrier.sync.aligned $0` (`r`) | `nvvm.barrier` of that id, every thread |
| `bar.sync $0, $1` / `barrier.sync.aligned $0, $1` (`r,r`) | `nvvm.barrier` id, thread count |
| `bar.arrive $0, $1` / `barrier.arrive.aligned $0, $1` (`r,r`) | `nvvm.barrier.arrive` id, count |
| `barrier.cluster.arrive[.release].aligned` | `nvvm.cluster.arrive` |
| `barrier.cluster.arrive.relaxed.aligned` | `nvvm.cluster.arrive.relaxed` |
| `barrier.cluster.wait[.acquire].aligned` | `nvvm.cluster.wait` |
| `fence.proxy.async[.shared::cta]` | `nvvm.fence.proxy` of that kind |
| `fence.acq_rel.{cta,cluster,gpu,sys}` | `llvm.fence acq_rel` at that scope |

(`bar.sync` is `barrier.sync.aligned`, PTX 9.7.13.1; the forms without `.aligned` are not
rewritten: the DSL's ops are the aligned ones.)
"""
from __future__ import annotations

import re

from .mlir_data import Op, TracedKernel

_SCOPES = {"cta": "block", "cluster": "cluster", "gpu": "device", "sys": None}


def acq_rel_fence(op: Op, ptx_scope: str) -> None:
    """Make `op` the `llvm.fence acq_rel` the DSL emits for `fence.acq_rel.<ptx_scope>`."""
    scope = _SCOPES[ptx_scope]
    op.name, op.attrs = "llvm.fence", {"ordering": "6", **({"syncscope": scope} if scope else {})}


def _form(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().rstrip(";").strip())


def _rewrite(op: Op) -> bool:
    if op.results:
        return False
    text = _form(str(op.attrs.get("asm_string", "")))
    constraints = str(op.attrs.get("constraints", "")).replace(" ", "")
    n = len(op.operands)
    bar = re.fullmatch(r"(?:bar\.sync|barrier\.sync\.aligned) (0|\$0)(?:, ?\$1)?", text)
    if bar:
        if bar.group(1) == "0" and n == 0 and constraints == "" and "$1" not in text:
            op.name, op.attrs = "nvvm.barrier", {"operandSegmentSizes": "(0, 0, 0)"}
            return True
        want = 2 if "$1" in text else 1
        if bar.group(1) == "$0" and n == want and constraints == ",".join(["r"] * want):
            op.name = "nvvm.barrier"
            op.attrs = {"operandSegmentSizes": f"(1, {want - 1}, 0)"}
            return True
        return False
    if re.fullmatch(r"(?:bar\.arrive|barrier\.arrive\.aligned) \$0, ?\$1", text) and n == 2 \
            and constraints == "r,r":
        op.name, op.attrs = "nvvm.barrier.arrive", {}
        return True
    if n or constraints:
        return False
    simple = {"barrier.cluster.arrive.aligned": "nvvm.cluster.arrive",
              "barrier.cluster.arrive.release.aligned": "nvvm.cluster.arrive",
              "barrier.cluster.arrive.relaxed.aligned": "nvvm.cluster.arrive.relaxed",
              "barrier.cluster.wait.aligned": "nvvm.cluster.wait",
              "barrier.cluster.wait.acquire.aligned": "nvvm.cluster.wait"}
    if text in simple:
        op.name, op.attrs = simple[text], {}
        return True
    if text in ("fence.proxy.async", "fence.proxy.async.shared::cta"):
        op.name = "nvvm.fence.proxy"
        op.attrs = {"kind": "#nvvm.proxy_kind<async>"} if text == "fence.proxy.async" else \
            {"kind": "#nvvm.proxy_kind<async.shared>", "space": "#nvvm.shared_space<cta>"}
        return True
    m = re.fullmatch(r"fence\.acq_rel\.(cta|cluster|gpu|sys)", text)
    if m:
        acq_rel_fence(op, m.group(1))
        return True
    return False


def canonical_ptx(k: TracedKernel) -> TracedKernel:
    """Rewrite `k`'s one-instruction inline PTX in place (see the module docstring)."""
    changed = False
    for op in k.walk():
        if op.name == "llvm.inline_asm":
            changed = _rewrite(op) or changed
    if changed:
        k.reindex()
    return k
