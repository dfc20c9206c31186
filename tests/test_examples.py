"""Every example, traced with the real CuTe DSL on the CPU and checked with real SPIN: each correct
kernel verifies, each broken one gives its intended kind at its intended line."""
import glob
import os

import pytest
from verdicts import verified_but_global_memory

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs the DSL: never skip there
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

from warpspin.api import check_target  # noqa: E402
from warpspin.demo import _module, example_options  # noqa: E402
from sourcelines import line_of  # noqa: E402
from trace_checks import assert_trace_readable  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cases():
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
        name = os.path.basename(path)
        if name.startswith("_"):
            continue
        mod = _module(path)
        names = getattr(mod, "TARGETS", None) or list(getattr(mod, "VARIANTS", {}))
        for v in names:
            yield pytest.param(path, v, mod, id=f"{name[:-3]}:{v}")


@pytest.mark.parametrize("path,variant,mod", list(_cases()))
def test_example(path, variant, mod):
    expect = mod.EXPECT[variant]
    results = check_target(f"{path}:{variant}", example_options(mod, variant, timeout_s=300))
    assert results
    for r in results:  # "a|b": either kind (which one an engine meets first)
        assert r.outcome in expect.split("|"), str(r)
        if variant in getattr(mod, "GLOBAL_ONLY", ()):
            assert verified_but_global_memory(r), str(r)
        where = getattr(mod, "EXPECT_AT", {}).get(variant)
        if where:
            loc = r.violations[0].locations[0]
            assert os.path.abspath(loc.file) == os.path.abspath(path), str(r)
            assert loc.line == line_of(path, where), str(r)
        if r.violations:
            assert r.violations[0].replayed and r.violations[0].trace
            assert_trace_readable(r.violations[0])


def _small_cases():
    """Example variants small enough for the plain encoding too (one Promela process per warp)."""
    for case in _cases():
        path, variant, mod = case.values
        name = os.path.basename(path)
        # the ring's two warpgroups are 8 consumer warps: too many for the plain encoding
        if name in ("raw_mbarrier.py", "hopper_multicast.py", "kgrouped_tensormap.py",
                    "epilogue_store.py") or \
                (name == "syncir_ring.py" and variant not in ("ring_correct", "ring_any_k")
                 and not variant.startswith("umma_")) or \
                (name == "hopper_pipeline.py" and variant in ("correct_one_consumer", "wrong_tx_bytes")):
            yield case


@pytest.mark.parametrize("path,variant,mod", list(_small_cases()))
def test_example_plain_and_reduced_agree(path, variant, mod):
    """The reductions are exact: the plain encoding gives the same verdict and kind."""
    kinds = []
    for reduce in (True, False):
        r = check_target(f"{path}:{variant}", example_options(mod, variant, timeout_s=300,
                                                              reduce=reduce))[0]
        kinds.append(r.outcome)
    assert kinds[0] in mod.EXPECT[variant].split("|") and kinds[1] in mod.EXPECT[variant].split("|")


def test_source_edits_the_extractor_reports(tmp_path):
    """The mutation bench's AT_THE_SOURCE survivors, made as source edits: each is reported
    (a SyncIR mutant has no lanes, so the warp-lane check is the extractor's)."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from mutants import AT_THE_SOURCE
    path = os.path.join(ROOT, "examples", "jacobi_halo.py")
    text = open(path).read()
    first = ("            mean = (cells[lane] + cells[lane + 2]) * Float32(0.5)\n"
             "            cute.arch.sync_threads()\n")
    assert text.count(first) == 1
    sync_line = text[:text.index(first)].count("\n") + 2
    assert ("jacobi_halo.correct",
            f"process 0: `bar.sync 0` (jacobi_halo.py:{sync_line}) deleted") in AT_THE_SOURCE
    edited = tmp_path / "jacobi_halo.py"
    edited.write_text(text.replace(first, first.split("\n")[0] + "\n"))
    r = check_target(f"{edited}:correct", example_options(_module(path), "correct",
                                                          timeout_s=300))[0]
    assert r.verdict == "inconclusive" and r.outcome == "not-checked", str(r)
    assert "lanes of one warp hand it over" in str(r), str(r)
