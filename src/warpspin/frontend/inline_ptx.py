r"""Inline PTX that is exactly one instruction the DSL also has an op for -> that op.

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

One global-memory access of a 32-bit word whose address operand (`l`) is `llvm.ptrtoint` of a
global pointer becomes the op `cute.arch` emits for it, on that pointer (`sem` one of
`.relaxed`, `.release` / `.acquire`, `.acq_rel`, or none; `scope` one of `.cta`, `.cluster`,
`.gpu`, `.sys`, default `.gpu`; a type among `.b32`, `.s32`, `.u32`):

| inline PTX | becomes |
|---|---|
| `st[.sem.scope].global.T [$0], $1` (`l,r`) | `nvvm.store.ext` (no sem: a weak store) |
| `st.volatile.global.T [$0], $1` | `nvvm.store.ext` relaxed, sys scope (PTX 8.3: volatile) |
| `ld[.sem.scope].global.T $0, [$1]` (`=r,l`) | `nvvm.load.ext` (no sem: a weak load) |
| `ld.volatile.global.T $0, [$1]` | `nvvm.load.ext` relaxed, sys scope |
| `atom[.sem][.scope].global.add.T $0, [$1], $2` | `nvvm.atomicrmw` add (default relaxed) |
| `atom[.sem][.scope].global.exch.T $0, [$1], $2` | `nvvm.atomicrmw` exch |
| `atom[.sem][.scope].global.cas.T $0, [$1], $2, $3` | `nvvm.atomicrmw` cas |
| `red[.sem][.scope].global.add.T [$0], $1` (`l,r`) | `nvvm.red` add |

(PTX writes `atom.add.release.gpu.global.s32` with the operation before the qualifiers too:
both orders are read.)

An mbarrier op whose barrier operand (`r`) is `llvm.ptrtoint` of a shared pointer (or of the
`nvvm.mapa` of one, for `.shared::cluster`) becomes the DSL's op on that pointer:

| inline PTX | becomes |
|---|---|
| `mbarrier.arrive[.release\|.relaxed][.cta\|.cluster].shared::{cta,cluster}.b64 _, [$0]` | `nvvm.mbarrier.arrive` (that scope) |
| `mbarrier.arrive.expect_tx[...].shared::cta.b64 _, [$0], $1` | `nvvm.mbarrier.arrive.expect_tx` |
| `{ .reg .pred P; L: mbarrier.try_wait.parity.shared::cta.b64 P, [$0], $1[, $2]; @P bra D; bra L; D: }` | `nvvm.mbarrier.try_wait.parity` (the blocking wait; `$2`, a time-limit hint, changes nothing) |
| `{ .reg .pred P; mbarrier.{try,test}_wait.parity.shared::cta.b64 P, [$1], $2; selp.b32 $0, 1, 0, P; }` | `nvvm.mbarrier.wait.parity` (a test: its result is whether the phase completed) |
| `{ .reg .b32 R; .reg .pred P; elect.sync R\|P, $1; selp.b32 $0, 1, 0, P; }` with `$1` = -1 | `nvvm.elect.sync` (`!= 0` of its value is the elected lane) |
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


_GMEM = re.compile(r"(?P<kind>st|ld|atom|red)(?P<quals>(?:\.[a-z_0-9]+)*) (?P<args>.*)")
_MEMORY_ORDERS = ("relaxed", "release", "acquire", "acq_rel", "volatile")
_ATOM_OPS = ("add", "exch", "cas")


def _global_pointer(k: TracedKernel, vid) -> object:
    """The global pointer whose `llvm.ptrtoint` value `vid` is, or None."""
    info = k.value_info.get(vid)
    op = info.op if info is not None and not info.is_block_arg else None
    if op is None or op.name not in ("llvm.ptrtoint", "cute.ptrtoint") or not op.operands or \
            "ptr<1>" not in (op.operand_types[0] or ""):
        return None
    return op.operands[0]


def _rewrite_gmem(k: TracedKernel, op: Op) -> bool:
    text = _form(str(op.attrs.get("asm_string", "")))
    m = _GMEM.fullmatch(text)
    if m is None:
        return False
    quals = m.group("quals").split(".")[1:]
    if "global" not in quals or not {"b32", "s32", "u32"} & set(quals):
        return False
    kind = m.group("kind")
    sems = [q for q in quals if q in _MEMORY_ORDERS]
    scopes = [q for q in quals if q in ("cta", "cluster", "gpu", "sys")]
    ops = [q for q in quals if q in _ATOM_OPS]
    known = set(_MEMORY_ORDERS) | {"cta", "cluster", "gpu", "sys", "global", "b32", "s32",
                                   "u32"} | set(_ATOM_OPS)
    if set(quals) - known or len(sems) > 1 or len(scopes) > 1 or len(ops) > 1:
        return False
    sem, scope = (sems or [None])[0], (scopes or ["gpu"])[0]
    if sem == "volatile":
        sem, scope = "relaxed", "sys"
    args = [a.strip() for a in m.group("args").split(",")]
    constraints = str(op.attrs.get("constraints", "")).replace(" ", "")
    order = {"order": f"#nvvm.mem_order<{sem}>", "scope": f"#nvvm.mem_scope<{scope}>"} \
        if sem else {}
    if kind in ("st", "red"):
        if op.results or args != ["[$0]", "$1"] or constraints != "l,r" or len(op.operands) != 2:
            return False
        ptr = _global_pointer(k, op.operands[0])
        if ptr is None or (kind == "red" and ops != ["add"]) or (kind == "st" and ops):
            return False
        value, vtype = op.operands[1], op.operand_types[1]
        if kind == "st":
            op.name, op.attrs = "nvvm.store.ext", order
            op.operands, op.operand_types = [value, ptr], [vtype, "!llvm.ptr<1>"]
        else:
            op.name = "nvvm.red"
            op.attrs = {"memOrder": f"#nvvm.mem_order<{sem or 'relaxed'}>",
                        "memScope": f"#nvvm.mem_scope<{scope}>", "op": "#nvvm.red_op<add>",
                        "type": "#nvvm.red_type<s32>"}
            op.operands, op.operand_types = [ptr, value], ["!llvm.ptr<1>", vtype]
        return True
    if len(op.results) != 1 or not constraints.startswith("=r,l"):
        return False
    if kind == "ld":
        if ops or args != ["$0", "[$1]"] or constraints != "=r,l" or len(op.operands) != 1:
            return False
        ptr = _global_pointer(k, op.operands[0])
        if ptr is None:
            return False
        op.name, op.attrs = "nvvm.load.ext", order
        op.operands, op.operand_types = [ptr], ["!llvm.ptr<1>"]
        return True
    n = 3 if ops == ["cas"] else 2
    want = ["$0", "[$1]"] + [f"${i}" for i in range(2, n + 1)]
    if len(ops) != 1 or args != want or constraints != "=r,l" + ",r" * (n - 1) or \
            len(op.operands) != n:
        return False
    ptr = _global_pointer(k, op.operands[0])
    if ptr is None:
        return False
    op.name = "nvvm.atomicrmw"
    op.attrs = {"memOrder": f"#nvvm.mem_order<{sem or 'relaxed'}>",
                "op": f"#nvvm<atomic_op {ops[0]}>", "syncscope": f"#nvvm.mem_scope<{scope}>"}
    op.operands = [ptr, *op.operands[1:]]
    op.operand_types = ["!llvm.ptr<1>", *op.operand_types[1:]]
    return True


def _shared_pointer(k: TracedKernel, vid) -> tuple:
    """(pointer, its type) whose 32-bit `llvm.ptrtoint` value `vid` is: a shared pointer
    (`ptr<3>`) or a mapa address (`ptr<7>`); (None, None) otherwise."""
    info = k.value_info.get(vid)
    op = info.op if info is not None and not info.is_block_arg else None
    if op is None or op.name != "llvm.ptrtoint" or not op.operands or \
            op.result_types != ["i32"] or op.operand_types[0] not in ("!llvm.ptr<3>",
                                                                       "!llvm.ptr<7>"):
        return None, None
    return op.operands[0], op.operand_types[0]


_ARRIVE = re.compile(r"mbarrier\.arrive(?P<tx>\.expect_tx)?(?P<sem>\.release|\.relaxed)?"
                     r"(?P<scope>\.cta|\.cluster)?\.shared::(?P<space>cta|cluster)\.b64 _, "
                     r"\[\$0\](?P<bytes>, \$1)?")
_SPIN = re.compile(r"\{ \.reg \.pred (?P<p>\w+); (?P<l>\w+): mbarrier\.try_wait\.parity"
                   r"\.shared::cta\.b64 (?P=p), \[\$0\], \$1(?:, \$2)?; @(?P=p) bra (?P<d>\w+); "
                   r"bra (?P=l); (?P=d): \}")
_ELECT = re.compile(r"\{ \.reg \.b32 (?P<r>%?\w+); \.reg \.pred (?P<p>%?\w+); elect\.sync "
                    r"(?P=r)\|(?P=p), \$1; selp\.b32 \$0, 1, 0, (?P=p); \}")
_TEST = re.compile(r"\{ \.reg \.pred (?P<p>\w+); mbarrier\.(?P<kind>try|test)_wait\.parity"
                   r"\.shared::cta\.b64 (?P=p), \[\$1\], \$2; selp\.b32 \$0, 1, 0, (?P=p); \}")


def _rewrite_mbarrier(k: TracedKernel, op: Op) -> bool:
    text = _form(str(op.attrs.get("asm_string", "")))
    text = re.sub(r"\s*;\s*", "; ", text).strip()
    text = re.sub(r"(?<![:\w])(\w+):(?!:)\s*", r"\1: ", text)  # a label (not `shared::cta`)
    constraints = str(op.attrs.get("constraints", "")).replace(" ", "")
    m = _ARRIVE.fullmatch(text)
    if m and not op.results:
        n = 2 if m.group("bytes") else 1
        if bool(m.group("tx")) != (n == 2) or constraints != ",".join(["r"] * n) or \
                len(op.operands) != n:
            return False
        ptr, ptype = _shared_pointer(k, op.operands[0])
        if ptr is None or (ptype == "!llvm.ptr<7>") != (m.group("space") == "cluster"):
            return False
        scope = (m.group("scope") or ".cta")[1:]
        op.name = "nvvm.mbarrier.arrive.expect_tx" if n == 2 else "nvvm.mbarrier.arrive"
        op.attrs = {"relaxed": m.group("sem") == ".relaxed",
                    "scope": f"#nvvm.mem_scope<{scope}>"}
        op.operands = [ptr, *op.operands[1:]]
        op.operand_types = [ptype, *op.operand_types[1:]]
        return True
    m = _SPIN.fullmatch(text)
    if m and not op.results and len(op.operands) in (2, 3) and \
            constraints == ",".join(["r"] * len(op.operands)):
        ptr, ptype = _shared_pointer(k, op.operands[0])
        if ptr is None or ptype != "!llvm.ptr<3>":
            return False
        op.name, op.attrs = "nvvm.mbarrier.try_wait.parity", {}
        op.operands, op.operand_types = [ptr, op.operands[1]], [ptype, op.operand_types[1]]
        return True
    m = _ELECT.fullmatch(text)
    if m and len(op.results) == 1 and len(op.operands) == 1 and constraints == "=r,r" and \
            k.int_constant(op.operands[0]) == -1:
        op.name, op.attrs = "nvvm.elect.sync", {}  # (its value 1 in the elected lane, else 0)
        op.operands, op.operand_types = [op.operands[0]], op.operand_types[:1]
        return True
    m = _TEST.fullmatch(text)
    if m and len(op.results) == 1 and len(op.operands) == 2 and constraints == "=r,r,r":
        ptr, ptype = _shared_pointer(k, op.operands[0])
        if ptr is None or ptype != "!llvm.ptr<3>":
            return False
        op.name = "nvvm.mbarrier.wait.parity"
        op.attrs = {"kind": f"#nvvm.mbar_wait<{m.group('kind')}>",
                    "scope": "#nvvm.mbar_scope<cta>"}
        op.operands, op.operand_types = [ptr, op.operands[1]], [ptype, op.operand_types[1]]
        return True
    return False


def canonical_ptx(k: TracedKernel) -> TracedKernel:
    """Rewrite `k`'s one-instruction inline PTX in place (see the module docstring)."""
    changed = False
    for op in k.walk():
        if op.name == "llvm.inline_asm":
            changed = _rewrite(op) or _rewrite_gmem(k, op) or _rewrite_mbarrier(k, op) or \
                changed
    if changed:
        k.reindex()
    return k
