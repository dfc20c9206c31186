"""Run an example variant on a GPU in a child process, with a watchdog for hangs."""
from __future__ import annotations

import os
import subprocess
import sys


def count_wrong(name: str, compiled, args, out, ref, repeats: int) -> None:
    """Launch `compiled(*args)` `repeats` times, each into a zeroed `out`, and count the launches
    whose result differs from `ref`; raise if any did (a race need not show on every run)."""
    import torch

    wrong = 0
    for _ in range(repeats):
        out.zero_()
        compiled(*args)
        torch.cuda.synchronize()
        wrong += int((out - ref).abs().max().item() > 1e-3)
    print(f"{name}: {wrong} of {repeats} runs wrong")
    if wrong:
        raise SystemExit(f"{name}: WRONG RESULT in {wrong} of {repeats} runs")


def run_with_watchdog(script: str, variant: str, timeout: float = 20.0) -> int:
    """0: ran and the result was right; 1: wrong result or error; 2: hung (killed)."""
    cmd = [sys.executable, script, "--child", variant]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(script))), os.environ.get("PYTHONPATH", "")]))
    try:
        p = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True, env=env)
    except subprocess.TimeoutExpired as e:
        print(f"{variant}: HANG (no exit after {timeout:.0f}s)")
        out = (e.stdout or b"") if isinstance(e.stdout, bytes) else (e.stdout or "")
        if out:
            print(out if isinstance(out, str) else out.decode(errors="replace"))
        return 2
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        sys.stdout.write(p.stderr[-4000:])
        print(f"{variant}: FAILED (exit {p.returncode})")
        return 1
    print(f"{variant}: OK")
    return 0


def example_main(script: str, variants: dict, run_on_device, argv: list[str]) -> int:
    """The command line every example shares:
    `--run VARIANT [TIMEOUT]` runs it on the GPU under a watchdog, `--child VARIANT` is that run's
    child process, and no argument traces every variant on the CPU."""
    if len(argv) >= 2 and argv[0] == "--run":
        return run_with_watchdog(script, argv[1], timeout=float(argv[2]) if len(argv) > 2 else 20)
    if len(argv) >= 2 and argv[0] == "--child":
        run_on_device(argv[1])
        return 0
    from warpspin.frontend import trace

    for name, make in variants.items():
        fn, args = make()
        print(name, [(k.name[:40], k.block_dim, k.cluster_dim) for k in trace(fn, *args)])
    return 0
