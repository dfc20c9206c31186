"""Traces: the interleavings that SPIN trails and the interpreter both speak (docs/semantics.md)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParamChoice:
    name: str
    value: int


@dataclass(frozen=True)
class Step:
    """Instance `instance` of process `process` executes its flat instruction `pc`."""
    process: int
    instance: int
    pc: int


@dataclass(frozen=True)
class Complete:
    """An async op issued at flat instruction `pc` of process `process` completes on element
    `index` of its barrier array in CTA `cta`."""
    process: int
    pc: int
    cta: int
    index: int


@dataclass(frozen=True)
class Take:
    """A CTA outside the model takes the next value of global counter `counter` (atom.inc)."""
    counter: str


Event = ParamChoice | Step | Complete | Take

# Violation kinds: the fixed vocabulary of the reports.
KINDS = ("deadlock", "arrival-mismatch", "tx-mismatch", "parity-aliasing", "uninitialized-barrier",
         "barrier-reinit", "divergent-barrier", "pending-at-exit", "cluster-lifetime", "scope",
         "invalid-operand", "race", "proxy-race", "tensormap-race", "tmem-lifetime")
# Model-bound events: not violations of the kernel, they make a verdict INCONCLUSIVE.
BOUND_KINDS = ("loop-bound", "phase-bound", "integer-range", "copy-bound", "read-bound")
