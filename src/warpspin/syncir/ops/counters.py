"""Global counters: atom.inc and the takes of CTAs outside the model (PTX 9.7.13.5)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Const, Expr, Loc, NOLOC, Select, _lift_fields
from ..rules import CounterField, Fail, Local, Rule, Set, all_of
from .base import ALL, Footprint, SyncOp, _acc, _e, _ge, _lt, _ne, _plus, sync_op
from .base import SASS_REGISTERS


# ----------------------------------------------------------------------------- global counters


@sync_op
@dataclass(frozen=True)
class AtomInc(SyncOp):
    """atom.global.inc of global counter `counter` by one thread: `dest` gets the old value, the
    counter the next one (0 after `limit`, the wrap bound). CTAs outside the model take values
    from the same counter between any two steps (`counter_take`)."""
    dest: str
    counter: str
    limit: Expr
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "atom.inc"
    sass: ClassVar[str] = r"(ATOMG|ATOM)\b"
    sass_covered: ClassVar[str] = SASS_REGISTERS
    # the counter's value read is each run's choice where CTAs outside the model take values
    # (engine/hb: every sequence of them is a run); incs of the model are ordered as accesses
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.13.5"
    summary: ClassVar[str] = ("by one thread: dest = val; val = 0 if 0 <= limit <= val else "
                              "val + 1 (limit is unsigned: a negative one never wraps); by more "
                              "threads: unsupported (each gets its own value)")
    # touches only its counter and its own local; no identity; the counter has grid scope, so
    # independent-ctas is refused by the footprint
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("t", "sem", Const(3))

    def __post_init__(self): _lift_fields(self, "limit")

    def own_locals(self, pc): return (self.dest,)

    def fmt(self): return f"{self.dest} = atom.inc {self.counter}, limit={_e(self.limit)}"

    def problems(self, k):
        try:
            decl = k.counter(self.counter)
        except KeyError:
            return [f"atom.inc names {self.counter!r}, not a declared global counter"]
        if decl.limit != self.limit:
            return [f"atom.inc on {self.counter} with limit {_e(self.limit)}, but the counter "
                    f"wraps at {_e(decl.limit)}"]
        return []

    def footprint(self, k):
        return Footprint((_acc("global-counter", "rw", "grid"),))

    def rule(self, c):
        val = CounterField(self.counter)
        if c.threads != 1:
            return Rule([Fail("unsupported", f"atom.inc on {self.counter} by {c.threads} threads "
                              "(each thread gets its own value) is not modelled")])
        return Rule([Set(Local(self.dest), val),
                     Set(val, Select(all_of(_ge(self.limit, 0), _ge(val, self.limit)), Const(0),
                                     _plus(val, Const(1))))])


def counter_take(decl) -> Rule:
    """A CTA outside the model takes the next value of counter `decl` (an environment step).
    It never takes the last one (`limit`): that wraps the counter, which happens at the last
    atom.inc of a launch, and the modelled CTA has not yet taken its own last value. With a
    negative limit (as unsigned, beyond any tile count: an empty problem) it takes none: every
    value is then past the last tile, whichever CTA takes it."""
    val = CounterField(decl.name)
    guard = _lt(val, decl.limit)
    if decl.others != Const(1):  # only when the grid has CTAs outside the model
        guard = all_of(_ne(decl.others, 0), guard)
    return Rule([Set(val, _plus(val, Const(1)))], guard=guard)
