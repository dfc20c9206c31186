"""Static analyses of flat SyncIR code for the lowering (docs/semantics.md, "Reductions" and
"Integers"). What an op reads and writes comes from its rule (syncir/ops/), never from a list
of op types here.

* `liveness`: the locals (and observed barrier arrays) that may still be read from each pc on.
  A dead local is reset to 0 when an instance reaches a visible pc (dead-variable reset).
* `ranges`: an interval for every local over every reachable pc (abstract interpretation with
  widening), so locals get the narrowest Promela type that holds every value they can take.
* `integer_problems`: expressions whose value may not fit the model's 32-bit integers.
All are conservative: an unknown value is the full range, an unknown use is a use.
"""
from __future__ import annotations

import math

from ..syncir.flat import Bound, Branch, Goto, Let, Op
from ..syncir.ir import BinOp, Const, Expr, Select, UnOp, Var, expr_vars
from ..syncir.layout import Layout
from ..syncir.objects import (ASYNC_COPY, CLUSTER_BARRIER, INT32, LIMITS, MBARRIER, NAMED_BARRIER,
                              GLOBAL_COUNTER, GLOBAL_FLAG, OBSERVATION, SHARED_WORD, TENSORMAP, TMEM, BUFFER,
                              BUFFER_STAGE)
from ..syncir.rules import (BufField, Carried, TmapField, TmemField, ClusterField, CounterField, FlagField, Inflight, Live, Local, MbarField, NamedField, Obs, Self,
                            Set, When, WordField, expr_places, rule_exprs, rule_locals, walk_rule)

INF = math.inf
TOP = (-INF, INF)
BAND = (-LIMITS.local_band, LIMITS.local_band)


def _succ(fp, pc: int) -> list[int]:
    ins = fp.code[pc]
    if isinstance(ins, Op) and type(ins.stmt).__name__ == "Exit":
        return []
    if isinstance(ins, Goto):
        return [ins.target]
    if isinstance(ins, Branch):
        return [pc + 1, ins.target]
    return [pc + 1]


def uses_defs(lay: Layout, pi: int, pc: int) -> tuple[set[str], set[str]]:
    """Locals (and parameters: callers ignore those) read and written by one instruction."""
    ins = lay.flat[pi].code[pc]
    if isinstance(ins, Let):
        return expr_vars(ins.value), {ins.var}
    if isinstance(ins, Branch):
        return expr_vars(ins.cond), set()
    if isinstance(ins, Bound):
        return {ins.counter}, {ins.counter}
    if isinstance(ins, Op):
        rule = lay.rule(pi, pc)
        reads, writes = rule_locals(rule)
        # a local written on some paths of the rule only keeps its old value on the others:
        # that old value is read
        return reads | (writes - _must_write(rule.body)), writes
    return set(), set()


def _must_write(body) -> set[str]:
    """Locals a rule body writes on every path through it."""
    out: set[str] = set()
    for s in body:
        if isinstance(s, Set) and isinstance(s.place, Local):
            out.add(s.place.name)
        elif isinstance(s, When):
            out |= _must_write(s.then) & _must_write(s.else_)
    return out


def observed_arrays(lay: Layout, pi: int, pc: int) -> set[str]:
    ins = lay.flat[pi].code[pc]
    if not isinstance(ins, Op):
        return set()
    out = set()
    r = lay.rule(pi, pc)
    for e in rule_exprs(r):
        out |= {p.array for p in expr_places(e) if isinstance(p, Obs)}
    return out


def liveness(lay: Layout, pi: int) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    """(live locals on entry to each pc, observed barrier arrays still read from each pc)."""
    fp = lay.flat[pi]
    n = len(fp.code)
    pred: list[list[int]] = [[] for _ in range(n)]
    for pc in range(n):
        for s in _succ(fp, pc):
            if s < n:
                pred[s].append(pc)
    ud = [uses_defs(lay, pi, pc) for pc in range(n)]
    reads_obs = [observed_arrays(lay, pi, pc) for pc in range(n)]
    live = [set() for _ in range(n)]
    arr = [set() for _ in range(n)]
    work = list(range(n))
    while work:
        pc = work.pop()
        out, out_a = set(), set()
        for s in _succ(fp, pc):
            if s < n:
                out |= live[s]
                out_a |= arr[s]
        u, d = ud[pc]
        new = u | (out - d)
        new_a = reads_obs[pc] | out_a
        if new != live[pc] or new_a != arr[pc]:
            live[pc], arr[pc] = new, new_a
            work += pred[pc]
    return [frozenset(x) for x in live], [frozenset(x) for x in arr]


def nonzero(lay: Layout, pi: int, live, kills: set[int], init: dict[str, int],
            starts: tuple[int, ...] = (0,)) -> list[tuple[frozenset[str], frozenset[str]]]:
    """(locals, observed arrays) that may be non-zero when an instance arrives at each pc, in
    any reachable state: the start values (at each pc of `starts`, where instances begin), every
    local and `obs` array written on a path to pc, less what an R4 reset removed on arrival at a
    pc of `kills` (pcs where the lowering always resets the dead variables; `live` is
    `liveness`'s). A reset of anything else is a no-op."""
    fp = lay.flat[pi]
    n = len(fp.code)
    def obs_written(pc: int) -> set[str]:
        if not isinstance(fp.code[pc], Op):
            return set()
        return {st.place.array for st in walk_rule(lay.rule(pi, pc).body)
                if isinstance(st, Set) and isinstance(st.place, Obs)}
    writes = [(uses_defs(lay, pi, pc)[1], obs_written(pc)) for pc in range(n)]
    start = (frozenset(x for x, v in init.items() if v), frozenset())
    nz: list = [None] * n
    for pc in starts:
        nz[pc] = start
    work = list(starts)
    while work:
        pc = work.pop()
        loc, arr = nz[pc]
        if pc in kills:
            loc, arr = loc & live[0][pc], arr & live[1][pc]
        out = (loc | writes[pc][0], arr | writes[pc][1])
        for s in _succ(fp, pc):
            if s >= n:
                continue
            new = out if nz[s] is None else (nz[s][0] | out[0], nz[s][1] | out[1])
            if new != nz[s]:
                nz[s] = (frozenset(new[0]), frozenset(new[1]))
                work.append(s)
    return [x if x is not None else (frozenset(), frozenset()) for x in nz]


# ----------------------------------------------------------------------------- intervals

def _join(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return (min(a[0], b[0]), max(a[1], b[1]))


def _meet(a, b):
    return (max(a[0], b[0]), min(a[1], b[1]))


def _bits_hull(a, b):
    """Result range of ^ & | on non-negative operands."""
    if a[0] < 0 or b[0] < 0 or a[1] == INF or b[1] == INF:
        return TOP
    hi = max(a[1], b[1])
    return (0, (1 << int(hi).bit_length()) - 1)


def place_range(p, lay: Layout | None) -> tuple:
    def fr(kind, name):
        f = kind.field(name)
        return (f.lo, f.hi)
    if isinstance(p, MbarField):
        return fr(MBARRIER, p.field)
    if isinstance(p, NamedField):
        return fr(NAMED_BARRIER, p.field)
    if isinstance(p, ClusterField):
        return fr(CLUSTER_BARRIER, p.field)
    if isinstance(p, Live):
        return (0, LIMITS.cta_threads)
    if isinstance(p, Obs):
        return fr(OBSERVATION, "obs")
    if isinstance(p, Inflight):
        return fr(ASYNC_COPY, "inflight")
    if isinstance(p, Carried):
        return fr(ASYNC_COPY, "carried")
    if isinstance(p, WordField):
        return fr(SHARED_WORD, p.field)
    if isinstance(p, CounterField):
        return fr(GLOBAL_COUNTER, p.field)
    if isinstance(p, FlagField):
        return fr(GLOBAL_FLAG, p.field)
    if isinstance(p, TmapField):
        return fr(TENSORMAP, p.field)
    if isinstance(p, TmemField):
        return fr(TMEM, p.field)
    if isinstance(p, BufField):
        return fr(BUFFER if p.stage is None else BUFFER_STAGE, p.field)
    return TOP


def interval(e: Expr, env: dict, lay: Layout | None = None, visit=None) -> tuple:
    """Interval of `e` given intervals of variables; `visit(e, interval)` sees every
    sub-expression (the integer check)."""
    r = _interval(e, env, lay, visit)
    if visit is not None:
        visit(e, r)
    return r


def _interval(e: Expr, env: dict, lay, visit) -> tuple:
    if isinstance(e, Const):
        return (e.value, e.value)
    if isinstance(e, (Var, Local)):
        return env.get(e.name, TOP)
    if isinstance(e, Self):
        n = len(lay.instances) if lay is not None else INF
        return (-2, n)
    if isinstance(e, (MbarField, NamedField, ClusterField, Live, Obs, Inflight, Carried,
                      WordField, CounterField, FlagField, TmapField, TmemField, BufField)):
        for f in ("cta", "index", "bid", "stage"):
            sub = getattr(e, f, None)
            if isinstance(sub, Expr):
                interval(sub, env, lay, visit)
        return place_range(e, lay)
    if isinstance(e, UnOp):
        a = interval(e.arg, env, lay, visit)
        return (-a[1], -a[0]) if e.op == "-" else (0, 1)
    if isinstance(e, Select):
        interval(e.cond, env, lay, visit)
        then, else_ = interval(e.then, env, lay, visit), interval(e.else_, env, lay, visit)
        # `select(a == k, x, a)` (or `select(a != k, a, x)`): the branch that yields `a` is taken
        # only when a != k, so an endpoint k of a's interval is not a value there (the modular
        # stage counter `select(i + 1 == S, 0, i + 1)`)
        c = e.cond
        if (isinstance(c, BinOp) and c.op in ("==", "!=") and isinstance(c.rhs, Const)
                and (e.else_ if c.op == "==" else e.then) == c.lhs):
            k = c.rhs.value
            lo, hi = else_ if c.op == "==" else then
            lo, hi = (lo + 1 if lo == k else lo), (hi - 1 if hi == k else hi)
            ne = (lo, hi) if lo <= hi else None
            return _join(then, ne) if c.op == "==" else _join(ne, else_)
        return _join(then, else_)
    assert isinstance(e, BinOp), e
    a, b = interval(e.lhs, env, lay, visit), interval(e.rhs, env, lay, visit)
    op = e.op
    if op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"):
        return (0, 1)
    if op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if op == "*":
        if INF in (abs(a[0]), abs(a[1]), abs(b[0]), abs(b[1])):
            return TOP
        c = [x * y for x in a for y in b]
        return (min(c), max(c))
    if op == "min":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if op == "max":
        return (max(a[0], b[0]), max(a[1], b[1]))
    if op == "%":
        return (0, b[1] - 1) if b[0] > 0 else TOP
    if op == "//":
        if b[0] <= 0 or INF in (abs(a[0]), abs(a[1]), b[1]):
            return TOP
        c = [x // y for x in a for y in b]
        return (min(c), max(c))
    if op == "&":
        if a[0] >= 0 and b[0] >= 0:
            return (0, min(a[1], b[1]))
        return _bits_hull(a, b)
    return _bits_hull(a, b)  # ^ |


def _refine(cond: Expr, env: dict, truth: bool) -> dict | None:
    """env restricted to the states where `cond` is `truth` (None: none); only `var op expr`."""
    if not (isinstance(cond, BinOp) and cond.op in ("<", "<=", ">", ">=", "==", "!=")):
        return env
    op, lhs, rhs = cond.op, cond.lhs, cond.rhs
    if not isinstance(lhs, Var) and isinstance(rhs, Var):
        lhs, rhs = rhs, lhs
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
    if not isinstance(lhs, Var) or lhs.name not in env:
        return env
    if not truth:
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}[op]
    x, r = env[lhs.name], interval(rhs, env)
    lo, hi = x
    if op == "<":
        hi = min(hi, r[1] - 1)
    elif op == "<=":
        hi = min(hi, r[1])
    elif op == ">":
        lo = max(lo, r[0] + 1)
    elif op == ">=":
        lo = max(lo, r[0])
    elif op == "==":
        lo, hi = max(lo, r[0]), min(hi, r[1])
    elif op == "!=" and r[0] == r[1]:
        if lo == r[0]:
            lo += 1
        if hi == r[0]:
            hi -= 1
    if lo > hi:
        return None
    out = dict(env)
    out[lhs.name] = (lo, hi)
    return out


_UP = (1, 255, 32767, INF)
_DOWN = (0, -32768, -INF)


def _up(x, consts=()):
    """The widening threshold for an upper bound x: the next type bound, or a constant of the
    process's code (+-1) if one lies in between (widening with thresholds: still finitely many,
    so the iteration terminates; it continues until nothing moves, so the result is a
    post-fixpoint whatever the thresholds)."""
    return min([t for t in _UP if x <= t] + [t for t in consts if x <= t])


def _down(x, consts=()):
    return max([t for t in _DOWN if x >= t] + [t for t in consts if x >= t])


def _code_consts(code) -> tuple[int, ...]:
    """Widening thresholds: every constant c of the process's conditions and values, c-1, c+1."""
    out = set()

    def walk(e):
        if isinstance(e, Const):
            out.update((e.value - 1, e.value, e.value + 1))
        elif isinstance(e, BinOp):
            walk(e.lhs), walk(e.rhs)
        elif isinstance(e, UnOp):
            walk(e.arg)
        elif isinstance(e, Select):
            walk(e.cond), walk(e.then), walk(e.else_)
    for ins in code:
        if isinstance(ins, Let):
            walk(ins.value)
        elif isinstance(ins, Branch):
            walk(ins.cond)
        elif isinstance(ins, Bound):
            out.update((ins.limit - 1, ins.limit, ins.limit + 1))
    return tuple(sorted(out))


def ranges(lay: Layout, pi: int, params: dict[str, tuple[int, int]],
           states=None) -> dict[str, tuple]:
    """Interval of every local over every reachable pc. A local whose interval leaves the
    model's band is checked at run time (`integer-range`), so callers may intersect with
    `BAND` (see `checked_locals`). `states`: pc_states' result, when the caller has it."""
    fp = lay.flat[pi]
    state, start = states or pc_states(lay, pi, params)
    result = {n: None for n in fp.locals}
    for env in state:
        if env is not None:
            for n in fp.locals:
                result[n] = _join(result[n], env[n])
    # a local that is never reachable keeps its initial value; dead resets write 0
    return {n: _join(r if r is not None else start[n], (0, 0)) for n, r in result.items()}


def pc_states(lay: Layout, pi: int, params: dict[str, tuple[int, int]]):
    """(intervals of the locals on entry to each pc, None where unreachable; the start env)."""
    fp = lay.flat[pi]
    code = fp.code
    init = dict(fp.process.init)
    start = {**params, **{n: (init.get(n, 0), init.get(n, 0)) for n in fp.locals}}
    state: list[dict | None] = [None] * (len(code) + 1)
    state[0] = start
    visits = [0] * (len(code) + 1)
    work = [0]
    heads = {ins.target for pc, ins in enumerate(code)
             if isinstance(ins, (Goto, Branch)) and ins.target <= pc}
    consts = _code_consts(code)

    def push(pc, env):
        if env is None or pc >= len(code):
            return
        old = state[pc]
        if old is None:
            state[pc] = env
            work.append(pc)
            return
        new = {k: _join(old[k], env[k]) for k in old}
        if new != old:
            visits[pc] += 1
            if pc in heads and visits[pc] > 4:  # widen the bounds that still move
                new = {k: (old[k][0] if new[k][0] >= old[k][0] else _down(new[k][0], consts),
                           old[k][1] if new[k][1] <= old[k][1] else _up(new[k][1], consts))
                       for k in old}
            state[pc] = new
            work.append(pc)

    while work:
        pc = work.pop()
        env = state[pc]
        ins = code[pc]
        if isinstance(ins, Let):
            push(pc + 1, {**env, ins.var: interval(ins.value, env, lay)})
        elif isinstance(ins, Branch):
            push(pc + 1, _refine(ins.cond, env, True))
            push(ins.target, _refine(ins.cond, env, False))
        elif isinstance(ins, Goto):
            push(ins.target, env)
        elif isinstance(ins, Bound):
            c = env[ins.counter]
            push(pc + 1, {**env, ins.counter: (c[0] + 1, min(c[1] + 1, ins.limit))})
        elif isinstance(ins, Op):
            out = dict(env)
            for s in walk_rule(lay.rule(pi, pc).body):
                if isinstance(s, Set) and isinstance(s.place, Local):
                    out[s.place.name] = _join(out[s.place.name], interval(s.value, env, lay))
            for s in _succ(fp, pc):
                push(s, out)
    return state, start


def constant_locals(lay: Layout, pi: int, params: dict[str, tuple[int, int]],
                    live: list[frozenset[str]], keep=()) -> dict[str, int]:
    """Locals that hold one constant c wherever they are read and wherever they are live at a
    visible pc (a stored state), with the value c; also (value 0) locals never read nor live at
    a visible pc. With dead-variable resets (R4) such a local is c where live and 0 where not, a
    function of the pc, so it need not be stored, and every read may print c. `keep`: locals
    never to remove (range-checked ones, loop-bound counters)."""
    fp = lay.flat[pi]
    state, _ = pc_states(lay, pi, params)
    val: dict[str, object] = {n: None for n in fp.locals}
    for n in keep:
        val[n] = False
    for pc, ins in enumerate(fp.code):
        if isinstance(ins, Bound):
            val[ins.counter] = False
    for pc, ins in enumerate(fp.code):
        env = state[pc]
        if env is None:
            continue
        seen = set(uses_defs(lay, pi, pc)[0])
        if isinstance(ins, Op):
            seen |= live[pc]
        for n in seen:
            if n not in val or val[n] is False:
                continue
            lo, hi = env[n]
            if lo != hi or (val[n] is not None and val[n] != lo):
                val[n] = False
            else:
                val[n] = lo
    return {n: (0 if v is None else v) for n, v in val.items() if v is not False}


def checked_locals(rng: dict[str, tuple]) -> set[str]:
    """Locals whose proven interval leaves the band: each assignment to them is checked."""
    return {n for n, r in rng.items() if r[0] < BAND[0] or r[1] > BAND[1]}


def banded(rng: dict[str, tuple]) -> dict[str, tuple]:
    return {n: _meet(r, BAND) for n, r in rng.items()}


def integer_problems(lay: Layout, rngs: list[dict[str, tuple]]) -> list[tuple[str, object]]:
    """(what, loc) for every expression of the model (process code and op rules) one of whose
    sub-expressions may leave the 32-bit integers of the Promela model, given the parameter
    ranges and the locals' (banded) intervals."""
    from ..syncir.printer import fmt_expr
    params = {p.name: (p.lo, p.hi) for p in lay.kernel.params}
    out: list[tuple[str, object]] = []
    for c in params.values():
        if c[0] < INT32[0] or c[1] > INT32[1]:
            out.append((f"a parameter range {c}", lay.kernel.loc))
    for pi, fp in enumerate(lay.flat):
        env = {**params, **banded(rngs[pi])}
        for pc, ins in enumerate(fp.code):
            if isinstance(ins, Let):
                exprs = [ins.value]
            elif isinstance(ins, Branch):
                exprs = [ins.cond]
            elif isinstance(ins, Op):
                exprs = list(rule_exprs(lay.rule(pi, pc)))
            else:
                continue
            for e in exprs:
                bad = []

                def visit(sub, r):
                    if r[0] < INT32[0] or r[1] > INT32[1]:
                        bad.append(sub)
                interval(e, env, lay, visit)
                if bad:
                    out.append((fmt_expr(bad[0]), ins.loc))
    for key in lay.async_keys:
        env = dict(params)
        for e in rule_exprs(lay.completion(key)):
            bad = []
            interval(e, env, lay, lambda sub, r: bad.append(sub)
                     if r[0] < INT32[0] or r[1] > INT32[1] else None)
            if bad:
                out.append((fmt_expr(bad[0]), lay.flat[key[0]].code[key[1]].loc))
    return out


# ----------------------------------------------------------------------------- mbarrier fields

def _sets(body, before=()):
    """(Set, the statements before it in its list) of every Set of a rule body."""
    for i, s in enumerate(body):
        if isinstance(s, Set):
            yield s, body[:i]
        elif isinstance(s, When):
            yield from _sets(s.then, body[:i])
            yield from _sets(s.else_, body[:i])


def _fails_if_greater(before, amount: Expr, place) -> bool:
    """A statement in `before` fails the step when `amount > place` (arrive's check)."""
    from ..syncir.rules import Fail
    for s in before:
        if (isinstance(s, When) and s.cond == BinOp(">", amount, place) and not s.else_
                and any(isinstance(t, Fail) for t in s.then)):
            return True
    return False


def mbar_fields(lay: Layout, rngs: list[dict[str, tuple]]) -> dict[str, dict[str, tuple]]:
    """What each field of each mbarrier array needs to be stored (docs/semantics.md, R3):
    ("const", c): every write writes c, its initial value: not stored;
    ("vis", c, z): written only by mbarrier.init, always c, and vis (never reset to 0) says
    whether the init ran: c where vis != 0, z (its initial value) where vis == 0: not stored;
    ("range", lo, hi): every value it holds, and every value a step writes to it before a check
    in the same step fails the step (the declared range of objects.py, or tighter)."""
    params = {p.name: (p.lo, p.hi) for p in lay.kernel.params}
    writes: dict[tuple[str, str], list] = {}  # (array, field) -> [(value, env, op, before, pi)]

    def scan(body, env, op, pi):
        for s, before in _sets(body):
            if isinstance(s.place, MbarField):
                writes.setdefault((s.place.array, s.place.field), []).append(
                    (s.value, env, op, before, pi))
    for pi, fp in enumerate(lay.flat):
        env = {**params, **banded(rngs[pi])}
        for pc, ins in fp.ops():
            scan(lay.rule(pi, pc).body, env, type(ins.stmt).__name__, pi)
    for key in lay.async_keys:
        scan(lay.completion(key).body, dict(params), "completion", None)
    for body in lay.subrules.bodies.values():
        scan(body, dict(params), "subrule", None)

    out: dict[str, dict[str, tuple]] = {}
    for m in lay.kernel.mbarriers:
        a = m.name
        fields: dict[str, tuple] = {}
        decl = {f.name: f for f in MBARRIER.fields}
        for f in MBARRIER.fields:  # a field written only with its initial value is constant
            ws = writes.get((a, f.name), [])
            if all(isinstance(v, Const) and v.value == f.init for v, *_ in ws):
                fields[f.name] = ("const", f.init)
        vis_ws = writes.get((a, "vis"), [])
        vis_monotone = all(isinstance(v, Const) and v.value >= 1 for v, *_ in vis_ws)

        def by_init(name):
            ws = writes.get((a, name), [])
            return bool(ws) and all(op == "MbarInit" for _, _, op, _, _ in ws)
        # exp: the init counts
        exp_hull = None
        for v, env, *_ in writes.get((a, "exp"), []):
            exp_hull = _join(exp_hull, interval(v, env, lay))
        if exp_hull is not None:
            exp_hull = _meet(_join(exp_hull, (0, 0)), (decl["exp"].lo, decl["exp"].hi))
        if "exp" not in fields:
            ws = writes.get((a, "exp"), [])
            vals = {interval(v, env, lay) for v, env, *_ in ws}
            if vis_monotone and by_init("exp") and len(vals) == 1 and \
                    next(iter(vals))[0] == next(iter(vals))[1]:
                fields["exp"] = ("vis", next(iter(vals))[0], decl["exp"].init)
            else:
                fields["exp"] = ("range", *exp_hull)
        # by: the initializing instance
        if "by" not in fields:
            ws = writes.get((a, "by"), [])
            gids = set()
            for v, env, op, before, pi in ws:
                if not isinstance(v, Self) or pi is None:
                    gids = None
                    break
                first = lay.first_gid[pi]
                gids |= set(range(first, first + lay.kernel.processes[pi].instances))
            if vis_monotone and by_init("by") and gids is not None and len(gids) == 1:
                fields["by"] = ("vis", gids.pop(), decl["by"].init)
            else:
                fields["by"] = ("range", decl["by"].lo, decl["by"].hi)
        # pend: set to an init count or to exp, or decreased by an amount checked not to exceed it
        if "pend" not in fields:
            hull = (0, 0)
            for v, env, op, before, pi in writes.get((a, "pend"), []):
                if isinstance(v, MbarField) and v.array == a and v.field == "exp" \
                        and exp_hull is not None:
                    r = exp_hull
                elif (isinstance(v, BinOp) and v.op == "-" and isinstance(v.lhs, MbarField)
                      and v.lhs.array == a and v.lhs.field == "pend"
                      and interval(v.rhs, env, lay)[0] >= 0
                      and _fails_if_greater(before, v.rhs, v.lhs)):
                    r = (0, 0)  # pend - x with 0 <= x <= pend: between 0 and the old pend
                else:
                    r = _meet(interval(v, env, lay), (decl["pend"].lo, decl["pend"].hi))
                hull = _join(hull, r)
            fields["pend"] = ("range", *_meet(hull, (decl["pend"].lo, decl["pend"].hi)))
        for f in MBARRIER.fields:
            fields.setdefault(f.name, ("range", f.lo, f.hi))
        out[a] = fields
    return out
