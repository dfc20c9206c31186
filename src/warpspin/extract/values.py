"""Abstract values of the per-warp evaluation, and integer-expression folding.

Integers are SyncIR ``Expr``s.  Three kinds of variables can occur in them while extracting:

* ``LANE`` (``%lane``): the lane of the executing thread.  Never leaves the extractor: an
  expression over the lane alone is folded by evaluating it for every lane of the warp (equal
  values: warp-uniform, a constant; otherwise a lane predicate or an unsupported lane-dependent
  value).
* ``?...``: a value the extractor does not understand (memory loads, floats, vote results ...).
  Harmless unless it survives into a synchronization statement; then that statement becomes
  ``Unsupported`` naming the origin.
* everything else: SyncIR locals (loop counters, carried state) and launch parameters.

Non-integer values are ``Ptr`` (shared-memory addresses, barrier identity), ``Alloc``,
``Atom`` (a copy atom with its ``set_value`` fields), ``ELECT`` and ``Unknown``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from ..syncir.ir import BinOp, Const, Expr, Select, UnOp, Var, expr_vars

LANE = "%lane"
OPAQUE_PREFIX = "?"


def opaque(reason: str) -> Var:
    return Var(OPAQUE_PREFIX + reason)


def is_opaque_name(name: str) -> bool:
    return name.startswith(OPAQUE_PREFIX)


def opaque_reasons(e: Expr) -> list[str]:
    return sorted(v[len(OPAQUE_PREFIX):] for v in expr_vars(e) if is_opaque_name(v))


@dataclass(frozen=True)
class Alloc:
    """A shared-memory allocation (``cute.memref.alloca``) and its struct fields."""

    uid: int
    size: int  # bytes, when known
    fields: tuple[tuple[str, int, int], ...] = ()  # (name, size, offset) in bytes


@dataclass(frozen=True)
class SliceCoord:
    """A slicing coordinate (``(_,?)``): its dynamic leaves in order; `_`s and static leaves are
    in its type. Only ``cute.slice`` reads it; anything else sees a value not followed."""

    dynamic: tuple


@dataclass(frozen=True)
class Stage:
    """Stage `index` of a staged shared-memory buffer: `count` stages `stride` bytes apart that
    together are bytes lo..hi of allocation `alloc` (uid), the tensor whose last sliced mode
    they are."""

    index: "Expr"
    count: int
    stride: int
    alloc: int
    lo: int
    hi: int

    @property
    def buffer(self) -> tuple:
        return (self.alloc, self.lo, self.hi, self.count, self.stride)


@dataclass(frozen=True)
class View:
    """A shared-memory tensor: ``ptr`` (a byte offset in its allocation: static, or with a
    dynamic part such as a stage index, ``ptr.lin``) with a static flat layout (``shape``,
    ``stride`` in elements of ``elem`` bytes). ``within``: for a dynamic offset, the bytes of
    the tensor it was sliced from, which it stays inside."""

    ptr: "Ptr"
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    elem: int
    within: Optional[tuple[int, int]] = None
    stage: Optional[Stage] = None

    @property
    def cosize(self) -> int:
        return sum((n - 1) * d for n, d in zip(self.shape, self.stride)) + 1

    @property
    def byte_range(self) -> tuple[int, int]:
        if self.ptr.lin:
            return self.within
        return self.ptr.const, self.ptr.const + self.cosize * self.elem


@dataclass(frozen=True)
class MulHi:
    """``mul.hi.u32 n, m`` (inline PTX): the first step of a magic-number division."""

    n: int   # value ids
    m: int


@dataclass(frozen=True)
class FastQuot:
    """``mul.hi.u32(n, magic) >> shift`` with magic and shift consecutive kernel arguments: the
    quotient of a FastDivmod, before its divisor-1 select (`WarpWalker.select`)."""

    n: int       # value id of the dividend
    magic: int   # kernel argument index of the multiplier


@dataclass(frozen=True)
class Region:
    """A shared-memory tensor derived from a `View` (a partition, tile or slice of it): somewhere
    inside the parent's bytes of allocation ``alloc`` (uid)."""

    alloc: int
    lo: int
    hi: int
    stage: Optional[Stage] = None


@dataclass(frozen=True)
class Ptr:
    """``alloc`` base + ``off`` bytes (linear form: {atom: coeff} + const), element of ``elem``
    bytes; ``cta`` is the target CTA rank of a ``mapa`` (remote) pointer."""

    alloc: Optional[Alloc]
    lin: tuple[tuple[Expr, int], ...] = ()
    const: int = 0
    elem: int = 1
    cta: Optional[Expr] = None
    space: str = "smem"

    def field_bytes(self) -> Optional[tuple[int, int]]:
        """(lo, hi) of the struct field of its allocation that byte `const` lies in (None: no
        field holds it)."""
        return next(((off, off + size) for _, size, off in self.alloc.fields
                     if off <= self.const < off + size), None)


@dataclass(frozen=True)
class Atom:
    """A copy atom (``make_exec_tma`` + ``set_value`` fields)."""

    type: str
    fields: tuple[tuple[str, object], ...] = ()
    src: Optional[int] = None  # the value id of the non-exec atom (a kernel argument)

    def get(self, key: str):
        for k, v in self.fields:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class Leaves:
    """A coordinate / int tuple with one integer expression per leaf."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Unknown:
    """A non-integer value not modelled (tensor, layout, float ...)."""

    reason: str
    uniform: bool = False


@dataclass(frozen=True)
class ClcResponse(Unknown):
    """A cluster launch control response loaded into registers (16 bytes): only
    `clusterlaunchcontrol.query_cancel.is_canceled` reads it, as `word` != 0 (the first word, the
    load's local); anything else sees a value not followed."""

    word: Optional[Expr] = None


class _Elect:
    def __repr__(self) -> str:
        return "ELECT"


ELECT = _Elect()

Value = Union[Expr, Ptr, Alloc, Atom, Leaves, Unknown, _Elect]


# -- folding ----------------------------------------------------------------------------------
def _eval(e: Expr, env: dict[str, int]) -> Optional[int]:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env.get(e.name)
    if isinstance(e, UnOp):
        v = _eval(e.arg, env)
        return None if v is None else (-v if e.op == "-" else int(not v))
    if isinstance(e, Select):
        c = _eval(e.cond, env)
        if c is None:
            return None
        return _eval(e.then, env) if c else _eval(e.else_, env)
    if isinstance(e, BinOp):
        a, b = _eval(e.lhs, env), _eval(e.rhs, env)
        if a is None or b is None:
            return None
        return apply_binop(e.op, a, b)
    return None


def apply_binop(op: str, a: int, b: int) -> Optional[int]:
    if op in ("//", "%"):
        if b <= 0:
            return None
        return a // b if op == "//" else a % b
    return {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        "min": lambda: min(a, b), "max": lambda: max(a, b),
        "^": lambda: a ^ b, "&": lambda: a & b, "|": lambda: a | b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b),
        "and": lambda: int(bool(a) and bool(b)), "or": lambda: int(bool(a) or bool(b)),
    }[op]()


def lane_values(e: Expr, lanes: int) -> Optional[list[int]]:
    """Values of an expression over the lane alone, for lanes 0..lanes-1."""
    out = []
    for lane in range(lanes):
        v = _eval(e, {LANE: lane})
        if v is None:
            return None
        out.append(v)
    return out


@dataclass
class Folder:
    """Builds folded expressions for one warp of ``lanes`` threads."""

    lanes: int = 32
    _memo: dict = field(default_factory=dict)

    def fold(self, e: Expr) -> Expr:
        vs = expr_vars(e)
        if not vs:
            v = _eval(e, {})
            return Const(v) if v is not None else e
        if vs == {LANE}:
            vals = lane_values(e, self.lanes)
            if vals is not None and len(set(vals)) == 1:
                return Const(vals[0])
        return e

    def binop(self, op: str, a: Expr, b: Expr) -> Expr:
        if isinstance(a, Const) and isinstance(b, Const):
            v = apply_binop(op, a.value, b.value)
            if v is not None:
                return Const(v)
        # algebraic identities that keep printed expressions small
        if op == "+":
            if a == Const(0):
                return b
            if b == Const(0):
                return a
        if op == "-" and b == Const(0):
            return a
        if op == "*":
            if a == Const(1):
                return b
            if b == Const(1):
                return a
            if Const(0) in (a, b):
                return Const(0)
        if op in ("//",) and b == Const(1):
            return a
        if op in ("^", "|") and b == Const(0):
            return a
        if op == "&" and Const(0) in (a, b):
            return Const(0)
        return self.fold(BinOp(op, a, b))

    def select(self, c: Expr, t: Expr, f: Expr) -> Expr:
        if isinstance(c, Const):
            return t if c.value else f
        if t == f:
            return t
        return self.fold(Select(c, t, f))


# -- linear forms (pointer offsets) -----------------------------------------------------------
Lin = tuple[tuple[tuple[Expr, int], ...], int]


def linear(e: Expr) -> Lin:
    """``e`` as sum(coeff * atom) + const, with atoms the non-linear subterms."""
    if isinstance(e, Const):
        return (), e.value
    if isinstance(e, BinOp) and e.op in ("+", "-"):
        la, ca = linear(e.lhs)
        lb, cb = linear(e.rhs)
        if e.op == "-":
            lb, cb = tuple((x, -c) for x, c in lb), -cb
        return lin_add(la, lb), ca + cb
    if isinstance(e, BinOp) and e.op == "*":
        if isinstance(e.lhs, Const):
            l, c = linear(e.rhs)
            return lin_scale(l, e.lhs.value), c * e.lhs.value
        if isinstance(e.rhs, Const):
            l, c = linear(e.lhs)
            return lin_scale(l, e.rhs.value), c * e.rhs.value
    return ((e, 1),), 0


def lin_add(a, b):
    d: dict = {}
    for x, c in list(a) + list(b):
        d[x] = d.get(x, 0) + c
    return tuple((x, c) for x, c in d.items() if c != 0)


def lin_scale(a, k: int):
    return tuple((x, c * k) for x, c in a if c * k != 0)


def lin_expr(terms, const: int, folder: Folder) -> Expr:
    e: Optional[Expr] = None
    for x, c in terms:
        t = x if c == 1 else folder.binop("*", Const(c), x)
        e = t if e is None else folder.binop("+", e, t)
    if e is None:
        return Const(const)
    return folder.binop("+", e, Const(const)) if const else e


# -- substitution (per-lane expansion) --------------------------------------------------------
def subst(e: Expr, env: dict, folder: Folder) -> Expr:
    """``e`` with the variables of ``env`` replaced (by constants or expressions, all at
    once), folded."""
    if isinstance(e, Var):
        v = env.get(e.name, e)
        return v if isinstance(v, Expr) else Const(v)
    if isinstance(e, BinOp):
        return folder.binop(e.op, subst(e.lhs, env, folder), subst(e.rhs, env, folder))
    if isinstance(e, UnOp):
        a = subst(e.arg, env, folder)
        if isinstance(a, Const):
            return Const(-a.value if e.op == "-" else int(not a.value))
        return UnOp(e.op, a)
    if isinstance(e, Select):
        return folder.select(subst(e.cond, env, folder), subst(e.then, env, folder),
                             subst(e.else_, env, folder))
    return e


def split_lane(e: Expr) -> Optional[tuple[Expr, Expr]]:
    """`e` as `free + per_lane`: `free` over no lane, `per_lane` over the lane alone (sums,
    differences and products by constants distributed); None when the lane is inside anything
    else (a product of two lane-free values, a division)."""
    terms = _lane_terms(e, 1)
    if terms is None:
        return None
    free: Expr = Const(0)
    lane: Expr = Const(0)
    for coef, t in terms:
        part = t if coef == 1 else BinOp("*", t, Const(coef))
        if LANE in expr_vars(t):
            lane = part if lane == Const(0) else BinOp("+", lane, part)
        else:
            free = part if free == Const(0) else BinOp("+", free, part)
    return free, lane


def _lane_terms(e: Expr, coef: int) -> Optional[list[tuple[int, Expr]]]:
    vs = expr_vars(e)
    if LANE not in vs or vs == {LANE}:
        return [(coef, e)]
    if isinstance(e, BinOp) and e.op in ("+", "-"):
        a = _lane_terms(e.lhs, coef)
        b = _lane_terms(e.rhs, coef if e.op == "+" else -coef)
        return None if a is None or b is None else a + b
    if isinstance(e, BinOp) and e.op == "*":
        for k, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(k, Const):
                return _lane_terms(x, coef * k.value)
    return None
