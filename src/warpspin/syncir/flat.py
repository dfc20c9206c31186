"""Structured SyncIR bodies -> flat code with explicit jumps.

The interpreter and the Promela lowering both execute this flat form, so a program counter (an
index into `FlatProcess.code`) names the same step in both, and SPIN trails map back to SyncIR ops.

Visible instructions (one model step each, shown in traces): `Op` (a sync op of syncir/ops/, with
the lanes that execute it; an op with a `resume` (`bar.sync`, a cta_group::2 TMEM op) becomes
its issue and its resume, an exit or the end of the body an `Exit`).
Local instructions (no effect outside the process, run eagerly): Let, Branch, Goto, Bound.
"""
from __future__ import annotations

from dataclasses import dataclass

from .ir import (Assign, BinOp, Const, Expr, For, If, Kernel, Lanes, Loc, NOLOC, Process, Stmt,
                 Var, While)
from .ops import Exit, SyncOp, snap_var


class FlattenError(ValueError):
    """The body cannot be flattened (invalid SyncIR that the validator reports first)."""


@dataclass(frozen=True)
class Op:
    stmt: SyncOp
    lanes: int | None = None  # threads of the instance that execute it (None: all of them)

    @property
    def loc(self) -> Loc:
        return self.stmt.loc

    def threads(self, p: Process) -> int:
        return p.threads if self.lanes is None else self.lanes


@dataclass(frozen=True)
class Let:
    var: str
    value: Expr
    loc: Loc = NOLOC


@dataclass(frozen=True)
class Branch:
    """if not cond: goto target."""
    cond: Expr
    target: int
    loc: Loc = NOLOC


@dataclass(frozen=True)
class Goto:
    target: int
    loc: Loc = NOLOC


@dataclass(frozen=True)
class Bound:
    """counter += 1; running past `limit` is a loop-bound event (the model is truncated)."""
    counter: str
    limit: int
    loc: Loc = NOLOC


VISIBLE = (Op,)
Instr = Op | Let | Branch | Goto | Bound


def is_exit(ins) -> bool:
    return isinstance(ins, Op) and isinstance(ins.stmt, Exit)


@dataclass(frozen=True)
class FlatProcess:
    process: Process
    code: tuple[Instr, ...]
    locals: tuple[str, ...]  # every local, user and hidden, in a fixed order

    @property
    def role(self) -> str:
        return self.process.role

    def ops(self):
        """(pc, Op) of every visible instruction."""
        return [(pc, ins) for pc, ins in enumerate(self.code) if isinstance(ins, Op)]


def flatten_process(p: Process) -> FlatProcess:
    code: list = []
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"_{prefix}{counter[0]}"

    def emit(ins) -> int:
        code.append(ins)
        return len(code) - 1

    def patch(at: int, target: int):
        ins = code[at]
        code[at] = type(ins)(**{**ins.__dict__, "target": target})

    lanes: list[int | None] = [None]

    def body(stmts):
        for s in stmts:
            stmt(s)

    def stmt(s: Stmt):
        if isinstance(s, Assign):
            emit(Let(s.var, s.value, s.loc))
        elif isinstance(s, If):
            br = emit(Branch(s.cond, -1, s.loc))
            body(s.then)
            if s.else_:
                skip = emit(Goto(-1, s.loc))
                patch(br, len(code))
                body(s.else_)
                patch(skip, len(code))
            else:
                patch(br, len(code))
        elif isinstance(s, For):
            if s.step <= 0:
                raise FlattenError(f"{s.loc}: loop step must be a positive constant")
            stop = fresh("stop")
            emit(Let(s.var, s.start, s.loc))
            emit(Let(stop, s.stop, s.loc))
            head = emit(Branch(BinOp("<", Var(s.var), Var(stop)), -1, s.loc))
            body(s.body)
            emit(Let(s.var, BinOp("+", Var(s.var), Const(s.step)), s.loc))
            emit(Goto(head, s.loc))
            patch(head, len(code))
        elif isinstance(s, While):
            it = fresh("iter")
            emit(Let(it, Const(0), s.loc))
            head = emit(Branch(s.cond, -1, s.loc))
            emit(Bound(it, s.max_iters, s.loc))
            body(s.body)
            emit(Goto(head, s.loc))
            patch(head, len(code))
        elif isinstance(s, Lanes):
            outer = lanes[0]
            lanes[0] = s.count if outer is None else min(outer, s.count)
            body(s.body)
            lanes[0] = outer
        elif isinstance(s, Exit):
            if lanes[0] is not None:
                raise FlattenError(f"{s.loc}: exit inside a lane subset is not modelled")
            emit(Op(s))
        elif isinstance(s, SyncOp):
            at = emit(Op(s, lanes[0]))
            resume = s.resume(snap_var(at))
            if resume is not None:
                emit(Op(resume, lanes[0]))
        else:
            raise FlattenError(f"{getattr(s, 'loc', NOLOC)}: not a SyncIR statement: {s!r}")

    body(p.body)
    last = p.body[-1].loc if p.body else NOLOC
    emit(Op(Exit(last)))
    return FlatProcess(p, tuple(code), tuple(sorted(_locals(p, code))))


def _locals(p: Process, code) -> set[str]:
    names = {n for n, _ in p.init}
    for pc, ins in enumerate(code):
        if isinstance(ins, Let):
            names.add(ins.var)
        elif isinstance(ins, Bound):
            names.add(ins.counter)
        elif isinstance(ins, Op):
            names.update(ins.stmt.own_locals(pc))
    return names


def buffer_locals(kernel: Kernel, p: Process) -> set[str]:
    """The hidden locals of staged buffers a process needs: its write bits (per stage: written
    unfenced, fenced and unreleased; once: released raw) when it writes a buffer, its open TMA
    stores per stage when it stores one, its open wgmma or tcgen05.mma reads per stage when it
    reads one."""
    from .ir import walk_stmts
    from .ops import (CpAsync, CpAsyncCommit, CpAsyncWait, MmaRead, SmemOwn, SmemWrite,
                      TmaStore, WgmmaRead, mma_open, br_unfenced, bs_open, bw_fenced, bw_released_raw, bw_unfenced,
                      cp_group, cp_open, touches_filled_in, wg_open, TmemLoad, tl_open)
    names: set[str] = set()
    stmts = list(walk_stmts(p.body))
    for b in kernel.buffers:
        if any(isinstance(s, SmemWrite) and s.buf == b.name for s in stmts):
            names.add(bw_released_raw(b.name))
            for i in range(b.stages):
                names |= {bw_unfenced(b.name, i), bw_fenced(b.name, i)}
        if any(isinstance(s, TmaStore) and s.buf == b.name for s in stmts):
            names |= {bs_open(b.name, i) for i in range(b.stages)}
        if any(isinstance(s, WgmmaRead) and b.name in {r[0] for r in s.reads} for s in stmts):
            names.add(wg_open(b.name))
        for s in stmts:
            if isinstance(s, MmaRead) and b.name in {r[0] for r in s.reads} and b.space == "smem":
                names |= {mma_open(b.name)} | ({mma_open(b.name, True)} if s.pair else set())
        if any(isinstance(s, TmemLoad) and b.name in {r[0] for r in s.reads} for s in stmts):
            names.add(tl_open(b.name))
        if touches_filled_in(kernel, p.body, b.name):
            names |= {br_unfenced(b.name, i) for i in range(b.stages)}
        if any(isinstance(s, (CpAsync, SmemOwn)) and s.buf == b.name for s in stmts):
            depth = max((getattr(s, "depth", 0) for s in stmts
                         if isinstance(s, (CpAsyncCommit, CpAsyncWait, SmemOwn))), default=0)
            names |= {cp_open(b.name), *(cp_group(b.name, i) for i in range(depth))}
    return names


def flatten(kernel: Kernel) -> tuple[FlatProcess, ...]:
    out = []
    for p in kernel.processes:
        fp = flatten_process(p)
        extra = buffer_locals(kernel, p) if kernel.buffers else set()
        out.append(FlatProcess(fp.process, fp.code, tuple(sorted(set(fp.locals) | extra)))
                   if extra else fp)
    return tuple(out)
