"""Bench: SPIN's multi-core modes against one core, on the models warpspin generates.

Two steps, so the search can run on a machine without the DSL (the 16-core H200 host):

    python bench/parallel.py export DIR [NAME ...]   # lower models, write DIR/<name>/model.pml + pan.*
    python3 bench/parallel.py run DIR --cores 15 --timeout 60 [--modes bfs bfs_par ...]
    python bench/parallel.py export-kernels DIR [NAME ...]    # the SyncIR kernels, pickled
    python3 bench/parallel.py check DIR --jobs 16 --timeout 120   # warpspin's own pipeline

`check` runs `warpspin.pipeline.check_kernel(kernel, jobs=N)` (the portfolio: exhaustive search
and bug hunts, replay, verdict) on each pickled kernel; it needs `spin` on PATH and gcc, not the
DSL.

`run` needs only gcc and python3 (no warpspin import): it compiles each model's pan.c once per
mode and prints one row per (model, mode): states, state-vector bytes, seconds, states/s, memory,
whether the search completed, and the speed-up against one-core BFS. Modes:

* `bfs`: one core, exact BFS (warpspin's default search).
* `bfs_par`: SPIN's parallel BFS (`-DBFS_PAR -DNO_TDH`: the shared hash table with chaining,
  exact; pan's default TDH table uses hash compaction, which is lossy).
* `bfs_par_tdh`: `-DBFS_PAR -DNO_HC`: the lock-free table with full states (exact), sized by -w.
* `ncore`: multi-core DFS (`-DNCORE=N`).
* `dfs`: one core, exact DFS.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

MODELS = ("ring16", "ring16_two_behind", "fa4.sm90.default_tile", "quack.softmax.cluster",
          "quack.gemm_sm90.persistent", "quack.gemm_sm90.pingpong", "quack.gemm_sm90.cluster2")


def _on_path() -> None:
    """warpspin's sources and the test catalog, importable without installing."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in ("tests", "src"):
        if os.path.join(here, "..", d) not in sys.path:
            sys.path.insert(0, os.path.join(here, "..", d))


def _kernels(names):
    """(name, SyncIR kernel) per model name: the bench rings or catalog entries, extracted."""
    _on_path()
    from warpspin.syncir.protocols import ring
    for name in names:
        if name.startswith("ring16"):
            kern = ring(stages=4, trips=64, consumers=16,
                        bug="two-behind" if name.endswith("two_behind") else None)
        else:
            from fixtures import catalog as C
            kern = C.extracted(name)
        yield name, kern
        print(name, sum(p.instances for p in kern.processes), "processes", flush=True)


def export(out_dir: str, names) -> None:
    _on_path()
    from warpspin.lower import lower
    for name, kern in _kernels(names):
        model = lower(kern, reduce=True, fuse=True)
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.pml"), "w") as f:
            f.write(model.text)
        subprocess.run(["spin", "-a", "model.pml"], cwd=d, check=True, capture_output=True)


def export_kernels(out_dir: str, names) -> None:
    import pickle
    os.makedirs(out_dir, exist_ok=True)
    for name, kern in _kernels(names):
        with open(os.path.join(out_dir, name + ".pkl"), "wb") as f:
            pickle.dump(kern, f)


def check_kernels(kernel_dir, jobs_list, timeout, memory_mb, only=()) -> int:
    import pickle
    _on_path()
    from warpspin.pipeline import check_kernel
    print("| kernel | processes | jobs | cores | hunts | states | state-vector bytes | check s | "
          "MB | verdict | found by |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for fn in sorted(os.listdir(kernel_dir)):
        name = fn[:-4]
        if not fn.endswith(".pkl") or (only and name not in only):
            continue
        with open(os.path.join(kernel_dir, fn), "rb") as f:
            kern = pickle.load(f)
        for jobs in jobs_list:
            r = check_kernel(kern, timeout_s=timeout, memory_mb=memory_mb, jobs=jobs)
            s = r.stats
            verdict = r.verdict.upper() + (f" ({r.violations[0].kind})" if r.violations else "")
            if r.verdict == "inconclusive":
                verdict += " (" + "; ".join(r.reasons)[:80] + ")"
            found = s.found_by and (s.first_found_by if s.first_found_by == s.found_by else
                                    f"{s.first_found_by} at {s.first_found_s:.1f} s, "
                                    f"shortened by the {s.found_by}")
            print(f"| {name} | {s.processes} | {jobs} | {s.cores} | {s.hunts} | {s.states:,} | "
                  f"{s.state_vector} | {s.seconds.get('check', 0):.1f} | {s.memory_mb:,.0f} | "
                  f"{verdict} | {found or ''} |", flush=True)
    return 0


FLAGS = {
    "bfs": ["-DBFS"],
    "dfs": [],
    "bfs_par": ["-DBFS_PAR", "-DNO_TDH"],
    "bfs_par_tdh": ["-DBFS_PAR", "-DNO_HC"],
    "ncore": [],   # -DNCORE added with the core count
}


def _num(pat, text):
    m = re.search(pat, text, re.M)
    return float(m.group(1)) if m else 0.0


def run_one(d, mode, cores, timeout, memory_mb) -> dict:
    flags = ["-O1", "-DSAFETY", "-DNOCLAIM", f"-DMEMLIM={memory_mb}", "-DVECTORSZ=4096",
             *FLAGS[mode]]
    if mode == "ncore":
        flags.append(f"-DNCORE={cores}")
    if mode.startswith("bfs_par"):
        flags.append(f"-DNCORE={cores}")
    exe = f"pan_{mode}"
    t0 = time.monotonic()
    subprocess.run(["gcc", *flags, "-o", exe, "pan.c"], cwd=d, check=True, capture_output=True)
    compile_s = time.monotonic() - t0
    args = [f"./{exe}", "-m1000000", "-n", "-w24"]
    if mode.startswith("bfs_par"):
        args.append(f"-u{cores}")
    if mode == "bfs_par_tdh":
        args[-2] = "-w22"
    t0 = time.monotonic()
    p = subprocess.Popen(args, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 2)
        try:
            out, _ = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            out, _ = p.communicate()
        timed_out = True
    secs = time.monotonic() - t0
    for f in os.listdir(d):
        if f.endswith(".trail"):
            os.remove(os.path.join(d, f))
    lost = any(w in out for w in ("Search incomplete", "states lost", "losing states",
                                  "hash table is full", "reached -DMEMLIM", "out of memory"))
    err = re.search(r"^pan:\d+:\s*(.*)$", out, re.M)
    states = _num(r"^\s*([\d.e+]+) states, stored", out)
    return {"mode": mode, "cores": cores if mode != "bfs" and mode != "dfs" else 1,
            "states": int(states), "vector": int(_num(r"State-vector (\d+) byte", out)),
            "seconds": round(secs, 2), "compile_s": round(compile_s, 2),
            "rate": int(states / secs) if secs > 0 else 0,
            "mb": _num(r"^\s*([\d.]+)\s+total actual memory usage", out)
            or _num(r"^\s*([\d.]+)\s+total shared memory usage", out),
            "error": err.group(1).strip() if err else "",
            "complete": not timed_out and not lost and "State-vector" in out and not err,
            "timed_out": timed_out, "lost": lost, "tail": out[-600:]}


def run(model_dir, modes, cores, timeout, memory_mb, out_json=None, only=()) -> int:
    rows = []
    print("| model | mode | cores | states | state-vector bytes | s | states/s | MB | result | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in sorted(os.listdir(model_dir)):
        d = os.path.join(model_dir, name)
        if not os.path.exists(os.path.join(d, "pan.c")) or (only and name not in only):
            continue
        base = None
        for mode in modes:
            r = run_one(d, mode, cores, timeout, memory_mb)
            r["model"] = name
            rows.append(r)
            result = ("complete" if r["complete"] else r["error"] or
                      ("timeout" if r["timed_out"] else "incomplete (states lost)" if r["lost"]
                       else "incomplete"))
            if mode == "bfs":
                base = r
            speed = (f"{base['seconds'] / r['seconds']:.1f}x" if base and base["complete"]
                     and r["complete"] and r["seconds"] else "")
            print(f"| {name} | {mode} | {r['cores']} | {r['states']:,} | {r['vector']} | "
                  f"{r['seconds']} | {r['rate']:,} | {r['mb']:.0f} | {result} | {speed} |",
                  flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir")
    e.add_argument("names", nargs="*", default=list(MODELS))
    ek = sub.add_parser("export-kernels")
    ek.add_argument("dir")
    ek.add_argument("names", nargs="*", default=list(MODELS))
    ck = sub.add_parser("check")
    ck.add_argument("dir")
    ck.add_argument("--jobs", type=int, nargs="+", default=[os.cpu_count() or 1])
    ck.add_argument("--timeout", type=float, default=120)
    ck.add_argument("--memory", type=int, default=4096)
    ck.add_argument("--only", nargs="*", default=[])
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--modes", nargs="+", default=["bfs", "bfs_par", "ncore"])
    r.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    r.add_argument("--timeout", type=float, default=60)
    r.add_argument("--memory", type=int, default=4096)
    r.add_argument("--json")
    r.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args(argv)
    if a.cmd == "export":
        export(a.dir, a.names or MODELS)
        return 0
    if a.cmd == "export-kernels":
        export_kernels(a.dir, a.names or MODELS)
        return 0
    if a.cmd == "check":
        return check_kernels(a.dir, a.jobs, a.timeout, a.memory, a.only)
    if shutil.which("gcc") is None:
        print("gcc is needed", file=sys.stderr)
        return 2
    return run(a.dir, a.modes, a.cores, a.timeout, a.memory, a.json, a.only)


if __name__ == "__main__":
    sys.exit(main())
