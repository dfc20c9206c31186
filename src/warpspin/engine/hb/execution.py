"""One execution of a kernel in the reference interpreter, recorded for the happens-before
engine: every event with its actor, its occurrence and the states around it.

Actors are the instances (their global numbers), one per global counter after them (the CTAs
outside the model that take values from it) and, last, the async in-flight slots, numbered as
they first complete (the j-th completion of a slot is that slot's j-th event). Takes happen only where a run's choices put them,
right before an atom.inc of the counter (the counter is read by nothing else, so that covers
every value the incs can return). A test-wait is taken as T(K) takes it
(peek.py): as failed, changing nothing but its result, with a shadow of the passed path that
must rejoin the run after the wait it decides; a test-wait whose result decides more is outside
the class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress, islice
from operator import is_, itemgetter

from ...syncir.interp import Machine, ModelError, State, Violation
from ...syncir.ir import Kernel, Loc
from ...syncir.ops import AtomInc, MbarTestWait
from ...syncir.trace import Complete, Event as TraceEvent, ParamChoice, Step, Take
from .peek import PeekError, Shadow, take_peek


class OutsideClass(Exception):
    """The kernel is not in the class the happens-before engine decides; `loc` is the op."""

    def __init__(self, why: str, loc: Loc | None = None):
        super().__init__(why)
        self.why, self.loc = why, loc


@dataclass(frozen=True)
class Event:
    n: int                 # position in the execution
    actor: int             # an instance's gid, an async slot's or a counter's (Runner.actor_of)
    occ: int               # events of the actor before this one
    step: Step | Complete | Take
    pre: State
    post: State
    hooks: tuple = ()      # (hook name, mbarrier element) the step's rule ran


@dataclass
class Execution:
    start: tuple[ParamChoice, ...]
    events: list[Event] = field(default_factory=list)
    end: str = "complete"              # complete | deadlock | violation
    violation: Violation | None = None
    final: State | None = None
    peeks: list = field(default_factory=list)   # peek.Peek: test-waits T(K) took as failed
    initial: State | None = None
    shadows: dict = field(default_factory=dict)  # at the end: gid -> peek.Shadow still followed
    takes: int = 0       # values CTAs outside the model took
    decisions: int = 0   # the points where a take could go (Runner.run's `takes`) it reached

    def trace(self) -> list[TraceEvent]:
        return [*self.start, *(e.step for e in self.events)]


class _Hooks:
    """Collects the hooks a step runs (interp.ReplayLog's interface)."""

    def __init__(self):
        self.seen: list[tuple[str, int]] = []

    def hook(self, name: str, element: int, gid: int, loc: Loc):
        self.seen.append((name, element))


class _Reads:
    """A state that records which places a guard reads."""
    __slots__ = ("s", "read")

    def __init__(self, s: State):
        self.s, self.read = s, []

    def __getitem__(self, i):
        self.read.append(i)
        return self.s[i]


def _nothing(s: State) -> tuple:
    return ()


class Runner:
    """Executions of one kernel: the default schedule, or one that a witness directs."""

    def __init__(self, kernel: Kernel, lift_bounds: bool = False):
        self.kernel = kernel
        self.m = Machine(kernel, lift_bounds)
        self.n_inst = len(self.m.instances)
        self.n_slots = len(self.m.layout.async_keys)
        self.counters = {name: i for i, name in enumerate(self.m.layout.counters)}
        self.current: Step | Complete | Take | None = None   # the event being executed
        # slots are numbered as actors when they first complete: a kernel has thousands (one
        # per copy site, target CTA and barrier element), an execution uses a few hundred, and
        # every clock of the analysis is as long as the actors numbered
        self._slot_actor: dict[int, int] = {}
        self._slots: list[int] = []
        self._guards: dict[int, tuple] = {}  # gid -> (pc, getter, values read, guard's value)

    def close(self) -> None:
        """Drop the machine's compiled rules: they hold the machine in reference cycles, and
        with the cyclic collector paused (contract.cycle_collector_paused) its first collection
        afterwards would walk every one of them."""
        self.m.forget_compiled()
        self._guards.clear()

    @property
    def actors(self) -> int:
        """Actors numbered so far: the clocks of an analysis made now cover its execution's."""
        return self.n_inst + len(self.counters) + len(self._slots)

    def actor_of(self, ev: Step | Complete | Take) -> int:
        if isinstance(ev, Step):
            return self.m.gid[(ev.process, ev.instance)]
        if isinstance(ev, Take):
            return self.n_inst + self.counters[ev.counter]
        slot = self.m.layout.async_slot[(ev.process, ev.pc, ev.cta, ev.index)]
        actor = self._slot_actor.get(slot)
        if actor is None:
            actor = self._slot_actor[slot] = self.actors
            self._slots.append(slot)
        return actor

    def slot_of(self, actor: int) -> int | None:
        """The async in-flight slot whose completions `actor` is (None: an instance or a take)."""
        first = self.n_inst + len(self.counters)
        return self._slots[actor - first] if actor >= first else None

    def take_before(self, s: State, ev) -> Take | None:
        """The take that may go before step `ev`: `ev` is an atom.inc of a counter from which
        CTAs outside the model may take a value now."""
        if not isinstance(ev, Step):
            return None
        op = self.m.flat[ev.process].code[ev.pc].stmt
        if not isinstance(op, AtomInc):
            return None
        return Take(op.counter) if self.m.take_enabled(s, op.counter) else None

    def enabled(self, s: State, first: bool = False) -> list[Step | Complete]:
        """The events enabled in `s` (with `first`: only the first of them, the default
        schedule's pick)."""
        m, out = self.m, []
        for inst in m.instances:
            gid = inst.gid
            if m.ended(s, gid) or not self._guard(s, gid):
                continue
            out.append(Step(inst.process, inst.index, m.pc(s, gid)))
            if first:
                return out
        infl = m.sl.infl
        for slot in compress(range(self.n_slots), islice(s, infl, infl + self.n_slots)):
            out.append(Complete(*m.layout.async_keys[slot]))  # in-flight counts are >= 0
            if first:
                return out
        return out

    def _guard(self, s: State, gid: int) -> bool:
        """Whether instance `gid`'s next step is enabled in `s`. The guard is a function of the
        state places it reads, so its value is kept with the values it read: when none of them
        changed, it is the same (re-evaluating the guards of the instances blocked ahead of the
        scheduled one, at every step, was most of a long execution's time)."""
        m = self.m
        pc = m.pc(s, gid)
        kept = self._guards.get(gid)
        # the same objects, not equal ones: a state's unchanged places are the objects of the
        # state it was made from, and the cutoff's symbolic values refuse to be compared
        if kept is not None and kept[0] == pc and all(map(is_, kept[1](s), kept[2])):
            return kept[3]
        guard, _ = m._compiled_step(gid, pc)
        rec = _Reads(s)
        value = bool(guard(rec))
        get = itemgetter(*rec.read) if len(rec.read) > 1 else \
            (lambda v, i=rec.read[0]: (v[i],)) if rec.read else _nothing
        self._guards[gid] = (pc, get, get(s), value)
        return value

    def _settle(self, s: State, gids, occ, shadows, ex: Execution) -> State:
        """Every instance of `gids` resting at a test-wait takes it as T(K) does (peek.py): no
        instance rests at one."""
        m, v = self.m, None
        for gid in gids:
            while not m.ended(s if v is None else tuple(v), gid):
                cur = s if v is None else tuple(v)
                pc = m.pc(cur, gid)
                inst = m.instances[gid]
                op = m.flat[inst.process].code[pc].stmt
                if not isinstance(op, MbarTestWait):
                    break
                if gid in shadows:
                    raise OutsideClass("a test-wait while the result of an earlier one is still "
                                       "followed (one at a time is modelled)", op.loc)
                v = list(cur)
                try:
                    peek, shadow = take_peek(m, v, gid, occ.get(gid, 0))
                except PeekError as e:
                    raise OutsideClass(e.why, e.loc) from None
                ex.peeks.append(peek)
                shadows[gid] = shadow
            if gid in shadows and m.ended(s if v is None else tuple(v), gid):
                raise OutsideClass("a peeking test-wait whose warp exits before the wait it "
                                   "decides", shadows[gid].peek.loc)
        return s if v is None else tuple(v)

    def starts(self) -> list[tuple[tuple[ParamChoice, ...], State]]:
        return self.m.initial_states()

    def run(self, start: tuple[ParamChoice, ...], s: State, choose=None,
            limit: int = 1_000_000, shadows: dict | None = None,
            takes: tuple[bool, ...] = ()) -> Execution:
        """Execute from `s` until no step is enabled: `choose(enabled, occurrences)` picks the
        next event (default: the first instance step, else the first completion). `shadows`:
        the passed paths of test-waits already taken (a run resumed mid-way: cutoff.py).
        `takes`: at the i-th point where a take may go before the picked atom.inc, one goes
        when takes[i] (none past its end); `decisions` counts the points reached."""
        m = self.m
        ex = Execution(start, initial=s)
        occ: dict[int, int] = {}
        shadows: dict[int, Shadow] = dict(shadows or {})
        ex.shadows = shadows
        s = self._settle(s, range(self.n_inst), occ, shadows, ex)
        while len(ex.events) < limit:
            evs = self.enabled(s, first=choose is None)
            if not evs:
                break
            ev = choose(evs, occ) if choose else evs[0]
            if ev is None:
                break
            take = self.take_before(s, ev) if choose is None else None
            if take is not None:
                ex.decisions += 1
                if ex.decisions <= len(takes) and takes[ex.decisions - 1]:
                    ev = take
            actor = self.actor_of(ev)
            self.current = ev
            hooks = _Hooks()
            try:
                t = m.step(s, ev, hooks)
            except Violation as v:
                ex.events.append(Event(len(ex.events), actor, occ.get(actor, 0), ev, s, s,
                                       tuple(hooks.seen)))
                ex.end, ex.violation, ex.final = "violation", v, s
                return ex
            except ModelError as e:
                raise OutsideClass(f"the interpreter cannot execute {ev}: {e}") from e
            occ[actor] = occ.get(actor, 0) + 1
            if actor in shadows:
                try:
                    if shadows[actor].follow(s, t, ev, actor, occ[actor]):
                        del shadows[actor]
                except PeekError as e:
                    raise OutsideClass(e.why, e.loc) from None
            if actor < self.n_inst:
                t = self._settle(t, (actor,), occ, shadows, ex)
            elif isinstance(ev, Take):
                ex.takes += 1
            ex.events.append(Event(len(ex.events), actor, occ[actor] - 1, ev, s, t,
                                   tuple(hooks.seen)))
            s = t
        if any(not m.ended(s, i.gid) for i in m.instances):
            # as the interpreter has it, nothing at all is enabled: the other CTAs take what
            # the counters have left (it changes nothing the blocked warps wait on)
            for name in self.counters:
                while m.take_enabled(s, name):
                    actor = self.actor_of(Take(name))
                    t = m.step(s, Take(name))
                    ex.events.append(Event(len(ex.events), actor, occ.get(actor, 0), Take(name),
                                           s, t))
                    occ[actor] = occ.get(actor, 0) + 1
                    s = t
            ex.end = "deadlock"
        ex.final = s
        return ex
