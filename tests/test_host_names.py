"""A launch value the host computes with a DSL call (not only arithmetic on the host function's
parameters) is described by the user's line that computes it, so a `--param` it needs says what
it is (issue 33: flash-attn-4's `arg20` is `total_blocks_cluster = ...` at
tile_scheduler.py:365)."""
import os

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from warpspin.extract import extract  # noqa: E402
from warpspin.extract.build import MissingParams  # noqa: E402
from warpspin.frontend import fake_tensor, sym_int, trace  # noqa: E402
from warpspin.frontend.serialize import load, save  # noqa: E402


@cute.kernel
def _kernel(tiles: cutlass.Int32):
    for _ in cutlass.range(tiles, unroll=1):
        cute.arch.barrier()


@cute.jit
def _host(x: cute.Tensor):
    tiles_of_x = cute.size(x, mode=[0])  # @tiles
    _kernel(tiles_of_x).launch(grid=(1, 1, 1), block=(64, 1, 1))


def _line(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "_line(" not in text)


def test_a_host_computed_launch_value_is_named_by_its_line(tmp_path):
    (k,) = trace(_host, fake_tensor(cutlass.Float32, (sym_int(), 8)))
    (arg,) = [a for a in k.args if a.type == "i32"]
    assert arg.host[0] == "op" and arg.host[2] == f"test_host_names.py:{_line('# @tiles')}"
    assert arg.host[3].startswith("tiles_of_x = cute.size(x, mode=[0])")
    path = str(tmp_path / "k.json.gz")
    save(k, path)
    assert load(path).args[arg.index].host == arg.host
    with pytest.raises(MissingParams) as e:
        extract(k)
    # named after the variable the host assigns, its position still accepted
    assert f"--param tiles_of_x=N (or arg{arg.index})" in str(e.value), str(e.value)
    assert "tiles_of_x = cute.size(x, mode=[0])" in str(e.value), str(e.value)
    for given in ("tiles_of_x", f"arg{arg.index}"):
        (p,) = extract(k, params={given: 3}).params
        assert (p.name, p.lo, p.hi) == ("tiles_of_x", 3, 3)


def test_host_names_from_the_line():
    from warpspin.extract.names import host_name
    assert host_name(("op", "IntValue.__init__", "t.py:365", "total = a * b")) == "total"
    assert host_name(("op", "IntValue.__init__", "t.py:512", "total_blocks=a * b,")) == \
        "total_blocks"
    assert host_name(("op", "IntValue.__init__", "t.py:9", "self.d_layout = f(mD)")) == "d_layout"
    assert host_name(("op", "ceil_div", "t.py:327", "cute.ceil_div(n, 128),")) == \
        "host_ceil_div"
    assert host_name(("op", "IntValue.__init__", "t.py:7", "f(x) == 3")) == "host_value"


def test_launch_value_names_survive_edits_elsewhere(tmp_path):
    """Issue 35: an unrelated edit above the kernel (lines added) must not rename a --param, so a
    CI command keeps working. Names come from the call and the function, not the line."""
    import shutil
    from warpspin.api import CheckOptions, check_target
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                       "hopper_pipeline.py")
    names = []
    for n, pad in enumerate(("", "# an edit\n" * 7)):
        path = tmp_path / f"copy{n}.py"
        shutil.copy(src, path)
        path.write_text(pad + path.read_text())
        (r,) = check_target(f"{path}:correct_dynamic_k", CheckOptions(params={"nosuch": (1, 1)}))
        assert r.verdict == "error" and "no launch value of that name" in r.reasons[0]
        names.append([x.split()[0] for x in r.reasons[0].splitlines()[1:]])
    assert names[0] == names[1] and "size_in_kernel" in names[0], names


def test_a_computed_value_never_merges_with_a_launch_value_named_by_identity():
    from warpspin.extract.build import ExtractorBug
    from warpspin.extract.walker import Context
    from warpspin.syncir.ir import Loc
    (k,) = trace(_host, fake_tensor(cutlass.Float32, (sym_int(), 8)))
    (arg,) = [a for a in k.args if a.type == "i32"]
    arg.name, arg.host = "tiles", None   # a kernel argument the host passes as `tiles`
    ctx, at = Context(k), Loc("k.py", 1)
    # a value computed in the kernel whose source line is named like it, or like the cluster
    # index, gets its own name
    assert ctx.param("tiles", "computed", at, same_as=("op", 1, 0)).name == "tiles_2"
    assert ctx.param("clusterid_x", "computed", at, same_as=("op", 2, 0)).name == \
        "clusterid_x_value"
    assert ctx.param("clusterid_x", "the cluster index", at).name == "clusterid_x"
    assert ctx.param("tiles", "kernel argument", at).name == "tiles"
    ctx.param("total", "computed", at, same_as=("op", 3, 0))
    with pytest.raises(ExtractorBug, match="would merge with the computed value"):
        ctx.param("total", "an identity", at)
