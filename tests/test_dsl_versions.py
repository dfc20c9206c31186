"""The oldest CuTe DSL warpspin supports (nvidia-cutlass-dsl 4.4.0, on Python 3.12, else this
interpreter's version) traces the examples to the same verdicts, violation kinds and lines as the
newest (this environment's).

One target per construct family that 4.4's API can express: raw mbarriers, cp.async, a TMA store
epilogue (named barriers, bulk groups, proxy fences), a TMA pipeline (``PipelineTmaAsync``), a
two-CTA cluster with multicast, a tensormap rewritten in global memory.  The virtualenv lives
under ``~/.cache/warpspin-dsl`` (``WARPSPIN_DSL_CACHE``) and is reused, as is the newest DSL's
run while warpspin's sources and the examples are unchanged.  The whole matrix:
``python bench/dsl_versions.py`` (docs/dsl-versions.md)."""
import importlib.util
import os
import sys

import pytest

REQUIRE_ALL = bool(os.environ.get("WARPSPIN_REQUIRE_ALL"))
if not REQUIRE_ALL:  # make test (CI) installs the DSL: never skip there
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLDEST = ("3.12", "4.4.0")
TARGETS = [
    "examples/raw_mbarrier.py:wrong_parity",          # raw mbarriers
    "examples/cp_async_drain.py:no_drain",            # cp.async groups
    "examples/epilogue_store.py:no_fence",            # TMA store, bar.sync, proxy fence
    "examples/portable/tma_pipeline.py:correct",      # PipelineTmaAsync
    "examples/portable/tma_multicast.py:no_multicast_wait",  # cluster, multicast, mapa
    "examples/portable/tensormap.py:no_acquire",      # tensormap rewrite in global memory
]


def _bench():
    spec = importlib.util.spec_from_file_location("dsl_versions",
                                                  os.path.join(ROOT, "bench", "dsl_versions.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _expected(target: str) -> str:
    from warpspin.demo import _module

    path, name = target.rsplit(":", 1)
    return _module(os.path.join(ROOT, path)).EXPECT[name]


@pytest.mark.slow
def test_oldest_dsl_agrees_with_newest():
    bench = _bench()
    cache = os.environ.get("WARPSPIN_DSL_CACHE", bench.DEFAULT_CACHE)
    ref = bench.reference(TARGETS, 120.0, cache, python=sys.executable)
    for t in TARGETS:  # the reference is what the example says it must be
        assert ref[t].verdict in _expected(t).split("|"), (t, ref[t])
    # Python 3.12 (what kernel repositories pinning 4.4 use), else this interpreter's version
    py = OLDEST[0] if bench.find_python(OLDEST[0]) else "%d.%d" % sys.version_info[:2]
    row = bench.run_config(py, OLDEST[1], TARGETS, ref, cache, 120.0)
    if row.status != "ok":  # no way to install the DSL here (no network, no wheel)
        msg = f"python {py} with nvidia-cutlass-dsl {OLDEST[1]}: {row.status}"
        if REQUIRE_ALL:
            pytest.fail(msg)
        pytest.skip(msg)
    assert not row.differ, "\n".join(row.differ)
    assert not row.needs_newer, "\n".join(row.needs_newer)
    assert sorted(row.agree) == sorted(TARGETS)


# -- the pieces that let an older DSL reach the same point (checked here with the newest) -------
def test_location_text_reads_as_the_bindings_do():
    """4.4's ir.Location has no accessors: its text is parsed instead, to the same frames."""
    from cutlass._mlir import ir

    from warpspin.frontend.locations import flatten, flatten_text

    with ir.Context():
        f1 = ir.Location.file('/a/b"x y.py', 3, 4)
        f2 = ir.Location.file("/lib/nvidia_cutlass_dsl/p.py", 5, 6)
        n1 = ir.Location.name("Kern.<locals>.body", childLoc=f1)
        n2 = ir.Location.name("PipelineTmaAsync.producer_acquire", childLoc=f2)
        label = ir.Location.name("role=producer", childLoc=ir.Location.callsite(n2, [n1]))
        locs = [f1, n1, ir.Location.callsite(n2, [n1, n2]), label,
                ir.Location.fused([n1, label]), ir.Location.name("only"), ir.Location.unknown()]
        for loc in locs:
            assert flatten_text(str(loc)) == flatten(loc), str(loc)


def _k(ops, block=(64, 1, 1)):
    from warpspin.frontend.mlir_data import Block, Region, TracedKernel

    return TracedKernel(name="k", args=[], body=Region([Block(ops=ops)]), block_dim=block)


def _op(name, operands=(), results=(), otypes=None, rtypes=None, attrs=None, lib=()):
    from warpspin.frontend.mlir_data import Op, SourceLoc

    return Op(name, list(operands), list(otypes or ["!llvm.ptr<3>"] * len(operands)),
              list(results), list(rtypes or ["i32"] * len(results)), dict(attrs or {}),
              loc=SourceLoc(file="k.py", line=1, lib_frames=tuple(lib)))


def test_dsl44_ops_become_the_forms_of_48():
    from warpspin.frontend.normalize import normalize

    txn = lambda kind, space="cta", ptr="!llvm.ptr<3>": _op(  # noqa: E731
        "nvvm.mbarrier.txn", [1, 2], otypes=[ptr, "i32"],
        attrs={"kind": f"#nvvm.mbar_txn_kind<{kind}>", "scope": "#nvvm.mbar_scope<cluster>",
               "space": f"#nvvm.mbar_space<{space}>"})
    k = _k([_op("nvvm.mbarrier.init.shared", [1, 2], otypes=["!llvm.ptr<3>", "i32"]),
            _op("nvvm.mapa.shared.cluster", [1, 2], [3], ["!llvm.ptr<3>", "i32"], ["!llvm.ptr<3>"]),
            txn("arrive"), txn("arrive_expect_tx"), txn("expect_tx"), txn("arrive_drop"),
            txn("arrive", space="cluster"),  # a CTA address named shared::cluster: kept
            _op("nvvm.mbarrier.txn", [3, 2], otypes=["!llvm.ptr<3>", "i32"],
                attrs={"kind": "#nvvm.mbar_txn_kind<arrive>", "scope": "#nvvm.mbar_scope<cta>",
                       "space": "#nvvm.mbar_space<cluster>"}),
            _op("llvm.inline_asm", [4, 5], attrs={"asm_string": "bar.sync $0, $1;",
                                                  "constraints": "r,r"}, lib=("barrier",)),
            _op("llvm.inline_asm", [4, 5], attrs={"asm_string": "bar.sync $0, $1;",
                                                  "constraints": "r,r"})])  # the user's: kept
    normalize(k)
    names = [o.name for o in k.walk()]
    assert names == ["nvvm.mbarrier.init", "nvvm.mapa", "nvvm.mbarrier.arrive",
                     "nvvm.mbarrier.arrive.expect_tx", "nvvm.mbarrier.expect_tx",
                     "nvvm.mbarrier.txn", "nvvm.mbarrier.txn", "nvvm.mbarrier.arrive",
                     "nvvm.barrier", "llvm.inline_asm"]
    ops = list(k.walk())
    assert ops[1].result_types == ["!llvm.ptr<7>"] and ops[7].operand_types[0] == "!llvm.ptr<7>"
    assert "cluster" in ops[2].attrs["scope"] and ops[2].attrs["relaxed"] is False


def test_dsl44_fences_and_ballot_become_the_forms_of_48():
    from warpspin.frontend.normalize import normalize
    from warpspin.extract.rules.globals import _memory_scope

    k = _k([_op(f"nvvm.fence.acq_rel.{s}", []) for s in ("cta", "cluster", "gpu", "sys")] +
           [_op("nvvm.vote.ballot.sync", [1, 2], [3], ["i32", "i1"]),
            _op("nvvm.fence.acq_rel.gpu", [1])])  # (an operand: not the DSL's form, kept)
    normalize(k)
    ops = list(k.walk())
    assert [o.name for o in ops] == ["llvm.fence"] * 4 + ["nvvm.vote.sync",
                                                          "nvvm.fence.acq_rel.gpu"]
    assert [_memory_scope(o, "syncscope") for o in ops[:4]] == ["cta", "cluster", "gpu", "sys"]
    assert all(o.attrs["ordering"] == "6" for o in ops[:4])
    assert "ballot" in ops[4].attrs["kind"] and ops[4].results == [3]


def test_dyn_smem_base_becomes_one_allocation_of_the_recorded_fields():
    from warpspin.frontend.normalize import normalize

    base = lambda r, fields: _op(  # noqa: E731
        "cute_nvgpu.arch.get_dyn_smem", [], [r], rtypes=["!cute.ptr<i8, smem, align<1024>>"],
        attrs={"warpspin.smem_fields": fields} if fields is not None else {})
    size = _op("cute_nvgpu.arch.get_dyn_smem_size", [], [11])
    check = _op("arith.cmpi", [11, 12], [13], ["i32", "i32"], ["i1"])
    k = _k([base(1, ["full:16:0", "buf:256:32"]), size, check, _op("cf.assert", [13], [], ["i1"]),
            base(2, ["full:16:0", "buf:256:32"])])
    normalize(k)
    ops = list(k.walk())
    assert [o.name for o in ops] == ["cute.memref.alloca", "cute.get_iter", "cute.get_iter"]
    assert ops[0].result_types == ['!cute.memref<i8, smem, align<1024>, "288:1">']
    assert ops[0].attrs["smem.struct_fields"] == ["full:16:0", "buf:256:32"]
    assert ops[1].operands == ops[2].operands == ops[0].results
    # without fields, or with blocks that overlap (two allocators on one base): left alone
    for fields in (None, ["a:16:0", "b:16:8"]):
        k = _k([base(1, ["full:16:0"]), base(2, fields)])
        normalize(k)
        assert [o.name for o in k.walk()] == ["cute_nvgpu.arch.get_dyn_smem"] * 2


def test_unknown_cluster_size_is_refused():
    """A kernel without launch facts whose host launch cannot be read is never modelled as one
    CTA of an unknown cluster."""
    from warpspin.extract import ExtractError, extract

    k = _k([_op("cuda.return")], block=(32, 1, 1))
    k.attrs["warpspin.cluster_dim_unknown"] = True
    with pytest.raises(ExtractError, match="cluster size"):
        extract(k)


def test_one_instruction_inline_ptx_becomes_the_dsl_op():
    from warpspin.frontend.inline_ptx import canonical_ptx

    def asm(text, operands=(), constraints="", results=()):
        return _op("llvm.inline_asm", list(operands), otypes=["i32"] * len(operands),
                   results=list(results), attrs={"asm_string": text, "constraints": constraints})

    k = _k([asm("bar.sync 0;"), asm("barrier.sync.aligned $0, $1;", [1, 2], "r,r"),
            asm("bar.sync $0;", [1], "r"), asm("bar.arrive $0, $1;", [1, 2], "r,r"),
            asm("barrier.cluster.arrive.release.aligned;"),
            asm("barrier.cluster.arrive.relaxed.aligned;"),
            asm("barrier.cluster.wait.acquire.aligned;"), asm("fence.proxy.async.shared::cta;"),
            asm(" fence.acq_rel.gpu ;"), asm("fence.acq_rel.sys;"),
            # kept: not aligned, another operand count, a result, two instructions
            asm("barrier.sync $0, $1;", [1, 2], "r,r"), asm("bar.sync $0, $1;", [1], "r"),
            asm("bar.sync 0;", results=[3]), asm("bar.sync 0; bar.sync 1;")])
    canonical_ptx(k)
    ops = list(k.walk())
    assert [o.name for o in ops] == [
        "nvvm.barrier", "nvvm.barrier", "nvvm.barrier", "nvvm.barrier.arrive",
        "nvvm.cluster.arrive", "nvvm.cluster.arrive.relaxed", "nvvm.cluster.wait",
        "nvvm.fence.proxy", "llvm.fence", "llvm.fence"] + ["llvm.inline_asm"] * 4
    assert ops[1].attrs["operandSegmentSizes"] == "(1, 1, 0)"
    assert ops[2].attrs["operandSegmentSizes"] == "(1, 0, 0)"
    assert ops[8].attrs == {"ordering": "6", "syncscope": "device"}
    assert ops[9].attrs == {"ordering": "6"}


def test_inline_ptx_on_a_global_word_becomes_the_dsl_op():
    """st / ld / atom / red of one 32-bit global word through `llvm.ptrtoint` of a global
    pointer: the op cute.arch emits, on the pointer; other forms stay inline PTX."""
    from warpspin.frontend.inline_ptx import canonical_ptx

    def asm(text, operands, constraints, results=()):
        return _op("llvm.inline_asm", list(operands),
                   otypes=["i64"] + ["i32"] * (len(operands) - 1), results=list(results),
                   attrs={"asm_string": text, "constraints": constraints})

    ptr = _op("llvm.ptrtoint", [1], [10], otypes=["!llvm.ptr<1>"], rtypes=["i64"])
    shared = _op("llvm.ptrtoint", [2], [11], otypes=["!llvm.ptr<3>"], rtypes=["i64"])
    k = _k([ptr, shared,
            asm("st.release.gpu.global.b32 [$0], $1;", [10, 5], "l,r"),
            asm("st.global.b32 [$0], $1;", [10, 5], "l,r"),
            asm("st.volatile.global.u32 [$0], $1;", [10, 5], "l,r"),
            asm("ld.acquire.gpu.global.b32 $0, [$1];", [10], "=r,l", [20]),
            asm("ld.volatile.global.s32 $0, [$1];", [10], "=r,l", [21]),
            asm("atom.add.release.gpu.global.s32 $0, [$1], $2;", [10, 5], "=r,l,r", [22]),
            asm("atom.acquire.gpu.global.cas.b32 $0, [$1], $2, $3;", [10, 5, 6], "=r,l,r,r", [23]),
            asm("atom.global.exch.b32 $0, [$1], $2;", [10, 5], "=r,l,r", [24]),
            asm("red.release.gpu.global.add.s32 [$0], $1;", [10, 5], "l,r"),
            # kept: a shared address, 64 bits, two instructions, another operation
            asm("st.release.gpu.global.b32 [$0], $1;", [11, 5], "l,r"),
            asm("st.release.gpu.global.b64 [$0], $1;", [10, 5], "l,l"),
            asm("st.global.b32 [$0], $1; st.global.b32 [$0], $1;", [10, 5], "l,r"),
            asm("atom.global.max.s32 $0, [$1], $2;", [10, 5], "=r,l,r", [25])])
    canonical_ptx(k)
    ops = list(k.walk())[2:]
    assert [o.name for o in ops] == [
        "nvvm.store.ext", "nvvm.store.ext", "nvvm.store.ext", "nvvm.load.ext", "nvvm.load.ext",
        "nvvm.atomicrmw", "nvvm.atomicrmw", "nvvm.atomicrmw", "nvvm.red"] + \
        ["llvm.inline_asm"] * 4
    assert ops[0].attrs == {"order": "#nvvm.mem_order<release>", "scope": "#nvvm.mem_scope<gpu>"}
    assert ops[0].operands == [5, 1] and ops[1].attrs == {}
    assert ops[2].attrs["scope"] == "#nvvm.mem_scope<sys>"
    assert ops[3].operands == [1] and ops[3].results == [20]
    assert ops[6].attrs["op"] == "#nvvm<atomic_op cas>" and ops[6].operands == [1, 5, 6]
    assert ops[7].attrs["memOrder"] == "#nvvm.mem_order<relaxed>"
    assert ops[8].operands == [1, 5]


def test_inline_ptx_mbarrier_ops_become_the_dsl_ops():
    """mbarrier.arrive / arrive.expect_tx / a try_wait spin in one asm block / a test's value,
    on `llvm.ptrtoint` of a shared (or mapa) pointer: the DSL's ops on the pointer."""
    from warpspin.frontend.inline_ptx import canonical_ptx

    def asm(text, operands, constraints, results=()):
        return _op("llvm.inline_asm", list(operands), otypes=["i32"] * len(operands),
                   results=list(results), attrs={"asm_string": text, "constraints": constraints})

    smem = _op("llvm.ptrtoint", [1], [10], otypes=["!llvm.ptr<3>"], rtypes=["i32"])
    peer = _op("llvm.ptrtoint", [2], [11], otypes=["!llvm.ptr<7>"], rtypes=["i32"])
    spin = ("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, "
            "[$0], $1;\n\t@P1 bra DONE;\n\tbra LAB_WAIT;\n\tDONE:\n\t}")
    test = ("{\n\t.reg .pred P1;\n\tmbarrier.test_wait.parity.shared::cta.b64 P1, [$1], $2;\n\t"
            "selp.b32 $0, 1, 0, P1;\n\t}")
    k = _k([smem, peer,
            asm("mbarrier.arrive.shared::cta.b64 _, [$0];", [10], "r"),
            asm("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [$0];", [11], "r"),
            asm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", [10, 5], "r,r"),
            asm(spin, [10, 5], "r,r"), asm(test, [10, 5], "=r,r,r", [20]),
            # kept: a cluster address for a ::cta arrive, a wait on a peer's barrier
            asm("mbarrier.arrive.shared::cta.b64 _, [$0];", [11], "r"),
            asm(spin, [11, 5], "r,r")])
    canonical_ptx(k)
    ops = list(k.walk())[2:]
    assert [o.name for o in ops] == [
        "nvvm.mbarrier.arrive", "nvvm.mbarrier.arrive", "nvvm.mbarrier.arrive.expect_tx",
        "nvvm.mbarrier.try_wait.parity", "nvvm.mbarrier.wait.parity"] + ["llvm.inline_asm"] * 2
    assert ops[0].operands == [1] and ops[0].attrs["scope"] == "#nvvm.mem_scope<cta>"
    assert ops[1].operands == [2] and ops[1].attrs["scope"] == "#nvvm.mem_scope<cluster>"
    assert ops[3].operands == [1, 5] and ops[4].results == [20]
    assert ops[4].attrs["kind"] == "#nvvm.mbar_wait<test>"


def test_inline_elect_sync_becomes_the_dsl_op():
    """elect.sync of the full mask into a predicate, selp'd into a value: `nvvm.elect.sync`;
    another mask stays inline PTX."""
    from warpspin.frontend.inline_ptx import canonical_ptx

    text = ("{\n\t.reg .b32 %rx;\n\t.reg .pred %px;\n\telect.sync %rx|%px, $1;\n\t"
            "selp.b32 $0, 1, 0, %px;\n\t}")
    full = _op("arith.constant", [], [1], attrs={"value": "-1 : i32"})
    half = _op("arith.constant", [], [2], attrs={"value": "65535 : i32"})
    k = _k([full, half] + [_op("llvm.inline_asm", [m], [10 + m], otypes=["i32"],
                               attrs={"asm_string": text, "constraints": "=r,r"})
                           for m in (1, 2)])
    canonical_ptx(k)
    assert [o.name for o in list(k.walk())[2:]] == ["nvvm.elect.sync", "llvm.inline_asm"]
