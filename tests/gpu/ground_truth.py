"""Ground truth on a GPU: every example variant that warpspin calls deadlocked must hang there,
every verified one must run and give correct results. Not run by CI (needs an sm_90a GPU).

    # on the GPU machine (DSL from .dslbundle): run each variant in a child with a watchdog
    python tests/gpu/ground_truth.py device out.json [--hang S] [--jobs N] [--only FILE.py,...]
    # here (CPU, SPIN): warpspin's verdict per variant, side by side, as a markdown table
    python tests/gpu/ground_truth.py compare out.json > docs/ground-truth.md

How `device` runs a variant: one child process per variant calls the example's own
``run_on_device(variant)`` (what ``python examples/FILE.py --run VARIANT`` runs), with
``cute.compile`` wrapped so that the child reports when the kernel is compiled and then waits for
a go.  Up to ``--jobs`` children import and compile at the same time (CPU work), but only one at a
time is let go to launch on the GPU, so no two kernels share the GPU and a hung kernel cannot slow
down another.  The hang watchdog (``--hang`` seconds, 10 by default) starts at the go, so it
measures the launch and the check alone, not Python start-up and compilation.  A child that does
not exit within it is killed: outcome "hang".  Exit 0: "ran, correct"; any other exit (wrong
result, CUDA error): "ran, wrong result or error"; a failure before the kernel was compiled:
"error before launch".
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = ["hopper_pipeline.py", "raw_mbarrier.py", "hopper_multicast.py",
            "cluster_grouped_multicast.py", "st_async_lanes.py", "moe_counts.py",
            "persistent_scheduler.py", "dynamic_scheduler.py", "cluster_scheduler.py",
            "kgrouped_tensormap.py", "grouped_tensormaps.py", "epilogue_store.py", "cp_async_drain.py", "dsmem_handoff.py",
            "grid_flag.py", "cluster_lifetime.py", "jacobi_halo.py", "block_reduce.py",
            "wgmma_accumulator.py", "fused_moe.py", "varlen_batches.py"]
COMPILED = "@@ground_truth: compiled"


def _load(path: str):
    spec = importlib.util.spec_from_file_location("gt_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    spec.loader.exec_module(mod)
    return mod


def _variants(path: str) -> list[str]:
    return list(getattr(_load(path), "VARIANTS", {}))


def child(path: str, variant: str) -> int:
    """The child: run_on_device(variant), stopping once after the first compile until the parent
    says go (a line on stdin)."""
    sys.path.insert(0, ROOT)
    from conformance.device import gate_compile

    gate_compile(COMPILED)
    mod = _load(path)
    mod.run_on_device(variant)
    return 0


def device(out: str, hang: float = 10.0, jobs: int = 4, only: list[str] | None = None) -> int:
    sys.path.insert(0, ROOT)
    from conformance.device import GatedChild, run_gated

    todo = []
    for ex in EXAMPLES:
        path = os.path.join(ROOT, "examples", ex)
        if os.path.exists(path) and (not only or ex in only):
            todo += [(ex, v) for v in _variants(path)]
    rows = []

    def start(item):
        ex, variant = item
        return GatedChild([os.path.abspath(__file__), "child", os.path.join(ROOT, "examples", ex),
                           variant], ready=COMPILED)

    def finish(item, r: GatedChild):
        ex, variant = item
        compile_s = round(time.time() - r.t0, 1)
        # compile_seconds: from the child's start to its kernel being compiled (including the
        # time it waited for a CPU among the others); seconds: from the go to the exit or the kill
        row = {"example": ex, "variant": variant, "compile_seconds": compile_s}
        what, secs = r.launch(hang)
        if what == "not ready":
            row.update(outcome="error before launch", seconds=None, log=r.log())
        else:
            outcome = {"exit 0": "ran, correct", "hang": "hang"}.get(what, "ran, wrong result or error")
            log = r.log() + (f"{variant}: HANG (no exit {hang:.0f} s after launch)\n" if outcome == "hang" else "")
            row.update(outcome=outcome, seconds=secs, log=log)
        rows.append(row)
        print(f"{ex}:{variant}: {row['outcome']} (ready after {compile_s} s, run {row['seconds']} s)",
              flush=True)
        with open(out, "w") as f:  # after every variant: a run cut short still leaves its rows
            json.dump(rows, f, indent=1)

    run_gated(todo, start, finish, jobs)
    return 0


def compare(path: str) -> int:
    from warpspin.api import check_target
    rows = json.load(open(path))
    print("| example | variant | warpspin | where | on the H200 | agrees |")
    print("|---|---|---|---|---|---|")
    bad = 0
    from warpspin.demo import _module, example_options
    mods = {}
    for r in rows:
        target = f"examples/{r['example']}:{r['variant']}"
        mod = mods.setdefault(r["example"], _module(os.path.join(ROOT, "examples", r["example"])))
        res = check_target(target, example_options(mod, r["variant"], timeout_s=300))[0]
        got = res.violations[0].kind if res.violations else res.verdict
        where = ""
        if res.violations:
            loc = res.violations[0].locations[0]
            where = f"{os.path.basename(loc.file)}:{loc.line}"
        hw = r["outcome"]
        if got == "verified":
            agrees = hw == "ran, correct"
        elif got in ("deadlock", "arrival-mismatch", "tx-mismatch") and hw == "hang":
            agrees = True
        elif res.verdict == "violation":
            # races and aliasing need not hang: a wrong result or a hang both confirm a bug
            agrees = hw != "ran, correct" or got in ("parity-aliasing", "uninitialized-barrier",
                                                      "arrival-mismatch", "pending-at-exit", "race",
                                                      "tensormap-race", "proxy-race", "scope",
                                                      "cluster-lifetime")
        else:  # INCONCLUSIVE or UNSUPPORTED claims nothing the GPU could contradict
            agrees = None
        bad += agrees is False
        said = {True: "yes", False: "NO", None: "nothing claimed"}[agrees]
        print(f"| {r['example']} | {r['variant']} | {got} | {where} | {hw} | {said} |")
    return 1 if bad else 0


def _main(argv: list[str]) -> int:
    mode = argv[0]
    if mode == "child":
        return child(argv[1], argv[2])
    if mode == "compare":
        return compare(argv[1])
    opts = {"--hang": 10.0, "--jobs": 4, "--only": ""}
    rest = argv[2:]
    while rest:
        k, v, rest = rest[0], rest[1], rest[2:]
        opts[k] = type(opts[k])(v)
    return device(argv[1], hang=opts["--hang"], jobs=opts["--jobs"],
                  only=[x for x in opts["--only"].split(",") if x] or None)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
