"""The rule language: each op's transition is written once, as data (syncir/ops/ builds it),
and both backends read that one definition: the reference interpreter executes it
(syncir/interp.py) and the Promela lowering prints it (lower/promela.py).

A rule is a guard (when the step may run: blocking ops) and a body of statements over
**places**, the state locations of the declared objects (syncir/objects.py):

    Set(place, value)             place := value
    When(cond, then, else_)       a branch
    Fail(kind, message, args)     the step violates property `kind` (message for the reports:
                                  `{0}`, `{1}`... are `args`, `{who}` the instance, `{bar}` the
                                  element `subject` names)
    Hook(name, subject)           an event without effect on the state: the interpreter logs it
                                  for diagnosis, the Promela lowering may attach a monitor to it
    Call(name)                    a named sub-rule without parameters (syncir/ops/ SUBRULES),
                                  a Promela `inline`

Values are SyncIR expressions (`ir.Expr`) that may also read places and `Self()` (the executing
instance's global number). Every place has a declared value range (objects.py), from which the
Promela types come.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import BinOp, Const, Expr, Select, UnOp, lift


class Place(Expr):
    """A state location (readable as an expression, writable by Set)."""


@dataclass(frozen=True, eq=True)
class MbarField(Place):
    """Field `field` of element `index` of mbarrier array `array` in CTA `cta`."""
    array: str
    cta: Expr
    index: Expr
    field: str


@dataclass(frozen=True, eq=True)
class NamedField(Place):
    """Field of named barrier `bid` (0..15) of CTA `cta` (a constant: the executing CTA)."""
    cta: int
    bid: Expr
    field: str


@dataclass(frozen=True, eq=True)
class ClusterField(Place):
    """Field of the cluster barrier of cluster `cluster` (one per cluster; a model of one
    cluster has only cluster 0)."""
    field: str
    cluster: int = 0


@dataclass(frozen=True, eq=True)
class Live(Place):
    """Threads of CTA `cta` that have not exited."""
    cta: Expr


@dataclass(frozen=True, eq=True)
class Local(Place):
    """A local of the executing instance (a user variable or a hidden one of an op)."""
    name: str


@dataclass(frozen=True, eq=True)
class Obs(Place):
    """The executing instance's observation of mbarrier `array[index]` (of its own CTA): the
    completed-phase count its last passing wait saw (parity aliasing, docs/semantics.md)."""
    array: str
    index: Expr


@dataclass(frozen=True, eq=True)
class Inflight(Place):
    """Async copies issued at flat pc `pc` of process `process`, in flight towards element
    `index` of their barrier array in CTA `cta`."""
    process: int
    pc: int
    cta: Expr
    index: Expr


@dataclass(frozen=True, eq=True)
class Carried(Place):
    """The stages of staged buffer `buf` whose tcgen05.mma reads the tcgen05.commits issued at
    flat pc `pc` of process `process`, in flight towards element `index` in CTA `cta`, retire
    when they land (a bit mask; every commit of one such slot in flight carries the same)."""
    process: int
    pc: int
    cta: Expr
    index: Expr
    buf: str


@dataclass(frozen=True, eq=True)
class WordField(Place):
    """Field of word `index` of shared-word array `array` in CTA `cta` (objects.SHARED_WORD):
    `val`, or the race monitor counts `at_ld` / `at_st` of the *other* instances whose next
    step loads / stores it (read-only: the lowering maintains them)."""
    array: str
    cta: Expr
    index: Expr
    field: str


@dataclass(frozen=True, eq=True)
class CounterField(Place):
    """Field `field` (`val`) of global counter `name` (objects.GLOBAL_COUNTER)."""
    name: str
    field: str = "val"


@dataclass(frozen=True, eq=True)
class FlagField(Place):
    """Field `field` (`val`, `unrel`) of global flag `name` (objects.GLOBAL_FLAG)."""
    name: str
    field: str = "val"


@dataclass(frozen=True, eq=True)
class TmapField(Place):
    """Field `field` (objects.TENSORMAP) of tensormap `name` in CTA `cta`."""
    name: str
    cta: Expr
    field: str


@dataclass(frozen=True, eq=True)
class TmemField(Place):
    """Field `field` (objects.TMEM) of the tensor memory allocation of CTA `cta`."""
    cta: Expr
    field: str


@dataclass(frozen=True, eq=True)
class BufField(Place):
    """Field `field` of staged buffer `name` in CTA `cta`: of stage `stage`
    (objects.BUFFER_STAGE), or of the whole buffer when `stage` is None (objects.BUFFER)."""
    name: str
    cta: Expr
    stage: Expr | None
    field: str


@dataclass(frozen=True, eq=True)
class Self(Expr):
    """The executing instance's global number (what `MbarField(.., 'by')` records)."""


@dataclass(frozen=True)
class El:
    """An mbarrier element, for building rules: `el.pend` is its `pend` place."""
    array: str
    cta: Expr
    index: Expr

    def __getattr__(self, name: str) -> MbarField:
        if name.startswith("_"):
            raise AttributeError(name)
        return MbarField(self.array, self.cta, self.index, name)


# ----------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class Set:
    place: Place
    value: Expr

    def __post_init__(self):
        object.__setattr__(self, "value", lift(self.value))


@dataclass(frozen=True)
class When:
    cond: Expr
    then: tuple = ()
    else_: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "cond", lift(self.cond))
        object.__setattr__(self, "then", tuple(self.then))
        object.__setattr__(self, "else_", tuple(self.else_))


@dataclass(frozen=True)
class Fail:
    kind: str
    message: str
    args: tuple = ()
    subject: El | None = None

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(lift(a) for a in self.args))


@dataclass(frozen=True)
class Hook:
    name: str
    subject: El | None = None


@dataclass(frozen=True)
class Call:
    name: str


Stmt = Set | When | Fail | Hook | Call


@dataclass(frozen=True)
class Rule:
    """A step: enabled when `guard` holds; then `body` runs atomically."""
    body: tuple = ()
    guard: Expr = Const(1)

    def __post_init__(self):
        object.__setattr__(self, "body", tuple(self.body))
        object.__setattr__(self, "guard", lift(self.guard))


# ----------------------------------------------------------------------------- helpers

def add(p: Place, delta) -> Set:
    return Set(p, BinOp("+", p, lift(delta)))


def sub(p: Place, delta) -> Set:
    return Set(p, BinOp("-", p, lift(delta)))


def _tree(op: str, es: list) -> Expr:
    """`es` joined by `op`, left to right, as a balanced tree: an exit checks hundreds of
    in-flight counts, and a chain that long would be as deep."""
    if len(es) == 1:
        return es[0]
    mid = len(es) // 2
    return BinOp(op, _tree(op, es[:mid]), _tree(op, es[mid:]))


def any_of(*es) -> Expr:
    es = [lift(e) for e in es if not (isinstance(e, Const) and e.value == 0)]
    return _tree("or", es) if es else Const(0)


def all_of(*es) -> Expr:
    es = [lift(e) for e in es if not (isinstance(e, Const) and e.value != 0)]
    return _tree("and", es) if es else Const(1)


def walk_rule(stmts):
    """Every rule statement, nested ones included."""
    for s in stmts:
        yield s
        if isinstance(s, When):
            yield from walk_rule(s.then)
            yield from walk_rule(s.else_)


def expr_places(e: Expr):
    """Every place an expression reads (also inside places' own index expressions), left to
    right. Iterative: `any_of` over hundreds of in-flight counts is a chain that deep."""
    todo = [e]
    while todo:
        e = todo.pop()
        if isinstance(e, Place):
            yield e
            for f in ("bid", "index", "cta"):
                sub_ = getattr(e, f, None)
                if isinstance(sub_, Expr):
                    todo.append(sub_)
        elif isinstance(e, BinOp):
            todo += (e.rhs, e.lhs)
        elif isinstance(e, UnOp):
            todo.append(e.arg)
        elif isinstance(e, Select):
            todo += (e.else_, e.then, e.cond)


def rule_exprs(rule: Rule, subrules: dict | None = None):
    """Every expression a rule evaluates (guard, conditions, values, fail arguments, the index
    expressions of written places)."""
    yield rule.guard
    for s in walk_rule(rule.body):
        if isinstance(s, Set):
            yield s.value
            for f in ("cta", "index", "bid"):
                e = getattr(s.place, f, None)
                if isinstance(e, Expr):
                    yield e
        elif isinstance(s, When):
            yield s.cond
        elif isinstance(s, Fail):
            yield from s.args


def names_read(e: Expr) -> set[str]:
    """Every variable and local an expression reads, inside places' index expressions too."""
    from .ir import expr_vars
    out = set(expr_vars(e))
    for p in expr_places(e):
        if isinstance(p, Local):
            out.add(p.name)
        for f in ("cta", "index", "bid"):
            sub_ = getattr(p, f, None)
            if isinstance(sub_, Expr):
                out |= expr_vars(sub_)
    return out


def rule_locals(rule: Rule) -> tuple[set[str], set[str]]:
    """(locals read, locals written) by a rule: `Var`s and `Local` places."""
    reads: set[str] = set()
    writes: set[str] = set()
    for e in rule_exprs(rule):
        reads |= names_read(e)
    for s in walk_rule(rule.body):
        if isinstance(s, Set) and isinstance(s.place, Local):
            writes.add(s.place.name)
    return reads, writes


def rule_places(rule: Rule) -> list:
    """Every place a rule reads or writes."""
    out = []
    for e in rule_exprs(rule):
        out += list(expr_places(e))
    for s in walk_rule(rule.body):
        if isinstance(s, Set):
            out.append(s.place)
    return out


def replace_places(obj, fn):
    """`obj` (a rule, statement, expression or tuple of them) with every place p replaced by
    fn(p) (fn returns p itself to keep it)."""
    from dataclasses import fields, is_dataclass, replace
    if isinstance(obj, Place):
        obj = fn(obj)
    if isinstance(obj, tuple):
        return tuple(replace_places(x, fn) for x in obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in fields(obj):
            v = getattr(obj, f.name)
            w = replace_places(v, fn)
            if w is not v:
                changes[f.name] = w
        return replace(obj, **changes) if changes else obj
    return obj


@dataclass
class SubRules:
    """Named parameterless sub-rules of a kernel (Promela inlines), in definition order."""
    bodies: dict[str, tuple] = field(default_factory=dict)

    def define(self, name: str, body) -> Call:
        if name not in self.bodies:
            self.bodies[name] = tuple(body)
        return Call(name)
