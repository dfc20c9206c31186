"""Reference interpreter of SyncIR: executes the op rules of syncir/ops/ (docs/semantics.md).

Two uses: `replay` confirms every SPIN counterexample step by step before it is shown, and
`explore` searches small models exhaustively (breadth-first, so counterexamples are shortest),
as the oracle of the differential tests against the Promela lowering. Integers are unbounded
here; the model bounds (phase counts, the band of a local's values) are checked by the rules and
`run_local` exactly where the Promela model checks them.

A state is one flat tuple of ints, laid out by `StateLayout`: the parameters, then per instance
its pc, locals and observations, then the fields of every declared object.
"""
from __future__ import annotations

import itertools
import string
from collections import deque
from dataclasses import dataclass, field

from .flat import Bound, Branch, Goto, Let, is_exit
from .ir import (BINOP_FUNCS as _BINOPS, BinOp, Const, Kernel, Loc, ModelError, NOLOC, Select,  # noqa: F401
                 UnOp, Var, divide as _div, eval_expr)
from .layout import Layout
from .objects import (BUFFER, BUFFER_STAGE, CLUSTER_BARRIER, LIMITS, MBARRIER, NAMED_BARRIER,
                      TENSORMAP, TMEM)
from .ops import MbarTestWait, MbarWait, uses_tmem, wgmma_data_arrays
from .rules import (BufField, Carried, TmapField, TmemField, Call, ClusterField, CounterField, Fail, FlagField, Hook, Inflight, Live, Local, MbarField, NamedField,
                    Obs, Self, Set, When, WordField)
from .trace import BOUND_KINDS, Complete, Event, ParamChoice, Step, Take  # noqa: F401 (re-exported)

MB_FIELDS = {f.name: i for i, f in enumerate(MBARRIER.fields)}
NB_FIELDS = {f.name: i for i, f in enumerate(NAMED_BARRIER.fields)}
CL_FIELDS = {f.name: i for i, f in enumerate(CLUSTER_BARRIER.fields)}


@dataclass
class Violation(Exception):
    kind: str
    message: str
    loc: Loc = NOLOC
    process: int = -1
    instance: int = -1
    pc: int = -1

    def __str__(self):
        return f"{self.kind}: {self.message}"


State = tuple  # laid out by StateLayout


class StateLayout:
    """Offsets of everything in the interpreter's state vector."""

    def __init__(self, lay: Layout):
        k = lay.kernel
        off = len(lay.param_names)
        self.param = {n: i for i, n in enumerate(lay.param_names)}
        self.base: list[int] = []           # per instance: its pc; locals and obs follow
        self.local: list[dict[str, int]] = []
        self.obs: list[dict[tuple[str, int], int]] = []
        for inst in lay.instances:
            fp = lay.flat[inst.process]
            self.base.append(off)
            self.local.append({n: off + 1 + i for i, n in enumerate(fp.locals)})
            o = off + 1 + len(fp.locals)
            self.obs.append({key: o + i for key, i in lay.obs_slots[inst.process].items()})
            off = o + len(lay.obs_slots[inst.process])
        self.ctas = k.num_ctas
        self.mb = off
        off += len(lay.elements) * len(MB_FIELDS)
        self.nb = off
        off += len(lay.named_slots) * len(NB_FIELDS)
        self.sw = off
        off += len(lay.words)
        self.swp = off  # the words' `pend` fields (st.async in flight)
        off += len(lay.words)
        # `ard` (wgmma groups reading it) and `unf` of the cells of arrays a wgmma reads only:
        # ("ard" | "unf", array) -> its first slot
        self.wread: dict[tuple[str, str], int] = {}
        for w in k.words:
            if w.name in wgmma_data_arrays(k):
                for f in ("ard", "unf"):
                    self.wread[(f, w.name)] = off
                    off += w.size * w.copies(k.num_ctas)
        self.cl = off  # per cluster, the fields of the cluster barrier
        off += len(CL_FIELDS) * k.num_clusters
        self.live = off
        off += k.num_ctas
        self.infl = off
        off += len(lay.async_keys)
        self.carried = off  # per in-flight slot, per buffer tcgen05.mma read: the stages it retires
        self.carried_index = {b: i for i, b in enumerate(lay.carried_bufs)}
        off += len(lay.async_keys) * len(lay.carried_bufs)
        self.counter = {name: off + i for i, name in enumerate(lay.counters)}
        off += len(lay.counters)
        self.flag = {f.name: off + i for i, f in enumerate(k.flags)}  # global flags: `val` each
        off += len(k.flags)
        self.tm = off  # tensormaps: per (name, CTA) the fields of objects.TENSORMAP
        self.tm_index = {t.name: i for i, t in enumerate(k.tensormaps)}
        off += len(k.tensormaps) * k.num_ctas * len(TENSORMAP.fields)
        self.buf: dict[tuple[str, int], int] = {}  # staged buffers: per (name, CTA) the fields
        for b in k.buffers:  # of objects.BUFFER, then per stage those of objects.BUFFER_STAGE
            for c in range(k.num_ctas):
                self.buf[(b.name, c)] = off
                off += len(BUFFER.fields) + b.stages * len(BUFFER_STAGE.fields)
        self.tmem = off  # tensor memory: per CTA the fields of objects.TMEM, when allocated
        if uses_tmem(k):
            off += k.num_ctas * len(TMEM.fields)
        self.size = off

    def buf_field(self, name: str, cta: int, stage: int | None, field: str) -> int:
        base = self.buf[(name, cta)]
        if stage is None:
            return base + BUFFER.names.index(field)
        return (base + len(BUFFER.fields) + stage * len(BUFFER_STAGE.fields)
                + BUFFER_STAGE.names.index(field))

    def tm_field(self, name: str, cta: int, field: str) -> int:
        n = len(TENSORMAP.fields)
        return (self.tm + (self.tm_index[name] * self.ctas + cta) * n
                + [f.name for f in TENSORMAP.fields].index(field))

    def tmem_field(self, cta: int, field: str) -> int:
        return self.tmem + cta * len(TMEM.fields) + TMEM.names.index(field)

    def mb_field(self, element: int, name: str) -> int:
        return self.mb + element * len(MB_FIELDS) + MB_FIELDS[name]

    def nb_field(self, slot: int, name: str) -> int:
        return self.nb + slot * len(NB_FIELDS) + NB_FIELDS[name]


def _ix(x) -> int:
    """An offset into the state vector as a plain int: an int subclass standing for several
    values (the cutoff's affine integers) must convert itself, or refuse."""
    return x if type(x) is int else x.__index__()


class _Fmt(string.Formatter):
    def format_field(self, value, spec):
        if spec == "threads":
            return "all threads of the CTA" if value == -1 else f"{value} threads"
        return super().format_field(value, spec)


_FMT = _Fmt()


class Machine:
    """The transition system of one kernel."""

    def __init__(self, kernel: Kernel, lift_bounds: bool = False):
        """`lift_bounds`: without the model's phase-count and integer-band limits (they keep
        SPIN's state finite; the cutoff's families of executions run past them)."""
        self.kernel = kernel
        self.lift_bounds = lift_bounds
        self.layout = Layout(kernel, eager_completions=False)
        self.flat = self.layout.flat
        self.instances = self.layout.instances
        self.gid = self.layout.gid
        self.param_names = self.layout.param_names
        self.sl = StateLayout(self.layout)
        self._steps: dict[tuple[int, int], tuple] = {}     # (gid, pc) -> (guard, body)
        self._completions: dict[int, tuple] = {}           # async slot -> (guard, body)
        self._takes = {name: (self._expr(r.guard, -1), self._body(r.body, -1, NOLOC))
                       for name, r in self.layout.takes.items()}
        self._subrules: dict[str, object] = {}
        # static arrivers per (CTA, barrier array), for deadlock classification: local arrives
        # reach their own CTA, remote ones any CTA
        self.arrivers: dict[tuple[int, str], set[int]] = {}
        for inst in self.instances:
            for _, ins in self.flat[inst.process].ops():
                st = ins.stmt
                if type(st).__name__ in ("MbarArrive", "MbarArriveExpectTx"):
                    for cta in (range(kernel.num_ctas) if st.bar.cta is not None else (inst.cta,)):
                        self.arrivers.setdefault((cta, st.bar.name), set()).add(inst.gid)

    # ------------------------------------------------------------------ compiling rules

    def _expr(self, e, gid: int):
        """A function of the state vector computing `e` for instance `gid` (-1: no instance)."""
        sl = self.sl
        if isinstance(e, Const):
            c = e.value
            return lambda v: c
        if isinstance(e, Var) or isinstance(e, Local):
            name = e.name
            if gid >= 0 and name in sl.local[gid]:
                i = sl.local[gid][name]
            elif name in sl.param:
                i = sl.param[name]
            else:
                raise ModelError(f"undefined variable {name!r}")
            return lambda v: v[i]
        if isinstance(e, Self):
            return lambda v: gid
        if isinstance(e, UnOp):
            a = self._expr(e.arg, gid)
            return (lambda v: -a(v)) if e.op == "-" else (lambda v: int(not a(v)))
        if isinstance(e, Select):
            c, t, f = (self._expr(x, gid) for x in (e.cond, e.then, e.else_))
            return lambda v: t(v) if c(v) else f(v)
        if isinstance(e, BinOp):
            a, b = self._expr(e.lhs, gid), self._expr(e.rhs, gid)
            if e.op == "and":
                return lambda v: int(bool(a(v)) and bool(b(v)))
            if e.op == "or":
                return lambda v: int(bool(a(v)) or bool(b(v)))
            f = _div(e.op) if e.op in ("//", "%") else _BINOPS[e.op]
            return lambda v: f(a(v), b(v))
        if isinstance(e, WordField) and e.field in ("at_ld", "at_st"):
            return self._word_monitor(e, gid)
        idx = self._place(e, gid)
        return lambda v: v[_ix(idx(v))]

    def _word_monitor(self, p: WordField, gid: int):
        """How many instances other than `gid` have a load (`at_ld`) or store (`at_st`) of word
        `p` as their next step: the race monitor (Promela keeps it as counters)."""
        kind = "ld" if p.field == "at_ld" else "st"
        cta, idx = self._expr(p.cta, gid), self._expr(p.index, gid)
        sites = getattr(self, "_word_sites", None)
        if sites is None:  # (array, kind) -> [(process, pc, ref)], and the instances per process
            sites = self._word_sites = {}
            for pi, ops in enumerate(self.layout.word_ops):
                for pc, (k, ref) in ops.items():
                    sites.setdefault((ref.name, k), []).append((pi, pc, ref))
            self._insts_of = {}
            for inst in self.instances:
                self._insts_of.setdefault(inst.process, []).append(inst)
        fixed_cta = p.cta.value if isinstance(p.cta, Const) else None
        fixed_idx = p.index.value if isinstance(p.index, Const) else None
        key = (p.array, kind, fixed_cta, fixed_idx)
        every = self._word_waiting.get(key) if hasattr(self, "_word_waiting") else None
        if every is None:  # (gid, cta, pc, index function) of every access of that kind
            every = []
            grid = self.kernel.word_array(p.array).grid  # global data: one array, CTA 0's
            for pi, pc, ref in sites.get((p.array, kind), ()):
                if fixed_idx is not None and isinstance(ref.index, Const) and \
                        ref.index.value != fixed_idx:
                    continue  # another word, whatever the state
                for inst in self._insts_of.get(pi, ()):
                    if ref.cta is not None:  # a store into a peer CTA: its CTA is a value
                        every.append((inst.gid, self._expr(ref.cta, inst.gid), pc,
                                      self._expr(ref.index, inst.gid)))
                    elif fixed_cta is None or grid or inst.cta == fixed_cta:
                        every.append((inst.gid, 0 if grid else inst.cta, pc,
                                      self._expr(ref.index, inst.gid)))
            self.__dict__.setdefault("_word_waiting", {})[key] = every
        waiting = [w for w in every if w[0] != gid]
        base = self.sl.base

        def count(v):
            c, i = cta(v), idx(v)
            return sum(1 for g, gc, pc, ix in waiting
                       if (gc if isinstance(gc, int) else gc(v)) == c and v[base[g]] == pc
                       and ix(v) == i)
        return count

    def _place(self, p, gid: int):
        """A function of the state vector giving the offset of place `p`."""
        sl, lay, k = self.sl, self.layout, self.kernel
        if isinstance(p, MbarField):
            size = k.mbarrier(p.array).size
            base = lay.array_base[p.array]
            cta, idx = self._expr(p.cta, gid), self._expr(p.index, gid)
            fi = MB_FIELDS[p.field]
            n = k.num_ctas

            def at(v):
                c, i = cta(v), idx(v)
                if not (0 <= c < n and 0 <= i < size):
                    raise ModelError(f"mbarrier {p.array}[{i}] in CTA {c} does not exist")
                return sl.mb + (base + c * size + i) * len(MB_FIELDS) + fi
            return at
        if isinstance(p, NamedField):
            bid = self._expr(p.bid, gid)
            cta = p.cta

            def at(v):
                slot = lay.named_slot.get((cta, bid(v)))
                if slot is None:
                    raise ModelError(f"named barrier {bid(v)} of CTA {cta} is not modelled")
                return sl.nb_field(slot, p.field)
            return at
        if isinstance(p, ClusterField):
            i = sl.cl + p.cluster * len(CL_FIELDS) + CL_FIELDS[p.field]
            return lambda v: i
        if isinstance(p, WordField):
            size = k.word_array(p.array).size
            if p.field in ("ard", "unf"):
                start, base = sl.wread.get((p.field, p.array)), 0
                if start is None:
                    raise ModelError(f"{p.field} of {p.array}, an array no wgmma reads")
            else:
                start, base = {"val": sl.sw, "pend": sl.swp}[p.field], lay.word_base[p.array]
            cta, idx = self._expr(p.cta, gid), self._expr(p.index, gid)
            n = k.num_ctas

            def word(v):
                c, i = cta(v), idx(v)
                if not (0 <= c < n and 0 <= i < size):
                    raise ModelError(f"word {p.array}[{i}] in CTA {c} does not exist")
                return start + base + c * size + i
            return word
        if isinstance(p, Live):
            cta = self._expr(p.cta, gid)
            return lambda v: sl.live + cta(v)
        if isinstance(p, CounterField):
            i = sl.counter[p.name]
            return lambda v: i
        if isinstance(p, FlagField):
            i = sl.flag[p.name]
            return lambda v: i
        if isinstance(p, TmapField):
            cta, name, field = self._expr(p.cta, gid), p.name, p.field
            return lambda v: sl.tm_field(name, cta(v), field)
        if isinstance(p, TmemField):
            cta, field = self._expr(p.cta, gid), p.field
            return lambda v: sl.tmem_field(cta(v), field)
        if isinstance(p, BufField):
            cta, name, field = self._expr(p.cta, gid), p.name, p.field
            if p.stage is None:
                return lambda v: sl.buf_field(name, cta(v), None, field)
            stage = self._expr(p.stage, gid)
            return lambda v: sl.buf_field(name, cta(v), stage(v), field)
        if isinstance(p, Local):
            if p.name not in sl.local[gid]:
                raise ModelError(f"undefined local {p.name!r}")
            i = sl.local[gid][p.name]
            return lambda v: i
        if isinstance(p, Obs):
            idx = self._expr(p.index, gid)
            slots = sl.obs[gid]
            arr = p.array
            return lambda v: slots[(arr, idx(v))]
        if isinstance(p, Inflight):
            cta, idx = self._expr(p.cta, gid), self._expr(p.index, gid)
            pi, pc = p.process, p.pc
            return lambda v: sl.infl + lay.async_slot[(pi, pc, cta(v), idx(v))]
        if isinstance(p, Carried):
            cta, idx = self._expr(p.cta, gid), self._expr(p.index, gid)
            pi, pc, nb, bi = p.process, p.pc, len(lay.carried_bufs), sl.carried_index[p.buf]
            return lambda v: sl.carried + lay.async_slot[(pi, pc, cta(v), idx(v))] * nb + bi
        raise ModelError(f"not an expression: {p!r}")

    def _body(self, stmts, gid: int, loc: Loc):
        """A function (v, log) -> None executing rule statements (raises Violation)."""
        parts = [self._stmt(s, gid, loc) for s in stmts]

        def run(v, log):
            for f in parts:
                f(v, log)
        return run

    def _stmt(self, s, gid: int, loc: Loc):
        if isinstance(s, Set):
            at, val = self._place(s.place, gid), self._expr(s.value, gid)

            def run(v, log):
                v[_ix(at(v))] = val(v)
            return run
        if isinstance(s, When):
            if self.lift_bounds and len(s.then) == 1 and isinstance(s.then[0], Fail) \
                    and s.then[0].kind == "phase-bound" and not s.else_:
                return lambda v, log: None
            # each side is compiled when first taken: most steps run once, and most of a rule's
            # branches (an exit's per-barrier completions, its pending-copy checks) never
            c = self._expr(s.cond, gid)
            sides: list = [None, None]

            def run(v, log):
                i = 0 if c(v) else 1
                f = sides[i]
                if f is None:
                    f = sides[i] = self._body(s.then if i == 0 else s.else_, gid, loc)
                f(v, log)
            return run
        if isinstance(s, Fail):
            args = [self._expr(a, gid) for a in s.args]
            subject = self._element(s.subject, gid)
            who = self.layout.instance_name(gid) if gid >= 0 else "an async copy"
            kind, msg = s.kind, s.message

            def run(v, log):
                bar = self.layout.element_name(subject(v)) if subject else ""
                text = _FMT.format(msg, *[a(v) for a in args], who=who, bar=bar)
                raise Violation(kind, text, loc)
            return run
        if isinstance(s, Hook):
            el = self._element(s.subject, gid)
            name = s.name

            def run(v, log):
                if log is not None:
                    log.hook(name, el(v) if el else -1, gid, loc)
            return run
        if isinstance(s, Call):
            body = self._subrules.get(s.name)
            if body is None:
                body = self._subrules[s.name] = self._body(self.layout.subrules.bodies[s.name],
                                                           -1, loc)
            return body
        raise ModelError(f"not a rule statement: {s!r}")

    def _element(self, el, gid: int):
        if el is None:
            return None
        size = self.kernel.mbarrier(el.array).size
        base = self.layout.array_base[el.array]
        cta, idx = self._expr(el.cta, gid), self._expr(el.index, gid)
        return lambda v: base + cta(v) * size + idx(v)

    def _compiled_step(self, gid: int, pc: int):
        key = (gid, pc)
        c = self._steps.get(key)
        if c is None:
            inst = self.instances[gid]
            rule = self.layout.rule(inst.process, pc)
            loc = self.flat[inst.process].code[pc].loc
            c = self._steps[key] = (self._expr(rule.guard, gid), self._body(rule.body, gid, loc))
        return c

    def forget_compiled(self) -> None:
        """Drop the compiled rules (compiled again when next needed)."""
        self._steps.clear()
        self._completions.clear()
        self._subrules.clear()
        self.__dict__.pop("_word_waiting", None)

    def _compiled_completion(self, slot: int):
        c = self._completions.get(slot)
        if c is None:
            key = self.layout.async_keys[slot]
            rule = self.layout.completion(key)
            loc = self.flat[key[0]].code[key[1]].loc
            c = self._completions[slot] = (self._expr(rule.guard, -1), self._body(rule.body, -1, loc))
        return c

    # ------------------------------------------------------------------ states

    def env(self, s: State, gid: int) -> dict[str, int]:
        env = {n: s[i] for n, i in self.sl.param.items()}
        env.update({n: s[i] for n, i in self.sl.local[gid].items()})
        return env

    def pc(self, s: State, gid: int) -> int:
        return s[self.sl.base[gid]]

    def mb(self, s: State, element: int) -> dict[str, int]:
        base = self.sl.mb + element * len(MB_FIELDS)
        return {n: s[base + i] for n, i in MB_FIELDS.items()}

    def nb(self, s: State, slot: int) -> dict[str, int]:
        base = self.sl.nb + slot * len(NB_FIELDS)
        return {n: s[base + i] for n, i in NB_FIELDS.items()}

    def obs(self, s: State, gid: int, array: str, index: int) -> int:
        return s[self.sl.obs[gid][(array, index)]]

    def live(self, s: State, cta: int) -> int:
        return s[self.sl.live + cta]

    def inflight(self, s: State, slot: int) -> int:
        return s[self.sl.infl + slot]

    def eval(self, e, s: State, gid: int) -> int:
        return self._expr(e, gid)(s)

    def element_of(self, ref, s: State, gid: int) -> int:
        """The element number an MBarRef names for instance gid."""
        inst = self.instances[gid]
        cta = inst.cta if ref.cta is None else self.eval(ref.cta, s, gid)
        idx = self.eval(ref.index, s, gid)
        key = (cta, ref.name, idx)
        if key not in self.layout.element:
            raise ModelError(f"mbarrier {ref.name}[{idx}] in CTA {cta} does not exist")
        return self.layout.element[key]

    def initial_states(self) -> list[tuple[tuple[ParamChoice, ...], State]]:
        out = []
        for values in itertools.product(*[p.values for p in self.kernel.params]):
            s = self.initial_state(values)
            if s is not None:
                choices = tuple(ParamChoice(n, v) for n, v in zip(self.param_names, values))
                out.append((choices, s))
        return out

    def start_for(self, choices: dict[str, int]) -> State | None:
        """The state at launch with the parameter values a trace chose (None: they name no
        launch of the kernel)."""
        values = []
        for p in self.kernel.params:
            v = choices.get(p.name)
            if v is None or not p.lo <= v <= p.hi:
                return None
            values.append(v)
        return self.initial_state(values)

    def initial_state(self, values) -> State | None:
        """The state at launch with these parameter values (None: the constraints exclude them,
        not a launch the check covers)."""
        k, sl, lay = self.kernel, self.sl, self.layout
        env = dict(zip(self.param_names, values))
        if not all(eval_expr(c, env) for c in k.constraints):
            return None
        v = [0] * sl.size
        v[:len(values)] = values
        for inst in self.instances:
            for n, x in self.flat[inst.process].process.init:
                v[sl.local[inst.gid][n]] = x
        for n in range(len(lay.elements)):
            for f in MBARRIER.fields:
                v[sl.mb_field(n, f.name)] = f.init
        for c in range(k.num_ctas):
            v[sl.live + c] = lay.cta_threads[c]
            for t in k.tensormaps:
                for f in TENSORMAP.fields:
                    v[sl.tm_field(t.name, c, f.name)] = f.init
        for inst in self.instances:
            self.run_local(v, inst.gid)
        return tuple(v)

    def at(self, s: State, gid: int):
        return self.flat[self.instances[gid].process].code[self.pc(s, gid)]

    def ended(self, s: State, gid: int) -> bool:
        return self.pc(s, gid) >= len(self.flat[self.instances[gid].process].code)

    def is_enabled(self, s: State, gid: int) -> bool:
        guard, _ = self._compiled_step(gid, self.pc(s, gid))
        return bool(guard(s))

    def take_enabled(self, s: State, counter: str) -> bool:
        """Whether CTAs outside the model may take a value of `counter` in `s`."""
        guard = self._takes.get(counter, (None,))[0]
        return guard is not None and bool(guard(s))

    def enabled(self, s: State) -> list[Event]:
        evs: list[Event] = []
        for inst in self.instances:
            if not self.ended(s, inst.gid) and self.is_enabled(s, inst.gid):
                evs.append(Step(inst.process, inst.index, self.pc(s, inst.gid)))
        for slot, key in enumerate(self.layout.async_keys):
            if s[self.sl.infl + slot] > 0:
                evs.append(Complete(*key))
        for name, (guard, _) in self._takes.items():
            if guard(s):
                evs.append(Take(name))
        return evs

    def failed_test_steps(self, s: State, log: "ReplayLog | None" = None):
        """`s` after every instance resting at a test-wait that fails there takes it, when
        that brings it, through local code, to a wait that cannot pass either: a model with R9
        keeps such an instance at its test, so its deadlock trail ends before those steps
        (docs/semantics.md, R9; `engine.check` appends them). Returns the state and the steps."""
        steps = []
        for inst in self.instances:
            gid = inst.gid
            if self.ended(s, gid):
                continue
            pc = self.pc(s, gid)
            op = self.flat[inst.process].code[pc].stmt
            if not isinstance(op, MbarTestWait):
                continue
            try:
                t = self.step(s, Step(inst.process, inst.index, pc), log)
            except (Violation, ModelError):
                continue
            nxt = self.flat[inst.process].code[self.pc(t, gid)].stmt \
                if not self.ended(t, gid) else None
            if isinstance(nxt, MbarWait) and not self.is_enabled(t, gid):
                s = t
                steps.append(Step(inst.process, inst.index, pc))
        return s, steps

    def in_flight_equivalent(self, s: State, ev: "Complete") -> "Complete":
        """`ev`, or when no copy of its site is in flight, the completion of a site of the same
        completion class that has one: a model with merged counters (R7) names a class by one
        of its sites, and every site of the class completes with the same rule."""
        key = (ev.process, ev.pc, ev.cta, ev.index)
        slot = self.layout.async_slot.get(key)
        if slot is None or s[self.sl.infl + slot] > 0:
            return ev
        for site in self.layout.completion_class((ev.process, ev.pc)):
            other = self.layout.async_slot.get((*site, ev.cta, ev.index))
            if other is not None and s[self.sl.infl + other] > 0:
                return Complete(*site, ev.cta, ev.index)
        return ev

    def is_deadlock(self, s: State) -> bool:
        return (not self.enabled(s)) and any(not self.ended(s, i.gid) for i in self.instances)

    def step(self, s: State, ev: Event, log: "ReplayLog | None" = None) -> State:
        """Apply one event; raises Violation when the step violates a property."""
        v = list(s)
        if isinstance(ev, Step):
            gid = self.pick_instance(s, ev)
            inst = self.instances[gid]
            at = self.sl.base[gid]
            pc = v[at]
            _, body = self._compiled_step(gid, pc)
            try:
                body(v, log)
            except Violation as e:
                e.process, e.instance, e.pc = inst.process, inst.index, pc
                raise
            code = self.flat[inst.process].code
            v[at] = len(code) if is_exit(code[pc]) else pc + 1
            self.run_local(v, gid)
        elif isinstance(ev, Complete):
            slot = self.layout.async_slot.get((ev.process, ev.pc, ev.cta, ev.index))
            if slot is None or v[self.sl.infl + slot] == 0:
                raise ModelError(f"no async op in flight for {ev}")
            _, body = self._compiled_completion(slot)
            try:
                body(v, log)
            except Violation as e:
                e.process, e.instance, e.pc = ev.process, -1, ev.pc
                raise
        elif isinstance(ev, Take):
            guard, body = self._takes.get(ev.counter, (None, None))
            if guard is None or not guard(v):
                raise ModelError(f"no value left for other CTAs to take: {ev}")
            body(v, log)
        else:
            raise ModelError(f"not a step: {ev}")
        return tuple(v)

    def run_local(self, v: list, gid: int):
        """Local code after a step, up to the next visible instruction."""
        inst = self.instances[gid]
        code = self.flat[inst.process].code
        at = self.sl.base[gid]
        while v[at] < len(code):
            pc = v[at]
            ins = code[pc]
            if isinstance(ins, Let):
                x = self._expr(ins.value, gid)(v)
                if not self.lift_bounds and abs(x) > LIMITS.local_band:
                    raise Violation("integer-range", f"{self.layout.instance_name(gid)}: "
                                    f"{ins.var} = {x} leaves the model's integer band "
                                    f"±{LIMITS.local_band}", ins.loc, inst.process, inst.index, pc)
                v[self.sl.local[gid][ins.var]] = x
                v[at] = pc + 1
            elif isinstance(ins, Branch):
                v[at] = pc + 1 if self._expr(ins.cond, gid)(v) else ins.target
            elif isinstance(ins, Goto):
                v[at] = ins.target
            elif isinstance(ins, Bound):
                i = self.sl.local[gid][ins.counter]
                if v[i] + 1 > ins.limit:
                    raise Violation("loop-bound", f"{self.layout.instance_name(gid)}: while loop "
                                    f"ran past its bound of {ins.limit} iterations", ins.loc,
                                    inst.process, inst.index, pc)
                v[i] += 1
                v[at] = pc + 1
            else:
                return

    def pick_instance(self, s: State, ev: Step) -> int:
        if ev.instance >= 0:
            return self.gid[(ev.process, ev.instance)]
        for inst in self.instances:  # a step that names only the class: the first at that pc
            if inst.process == ev.process and self.pc(s, inst.gid) == ev.pc:
                return inst.gid
        raise ModelError(f"no instance of process {ev.process} at pc {ev.pc}")


@dataclass
class ReplayLog:
    """Diagnostics kept while replaying a trace (not part of the explored state); keys are
    mbarrier element numbers."""
    arrivals: dict[int, list[int]] = field(default_factory=dict)     # current phase: gids
    ever_arrived: dict[int, set[int]] = field(default_factory=dict)  # any phase: gids
    last_expect: dict[int, Loc] = field(default_factory=dict)
    init_loc: dict[int, Loc] = field(default_factory=dict)

    def hook(self, name: str, element: int, gid: int, loc: Loc):
        if name == "arrive":
            self.arrivals.setdefault(element, []).append(gid)
            self.ever_arrived.setdefault(element, set()).add(gid)
        elif name == "phase":
            self.arrivals[element] = []
        elif name == "expect":
            self.last_expect[element] = loc
        elif name == "init":
            self.init_loc[element] = loc


# ---------------------------------------------------------------------- exploration and replay

@dataclass
class Outcome:
    """A violation (kind/message/loc) reached by `trace`, or none."""
    violation: Violation | None
    trace: list[Event]
    states: int = 0
    complete: bool = True
    final: State | None = None


def violation_kinds(kernel: Kernel, max_states: int = 200_000) -> tuple[set[str], bool]:
    """Every violation kind reachable in the kernel (the search continues past violations), and
    whether the search was complete. The oracle of the differential tests."""
    m = Machine(kernel)
    seen: set[State] = set()
    queue: deque[State] = deque()
    try:
        starts = m.initial_states()
    except Violation as v:  # a local loop ran past its bound before any step
        return {v.kind}, True
    for _, s in starts:
        if s not in seen:
            seen.add(s)
            queue.append(s)
    kinds: set[str] = set()
    while queue:
        s = queue.popleft()
        evs = m.enabled(s)
        if not evs and any(not m.ended(s, i.gid) for i in m.instances):
            kinds.add("deadlock")
        for ev in evs:
            try:
                t = m.step(s, ev)
            except Violation as v:
                kinds.add(v.kind)
                continue
            if t not in seen:
                if len(seen) >= max_states:
                    return kinds, False
                seen.add(t)
                queue.append(t)
    return kinds, True


@dataclass(frozen=True)
class Terminal:
    """How an execution ends: every instance exited ("completes", with the observed values) or
    no step is possible while some instance has not ("hangs")."""
    end: str
    values: tuple = ()


@dataclass
class Outcomes:
    """Everything the model lets a kernel do: the terminal states of its violation-free
    executions and the violation kinds some execution reaches (an execution stops at its
    violation: the model predicts nothing after it)."""
    terminals: set[Terminal]
    violations: set[str]
    complete: bool
    states: int


def outcomes(kernel: Kernel, observe=None, max_states: int = 200_000) -> Outcomes:
    """Breadth-first search of every interleaving, past violations (which end their execution),
    collecting terminal states. `observe(machine, state)` gives the values a completed execution
    shows (the litmus kernels' probes)."""
    m = Machine(kernel)
    seen: set[State] = set()
    queue: deque[State] = deque()
    terminals: set[Terminal] = set()
    violations: set[str] = set()
    try:
        starts = m.initial_states()
    except Violation as v:
        return Outcomes(set(), {v.kind}, True, 0)
    for _, s in starts:
        if s not in seen:
            seen.add(s)
            queue.append(s)
    while queue:
        s = queue.popleft()
        evs = m.enabled(s)
        if not evs:
            if all(m.ended(s, i.gid) for i in m.instances):
                terminals.add(Terminal("completes", observe(m, s) if observe else ()))
            else:
                terminals.add(Terminal("hangs"))
        for ev in evs:
            try:
                t = m.step(s, ev)
            except Violation as v:
                violations.add(v.kind)
                continue
            if t not in seen:
                if len(seen) >= max_states:
                    return Outcomes(terminals, violations, False, len(seen))
                seen.add(t)
                queue.append(t)
    return Outcomes(terminals, violations, True, len(seen))


def explore(kernel: Kernel, max_states: int = 200_000) -> Outcome:
    """Breadth-first search of every interleaving; the first violation found has a shortest trace."""
    m = Machine(kernel)
    parent: dict[State, tuple[State | None, tuple[Event, ...]]] = {}
    queue: deque[State] = deque()
    try:
        starts = m.initial_states()
    except Violation as v:  # a local loop ran past its bound before any step
        return Outcome(v, [], 0)
    for choices, s in starts:
        if s not in parent:
            parent[s] = (None, choices)
            queue.append(s)

    def path(s: State, tail: list[Event]) -> list[Event]:
        evs: list[Event] = list(tail)
        while s is not None:
            prev, via = parent[s]
            evs[:0] = list(via)
            s = prev
        return evs

    while queue:
        s = queue.popleft()
        evs = m.enabled(s)
        if not evs and any(not m.ended(s, i.gid) for i in m.instances):
            return Outcome(Violation("deadlock", "no step is possible"), path(s, []), len(parent),
                           final=s)
        for ev in evs:
            try:
                t = m.step(s, ev)
            except Violation as v:
                return Outcome(v, path(s, [ev]), len(parent), final=s)
            if t not in parent:
                if len(parent) >= max_states:
                    return Outcome(None, [], len(parent), complete=False)
                parent[t] = (s, (ev,))
                queue.append(t)
    return Outcome(None, [], len(parent))


@dataclass
class Replay:
    ok: bool                      # the trace is executable and ends in the claimed violation
    violation: Violation | None   # what the interpreter found at the end of the trace
    state: State | None
    log: ReplayLog
    machine: Machine
    steps: int = 0
    error: str = ""
    states: list = field(default_factory=list)  # the start, then the state after each step that completed
    taken: list = field(default_factory=list)   # each step as executed (a completion resolved to its copy)


def failed_tests_at_end(kernel: Kernel, events: list[Event]) -> list[Step]:
    """The failing test-wait steps that complete a deadlock trail of a model with R9 (see
    `Machine.failed_test_steps`); [] when the events do not replay."""
    rp = replay(kernel, events, expect_kind=None)
    if rp.violation is not None or rp.state is None or rp.error != "trace ends without a violation":
        return []
    return rp.machine.failed_test_steps(rp.state)[1]


def replay(kernel: Kernel, events: list[Event], expect_kind: str | None = None) -> Replay:
    """Execute `events` in order. ok when every step is enabled and the trace ends in a violation
    of `expect_kind` (a deadlock: no step possible at the end)."""
    m = Machine(kernel)
    log = ReplayLog()
    choices = {e.name: e.value for e in events if isinstance(e, ParamChoice)}
    try:
        s = m.start_for(choices)
    except Violation as v:  # a local loop ran past its bound before any step
        ok = expect_kind in (None, v.kind)
        return Replay(ok, v, None, log, m, 0, "" if ok else f"start hits {v.kind}")
    if s is None:
        return Replay(False, None, None, log, m, 0, f"parameter choices {choices} do not fix a start")
    steps = [e for e in events if not isinstance(e, ParamChoice)]
    states, taken = [s], []
    for n, ev in enumerate(steps):
        try:
            if isinstance(ev, Complete):
                ev = m.in_flight_equivalent(s, ev)
            if ev not in m.enabled(s) and not (isinstance(ev, Step) and ev.instance < 0):
                return Replay(False, None, s, log, m, n, f"step {n + 1} ({ev}) is not enabled", states, taken)
            taken.append(ev)
            s = m.step(s, ev, log)
            states.append(s)
        except Violation as v:
            last = n == len(steps) - 1
            ok = (expect_kind is None or v.kind == expect_kind) and (last or v.kind in BOUND_KINDS)
            return Replay(ok, v, s, log, m, n + 1, "" if ok else
                          f"replay hits {v.kind} at step {n + 1} of {len(steps)}", states, taken)
        except ModelError as e:
            return Replay(False, None, s, log, m, n, f"model error at step {n + 1}: {e}", states, taken)
    if m.is_deadlock(s):
        v = Violation("deadlock", "no step is possible")
        ok = expect_kind in (None, "deadlock")
        return Replay(ok, v, s, log, m, len(steps), "" if ok else f"trace ends in a deadlock, "
                      f"not {expect_kind}", states, taken)
    return Replay(False, None, s, log, m, len(steps), "trace ends without a violation", states, taken)
