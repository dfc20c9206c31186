"""The trail protocol between the Promela model and SyncIR (docs/semantics.md, "Trail protocol"):
the `WS|...` lines the model prints while pan replays a counterexample, back to trace events."""
from __future__ import annotations

import re

from ..syncir.trace import Complete, Event, ParamChoice, Step, Take
from .promela import LoweredModel, param_names


def parse_trail(text: str, model: LoweredModel) -> tuple[list[Event], str | None]:
    """The WS|... lines printed by `pan -r` -> (trace events, kind of the last WS|V line).
    Without a WS|V line the kind is None (SPIN's own error decides: an invalid end state is a
    deadlock); `WS|X` is the deadlock watcher's deadlock. Processes in the symmetric encoding
    print record positions (`WS|s`) and record moves (`WS|M|<process>|<from>|<to>`); following
    the moves gives each step's instance."""
    events: list[Event] = []
    kind = None
    who = {pi: list(range(model.model_kernel.processes[pi].instances)) for pi in model.symmetric}

    def step(pi: int, inst: int, pc: int) -> Step:
        p, i, at = model.lowered_step(pi, inst, pc)
        return Step(model.original_process(p), i, at)

    def orig(pi: int) -> int:
        return model.original_process(model.lowered_step(pi, 0, 0)[0])
    for line in text.splitlines():
        at = line.find("WS|")
        if at < 0:
            continue
        f = line[at:].strip().split("|")
        tag, args = f[1], f[2:]
        if tag == "P":
            events.append(ParamChoice(args[0], int(args[1])))
        elif tag == "S":
            pi, inst, pc = map(int, args[:3])
            events.append(step(pi, inst, pc))
        elif tag == "s":
            pi, slot, pc = map(int, args[:3])
            events.append(step(pi, who[pi][slot], pc))
        elif tag == "M":
            pi, src, dst = map(int, args[:3])
            who[pi].insert(dst, who[pi].pop(src))
        elif tag == "C":
            pi, pc, cta, idx = map(int, args[:4])
            events.append(Complete(orig(pi), pc, cta, idx))
        elif tag == "O":
            events.append(Take(args[0]))
        elif tag == "V":
            kind = args[0]
        elif tag == "X":  # the deadlock watcher (shared record slots)
            kind = "deadlock"
    return events, kind


def fix_param(text: str, model: LoweredModel, choice: ParamChoice) -> str:
    """The model with launch parameter `choice.name` fixed to `choice.value` (probe runs)."""
    v = param_names(model.model_kernel)[choice.name]
    return re.sub(rf"if (:: {v} = -?\d+ ?)+fi;", f"{v} = {choice.value};", text, count=1)
