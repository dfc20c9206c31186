"""Copies into thread partitions of global memory in the ownership proof (extract/partitions.py,
extract/ownership.py): the rule that threads of one partition touch elements of their own, checked
against the DSL's own partitions, and end to end on kernels written as public code writes them
(tests/fixtures/partition_outputs.py)."""
from __future__ import annotations

import pytest

from warpspin.extract.partitions import tv_apart

pytest.importorskip("cutlass")


def _dsl_parts():
    """(type of the tiled copy, threads asked, each thread's coordinates) as the DSL partitions
    an identity tensor of two tiles per mode, for tiled copies as public code makes them."""
    import cutlass
    import cutlass.cute as cute
    from cutlass import Float32

    out = []

    @cute.jit
    def probe():
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), Float32, num_bits_per_copy=128)
        cases = [
            (cute.make_tiled_copy_tv(atom, cute.make_layout((4, 16), stride=(16, 1)),
                                     cute.make_layout((1, 4))), 64, (8, 128)),
            (cute.make_tiled_copy_tv(atom, cute.make_layout(64), cute.make_layout(4)), 64,
             (512,)),
            # quack's norms: ((64,2),4):((8,1),2) over a 2 x 256 tile
            (cute.make_tiled_copy(atom, cute.make_layout(((64, 2), 4), stride=((8, 1), 2)),
                                  (2, 256)), 128, (4, 512)),
            (cute.make_tiled_copy(atom, cute.make_layout((64, 4), stride=(1, 64)), (256,)), 64,
             (512,)),
            # two threads per part (a thread stride of 0)
            (cute.make_tiled_copy(atom, cute.make_layout(((2, 32), 4), stride=((0, 4), 1)),
                                  (128,)), 64, (256,)),
            # more threads than the thread mode: thread 64's part is past the tile
            (cute.make_tiled_copy_tv(atom, cute.make_layout(64), cute.make_layout(4)), 96,
             (512,)),
        ]
        for tiled, users, shape in cases:
            ident = cute.make_identity_tensor(shape)
            parts = []
            for t in cutlass.range_constexpr(users):
                part = tiled.get_slice(t).partition_D(ident)
                parts.append(({part[i] for i in range(cute.size(part))}, part[0]))
            out.append((str(tiled.type), users, parts))

    cute.compile(probe)
    return out


def test_parts_apart_exactly_when_the_dsl_gives_disjoint_parts():
    from warpspin.extract.coords import thread_offset
    from warpspin.extract.values import Folder
    from warpspin.syncir.ir import Const

    cases = _dsl_parts()
    assert len(cases) == 6
    verdicts = []
    for copy_t, users, parts in cases:
        seen, disjoint = set(), True
        for t, (p, first) in enumerate(parts):
            disjoint = disjoint and not (seen & p)
            seen |= p
            # where the thread's first value lies, as coords.py reads it (identity tensors:
            # the coordinates are the tile's)
            at = thread_offset(copy_t, Const(t), Folder())
            first = first if isinstance(first, tuple) else (first,)
            assert tuple(x.value for x in at) == first[:len(at)], (copy_t, t)
        assert tv_apart(copy_t, users) == disjoint, (copy_t, users)
        verdicts.append(disjoint)
    assert verdicts == [True, True, True, True, False, False]


# ---- end to end: the real DSL traces each form ---------------------------------------------
FORMS_WHY = {
    "broadcast": "which elements the cute.copy at partition_outputs.py",
    "same_row": "every cluster along x accesses the same bytes",
    "fixed_slice": "two threads of one cluster access byte 0",
    "two_layouts": "two threads of one cluster access byte 0",
    "next_row": "overlap",
    "row_flag_all": "two threads of one cluster access byte 0",
    "row_flag_two": "two threads of one cluster access byte 0",
    "row_index_all": "two threads of one cluster access byte 0",
    "async_reread": "a cp.async reads it and the kernel writes it",
}


@pytest.mark.parametrize("form", ["per_cta", "tile_2d", "element", "dynamic_2d", "row_flag",
                                  "row_index", *FORMS_WHY])
def test_forms(form):
    from fixtures.partition_outputs import VERIFIED, output
    from verdicts import check_output_form
    text = check_output_form(output, form, form in VERIFIED, FORMS_WHY.get(form, ""))
    if form == "dynamic_2d":
        assert "global data out: its layout is one-to-one" in text, text


def _dsl_mma_parts():
    """(tiled MMA type, tensor type, threads, each thread's coordinates of C) as the DSL
    partitions an identity tensor of two MMA tiles per mode, for SM90 tiled MMAs as
    sm90_utils.make_trivial_tiled_mma makes them."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass import BFloat16, Float32

    out = []

    @cute.jit
    def probe():
        # (tiles per mode: two for one atom, to see the rest modes; one for two atoms)
        for atoms, tile, n in (((1, 1, 1), (64, 32), 2), ((2, 1, 1), (64, 16), 1),
                               ((1, 2, 1), (64, 16), 1)):
            mma = sm90_utils.make_trivial_tiled_mma(
                BFloat16, BFloat16, cute.nvgpu.OperandMajorMode.K,
                cute.nvgpu.OperandMajorMode.K, Float32, atoms, tile)
            shape = (n * 64 * atoms[0], n * tile[1] * atoms[1])
            ident = cute.make_identity_tensor(shape)
            c = cute.make_layout(shape, stride=(shape[1], 1))
            parts = []
            for t in cutlass.range_constexpr(128 * atoms[0] * atoms[1]):
                part = mma.get_slice(t).partition_C(ident)
                parts.append({part[i] for i in range(cute.size(part))})
            out.append((str(mma.type), f'!cute.memref<f32, gmem, "{c}">', parts))

    from warpspin.frontend.trace import configured
    with configured("sm_90a"):
        cute.compile(probe)
    return out


def test_mma_accumulator_parts_apart_as_the_dsl_gives_them():
    from warpspin.extract.partitions import mma_c_apart

    cases = _dsl_mma_parts()
    assert len(cases) == 3
    for mma_t, tensor_t, parts in cases:
        seen = set()
        for p in parts:
            assert not seen & p, mma_t
            seen |= p
        assert mma_c_apart(mma_t, tensor_t, len(parts)), (mma_t, tensor_t)
        assert not mma_c_apart(mma_t, tensor_t, len(parts) + 1)


def test_a_nested_tensor_mode_is_not_split_by_a_tiler():
    """A tiler's mode j splits the tensor's top-level mode j: with a nested mode, leaf j is not
    that mode (`((4,2),3)` by `[4:1;2:1]` checks 4 and 2 leaf by leaf, but 2 does not divide the
    second mode, 3): the partition is not read."""
    from warpspin.extract.partitions import _tiles_divide, mma_c_apart, static_shape
    copy_t = ('!cute.tiled_copy<!cute_nvgpu.atom.universal_copy<f32, 32 b>, layout_copy_tv = '
              '<"(8,1):(1,0)">, tiler_mn = <"[4:1;2:1]">>')
    assert _tiles_divide(copy_t, '!cute.memref<f32, gmem, "(8,6):(1,8)">')
    assert static_shape('!cute.memref<f32, gmem, "((4,2),3):(1,4)">') is None
    assert not _tiles_divide(copy_t, '!cute.memref<f32, gmem, "((4,2),3):(1,8)">')
    mma = ('!cute.tiled_mma<!cute_nvgpu.sm90.mma<64x64x16, ab_major = (k, k), elem_type = '
           '(bf16, bf16, f32), frag_kind = ss>, atom_layout_MNK = <"(1,1,1):(0,0,0)">, '
           'permutation_MNK = <"[_;_;_]">>')
    assert mma_c_apart(mma, '!cute.memref<f32, gmem, "(64,64):(64,1)">', 128)
    assert not mma_c_apart(mma, '!cute.memref<f32, gmem, "((32,2),64):(64,2048,1)">', 128)
