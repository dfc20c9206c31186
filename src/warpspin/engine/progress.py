"""Progress of a running check, for a terminal: the CLI sets a reporter (only when stderr is a
terminal and the output is not --json); the engines call it about once a second: SPIN's search
with what pan last printed (pan prints a line every PAN_FREQ states), gcc's compile of pan.c
with its seconds, the happens-before engine with its executions. Nothing else prints progress."""
from __future__ import annotations

import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Optional

_LINE = re.compile(r"Depth=\s*(\d+)\s+States=\s*([\d.e+]+)\s+Transitions=\s*[\d.e+]+\s+"
                   r"Memory=\s*([\d.]+)")
# pan prints a progress line every this many stored states (its default, 10^6, left a search of
# half a million states with one line for 20 s); at 10^6 states/s, 20 short lines a second
PAN_FREQ = 50_000


@dataclass(frozen=True)
class Progress:
    states: int = 0
    depth: int = 0
    memory_mb: float = 0.0
    seconds: float = 0.0
    phase: str = "searching"  # searching (pan) | compiling (gcc pan.c) | executions (hb)
    runs: int = 0
    ops: int = 0

    def line(self) -> str:
        if self.phase == "compiling":
            return (f"compiling the model (gcc pan.c): {self.seconds:.0f} s (models of many "
                    "warps take a minute or more)")
        if self.phase == "executions":
            return (f"happens-before engine: {self.runs:,} execution{'s' * (self.runs != 1)}, "
                    f"{self.ops:,} ops, {self.seconds:.0f} s")
        rate = self.states / self.seconds if self.seconds > 0 else 0
        return (f"searching: {self.states:,} states ({rate:,.0f}/s), depth {self.depth}, "
                f"{self.memory_mb:,.0f} MB, {self.seconds:.0f} s")


REPORTER: ContextVar[Optional[Callable[[Progress], None]]] = ContextVar("warpspin_progress",
                                                                        default=None)


class Ticker:
    """Calls the reporter at most once a second: `tick(lambda seconds: Progress(...))`, the
    seconds counted from `start` (time.monotonic(); default: now); a None progress is skipped."""

    def __init__(self, start: float | None = None):
        self.report = REPORTER.get()
        self.start = self.last = time.monotonic() if start is None else start

    def __call__(self, make: Callable[[float], Optional[Progress]]) -> None:
        if self.report is None:
            return
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            p = make(now - self.start)
            if p is not None:
                self.report(p)


def last_progress(pan_output: str, seconds: float) -> Optional[Progress]:
    """The last progress line pan printed, if any."""
    found = None
    for m in _LINE.finditer(pan_output[-4096:]):
        found = m
    if found is None:
        return None
    return Progress(int(float(found.group(2))), int(found.group(1)), float(found.group(3)),
                    seconds)
