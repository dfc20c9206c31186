"""A counterexample as a Chrome/Perfetto trace (the JSON trace-event format that ui.perfetto.dev
and chrome://tracing open, as Nsight's exports do): one process per CTA, one track per warp and
one for async copies, and a counter per barrier for its completed phases and pending arrivals.
The model has no clock: step n of the interleaving runs from n to n+1 microseconds."""
from __future__ import annotations

import json

from .result import Result

ASYNC = "async copies"
OTHERS = "other CTAs"


def trace_events(results: list[Result]) -> dict:
    events: list[dict] = []
    for k, r in enumerate(results):
        for v in r.violations[:1]:
            events += _violation_events(k, r, v)
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"tool": "warpspin", "time": "one step of the interleaving = 1 us"}}


def _violation_events(k: int, r: Result, v) -> list[dict]:
    out: list[dict] = []
    tracks: dict[tuple[int, str], int] = {}
    base = 1000 * k  # each result's CTAs are processes of their own

    def track(cta: int, name: str) -> tuple[int, int]:
        key = (cta, name)
        if key not in tracks:
            tracks[key] = len([x for x in tracks if x[0] == cta]) + 1
            pid = base + cta
            if not any(c == cta for c, _ in list(tracks)[:-1]):
                out.append({"ph": "M", "name": "process_name", "pid": pid,
                            "args": {"name": f"{r.target or r.kernel}: CTA {cta}"}})
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tracks[key],
                        "args": {"name": name}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tracks[key],
                        "args": {"sort_index": tracks[key] if name != ASYNC else 10_000}})
        return base + cta, tracks[key]

    for st in v.trace:
        name = ASYNC if st.process == "async" else st.process.split("@")[0]
        pid, tid = track(st.cta, name)
        out.append({"ph": "X", "name": st.op, "cat": "async" if name == ASYNC else "warp",
                    "pid": pid, "tid": tid, "ts": st.step, "dur": 1,
                    "args": {"step": st.step, "where": f"{st.file}:{st.line}",
                             "frame": st.frame}})
        for b in st.barriers:
            out.append({"ph": "C", "name": b.barrier, "pid": pid, "ts": st.step + 1,
                        "args": {"phases completed": b.phase,
                                 "arrivals pending": b.pending_arrivals,
                                 "tx bytes pending": b.pending_tx}})
    end = (v.trace[-1].step + 1) if v.trace else 1
    where = v.locations[0] if v.locations else None
    out.append({"ph": "i", "s": "g", "name": f"{v.kind}: {v.message}", "pid": base, "ts": end,
                "args": {"where": f"{where.file}:{where.line}" if where else ""}})
    return out


def write_trace(results: list[Result], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(trace_events(results), f)
        f.write("\n")
