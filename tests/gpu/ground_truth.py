"""Ground truth on a GPU: every example variant that warpspin calls deadlocked must hang there,
every verified one must run and give correct results. Not run by CI (needs an sm_90a GPU).

    # on the GPU machine (DSL from .dslbundle): run each variant in a child with a watchdog
    python tests/gpu/ground_truth.py device out.json
    # here (CPU, SPIN): warpspin's verdict per variant, side by side, as a markdown table
    python tests/gpu/ground_truth.py compare out.json > docs/ground-truth.md
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = ["hopper_pipeline.py", "raw_mbarrier.py", "hopper_multicast.py"]


def _variants(path: str) -> list[str]:
    spec = importlib.util.spec_from_file_location("gt_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    spec.loader.exec_module(mod)
    return list(getattr(mod, "VARIANTS", {}))


def device(out: str, timeout: float = 30.0) -> int:
    rows = []
    for ex in EXAMPLES:
        path = os.path.join(ROOT, "examples", ex)
        if not os.path.exists(path):
            continue
        for v in _variants(path):
            t0 = time.time()
            p = subprocess.run([sys.executable, path, "--run", v, str(timeout)], capture_output=True,
                               text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                   [ROOT + "/src", os.environ.get("PYTHONPATH", "")])))
            outcome = {0: "ran, correct", 1: "ran, wrong result or error", 2: "hang"}.get(p.returncode, f"exit {p.returncode}")
            rows.append({"example": ex, "variant": v, "outcome": outcome, "seconds": round(time.time() - t0, 1),
                         "log": (p.stdout + p.stderr)[-1500:]})
            print(f"{ex}:{v}: {outcome} ({rows[-1]['seconds']} s)", flush=True)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    return 0


def compare(path: str) -> int:
    from warpspin.api import CheckOptions, check_target
    rows = json.load(open(path))
    print("| example | variant | warpspin | where | on the H200 | agrees |")
    print("|---|---|---|---|---|---|")
    bad = 0
    from warpspin.demo import _module
    mods = {}
    for r in rows:
        target = f"examples/{r['example']}:{r['variant']}"
        mod = mods.setdefault(r["example"], _module(os.path.join(ROOT, "examples", r["example"])))
        params = getattr(mod, "PARAMS", {}).get(r["variant"], {})
        res = check_target(target, CheckOptions(timeout_s=300, params=params))[0]
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
                                                      "arrival-mismatch", "pending-at-exit")
        else:
            agrees = False
        bad += not agrees
        print(f"| {r['example']} | {r['variant']} | {got} | {where} | {hw} | {'yes' if agrees else 'NO'} |")
    return 1 if bad else 0


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    sys.exit(device(path) if mode == "device" else compare(path))
