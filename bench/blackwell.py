"""Bench: the Blackwell (sm_100a) kernels: the accumulator pipeline of a GEMM with its tensor
memory (examples/syncir_ring.py:umma_*, SyncIR), the DSL Blackwell GEMMs of
examples/blackwell_gemm.py and examples/blackwell_gemm_2cta.py (every variant, traced for
sm_100a; the 2-CTA one's correct protocol also with one tile of one k-tile) and, with --real, quack's SM100
GEMM and flash-attn-4's SM100 forward traced through the libraries' own compile
(docs/coverage.md's configurations; minutes each). The last table is bench/blackwell.md.

    python bench/blackwell.py [--real]

One row per kernel: processes, states, state-vector bytes, check seconds, memory, verdict (the
kind of a violation). Seconds are this machine's, one core; nothing here asserts on them.
"""
from __future__ import annotations

import os
import sys

from warpspin.api import CheckOptions, verify_kernel
from warpspin.report.result import Stats
from warpspin.syncir.protocols import UMMA_BUG_EXPECT, umma_acc

os.environ.setdefault("WARPSPIN_CACHE_DIR", "")  # cold compiles: what a first check costs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAD = ("kernel", "processes", "states", "state-vector bytes", "check s", "MB", "verdict")


def _row(name: str, r) -> tuple:
    s = r.stats
    verdict = r.verdict.upper() + (f" ({r.violations[0].kind})" if r.violations else "")
    return (name, s.processes, f"{s.states:,}", s.state_vector or "",
            f"{s.seconds.get('check', 0):.2f}", f"{s.memory_mb:.0f}" if s.memory_mb else "", verdict)


def rows(real: bool):
    opts = CheckOptions(jobs=1, timeout_s=1800, memory_mb=8192)
    for bug in (None, *UMMA_BUG_EXPECT):
        yield _row(f"umma_acc{'_' + bug if bug else ''}", verify_kernel(umma_acc(bug=bug), opts=opts))
    from warpspin.api import check_target
    from warpspin.demo import _module, example_options
    for example in ("blackwell_gemm", "blackwell_gemm_2cta"):
        path = os.path.join(ROOT, "examples", f"{example}.py")
        mod = _module(path)
        for name in mod.VARIANTS:
            opts_v = example_options(mod, name, jobs=1, timeout_s=1800, memory_mb=8192)
            yield _row(f"{example}:{name}", check_target(f"{path}:{name}", opts_v)[0])
    yield _row("blackwell_gemm_2cta:correct, 1 tile of 1 k-tile", _two_cta_one_tile())
    if real:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from fixtures import catalog as C
        for name in ("quack.gemm_sm100", "fa4.sm100"):
            yield _row(name, verify_kernel(C.extracted(name), opts=opts, stats=Stats()))


def _two_cta_one_tile():
    """The 2-CTA example's correct protocol with TILES = K_TILES = 1 (its module's constants,
    read when it traces): the configuration whose search completes on one core."""
    from warpspin.api import target_arch, verify
    from warpspin.demo import _module
    mod = _module(os.path.join(ROOT, "examples", "blackwell_gemm_2cta.py"))
    mod.TILES, mod.K_TILES = 1, 1
    with target_arch(mod.ARCH):
        fn, args = mod.correct()
    return verify(fn, *args, arch=mod.ARCH, timeout_s=1800, memory_mb=8192)


def main(argv: list[str]) -> int:
    print(" | ".join(HEAD))
    print(" | ".join("---" for _ in HEAD))
    for row in rows("--real" in argv):
        print(" | ".join(map(str, row)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
