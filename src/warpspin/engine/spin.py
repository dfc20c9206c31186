"""Run SPIN on a lowered model: `spin -a`, compile pan.c, run pan under limits, parse the result,
and map an error trail (replayed by `pan -r`) back to SyncIR trace events (docs/semantics.md, trail protocol).

The search is exact (no bitstate, no hash compaction): a search that hit no limit and found no
error has covered every reachable state. Any limit hit (memory, depth, time, vector size) puts a
reason in `truncated`, and `complete` is then False.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace

from ..lower.promela import LoweredModel, lower
from ..lower.trail import fix_param, parse_trail
from .pan_cache import cache_key, fetch, store
from .progress import PAN_FREQ, REPORTER, Progress, Ticker, last_progress
from .portfolio import (COUNTEREXAMPLE as _COUNTEREXAMPLE, EXHAUSTIVE_MIN_MB, HUNT_MB, PAN_ERROR,
                        hunt_to_depth, kill_group, replay_trail, run_portfolio, split_jobs)
from ..syncir.interp import failed_tests_at_end
from ..syncir.trace import Complete, Event, ParamChoice, Step, Take

SPIN = shutil.which("spin") or "/usr/bin/spin"
CC = shutil.which("gcc") or "gcc"


# pan: "VECTORSZ too small, recompile pan.c with -DVECTORSZ=N with N>172"
_VECTOR_NEEDED = re.compile(r"-DVECTORSZ=N with N>(\d+)")
MAX_VECTOR = 1 << 16

# EngineResult.kind when R6's monitored condition failed: the fused model says nothing about the
# kernel; check `lower(kernel, reduce, fuse=False)` instead (lower_and_check does)
REDUCTION_UNSOUND = "reduction-unsound"


class EngineError(Exception):
    """SPIN or the C compiler failed on a model (a lowering bug, not a verdict)."""


class EngineTimeout(EngineError):
    """The time limit ran out while SPIN or the C compiler prepared the search, or (`searched`)
    while pan replayed the counterexample it found (a limit, not a bug: the verdict is
    INCONCLUSIVE)."""

    def __init__(self, message: str, searched: bool = False):
        super().__init__(message)
        self.searched = searched


@dataclass
class EngineResult:
    complete: bool                 # every reachable state was searched, and no error was found
    kind: str | None               # violation kind of the counterexample (None: no error found)
    events: list[Event]            # the counterexample as SyncIR trace events
    truncated: tuple[str, ...]     # limits hit: "memory", "depth", "timeout", "vector"
    states: int = 0
    transitions: int = 0
    depth: int = 0
    memory_mb: float = 0.0
    state_vector: int = 0
    seconds: float = 0.0           # pan's own run time (wall clock)
    compile_seconds: float = 0.0
    search: str = "bfs"
    pan_output: str = ""
    trail_output: str = ""
    pan_error: str = ""            # pan's own error line, e.g. "assertion violated 0 (at depth 9)"

    cores: int = 1                 # cores of the exhaustive search
    hunts: int = 0                 # randomized bug-hunt runs beside it (portfolio.py)
    found_by: str = ""             # which search found the counterexample
    found_depth: int = 0           # the depth it was first found at, before shortening
    first_found_by: str = ""       # the search that found a counterexample first
    first_found_s: float = 0.0     # and when (seconds after the searches started)
    options: str = ""              # how pan ran, for reports
    reductions: tuple[str, ...] = ()  # the model's reductions (LoweredModel.reductions)
    # lower_and_check: the fused (R6) model reported reduction-unsound and this result is the
    # unfused model's; fused_states/fused_seconds are the first run's
    refused: bool = False
    fused_states: int = 0
    fused_seconds: float = 0.0

    @property
    def violation(self) -> bool:
        return self.kind is not None

    @property
    def truncation(self) -> list[str]:
        """Why the search is incomplete, in words (empty when it was not truncated)."""
        words = {"memory": "memory limit reached", "depth": "search depth limit reached",
                 "timeout": "time limit reached", "vector": "state vector too large (VECTORSZ)",
                 "aborted": "pan stopped without statistics"}
        return [words.get(t, t) for t in self.truncated]


# ----------------------------------------------------------------------------- running

def check(model: LoweredModel, timeout_s: float = 300, memory_mb: int = 4096,
          workdir: str | None = None, search: str = "bfs", max_depth: int = 1_000_000,
          vector_size: int = 4096, opt: str | None = None, keep: bool = False,
          collapse: bool | None = None, jobs: int = 1, shorten_s: float = 20.0,
          grow_vector: bool = True) -> EngineResult:
    """Model-check `model`. `search`: "bfs" (shortest counterexample, the default), "dfs", or
    "dfs-shortest" (DFS with pan -i: iteratively shortened counterexample). `opt`: the C
    compiler's optimization (default: -O0 for small models, where compiling dominates, -O1 else).
    `collapse`: pan's -DCOLLAPSE state compression (exact; default: `default_collapse`).
    `jobs` > 1 (BFS only): the exhaustive search and randomized bug hunts at once (portfolio.py);
    a hunt's counterexample is shortened by the BFS for up to `shorten_s` seconds. `grow_vector`: when pan stops because the
    state vector does not fit `vector_size`, compile again with twice the size it names (up to
    MAX_VECTOR)."""
    if search not in ("bfs", "dfs", "dfs-shortest"):
        raise ValueError(f"unknown search {search!r}")
    if opt is None:
        opt = _default_opt(model)
    if collapse is None:
        collapse = default_collapse(model)
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="warpspin-", dir=workdir)
    try:
        while True:
            if jobs > 1 and search == "bfs":
                res = _check_portfolio(tmp, model, timeout_s - (time.monotonic() - start),
                                       memory_mb, max_depth, vector_size, opt, collapse, jobs,
                                       shorten_s)
            else:
                res = _check_in(tmp, model, model.text, timeout_s - (time.monotonic() - start),
                                memory_mb, search, max_depth, vector_size, opt, collapse)
            need = _VECTOR_NEEDED.search(res.pan_output)
            if not grow_vector or "vector" not in res.truncated or not need \
                    or int(need.group(1)) >= MAX_VECTOR \
                    or timeout_s - (time.monotonic() - start) < 5:
                break
            # pan names the state-vector size it needs: compile again with room for it
            vector_size = min(MAX_VECTOR, 2 * int(need.group(1)))
            shutil.rmtree(tmp, ignore_errors=True)
            tmp = tempfile.mkdtemp(prefix="warpspin-", dir=workdir)
        if res.kind is not None and not res.found_by:
            res.found_by = res.first_found_by = f"exhaustive {search.upper()}"
            res.found_depth, res.first_found_s = res.depth, res.seconds
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    res.reductions = model.reductions
    if model.cta_procs:
        res.events, res.kind = _other_ctas(model, res, timeout_s - (time.monotonic() - start),
                                           memory_mb, vector_size, opt, collapse, workdir)
    if res.kind == "deadlock" and any(r.startswith("R9") for r in model.reductions):
        # R9 keeps an instance at a test-wait that would fail and then wait: the deadlock of
        # the unreduced semantics takes those steps too
        res.events = res.events + failed_tests_at_end(model.kernel, res.events)
    return res


def lower_and_check(kernel, reduce: bool = True, fuse: bool | None = None,
                    **kw) -> tuple[LoweredModel, EngineResult]:
    """Lower `kernel` and check it; when the fused model (R6) reports `reduction-unsound`,
    re-lower with `fuse=False` and check that (each run gets `kw`'s limits). Returns the model
    the result belongs to (its trail's kernel is `model.kernel`) and the result."""
    model = lower(kernel, reduce=reduce, fuse=fuse)
    res = check(model, **kw)
    if res.kind != REDUCTION_UNSOUND:
        return model, res
    first = res
    model = lower(kernel, reduce=reduce, fuse=False)
    res = check(model, **kw)
    res.refused = True
    res.fused_states = first.states
    res.fused_seconds = first.seconds + first.compile_seconds
    return model, res


def default_collapse(model: LoweredModel) -> bool:
    """pan's -DCOLLAPSE (lossless: each process's local state and the globals are stored once
    and states refer to them) where it was measured to pay: CTAs of four or more roles, whose
    states repeat each role's part (quack's SM90 GEMM: -42% memory, +11% time; its persistent
    kernel: -54%; flash-attn-4 SM90: -26%, +14%), not the two-role rings (+27% time, < 1%
    memory) or quack's cluster softmax (two roles per CTA: -16% memory, -22% speed;
    docs/spin.md, "State compression")."""
    return sum(1 for p in model.lowered.processes if p.cta == 0) >= 4


def _default_opt(model: LoweredModel) -> str:
    """-O0 where compiling pan.c costs more than the search gains from -O1: small models, and
    models of at most 10 warps in a CTA (8 consumer warps, S=4, K=64: 1.4 s with -O0, 1.7 s with
    -O1; 16 warps: -O1 wins, docs/spin.md)."""
    warps = sum(p.instances for p in model.kernel.processes if p.cta == 0)
    return "-O0" if len(model.text) < 40_000 or warps <= 10 else "-O1"


def _other_ctas(model, res, timeout_s, memory_mb, vector_size, opt, collapse, workdir):
    """Independent identical CTAs: the trail is CTA 0's. A violation of a step stands as it is
    (the other CTAs have not moved). A deadlock of the kernel needs every other CTA at a terminal
    state too: append, for each, the shortest path to a terminal state of the component (a
    second BFS with a probe that stops at the first state where nothing else can move), or, if
    that search fails, a copy of CTA 0's own deadlocking trail. The completed deadlock is longer
    than the component's, so a step violation of the component between the two depths comes
    first in the kernel: a third BFS that ignores deadlocks (pan -E), bounded by that depth,
    finds it. Returns (events, kind)."""
    events = res.events
    if res.kind != "deadlock" or not events:
        return events, res.kind
    steps = [e for e in events if not isinstance(e, ParamChoice)]
    params = [e for e in events if isinstance(e, ParamChoice)]
    tail = steps
    tmp = tempfile.mkdtemp(prefix="warpspin-", dir=workdir)
    try:
        probe = _check_in(tmp, model, model.probe_text, max(10.0, timeout_s), memory_mb, "bfs",
                          1_000_000, vector_size, opt, collapse, params=params)
        if "WS|T" in probe.trail_output and "WS|V" not in probe.trail_output:
            got = [e for e in probe.events if not isinstance(e, ParamChoice)]
            got_params = [e for e in probe.events if isinstance(e, ParamChoice)]
            if got_params == params and len(got) <= len(steps):
                tail = got
    except EngineError:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = list(events)
    for c in range(1, len(model.cta_procs)):
        out += [_to_cta(model, e, c) for e in tail]
    level = len([e for e in out if not isinstance(e, ParamChoice)])  # the kernel's deadlock depth
    tmp = tempfile.mkdtemp(prefix="warpspin-", dir=workdir)
    try:
        first = _check_in(tmp, model, model.text_ignoring_deadlocks, max(10.0, timeout_s),
                          memory_mb, "bfs",
                          res.depth + level - len(steps), vector_size, opt, collapse,
                          extra_args=["-E"])
        got = [e for e in first.events if not isinstance(e, ParamChoice)]
        if first.kind not in (None, "deadlock", REDUCTION_UNSOUND) and len(got) - 1 < level:
            return first.events, first.kind
    except EngineError:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out, res.kind


def _to_cta(model, ev, cta: int):
    """An event of CTA 0 (in the original kernel's process numbering) as the same event of
    CTA `cta`."""
    if isinstance(ev, Take):  # the counter is one for the grid
        return ev
    j = model.cta_procs[0].index(ev.process)
    if isinstance(ev, Step):
        return Step(model.cta_procs[cta][j], ev.instance, ev.pc)
    return Complete(model.cta_procs[cta][j], ev.pc, cta, ev.index)


def _run(cmd, cwd, timeout, what) -> subprocess.CompletedProcess:
    """Run `cmd` in a process group of its own: a time limit or Ctrl-C stops all of it (gcc's
    cc1 and as too, not only the driver)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        if REPORTER.get() is not None and what.startswith("gcc"):
            _wait_reporting(p, timeout)
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        raise EngineTimeout(f"{what} did not finish within the {timeout:.0f} s left of the "
                            "time limit") from None
    except BaseException:
        kill_group(p)
        raise
    if p.returncode != 0:
        raise EngineError(f"{what} failed ({p.returncode}):\n{out}\n{err}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def compile_pan(tmp: str, flags: list[str], exe: str, timeout: float) -> None:
    """gcc pan.c -> `exe`, or the executable an earlier compile of the same text with the same
    flags and compiler made (pan_cache.py)."""
    key = cache_key(tmp, [CC, *flags])
    if fetch(key, os.path.join(tmp, exe)):
        return
    _run([CC, *flags, "-o", exe, "pan.c"], tmp, timeout, "gcc pan.c")
    store(key, os.path.join(tmp, exe))


def _wait_reporting(p, timeout: float) -> None:
    """Wait for the compiler, telling the terminal each second that it still runs (the output
    is small: its pipes cannot fill). Raises TimeoutExpired past `timeout`."""
    tick, t0 = Ticker(), time.monotonic()
    while p.poll() is None:
        if time.monotonic() - t0 > timeout:
            raise subprocess.TimeoutExpired(p.args, timeout)
        tick(lambda s: Progress(seconds=s, phase="compiling"))
        time.sleep(0.1)


def hash_bits(memory_mb: int) -> int:
    """pan -w: 2^w 8-byte slots, at most an eighth of the memory limit and at most 128 MB (pan's
    default: a larger table costs time to clear on small models; chaining resolves conflicts)."""
    return max(12, min(24, int(math.log2(max(1, memory_mb) * 2**20 / 8 / 8))))


def _check_in(tmp, model, text, timeout_s, memory_mb, search, max_depth, vector_size, opt,
              collapse, params=None, extra_args=()) -> EngineResult:
    start = time.monotonic()
    if params is not None:  # fix the parameters to the values of a trail (probe runs)
        for p in params:
            text = fix_param(text, model, p)
    _spin_a(tmp, text, timeout_s)
    flags = _flags(opt, memory_mb, vector_size, collapse)
    if search == "bfs":
        flags.append("-DBFS")
    if search == "dfs-shortest":
        flags.append("-DREACH")
    compile_pan(tmp, flags, "pan", timeout_s)
    compile_s = time.monotonic() - start
    args = ["./pan", f"-w{hash_bits(memory_mb)}", f"-m{max_depth}", "-n", *extra_args]
    if search == "dfs-shortest":
        args.append("-i")
    out, timed_out, pan_s = _run_pan(args, tmp, max(1.0, timeout_s - compile_s))
    res = parse_pan(out)
    res.search, res.seconds, res.compile_seconds = search, pan_s, compile_s
    res.options = (f"SPIN {search}, exact state storage, {' '.join(flags[1:])} "
                   f"{' '.join(args[1:])}")
    if timed_out:
        res.truncated = _stopped(res.truncated, timed_out)
        res.complete = False
    if os.path.exists(os.path.join(tmp, "model.pml.trail")):
        replay = replay_trail(tmp, None, max(30.0, timeout_s))
        if replay is None:
            raise EngineTimeout("pan -r did not replay the trail it wrote within "
                                f"{max(30.0, timeout_s):.0f} s", searched=True)
        _take_trail(res, model, replay, res.pan_error)
    elif res.pan_error and not res.truncated:
        raise EngineError(f"pan reported an error but wrote no trail:\n{out}")
    return res


def _take_trail(res: EngineResult, model, replay: str, pan_error: str) -> None:
    res.trail_output = replay
    res.events, kind = parse_trail(replay, model)
    res.kind = kind or _pan_kind(pan_error)
    res.pan_error = pan_error
    res.complete = False
    if kind is None and pan_error and not any(w in pan_error for w in _COUNTEREXAMPLE):
        # pan stopped itself ("VECTORSZ too small ... aborting", a parallel core's abort) and
        # wrote a trail to where it stopped: no property failed there, so it is no
        # counterexample; the search is truncated (docs/semantics.md, "Trail protocol")
        res.events, res.kind = [], None
        res.truncated = res.truncated or ("aborted",)


def _spin_a(tmp, text, timeout_s) -> None:
    with open(os.path.join(tmp, "model.pml"), "w") as f:
        f.write(text)
    try:
        _run([SPIN, "-a", "model.pml"], tmp, timeout_s, "spin -a")
    except EngineError as e:
        if "merge requires more than" not in str(e):
            raise
        # SPIN's statement merging saves at most 256 values per merged sequence (a warp scan's
        # per-lane locals exceed it): the same transitions without merging (-o3)
        _run([SPIN, "-o3", "-a", "model.pml"], tmp, timeout_s, "spin -o3 -a")


def _flags(opt, memory_mb, vector_size, collapse) -> list[str]:
    flags = [opt, "-DSAFETY", "-DNOCLAIM", f"-DMEMLIM={int(memory_mb)}",
             f"-DVECTORSZ={int(vector_size)}", f"-DFREQ={PAN_FREQ}"]
    if collapse:
        flags.append("-DCOLLAPSE")
    return flags


def _check_portfolio(tmp, model, timeout_s, memory_mb, max_depth, vector_size, opt, collapse,
                     jobs, shorten_s) -> EngineResult:
    """The exhaustive BFS (on `cores` cores) and randomized hunts at once (portfolio.py). The
    hunts' pan compiles while the search runs. A parallel BFS's counterexample is re-derived
    (`_rederive`)."""
    start = time.monotonic()
    cores, hunts = split_jobs(jobs)
    _spin_a(tmp, model.text, timeout_s)
    ex_mb = max(EXHAUSTIVE_MIN_MB, memory_mb - hunts * HUNT_MB)
    ex_flags = _flags(opt, ex_mb, vector_size, collapse) + (
        ["-DBFS_PAR", "-DNO_TDH", f"-DNCORE={cores}"] if cores > 1 else ["-DBFS"])
    hunt_flags = [opt, "-DSAFETY", "-DNOCLAIM", "-DBITSTATE", "-DT_RAND", "-DP_RAND",
                  f"-DVECTORSZ={int(vector_size)}"]
    compile_pan(tmp, ex_flags, "pan_x", timeout_s)

    def build_hunt():  # its own process group: stopping it stops gcc's cc1 and as too
        return subprocess.Popen([CC, *hunt_flags, "-o", "pan_h", "pan.c"], cwd=tmp,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                start_new_session=True)
    compile_s = time.monotonic() - start
    ex_args = [f"-w{hash_bits(ex_mb)}", f"-m{max_depth}", "-n"]
    deadline = start + max(1.0, timeout_s)
    out, timed_out, pan_s, trail, first, hunt_runs = run_portfolio(
        tmp, os.path.join(tmp, "pan_x"), build_hunt, os.path.join(tmp, "pan_h"), ex_args, cores,
        hunts, deadline, shorten_s, max_depth, f"WS|V|{REDUCTION_UNSOUND}|",
        lambda out: parse_pan(out).complete)
    res = parse_pan(out)
    res.search, res.seconds, res.compile_seconds = "bfs", pan_s, compile_s
    res.cores, res.hunts = cores, hunt_runs
    res.options = (f"SPIN bfs{f' parallel on {cores} cores' if cores > 1 else ''}, exact state "
                   f"storage, {' '.join(ex_flags[1:])} {' '.join(ex_args)}; {hunts} bitstate "
                   f"hunt{'s' if hunts != 1 else ''} beside it ({hunt_runs} runs)")
    if timed_out:  # an interrupted parallel BFS prints no statistics: that is the time limit
        res.truncated = tuple(t for t in _stopped(res.truncated, timed_out) if t != "aborted")
        res.complete = False
    if trail is not None and not trail.replay:  # the parallel BFS's: re-derive it
        trail = _rederive(tmp, model, trail, jobs, deadline, shorten_s, memory_mb, vector_size,
                          opt, collapse, build_hunt, max_depth)
        if trail is None:  # not re-derived in time: no counterexample in hand, and no proof
            res.kind, res.pan_error, res.complete = None, "", False
            res.truncated = tuple(dict.fromkeys((*res.truncated, "timeout")))
    if trail is not None:
        _take_trail(res, model, trail.replay, trail.pan_error)
        res.found_by = trail.found_by
        res.found_depth = first.depth
        res.first_found_by, res.first_found_s = first.found_by, first.seconds
    elif res.pan_error and not res.truncated:
        raise EngineError(f"pan reported an error but wrote no trail:\n{out}")
    return res


def _rederive(tmp, model, trail, jobs, deadline, shorten_s, memory_mb, vector_size, opt,
              collapse, build_hunt, model_depth):
    """A replayable counterexample for the parallel BFS's, found at depth d: `jobs` hunts
    shortening their own trails towards d for up to `shorten_s` (portfolio.hunt_to_depth); if
    they find none, a one-core BFS bounded at d + 1 (the shortest; it costs what a one-core
    search to that depth costs)."""
    hunt_bin = os.path.join(tmp, "pan_h")
    if not os.path.exists(hunt_bin):
        b = build_hunt()
        b.wait()
    until = min(deadline, time.monotonic() + shorten_s)
    if os.path.exists(hunt_bin) and time.monotonic() < until:
        found = hunt_to_depth(tmp, hunt_bin, jobs, trail.depth, until, model_depth)
        if found is not None:
            return replace(found, found_by=f"{found.found_by} (re-deriving the trail the "
                           f"{trail.found_by} found at depth {trail.depth})")
    redo = os.path.join(tmp, "redo")
    os.makedirs(redo)
    try:
        again = _check_in(redo, model, model.text, max(10.0, deadline - time.monotonic()),
                          memory_mb, "bfs", trail.depth + 1, vector_size, opt, collapse)
    except EngineError:
        return None
    if again.kind is None:
        return None
    return replace(trail, replay=again.trail_output, pan_error=again.pan_error, depth=again.depth)


def _stopped(truncated: tuple[str, ...], why: str) -> tuple[str, ...]:
    """The truncations of a search stopped for `why` (pan's own "Interrupted" reads as the time
    limit; after Ctrl-C it is the interruption)."""
    return tuple(t for t in dict.fromkeys((*truncated, why))
                 if not (why == "interrupted" and t == "timeout"))


def _run_pan(args, cwd, timeout) -> tuple[str, str | None, float]:
    """Run pan; on timeout or Ctrl-C interrupt it (pan prints its statistics on SIGINT), then
    kill it. With a progress reporter (a terminal), its output goes to a file read about once a
    second for pan's progress lines. (output, why it was stopped: "timeout", "interrupted" or
    None, seconds)"""
    t0 = time.monotonic()
    report = REPORTER.get()
    path = os.path.join(cwd, "pan.out")
    with open(path, "w") as sink:
        p = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=sink if report else subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    why = None
    try:
        if report is None:
            out, _ = p.communicate(timeout=timeout)
            return out, None, time.monotonic() - t0
        while True:
            try:
                p.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if now - t0 >= timeout:
                    why = "timeout"
                    break
                progress = last_progress(_tail(path), now - t0)
                if progress is not None:
                    report(progress)
    except subprocess.TimeoutExpired:
        why = "timeout"
    except KeyboardInterrupt:
        why = "interrupted"
    if why is not None:
        p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    if report is not None:
        with open(path, errors="replace") as f:
            out = f.read()
    return out, why, time.monotonic() - t0


def _tail(path: str, size: int = 4096) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - size))
        return f.read().decode(errors="replace")


# ----------------------------------------------------------------------------- parsing

def _num(pattern: str, text: str, default=0.0) -> float:
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else default


# pan's words for a search that dropped states for lack of memory; the parallel BFS's come from
# the sum over its cores ("states lost", "Search incomplete"), since only core 0 prints the others
_STATES_LOST = ("reached -DMEMLIM bound", "out of memory", "states lost", "losing states",
                "Search incomplete", "hash table is full", "out of shared memory")
# a core of the parallel BFS that stopped the search for any reason but an error found elsewhere
# ("early termination") leaves it incomplete, and the other cores still print "errors: 0"
_PAR_STOP = re.compile(r"^(?:cpu\d+: )?stop \((?!early )(.*)\)$", re.M)
_PAR_ABORT = ("fork failed", "internal error", "aborting", "file system error")


def parse_pan(out: str) -> EngineResult:
    """Statistics, errors and truncations from pan's output."""
    truncated = []
    if "max search depth too small" in out:
        truncated.append("depth")
    if any(w in out for w in _STATES_LOST):
        truncated.append("memory")
    elif _PAR_STOP.search(out) or any(w in out for w in _PAR_ABORT):
        truncated.append("aborted")
    if "VECTORSZ" in out and "too small" in out:
        truncated.append("vector")
    if "Interrupted" in out:
        truncated.append("timeout")
    err = PAN_ERROR.search(out)
    pan_error = err.group(1).strip() if err else ""
    finished = "State-vector" in out
    if not finished and not truncated:
        truncated.append("aborted")
    return EngineResult(
        complete=finished and not truncated and not pan_error,
        kind=None, events=[], truncated=tuple(truncated),
        states=int(_num(r"^\s*([\d.e+]+) states, stored", out)),
        transitions=int(_num(r"^\s*([\d.e+]+) transitions", out)),
        depth=int(_num(r"depth reached (\d+)", out)),
        memory_mb=_num(r"^\s*([\d.]+)\s+total actual memory usage", out)
        or _num(r"^\s*([\d.]+)\s+total shared memory usage", out)
        + _num(r"^\s*([\d.]+)\s+total non-shared memory usage", out),
        state_vector=int(_num(r"State-vector (\d+) byte", out)),
        pan_output=out, pan_error=pan_error)


def _pan_kind(pan_error: str) -> str:
    if "invalid end state" in pan_error:
        return "deadlock"
    if "invalid array index" in pan_error:
        return "model-error"
    return "model-error" if pan_error else "deadlock"
