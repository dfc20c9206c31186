"""Frontend: tracing CuTe DSL kernels on the CPU into plain data."""
from __future__ import annotations

import os
import pickle
import sys

import pytest

from sourcelines import line_of

pytestmark = pytest.mark.dsl
cutlass = pytest.importorskip("cutlass")

import cutlass.cute as cute  # noqa: E402
from cutlass import Int32, Int64  # noqa: E402

from warpspin.frontend import TraceError, capture, trace  # noqa: E402
from warpspin.frontend.dump import format_kernel  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
sys.path.insert(0, EXAMPLES)


# ---- a small raw-mbarrier kernel defined here, so its lines are known ---------------------------
@cute.kernel
def _mbar_kernel(n: Int32):
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    bar = cutlass.memory.SmemAllocator().allocate_array(Int64, 2)
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(bar, 1)  # @init
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()  # @sync
    for k in cutlass.range(n):  # @loop
        if warp == 0:
            cute.arch.mbarrier_arrive(bar)  # @arrive
        cute.arch.mbarrier_wait(bar, k % 2)  # @wait


@cute.jit
def _mbar_host(n: Int32):
    _mbar_kernel(n).launch(grid=(1, 1, 1), block=(64, 1, 1))


@pytest.fixture(scope="module")
def mbar_kernel():
    ks = trace(_mbar_host, Int32(3))
    assert len(ks) == 1
    return ks[0]


def test_raw_mbarrier_ops_and_geometry(mbar_kernel):
    k = mbar_kernel
    assert k.block_dim == (64, 1, 1)
    assert k.cluster_dim is None and k.cluster_size == 1
    assert k.grid_dim == (1, 1, 1)
    assert [a.type for a in k.args] == ["i32"]
    names = [o.name for o in k.walk()]
    for want in ("nvvm.mbarrier.init", "nvvm.fence.mbarrier.init", "nvvm.barrier",
                 "nvvm.mbarrier.arrive", "nvvm.mbarrier.try_wait.parity", "nvvm.elect.sync",
                 "scf.for", "scf.if"):
        assert want in names, want


def test_raw_mbarrier_user_lines(mbar_kernel):
    k = mbar_kernel
    me = os.path.abspath(__file__)
    for op_name, marker in [("nvvm.mbarrier.init", "# @init"), ("nvvm.barrier", "# @sync"),
                            ("nvvm.mbarrier.arrive", "# @arrive"),
                            ("nvvm.mbarrier.try_wait.parity", "# @wait"), ("scf.for", "# @loop")]:
        (op,) = k.ops_named(op_name)
        assert op.loc.file == me, (op_name, op.loc)
        assert op.loc.line == line_of(me, marker), (op_name, op.loc)
        assert op.loc.func == "_mbar_kernel"
    assert k.ops_named("nvvm.mbarrier.arrive")[0].loc.lib_frame == "mbarrier_arrive"
    assert k.ops_named("nvvm.mbarrier.try_wait.parity")[0].loc.lib_frame == "mbarrier_wait"
    assert k.ops_named("scf.for")[0].loc.lib_frame is None


def test_structure_and_value_table(mbar_kernel):
    k = mbar_kernel
    (loop,) = k.ops_named("scf.for")
    # upper bound of the loop is the kernel argument n
    assert k.arg_index(loop.operands[1]) == 0
    (wait,) = k.ops_named("nvvm.mbarrier.try_wait.parity")
    assert wait.parent is loop
    parity = k.defining_op(wait.operands[1])
    assert parity.name == "arith.remsi"
    iv = parity.operands[0]
    info = k.value_info[iv]
    assert info.is_block_arg and info.op is loop and info.index == 0
    (arrive,) = k.ops_named("nvvm.mbarrier.arrive")
    assert arrive.parent.name == "scf.if" and arrive.parent.parent is loop
    assert arrive.operand_types[0] == "!llvm.ptr<3>"
    assert arrive.attrs["relaxed"] is False
    assert "mem_scope<cta>" in arrive.attrs["scope"]
    (init,) = k.ops_named("nvvm.mbarrier.init")
    assert [a.name for a in init.ancestors()] == ["scf.if", "scf.if"]


def test_plain_data_pickles(mbar_kernel):
    k2 = pickle.loads(pickle.dumps(mbar_kernel))
    assert [o.name for o in k2.walk()] == [o.name for o in mbar_kernel.walk()]
    assert "nvvm.mbarrier.arrive" in format_kernel(k2)


# ---- PipelineTmaAsync (examples/hopper_pipeline.py) -------------------------------------------
@pytest.fixture(scope="module")
def hopper():
    import hopper_pipeline as hp

    fn, args = hp.correct()
    (k,) = trace(fn, *args)
    return hp, k


def test_pipeline_geometry_and_args(hopper):
    hp, k = hopper
    assert k.block_dim == (288, 1, 1)  # 2 consumer warpgroups + 1 producer warp
    assert k.threads_per_block == 288
    assert k.args[0].type.startswith("!cute_nvgpu.atom.non_exec_tiled_tma_load")
    assert k.args[0].attrs.get("cute_nvgpu.grid_constant") is True
    assert k.arch == "sm_90a"


def test_pipeline_library_frames_and_lines(hopper):
    hp, k = hopper
    src = os.path.abspath(hp.__file__)
    by_lib = {}
    for o in k.walk():
        if o.name.startswith("nvvm.mbarrier") or o.name == "cute.copy":
            by_lib.setdefault((o.name, o.loc.lib_frame), []).append(o)
    rel = by_lib[("nvvm.mbarrier.arrive", "PipelineTmaAsync.consumer_release")]
    assert [o.loc.line for o in rel] == [line_of(src, "pipe.consumer_release(state)")]
    # the pipeline's own label, and the barrier the library's call chain names (sync_object)
    assert rel[0].loc.labels == ("ab.empty:arrive", "sync:PipelineTmaAsync(empty)")
    assert rel[0].parent.name == "scf.if"  # the lane-0 signaling predicate
    acq = by_lib[("nvvm.mbarrier.arrive.expect_tx", "PipelineTmaAsync.producer_acquire")]
    assert acq[0].loc.line == line_of(src, "pipe.producer_acquire(state)")
    assert "MbarrierArray.arrive" in acq[0].loc.lib_frames
    waits = by_lib[("nvvm.mbarrier.try_wait.parity", "PipelineAsync.consumer_wait")]
    assert waits[0].loc.line == line_of(src, "pipe.consumer_wait(state)")
    tail = by_lib[("nvvm.mbarrier.try_wait.parity", "PipelineAsync.producer_tail")]
    assert len(tail) == 4  # unrolled over the stages
    inits = by_lib[("nvvm.mbarrier.init", "PipelineTmaAsync.create")]
    assert len(inits) == 8
    (copy,) = by_lib[("cute.copy", "copy")]
    assert copy.loc.line == line_of(src, "cute.copy(atom, tAgA[None, k]")
    atom = k.defining_op(copy.operands[0])
    assert atom.name == "cute_nvgpu.atom.set_value" and "tma_bar" in atom.attrs["field"]
    assert "copy_bits = 131072" in copy.operand_types[0]


def test_all_example_variants_trace():
    import hopper_pipeline as hp
    import raw_mbarrier as rm

    for mod in (hp, rm):
        for name, make in mod.VARIANTS.items():
            fn, args = make()
            ks = trace(fn, *args)
            assert len(ks) == 1, name


# ---- errors, library capture, hygiene ------------------------------------------------------------
@cute.kernel
def _bad_kernel(n: Int32):
    bar = cutlass.memory.SmemAllocator().allocate_array(Int64, 1)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 1:
        cute.arch.mbarrier_arrive(bar)
        return  # @early-return
    cute.arch.mbarrier_wait(bar, 0)


@cute.jit
def _bad_host(n: Int32):
    _bad_kernel(n).launch(grid=(1, 1, 1), block=(64, 1, 1))


def test_trace_error_carries_dsl_message_and_user_file():
    with pytest.raises(TraceError) as ei:
        trace(_bad_host, Int32(1))
    e = ei.value
    assert e.message  # the DSL's own text
    assert e.file == os.path.abspath(__file__)
    assert e.line is not None


def test_capture_library_compile():
    def library_entry_point():  # stands for a library that calls cute.compile itself
        cute.compile(_mbar_host, Int32(2))

    with capture("sm_90a") as kernels:
        library_entry_point()
    assert len(kernels) == 1 and kernels[0].block_dim == (64, 1, 1)
    from cutlass.cutlass_dsl import CuTeDSL

    dsl = CuTeDSL._get_dsl()
    assert not dsl._trace_finalize_hooks  # hook removed again
    assert dsl.envar.dryrun is False or os.environ.get("CUTE_DSL_DRYRUN")  # config restored


def test_no_files_left_behind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace(_mbar_host, Int32(2))
    assert list(tmp_path.iterdir()) == []


@cute.kernel
def _one_store(out: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    out[tid] = Int32(1)


@cute.jit
def _launched_twice(out: cute.Tensor, n: Int32):
    _one_store(out).launch(grid=(n, 1, 1), block=(32, 1, 1))
    _one_store(out).launch(grid=(n, 2, 1), block=(32, 1, 1))


def test_each_launch_has_its_own_grid_per_dimension():
    """A grid dynamic along x keeps its constant y and z (the ownership proof counts clusters
    per dimension); two launches of one kernel are two kernels, each with its own grid."""
    from warpspin.frontend import fake_tensor
    from warpspin.frontend.mlir_data import GRID_EXTENTS_ATTR
    ks = trace(_launched_twice, fake_tensor(Int32, (64,)), Int32(2))
    assert sorted(k.attrs.get(GRID_EXTENTS_ATTR) for k in ks) == [(None, 1, 1), (None, 2, 1)]
    assert all(k.grid_dim is None for k in ks)
