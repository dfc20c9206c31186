"""Trip counts as ranges: a launch parameter with no upper bound (`--param K=LO..`), decided at
finitely many values (docs/semantics.md, "The cutoff").

1. The pump. For a base value B and a period p, the default-schedule executions of B and B+p
   split as E(B) = pre . rest and E(B+p) = pre . seg . rest. The interpreter then replays them
   once more with integers that stand for the whole family (affine.py): pre with K = B + p*m,
   the copy of seg with the state after j of m copies, rest with the state after m copies. When
   every decision of the three replays is the same over the family and a copy ends where the
   next begins, E(B + p*m) = pre . seg^m . rest for every m >= 0 (Lemma C1).
2. The conditions. The happens-before conditions on E(B + p*m) are decided by those on E(B + p*i)
   for i = 0..max(2, s+w+1), where w is how far back the edges of a copy reach and s the first
   copy from which w+1 consecutive copies know the same of pre (Lemma C2); those executions are
   checked.
3. Each residue B..B+p-1 gets its own pump; the values below B are checked one by one.
"""
from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, replace

from ...syncir.interp import ModelError, Violation, eval_expr
from ...syncir.ir import Kernel, Param, expr_vars
from ...syncir.trace import ParamChoice
from .affine import Aff, Region, Varies, aff, coefs, region, val
from .analysis import analyze
from .execution import Execution, OutsideClass, Runner

MAX_BASE = 40      # bases tried above the range's low end
MAX_PERIOD = 72    # periods tried
MAX_COPIES = 12    # executions of one residue checked at most

PRE = Region((0, 0), ((0, 1),))             # m >= 0
COPY = Region((0, 1), ((0, 1), (1, 1)))     # 0 <= j <= m - 1
REST = PRE


@dataclass(frozen=True)
class Pump:
    base: int
    period: int
    t1: int       # events before the first copy
    length: int   # events in one copy


@dataclass(frozen=True)
class Covered:
    """What the cutoff checked for one residue: K = base + period*i, i = 0..copies
    (= max(2, saturated + reach + 1))."""
    pump: Pump
    copies: int
    saturated: int   # s: the first of w+1 consecutive copies that know the same of pre
    reach: int       # w: how many copies back an edge reaches


@dataclass(frozen=True)
class Decided:
    """Every residue's pump and the values checked one by one."""
    covered: list[Covered]
    checked: tuple[int, ...]


def with_value(kernel: Kernel, name: str, value: int) -> Kernel:
    return replace(kernel, params=tuple(Param(p.name, value, value) if p.name == name else p
                                        for p in kernel.params))


def periods(kernel: Kernel) -> list[int]:
    """Candidate periods: the stage counts of the kernel's barrier arrays and buffers, doubled
    for parities, and their least common multiples."""
    sizes = {m.size for m in kernel.mbarriers} | {b.stages for b in kernel.buffers}
    base = {1, 2} | {s for s in sizes if s} | {2 * s for s in sizes if s}
    out = set(base)
    for a in base:
        for b in base:
            out.add(math.lcm(a, b))
    return sorted(p for p in out if p <= MAX_PERIOD)


def _events(ex: Execution) -> list:
    return [e.step for e in ex.events]


def _flat(s, shadows: dict) -> tuple[tuple, list]:
    """A resumable point of a run (its state and the test-waits' passed paths it follows) as
    one list of integers, and its shape."""
    keys = tuple(sorted(shadows))
    vals = list(s)
    for g in keys:
        sh = shadows[g]
        vals += [*sh.slice, int(sh.waited), sh.peek.element, sh.peek.parity, sh.peek.pc]
    return (len(s), keys, tuple(len(shadows[g].slice) for g in keys)), vals


def _unflat(shape: tuple, vals: list, template: dict):
    """(state, shadows) from `_flat`'s list; the shadows copied from `template`."""
    n, keys, lens = shape
    out, i = {}, n
    for g, size in zip(keys, lens):
        sh = copy.copy(template[g])
        sh.peek = copy.copy(sh.peek)
        sh.slice = list(vals[i:i + size])
        waited, element, parity, pc = vals[i + size:i + size + 4]
        if any(isinstance(x, Aff) for x in (waited, element, parity, pc)):
            raise Varies("a followed test-wait that differs between copies")
        sh.waited, sh.peek.element, sh.peek.parity, sh.peek.pc = bool(waited), element, parity, pc
        out[g] = sh
        i += size + 4
    return tuple(vals[:n]), out


class Family:
    """The executions of one kernel over the values of its unbounded parameter `name` (every
    other parameter has one value)."""

    def __init__(self, kernel: Kernel, name: str):
        self.kernel, self.name = kernel, name
        self.lo = next(p.lo for p in kernel.params if p.name == name)
        self.runner = Runner(kernel)
        self.abstract = Runner(kernel, lift_bounds=True)
        self.runs: dict[int, Execution] = {}
        self.analyses: dict[int, object] = {}
        self.refusals: list[str] = []

    def values(self, k) -> list:
        return [k if p.name == self.name else p.lo for p in self.kernel.params]

    def start(self, k: int) -> tuple:
        return tuple(ParamChoice(p.name, v) for p, v in zip(self.kernel.params, self.values(k)))

    def run(self, k: int) -> Execution:
        if k not in self.runs:
            s = self.runner.m.initial_state(self.values(k))
            if s is None:
                raise OutsideClass(f"{self.name}={k} is not a launch (the kernel's constraints "
                                   "exclude it): the family has a gap the cutoff does not cover")
            self.runs[k] = self.runner.run(self.start(k), s)
        return self.runs[k]

    def analysis(self, k: int):
        if k not in self.analyses:
            self.analyses[k] = analyze(self.runner, self.run(k))
        return self.analyses[k]

    # ---------------------------------------------------------------- Lemma C1: the pump
    def pump(self, base: int, p: int) -> Pump | None:
        r0, r1 = self.run(base), self.run(base + p)
        if r0.end != "complete" or r1.end != "complete":
            return None
        e0, e1 = _events(r0), _events(r1)
        length = len(e1) - len(e0)
        if length <= 0:
            return None
        lcp = next((i for i, (a, b) in enumerate(zip(e0, e1)) if a != b), len(e0))
        lcs = next((i for i, (a, b) in enumerate(zip(reversed(e0), reversed(e1))) if a != b),
                   len(e0))
        cuts = range(max(0, len(e0) - lcs), min(lcp, len(e0)) + 1)
        if not cuts:
            return None
        r2 = self.run(base + 2 * p)  # a necessary condition, before the replays
        if r2.end != "complete" or len(r2.events) != len(e1) + length:
            return None
        e2 = _events(r2)
        fits = [t for t in cuts if e2[t:t + 2 * length] == e1[t:t + length] * 2]
        # the latest cuts first: every local is written by then (the earliest may still hold a
        # value from launch that the first copy overwrites)
        for t1 in list(dict.fromkeys(fits[::-1][:3] + fits[:2])):
            why = self._prove(base, p, t1, length, e0, e1)
            if why is None:
                return Pump(base, p, t1, length)
            self.refusals.append(f"{self.name}={base}, period {p}: {why}")
        return None

    def _upto(self, k: int, t: int) -> Execution:
        return self.runner.run(self.start(k), self.runner.m.initial_state(self.values(k)),
                               limit=t)

    def _prove(self, base, p, t1, length, e0, e1) -> str | None:
        """None when the three replays show E(base + p*m) = pre . seg^m . rest for every m; else
        what differs between members of the family."""
        run, m = self.abstract, self.abstract.m
        try:
            with region(PRE):
                s = m.initial_state([aff(v, 0, p) if i == self._index() else v
                                     for i, v in enumerate(self.values(base))])
                pre = run.run(self.start(base), s, limit=t1)
            if _events(pre) != e0[:t1]:
                return "the first part of the execution differs between values"
            shape, at_t1 = _flat(pre.final, pre.shadows)
            c1, c2 = self._upto(base + p, t1), self._upto(base + p, t1 + length)
            shape1, before = _flat(c1.final, c1.shadows)
            shape2, after = _flat(c2.final, c2.shadows)
            if not shape == shape1 == shape2:
                return "the tests followed at the cut differ"
            delta = [val(b) - val(a) for a, b in zip(before, after)]
            if any(delta[m.sl.base[g]] for g in range(len(m.instances))):
                return "an instance is elsewhere after the repeated part than before it"
            if any(val(x) + coefs(x)[1] != val(y) for x, y in zip(at_t1, before)):
                return "the replay of the first part does not give the next value's state"
            with region(COPY):
                vals = [aff(val(y), d, coefs(x)[1]) for x, y, d in zip(at_t1, before, delta)]
                st, sh = _unflat(shape, vals, pre.shadows)
                seg = run.run(self.start(base + p), st, limit=length, shadows=sh)
                if _events(seg) != e1[t1:t1 + length]:
                    return "the repeated part differs between its copies"
                shape3, end = _flat(seg.final, seg.shadows)
                if shape3 != shape or any(
                        val(z) != val(y) + d or coefs(z) != (d, coefs(x)[1])
                        for x, y, z, d in zip(at_t1, before, end, delta)):
                    return "a copy of the repeated part does not end where the next begins"
            with region(REST):
                vals = [aff(val(x), 0, coefs(x)[1] + d) for x, d in zip(at_t1, delta)]
                st, sh = _unflat(shape, vals, pre.shadows)
                rest = run.run(self.start(base), st, shadows=sh)
                if _events(rest) != e0[t1:] or rest.end != "complete":
                    return "the last part of the execution differs between values"
        except Varies as e:
            return f"{e} ({self._where(run)})"
        except OutsideClass as e:
            return e.why
        except (Violation, ModelError) as e:  # (the concrete runs completed: a replay differs)
            return f"the replay of the family stopped: {e}"
        return None

    def _index(self) -> int:
        return [p.name for p in self.kernel.params].index(self.name)

    def _where(self, run: Runner) -> str:
        ev = run.current
        if ev is None:
            return "at launch"
        loc = run.m.flat[ev.process].code[ev.pc].loc
        return f"{loc.file.rsplit('/', 1)[-1]}:{loc.line}" if loc and loc.line else str(ev)

    # ---------------------------------------------------------------- Lemma C2: the conditions
    def window(self, pump: Pump, copies: int) -> tuple[int, int] | None:
        """(s, w) measured on E(base + period*copies): w, how many copies back an edge reaches;
        s, the first copy from which w+1 consecutive copies know the same of pre (what each of
        their events has happened-after). None: this execution has too few copies to show
        them. OutsideClass when it is not the pumped one, or an edge from pre into a copy past
        the reach is not the same edge in every copy."""
        k = pump.base + pump.period * copies
        ex = self.run(k)
        r0, r1 = self.run(pump.base), self.run(pump.base + pump.period)
        t1, n = pump.t1, pump.length
        want = _events(r0)[:t1] + _events(r1)[t1:t1 + n] * copies + _events(r0)[t1:]
        if _events(ex) != want:
            raise OutsideClass(f"{self.name}={k}: the execution is not the pumped one (Lemma C1 "
                               "failed to predict it)")
        an = self.analysis(k)

        def zone(node) -> int:  # -1 pre, 0..copies-1 a copy, copies: rest
            t = int(node.pos)
            return -1 if t < t1 else min(copies, (t - t1) // n)

        nodes, todo, seen = [], list(an.nodes), set()
        while todo:
            x = todo.pop()
            if id(x) not in seen:
                seen.add(id(x))
                nodes.append(x)
                todo += list(x.parents)
        reach = 0
        for y in nodes:
            zy = zone(y)
            if zy < 0:
                continue
            for z in y.parents:
                zz = zone(z)
                if 0 <= zz < copies:
                    reach = max(reach, zy - zz)
        pre_count = [0] * an.actors
        for x in an.nodes:
            if zone(x) < 0:
                pre_count[x.own[0]] += 1

        def known(c: int) -> list:  # what each event of copy c knows of pre
            return [[min(v, q) for v, q in zip(x.vc, pre_count)]
                    for x in an.nodes[t1 + c * n:t1 + (c + 1) * n]]

        def pre_parents(c: int) -> list:
            return [{id(z) for z in x.parents if zone(z) < 0}
                    for x in an.nodes[t1 + c * n:t1 + (c + 1) * n]]

        for c in range(reach + 1, copies):  # past the reach, an edge from pre is the same edge
            if pre_parents(c) != pre_parents(c - 1):
                raise OutsideClass(f"{self.name}={k}: an operation of the repeated part follows "
                                   "an operation before it that its copies do not follow")
        # an edge reaches back one copy, or, from an async copy's issue to its completion, as
        # many as its slot holds in flight at a cut (FIFO): the execution must show that reach
        held = max((ex.events[t1].pre[self.runner.m.sl.infl + i]
                    for i in range(len(self.runner.m.layout.async_keys))), default=0)
        if copies < held + 2:
            return None
        views = [known(c) for c in range(copies)]
        saturated = next((c for c in range(copies - reach) if all(
            views[c] == views[c + i] for i in range(1, reach + 1))), None)
        if saturated is None:
            return None
        return saturated, reach


def decide(kernel: Kernel, closed, expired) -> Decided | None:
    """Decide `kernel`, whose one unbounded parameter is checked by the cutoff.
    `closed(runner, execution, analysis)` decides one value from its default execution (False:
    it found a violation; stop). Returns what was covered, or None when `closed` stopped or
    `expired()`; OutsideClass when no pump is found."""
    free = [p for p in kernel.params if p.unbounded]
    if len(free) != 1:
        raise OutsideClass(f"{len(free)} parameters without an upper bound (the cutoff takes "
                           "exactly one)")
    ranged = [p.name for p in kernel.params if not p.unbounded and p.lo != p.hi]
    if ranged:
        raise OutsideClass(f"{', '.join(ranged)}: the cutoff decides a kernel whose other "
                           "parameters have one value each (decide_each fixes them)")
    fam = Family(kernel, free[0].name)
    try:
        return _decide(fam, closed, expired)
    finally:
        fam.runner.close()
        fam.abstract.close()


def _decide(fam: Family, closed, expired) -> Decided | None:
    kernel, name = fam.kernel, fam.name
    checked: set[int] = set()

    def check(k: int) -> bool:
        if k not in checked:
            checked.add(k)
            ex = fam.run(k)
            ok = closed(fam.runner, ex, fam.analysis(k) if ex.end == "complete" else None)
            fam.analyses.pop(k, None)  # (a relation is large; the probes build their own)
            return ok
        return True

    for base in range(fam.lo, fam.lo + MAX_BASE + 1):
        if expired() or not check(base):
            return None
        for p in periods(kernel):
            pumps = []
            for r in range(p):
                pump = fam.pump(base + r, p)
                if pump is None:
                    break
                pumps.append(pump)
            if len(pumps) < p:
                continue
            covered = []
            for pump in pumps:
                copies = 3
                while True:
                    sw = fam.window(pump, copies)
                    if sw is not None and sw[0] + sw[1] + 2 <= copies:
                        s, w = sw
                        break
                    if copies >= MAX_COPIES:
                        raise OutsideClass(f"{name}: the copies of the repeated part do not "
                                           f"settle within {MAX_COPIES} copies (the cutoff "
                                           "needs what they know of the part before them to "
                                           "stop changing)")
                    copies = min(MAX_COPIES, copies + 2 if sw is None else sw[0] + sw[1] + 2)
                top = max(2, s + w + 1)
                for i in range(top + 1):
                    if expired() or not check(pump.base + i * p):
                        return None
                covered.append(Covered(pump, top, s, w))
            return Decided(covered, tuple(sorted(checked)))
    why = fam.refusals[0] if fam.refusals else "no base value's executions repeat a part"
    raise OutsideClass(f"{name} has no upper bound and the cutoff found no period (bases "
                       f"{fam.lo}..{fam.lo + MAX_BASE}, periods up to {MAX_PERIOD}): {why}")


MAX_CHOICES = 64   # choices of the bounded parameters beside the unbounded one


def decide_each(kernel: Kernel, closed, expired) -> list[tuple[dict, Decided]] | None:
    """`decide` for each choice of the values of the other parameters' ranges (those the
    constraints exclude whatever the unbounded value: none of them is a launch)."""
    free = [p for p in kernel.params if p.unbounded]
    ranged = [p for p in kernel.params if not p.unbounded and p.lo != p.hi]
    choices = list(itertools.product(*[p.values for p in ranged]))
    if len(choices) > MAX_CHOICES:
        raise OutsideClass(f"{len(choices)} choices of {', '.join(p.name for p in ranged)} beside "
                           f"the unbounded {free[0].name if free else ''} (more than {MAX_CHOICES})")
    out = []
    for values in choices:
        fixed = kernel
        for p, v in zip(ranged, values):
            fixed = with_value(fixed, p.name, v)
        env = {p.name: p.lo for p in fixed.params}
        if not all(eval_expr(c, env) for c in fixed.constraints):
            if free and any(free[0].name in expr_vars(c) for c in fixed.constraints):
                raise OutsideClass(f"the launch constraints depend on {free[0].name}: the "
                                   "family has gaps the cutoff does not cover")
            continue  # not a launch for any value
        decided = decide(fixed, closed, expired)
        if decided is None:
            return None
        out.append(({p.name: v for p, v in zip(ranged, values)}, decided))
    return out


def argument_each(name: str, lo: int, each: list[tuple[dict, Decided]]) -> str:
    if len(each) == 1:
        return argument(name, lo, each[0][1])
    return "; ".join(f"with {', '.join(f'{k}={v}' for k, v in choice.items())}: "
                     f"{argument(name, lo, decided)}" for choice, decided in each)


def argument(name: str, lo: int, decided: Decided) -> str:
    """The verdict's statement of what was checked and why it covers every value."""
    covered, checked = decided.covered, decided.checked
    p = covered[0].pump.period
    base = min(c.pump.base for c in covered)
    span = f"{checked[0]}..{checked[-1]}"
    values = (f"the values {span}" if len(checked) == checked[-1] - checked[0] + 1
              else f"{len(checked)} values in {span}")
    sizes = sorted({c.pump.length for c in covered})
    part = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    return (f"{name}={lo}.. (no upper bound): {values} were checked one by one; "
            f"from {name}={base} on, the execution of {name}+{p} is that of {name} with one more "
            f"copy of a part of {part} operations (period {p}), and the conditions "
            "on any number of copies are those on the values checked (docs/semantics.md, "
            "\"The cutoff\"), in the model without its limits on counts (completed phases, copies "
            "in flight, the integer band), which size SPIN's state vector only")
