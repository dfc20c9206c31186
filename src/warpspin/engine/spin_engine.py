"""SPIN as an engine of the contract (engine/contract.py): lower the kernel to Promela, search it
exhaustively (engine/spin.py), and say what the search showed."""
from __future__ import annotations

import time

from ..lower import LowerError
from ..syncir.ir import Kernel
from ..syncir.passes import has_load_races, without_load_races
from .contract import (FAILED, INCONCLUSIVE, OUTSIDE, VERIFIED, VIOLATION, Cost, EngineOptions,
                       Outcome)
from .spin import EngineError, EngineTimeout, lower_and_check

NAME = "spin"

TRUNCATION = {
    "memory": "memory limit reached: raise --memory",
    "timeout": "time limit reached: raise --timeout",
    "interrupted": "interrupted (Ctrl-C)",
    "depth": "search depth limit reached",
    "vector": "state vector too large for the compiled verifier",
    "aborted": "the verifier stopped without statistics",
}


class Spin:
    name = NAME

    def check(self, kernel: Kernel, options: EngineOptions) -> Outcome:
        t0 = time.perf_counter()
        out = Outcome(NAME, INCONCLUSIVE)
        free = [p for p in kernel.params if p.unbounded]
        if free:
            out.verdict = OUTSIDE
            out.reasons = [f"{free[0].name}={free[0].lo}.. has no upper bound: SPIN searches "
                           "finite ranges (the happens-before engine's cutoff decides such a "
                           "range: --engine auto or hb)"]
            return out
        if not options.load_races and has_load_races(kernel):
            kernel = without_load_races(kernel)
            out.config["load_races"] = "not checked (--no-load-races)"
        try:
            model, er = lower_and_check(kernel, reduce=options.reduce, timeout_s=options.timeout_s,
                                        memory_mb=options.memory_mb, jobs=options.jobs)
        except EngineTimeout as e:
            out.reasons = [f"the time limit was reached ({e}): raise --timeout" if e.searched else
                           f"the time limit was reached before the search began ({e}): raise "
                           "--timeout; nothing was searched"]
            return out
        except (LowerError, EngineError) as e:
            out.verdict = FAILED
            out.reasons = [f"internal error: the kernel could not be model-checked: {e}"]
            return out
        out.model = model
        out.cost = Cost(seconds=time.perf_counter() - t0, states=er.states, transitions=er.transitions,
                        depth=er.depth, memory_mb=er.memory_mb, state_vector=er.state_vector,
                        compile_seconds=er.compile_seconds, cores=er.cores, hunts=er.hunts)
        out.config["search"] = er.search
        out.config["reductions"] = [r.split(":")[0] for r in model.reductions]
        out.config["reductions_refused"] = [f"{d.reduction}: {d.why}" for d in model.refused]
        if er.refused:
            out.config["reductions_refused"].append(
                "wait-release-fusion: its monitored condition failed; searched unfused")
        if er.kind is not None:
            out.verdict, out.kind, out.events = VIOLATION, er.kind, er.events
            out.found_by, out.found_depth = er.found_by, er.found_depth
            out.first_found_by, out.first_found_s = er.first_found_by, er.first_found_s
        elif not er.complete or er.truncated:
            out.reasons = [f"the search was truncated ({TRUNCATION.get(why, why)}); no violation "
                           "was found in the part searched" for why in er.truncated] \
                or ["the search did not complete"]
        elif model.integer_problems:
            out.reasons, out.locations = integer_reasons(model)
        else:
            out.verdict = VERIFIED
        return out


def integer_reasons(model) -> tuple[list[str], list]:
    """Why a search of `model` proves nothing: its 32-bit integers may not hold the kernel's."""
    shown = model.integer_problems[:3]
    return ([f"integer range: `{what}` may not fit the model's 32-bit integers, so the search may "
             "have missed or invented behaviours; no violation was confirmed" for what, _ in shown],
            [loc for _, loc in shown])
