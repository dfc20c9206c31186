"""The happens-before engine on every real kernel of the catalog (quack-kernels 0.6.5 and
flash-attn-4 4.0.0b36, traced through the libraries' own entry points): each is decided, as
docs/coverage.md tables; where SPIN completed a search of it (docs/coverage.md), the two agree.
The flagship kernels SPIN does not finish (the cluster-4 and cluster-8 row kernels, quack's
cluster, pingpong, persistent, 2-CTA and CLC GEMMs, flash-attn-4's SM90 forward with its default
tile and SM100 forward) are decided here in CI, with load races checked.

`make test` (CI) installs both libraries; elsewhere the module skips when one is missing."""
from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.dsl
pytest.importorskip("cutlass")
try:
    import quack.gemm  # noqa: F401
    from flash_attn.cute import interface  # noqa: F401
except Exception as e:
    if os.environ.get("WARPSPIN_REQUIRE_ALL"):
        raise
    pytest.skip(f"quack-kernels or flash-attn-4 is not importable ({e})", allow_module_level=True)

from fixtures import catalog as C  # noqa: E402
from warpspin.api import CheckOptions, verify_kernel  # noqa: E402
from warpspin.engine import hb  # noqa: E402
from warpspin.syncir.passes import without_noop_fences  # noqa: E402

# what the engine decides (the kind of a violation); every other catalog kernel: VERIFIED
DECIDED = {
    # (fa4.sm90.varlen*: VERIFIED, the tile scheduler's warp prefix sum over per-lane loads
    # followed lane by lane; fa4.sm100.varlen: VERIFIED, its correction warps' branch on a vote
    # over softmax data is in the loop over KV blocks after the first, which no run of one
    # block enters)
    # the load warp waits only for the release of the last Q stage before it exits; the MMA
    # warp's tcgen05.commit releasing the other stage may land after the CTA's threads have
    # exited (PTX ISA 9.7.16.6.2: tcgen05 ops complete in any order; commit -> commit is not a
    # pipelined pair): pending-at-exit, found by reordering that completion after the exits
    "fa4.sm100": "pending-at-exit", "fa4.sm100.causal": "pending-at-exit",
}
FLAGSHIP = C.FLAGSHIP
NAMES = [e.name for e in C.entries() if e.group in ("quack", "fa4")]


@pytest.mark.parametrize("name", NAMES)
def test_the_engine_decides_every_catalog_kernel(name):
    k, _ = without_noop_fences(C.extracted(name))
    r = hb.check(k, timeout_s=120)
    want = DECIDED.get(name, "verified")
    got = r.kind if r.verdict == "violation" else r.verdict
    assert got == want, f"{name}: {r.verdict} {r.kind} {r.reasons} {r.found_by}"
    if r.verdict == "outside":
        assert r.reasons and r.locations, r


def test_a_kernel_with_an_op_no_run_reaches_is_decided_through_the_pipeline():
    """flash-attn-4's SM100 varlen forward: cu_seqlens read at the scheduler's batch index
    (ld.launch), the vote branch not reached: the pipeline's verdict is the engine's, INCONCLUSIVE
    only for what it did not check (no UNSUPPORTED), and the report lists the op."""
    r = verify_kernel(C.extracted("fa4.sm100.varlen"), opts=CheckOptions(timeout_s=120))
    assert r.stats.engine == "happens-before" and r.outcome == "not-checked", str(r)
    assert any("nvvm.vote.sync" in u for u in r.config["unreached"]), r.config
    assert "not modelled, and no execution reaches it" in str(r)


def test_the_flagship_kernels_were_spins_inconclusive_ones():
    assert set(FLAGSHIP) <= set(NAMES)
    assert all(DECIDED.get(n, "verified") != "outside" for n in FLAGSHIP)


@pytest.mark.parametrize("name", ["quack.gemm_sm100.2cta", "fa4.sm100"])
def test_a_flagship_verdict_through_the_pipeline(name):
    """The report of the pipeline (the default engine) for two of them: the 2-CTA GEMM decided by
    one execution, VERIFIED with its MMA's operands and its accumulator stages in TMEM in both
    CTAs checked; flash-attn-4's SM100 forward's counterexample replayed, naming the commit
    and its barrier, and saying SPIN could not shorten it."""
    r = verify_kernel(C.extracted(name), opts=CheckOptions(timeout_s=120))
    text = str(r)
    assert r.stats.engine == "happens-before", text
    if name == "fa4.sm100":
        v = r.violations[0]
        assert v.kind == "pending-at-exit" and v.replayed, text
        assert "tcgen05.commit" in v.message and "mbar_load_Q" in text, text
        assert "not a shortest one" in text
    else:  # complete and no violation; the MMA's operands and TMEM data are followed
        from verdicts import verified_but_global_memory
        assert verified_but_global_memory(r) and r.stats.hb_runs == 1, text
        assert "TMEM buffer tCtAcc_base" in text, text
        assert "decided by the happens-before engine: 1 execution, " in text, text


def test_the_catalog_violation_shows_every_step_and_the_right_help():
    """flash-attn-4 SM100's pending-at-exit through the whole pipeline: every step of its
    552-step interleaving has its op and line, and the help speaks of the commit's barrier, not
    of cp.async."""
    from trace_checks import assert_trace_readable
    r = verify_kernel(C.extracted("fa4.sm100"), opts=CheckOptions(engine="hb", timeout_s=120))
    (v,) = r.violations
    assert v.kind == "pending-at-exit" and v.replayed
    assert_trace_readable(v)
    assert "producer_tail" in " ".join(v.help) and "cp.async" not in " ".join(v.help)
