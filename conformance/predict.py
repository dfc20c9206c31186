"""What warpspin predicts for a litmus kernel, on the CPU: the verdict of `warpspin check` and,
from the reference interpreter, every way the kernel can end (completes with which probe values,
or hangs) and every violation some execution reaches."""
from __future__ import annotations

import os
from dataclasses import dataclass

from warpspin.syncir.interp import Machine, Outcomes, Terminal, outcomes


@dataclass
class Prediction:
    verdict: str            # "verified", a violation kind, "not-checked" (complete, but a property
    # was not followed on some object), "unsupported", "inconclusive", "error"
    where: str              # file:line of the first violation ("" when none)
    outcomes: Outcomes
    kernel: object = None   # the extracted SyncIR


def _observer(lit):
    """observe(machine, state): the probe words as the kernel writes them to `out`, from the
    SyncIR result of the test/try-wait, shared-word load or atom.inc on each probe's line (0 when it did
    not run)."""
    lines = dict(lit.probe_lines)
    where: dict[int, list[tuple[int, int]]] = {}  # slot -> (CTA, state index) of its results

    def locate(m: Machine) -> None:
        for slot, (file, line) in lines.items():
            where[slot] = [(inst.cta, m.sl.local[inst.gid][ins.stmt.dest])
                           for inst in m.instances for _, ins in m.flat[inst.process].ops()
                           if type(ins.stmt).__name__ in ("MbarTestWait", "SmemLoad", "AtomInc")
                           and ins.stmt.loc.line == line
                           and os.path.basename(ins.stmt.loc.file) == file]
            if not where[slot]:
                raise AssertionError(f"{lit.name}: no test/try-wait or word load on {file}:{line} "
                                     f"(probe {slot})")

    def observe(m: Machine, s) -> tuple:
        if not where:
            locate(m)
        words = [0] * (lit.ctas * lit.probes)
        for slot, places in where.items():
            seen: dict[int, set] = {}
            for cta, i in places:
                seen.setdefault(cta, set()).add(s[i])
            for cta, vals in seen.items():
                if len(vals) > 1:
                    raise AssertionError(f"{lit.name}: probe {slot} differs between the warps of "
                                         f"CTA {cta}: {sorted(vals)}")
                words[cta * lit.probes + slot] = vals.pop()
        return tuple(words)
    return observe


def predict(lit, max_states: int = 200_000) -> Prediction:
    from warpspin.api import verify
    from warpspin.extract import extract
    from warpspin.frontend import trace

    args = lit.args_cpu()
    res = verify(lit, *args, target=lit.name, timeout_s=120, arch=lit.arch)
    verdict = res.outcome
    where = ""
    if res.violations:
        loc = res.violations[0].locations[0]
        where = f"{os.path.basename(loc.file)}:{loc.line}"
    (tk,) = trace(lit, *args, arch=lit.arch)
    kernel = extract(tk)
    return Prediction(verdict, where, outcomes(kernel, _observer(lit), max_states), kernel)


def terminal_text(t: Terminal) -> str:
    return t.end if not t.values else f"{t.end} {list(t.values)}"
