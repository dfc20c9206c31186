"""quack's FastDivmod (mul.hi.u32 by a host-computed magic number, a shift, a select for the
divisor 1) is the division it stands for, under its contract, which the verdict states."""
import os

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):  # make test (CI) installs the DSL and quack
    pytest.importorskip("quack", reason="needs quack-kernels (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Int32  # noqa: E402
from quack.fast_math import FastDivmod  # noqa: E402

from warpspin.api import verify  # noqa: E402
from warpspin.extract import ExtractError, extract  # noqa: E402
from warpspin.frontend import fake_tensor, trace  # noqa: E402
from warpspin.syncir import BinOp, unsupported_ops, walk_stmts  # noqa: E402


@cute.kernel
def _kernel(out: cute.Tensor, n: Int32, fdd: FastDivmod, mode: cutlass.Constexpr):
    q = n // fdd
    if cutlass.const_expr(mode == "skew"):   # warp 1 does one round less than warp 0
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        q = q - warp
    for _ in cutlass.range(q, unroll=1):
        cute.arch.barrier(barrier_id=1, number_of_threads=64)


def _launcher(mode):
    @cute.jit
    def launch(out: cute.Tensor, n: Int32, d: Int32):
        _kernel(out, n, FastDivmod(d), mode).launch(grid=(1, 1, 1), block=(64, 1, 1))
    return launch


def _args():
    return fake_tensor(Int32, (4,)), Int32(7), Int32(3)


def test_the_quotient_is_a_division():
    (tk,) = trace(_launcher("plain"), *_args())
    k = extract(tk, params={"n": (0, 7)})
    assert not unsupported_ops(k)
    divs = [e for p in k.processes for s in walk_stmts(p.body) for e in _exprs(s)
            if isinstance(e, BinOp) and e.op == "//"]
    assert divs, "the FastDivmod quotient should be extracted as a floor division"
    assert any("FastDivmod" in a for a in k.assumptions)


def test_a_divisor_range_must_not_reach_zero():
    """The divisor is a launch parameter that divides: a range including 0 is no launch the
    model covers (the Promela division would fault), so extraction names it."""
    (tk,) = trace(_launcher("plain"), *_args())
    k = extract(tk, params={"n": (0, 7)})
    d = next(p.name for p in k.params if p.name != "n")
    with pytest.raises(ExtractError, match=rf"--param {d}=0\.\.3: .* divides"):
        extract(tk, params={"n": (0, 7), d: (0, 3)})


def _exprs(s):
    from warpspin.syncir import stmt_exprs
    for e in stmt_exprs(s):
        yield from _walk(e)


def _walk(e):
    yield e
    for f in ("lhs", "rhs", "arg", "cond", "then", "else_"):
        x = getattr(e, f, None)
        if x is not None:
            yield from _walk(x)


def test_verdicts_depend_on_the_quotient_and_state_the_contract():
    (tk,) = trace(_launcher("plain"), *_args())
    last = max(tk.args, key=lambda a: a.index)     # FastDivmod's fields: magic, shift, divisor
    divisor = last.name or f"arg{last.index}"
    ok = verify(_launcher("plain"), *_args(), params={"n": (0, 7), divisor: (1, 3)})
    assert ok.verdict == "verified", str(ok)
    assert "assumed: FastDivmod" in str(ok)
    bad = verify(_launcher("skew"), *_args(), params={"n": (0, 7), divisor: (1, 3)})
    assert bad.violations and bad.violations[0].kind in ("deadlock", "arrival-mismatch"), str(bad)
