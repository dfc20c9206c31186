"""Integers of one execution that stand for a whole family of executions (the cutoff, cutoff.py).

An `Aff` is an int (its value in the execution the interpreter runs) that is also the affine form

    value + a * (j - j0) + b * (m - m0)

over the pump counts (j, m) of a `Region`: the integer points vertex + sum of n_i * ray_i, n_i >= 0.
Arithmetic keeps the form exact where it stays affine. Anything that decides (a comparison, a
truth test, an index, a conversion) must come out the same at every point of the region, or it
raises `Varies`: the family then does not follow this execution, and the cutoff refuses the
kernel, naming what varied.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass


class Varies(Exception):
    """A decision that differs between executions of the family."""


@dataclass(frozen=True)
class Region:
    vertex: tuple[int, int]                 # (j0, m0)
    rays: tuple[tuple[int, int], ...]


_REGION: list[Region] = []


@contextmanager
def region(r: Region):
    _REGION.append(r)
    try:
        yield
    finally:
        _REGION.pop()


def _slopes(a: int, b: int) -> list[int]:
    if not _REGION:
        raise Varies("an affine value outside a region")
    return [a * rj + b * rm for rj, rm in _REGION[-1].rays]


def aff(value: int, a: int = 0, b: int = 0):
    return Aff(value, a, b) if (a or b) else int(value)


def val(x) -> int:
    """The value in the execution run (the form at the region's vertex)."""
    return int.__int__(x) if isinstance(x, Aff) else int(x)


def coefs(x) -> tuple[int, int]:
    return (x.a, x.b) if isinstance(x, Aff) else (0, 0)


def _holds(value: int, a: int, b: int, op: str) -> bool:
    """Whether `form op 0` holds, when it holds at every point of the region or at none; else
    Varies. (The form's least and largest values lie at the vertex or go to infinity along a
    ray.)"""
    s = _slopes(a, b)
    up, down = all(x >= 0 for x in s), all(x <= 0 for x in s)
    lo = value if up else None          # the least value, when bounded below
    hi = value if down else None        # the largest, when bounded above
    test = {"<": lambda x: x < 0, "<=": lambda x: x <= 0, ">": lambda x: x > 0,
            ">=": lambda x: x >= 0, "==": lambda x: x == 0}[op]
    if op in ("<", "<="):
        if hi is not None and test(hi):
            return True
        if lo is not None and not test(lo):
            return False
    elif op in (">", ">="):
        if lo is not None and test(lo):
            return True
        if hi is not None and not test(hi):
            return False
    else:
        if up and down:
            return value == 0
        if (lo is not None and lo > 0) or (hi is not None and hi < 0):
            return False
    raise Varies(f"a comparison of {value} {a:+}*j {b:+}*m with 0 that differs over the family")


def _split(x):
    return (int.__int__(x), x.a, x.b) if isinstance(x, Aff) else (int(x), 0, 0)


class Aff(int):
    def __new__(cls, value: int, a: int, b: int):
        x = int.__new__(cls, value)
        x.a, x.b = a, b
        return x

    def __repr__(self):
        return f"Aff({int.__int__(self)}, {self.a}, {self.b})"

    # ---- arithmetic that stays affine
    def __add__(self, o):
        if not isinstance(o, int):
            return NotImplemented
        v, a, b = _split(o)
        return aff(int.__int__(self) + v, self.a + a, self.b + b)

    __radd__ = __add__

    def __neg__(self):
        return aff(-int.__int__(self), -self.a, -self.b)

    def __sub__(self, o):
        if not isinstance(o, int):
            return NotImplemented
        return self + (-o if isinstance(o, Aff) else -int(o))

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if isinstance(o, Aff):
            raise Varies("a product of two values that change over the family")
        if not isinstance(o, int):
            return NotImplemented
        return aff(int.__int__(self) * o, self.a * o, self.b * o)

    __rmul__ = __mul__

    def __floordiv__(self, d):
        if isinstance(d, Aff) or not isinstance(d, int) or d <= 0 or self.a % d or self.b % d:
            raise Varies(f"a division by {d} of a value that changes over the family")
        return aff(int.__int__(self) // d, self.a // d, self.b // d)

    def __mod__(self, d):
        if isinstance(d, Aff) or not isinstance(d, int) or d <= 0 or self.a % d or self.b % d:
            raise Varies(f"a value that changes over the family, modulo {d}")
        return int.__int__(self) % d

    def __and__(self, o):
        if isinstance(o, Aff) or not isinstance(o, int) or o < 0 or (o + 1) & o:
            raise Varies("a bitwise and of a value that changes over the family")
        return self % (o + 1)

    __rand__ = __and__

    def _opaque(self, *_):
        raise Varies("a bitwise or, xor, shift or power of a value that changes over the family")

    __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rshift__ = __pow__ = _opaque
    __rfloordiv__ = __rmod__ = __rlshift__ = __rrshift__ = __rpow__ = __invert__ = _opaque

    def __abs__(self):
        return self if self >= 0 else -self

    # ---- decisions: the same at every point, or Varies
    def _cmp(self, o, op: str) -> bool:
        v, a, b = _split(o)
        return _holds(int.__int__(self) - v, self.a - a, self.b - b, op)

    def __lt__(self, o): return self._cmp(o, "<")
    def __le__(self, o): return self._cmp(o, "<=")
    def __gt__(self, o): return self._cmp(o, ">")
    def __ge__(self, o): return self._cmp(o, ">=")
    def __eq__(self, o): return isinstance(o, int) and self._cmp(o, "==")
    def __ne__(self, o): return not self.__eq__(o)
    def __hash__(self): return int.__hash__(self)
    def __bool__(self): return not self._cmp(0, "==")

    def __index__(self):
        raise Varies("an index that changes over the family")

    def __int__(self):
        raise Varies("a value that changes over the family, taken as a plain integer")

    __float__ = __int__
