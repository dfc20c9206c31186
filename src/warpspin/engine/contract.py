"""The contract both engines implement: a kernel and options in, an Outcome out.

An engine never says VERIFIED to the user: its Outcome is evidence, and the pipeline decides
(pipeline._decide_verified). `outside` is the happens-before engine's answer for a kernel that is
not in its class; the pipeline then asks the next engine.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..syncir.ir import Kernel, Loc
from ..syncir.trace import Event

VERIFIED, VIOLATION, INCONCLUSIVE, OUTSIDE, FAILED = (
    "verified", "violation", "inconclusive", "outside", "error")


@contextmanager
def cycle_collector_paused():
    """Python's cyclic collector off while an engine runs the interpreter. A check compiles
    ~10^5 long-lived closures, and each collection the allocations trigger rescans them and the
    traced module: on the 64-warp cluster-8 cross-entropy it was 7 of 11 s (bench/hb.md), with the
    same peak memory either way (the engines' objects die with references, not cycles)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(frozen=True)
class EngineOptions:
    timeout_s: float = 600.0
    memory_mb: int = 4096
    reduce: bool = True         # SPIN: the model's exact reductions
    jobs: int = 1               # SPIN: cores of the search (with bug hunts beside it)
    load_races: bool = True     # SPIN: also model races on the stages TMA loads fill


@dataclass
class Cost:
    """What deciding cost. The happens-before engine counts executions (`runs`), their events
    (`ops`) and synchronization edges; SPIN counts states and transitions."""
    seconds: float = 0.0
    runs: int = 0
    ops: int = 0
    edges: int = 0
    states: int = 0
    transitions: int = 0
    depth: int = 0
    memory_mb: float = 0.0
    state_vector: int = 0
    compile_seconds: float = 0.0
    cores: int = 1
    hunts: int = 0


@dataclass
class Outcome:
    """An engine's answer. `verdict`: verified | violation | inconclusive | outside | error.
    A violation carries its execution as trace `events` (the pipeline replays it before showing
    it); the others carry `reasons` and their `locations`."""
    engine: str
    verdict: str
    kind: str | None = None
    events: list[Event] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    locations: list[Loc] = field(default_factory=list)
    found_by: str = ""
    found_depth: int = 0
    first_found_by: str = ""
    first_found_s: float = 0.0
    cost: Cost = field(default_factory=Cost)
    config: dict[str, Any] = field(default_factory=dict)  # how it was decided, for the report
    model: Any = None           # SPIN: the LoweredModel it searched
    # the happens-before engine's violation found by reordering two unordered ops: why they
    # are unordered, as (message, location) lines for the report
    why_unordered: list = field(default_factory=list)


class Engine(Protocol):
    name: str

    def check(self, kernel: Kernel, options: EngineOptions) -> Outcome: ...
