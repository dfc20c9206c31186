"""Verdicts: what warpspin tells the user, as data (text and JSON renderings in render.py)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

VERIFIED, VIOLATION, INCONCLUSIVE, UNSUPPORTED, ERROR = (
    "verified", "violation", "inconclusive", "unsupported", "error")
# every result starts undecided; only warpspin.pipeline.check_kernel decides it (and only its
# `_decide_verified` says VERIFIED), or for a SASS check warpspin.sass.check.decide. An undecided
# result that reaches a user is an internal error.
UNDECIDED = "undecided"

# What a search covers (docs/semantics.md) and what it does not yet: a VERIFIED says both.
CHECKED = ("deadlock", "arrival-mismatch", "tx-mismatch", "parity-aliasing",
           "uninitialized-barrier", "barrier-reinit", "divergent-barrier", "pending-at-exit", "scope",
           "cluster-lifetime", "invalid-operand", "race (on shared-memory words used as values)",
           "tensormap-race (TMA loads through a tensormap the kernel rewrites in global memory)",
           "race and proxy-race on staged buffers TMA stores read (writes before the hand-over, "
           "fence.proxy.async, reuse before wait_group.read)",
           "race on stages TMA loads fill (a fill while a wgmma still reads, a read while a fill "
           "is in flight): by the happens-before engine always, by SPIN unless --no-load-races",
           "race and pending-at-exit on cp.async copies into a thread's own partition (an access "
           "or exit before cp.async.wait_group retired them)",
           "scope of the release after a DSMEM store (st.shared::cluster) into a peer CTA (an "
           "arrive on that CTA's barrier at CTA scope or relaxed)",
           "tcgen05.commit arrives (landing after the tcgen05 ops they track, multicast in a "
           "cluster) and tmem-lifetime (TMEM alloc blocking past 512 columns, dealloc of more "
           "than is held, alloc after relinquish_alloc_permit, columns held when a CTA exits, a "
           "tcgen05.ld / st / cp / mma issued while its CTA holds no columns)",
           "deadlock and scope of global flags between CTAs (atom.add / red.add and spin loops "
           "on ld.acquire, in a model of every CTA of a small grid)")


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    role: str = ""
    frame: str = ""   # library method, e.g. PipelineTmaAsync.consumer_release


@dataclass(frozen=True)
class BarrierState:
    """A barrier after a step that changed it: mbarriers with their phase, pending arrivals of
    the expected count and pending transaction bytes; named barriers with threads arrived."""
    barrier: str
    phase: int
    pending_arrivals: int
    expected_arrivals: int
    pending_tx: int = 0


@dataclass(frozen=True)
class TraceStep:
    step: int
    process: str      # instance name, e.g. "consumer[1]", or "tma" for an async completion
    op: str
    file: str
    line: int
    frame: str = ""
    cta: int = 0
    barriers: tuple[BarrierState, ...] = ()  # the barriers this step changed, after it
    waits: str = ""   # an mbarrier wait: the barrier it waited on
    issued_at: int = 0  # an async completion: the step that issued its copy


@dataclass(frozen=True)
class BlockedWait:
    process: str
    role: str
    cta: int
    warps: tuple[int, int]
    op: str
    file: str
    line: int
    barrier: str = ""
    parity: int | None = None
    phase: int | None = None
    pending_arrivals: int | None = None
    expected_arrivals: int | None = None
    pending_tx: int | None = None


@dataclass(frozen=True)
class Note:
    """A `note:` line of a diagnostic, with its location when it has one."""
    message: str
    location: Location | None = None


@dataclass(frozen=True)
class Violation:
    kind: str
    message: str
    locations: tuple[Location, ...]
    trace: tuple[TraceStep, ...] = ()
    blocked: tuple[BlockedWait, ...] = ()
    replayed: bool = True
    notes: tuple[Note, ...] = ()
    help: tuple[str, ...] = ()
    # the happens-before engine's two unordered ops and the synchronization the second had
    unordered: tuple[Note, ...] = ()


@dataclass
class Stats:
    processes: int = 0
    states: int = 0
    transitions: int = 0
    depth: int = 0
    memory_mb: float = 0.0
    state_vector: int = 0     # bytes per stored state
    cores: int = 1            # cores of the exhaustive search
    hunts: int = 0            # randomized bug-hunt runs beside it
    found_by: str = ""        # the search whose counterexample is shown
    first_found_by: str = ""  # the search that found a counterexample first, and when
    first_found_s: float = 0.0
    found_depth: int = 0      # the depth it was first found at (before shortening)
    engine: str = ""          # which engine decided: "happens-before" or "spin" ("" none ran)
    hb_runs: int = 0          # happens-before engine: executions run (one per launch choice,
    hb_ops: int = 0           # plus witnesses), their events, and the synchronization edges
    hb_edges: int = 0         # of their happens-before relations
    seconds: dict[str, float] = field(default_factory=lambda: {
        "trace": 0.0, "extract": 0.0, "check": 0.0, "total": 0.0})


@dataclass
class Result:
    target: str
    kernel: str
    verdict: str = UNDECIDED
    violations: list[Violation] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    reasons: list[str] = field(default_factory=list)   # why inconclusive / unsupported / error
    reason_locations: list[Location] = field(default_factory=list)
    config: dict = field(default_factory=dict)          # params, CTAs, search options
    syncir_text: str = field(default="", repr=False)    # the checked SyncIR, printed
    model: dict = field(default_factory=dict, repr=False)  # syncir.summary.kernel_summary

    @property
    def outcome(self) -> str:
        """What the check found, in one word: the first violation's kind; "not-checked" for an
        INCONCLUSIVE whose every reason is a property not checked on an object (the check itself
        completed); else the verdict."""
        if self.violations:
            return self.violations[0].kind
        if self.verdict == INCONCLUSIVE and self.reasons and \
                all(" NOT CHECKED on " in why for why in self.reasons):
            return "not-checked"
        return self.verdict

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "kernel": self.kernel,
            "verdict": self.verdict,
            "violations": [{
                "kind": v.kind, "message": v.message,
                "locations": [asdict(l) for l in v.locations],
                "trace": [asdict(t) for t in v.trace],
                "blocked": [asdict(b) for b in v.blocked],
                "replayed": v.replayed,
                "notes": [asdict(n) for n in v.notes],
                "unordered": [asdict(n) for n in v.unordered],
                "help": list(v.help),
            } for v in self.violations],
            "reasons": list(self.reasons),
            "reason_locations": [asdict(l) for l in self.reason_locations],
            "config": dict(self.config),
            "model": dict(self.model),
            "properties": {"asked": list(self.config.get("properties", ("deadlock", "race"))),
                           "checked": list(CHECKED),
                           "not_checked": list(self.config.get("unchecked", ()))},
            "stats": {"processes": self.stats.processes, "states": self.stats.states,
                      "transitions": self.stats.transitions, "depth": self.stats.depth,
                      "state_vector_bytes": self.stats.state_vector,
                      "seconds": dict(self.stats.seconds), "memory_mb": self.stats.memory_mb,
                      "cores": self.stats.cores, "hunts": self.stats.hunts,
                      "found_by": self.stats.found_by,
                      "first_found_by": self.stats.first_found_by,
                      "first_found_s": self.stats.first_found_s,
                      "found_depth": self.stats.found_depth,
                      "engine": self.stats.engine,
                      "hb": {"runs": self.stats.hb_runs, "ops": self.stats.hb_ops,
                             "edges": self.stats.hb_edges}},
        }

    def to_json(self, indent: int | None = 2) -> str:
        import json
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        from .render import render_text
        return render_text(self)


def exit_status(results: list[Result]) -> int:
    """0 all verified; 1 a violation; 2 inconclusive or unsupported; 3 bad input."""
    verdicts = {r.verdict for r in results}
    if ERROR in verdicts or UNDECIDED in verdicts:
        return 3
    if VIOLATION in verdicts:
        return 1
    if verdicts - {VERIFIED}:
        return 2
    return 0
