"""Register fragments of warpgroup MMAs (wgmma): which register tensors a wgmma accumulates
into or reads A from, and which ops access them.

A wgmma writes its accumulator (d, the same registers as c) and reads an A fragment in
registers (an RS wgmma) asynchronously until a wgmma.wait_group of the warp retires its group
(PTX 9.7.15.6, wgmma.wait_group): a thread that loads, stores or copies those registers before
then reads a value that is still changing or overwrites one still being read. The walker
emits `wgmma.acc` where a wgmma accumulates into one and `acc.access` where any other op
touches one; the SyncIR rules decide whether a group is still pending there.

Which values are an accumulator is decided once per kernel, over every op in every region,
before any warp is walked: a register tensor is found by its allocation (`cute.memref.alloca`
of register memory), and every register tensor or pointer made from it (views, slices,
partitions, its iterator) is the same accumulator. An op that takes one and makes only register
tensors, pointers or layout values from it is a view; any other op is an access.
"""
from __future__ import annotations

import re
from typing import Optional

from ..frontend.mlir_data import Op, TracedKernel
from . import cute_types as ct

GEMM = "cute.gemm"
# result types that describe a tensor without touching its registers
_METADATA = re.compile(r"^!cute\.(layout|shape|stride|int_tuple|coord|tile)\b")


def _register_value(t: str) -> bool:
    """A register tensor or a pointer: a pointer made from a fragment (its iterator, an LLVM
    pointer cast from it) stays the fragment, so a load through it later is an access."""
    return ct.memref_space(t) == "rmem" or t.startswith(("!cute.ptr<", "!llvm.ptr"))


def _wgmma(op: Op) -> bool:
    """A cute.gemm of a warpgroup MMA atom (sm90): d and c are register accumulators."""
    return op.name == GEMM and len(op.operands) >= 5 and bool(op.operand_types) and \
        "sm90" in op.operand_types[0]


def accumulators(k: TracedKernel) -> dict[int, str]:
    """Every value id that is (a view of) a register tensor some wgmma accumulates into, with
    the accumulator's name (acc0, acc1, ... in order of allocation)."""
    root: dict[int, int] = {}
    written: list[int] = []
    for top in k.body.blocks[0].ops:
        for op in top.walk():
            if op.name == "cute.memref.alloca" and op.results and \
                    ct.memref_space(op.result_types[0]) == "rmem":
                root[op.results[0]] = op.results[0]
                continue
            src = next((root[v] for v in op.operands if v in root), None)
            if src is not None:
                for r, t in zip(op.results, op.result_types):
                    if _register_value(t):
                        root[r] = src
            if _wgmma(op):  # d and c, and A when it is a register fragment (an RS wgmma)
                written += [root[v] for v in (op.operands[1], op.operands[2], op.operands[4])
                            if v in root]
    names = {r: f"acc{i}" for i, r in enumerate(sorted(set(written)))}
    return {v: names[r] for v, r in root.items() if r in names}


def wgmma_acc(accs: dict[int, str], op: Op) -> list[str]:
    """The register fragments a wgmma `op` uses until its group is retired: its accumulator,
    and its A operand when that is in registers (none: not a wgmma)."""
    if not _wgmma(op):
        return []
    return list(dict.fromkeys(accs[v] for v in op.operands[1:5] if v in accs))


def accessed(accs: dict[int, str], op: Op) -> Optional[str]:
    """The register fragment of some wgmma that `op` reads or writes other than as a wgmma
    operand, or None (no such operand, or a view of one)."""
    operands = op.operands
    if _wgmma(op):  # a wgmma's own use of its operands is what `wgmma.acc` records
        operands = [v for i, v in enumerate(op.operands) if i not in (1, 2, 4)]
    acc = next((accs[v] for v in operands if v in accs), None)
    if acc is None or op.regions:
        return None
    if op.results and all(_register_value(t) or _METADATA.match(t) for t in op.result_types):
        return None
    return acc
