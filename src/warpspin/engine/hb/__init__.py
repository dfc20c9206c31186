"""The happens-before engine: decides a kernel from one execution per launch-value choice,
when the kernel is in its class (docs/semantics.md, "Happens-before").

For each choice of the launch values the engine runs the kernel once in the reference
interpreter. A violation or a deadlock there is a real execution: it is the counterexample.
Otherwise it builds the execution's happens-before relation and checks the conditions under
which every execution is a reordering of this one, each operation landing in the same barrier
generation and reading the same values. All hold: no execution violates a property this one
does not, and the choice is verified. One fails: the engine runs the reordering it names; a
violation there is the counterexample; none, and the kernel is outside the class (SPIN decides
it). So is a kernel with an op that declares no happens-before rule (syncir/ops/ `hb_rule`), a test-
wait whose result decides more than a wait, or global state that CTAs outside the model change.
"""
from __future__ import annotations

import time
from contextvars import ContextVar

from ...syncir.interp import Machine
from ...syncir.ir import Kernel, Loc
from ..contract import EngineOptions, Outcome, cycle_collector_paused
from ..progress import Progress, Ticker
from . import cutoff
from .analysis import analyze
from .conditions import failures
from .execution import Execution, OutsideClass, Runner
from .explain import why_unordered
from .peek import to_plain
from .witness import run_witness

MAX_RUNS = 4096  # launch-value choices checked one by one; more: outside the class


def outside_ops(kernel: Kernel) -> list[tuple[str, Loc]]:
    """The ops that declare no happens-before rule (the allow-list is syncir/ops/ `hb_rule`)."""
    out, seen = [], set()
    for op in kernel.ops():
        if op.hb_family() is None and (op.mnemonic, op.loc) not in seen:
            seen.add((op.mnemonic, op.loc))
            out.append((op.mnemonic, op.loc))
    return out


NAME = "happens-before"
_TICK: ContextVar = ContextVar("warpspin_hb_ticker", default=lambda make: None)


class HappensBefore:
    """The engine, as the pipeline's contract (engine/contract.py) names it."""
    name = NAME

    def check(self, kernel: Kernel, options: EngineOptions) -> Outcome:
        return check(kernel, options.timeout_s)


def check(kernel: Kernel, timeout_s: float = 60.0) -> Outcome:
    t0 = time.perf_counter()
    res = Outcome(NAME, "inconclusive")
    token = _TICK.set(Ticker())
    try:
        with cycle_collector_paused():
            _check(kernel, res, t0 + timeout_s)
    except OutsideClass as e:
        res.verdict = "outside"
        res.reasons = [e.why]
        res.locations = [e.loc] if e.loc is not None else []
    finally:
        _TICK.reset(token)
    res.cost.seconds = time.perf_counter() - t0
    return res


def _check(kernel: Kernel, res: Outcome, deadline: float) -> None:
    ops = outside_ops(kernel)
    if ops:
        res.verdict = "outside"
        res.reasons = [f"{what} has no happens-before rule" for what, _ in ops]
        res.locations = [loc for _, loc in ops]
        return
    free = [p for p in kernel.params if p.unbounded]
    for c in kernel.counters:
        if free and _takes(kernel, c):
            raise OutsideClass(f"global counter {c.label or c.name}: CTAs outside the model take "
                               "values from it, and the cutoff over "
                               f"{free[0].name} does not follow them", c.loc)
    if not free:
        if _runs(kernel, res, deadline):
            res.verdict = "verified"
        return

    each = cutoff.decide_each(kernel, lambda runner, ex, an: _decide_run(runner, ex, res, an),
                              lambda: time.perf_counter() > deadline)
    if each is None:
        if res.verdict not in ("violation", "inconclusive"):
            res.verdict, res.reasons = "inconclusive", ["the time limit was reached"]
        return
    res.config["cutoff"] = cutoff.argument_each(free[0].name, free[0].lo, each)
    res.verdict = "verified"


def _runs(kernel: Kernel, res: Outcome, deadline: float) -> bool:
    """Check every launch-value choice of `kernel` (all parameters bounded): True when each is
    verified; else `res` holds the violation, or the verdict inconclusive at the time limit."""
    runner = Runner(kernel)
    try:
        return _runs_of(runner, res, deadline)
    finally:
        runner.close()


def _runs_of(runner: Runner, res: Outcome, deadline: float) -> bool:
    _only_incs_read_taken_counters(runner)
    starts = runner.starts()
    if len(starts) > MAX_RUNS:
        raise OutsideClass(f"{len(starts)} launch-value choices (more than {MAX_RUNS})")
    runs = 0
    for start, s in starts:
        todo = [()]  # choices of takes (Runner.run): each sequence of counter values is one run
        while todo:
            if time.perf_counter() > deadline:
                res.verdict = "inconclusive"
                res.reasons = [f"the time limit was reached after {res.cost.runs} executions"]
                return False
            takes = todo.pop()
            ex = runner.run(start, s, takes=takes)
            todo += [takes + (False,) * (j - len(takes)) + (True,)
                     for j in range(len(takes), ex.decisions)]
            runs += 1
            if runs > MAX_RUNS:
                raise OutsideClass(f"more than {MAX_RUNS} executions (launch-value choices and "
                                   "the values CTAs outside the model take from global counters)")
            if not _decide_run(runner, ex, res):
                return False
    return True


def _decide_run(runner: Runner, ex, res: Outcome, an=None) -> bool:
    """Decide one launch-value choice from its default execution `ex` (and its analysis `an`,
    when already built): True when verified; False when `res` now holds its violation."""
    res.cost.runs += 1
    res.cost.ops += len(ex.events)
    _TICK.get()(lambda s: Progress(seconds=s, phase="executions", runs=res.cost.runs,
                                   ops=res.cost.ops))
    if ex.end != "complete":
        if _counterexample(res, runner.m, ex, "the first execution"):
            return False
        raise OutsideClass(f"the execution ends in {ex.end}, but not as an execution of the "
                           "kernel with its peeking test-waits (the engine does not decide "
                           "it)")
    an = an or analyze(runner, ex)
    res.cost.edges += an.edges
    failed = failures(an)
    if not failed:
        return True
    for f in failed:
        w = run_witness(an, f)
        res.cost.runs += 1
        if w is not None and _counterexample(res, runner.m, w, f"a reordering: {f.message}"):
            res.why_unordered = why_unordered(f)
            return False
    f = failed[0]
    raise OutsideClass(f"{f.message}; no reordering of it ran into a violation, so the "
                       "kernel's synchronization may depend on the schedule",
                       f.second.loc if f.second is not None else f.first.loc)


def _only_incs_read_taken_counters(runner: Runner) -> None:
    """Lemma T's premise, as an allow-list: a counter other CTAs take from is touched by no rule
    but atom.inc's (a try_cancel's pool taken from by others would need takes before it too)."""
    from ...syncir.ops import AtomInc
    from ...syncir.rules import CounterField, rule_places
    taken = {c.name for c in runner.kernel.counters if _takes(runner.kernel, c)}
    if not taken:
        return
    lay = runner.m.layout
    for pi, fp in enumerate(lay.flat):
        for pc, ins in fp.ops():
            if isinstance(ins.stmt, AtomInc):
                continue
            if any(isinstance(p, CounterField) and p.name in taken
                   for p in rule_places(lay.rule(pi, pc))):
                raise OutsideClass(f"{ins.stmt.mnemonic} reads a global counter other CTAs take "
                                   "from: only atom.inc's reads are runs' choices", ins.stmt.loc)


def _takes(kernel: Kernel, counter) -> bool:
    """Whether CTAs outside the model may take values from the counter (an environment step)."""
    from ...syncir.ir import Const
    return counter.others != Const(0)


def _counterexample(res: Outcome, m: Machine, ex: Execution, how: str) -> bool:
    """Take `ex`'s end as the counterexample, as an execution of the kernel itself (a T(K)
    execution with peeking test-waits is translated back: peek.to_plain). False when it does
    not replay as one."""
    from ...syncir.interp import failed_tests_at_end, replay
    kind = "deadlock" if ex.end == "deadlock" else ex.violation.kind
    events = [e.step for e in ex.events]
    if ex.peeks:
        events = to_plain(m, ex.initial, events, ex.peeks, ex.end)
        if events is None:
            return False
    events = [*ex.start, *events]
    if kind == "deadlock":
        events = events + failed_tests_at_end(m.kernel, events)
    if ex.peeks and not replay(m.kernel, events, expect_kind=kind).ok:
        return False  # (an execution of the kernel itself replays: the pipeline replays it)
    res.verdict, res.kind, res.events, res.found_by = "violation", kind, events, how
    return True
