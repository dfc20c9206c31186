"""mbarriers: the barrier a pointer names, init, arrive (expect_tx), expect_tx, wait and
test_wait, and the init fence.
"""
from __future__ import annotations

from typing import Callable

from ...frontend.mlir_data import Op
from ...syncir.ir import Const, MBarRef, Stmt, Var
from ...syncir.ops import (MbarArrive, MbarArriveExpectTx, MbarExpectTx, MbarInit, MbarInitFence, MbarTestWait, MbarWait, Unsupported)
from ..values import Ptr, Unknown, Value, lin_expr
from ..effects import Effects, NONE, rule


class MbarrierRules:
    """The walker's rules for mbarrier ops (mixed into `WarpWalker`)."""

    def bar_ref(self, vid: int, op: Op) -> MBarRef | str:
        """The mbarrier a pointer value designates, or why it cannot be resolved."""
        p = self.val(vid)
        if not isinstance(p, Ptr) or p.alloc is None:
            return f"barrier address not traced to a shared-memory allocation ({p!r:.60})"
        arr = self.ctx.array(p.alloc, p.const, self.loc(op))
        if arr is None:
            return f"barrier offset {p.const} outside the allocation's fields"
        name, off, _ = arr
        rel = p.const - off
        if rel % 8 or any(c % 8 for _, c in p.lin):
            return "barrier address not 8-byte aligned in the traced arithmetic"
        index = lin_expr(tuple((x, c // 8) for x, c in p.lin), rel // 8, self.f)
        return MBarRef(name, index, p.cta)

    def mbar_stmt(self, op: Op, out: list, make: Callable[[MBarRef], Stmt]) -> None:
        self.mbar_stmt_at(op, 0, out, make)

    def mbar_stmt_at(self, op: Op, operand: int, out: list, make: Callable[[MBarRef], Stmt]) -> None:
        ref = self.bar_ref(op.operands[operand], op)
        if isinstance(ref, str):
            out.append(Unsupported(f"{op.name}: {ref}", self.loc(op)))
        else:
            out.append(make(ref))
            self.labels.extend(op.loc.labels)
        for r in op.results:
            self.env[r] = Unknown("mbarrier token")

    def mbar_init(self, op, out):
        self.mbar_stmt(op, out, lambda b: MbarInit(b, self.expr(op.operands[1]), self.loc(op)))

    def note_relaxed(self, op) -> None:
        if op.attrs.get("relaxed") is True or op.name.endswith(".relaxed"):
            self.ctx.relaxed_arrives.append((self.warp, f"{op.name} (relaxed)@{op.loc.short()}"))

    @staticmethod
    def arrive_scope(op) -> str:
        """What an mbarrier arrive releases: `relaxed` (nothing), or the scope of its release
        (`cta`, the PTX default, or `cluster`)."""
        if op.attrs.get("relaxed") is True or op.name.endswith(".relaxed"):
            return "relaxed"
        return "cluster" if "cluster" in str(op.attrs.get("scope", "")) else "cta"

    def mbar_arrive(self, op, out):
        self.note_relaxed(op)
        cnt = self.expr(op.operands[1]) if len(op.operands) > 1 else Const(1)
        self.mbar_stmt(op, out, lambda b: MbarArrive(b, cnt, self.loc(op), self.arrive_scope(op)))

    def mbar_arrive_tx(self, op, out):
        self.note_relaxed(op)
        self.mbar_stmt(op, out, lambda b: MbarArriveExpectTx(b, self.expr(op.operands[1]),
                                                              self.loc(op), self.arrive_scope(op)))

    def mbar_expect_tx(self, op, out):
        self.mbar_stmt(op, out, lambda b: MbarExpectTx(b, self.expr(op.operands[1]), self.loc(op)))

    def mbar_wait(self, op, out):
        self.mbar_stmt(op, out, lambda b: MbarWait(b, self.expr(op.operands[1]), self.loc(op)))

    def mbar_probe(self, op, out):
        dest = f"t{op.uid}"
        self.mbar_stmt(op, out, lambda b: MbarTestWait(dest, b, self.expr(op.operands[1]), self.loc(op)))
        if op.results:
            self.env[op.result] = Var(dest)

    def mbar_probe_timelimit(self, op, out):
        """``mbarrier.try_wait.parity.timelimit``: a test of the phase that may first suspend the
        thread until the phase completes or the time limit elapses; it returns whether the
        phase completed, as a test does (in an interleaving the test happens at some instant
        before the limit). A relaxed one acquires nothing, which the model's tests assume."""
        if "relaxed" in str(op.attrs.get("order", "")):
            out.append(Unsupported(f"{op.name} with relaxed order (the model's waits acquire "
                                   "what the phase publishes)", self.loc(op)))
            self.set_unknown_results(op)
            return
        self.mbar_probe(op, out)

    def fence_init(self, op, out):
        out.append(MbarInitFence(self.loc(op)))

    def _ref_of(self, value: Value, op: Op) -> MBarRef | str:
        key = -1 - op.uid  # a private slot in env for a value that has no id
        self.env[key] = value
        try:
            return self.bar_ref(key, op)
        finally:
            del self.env[key]


# an mbarrier op writes or reads its barrier's 8 bytes; its rule follows a remote one (mapa)
BARRIER_WRITE = Effects("write", cluster="own")
BARRIER_READ = Effects("read", cluster="own")

HANDLERS = {
    "nvvm.mbarrier.init": rule(MbarrierRules.mbar_init, BARRIER_WRITE),
    "nvvm.mbarrier.arrive": rule(MbarrierRules.mbar_arrive, BARRIER_WRITE),
    "nvvm.mbarrier.arrive.expect_tx": rule(MbarrierRules.mbar_arrive_tx, BARRIER_WRITE),
    "nvvm.mbarrier.expect_tx": rule(MbarrierRules.mbar_expect_tx, BARRIER_WRITE),
    "nvvm.mbarrier.try_wait.parity": rule(MbarrierRules.mbar_wait, BARRIER_READ),
    "nvvm.mbarrier.wait.parity": rule(MbarrierRules.mbar_probe, BARRIER_READ),
    "nvvm.mbarrier.try_wait.parity.timelimit": rule(MbarrierRules.mbar_probe_timelimit, BARRIER_READ),
    "nvvm.fence.mbarrier.init": rule(MbarrierRules.fence_init, NONE),
}
