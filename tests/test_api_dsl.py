"""The Python API and the CLI on real CuTe DSL kernels (traced on the CPU)."""
import json
import os
import sys

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl")

import warpspin  # noqa: E402
from warpspin.cli import main as cli_main  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)


def test_verify_api_on_a_real_kernel():
    import grid_flag
    import raw_mbarrier
    fn, args = raw_mbarrier.correct()
    r = warpspin.verify(fn, *args)
    # its slots `buf[s * 32 + lane]` are followed as data: VERIFIED with races checked
    assert r.verdict == "verified" and (r.stats.states > 0 or r.stats.hb_ops > 0), str(r)
    assert r.stats.seconds["trace"] > 0 and r.stats.seconds["check"] > 0
    fn, args = grid_flag.correct()
    assert warpspin.verify(fn, *args).verdict == "verified"  # the partials checked as data
    fn, args = grid_flag.unsynced_readers()
    r = warpspin.verify(fn, *args)
    # complete with no violation; lane 0's acquire does not order the other lanes' reads of the
    # data the global flag hands over: races on it are not checked
    assert r.outcome == "not-checked", str(r)
    assert any("NOT CHECKED on global data partial" in why for why in r.reasons), r.reasons
    fn, args = raw_mbarrier.missing_arrive()
    bad = warpspin.verify(fn, *args)
    assert bad.verdict == "violation" and bad.violations[0].kind == "deadlock"
    assert "error[deadlock]" in str(bad)
    assert json.loads(bad.to_json())["violations"][0]["locations"][0]["file"].endswith("raw_mbarrier.py")


BROKEN = '''
import cutlass
import cutlass.cute as cute

@cute.kernel
def kernel(n: cutlass.Int32):
    for i in cutlass.range(n):
        if i == 3:
            return          # an early exit in dynamic control flow: the DSL rejects it
    cute.arch.sync_threads()

@cute.jit
def host(n: cutlass.Int32):
    kernel(n).launch(grid=(1, 1, 1), block=(32, 1, 1))

def target():
    return host, (cutlass.Int32(4),)
'''


def test_cli_kernel_that_fails_to_trace_is_bad_input(tmp_path, capsys):
    f = tmp_path / "broken_kernel.py"
    f.write_text(BROKEN)
    assert cli_main(["check", f"{f}:target"]) == 3
    out = capsys.readouterr().out
    assert "fails to trace" in out
    assert "broken_kernel.py" in out


def test_cli_param_range_on_a_real_kernel(capsys):
    target = f"{EXAMPLES}/hopper_pipeline.py:correct_dynamic_k"
    assert cli_main(["check", target]) == 0          # the k-tile count, left open: every value
    out = capsys.readouterr().out
    assert "size_in_kernel was not given: every value from 1 up" in out and "VERIFIED" in out
    # a value for one of several targets: the others leave it out and say so
    assert cli_main(["check", "--json", "--param", "size_in_kernel=1..3",
                     f"{EXAMPLES}/hopper_pipeline.py:correct_dynamic_k",
                     f"{EXAMPLES}/raw_mbarrier.py:wrong_init_count"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert [t["verdict"] for t in d["targets"]] == ["verified", "violation"]
    assert d["targets"][1]["config"]["params_not_in_kernel"] == ["size_in_kernel"]
    # a name no target has is a typo: bad input
    assert cli_main(["check", "--param", "size_in_kernl=1..3",
                     f"{EXAMPLES}/hopper_pipeline.py:correct_dynamic_k",
                     f"{EXAMPLES}/raw_mbarrier.py:wrong_init_count"]) == 3
    assert "size_in_kernl: no kernel of the targets has" in capsys.readouterr().err


ARCH_IN_CONSTRUCTOR = '''
import cutlass
import cutlass.cute as cute
from cutlass.base_dsl import BaseDSL
from cutlass.base_dsl.arch import Arch


class Sm90Only:
    """Reads the arch in its constructor, as flash-attn-4's FlashAttentionForwardSm90 does."""
    def __init__(self):
        arch = BaseDSL._get_dsl().get_arch_enum()
        assert arch.is_family_of(Arch.sm_90a), f"Only SM 9.x is supported, not {arch}"

    @cute.jit
    def __call__(self, n: cutlass.Int32):
        self.kernel(n).launch(grid=(1, 1, 1), block=(64, 1, 1))

    @cute.kernel
    def kernel(self, n: cutlass.Int32):
        cute.arch.sync_threads()


def target():
    return Sm90Only(), (cutlass.Int32(4),)
'''


@pytest.mark.parametrize("arch,status", [("sm_90a", 0), ("sm_100a", 3)])
def test_target_runs_under_the_requested_arch(tmp_path, capsys, arch, status, monkeypatch):
    """FUNC() runs with the DSL configured for --arch (no CUTE_DSL_ARCH needed)."""
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    f = tmp_path / "arch_target.py"
    f.write_text(ARCH_IN_CONSTRUCTOR)
    assert cli_main(["check", "--arch", arch, f"{f}:target"]) == status
    out = capsys.readouterr().out
    assert ("VERIFIED" in out) == (status == 0)
    if status:
        assert "Only SM 9.x is supported" in out


@pytest.mark.parametrize("declared,given,status", [
    ("sm_100a", None, 3), ("sm_90a", None, 0), (None, None, 0), ("sm_100a", "sm_90a", 0)])
def test_the_module_arch_is_the_default(tmp_path, capsys, declared, given, status, monkeypatch):
    """Without --arch a target is traced for the ARCH its module declares (an sm_100a example);
    --arch overrides it."""
    monkeypatch.delenv("CUTE_DSL_ARCH", raising=False)
    f = tmp_path / "declares_arch.py"
    f.write_text(ARCH_IN_CONSTRUCTOR + (f"\nARCH = {declared!r}\n" if declared else ""))
    argv = ["check", f"{f}:target"] + (["--arch", given] if given else [])
    assert cli_main(argv) == status
    assert ("Only SM 9.x is supported" in capsys.readouterr().out) == (status == 3)
