"""SyncIR: the synchronization skeleton of a kernel.

A Kernel is a set of Processes (classes of threads that follow the same path) over declared
objects (mbarrier arrays; the named barriers, the cluster barrier and the live-thread counts are
implicit). Expressions, references and control flow are defined here; the ops, each with its
fields, footprint and rule, in `syncir/ops/` (re-exported here). Every statement carries a source Loc.
Everything is a frozen dataclass; `printer.py` renders it, `validate.py` checks it.
Semantics: docs/semantics.md.
"""
from __future__ import annotations

import os

from dataclasses import dataclass, field, fields
from typing import Optional, Union


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    frame: str | None = None  # library method that emitted the op, e.g. PipelineTmaAsync.consumer_release
    # the synchronization object the op names, as the user's code names it: a pipeline's
    # barrier, e.g. "ab.full" (PipelineTmaAsync.create(name="ab")) or "PipelineTmaAsync(full)"
    label: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        return f"{where} ({self.frame})" if self.frame else where

    def short(self) -> str:
        """`file.py:line`, the file without its directory."""
        return f"{os.path.basename(self.file)}:{self.line}"


NOLOC = Loc("<unknown>", 0)


# ----------------------------------------------------------------------------- expressions

class Expr:
    """Integer expression over process-local variables and launch parameters."""

    def __add__(self, o): return BinOp("+", self, lift(o))
    def __radd__(self, o): return BinOp("+", lift(o), self)
    def __sub__(self, o): return BinOp("-", self, lift(o))
    def __rsub__(self, o): return BinOp("-", lift(o), self)
    def __mul__(self, o): return BinOp("*", self, lift(o))
    def __rmul__(self, o): return BinOp("*", lift(o), self)
    def __floordiv__(self, o): return BinOp("//", self, lift(o))
    def __mod__(self, o): return BinOp("%", self, lift(o))
    def __xor__(self, o): return BinOp("^", self, lift(o))
    def __and__(self, o): return BinOp("&", self, lift(o))
    def __or__(self, o): return BinOp("|", self, lift(o))
    def eq(self, o): return BinOp("==", self, lift(o))
    def ne(self, o): return BinOp("!=", self, lift(o))
    def lt(self, o): return BinOp("<", self, lift(o))
    def le(self, o): return BinOp("<=", self, lift(o))
    def gt(self, o): return BinOp(">", self, lift(o))
    def ge(self, o): return BinOp(">=", self, lift(o))


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: int


@dataclass(frozen=True, eq=True)
class Var(Expr):
    name: str


# Arithmetic: + - * // % (floor division/modulo; divisor must be positive), min, max, ^ & |.
# Comparison and logic (result 0/1): == != < <= > >= and or.
BINOPS = ("+", "-", "*", "//", "%", "min", "max", "^", "&", "|",
          "==", "!=", "<", "<=", ">", ">=", "and", "or")
UNOPS = ("-", "not")


@dataclass(frozen=True, eq=True)
class BinOp(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def __post_init__(self):
        if self.op not in BINOPS:
            raise ValueError(f"unknown binary operator {self.op!r}")


@dataclass(frozen=True, eq=True)
class UnOp(Expr):
    op: str
    arg: Expr

    def __post_init__(self):
        if self.op not in UNOPS:
            raise ValueError(f"unknown unary operator {self.op!r}")


@dataclass(frozen=True, eq=True)
class Select(Expr):
    cond: Expr
    then: Expr
    else_: Expr


ExprLike = Union[Expr, int, bool, str]


def lift(x: ExprLike) -> Expr:
    """int/bool -> Const, str -> Var, Expr -> itself."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(int(x))
    if isinstance(x, int):
        return Const(x)
    if isinstance(x, str):
        return Var(x)
    raise TypeError(f"not an expression: {x!r}")


def expr_vars(e: Expr) -> set[str]:
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, BinOp):
        return expr_vars(e.lhs) | expr_vars(e.rhs)
    if isinstance(e, UnOp):
        return expr_vars(e.arg)
    if isinstance(e, Select):
        return expr_vars(e.cond) | expr_vars(e.then) | expr_vars(e.else_)
    return set()



# ----------------------------------------------------------------------------- evaluation
class ModelError(Exception):
    """The SyncIR itself is ill-formed at run time (an undefined variable, a missing object)."""


BINOP_FUNCS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "min": min, "max": max, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
}


def divide(op: str):
    """Floor division or modulo by a positive divisor (SyncIR's `//` and `%`)."""
    def f(a, b):
        if b <= 0:
            raise ModelError(f"division by {b}")
        return a // b if op == "//" else a % b
    return f


def eval_expr(e, env: dict) -> int:
    """Evaluate a plain SyncIR expression over an environment of names (no places)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise ModelError(f"undefined variable {e.name!r}") from None
    if isinstance(e, UnOp):
        x = eval_expr(e.arg, env)
        return -x if e.op == "-" else int(not x)
    if isinstance(e, Select):
        return eval_expr(e.then, env) if eval_expr(e.cond, env) else eval_expr(e.else_, env)
    if isinstance(e, BinOp):
        a, b = eval_expr(e.lhs, env), eval_expr(e.rhs, env)
        if e.op == "and":
            return int(bool(a) and bool(b))
        if e.op == "or":
            return int(bool(a) or bool(b))
        return (divide(e.op) if e.op in ("//", "%") else BINOP_FUNCS[e.op])(a, b)
    raise ModelError(f"not an expression: {e!r}")

# ----------------------------------------------------------------------------- objects

@dataclass(frozen=True)
class MBarRef:
    """mbarrier `name[index]`, in the executing thread's CTA (cta=None) or in CTA `cta` of the
    cluster (a remote arrive through mapa)."""
    name: str
    index: Expr = Const(0)
    cta: Expr | None = None

    def __post_init__(self):
        object.__setattr__(self, "index", lift(self.index))
        if self.cta is not None:
            object.__setattr__(self, "cta", lift(self.cta))


@dataclass(frozen=True)
class MBarrierDecl:
    """An array of `size` mbarriers in shared memory; every CTA of the cluster has its own.
    `label` names it as the user wrote it (e.g. `PipelineTmaAsync(ab).full`); `elements`, when
    given, names each element (e.g. a pipeline's full and empty barriers sharing one array)."""
    name: str
    size: int = 1
    loc: Loc = NOLOC
    label: str = ""
    elements: tuple[str, ...] = ()

    def element_name(self, index: int) -> str:
        if index < len(self.elements) and self.elements[index]:
            return self.elements[index]
        return f"{self.label or self.name}[{index}]"


@dataclass(frozen=True)
class WordRef:
    """Word `name[index]` of a shared-memory word array, in the executing thread's CTA (cta=None)
    or, for a store, in CTA `cta` of the cluster (st.shared::cluster through a mapa address)."""
    name: str
    index: Expr = Const(0)
    cta: Optional[Expr] = None

    def __post_init__(self):
        object.__setattr__(self, "index", lift(self.index))
        if self.cta is not None:
            object.__setattr__(self, "cta", lift(self.cta))


@dataclass(frozen=True)
class WordsDecl:
    """An array of `size` 32-bit words in shared memory that the kernel uses as values (a tile
    index, a validity flag); every CTA of the cluster has its own. `label` names it as the user
    wrote it."""
    name: str
    size: int = 1
    loc: Loc = NOLOC
    label: str = ""
    data: bool = False  # cells of shared data (extract/data.py): values 0, only races matter
    # cells of global data (a grid model's kernel argument): one array for the whole grid, its
    # accesses name no CTA
    grid: bool = False

    def copies(self, num_ctas: int) -> int:
        """How many copies of the array the model holds: one per CTA, or one for the grid."""
        return 1 if self.grid else num_ctas

    def element_name(self, index: int) -> str:
        return f"{self.label or self.name}[{index}]"


@dataclass(frozen=True)
class TensormapDecl:
    """A TMA descriptor (tensormap) the kernel rewrites in global memory, one per CTA (each CTA
    owns its descriptor slot, as CUTLASS's and quack's tensormap managers lay them out). TMA
    loads that name it read it asynchronously until a `cp.async.bulk.wait_group.read` retires
    their bulk async-group. `label` names it as the user wrote it."""
    name: str
    loc: Loc = NOLOC
    label: str = ""


@dataclass(frozen=True)
class BufferDecl:
    """A staged shared-memory buffer that TMA stores read (an epilogue's staging buffer): `stages`
    stages, each written by threads through the generic proxy and stored by the threads of the
    `storers` (process indices of one instance each, at most two per CTA: a ping-pong
    epilogue's warp groups). `barrier`: the named barrier id whose generations a storing warp
    waits in (bar.sync) hand writes over to it; None: none.
    `other_barriers`: the other ids it waits on (a write released on one of them is not
    followed: unsupported). `label` names it as the user wrote it. `space` "tmem": the stages
    are column ranges of tensor memory (an MMA accumulator: tcgen05.mma writes them,
    tcgen05.ld reads them), not shared memory."""
    name: str
    stages: int
    storers: tuple[int, ...] = ()
    barrier: int | None = None
    loc: Loc = NOLOC
    label: str = ""
    other_barriers: tuple[int, ...] = ()
    space: str = "smem"

    def __post_init__(self):
        object.__setattr__(self, "storers", tuple(self.storers))
        object.__setattr__(self, "other_barriers", tuple(self.other_barriers))


@dataclass(frozen=True)
class CounterDecl:
    """A 32-bit word of global memory the kernel takes work from with `atom.inc` (a dynamic tile
    scheduler's semaphore), shared with the CTAs of the grid outside the model: between any two
    steps of the model, one of them may take its next value. `limit` is the atom.inc wrap bound
    (the last value a launch hands out). `label` names it as the user wrote it."""
    name: str
    limit: Expr
    loc: Loc = NOLOC
    label: str = ""
    others: Expr = Const(1)  # nonzero when the grid has CTAs outside the model (0: a grid of one)

    def __post_init__(self):
        object.__setattr__(self, "limit", lift(self.limit))
        object.__setattr__(self, "others", lift(self.others))


@dataclass(frozen=True)
class FlagDecl:
    """A 32-bit word of global memory that CTAs of the model hand work over with: atomic adds
    (`atom.add` / `red.add`) and spin loops that wait for a value (`ld.acquire` in a loop). It holds
    0 at launch and only the model's ops change it. `label` names it as the user wrote it."""
    name: str
    loc: Loc = NOLOC
    label: str = ""


@dataclass(frozen=True)
class Unchecked:
    """A default property the model does not check on one object of the kernel (`property`:
    one of PROPERTIES): a VERIFIED of the kernel would not cover it, so the verdict is not
    VERIFIED while the property is asked for (pipeline._decide_verified)."""
    property: str
    what: str       # the object, as the user wrote it ("sO", "the TMA store at x.py:58")
    why: str        # why it is not followed
    loc: Loc = NOLOC


PROPERTIES = ("deadlock", "race")  # deadlock: every kind but the races; race: race, proxy-race,
# tensormap-race and pending-at-exit of copies


@dataclass(frozen=True)
class Param:
    """A launch parameter (problem size, tile count): one value, every value in lo..hi, or
    every value from lo up (hi = UNBOUNDED: only the happens-before engine's cutoff decides it)."""
    name: str
    lo: int
    hi: int | float | None = None

    def __post_init__(self):
        if self.hi is None:
            object.__setattr__(self, "hi", self.lo)

    @property
    def unbounded(self) -> bool:
        return self.hi == UNBOUNDED

    @property
    def values(self) -> range:
        if self.unbounded:
            raise ValueError(f"parameter {self.name} has no upper bound: its values are not a range")
        return range(self.lo, self.hi + 1)


UNBOUNDED = float("inf")


# ----------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class Stmt:
    pass


def _lift_fields(obj, *names):
    for n in names:
        v = getattr(obj, n)
        if v is not None:
            object.__setattr__(obj, n, lift(v))


@dataclass(frozen=True)
class Assign(Stmt):
    var: str
    value: Expr
    loc: Loc = NOLOC

    def __post_init__(self): _lift_fields(self, "value")


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    else_: tuple[Stmt, ...] = ()
    loc: Loc = NOLOC

    def __post_init__(self):
        _lift_fields(self, "cond")
        object.__setattr__(self, "then", tuple(self.then))
        object.__setattr__(self, "else_", tuple(self.else_))


@dataclass(frozen=True)
class For(Stmt):
    """for var in range(start, stop, step): step is a positive constant; bounds are evaluated once
    at loop entry."""
    var: str
    start: Expr
    stop: Expr
    body: tuple[Stmt, ...]
    step: int = 1
    loc: Loc = NOLOC

    def __post_init__(self):
        _lift_fields(self, "start", "stop")
        object.__setattr__(self, "body", tuple(self.body))


@dataclass(frozen=True)
class While(Stmt):
    """while cond: body. `max_iters` bounds the model: running past it makes the verdict
    INCONCLUSIVE (loop-bound), never VERIFIED."""
    cond: Expr
    body: tuple[Stmt, ...]
    max_iters: int = 64
    loc: Loc = NOLOC

    def __post_init__(self):
        _lift_fields(self, "cond")
        object.__setattr__(self, "body", tuple(self.body))


@dataclass(frozen=True)
class Lanes(Stmt):
    """Only `count` threads of each instance execute `body` (elect.sync: 1; `lane < k`: k); the
    others skip it and reconverge after it. Ops inside count once per executing lane."""
    count: int
    body: tuple[Stmt, ...]
    loc: Loc = NOLOC

    def __post_init__(self):
        object.__setattr__(self, "body", tuple(self.body))


def Elect(body, loc: Loc = NOLOC) -> Lanes:
    return Lanes(1, tuple(body), loc)


# ----------------------------------------------------------------------------- processes, kernel

@dataclass(frozen=True)
class Process:
    """A class of threads that follow the same path through `body`.

    `instances` identical copies run concurrently; each copy is `threads` threads (1..32: at most
    one warp) that execute every op together, a converged warp. An op counts once per thread: a
    MbarArrive by a 32-thread instance is 32 arrivals. `warps` is the half-open warp range
    [first, last) that all instances together cover, for reports.
    """
    role: str
    body: tuple[Stmt, ...]
    cta: int = 0
    warps: tuple[int, int] = (0, 1)
    threads: int = 32
    instances: int = 1
    init: tuple[tuple[str, int], ...] = ()  # initial values of locals (others start at 0)

    def __post_init__(self):
        object.__setattr__(self, "body", tuple(self.body))
        object.__setattr__(self, "init", tuple(dict(self.init).items()))
        object.__setattr__(self, "warps", tuple(self.warps))

    def instance_warps(self, i: int) -> tuple[int, int]:
        first, last = self.warps
        per = max(1, (last - first) // max(1, self.instances))
        return (first + i * per, first + (i + 1) * per)

    def instance_name(self, i: int) -> str:
        return self.role if self.instances == 1 else f"{self.role}[{i}]"


@dataclass(frozen=True)
class Kernel:
    name: str
    processes: tuple[Process, ...]
    mbarriers: tuple[MBarrierDecl, ...] = ()
    params: tuple[Param, ...] = ()
    num_ctas: int = 1  # CTAs in the cluster; each has its own copy of every mbarrier array
    loc: Loc = NOLOC
    # per CTA of the modelled cluster, its block index (x, y, z) over the launch parameters
    # (ctaid = clusterid * cluster_dim + cluster_ctaid), for reports; () when not known
    cta_blocks: tuple[tuple[Expr, Expr, Expr], ...] = ()
    words: tuple[WordsDecl, ...] = ()  # shared-memory word arrays (values handed between roles)
    # what a verdict on the kernel assumes beyond the hardware model (extraction states them,
    # the verdict lists them)
    assumptions: tuple[str, ...] = ()
    counters: tuple[CounterDecl, ...] = ()  # global work counters (atom.inc), shared with the grid
    # facts of every launch over the parameters (e.g. clusterid_z < nclusterid_z): the check
    # covers only the parameter values that satisfy all of them
    constraints: tuple[Expr, ...] = ()
    tensormaps: tuple[TensormapDecl, ...] = ()  # TMA descriptors rewritten in global memory
    buffers: tuple[BufferDecl, ...] = ()  # staged shared-memory buffers TMA stores read
    flags: tuple[FlagDecl, ...] = ()  # global words CTAs add to and spin on
    # CTAs per cluster: 0 when the model is one cluster (num_ctas); n < num_ctas when the model
    # is several clusters of a grid (CTA c is in cluster c // n)
    cluster_ctas: int = 0
    unchecked: tuple[Unchecked, ...] = ()  # default properties not followed on an object

    def __post_init__(self):
        object.__setattr__(self, "cta_blocks", tuple(tuple(lift(x) for x in b)
                                                     for b in self.cta_blocks))
        object.__setattr__(self, "processes", tuple(self.processes))
        object.__setattr__(self, "mbarriers", tuple(self.mbarriers))
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        object.__setattr__(self, "counters", tuple(self.counters))
        object.__setattr__(self, "constraints", tuple(lift(c) for c in self.constraints))
        object.__setattr__(self, "tensormaps", tuple(self.tensormaps))
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "flags", tuple(self.flags))
        object.__setattr__(self, "unchecked", tuple(self.unchecked))

    def same_cluster(self, a: int, b: int) -> bool:
        n = self.cluster_ctas or self.num_ctas
        return a // n == b // n

    @property
    def num_clusters(self) -> int:
        return self.num_ctas // (self.cluster_ctas or self.num_ctas)

    def cluster_of(self, cta: int) -> int:
        return cta // (self.cluster_ctas or self.num_ctas)

    def cluster_members(self, cta: int) -> range:
        """The CTAs of CTA `cta`'s cluster (the model's CTAs are numbered cluster by cluster)."""
        n = self.cluster_ctas or self.num_ctas
        return range(cta - cta % n, cta - cta % n + n)

    def flag(self, name: str) -> FlagDecl:
        for f in self.flags:
            if f.name == name:
                return f
        raise KeyError(name)

    def buffer(self, name: str) -> BufferDecl:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def tensormap(self, name: str) -> TensormapDecl:
        for t in self.tensormaps:
            if t.name == name:
                return t
        raise KeyError(name)

    def word_array(self, name: str) -> WordsDecl:
        for w in self.words:
            if w.name == name:
                return w
        raise KeyError(name)

    def counter(self, name: str) -> CounterDecl:
        for c in self.counters:
            if c.name == name:
                return c
        raise KeyError(name)

    def mbarrier(self, name: str) -> MBarrierDecl:
        for m in self.mbarriers:
            if m.name == name:
                return m
        raise KeyError(name)

    def cta_threads(self, cta: int) -> int:
        return sum(p.threads * p.instances for p in self.processes if p.cta == cta)

    def ops(self):
        """Every op of every process (nested ones included)."""
        for p in self.processes:
            for s in walk_stmts(p.body):
                if not isinstance(s, (Assign, If, For, While, Lanes)):
                    yield s

    def uses_cluster_barrier(self) -> bool:
        return self.memo("uses_cluster_barrier", lambda: any(
            type(s).__name__ in ("ClusterArrive", "ClusterWait") for s in self.ops()))

    def memo(self, name: str, compute):
        """A fact of this (immutable) kernel, computed once: rules ask it once per op."""
        cache = self.__dict__.get("_memo")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_memo", cache)
        if name not in cache:
            cache[name] = compute()
        return cache[name]


def map_exprs(s: Stmt, fn) -> Stmt:
    """`s` with `fn` applied to every expression it reads itself (Expr fields and tuples of
    them, mbarrier index and CTA, word index); nested bodies are left as they are."""
    from dataclasses import replace
    changes = {}
    for name in _field_names(type(s)):
        v = getattr(s, name)
        if isinstance(v, Expr):
            changes[name] = fn(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
            changes[name] = tuple(fn(x) for x in v)
        elif isinstance(v, MBarRef):
            changes[name] = MBarRef(v.name, fn(v.index), None if v.cta is None else fn(v.cta))
        elif isinstance(v, WordRef):
            changes[name] = WordRef(v.name, fn(v.index), None if v.cta is None else fn(v.cta))
    return replace(s, **changes) if changes else s


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def stmt_exprs(s: Stmt):
    """The expressions a statement reads itself (not those of nested bodies): its Expr fields
    and tuples of them, the index and CTA of the mbarrier it names, the index of its word."""
    for name in _field_names(type(s)):
        v = getattr(s, name)
        if isinstance(v, Expr):
            yield v
        elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
            yield from v
        elif isinstance(v, MBarRef):
            yield v.index
            if v.cta is not None:
                yield v.cta
        elif isinstance(v, WordRef):
            yield v.index
            if v.cta is not None:
                yield v.cta


def stmt_bodies(s: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    if isinstance(s, If):
        return (s.then, s.else_)
    if isinstance(s, (For, While, Lanes)):
        return (s.body,)
    return ()


def with_bodies(s: Stmt, bodies: tuple) -> Stmt:
    """`s` with its nested bodies (as `stmt_bodies` lists them) replaced."""
    from dataclasses import replace
    if isinstance(s, If):
        return replace(s, then=bodies[0], else_=bodies[1])
    if isinstance(s, (For, While, Lanes)):
        return replace(s, body=bodies[0])
    return s


def rewrite_stmts(body: tuple[Stmt, ...], fn) -> tuple[Stmt, ...]:
    """`body` with every statement s, nested ones first, replaced by the statements `fn(s)`
    returns (none: s goes; (s,): it stays)."""
    out = []
    for s in body:
        s = with_bodies(s, tuple(rewrite_stmts(b, fn) for b in stmt_bodies(s)))
        out.extend(fn(s))
    return tuple(out)


def walk_stmts(body: tuple[Stmt, ...]):
    """Pre-order iteration over every statement of a body, nested ones included."""
    for s in body:
        yield s
        for b in stmt_bodies(s):
            yield from walk_stmts(b)



def __getattr__(name: str):
    """The ops live in syncir/ops/, which imports this module, never the reverse; a name of an op
    imported from here (code written before the split) is looked up there when first asked."""
    if name.startswith("__"):  # (`import *` asks for __all__: this module's names, not the ops')
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import ops
    try:
        return getattr(ops, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
