"""Bench: what the generated model costs before the search starts. For medium kernels
`spin -a` and gcc take longer than the search itself, so the size of the Promela text matters.

    python bench/compile.py [NAME ...]       # catalog kernels (needs the DSL) or ring16

One row per kernel: processes, Promela bytes, pan.c bytes, seconds of `spin -a`, of gcc (the
engine's own choice of -O0/-O1) and of the search (one core, BFS, at most 4 GiB and 120 s),
states, transitions (-1: the search did not finish). Seconds
are this machine's; nothing here asserts on them. States and transitions show that a change of
the text is the same transition system.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = ("ring16", "quack.gemm_sm90", "quack.gemm_sm90.persistent", "fa4.sm90",
           "fa4.sm90.causal", "quack.softmax.cluster")


def _kernel(name: str):
    if name == "ring16":
        from warpspin.syncir.protocols import ring
        return ring(stages=4, trips=64, consumers=16)
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from fixtures import catalog as C
    return C.extracted(name)


def _stat(out: str, word: str) -> int:
    for line in out.splitlines():
        if line.strip().endswith(word):
            return int(line.split()[0])
    return -1


def main(names) -> int:
    from warpspin.engine.spin import _default_opt
    from warpspin.lower import lower
    head = ("kernel", "processes", "Promela bytes", "pan.c bytes", "spin -a s", "gcc", "gcc s",
            "search s", "states", "transitions")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in names:
        kern = _kernel(name)
        model = lower(kern)
        opt = _default_opt(model)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "m.pml"), "w") as f:
                f.write(model.text)
            t = time.time()
            subprocess.run(["spin", "-a", "m.pml"], cwd=d, capture_output=True, check=True)
            t_spin = time.time() - t
            t = time.time()
            subprocess.run(["gcc", opt, "-DBFS", "-DSAFETY", "-DVECTORSZ=65536", "-DMEMLIM=4096",
                            "-w", "-o", "pan", "pan.c"], cwd=d, capture_output=True, check=True)
            t_gcc = time.time() - t
            t = time.time()
            try:  # the search: at most 4 GiB and 120 s (its statistics then say how far it got)
                out = subprocess.run(["./pan", "-m100000", "-w24"], cwd=d, capture_output=True,
                                     text=True, timeout=120).stdout
            except subprocess.TimeoutExpired as e:
                out = e.stdout or ""
                out = out.decode() if isinstance(out, bytes) else out
            t_pan = time.time() - t
            pan_c = os.path.getsize(os.path.join(d, "pan.c"))
        states = _stat(out, "states, stored")
        transitions = _stat(out, "transitions (= stored+matched)")
        row = (name, sum(p.instances for p in kern.processes), f"{len(model.text):,}",
               f"{pan_c:,}", f"{t_spin:.1f}", opt, f"{t_gcc:.1f}", f"{t_pan:.1f}",
               f"{states:,}", f"{transitions:,}")
        print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or DEFAULT))
