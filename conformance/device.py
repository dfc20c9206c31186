"""Run the litmus kernels on a GPU, each in its own child process, and write what each did.

    # on the GPU machine (DSL from .dslbundle), from the repository root:
    python -m conformance.device conformance/results.json [--hang S] [--jobs N] [--only A,B]

Each child imports the suite, compiles one litmus, says so on stdout and waits for a go; up to
`--jobs` children compile at once, but only one at a time is let go to launch, so no two kernels
share the GPU.  The hang watchdog (`--hang` seconds, 5 by default) starts at the go: a child
still running then is killed and the litmus "hangs".  Otherwise the child launches the kernel
`launches` times and prints the probe words after each launch.  The file records the date, the
GPU, the driver and the DSL version with the rows.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILED = "@@litmus: compiled"
VALUES = "@@litmus: values "


class GatedChild:
    """A child process that compiles, prints `ready` when it may launch, and waits for a line on
    stdin; its other output is collected by a thread."""

    def __init__(self, argv: list[str], ready: str = COMPILED):
        self.out: list[str] = []
        self.ready_line = ready
        self.ready = threading.Event()
        self.t0 = time.time()
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
            [ROOT, os.path.join(ROOT, "src"), os.path.join(ROOT, "examples"),
             os.environ.get("PYTHONPATH", "")]))
        self.p = subprocess.Popen([sys.executable] + argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=env, cwd=ROOT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            if line.strip() == self.ready_line:
                self.ready.set()
            else:
                self.out.append(line)
        self.ready.set()  # exited (before or after compiling)

    def log(self) -> str:
        return "".join(self.out)[-1500:]

    def launch(self, hang: float) -> tuple[str, float | None]:
        """"not ready" (it exited or never compiled: killed, reaped), else `go_and_wait`."""
        if self.p.poll() is not None or not self.ready.is_set():
            if self.p.poll() is None:
                self.p.kill()
            self.p.wait()
            self.reader.join(5)
            return "not ready", None
        return self.go_and_wait(hang)

    def go_and_wait(self, hang: float) -> tuple[str, float]:
        """Let it launch; "exit <rc>" or "hang" (killed after `hang` seconds), and the seconds."""
        t1 = time.time()
        try:
            self.p.stdin.write("go\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            rc = self.p.wait(timeout=hang)
            what = f"exit {rc}"
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            what = "hang"
        self.reader.join(5)
        return what, round(time.time() - t1, 2)


def run_gated(children: list, start, finish, jobs: int, compile_timeout: float = 300.0):
    """Start `start(item)` children up to `jobs` ahead; `finish(item, child)` each in order, one at
    a time (so one kernel at a time is on the GPU)."""
    started, nxt = [], 0
    for i in range(len(children)):
        while nxt < len(children) and nxt < i + jobs:
            started.append(start(children[nxt]))
            nxt += 1
        c = started[i]
        c.ready.wait(compile_timeout)
        finish(children[i], c)


FAULT = re.compile(r"CUDA error: ([^\n]+)")


def classify(what: str, log: str) -> dict:
    """The outcome of one child: "hangs" (killed by the watchdog), "completes" (every launch
    returned), "faults" (a launch ended in a CUDA error: the kernel trapped; `fault` says which)
    or "error" (the harness failed: a broken litmus)."""
    if what == "hang":
        return {"outcome": "hangs", "log": log}
    if what == "exit 0":
        return {"outcome": "completes"}
    m = FAULT.search(log)
    if m:
        return {"outcome": "faults", "fault": m.group(1).strip(), "log": log}
    return {"outcome": "error", "log": log}


def gate_compile(ready: str = COMPILED) -> None:
    """In a child: `cute.compile` says `ready` after its first compile and waits for a line on
    stdin (the parent's go) before returning."""
    import cutlass.cute as cute

    class Gate:
        def __init__(self, orig):
            self.orig, self.gone = orig, False

        def __call__(self, *a, **kw):
            compiled = self.orig(*a, **kw)
            if not self.gone:
                self.gone = True
                print(ready, flush=True)
                sys.stdin.readline()
            return compiled

        def __getitem__(self, k):
            return self.orig[k]

        def __getattr__(self, k):
            return getattr(self.orig, k)

    cute.compile = Gate(cute.compile)


def child(name: str) -> int:
    from conformance.suite import by_name

    lit = by_name(name)
    gate_compile()
    lit.run_on_device(lambda words: print(VALUES + json.dumps(words), flush=True))
    return 0


def _environment() -> dict:
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "python": sys.version.split()[0]}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        name, driver, mem = [x.strip() for x in q.stdout.strip().splitlines()[0].split(",")]
        env.update(gpu=name, driver=driver, gpu_memory=mem)
    except Exception as e:  # recorded, not fatal: the rows still say what happened
        env["gpu"] = f"unknown ({e})"
    try:
        from importlib.metadata import version
        env["dsl"] = "nvidia-cutlass-dsl " + version("nvidia-cutlass-dsl")
    except Exception:
        env["dsl"] = "unknown"
    try:
        import torch
        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
    except Exception:
        pass
    env["arch"] = os.environ.get("CUTE_DSL_ARCH", "")
    return env


def device(out: str, hang: float = 5.0, jobs: int = 6, only: list[str] | None = None) -> int:
    from conformance.suite import ALL

    arch = os.environ.get("CUTE_DSL_ARCH", "sm_90a")
    names = [c.__name__ for c in ALL if (not only or c.__name__ in only) and c.arch == arch]
    doc = {"environment": _environment(), "hang_seconds": hang, "litmus": {}}
    here = os.path.abspath(__file__)

    def start(name):
        return GatedChild([here, "child", name])

    def finish(name, c: GatedChild):
        compile_s = round(time.time() - c.t0, 1)
        what, secs = c.launch(hang)
        if what == "not ready":
            row = {"outcome": "error before launch", "log": c.log()}
        else:
            values = [json.loads(l[len(VALUES):]) for l in c.out if l.startswith(VALUES)]
            distinct = sorted({tuple(v) for v in values})
            row = classify(what, c.log())
            row.update(launches_returned=len(values), values=[list(v) for v in distinct],
                       seconds=secs)
        row["compile_seconds"] = compile_s
        doc["litmus"][name] = row
        print(f"{name}: {row['outcome']} {row.get('values', '')} ({row.get('seconds')} s)", flush=True)
        with open(out, "w") as f:  # after every litmus: a run cut short keeps its rows
            json.dump(doc, f, indent=1)

    run_gated(names, start, finish, jobs)
    return 0


def _main(argv: list[str]) -> int:
    if argv[0] == "child":
        return child(argv[1])
    opts = {"--hang": 5.0, "--jobs": 6, "--only": ""}
    rest = argv[1:]
    while rest:
        k, v, rest = rest[0], rest[1], rest[2:]
        opts[k] = type(opts[k])(v)
    return device(argv[0], hang=opts["--hang"], jobs=opts["--jobs"],
                  only=[x for x in opts["--only"].split(",") if x] or None)


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(_main(sys.argv[1:]))
