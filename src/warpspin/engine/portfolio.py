"""A proof search and a bug hunt at once (docs/spin.md, "Portfolio").

One exhaustive search (pan's breadth-first search: on one core, or SPIN's parallel BFS,
`-DBFS_PAR`, on several) runs beside randomized bug hunts: pan compiled with `-DBITSTATE
-DT_RAND -DP_RAND`, each run with its own seed (`-RS`) and bitstate size (`-w`), a slice of time
each, the way SPIN's swarm verification varies its runs. Only the exhaustive search can make a
result complete; a hunt never does.

The first violation found by either stops nothing at once: it is shortened. The exhaustive BFS
keeps going (it reaches every state up to the hunt's depth, so it finds a counterexample at most
that long, and the shortest), and the hunts restart bounded below the best depth found. When the
BFS reports its error, or the shortening budget is spent, the shortest trail in hand is the
result; `EngineResult.found_by` says which search found it.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

from .progress import Ticker, last_progress


HUNT_BITS = (22, 24, 26, 27)     # pan -w per hunt run, cycled (2^w bits: 0.5 to 16 MB)
HUNT_SLICE_S = (2.0, 5.0, 15.0)  # a hunt run's time, cycled: short runs first, then longer ones
HUNT_AFTER_S = 1.0               # hunts start when the exhaustive search has not ended by then
HUNT_MB = 96                     # a hunt's memory: its bit array and its depth-first stack
EXHAUSTIVE_MIN_MB = 256          # the exhaustive search's memory beside the hunts, at least


@dataclass
class Trail:
    """A counterexample pan wrote: how deep, pan's error line, and what `pan -r` printed."""
    depth: int
    pan_error: str
    replay: str          # "" when the trail must be re-derived (a parallel BFS's: see below)
    found_by: str
    seconds: float       # since the portfolio started


@dataclass
class _Run:
    name: str
    cwd: str
    proc: subprocess.Popen
    limit: float         # monotonic deadline of this run

    def output(self) -> str:
        with open(os.path.join(self.cwd, "out.txt"), errors="replace") as f:
            return f.read()

    def tail(self, size: int = 4096) -> str:
        with open(os.path.join(self.cwd, "out.txt"), "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - size))
            return f.read().decode(errors="replace")


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def split_jobs(jobs: int) -> tuple[int, int]:
    """(cores of the exhaustive search, hunts running beside it). One job: the exhaustive search
    alone. Two or three: one core for the search, the rest hunt. More: a quarter hunt, the rest
    search in parallel (docs/spin.md has the measurements this split comes from)."""
    if jobs <= 1:
        return 1, 0
    if jobs <= 3:
        return 1, jobs - 1
    hunts = max(1, jobs // 4)
    return jobs - hunts, hunts


_DEPTH = re.compile(r"at depth (\d+)")
# pan's own errors that end a counterexample when no WS|V line names a property: a deadlock, the
# probe's assert(false) (engine._other_ctas), an array index outside its bounds (a lowering bug).
# Any other error with a trail is pan stopping itself ("VECTORSZ too small ... aborting").
COUNTEREXAMPLE = ("invalid end state", "assertion violated", "invalid array index")
# pan's error line; parallel BFS prefixes it with the core ("cpu01: pan:1: ...")
PAN_ERROR = re.compile(r"^(?:cpu\d+: )?pan:\d+:\s*(.*)$", re.M)


def _start(name, tmp, binary, args, limit) -> _Run:
    """pan in a directory of its own (its trail file is named after the model), writing to a
    file (a pipe would fill up and stop a long search)."""
    cwd = os.path.join(tmp, re.sub(r"\W+", "_", name))
    os.makedirs(cwd)
    os.symlink(binary, os.path.join(cwd, "pan"))
    with open(os.path.join(cwd, "out.txt"), "w") as out:
        proc = subprocess.Popen(["./pan", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return _Run(name, cwd, proc, limit)


def _hunt(tmp, hunt_bin, seed: int, turn: int, depth: int, until: float) -> _Run:
    """One hunt run: seed `seed`, its bitstate size by seed, its time slice by how many times
    the hunts have been relaunched (`turn`), bounded at `depth`, stopped at `until` at latest."""
    bits = HUNT_BITS[(seed - 1) % len(HUNT_BITS)]
    slice_s = HUNT_SLICE_S[turn % len(HUNT_SLICE_S)]
    return _start(f"hunt (seed {seed}, -w{bits})", tmp, hunt_bin,
                  [f"-RS{seed}", f"-w{bits}", f"-m{depth}", "-n"],
                  min(time.monotonic() + slice_s, until))


def _stop(run: _Run) -> str:
    """Interrupt a run (pan prints its statistics on SIGINT), then kill it; its output."""
    if run.proc.poll() is None:
        try:
            os.killpg(run.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            run.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(run.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            run.proc.wait()
    return run.output()


def _trail_of(run: _Run, out: str, started: float, replayable: bool) -> Trail | None:
    """The trail a run wrote, replayed by `pan -r`. A parallel BFS's trail file
    (model.pml_<exe>_<pid>.trail) is not replayed: measured with SPIN 6.5.2, its last step can be
    a different transition than the one that failed, so the caller re-derives it."""
    trails = [f for f in os.listdir(run.cwd) if f.endswith(".trail")]
    if not trails:
        return None
    err = PAN_ERROR.search(out)
    pan_error = err.group(1).strip() if err else ""
    if not any(w in pan_error for w in COUNTEREXAMPLE):
        return None  # pan stopped itself: its trail is no counterexample
    depth = _DEPTH.search(pan_error)
    replay = replay_trail(run.cwd, trails[0], 120.0) if replayable else ""
    os.rename(os.path.join(run.cwd, trails[0]), os.path.join(run.cwd, "seen.trail-done"))
    if replayable and (replay is None or not _replay_shows(pan_error, replay)):
        return None  # a trail cut short (the run stopped while writing it) or a replay past its time
    return Trail(int(depth.group(1)) if depth else 1 << 30, pan_error, replay, run.name,
                 time.monotonic() - started)


def _replay_shows(pan_error: str, replay: str) -> bool:
    """Whether `pan -r` reached the error pan reported, as far as its output shows: every
    `assert(false)` of a lowered model follows a WS|V, WS|X or WS|T line."""
    if "assertion violated" in pan_error:
        return any(tag in replay for tag in ("WS|V|", "WS|X", "WS|T"))
    return True


def replay_trail(cwd: str, trail: str | None, timeout: float) -> str | None:
    """What `pan -r` prints replaying a trail (the model's embedded C prints its WS| lines), or
    None when it did not finish within `timeout` (its process group is stopped)."""
    p = subprocess.Popen(["./pan", "-r", *([trail] if trail else []), "-n"], cwd=cwd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        return p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        kill_group(p)
        p.communicate()
        return None
    except BaseException:
        kill_group(p)
        raise


def run_portfolio(tmp: str, exhaustive_bin: str, build_hunt, hunt_bin: str,
                  exhaustive_args: list[str], cores: int, hunts: int, deadline: float,
                  shorten_s: float, max_depth: int, unsound_kind: str, searched_all):
    """Run the exhaustive search, and `hunts` hunts once it has run HUNT_AFTER_S seconds
    (`build_hunt()` starts compiling them then: a model searched sooner needs no hunt) until the
    exhaustive search ends (`searched_all(output)`: complete; if it stopped at a limit the hunts
    go on, for as long again as it ran), a shortened counterexample is in hand, or `deadline`.
    Ctrl-C stops every run as the deadline does. Returns (exhaustive output, why it was stopped:
    "timeout", "interrupted" or None, seconds, the shortest trail or None, the first trail
    found, hunt runs)."""
    started = time.monotonic()
    args = [*exhaustive_args] + ([f"-u{cores}"] if cores > 1 else [])
    ex = _start("exhaustive BFS" + (f" on {cores} cores" if cores > 1 else ""), tmp,
                exhaustive_bin, args, deadline)
    running: list[_Run] = []
    seed = 0
    best: Trail | None = None
    first: Trail | None = None
    shorten_until = deadline
    hunt_until = deadline
    ex_out, ex_timed_out = None, None

    def launch_hunt():
        nonlocal seed
        seed += 1
        depth = max_depth if best is None else best.depth - 1
        running.append(_hunt(tmp, hunt_bin, seed, (seed - 1) // hunts, depth,
                             min(shorten_until, hunt_until)))

    hunting = False
    hunt_build = None
    hunt_extra = 0.0
    tick = Ticker(start=started)
    try:
        while True:
            now = time.monotonic()
            if ex_out is None:
                tick(lambda s: last_progress(ex.tail(), s))
            if hunt_build is None and hunts and (now - started >= HUNT_AFTER_S
                                                 or ex_out is not None):
                hunt_build = build_hunt()
            if not hunting and hunt_build is not None and hunt_build.poll() is not None:
                hunting = hunt_build.returncode == 0   # a failed build leaves the search alone
                if hunting and hunt_extra:
                    hunt_until = min(deadline, now + hunt_extra)
                for _ in range(hunts if hunting else 0):
                    launch_hunt()
                hunts = hunts if hunting else 0
            if ex_out is None and ex.proc.poll() is not None:
                ex_out = ex.output()
                # a one-core BFS's trail is the shortest; a parallel BFS's must be re-derived, so
                # a hunt's trail at most as deep is kept instead; without one (a limit), any
                # hunt's trail stands
                found = _trail_of(ex, ex_out, started, cores == 1)
                if found is not None and (best is None or found.replay
                                          or found.depth < best.depth):
                    best = found
                first = first or best
                if best is not None or not hunts or searched_all(ex_out):
                    break
                # the search stopped at a limit with no counterexample: the hunts go on, for as
                # long again as the search ran, counted from when they run (within the deadline)
                hunt_extra = max(HUNT_AFTER_S, now - started)
                if hunting:
                    hunt_until = min(deadline, now + hunt_extra)
                    for run in running:
                        run.limit = min(run.limit, hunt_until)
            if ex_out is not None and best is None and (now >= hunt_until or not hunts):
                break
            if now >= deadline:
                if ex_out is None:
                    ex_out, ex_timed_out = _stop(ex), "timeout"
                break
            for run in list(running):
                if run.proc.poll() is None and now < run.limit:
                    continue
                out = _stop(run)
                running.remove(run)
                found = _trail_of(run, out, started, True)
                if found is not None and (best is None or found.depth < best.depth):
                    if best is None:
                        shorten_until = min(deadline, now + shorten_s)
                        first = found
                    best = found
                    if unsound_kind in found.replay:
                        # the fused model's monitor fired: the caller searches the unfused model
                        break
                if now < shorten_until and (ex_out is None or now < hunt_until
                                            or best is not None):
                    launch_hunt()
            if best is not None and (now >= shorten_until or unsound_kind in best.replay):
                if ex_out is None:
                    ex_out = _stop(ex)
                break
            time.sleep(0.02)
    except KeyboardInterrupt:  # Ctrl-C: what was searched so far is the result
        if ex_out is None:
            ex_out, ex_timed_out = _stop(ex), "interrupted"
    finally:  # also on an exception: no pan outlives the check
        if hunt_build is not None and hunt_build.poll() is None:
            kill_group(hunt_build)
        for r in running:
            _stop(r)
        if ex.proc.poll() is None:
            ex_out, ex_timed_out = _stop(ex), "timeout"
    return ex_out, ex_timed_out, time.monotonic() - started, best, first, seed


def kill_group(p: subprocess.Popen) -> None:
    """Stop `p`, started in a process group of its own, with every process of the group (gcc's
    cc1 and as, not only the driver), and reap it."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.communicate()


def hunt_to_depth(tmp: str, hunt_bin: str, n: int, depth: int, until: float,
                  max_depth: int) -> Trail | None:
    """`n` hunts at once to re-derive a parallel BFS's counterexample found at `depth`: first
    unbounded (a trail quickly), then each run bounded below the best trail so far, until one is
    no deeper than `depth` or `until`. The best trail found, or None. (Hunts bounded at `depth`
    from the start would each search the whole bounded space: as slow as the BFS.)"""
    started = time.monotonic()
    running: list[_Run] = []
    seed = 1000
    best: Trail | None = None

    def launch():
        nonlocal seed
        seed += 1
        bound = max_depth if best is None else best.depth - 1
        running.append(_hunt(tmp, hunt_bin, seed, (seed - 1001) // n, bound, until))

    for _ in range(n):
        launch()
    while time.monotonic() < until and (best is None or best.depth > depth):
        for run in list(running):
            if run.proc.poll() is None and time.monotonic() < run.limit:
                continue
            running.remove(run)
            found = _trail_of(run, _stop(run), started, True)
            if found is not None and (best is None or found.depth < best.depth):
                best = found
            launch()
        time.sleep(0.02)
    for r in running:
        _stop(r)
    return best
