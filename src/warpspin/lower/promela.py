"""SyncIR -> Promela (docs/semantics.md, implemented a second time; interp.py is the first).

Each SyncIR process is a proctype executing the flat code of `syncir.flat`, so program counters
match the interpreter's. Its body is one `do` with an option per visible instruction (Op,
BarResume, End): `d_step { pc == v && enabled -> print WS|S; effect; local code up to the next
visible instruction; pc = next }`. One visible step is thus one indivisible SPIN transition and
stores one state, in BFS as in DFS (an `atomic` would store its inner states under BFS). A wait is
enabled when it passes and also when it would be a violation, so violations are found where the
hardware would block. A violation prints `WS|V|<kind>|...` after its step's `WS|S` line, then
`assert(false)`. The End option leaves the `do`: an exited instance has terminated, an instance
blocked at a wait has not, so SPIN's "invalid end state" is the deadlock of the spec.

`async_ops` completes any in-flight TMA load at any time (`WS|C|...`); it idles at an `end` label.

Symmetric encoding (`reduce=True`): the instances of a process that initializes no mbarrier are
records of one array kept sorted (memcmp order, by an embedded-C insertion step after each
step), so states that differ by a permutation of identical instances are one state. Such records
print their position (`WS|s`) and every move (`WS|M`); `engine.spin.parse_trail` turns positions
back into instance numbers. Embedded C is why trails are replayed by `pan -r`, not `spin -t`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import analysis
from ..syncir.flat import (CLUSTER_ARRIVED, CLUSTER_GEN, BarResume, Bound, Branch, End,
                           FlatProcess, Goto, Let, Op, VISIBLE, flatten)
from ..syncir.ir import (BarArrive, BarSync, BinOp, ClusterArrive, ClusterWait, Const, Expr,
                         Kernel, MBarRef, MbarArrive, MbarArriveExpectTx, MbarExpectTx, MbarInit,
                         MbarInitFence, MbarTestWait, MbarWait, Select, TmaLoad, UnOp, Unsupported,
                         Var, expr_vars, walk_stmts)

TX_LIMIT = (1 << 20) - 1
PHASE_LIMIT = 32767
NUM_NAMED_BARRIERS = 16


class LowerError(Exception):
    """The kernel uses something this lowering cannot express (it names what and where)."""


@dataclass(frozen=True)
class LoweredModel:
    kernel: Kernel
    text: str                                     # the Promela model
    flat: tuple[FlatProcess, ...]
    proctypes: tuple[str, ...]                    # proctype name per SyncIR process
    first_gid: tuple[int, ...]                    # global instance number of instance 0, per process
    async_keys: tuple[tuple[int, int, int, int], ...]  # (process, pc, cta, index) per `infl` slot
    named_slots: tuple[tuple[int, int], ...]      # (cta, barrier id) per `nb` slot
    symmetric: tuple[int, ...] = ()               # processes whose instances are sorted records
    # every reduction applied (docs/semantics.md, "Reductions"); the verdict names them
    reductions: tuple[str, ...] = ()
    # independent identical CTAs: the model is CTA 0 alone (`checked`, a 1-CTA kernel);
    # cta_procs[c][j] is the process of `kernel` that is process j of `checked` in CTA c
    checked: Kernel | None = None
    cta_procs: tuple[tuple[int, ...], ...] = ()
    probe_text: str = ""  # the model plus a monitor that stops at the first terminal state
    # R6 wait->arrive fusion: (process, wait pc, release pc) of every fused block
    fused: tuple[tuple[int, int, int], ...] = ()

    @property
    def lowered(self) -> Kernel:
        """The kernel the Promela text models (the component, for independent CTAs)."""
        return self.checked if self.checked is not None else self.kernel

    def original_process(self, pi: int, cta: int = 0) -> int:
        return self.cta_procs[cta][pi] if self.cta_procs else pi


# ----------------------------------------------------------------------------- names

def _ident(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _unique(names, prefix: str) -> dict[str, str]:
    out, used = {}, set()
    for n in names:
        base = prefix + _ident(n)
        cand, i = base, 1
        while cand in used:
            i += 1
            cand = f"{base}_{i}"
        used.add(cand)
        out[n] = cand
    return out


# ----------------------------------------------------------------------------- expressions

def _expr(e: Expr, env: dict[str, str]) -> str:
    """Promela text for `e`; `env` maps SyncIR variable names to Promela names."""
    if isinstance(e, Const):
        return str(e.value) if e.value >= 0 else f"({e.value})"
    if isinstance(e, Var):
        if e.name not in env:
            raise LowerError(f"undefined variable {e.name!r}")
        return env[e.name]
    if isinstance(e, UnOp):
        a = _expr(e.arg, env)
        return f"(-{a})" if e.op == "-" else f"({a} == 0)"
    if isinstance(e, Select):
        return f"(({_expr(e.cond, env)} != 0) -> {_expr(e.then, env)} : {_expr(e.else_, env)})"
    assert isinstance(e, BinOp)
    a, b = _expr(e.lhs, env), _expr(e.rhs, env)
    op = e.op
    if op == "//":  # floor division (divisor > 0)
        return f"(({a} >= 0) -> ({a} / {b}) : (-((-{a} + {b} - 1) / {b})))"
    if op == "%":
        return f"((({a} % {b}) + {b}) % {b})"
    if op in ("min", "max"):
        cmp = "<=" if op == "min" else ">="
        return f"(({a} {cmp} {b}) -> {a} : {b})"
    if op in ("and", "or"):
        return f"(({a} != 0) {'&&' if op == 'and' else '||'} ({b} != 0))"
    return f"({a} {op} {b})"


def _fold(e: Expr) -> Expr:
    """Constant-fold + - * on constants (keeps barrier indices readable)."""
    if isinstance(e, BinOp) and e.op in ("+", "-", "*"):
        a, b = _fold(e.lhs), _fold(e.rhs)
        if isinstance(a, Const) and isinstance(b, Const):
            return Const({"+": a.value + b.value, "-": a.value - b.value,
                          "*": a.value * b.value}[e.op])
        return BinOp(e.op, a, b)
    return e


# ----------------------------------------------------------------------------- the lowering

class _Lowering:
    def __init__(self, kernel: Kernel, reduce: bool, fuse: bool = False):
        self.k = kernel
        self.reduce = reduce
        self.flat = flatten(kernel)
        # R6: fusable blocks, per process {wait pc: release pc}; monitored barrier arrays
        self.fusable = [fusable_blocks(fp) if fuse else {} for fp in self.flat]
        self.monitored = sorted({fp.code[w].stmt.bar.name for pi, fp in enumerate(self.flat)
                                 for w in self.fusable[pi]})
        self.atw = _unique(self.monitored, "atw_")
        # reduced encoding: narrow local types (value ranges) and dead-variable resets
        pr = {p.name: (p.lo, p.hi) for p in kernel.params}
        self.ranges = [analysis.ranges(fp, pr) if reduce else None for fp in self.flat]
        self.live = [analysis.liveness(fp) if reduce else None for fp in self.flat]
        self.params = _unique([p.name for p in kernel.params], "P_")
        self.mbars = _unique([m.name for m in kernel.mbarriers], "mb_")
        self.first_gid, g = [], 0
        for p in kernel.processes:
            self.first_gid.append(g)
            g += p.instances
        self.proctypes = [f"p{i}_{_ident(p.role)}" for i, p in enumerate(kernel.processes)]
        self.async_keys, self.async_base = [], {}
        for pi, fp in enumerate(self.flat):
            for pc, ins in enumerate(fp.code):
                if isinstance(ins, Op) and isinstance(ins.stmt, TmaLoad):
                    self.async_base[(pi, pc)] = len(self.async_keys)
                    size = kernel.mbarrier(ins.stmt.bar.name).size
                    self.async_keys += [(pi, pc, c, i) for c in range(kernel.num_ctas)
                                        for i in range(size)]
        self._named_layout()
        self.cluster = any(isinstance(i, Op) and isinstance(i.stmt, (ClusterArrive, ClusterWait))
                           for fp in self.flat for i in fp.code)
        # processes in the symmetric encoding: several instances, none of which initializes an
        # mbarrier (an initializer's identity is part of the barrier state: init_by)
        self.symmetric = {pi for pi, fp in enumerate(self.flat) if reduce
                          and fp.process.instances > 1
                          and not any(isinstance(i, Op) and isinstance(i.stmt, MbarInit)
                                      for i in fp.code)}

    # -- named barriers: one slot per (cta, id) used, or all 16 per CTA when an id is dynamic
    def _named_layout(self):
        ids, dynamic = set(), False
        for pi, fp in enumerate(self.flat):
            for ins in fp.code:
                if isinstance(ins, Op) and isinstance(ins.stmt, (BarSync, BarArrive)):
                    bid = _fold(ins.stmt.barrier_id)
                    if isinstance(bid, Const):
                        if not 0 <= bid.value < NUM_NAMED_BARRIERS:
                            raise LowerError(f"{ins.loc}: named barrier id {bid.value} outside 0..15")
                        ids.add((fp.process.cta, bid.value))
                    else:
                        dynamic = True
        self.named_dynamic = dynamic
        if dynamic:
            self.named_slots = [(c, i) for c in range(self.k.num_ctas)
                                for i in range(NUM_NAMED_BARRIERS)]
        else:
            self.named_slots = sorted(ids)
        self.named_slot = {k: n for n, k in enumerate(self.named_slots)}

    def nb(self, cta: int, bid: Expr, env) -> str:
        bid = _fold(bid)
        if isinstance(bid, Const):
            return f"nb[{self.named_slot[(cta, bid.value)]}]"
        return f"nb[{cta * NUM_NAMED_BARRIERS} + {_expr(bid, env)}]"

    # -- mbarrier element of a reference, as Promela lvalue text
    def mb(self, ref: MBarRef, cta: int, env) -> str:
        return f"{self.mbars[ref.name]}[{_expr(mb_index(self.k, ref, cta), env)}]"

    def monitor(self, name: str, idx: str, viol) -> list[str]:
        """R6 monitor, in the phase-completion (and init) code of element `idx` of array `name`:
        an instance sitting at a fused wait on it whose parity test passes now (parity
        1 - (n & 1)) makes the fusion unsound: report `reduction-unsound` (docs/semantics.md R6)."""
        if name not in self.atw:
            return []
        el = f"{self.mbars[name]}[{idx}]"
        return [f"if :: {self.atw[name]}[({idx}) * 2 + 1 - ({el}.n & 1)] > 0 -> "
                f"{viol('reduction-unsound')} :: else fi;"]

    # ------------------------------------------------------------------ the whole model
    def model(self) -> str:
        out = [f"/* warpspin: kernel {self.k.name} (generated; docs/semantics.md) */",
               "c_code { static int ws_trail; }  /* embedded C: pan -r prints the WS| lines */",
               "typedef MBar { byte vis; int exp; int pend; int tx; short n; short by };",
               "typedef NBar { int exp; int arr; int gen };"]
        for p in self.k.params:
            out.append(f"int {self.params[p.name]};")
        for m in self.k.mbarriers:
            out.append(f"MBar {self.mbars[m.name]}[{m.size * self.k.num_ctas}];")
        if self.named_slots:
            out.append(f"NBar nb[{len(self.named_slots)}];")
        out.append(f"int live[{self.k.num_ctas}];")
        if self.cluster:
            out.append("int cl_arr; int cl_gen;  /* cluster barrier: threads arrived, generation */")
        if self.async_keys:
            out.append(f"int infl[{len(self.async_keys)}];")
        if self.monitored:
            out.append("/* R6 monitor: instances at a fused wait, per (element, parity) */")
            many = sum(p.instances for p in self.k.processes) > 255
            for name in self.monitored:
                n = 2 * self.k.mbarrier(name).size * self.k.num_ctas
                out.append(f"{'short' if many else 'byte'} {self.atw[name]}[{n}];")
        out.append("")
        for pi in sorted(self.symmetric):
            out += self.record_decls(pi)
        for c in range(self.k.num_ctas):
            out += self.publish_inline(c)
        if self.cluster:
            out += self.cluster_inline()
        for pi in range(len(self.flat)):
            out += self.proctype(pi)
        if self.async_keys:
            out += self.async_proctype()
        out += self.init()
        return "\n".join(out) + "\n"

    def publish_inline(self, cta: int) -> list[str]:
        """Completion of a CTA barrier publishes the fenced mbarrier inits of that CTA."""
        lines = [f"inline publish_{cta}() {{"]
        for m in self.k.mbarriers:
            for i in range(m.size):
                el = f"{self.mbars[m.name]}[{cta * m.size + i}]"
                lines.append(f"  if :: {el}.vis == 2 -> {el}.vis = 3 :: else fi;")
        lines.append("  skip\n}")
        return lines

    def cluster_inline(self) -> list[str]:
        """Completion check of the cluster barrier: every live thread of the cluster arrived;
        publishes the fenced mbarrier inits of every CTA (interp.try_complete_cluster)."""
        live = " + ".join(f"live[{c}]" for c in range(self.k.num_ctas))
        return ["inline cluster_try_complete() {",
                f"  if :: (cl_arr > 0 && cl_arr >= {live}) -> cl_arr = 0; cl_gen = cl_gen + 1;",
                *[f"       publish_{c}();" for c in range(self.k.num_ctas)],
                "     :: else fi", "}"]

    def init(self) -> list[str]:
        lines = ["init {", "  atomic {"]
        for p in self.k.params:
            v = self.params[p.name]
            opts = " ".join(f":: {v} = {x}" for x in p.values)
            lines.append(f"    if {opts} fi;")
            lines.append(f'    printf("WS|P|{p.name}|%d\\n", {v});')
        for c in range(self.k.num_ctas):
            lines.append(f"    live[{c}] = {self.k.cta_threads(c)};")
        for pi, p in enumerate(self.k.processes):
            if pi in self.symmetric:
                locals_ = _unique(self.flat[pi].locals, "l_")
                for j in range(p.instances):
                    sets = [f"r{pi}[{j}].{locals_[n]} = {v};" for n, v in p.init if v]
                    lines += [f"    {x}" for x in sets]
                if not isinstance(self.flat[pi].code[0], VISIBLE):
                    # the records are global: their local start-up code runs here, inside init's
                    # atomic block, so it costs no step of the search (counterexamples stay
                    # shortest in visible steps)
                    for j in range(p.instances):
                        lines += _indent(_Ctx(self, pi, j).continuation(f"I{pi}_", 0), 4)
                lines.append(f"    run {self.proctypes[pi]}();")
                continue
            for j in range(p.instances):
                lines.append(f"    run {self.proctypes[pi]}({j});")
        if self.async_keys:
            lines.append("    run async_ops();")
        lines += ["  }", "}"]
        return lines

    # ------------------------------------------------------------------ one process
    def proctype(self, pi: int) -> list[str]:
        if pi in self.symmetric:
            return self.symmetric_proctype(pi)
        fp = self.flat[pi]
        ctx = _Ctx(self, pi)
        lines = [f"proctype {self.proctypes[pi]}(byte inst) {{"]
        init = dict(fp.process.init)
        for n in fp.locals:
            lines.append(f"  {self.ltype(pi, n)} {ctx.locals[n]} = {init.get(n, 0)};")
        for name in ctx.obs:
            lines.append(f"  short {ctx.obs[name]}[{self.k.mbarrier(name).size}];")
        lines.append(f"  {_pc_type(fp)} pc = 0;")
        if not isinstance(fp.code[0], VISIBLE):
            lines += ["  d_step { true;", *_indent(ctx.continuation("I", 0), 4), "  };"]
        lines.append("  do")
        for pc, ins in enumerate(fp.code):
            if isinstance(ins, VISIBLE):
                lines += self.option(ctx, pc, ins, "}; break" if isinstance(ins, End) else "}",
                                     tuple(ctx.resets(None)) if isinstance(ins, End) else ())
        lines += ["  od", "}", ""]
        return lines

    def option(self, ctx: "_Ctx", pc: int, ins, close: str, after: tuple[str, ...] = ()) -> list[str]:
        """`:: d_step { guard -> step; local code up to the next visible pc }`."""
        if pc in self.fusable[ctx.pi]:
            return self.fused_option(ctx, pc, ins, close, after)
        guard, body = ctx.visible(pc, ins)
        at = f"{ctx.pc} == {pc}"
        lines = [f"  :: d_step {{ {at if guard == 'true' else at + ' && ' + guard} ->",
                 *_indent(body, 7)]
        if not isinstance(ins, End):
            lines += _indent(ctx.continuation(str(pc), pc + 1), 7)
        return lines + _indent(after, 7) + [f"     {close}"]

    def fused_option(self, ctx: "_Ctx", w: int, ins, close: str, after=()) -> list[str]:
        """R6 (docs/semantics.md): the wait at `w`, and when it passes cleanly and the release
        at r = fusable[w] names another element than the wait, also the `Let`s and the release,
        in one d_step (both steps print their WS|S lines). Otherwise the wait alone, as in the
        unfused model. Leaving w decrements the monitor counter of (element, parity)."""
        code = ctx.fp.code
        r = self.fusable[ctx.pi][w]
        st, rel = ins.stmt, code[r]
        guard, wbody = ctx.visible(w, ins)
        _, bad, aliased, passed = ctx.wait_conds(st)
        clean = f"({passed} && !{aliased} && !{bad})"
        lets = code[w + 1:r]
        diff = "true"
        if isinstance(rel.stmt, BarArrive) or rel.stmt.bar.name != st.bar.name:
            pass
        else:
            eb = mb_index(self.k, rel.stmt.bar, ctx.p.cta)
            for let in reversed(lets):
                eb = _subst(eb, let.var, let.value)
            ea = mb_index(self.k, st.bar, ctx.p.cta)
            diff = f"({ctx.e(ea)} != {ctx.e(eb)})"
        _, rbody = ctx.visible(r, rel)
        fused = [*wbody, *[f"{ctx.locals[x.var]} = {ctx.e(x.value)};" for x in lets], *rbody,
                 *ctx.continuation(f"F{w}", r + 1)]
        alone = [*wbody, *ctx.continuation(str(w), w + 1)]
        at = f"{ctx.pc} == {w}"
        lines = [f"  :: d_step {{ {at if guard == 'true' else at + ' && ' + guard} ->",
                 *_indent(ctx.at_w(w, -1), 7),
                 f"       if :: ({clean} && {diff}) ->",
                 *_indent(fused, 12),
                 "          :: else ->",
                 *_indent(alone, 12),
                 "       fi;"]
        return lines + _indent(after, 7) + [f"     {close}"]

    # -- the symmetric encoding: the instances of a process are records of one array, kept
    #    sorted, so states that differ only by a permutation of identical instances are one state.
    def ltype(self, pi: int, name: str) -> str:
        """Promela type of a local: `int`, or the narrowest type of its value range."""
        r = self.ranges[pi]
        return analysis.ctype(r[name]) if r is not None else "int"

    def record_fields(self, pi: int) -> list[tuple[str, str, int]]:
        """(type, name, array size or 0) of an instance record."""
        fp = self.flat[pi]
        fields = [(_pc_type(fp), "pc", 0)]
        fields += [(self.ltype(pi, n), v, 0) for n, v in _unique(fp.locals, "l_").items()]
        fields += [("short", v, self.k.mbarrier(n).size)
                   for n, v in _unique(waited_arrays(fp), "o_").items()]
        return fields

    def record_decls(self, pi: int) -> list[str]:
        """The record type and array, and `ws_sort<pi>(i)` in C: moves record i to its place
        (the others are sorted; any total order will do, so memcmp) and prints the move for the
        trail (`WS|M`, printed only when pan replays a trail)."""
        n = self.k.processes[pi].instances
        decl = "; ".join(f"{t} {f}" + (f"[{k}]" if k else "") for t, f, k in self.record_fields(pi))
        return [f"typedef R{pi} {{ {decl} }};",
                f"R{pi} r{pi}[{n}];",
                "c_code {",
                f"  static void ws_sort{pi}(int i) {{",
                f"    struct R{pi} t, *r = now.r{pi}; int j = i;",
                f"    while (j > 0 && memcmp(&r[j], &r[j - 1], sizeof t) < 0)",
                "    { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t; j--; }",
                f"    while (j < {n - 1} && memcmp(&r[j + 1], &r[j], sizeof t) < 0)",
                "    { t = r[j]; r[j] = r[j + 1]; r[j + 1] = t; j++; }",
                f'    if (j != i) Printf("WS|M|{pi}|%d|%d\\n", i, j);',
                "  }",
                "}", ""]

    def symmetric_proctype(self, pi: int) -> list[str]:
        fp = self.flat[pi]
        n = self.k.processes[pi].instances
        done = len(fp.code)  # the pc of an exited instance
        lines = [f"proctype {self.proctypes[pi]}() {{"]
        lines.append("  do")
        for i in range(n):
            ctx = _Ctx(self, pi, i)
            for pc, ins in enumerate(fp.code):
                if isinstance(ins, VISIBLE):
                    after = ((*ctx.resets(None), f"{ctx.pc} = {done};") if isinstance(ins, End)
                             else ())
                    lines += self.option(ctx, pc, ins, "}",
                                         after + (f"c_code {{ ws_sort{pi}({i}); }}",))
        every = " && ".join(f"r{pi}[{i}].pc == {done}" for i in range(n))
        lines += [f"  :: {every} -> break", "  od", "}", ""]
        return lines

    def async_proctype(self) -> list[str]:
        lines = ["proctype async_ops() {", "end: do"]  # a valid end state: it may idle forever
        env = dict(self.params)
        for slot, (pi, pc, cta, idx) in enumerate(self.async_keys):
            st = self.flat[pi].code[pc].stmt
            if expr_vars(st.bytes) - set(self.params):
                raise LowerError(f"{st.loc}: TMA byte count depends on process locals "
                                 f"({', '.join(sorted(expr_vars(st.bytes) - set(self.params)))})")
            el = f"{self.mbars[st.bar.name]}[{cta * self.k.mbarrier(st.bar.name).size + idx}]"
            viol = _viol_text(pi, "-1", pc)
            gidx = str(cta * self.k.mbarrier(st.bar.name).size + idx)
            body = [f'printf("WS|C|{pi}|{pc}|{cta}|{idx}\\n");',
                    f"{el}.tx = {el}.tx - {_expr(st.bytes, env)};",
                    *_tx_check(el, viol),
                    *_try_complete(el, viol, self.monitor(st.bar.name, gidx, viol))]
            lines.append(f"  :: d_step {{ infl[{slot}] > 0 -> infl[{slot}]--;")
            lines += ["       " + s for s in body]
            lines.append("     }")
        lines += ["od", "}", ""]
        return lines


def _indent(lines, n: int) -> list[str]:
    return [" " * n + x for x in lines]


def _pc_type(fp: FlatProcess) -> str:
    return "byte" if len(fp.code) < 255 else "short"


def waited_arrays(fp: FlatProcess) -> list[str]:
    return sorted({ins.stmt.bar.name for ins in fp.code if isinstance(ins, Op)
                   and isinstance(ins.stmt, (MbarWait, MbarTestWait))})


def _viol_text(pi: int, inst: str, pc: int):
    """Promela for a violation of `kind` at (process, instance, pc): print, then fail."""
    def viol(kind: str) -> str:
        if inst == "-1":
            return f'printf("WS|V|{kind}|{pi}|-1|{pc}\\n"); assert(false)'
        return f'printf("WS|V|{kind}|{pi}|%d|{pc}\\n", {inst}); assert(false)'
    return viol


def _tx_check(el: str, viol) -> list[str]:
    return [f"if :: ({el}.tx > {TX_LIMIT} || {el}.tx < -{TX_LIMIT}) -> {viol('tx-mismatch')}",
            "   :: else fi;"]


def mb_index(k: Kernel, ref: MBarRef, cta: int) -> Expr:
    """Index of the element `ref` names (in CTA `cta` when it names no CTA) in its array."""
    size = k.mbarrier(ref.name).size
    c = Const(cta) if ref.cta is None else ref.cta
    return _fold(BinOp("+", BinOp("*", c, Const(size)), ref.index))


def _subst(e: Expr, var: str, value: Expr) -> Expr:
    if isinstance(e, Var):
        return value if e.name == var else e
    if isinstance(e, UnOp):
        return UnOp(e.op, _subst(e.arg, var, value))
    if isinstance(e, BinOp):
        return BinOp(e.op, _subst(e.lhs, var, value), _subst(e.rhs, var, value))
    if isinstance(e, Select):
        return Select(_subst(e.cond, var, value), _subst(e.then, var, value),
                      _subst(e.else_, var, value))
    return e


FUSABLE_RELEASES = (MbarArrive, MbarArriveExpectTx, MbarExpectTx, TmaLoad, BarArrive)


def fusable_blocks(fp: FlatProcess) -> dict[int, int]:
    """R6 (docs/semantics.md): {w: r} for every visible `MbarWait` at pc w > 0 followed by
    `Let`s only (straight line) up to a release op at pc r that never blocks (an arrive,
    expect-tx, a non-multicast TMA issue or a bar.arrive)."""
    out = {}
    for w, ins in enumerate(fp.code):
        if w == 0 or not (isinstance(ins, Op) and isinstance(ins.stmt, MbarWait)):
            continue
        r = w + 1
        while r < len(fp.code) and isinstance(fp.code[r], Let):
            r += 1
        rel = fp.code[r] if r < len(fp.code) else None
        if (isinstance(rel, Op) and isinstance(rel.stmt, FUSABLE_RELEASES)
                and not (isinstance(rel.stmt, TmaLoad) and rel.stmt.multicast is not None)):
            out[w] = r
    return out


def _try_complete(el: str, viol, mon: list[str] = ()) -> list[str]:
    return [f"if :: ({el}.pend == 0 && {el}.tx == 0) ->",
            *[f"     {m}" for m in mon],
            f"     if :: {el}.n >= {PHASE_LIMIT} -> {viol('phase-bound')} :: else fi;",
            f"     {el}.n = {el}.n + 1; {el}.pend = {el}.exp",
            "   :: else fi;"]


class _Ctx:
    """Lowering of one process: its locals and the text of its instructions. For a process of the
    symmetric encoding, `slot` is the position of the instance's record in the sorted array."""

    def __init__(self, low: _Lowering, pi: int, slot: int | None = None):
        self.low, self.pi = low, pi
        self.fp = low.flat[pi]
        self.p = self.fp.process
        self.symmetric = slot is not None
        rec = f"r{pi}[{slot}]." if self.symmetric else ""
        self.pc = rec + "pc"
        self.inst = str(slot) if self.symmetric else "inst"
        self.locals = {n: rec + v for n, v in _unique(self.fp.locals, "l_").items()}
        self.env = {**low.params, **self.locals}
        self.obs = {n: rec + v for n, v in _unique(waited_arrays(self.fp), "o_").items()}
        self.inited = sorted({ins.stmt.bar.name for ins in self.fp.code if isinstance(ins, Op)
                              and isinstance(ins.stmt, MbarInit)})
        self.gid = f"({low.first_gid[pi]} + inst)" if low.first_gid[pi] else "inst"
        self.tag = "" if slot is None else f"s{slot}_"

    def e(self, x: Expr) -> str:
        return _expr(x, self.env)

    def resets(self, pc: int | None) -> list[str]:
        """Dead-variable reset on reaching visible pc `pc` (None: exit): locals that are not
        live there, and the `obs` of barrier arrays never waited on again, become 0."""
        lv = self.low.live[self.pi]
        if lv is None:
            return []
        live, arrays = (lv[0][pc], lv[1][pc]) if pc is not None else ((), ())
        out = [f"{v} = 0;" for n, v in self.locals.items() if n not in live]
        for name, o in self.obs.items():
            if name not in arrays:
                out += [f"{o}[{i}] = 0;" for i in range(self.low.k.mbarrier(name).size)]
        return out

    # -- local code after a visible instruction, up to the next visible one(s)
    def continuation(self, tag: str, start: int) -> list[str]:
        code = self.fp.code
        tag = self.tag + tag
        if isinstance(code[start], VISIBLE):
            return [" ".join([*self.resets(start), *self.at_w(start, 1), f"{self.pc} = {start}"])]
        order, seen, todo = [], set(), [start]
        while todo:
            pc = todo.pop()
            if pc in seen or isinstance(code[pc], VISIBLE):
                continue
            seen.add(pc)
            order.append(pc)
            ins = code[pc]
            succ = [ins.target] if isinstance(ins, Goto) else [pc + 1]
            if isinstance(ins, Branch):
                succ.append(ins.target)
            todo += succ

        def to(pc: int) -> str:
            if isinstance(code[pc], VISIBLE):
                return " ".join([*self.resets(pc), *self.at_w(pc, 1),
                                 f"{self.pc} = {pc}; goto D{tag}"])
            return f"goto C{tag}_{pc}"

        out = []
        for pc in sorted(order, key=lambda x: (x != start, x)):
            ins = code[pc]
            lab = f"C{tag}_{pc}:"
            if isinstance(ins, Let):
                out.append(f"{lab} {self.locals[ins.var]} = {self.e(ins.value)}; {to(pc + 1)};")
            elif isinstance(ins, Goto):
                out.append(f"{lab} {to(ins.target)};")
            elif isinstance(ins, Branch):
                out.append(f"{lab} if :: ({self.e(ins.cond)} != 0) -> {to(pc + 1)} "
                           f":: else -> {to(ins.target)} fi;")
            elif isinstance(ins, Bound):
                c = self.locals[ins.counter]
                v = _viol_text(self.pi, self.inst, pc)
                out.append(f"{lab} if :: {c} >= {ins.limit} -> {v('loop-bound')} "
                           f":: else -> {c} = {c} + 1 fi; {to(pc + 1)};")
        return out + [f"D{tag}: skip"]

    # -- one visible instruction: (guard, body lines)
    def visible(self, pc: int, ins) -> tuple[str, list[str]]:
        viol = _viol_text(self.pi, self.inst, pc)
        # a record prints its position (WS|s); the trail parser follows the moves (WS|M)
        tag = "s" if self.symmetric else "S"
        step = f'printf("WS|{tag}|{self.pi}|%d|{pc}\\n", {self.inst});'
        if isinstance(ins, End):
            return "true", [step, *self.exit(viol)]
        if isinstance(ins, BarResume):
            nb = self.low.nb(self.p.cta, ins.stmt.barrier_id, self.env)
            return f"({nb}.gen != {self.locals[ins.snap]})", [step]
        st = ins.stmt
        if isinstance(st, ClusterWait):
            carr, cgen = self.locals[CLUSTER_ARRIVED], self.locals[CLUSTER_GEN]
            return (f"({carr} == 0 || cl_gen != {cgen})",
                    [step, f"if :: {carr} == 0 -> {viol('arrival-mismatch')} :: else fi;",
                     f"{carr} = 0;"])
        if isinstance(st, (MbarWait, MbarTestWait)):
            el = self.low.mb(st.bar, self.p.cta, self.env)
            o = f"{self.obs[st.bar.name]}[{self.e(st.bar.index)}]"
            _, bad, aliased, passed = self.wait_conds(st)
            body = [step,
                    f"if :: {bad} -> {viol('uninitialized-barrier')}",
                    f"   :: else -> if :: {aliased} -> {viol('parity-aliasing')} :: else fi",
                    "fi;"]
            if isinstance(st, MbarTestWait):
                d = self.locals[st.dest]
                body += [f"if :: {passed} -> {o} = {el}.n; {d} = 1 :: else -> {d} = 0 fi;"]
                return "true", body
            body += [f"{o} = {el}.n;"]  # enabled and no violation: it passes
            return f"({passed} || {aliased} || {bad})", body
        T = self.p.threads if ins.lanes is None else ins.lanes
        return "true", [step, *self.effect(pc, st, T, viol)]

    def wait_conds(self, st) -> tuple[str, str, str, str]:
        """(element, bad visibility, aliased, parity passes) of a wait or test-wait."""
        el = self.low.mb(st.bar, self.p.cta, self.env)
        par = f"({self.e(st.parity)} & 1)"
        o = f"{self.obs[st.bar.name]}[{self.e(st.bar.index)}]"
        bad = self.bad_vis(el, tma=False)
        aliased = f"(({el}.n - {o} >= 2 && {par} == ({o} & 1)) || {el}.n - {o} >= 3)"
        passed = f"(({el}.n & 1) != {par})"
        return el, bad, aliased, passed

    def at_w(self, pc: int, delta: int) -> list[str]:
        """R6 monitor bookkeeping: an instance reaching (+1) or leaving (-1) the fused wait at
        `pc` counts in atw[element * 2 + parity]."""
        if pc not in self.low.fusable[self.pi]:
            return []
        st = self.fp.code[pc].stmt
        a = self.low.atw[st.bar.name]
        i = (f"({self.e(mb_index(self.low.k, st.bar, self.p.cta))}) * 2 + "
             f"({self.e(st.parity)} & 1)")
        return [f"{a}[{i}] = {a}[{i}] {'+' if delta > 0 else '-'} 1;"]

    def mon(self, ref: MBarRef, viol) -> list[str]:
        return self.low.monitor(ref.name, self.e(mb_index(self.low.k, ref, self.p.cta)), viol)

    def bad_vis(self, el: str, tma: bool) -> str:
        if self.symmetric:  # never an initializer (see _Lowering.symmetric)
            return f"({el}.vis < 3)"
        other = f"({el}.by != {self.gid} && {el}.vis < 3)"
        own = f" || ({el}.by == {self.gid} && {el}.vis < 2)" if tma else ""
        return f"({el}.vis == 0 || {other}{own})"

    def effect(self, pc: int, st, T: int, viol) -> list[str]:
        """The effect of sync op `st` executed by T threads of this instance."""
        if isinstance(st, MbarInit):
            el = self.low.mb(st.bar, self.p.cta, self.env)
            cnt = self.e(st.count)
            return [*self.mon(st.bar, viol),
                    f"if :: {el}.vis != 0 -> {viol('barrier-reinit')} :: else fi;",
                    f"if :: ({cnt} < 1 || {cnt} > {TX_LIMIT}) -> {viol('arrival-mismatch')} "
                    ":: else fi;",
                    f"{el}.vis = 1; {el}.exp = {cnt}; {el}.pend = {cnt}; {el}.tx = 0; "
                    f"{el}.n = 0; {el}.by = {self.gid};"]
        if isinstance(st, MbarInitFence):
            out = []
            for name in self.inited:
                m = self.low.mbars[name]
                for i in range(self.low.k.mbarrier(name).size * self.low.k.num_ctas):
                    out.append(f"if :: ({m}[{i}].vis == 1 && {m}[{i}].by == {self.gid}) -> "
                               f"{m}[{i}].vis = 2 :: else fi;")
            return out
        if isinstance(st, (MbarArrive, MbarArriveExpectTx, MbarExpectTx)):
            el = self.low.mb(st.bar, self.p.cta, self.env)
            out = [f"if :: {self.bad_vis(el, tma=False)} -> {viol('uninitialized-barrier')} "
                   ":: else fi;"]
            if isinstance(st, (MbarArriveExpectTx, MbarExpectTx)):
                out += [f"{el}.tx = {el}.tx + {T} * {self.e(st.bytes)};", *_tx_check(el, viol)]
            mon = self.mon(st.bar, viol)
            if isinstance(st, MbarExpectTx):
                return out + _try_complete(el, viol, mon)
            cnt = f"{T} * {self.e(st.count)}" if isinstance(st, MbarArrive) else str(T)
            return out + [f"if :: ({cnt} > {el}.pend) -> {viol('arrival-mismatch')} :: else fi;",
                          f"{el}.pend = {el}.pend - {cnt};", *_try_complete(el, viol, mon)]
        if isinstance(st, (BarSync, BarArrive)):
            return self.bar_arrive(pc, st, T, viol)
        if isinstance(st, ClusterArrive):
            carr, cgen = self.locals[CLUSTER_ARRIVED], self.locals[CLUSTER_GEN]
            return [f"if :: {carr} != 0 -> {viol('arrival-mismatch')} :: else fi;",
                    f"{carr} = 1; {cgen} = cl_gen; cl_arr = cl_arr + {T};",
                    "cluster_try_complete();"]
        if isinstance(st, TmaLoad) and st.multicast is not None:
            return self.multicast(pc, st, viol)
        if isinstance(st, TmaLoad):
            el = self.low.mb(st.bar, self.p.cta, self.env)
            size = self.low.k.mbarrier(st.bar.name).size
            c = Const(self.p.cta) if st.bar.cta is None else st.bar.cta
            slot = _fold(BinOp("+", BinOp("+", Const(self.low.async_base[(self.pi, pc)]),
                                          BinOp("*", c, Const(size))), st.bar.index))
            s = self.e(slot)
            return [f"if :: {self.bad_vis(el, tma=True)} -> {viol('uninitialized-barrier')} "
                    ":: else fi;",
                    f"infl[{s}] = infl[{s}] + 1;"]
        if isinstance(st, Unsupported):
            return []  # the pipeline refuses kernels with reachable Unsupported ops
        raise LowerError(f"{st.loc}: cannot lower {type(st).__name__}")

    def multicast(self, pc: int, st: TmaLoad, viol) -> list[str]:
        """One in-flight load per CTA of the mask, on the same element (interp.tma_targets)."""
        n = self.low.k.num_ctas
        size = self.low.k.mbarrier(st.bar.name).size
        mask, idx = self.e(st.multicast), self.e(st.bar.index)
        out = [f"if :: ({mask} == 0 || ({mask} >> {n}) != 0) -> {viol('scope')} :: else fi;"]
        base = self.low.async_base[(self.pi, pc)]
        for c in range(n):
            el = f"{self.low.mbars[st.bar.name]}[{c * size} + {idx}]"
            slot = f"infl[{base + c * size} + {idx}]"
            out.append(f"if :: (({mask} >> {c}) & 1) != 0 ->")
            out.append(f"     if :: {self.bad_vis(el, tma=True)} -> "
                       f"{viol('uninitialized-barrier')} :: else fi;")
            out.append(f"     {slot} = {slot} + 1")
            out.append("   :: else fi;")
        return out

    def bar_arrive(self, pc: int, st, T: int, viol) -> list[str]:
        cta = self.p.cta
        nb = self.low.nb(cta, st.barrier_id, self.env)
        out = []
        if self.low.named_dynamic:
            bid = self.e(st.barrier_id)
            out.append(f"if :: ({bid} < 0 || {bid} >= {NUM_NAMED_BARRIERS}) -> "
                       f"{viol('model-error')} :: else fi;")
        if T % 32 != 0:
            out.append(viol("divergent-barrier") + ";")
        want = "(-1)" if st.threads is None else self.e(st.threads)
        if st.threads is not None:
            out.append(f"if :: ({want} <= 0 || {want} % 32 != 0) -> {viol('arrival-mismatch')} "
                       ":: else fi;")
        out += [f"if :: {nb}.exp == 0 -> {nb}.exp = {want}",
                f"   :: else -> if :: {nb}.exp != {want} -> {viol('arrival-mismatch')} :: else fi",
                "fi;"]
        if isinstance(st, BarSync):
            snap = self.fp.code[pc + 1].snap
            out.append(f"{self.locals[snap]} = {nb}.gen;")
        target = f"(({nb}.exp == -1) -> live[{cta}] : {nb}.exp)"
        out += [f"{nb}.arr = {nb}.arr + {T};",
                f"if :: {nb}.arr > {target} -> {viol('arrival-mismatch')} :: else fi;",
                f"if :: {nb}.arr == {target} -> {self.complete_named(nb, cta)} :: else fi;"]
        return out

    def complete_named(self, nb: str, cta: int) -> str:
        return f"{nb}.gen = {nb}.gen + 1; {nb}.arr = 0; {nb}.exp = 0; publish_{cta}()"

    def exit(self, viol) -> list[str]:
        cta, low = self.p.cta, self.low
        out = [f"live[{cta}] = live[{cta}] - {self.p.threads};"]
        if low.named_dynamic:
            slots = [f"nb[{cta * NUM_NAMED_BARRIERS + i}]" for i in range(NUM_NAMED_BARRIERS)]
        else:
            slots = [f"nb[{n}]" for n, (c, _) in enumerate(low.named_slots) if c == cta]
        for nb in slots:
            out.append(f"if :: ({nb}.exp == -1 && {nb}.arr > 0 && {nb}.arr >= live[{cta}]) -> "
                       f"{self.complete_named(nb, cta)} :: else fi;")
        if low.cluster:
            out.append("cluster_try_complete();")
        pending = [f"infl[{n}]" for n, key in enumerate(low.async_keys) if key[2] == cta]
        if pending:
            out.append(f"if :: (live[{cta}] == 0 && {' + '.join(pending)} > 0) -> "
                       f"{viol('pending-at-exit')} :: else fi;")
        return out


def independent_ctas(kernel: Kernel) -> tuple[Kernel, tuple[tuple[int, ...], ...]] | None:
    """When no op crosses CTAs (no remote mbarrier reference, no multicast, no cluster barrier)
    and every CTA runs the same processes, the CTAs are independent identical components: return
    CTA 0 as a 1-CTA kernel and, per CTA, its processes (indices into kernel.processes) in the
    component's order. None otherwise. Exactness: docs/semantics.md, "Reductions"."""
    if kernel.num_ctas < 2:
        return None
    for p in kernel.processes:
        for s in walk_stmts(p.body):
            if isinstance(s, (ClusterArrive, ClusterWait)):
                return None
            if isinstance(s, TmaLoad) and s.multicast is not None:
                return None
            bar = getattr(s, "bar", None)
            if bar is not None and bar.cta is not None:
                return None
    per = [[i for i, p in enumerate(kernel.processes) if p.cta == c] for c in range(kernel.num_ctas)]
    if any(p.cta not in range(kernel.num_ctas) for p in kernel.processes):
        return None
    base = [replace(kernel.processes[i], cta=0) for i in per[0]]
    if not base:
        return None
    for c in range(1, kernel.num_ctas):
        if [replace(kernel.processes[i], cta=0) for i in per[c]] != base:
            return None
    comp = Kernel(kernel.name, tuple(base), kernel.mbarriers, kernel.params, 1, kernel.loc)
    return comp, tuple(tuple(x) for x in per)


PROBE = """
/* terminal-state probe: the first state in which no other process can move (a deadlock or the
   end of every instance) stops the search; BFS makes its trail the shortest such path */
proctype ws_probe() { timeout -> printf("WS|T\\n"); assert(false) }
"""


def lower(kernel: Kernel, reduce: bool = True, fuse: bool | None = None) -> LoweredModel:
    """Promela for `kernel`. With `reduce` (the default), the exact reductions of
    docs/semantics.md ("Reductions") apply and are listed in `LoweredModel.reductions`:
    independent identical CTAs (one is checked), identical instances of a process as sorted
    records (symmetry), narrow local types, dead-variable resets. `reduce=False` is the plain
    encoding: one Promela process per instance, every CTA, `int` locals.

    `fuse` (default: `reduce`): R6, wait->release fusion with a monitored right-mover condition.
    When its condition fails in a reachable state the model reports kind `reduction-unsound`
    (engine.check's `EngineResult.kind`); the caller must then check `lower(kernel, reduce,
    fuse=False)` instead (engine.spin.lower_and_check does both)."""
    if fuse is None:
        fuse = reduce
    checked, cta_procs, reductions = None, (), []
    if reduce:
        split = independent_ctas(kernel)
        if split is not None:
            checked, cta_procs = split
            reductions.append(f"independent-ctas: {kernel.num_ctas} identical CTAs, no op "
                              "crosses CTAs; one is checked")
    k = checked if checked is not None else kernel
    low = _Lowering(k, reduce, fuse)
    text = low.model()
    if low.symmetric:
        reductions.append("symmetric-instances: identical instances of "
                          + ", ".join(k.processes[pi].role for pi in sorted(low.symmetric))
                          + " as sorted records")
    if reduce:
        reductions += ["narrow-types: locals typed by their value range",
                       "dead-variable-reset: dead locals and obs reset at each step"]
    fused = tuple((pi, w, r) for pi, f in enumerate(low.fusable) for w, r in sorted(f.items()))
    if fused:
        reductions.append(f"R6: wait-release fusion of {len(fused)} block(s) (a passing wait and "
                          "the release after it are one step; monitored, exact)")
    probe = ""
    if checked is not None:
        probe = text.replace("  atomic {\n", "  atomic {\n    run ws_probe();\n", 1)
        probe = probe.replace("\ninit {", PROBE + "\ninit {", 1)
    return LoweredModel(kernel, text, low.flat, tuple(low.proctypes), tuple(low.first_gid),
                        tuple(low.async_keys), tuple(low.named_slots), tuple(sorted(low.symmetric)),
                        tuple(reductions), checked, cta_procs, probe, fused)
