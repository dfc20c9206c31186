"""Progress of a running search, for a terminal: the CLI sets a reporter (only when stderr is a
terminal and the output is not --json); the search (pan alone, or the portfolio) calls it about
once a second with what pan last printed. Nothing else prints progress."""
from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Optional

_LINE = re.compile(r"Depth=\s*(\d+)\s+States=\s*([\d.e+]+)\s+Transitions=\s*[\d.e+]+\s+"
                   r"Memory=\s*([\d.]+)")


@dataclass(frozen=True)
class Progress:
    states: int
    depth: int
    memory_mb: float
    seconds: float

    def line(self) -> str:
        rate = self.states / self.seconds if self.seconds > 0 else 0
        return (f"searching: {self.states:,} states ({rate:,.0f}/s), depth {self.depth}, "
                f"{self.memory_mb:,.0f} MB, {self.seconds:.0f} s")


REPORTER: ContextVar[Optional[Callable[[Progress], None]]] = ContextVar("warpspin_progress",
                                                                        default=None)


def last_progress(pan_output: str, seconds: float) -> Optional[Progress]:
    """The last progress line pan printed (BFS: one per depth level), if any."""
    found = None
    for m in _LINE.finditer(pan_output[-4096:]):
        found = m
    if found is None:
        return None
    return Progress(int(float(found.group(2))), int(found.group(1)), float(found.group(3)),
                    seconds)
