"""Which state places an event of the execution may touch, read from its rule (syncir/ops/).

A rule's branch whose condition reads only the executing instance's locals, the launch values
and constants takes the same side in every execution that runs the event (the instance's
locals are the same there: that is what the engine proves), so only that side is followed. So
does one that also reads generic places (`is_generic`) the rule has not written before it: its
reads are recorded as accesses, the conditions order every access that conflicts with them, so
they read the same values in every execution. A branch on any other state (a barrier's, an
in-flight count) is followed both ways: what either side may touch counts. Index expressions of
places must read only locals and launch values.

Each access has a mode: R (read), W (write), A (an add: `p = p + e` with `e` not reading `p`;
adds commute with adds), B (read only to check a model bound; the engine bounds those places
separately). And a zone: "step" for the event itself, or the completion a marker Hook opens
(ops.NAMED_COMPLETE, CLUSTER_COMPLETE, PAIR_COMPLETE, PHASE), which the engine charges to the
barrier's completion node, whichever event triggers it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...syncir.ir import BinOp, Const, Select, UnOp, Var
from ...syncir.ops import CLUSTER_COMPLETE, NAMED_COMPLETE, PAIR_COMPLETE, PHASE
from ...syncir.rules import (BufField, Call, Carried, ClusterField, CounterField, Fail, FlagField, Hook,
                             Inflight, Live, Local, MbarField, NamedField, Obs, Place, Self, Set,
                             TmapField, TmemField, When, WordField, expr_places)
from ...syncir.trace import BOUND_KINDS
from .execution import OutsideClass

MARKERS = (NAMED_COMPLETE, CLUSTER_COMPLETE, PAIR_COMPLETE, PHASE)
PAIR_FIELDS = ("pa", "pk", "pw", "pn", "pg")


@dataclass(frozen=True)
class Access:
    key: tuple      # the concrete place: (kind, ...) (see `Walker.key`)
    mode: str       # R | W | A | B
    zone: str       # "step" or a completion marker


def is_local_expr(e, dirty=frozenset()) -> bool:
    """Whether `e` reads nothing but locals (none of `dirty`, written earlier in the rule),
    launch values and constants."""
    if isinstance(e, (Const, Self)):
        return True
    if isinstance(e, (Var, Local)):
        return e.name not in dirty
    if isinstance(e, Place):
        return False
    if isinstance(e, BinOp):
        return is_local_expr(e.lhs, dirty) and is_local_expr(e.rhs, dirty)
    if isinstance(e, UnOp):
        return is_local_expr(e.arg, dirty)
    if isinstance(e, Select):
        return all(is_local_expr(x, dirty) for x in (e.cond, e.then, e.else_))
    return False


def _is_bound_check(s: When) -> bool:
    """A branch whose only effect is a model-bound failure (copy-bound, phase-bound, ...)."""
    return (not s.else_ and bool(s.then)
            and all(isinstance(x, Fail) and x.kind in BOUND_KINDS for x in s.then))


def _is_add(s: Set) -> bool:
    v = s.value
    return (isinstance(v, BinOp) and v.op in ("+", "-") and v.lhs == s.place
            and s.place not in set(expr_places(v.rhs)))


class Walker:
    """The accesses of one rule for one instance (gid; -1 for an async completion) in a state."""

    def __init__(self, machine):
        self.m = machine
        self._fns: dict = {}
        self._places: dict = {}  # id(expr) -> (expr, the places it reads)

    def _eval(self, e, gid: int, s) -> int:
        f = self._fns.get((id(e), gid))
        if f is None:
            f = self._fns[(id(e), gid)] = (self.m._expr(e, gid), e)
        return f[0](s)

    def key(self, p, gid: int, s) -> tuple | None:
        """The concrete place `p` names (None: a local of the executing instance)."""
        m = self.m
        for f in ("cta", "index", "bid", "stage"):
            sub = getattr(p, f, None)
            if sub is not None and not isinstance(sub, int) \
                    and not is_local_expr(sub, getattr(self, "_dirty", ())):
                raise OutsideClass(f"a rule addresses a place through the state ({p!r})")
        ev = lambda e: self._eval(e, gid, s)  # noqa: E731
        if isinstance(p, Local):
            return None
        if isinstance(p, Obs):
            return ("obs", gid, p.array, ev(p.index))
        if isinstance(p, MbarField):
            el = m.layout.element.get((ev(p.cta), p.array, ev(p.index)))
            if el is None:
                raise OutsideClass(f"mbarrier {p.array} element out of range")
            return ("mb", el, p.field)
        if isinstance(p, NamedField):
            slot = m.layout.named_slot.get((p.cta, ev(p.bid)))
            if slot is None:
                raise OutsideClass("a named barrier id outside the model's slots")
            return ("nb", slot, p.field)
        if isinstance(p, ClusterField):
            return ("cl", p.cluster, p.field)
        if isinstance(p, Live):
            return ("live", ev(p.cta))
        if isinstance(p, Inflight):
            return ("infl", m.layout.async_slot[(p.process, p.pc, ev(p.cta), ev(p.index))])
        if isinstance(p, Carried):
            return ("carried", m.layout.async_slot[(p.process, p.pc, ev(p.cta), ev(p.index))],
                    p.buf)
        if isinstance(p, WordField):
            return ("w", p.array, ev(p.cta), ev(p.index), p.field)
        if isinstance(p, CounterField):
            return ("ctr", p.name, p.field)
        if isinstance(p, FlagField):
            return ("flag", p.name, p.field)
        if isinstance(p, TmapField):
            return ("tm", p.name, ev(p.cta), p.field)
        if isinstance(p, TmemField):
            return ("tmem", ev(p.cta), p.field)
        if isinstance(p, BufField):
            return ("buf", p.name, ev(p.cta), None if p.stage is None else ev(p.stage), p.field)
        raise OutsideClass(f"a rule touches a place the engine does not know: {p!r}")

    def accesses(self, rule_body, guard, gid: int, s) -> list[Access]:
        out: list[Access] = []
        self._dirty: set[str] = set()
        self._written: set[tuple] = set()  # keys of places the rule wrote so far
        if guard is not None:
            self._reads(guard, gid, s, "R", "step", out)
        self._walk(rule_body, gid, s, "step", out, self._dirty)
        return out

    def _reads(self, e, gid, s, mode, zone, out):
        cached = self._places.get(id(e))
        if cached is None or cached[0] is not e:
            cached = self._places[id(e)] = (e, tuple(expr_places(e)))
        for p in cached[1]:
            k = self.key(p, gid, s)
            if k is not None and not (k[0] == "w" and k[-1] in ("at_ld", "at_st")):
                out.append(Access(k, mode, zone))

    def _walk(self, stmts, gid, s, zone, out, dirty: set):
        stmts = tuple(stmts)
        if stmts and isinstance(stmts[0], Hook) and stmts[0].name in MARKERS:
            zone = stmts[0].name
        for st in stmts:
            if isinstance(st, Set):
                self._reads(st.value, gid, s, "R", zone, out)
                if isinstance(st.place, Local):
                    dirty.add(st.place.name)
                k = self.key(st.place, gid, s)
                if _is_add(st):
                    self._drop_self_read(k, zone, out)
                if k is not None:
                    out.append(Access(k, "A" if _is_add(st) else "W", zone))
                    self._written.add(k)
            elif isinstance(st, When):
                if _is_bound_check(st):
                    self._reads(st.cond, gid, s, "B", zone, out)
                elif is_local_expr(st.cond, dirty):
                    taken = st.then if self._eval(st.cond, gid, s) else st.else_
                    self._walk(taken, gid, s, zone, out, dirty)
                elif self._stable(st.cond, gid, s, dirty):
                    self._reads(st.cond, gid, s, "R", zone, out)
                    taken = st.then if self._eval(st.cond, gid, s) else st.else_
                    self._walk(taken, gid, s, zone, out, dirty)
                else:
                    self._reads(st.cond, gid, s, "R", zone, out)
                    self._walk(st.then, gid, s, zone, out, dirty)
                    self._walk(st.else_, gid, s, zone, out, dirty)
            elif isinstance(st, Call):
                self._walk(self.m.layout.subrules.bodies[st.name], gid, s, zone, out, dirty)
            elif isinstance(st, (Fail, Hook)):
                pass
            else:
                raise OutsideClass(f"a rule statement the engine does not know: {st!r}")

    def _stable(self, e, gid: int, s, dirty: set) -> bool:
        """Whether `e` reads only locals the rule has not written, launch values, constants and
        generic places it has not written (their value in the event's pre-state is the one
        every execution reads, once the conditions hold)."""
        for p in expr_places(e):
            if isinstance(p, Local):
                if p.name in dirty:
                    return False
                continue
            if any(getattr(p, f, None) is not None and not isinstance(getattr(p, f), int)
                   and not is_local_expr(getattr(p, f), dirty)
                   for f in ("cta", "index", "bid", "stage")):
                return False
            k = self.key(p, gid, s)
            if k is None or not is_generic(k) or k in self._written or \
                    (k[0] == "w" and k[-1] in ("at_ld", "at_st")):
                return False
        return True

    @staticmethod
    def _drop_self_read(k, zone, out):
        """An add reads its own place only to add to it: that read is the add itself."""
        for i in range(len(out) - 1, -1, -1):
            if out[i].key == k and out[i].mode == "R" and out[i].zone == zone:
                del out[i]
                return


# places the barrier theories follow (global flags: analysis._flag_wait, Lemma F)
SPECIAL = ("mb", "nb", "cl", "live", "infl", "obs", "flag")
# race monitors of TMEM accumulator stages: conditions C10 replaces them (docs/semantics.md)
TMEM_MONITORS = ("mip", "cov")


def is_tmem_monitor(key: tuple) -> bool:
    return key[0] == "buf" and key[4] in TMEM_MONITORS


def is_generic(key: tuple) -> bool:
    """Places checked for unordered conflicting accesses (all but the barriers' and the
    in-flight counters, the pair fields of TMEM and the TMEM stages' race monitors)."""
    if key[0] in SPECIAL or is_tmem_monitor(key):
        return False
    if key[0] == "tmem" and key[2] in PAIR_FIELDS:
        return False
    return True

