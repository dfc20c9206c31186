"""Older CuTe DSL releases' IR -> the forms the extractor reads (those of DSL 4.8).

Each rewrite below applies to ops only older releases emit, says the same thing in 4.8's terms,
and leaves every op it does not fully understand as it is: the extractor then reports that op as
UNSUPPORTED with its name and line, never a guess.  On 4.8's IR nothing here matches.

* ``nvvm.mbarrier.init.shared`` / ``nvvm.mbarrier.try_wait.parity.shared`` (4.4, 4.5): the same
  ops as ``nvvm.mbarrier.init`` / ``nvvm.mbarrier.try_wait.parity`` on a ``!llvm.ptr<3>`` address.
* ``nvvm.mbarrier.txn {kind, scope, space}`` (4.4, 4.5): ``kind = arrive`` is
  ``nvvm.mbarrier.arrive``, ``arrive_expect_tx`` is ``nvvm.mbarrier.arrive.expect_tx``,
  ``expect_tx`` is ``nvvm.mbarrier.expect_tx``; ``scope`` (the release scope, ``cta``/``cluster``) is kept.  Only
  ``space = cta`` on a CTA address and ``space = cluster`` on a ``mapa`` result are rewritten.
* ``nvvm.mapa.shared.cluster`` (4.4, 4.5, typed ``!llvm.ptr<3>``): ``nvvm.mapa`` typed
  ``!llvm.ptr<7>`` (a shared::cluster address), as 4.8 types it.
* ``llvm.inline_asm "bar.sync $0, $1;"`` / ``"bar.sync $0;"`` / ``"bar.arrive $0, $1;"`` that the
  DSL's ``cute.arch.barrier``/``barrier_arrive`` emit (4.4, 4.5): ``nvvm.barrier`` /
  ``nvvm.barrier.arrive`` on the same operands (``bar.sync`` is ``barrier.sync.aligned``).
* ``nvvm.fence.acq_rel.{cta,cluster,gpu,sys}`` (4.4, 4.5): ``llvm.fence acq_rel`` with the LLVM
  sync scope 4.8 gives it (``block``, ``cluster``, ``device``, none for the system).
* ``nvvm.vote.ballot.sync`` (4.4, 4.5): ``nvvm.vote.sync`` of kind ``ballot`` (a value the
  extractor does not follow, in either spelling).
* ``cute_nvgpu.arch.get_dyn_smem`` (the base of the dynamic shared memory that 4.4's
  ``SmemAllocator`` carves up; 4.8 allocates each block with ``cute.memref.alloca``): every base
  of the kernel becomes one ``cute.memref.alloca`` of the fields ``compat.record_smem_fields``
  recorded on it, and the allocator's ``get_dyn_smem_size`` bounds check (``cf.assert``) goes.
  Without recorded fields, or with fields that overlap, the base stays as it is.
"""
from __future__ import annotations

import re
from typing import Optional

from .compat import SMEM_FIELDS_ATTR
from .inline_ptx import acq_rel_fence
from .mlir_data import Op, Region, TracedKernel

_RENAMES = {"nvvm.mbarrier.init.shared": "nvvm.mbarrier.init",
            "nvvm.mbarrier.try_wait.parity.shared": "nvvm.mbarrier.try_wait.parity"}
_TXN = {"arrive": "nvvm.mbarrier.arrive", "arrive_expect_tx": "nvvm.mbarrier.arrive.expect_tx",
        "expect_tx": "nvvm.mbarrier.expect_tx"}
_FENCES = {f"nvvm.fence.acq_rel.{s}": s for s in ("cta", "cluster", "gpu", "sys")}
_GET_DYN = "cute_nvgpu.arch.get_dyn_smem"
_DYN_SIZE = "cute_nvgpu.arch.get_dyn_smem_size"


def _enum(attr, name: str) -> Optional[str]:
    """``#nvvm.mbar_txn_kind<arrive>`` -> ``arrive`` (None for another attribute)."""
    m = re.fullmatch(rf"#nvvm\.{name}<(\w+)>", str(attr or ""))
    return m.group(1) if m else None


def _txn(op: Op) -> None:
    kind = _enum(op.attrs.get("kind"), "mbar_txn_kind")
    scope = _enum(op.attrs.get("scope"), "mbar_scope")
    space = _enum(op.attrs.get("space"), "mbar_space")
    if kind not in _TXN or scope not in ("cta", "cluster") or len(op.operands) != 2:
        return
    addr = op.operand_types[0]
    # the address space the op names must be the one its address is in (a shared::cluster
    # address only from nvvm.mapa, rewritten below to 4.8's !llvm.ptr<7>)
    if not ((space == "cta" and "ptr<3>" in addr) or (space == "cluster" and "ptr<7>" in addr)):
        return
    op.name = _TXN[kind]
    attrs = {k: v for k, v in op.attrs.items() if k not in ("kind", "scope", "space")}
    if kind != "expect_tx":
        attrs.update(relaxed=False, scope=f"#nvvm.mem_scope<{scope}>")
    op.attrs = attrs


# 4.4's cute.arch.barrier / barrier_arrive: inline PTX (4.8: nvvm.barrier / nvvm.barrier.arrive)
_BAR_ASM = {("bar.sync $0, $1;", "r,r", 2): "nvvm.barrier",
            ("bar.sync $0;", "r", 1): "nvvm.barrier",
            ("bar.arrive $0, $1;", "r,r", 2): "nvvm.barrier.arrive"}


def _bar_asm(op: Op) -> bool:
    """The DSL's own named-barrier inline PTX (its ``barrier``/``barrier_arrive`` emitted it)
    -> the nvvm op with the same operands: ``bar.sync a, b`` is ``barrier.sync.aligned a, b``."""
    key = (str(op.attrs.get("asm_string", "")).strip(), str(op.attrs.get("constraints", "")),
           len(op.operands))
    name = _BAR_ASM.get(key)
    if name is None or op.results or not op.loc.lib_frames or \
            op.loc.lib_frames[0] not in ("barrier", "barrier_arrive"):
        return False
    op.name, op.attrs = name, {}
    return True


def _fields(op: Op) -> Optional[list[tuple[str, int, int]]]:
    out = []
    for f in op.attrs.get(SMEM_FIELDS_ATTR) or []:
        try:
            name, size, off = str(f).rsplit(":", 2)
            out.append((name, int(size), int(off)))
        except ValueError:
            return None
    return out or None


def _dyn_smem(k: TracedKernel) -> None:
    bases = [o for o in k.walk() if o.name == _GET_DYN]
    if not bases:
        return
    fields: list[tuple[str, int, int]] = []
    for b in bases:
        fs = _fields(b)
        if fs is None or len(b.results) != 1:
            return  # not every base says what it holds: leave them (UNSUPPORTED)
        fields.extend(f for f in fs if f not in fields)
    spans = sorted((off, off + size) for _, size, off in fields)
    if any(size <= 0 for _, size, _ in fields) or \
            any(b0 < a1 for (_, a1), (b0, _) in zip(spans, spans[1:])):
        return  # overlapping blocks (two allocators on one base): not one struct
    total = max(end for _, end in spans)
    m = re.search(r"align<(\d+)>", bases[0].result_types[0])
    align = f", align<{m.group(1)}>" if m else ""
    mem = max(k.value_info) + 1 if k.value_info else 0
    alloca = Op(name="cute.memref.alloca", results=[mem],
                result_types=[f'!cute.memref<i8, smem{align}, "{total}:1">'],
                attrs={"smem.struct_fields": [f"{n}:{s}:{o}" for n, s, o in fields]},
                loc=bases[0].loc)
    for b in bases:  # each base: the allocation's first byte
        b.name, b.operands, b.operand_types = "cute.get_iter", [mem], [alloca.result_types[0]]
        b.attrs = {}
    k.body.blocks[0].ops.insert(0, alloca)
    sizes = {r for o in k.walk() if o.name == _DYN_SIZE for r in o.results}
    checks = set()
    for o in k.walk():  # the allocator's bound checks: get_dyn_smem_size >= its bytes
        if o.name == "arith.cmpi" and any(v in sizes for v in o.operands):
            checks.update(o.results)
    _drop(k.body, lambda o: (o.name == "cf.assert" and o.operands and o.operands[0] in checks))
    for name in ("arith.cmpi", _DYN_SIZE):  # then what only fed them
        used = {v for o in k.walk() for v in o.operands}
        _drop(k.body, lambda o: o.name == name and not any(r in used for r in o.results) and
              (name == _DYN_SIZE or any(v in sizes for v in o.operands)))


def _drop(region: Region, pred) -> None:
    for b in region.blocks:
        b.ops = [o for o in b.ops if not pred(o)]
        for o in b.ops:
            for r in o.regions:
                _drop(r, pred)


def _mapa(k: TracedKernel) -> bool:
    """``nvvm.mapa.shared.cluster(addr, rank) : !llvm.ptr<3>`` (4.4) is 4.8's
    ``nvvm.mapa(addr, rank) : !llvm.ptr<7>``: the shared::cluster address of ``addr`` in CTA
    ``rank`` (PTX ``mapa.shared::cluster``).  Its users see the address as ``!llvm.ptr<7>``."""
    remote = set()
    for op in k.walk():
        if op.name == "nvvm.mapa.shared.cluster" and len(op.results) == 1 and \
                len(op.operands) == 2 and "ptr<3>" in op.result_types[0]:
            op.name = "nvvm.mapa"
            op.result_types = ["!llvm.ptr<7>"]
            remote.add(op.results[0])
    if not remote:
        return False
    for op in k.walk():
        op.operand_types = ["!llvm.ptr<7>" if v in remote else t
                            for v, t in zip(op.operands, op.operand_types)]
    return True


def normalize(k: TracedKernel) -> TracedKernel:
    """Rewrite ``k`` in place (see the module docstring) and reindex it when anything changed."""
    changed = _mapa(k)
    for op in k.walk():
        if op.name in _RENAMES:
            op.name = _RENAMES[op.name]
            changed = True
        elif op.name == "nvvm.mbarrier.txn":
            _txn(op)
            changed = True
        elif op.name == "llvm.inline_asm":
            changed = _bar_asm(op) or changed
        elif op.name in _FENCES and not op.operands and not op.results:
            acq_rel_fence(op, _FENCES[op.name])
            changed = True
        elif op.name == "nvvm.vote.ballot.sync":
            op.name = "nvvm.vote.sync"
            op.attrs = {**op.attrs, "kind": "#nvvm<vote_sync_kind ballot>"}
            changed = True
    if any(o.name == _GET_DYN for o in k.walk()):
        _dyn_smem(k)
        changed = True
    if changed:
        k.reindex()
    return k

