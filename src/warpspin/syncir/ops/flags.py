"""Global flags: atom.add / red.add, spin waits, their memory order and scope (PTX
9.7.13.5-6, 9.7.9.8, 8.5, 8.7)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Const, Expr, Loc, NOLOC, _lift_fields
from ..objects import LIMITS
from ..rules import Fail, FlagField, Local, Rule, Set, When, any_of
from .base import (ALL, Footprint, SyncOp, _acc, _e, _eq, _ge, _gt, _le, _lt, _ne, _plus, _times_t,
                   sync_op)
from .base import SASS_NO_ORDER, SASS_OBLIGATION


# ----------------------------------------------------------------------------- global flags

MEMORY_SCOPES = ("cta", "cluster", "gpu", "sys")  # PTX 8.5, narrowest first
ADD_SEMANTICS = ("relaxed", "release", "acquire", "acq_rel")
WAIT_SEMANTICS = ("weak", "relaxed", "acquire")  # weak: a plain ld (no .relaxed / .acquire)
RELEASES = ("release", "acq_rel")
WAIT_UNTIL = {">=": _ge, ">": _gt, "<=": _le, "<": _lt, "==": _eq, "!=": _ne}


def _flag_ops(k, flag: str):
    """(process index, CTA, op) for every op on global flag `flag`."""
    from ..ir import walk_stmts
    for i, p in enumerate(k.processes):
        for s in walk_stmts(p.body):
            if isinstance(s, FLAG_OPS) and s.flag == flag:
                yield i, p.cta, s


def _reads_flag(s) -> bool:
    """A spin loop, a lock, or an add whose old value is used."""
    return isinstance(s, (GlobalWait, GlobalLock)) or isinstance(s, GlobalAdd) and \
        s.dest is not None


def _writes_flag(s) -> bool:
    return isinstance(s, (GlobalAdd, GlobalStore, GlobalLock))


def _release_check(c, op, what: str) -> list:
    """`scope` when `op` (`sem`) is not a release while another process reads the flag."""
    if op.sem in RELEASES or not _elsewhere(c, op.flag, _reads_flag):
        return []
    label = _flag_label(c.kernel, op.flag)
    return [Fail("scope", f"{{who}} {what} {label} with .{op.sem}, not a release: what it wrote "
                 "before is not ordered before the reads of a thread that reads the flag "
                 "(st.release, atom.exch.release, or fence.acq_rel.gpu before it)")]


def _acquire_check(c, op, what: str) -> list:
    """`scope` when `op` (`sem`) is not an acquire while another process writes the flag."""
    if op.sem in ("acquire", "acq_rel") or not _elsewhere(c, op.flag, _writes_flag):
        return []
    label = _flag_label(c.kernel, op.flag)
    return [Fail("scope", f"{{who}} {what} {label} with .{op.sem}, not an acquire: the writes "
                 "made before the writes it sees may not be visible to its reads after it "
                 "(atom.cas.acquire / atom.exch.acquire, or fence.acq_rel.gpu after the loop)")]


def _elsewhere(c, flag: str, want) -> bool:
    """Whether a process other than the executing one has an op on `flag` that `want` accepts."""
    return any(want(s) for i, _, s in _flag_ops(c.kernel, flag) if i != c.process)


def _flag_scope(c, flag: str, scope: str, peers: set[int], what: str) -> list:
    """`scope` when `scope` does not include every CTA of `peers` (PTX 8.5: two operations
    synchronize, and atomics are atomic with respect to each other, only when each is in the
    other's scope)."""
    others = sorted(peers - {c.cta})
    if not others:
        return []
    far = [t for t in others if not c.kernel.same_cluster(c.cta, t)]
    need = "gpu" if far else "cluster"
    if MEMORY_SCOPES.index(scope) >= MEMORY_SCOPES.index(need):
        return []
    where = (f"CTA {far[0]}, outside its cluster," if far else f"CTA {others[0]} of its cluster")
    return [Fail("scope", f"{{who}} {what} {_flag_label(c.kernel, flag)} at .{scope} scope, but "
                 f"{where} uses it too: operations synchronize (and atomics are atomic with "
                 f"respect to each other) only within each other's scope, here .{need} or wider")]


def _in_range(c, flag: str) -> When:
    """integer-range when the flag leaves the model's integers."""
    val = FlagField(flag)
    return When(any_of(_gt(val, LIMITS.local_band), _lt(val, -LIMITS.local_band)),
                [Fail("integer-range", f"{_flag_label(c.kernel, flag)} reaches {{0}}, outside "
                      "the model's integer range", (val,))])


def _flag_label(k, flag: str) -> str:
    try:
        return k.flag(flag).label or flag
    except KeyError:
        return flag


class _FlagOp:
    def problems(self, k):
        try:
            k.flag(self.flag)
        except KeyError:
            return [f"{self.mnemonic} names {self.flag!r}, not a declared global flag"]
        out = []
        if self.scope not in MEMORY_SCOPES:
            out.append(f"scope {self.scope!r} (one of {MEMORY_SCOPES})")
        return out + self._sem_problems()


@sync_op
@dataclass(frozen=True)
class GlobalAdd(_FlagOp, SyncOp):
    """atom.add / red.add of `delta` to global flag `flag` by each executing thread, with memory
    order `sem` at scope `scope`; `dest`: the local that gets the old value (one thread only), or
    None when it is not used."""
    flag: str
    delta: Expr
    sem: str = "release"
    scope: str = "gpu"
    loc: Loc = NOLOC
    dest: str | None = None
    mnemonic: ClassVar[str] = "atom.add"
    sass: ClassVar[str] = r"(ATOMG|REDG|ATOM|RED)\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "flag.add"
    ptx: ClassVar[str] = "9.7.13.5 (atom), 9.7.13.6 (red), 8.5 (scope), 8.7 (release patterns)"
    summary: ClassVar[str] = ("dest = val (one thread); val += threads * delta; not a release "
                              "while another process reads the flag (a wait, an add with dest): "
                              "scope (the writes before it are not ordered before that "
                              "reader's reads); with dest, not an acquire while another process "
                              "adds: scope; a scope that leaves out a CTA using the flag: scope")
    # touches only its flag (grid scope: independent-ctas is refused by the footprint) and its
    # own local; no identity
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("count", Const(1))

    def __post_init__(self): _lift_fields(self, "delta")

    def own_locals(self, pc): return () if self.dest is None else (self.dest,)

    def hb_family(self):
        # a ticket's old value is the order of the adds: outside the happens-before class
        return self.hb_rule if self.dest is None else None

    def fmt(self):
        head = "" if self.dest is None else f"{self.dest} = "
        return f"{head}atom.add.{self.sem}.{self.scope} {self.flag}, {_e(self.delta)}"

    def _sem_problems(self):
        return [] if self.sem in ADD_SEMANTICS else [f"memory order {self.sem!r} (one of "
                                                     f"{ADD_SEMANTICS})"]

    def footprint(self, k):
        return Footprint((_acc("global-flag", "rw", "grid"),))

    def rule(self, c):
        val = FlagField(self.flag)
        out = _flag_scope(c, self.flag, self.scope,
                          {cta for _, cta, _ in _flag_ops(c.kernel, self.flag)}, "adds to")
        label = _flag_label(c.kernel, self.flag)
        if self.sem not in RELEASES and _elsewhere(c, self.flag, _reads_flag):
            out.append(Fail("scope", f"{{who}} adds to {label} with .{self.sem}, not a release: "
                            "what it wrote before is not ordered before the reads of a thread "
                            "that reads the flag (atom.add.release, or fence.acq_rel.gpu before "
                            "the add)"))
        if self.dest is not None and self.sem not in ("acquire", "acq_rel") and \
                _elsewhere(c, self.flag, _writes_flag):
            out.append(Fail("scope", f"{{who}} reads {label}'s old value with .{self.sem}, not "
                            "an acquire: the writes made before the other adds it counts may "
                            "not be visible to its reads after it (atom.add.acq_rel, or "
                            "fence.acq_rel.gpu after the add)"))
        if self.dest is not None:
            if c.threads != 1:
                return Rule([Fail("unsupported", f"atom.add on {label} by {c.threads} threads "
                                  "whose old value is used (each gets its own) is not modelled")])
            out.append(Set(Local(self.dest), val))
        n = _times_t(c.threads, self.delta)
        return Rule([*out, Set(val, _plus(val, n)), _in_range(c, self.flag)])


@sync_op
@dataclass(frozen=True)
class GlobalWait(_FlagOp, SyncOp):
    """A spin loop on global flag `flag` (`while (ld.<sem>.<scope> flag) ... target`): blocks
    until `flag <until> target` holds."""
    flag: str
    until: str
    target: Expr
    sem: str = "acquire"
    scope: str = "gpu"
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "spin.wait"
    sass: ClassVar[str] = r"(LDG|LD)\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    hb_rule: ClassVar[str | None] = "flag.wait"
    ptx: ClassVar[str] = "9.7.9.8 (ld.acquire), 8.5 (scope), 8.7 (acquire patterns)"
    summary: ClassVar[str] = ("waits until val <until> target; not an acquire while another "
                              "process adds to the flag: scope; a scope that leaves out a CTA "
                              "that adds to it: scope")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("count", ">=", Const(3))

    def __post_init__(self): _lift_fields(self, "target")

    def fmt(self):
        return f"spin.wait.{self.sem}.{self.scope} {self.flag} {self.until} {_e(self.target)}"

    def _sem_problems(self):
        out = [] if self.sem in WAIT_SEMANTICS else [f"memory order {self.sem!r} (one of "
                                                     f"{WAIT_SEMANTICS})"]
        if self.until not in WAIT_UNTIL:
            out.append(f"condition {self.until!r} (one of {tuple(WAIT_UNTIL)})")
        return out

    def footprint(self, k):
        return Footprint((_acc("global-flag", "read", "grid"),), blocking=True)

    def rule(self, c):
        val = FlagField(self.flag)
        label = _flag_label(c.kernel, self.flag)
        out = _flag_scope(c, self.flag, self.scope,
                          {cta for _, cta, s in _flag_ops(c.kernel, self.flag)
                           if _writes_flag(s)}, "waits on")
        if self.sem != "acquire" and _elsewhere(c, self.flag, _writes_flag):
            why = ("a plain (weak) load is not even ordered with the adds" if self.sem == "weak"
                   else "a relaxed load orders nothing")
            out.append(Fail("scope", f"{{who}} waits on {label} with a {self.sem} load: {why}; "
                            "the writes made before the adds it waits for may not be visible "
                            "to its reads after the loop (ld.acquire, or fence.acq_rel.gpu "
                            "after the loop)"))
        return Rule(out, guard=WAIT_UNTIL[self.until](val, self.target))


@sync_op
@dataclass(frozen=True)
class GlobalStore(_FlagOp, SyncOp):
    """st (`cute.arch.store`, or an atom.exch whose old value is unused) of `value` into global
    flag `flag` by each executing thread, with memory order `sem` (`weak`: a plain st) at scope
    `scope`."""
    flag: str
    value: Expr
    sem: str = "release"
    scope: str = "gpu"
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "st.flag"
    sass: ClassVar[str] = r"(STG|ST)\b"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    ptx: ClassVar[str] = "9.7.9.9 (st), 9.7.13.5 (atom.exch), 8.5 (scope), 8.7 (release patterns)"
    summary: ClassVar[str] = ("val = value; not a release while another process reads the flag "
                              "(a wait, a lock, an add with dest): scope; a scope that leaves "
                              "out a CTA using the flag: scope")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("count", Const(1))

    def __post_init__(self): _lift_fields(self, "value")

    def fmt(self):
        return f"st.{self.sem}.{self.scope} {self.flag}, {_e(self.value)}"

    def _sem_problems(self):
        ok = ("weak", "relaxed", "release")
        return [] if self.sem in ok else [f"memory order {self.sem!r} (one of {ok})"]

    def footprint(self, k):
        return Footprint((_acc("global-flag", "write", "grid"),))

    def rule(self, c):
        val = FlagField(self.flag)
        out = _flag_scope(c, self.flag, self.scope,
                          {cta for _, cta, _ in _flag_ops(c.kernel, self.flag)}, "stores to")
        out += _release_check(c, self, "stores to")
        return Rule([*out, Set(val, self.value), _in_range(c, self.flag)])


@sync_op
@dataclass(frozen=True)
class GlobalLock(_FlagOp, SyncOp):
    """A spin loop that swaps global flag `flag` from `cmp` to `new` (`while atom.cas(flag, cmp,
    new) != cmp`, or `while atom.exch(flag, new) != cmp` where the flag only ever holds `cmp` or
    `new`): blocks until the flag holds `cmp`, then sets it to `new` in the same step."""
    flag: str
    cmp: Expr
    new: Expr
    sem: str = "acquire"
    scope: str = "gpu"
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "spin.cas"
    ptx: ClassVar[str] = "9.7.13.5 (atom.cas, atom.exch), 8.5 (scope), 8.7 (acquire patterns)"
    summary: ClassVar[str] = ("waits until val == cmp, then val = new; not an acquire while "
                              "another process writes the flag: scope; a scope that leaves out "
                              "a CTA using the flag: scope")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("lock", Const(0), Const(1))

    def __post_init__(self): _lift_fields(self, "cmp", "new")

    def fmt(self):
        return f"spin.cas.{self.sem}.{self.scope} {self.flag}, {_e(self.cmp)} -> {_e(self.new)}"

    def _sem_problems(self):
        return [] if self.sem in ADD_SEMANTICS else [f"memory order {self.sem!r} (one of "
                                                     f"{ADD_SEMANTICS})"]

    def footprint(self, k):
        return Footprint((_acc("global-flag", "rw", "grid"),), blocking=True)

    def rule(self, c):
        val = FlagField(self.flag)
        out = _flag_scope(c, self.flag, self.scope,
                          {cta for _, cta, _ in _flag_ops(c.kernel, self.flag)}, "locks")
        out += _acquire_check(c, self, "locks")
        return Rule([*out, Set(val, self.new)], guard=_eq(val, self.cmp))


FLAG_OPS = (GlobalAdd, GlobalWait, GlobalStore, GlobalLock)


# ----------------------------------------------------------------------------- read-only tensors

@sync_op
@dataclass(frozen=True)
class GlobalRead(SyncOp):
    """`dest = tensor[index]`: a load at an index known only at run time from a global tensor
    the kernel never writes, whose elements are launch values (`value`: the select of the one
    `index` names). `extent`: the tensor's number of elements (a constant, or a launch value
    when the tensor's extent is dynamic); `modelled`: the elements `value` selects among when
    they are fewer than a constant extent (0: all of them). `dest` None: the check of one lane's
    index of a load whose per-lane value the extractor keeps as an expression over the lane."""
    dest: str | None
    tensor: str
    index: Expr
    extent: Expr
    value: Expr
    loc: Loc = NOLOC
    modelled: int = 0
    mnemonic: ClassVar[str] = "ld.launch"
    sass_covered: ClassVar[str] = SASS_NO_ORDER
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.8 (ld)"
    summary: ClassVar[str] = ("dest = value (launch values: nothing writes the tensor while the "
                              "kernel runs); an index outside 0..extent-1: invalid-operand; "
                              "inside it but past the modelled elements: read-bound")
    # touches no shared state, only its own local
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls("n", "counts", Const(1), Const(2), Const(0))

    def __post_init__(self): _lift_fields(self, "index", "extent", "value")

    def own_locals(self, pc): return () if self.dest is None else (self.dest,)

    def problems(self, k):
        return [] if self.modelled >= 0 else [f"modelled {self.modelled} (at least 0)"]

    def fmt(self):
        some = f" (elements 0..{self.modelled - 1})" if self.modelled else ""
        head = "" if self.dest is None else f"{self.dest} = "
        return f"{head}ld.launch {self.tensor}[{_e(self.index)}] of {_e(self.extent)}{some}"

    def footprint(self, k):
        return Footprint(())

    def rule(self, c):
        bad = any_of(_lt(self.index, 0), _ge(self.index, self.extent))
        past = [When(_ge(self.index, self.modelled), [Fail(
            "read-bound", "{who} reads " + self.tensor + f"[{{0}}]: the model follows its "
            f"elements 0..{self.modelled - 1} (give values of more with --param)",
            (self.index,))])] if self.modelled else []
        return Rule([When(bad, [Fail("invalid-operand", "{who} reads " + self.tensor +
                                     "[{0}], outside its {1} elements",
                                     (self.index, self.extent))]), *past,
                     *([] if self.dest is None else [Set(Local(self.dest), self.value)])])
