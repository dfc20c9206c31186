"""A staged buffer that one warp writes and alone stores with TMA: `cute.arch.sync_warp()` hands
its lanes' writes to itself (ops/buffers.py, `buffer_self_handover`), checked by SPIN and the
happens-before engine alike."""
import os

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Float32  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402

from warpspin.api import CheckOptions, _check_jit  # noqa: E402

FORMS = ("correct", "no_sync", "no_fence", "sync_then_fence", "no_wait_read")


class OneWarpEpilogue:
    """One warp: twice, wait for the last store's reads, write the 8x32 tile, fence, sync the
    warp, store it with TMA and commit (each form drops or moves one step)."""

    def __init__(self, form: str):
        self.form = form

    @cute.jit
    def __call__(self, c: cute.Tensor):
        tile = cute.make_layout((8, 32), stride=(32, 1))
        atom, tma_c = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, tile,
                                                  (8, 32))
        self.kernel(atom, tma_c).launch(grid=(1, 1, 1), block=(32, 1, 1))

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_c: cute.Tensor):
        lane = cute.arch.lane_idx()
        sD = cutlass.memory.SmemAllocator().allocate_tensor(
            Float32, cute.make_layout((8, 32), stride=(32, 1)), byte_alignment=128)
        gC = cute.local_tile(tma_c, (8, 32), (None, 0))
        tDsD, tDgD = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                           cute.group_modes(sD, 0, 2), cute.group_modes(gC, 0, 2))
        for i in cutlass.range(2, unroll=1):
            if cutlass.const_expr(self.form != "no_wait_read"):
                cute.arch.cp_async_bulk_wait_group(0, read=True)
            for r in cutlass.range_constexpr(8):
                sD[r, lane] = Float32(i * 8 + r)
            if cutlass.const_expr(self.form == "sync_then_fence"):
                cute.arch.sync_warp()
                cute.arch.fence_proxy("async.shared", space="cta")
            else:
                if cutlass.const_expr(self.form != "no_fence"):
                    cute.arch.fence_proxy("async.shared", space="cta")
                if cutlass.const_expr(self.form != "no_sync"):
                    cute.arch.sync_warp()
            cute.copy(atom, tDsD, tDgD[None, i])
            cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)


EXPECT = {"correct": "verified", "no_sync": "race", "no_fence": "proxy-race",
          "sync_then_fence": "verified", "no_wait_read": "race"}


@pytest.mark.parametrize("engine", ["spin", "hb"])
@pytest.mark.parametrize("form", FORMS)
def test_one_warp_hands_its_writes_to_itself(form, engine):
    from warpspin.frontend import fake_tensor
    opts = CheckOptions(arch="sm_90a", timeout_s=120, engine=engine)
    r = _check_jit(OneWarpEpilogue(form), (fake_tensor(Float32, (16, 32), align=16),), opts,
                   form)[0]
    got = r.violations[0].kind if r.violations else r.verdict
    assert got == EXPECT[form], str(r)
