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
from dataclasses import dataclass, field

from ..lower.promela import LoweredModel
from ..syncir.trace import Complete, Event, ParamChoice, Step

SPIN = shutil.which("spin") or "/usr/bin/spin"
CC = shutil.which("gcc") or "gcc"


class EngineError(Exception):
    """SPIN or the C compiler failed on a model (a lowering bug, not a verdict)."""


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

    options: str = ""              # how pan ran, for reports

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
          vector_size: int = 4096, opt: str = "-O1", keep: bool = False) -> EngineResult:
    """Model-check `model`. `search`: "bfs" (shortest counterexample, the default), "dfs", or
    "dfs-shortest" (DFS with pan -i: iteratively shortened counterexample)."""
    if search not in ("bfs", "dfs", "dfs-shortest"):
        raise ValueError(f"unknown search {search!r}")
    tmp = tempfile.mkdtemp(prefix="warpspin-", dir=workdir)
    try:
        return _check_in(tmp, model, timeout_s, memory_mb, search, max_depth, vector_size, opt)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(cmd, cwd, timeout, what) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EngineError(f"{what} timed out after {timeout:.0f} s") from None
    if r.returncode != 0:
        raise EngineError(f"{what} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def hash_bits(memory_mb: int) -> int:
    """pan -w: 2^w 8-byte slots, at most an eighth of the memory limit and at most 128 MB (pan's
    default: a larger table costs time to clear on small models; chaining resolves conflicts)."""
    return max(12, min(24, int(math.log2(max(1, memory_mb) * 2**20 / 8 / 8))))


def _check_in(tmp, model, timeout_s, memory_mb, search, max_depth, vector_size, opt) -> EngineResult:
    start = time.monotonic()
    pml = os.path.join(tmp, "model.pml")
    with open(pml, "w") as f:
        f.write(model.text)
    _run([SPIN, "-a", "model.pml"], tmp, timeout_s, "spin -a")
    flags = [opt, "-DSAFETY", "-DNOCLAIM", f"-DMEMLIM={int(memory_mb)}",
             f"-DVECTORSZ={int(vector_size)}"]
    if search == "bfs":
        flags.append("-DBFS")
    if search == "dfs-shortest":
        flags.append("-DREACH")
    _run([CC, *flags, "-o", "pan", "pan.c"], tmp, timeout_s, "gcc pan.c")
    compile_s = time.monotonic() - start
    args = ["./pan", f"-w{hash_bits(memory_mb)}", f"-m{max_depth}", "-n"]
    if search == "dfs-shortest":
        args.append("-i")
    out, timed_out, pan_s = _run_pan(args, tmp, max(1.0, timeout_s - compile_s))
    res = parse_pan(out)
    res.search, res.seconds, res.compile_seconds = search, pan_s, compile_s
    res.options = (f"SPIN {search}, exact state storage, {' '.join(flags[1:])} "
                   f"{' '.join(args[1:])}")
    if timed_out:
        res.truncated = tuple(dict.fromkeys((*res.truncated, "timeout")))
        res.complete = False
    if os.path.exists(os.path.join(tmp, "model.pml.trail")):
        # pan replays its own trail (-r), running the model's embedded C and printing WS| lines
        r = subprocess.run(["./pan", "-r", "-n"], cwd=tmp, capture_output=True,
                           text=True, timeout=max(30.0, timeout_s))
        res.trail_output = r.stdout
        res.events, kind = parse_trail(r.stdout, model)
        res.kind = kind or _pan_kind(res.pan_error)
        res.complete = False
    elif res.pan_error and not res.truncated:
        raise EngineError(f"pan reported an error but wrote no trail:\n{out}")
    return res


def _run_pan(args, cwd, timeout) -> tuple[str, bool, float]:
    """Run pan; on timeout interrupt it (pan prints its statistics on SIGINT), then kill it."""
    t0 = time.monotonic()
    p = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return out, False, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        return out, True, time.monotonic() - t0


# ----------------------------------------------------------------------------- parsing

def _num(pattern: str, text: str, default=0.0) -> float:
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else default


def parse_pan(out: str) -> EngineResult:
    """Statistics, errors and truncations from pan's output."""
    truncated = []
    if "max search depth too small" in out:
        truncated.append("depth")
    if "reached -DMEMLIM bound" in out or "out of memory" in out:
        truncated.append("memory")
    if "VECTORSZ" in out and "too small" in out:
        truncated.append("vector")
    if "Interrupted" in out:
        truncated.append("timeout")
    err = re.search(r"^pan:\d+:\s*(.*)$", out, re.M)
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
        memory_mb=_num(r"^\s*([\d.]+)\s+total actual memory usage", out),
        state_vector=int(_num(r"State-vector (\d+) byte", out)),
        pan_output=out, pan_error=pan_error)


def _pan_kind(pan_error: str) -> str:
    if "invalid end state" in pan_error:
        return "deadlock"
    if "invalid array index" in pan_error:
        return "model-error"
    return "model-error" if pan_error else "deadlock"


def parse_trail(text: str, model: LoweredModel) -> tuple[list[Event], str | None]:
    """The WS|... lines printed by `spin -t` -> (trace events, kind of the last WS|V line).
    Without a WS|V line the kind is None (SPIN's own error decides: an invalid end state is a
    deadlock). Processes in the symmetric encoding print record positions (`WS|s`) and record
    moves (`WS|M|<process>|<from>|<to>`); following the moves gives each step's instance."""
    events: list[Event] = []
    kind = None
    who = {pi: list(range(model.kernel.processes[pi].instances)) for pi in model.symmetric}
    for line in text.splitlines():
        at = line.find("WS|")
        if at < 0:
            continue
        f = line[at:].strip().split("|")
        tag, args = f[1], f[2:]
        if tag == "P":
            events.append(ParamChoice(args[0], int(args[1])))
        elif tag == "S":
            events.append(Step(*map(int, args[:3])))
        elif tag == "s":
            pi, slot, pc = map(int, args[:3])
            events.append(Step(pi, who[pi][slot], pc))
        elif tag == "M":
            pi, src, dst = map(int, args[:3])
            who[pi].insert(dst, who[pi].pop(src))
        elif tag == "C":
            events.append(Complete(*map(int, args[:4])))
        elif tag == "V":
            kind = args[0]
    return events, kind
