"""The scaffolding every litmus kernel shares.

A litmus kernel is a subclass of `Litmus` (or `TmaLitmus`) whose `body()` is traced inside one
CuTe DSL kernel: `warps` warps per CTA, `cluster` CTAs (one cluster), `nbars` mbarriers
(`self.bar(i)`) and a 64-word shared buffer (`self.buf`) in shared memory.  What it shows on hardware
is whether it completes (or hangs: the runner's watchdog) and the words it writes with
`self.observe(slot, value)`; `value` must be the result of a `cute.arch.mbarrier_test_wait` (or
`mbarrier_try_wait`, or a load of a shared-memory word) written on the same line, so that the model's value for the slot is that
op's result in SyncIR (`predict.py`).  Slot `s` of CTA `r` is word `r * probes + s` of `out`.

Each class states:
  rules    the rule ids (`rules.py`) it tests
  expect   what `warpspin check` says of it: "verified" or the violation kind
  launches how many times the device runner launches it (values are collected over all)
"""

import os
import sys

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass._mlir.dialects import nvvm

BUF_WORDS = 64


def _source_of(value, file: str) -> tuple[str, int]:
    """(file name, line) in `file` of the op that produced a traced value (its MLIR location is
    a call-site chain through the DSL's own files)."""
    import re

    v = value.ir_value() if hasattr(value, "ir_value") else value
    op = v.owner
    name = os.path.basename(file)
    pat = re.compile(re.escape(name) + r'"?:(\d+)')
    while op is not None and not pat.search(str(op.location)):
        op = op.operands[0].owner if len(op.operands) else None
    if op is None:
        raise AssertionError(f"no location in {name} for a probed value: {v}")
    return name, int(pat.search(str(op.location)).group(1))


class Litmus:
    rules: tuple[str, ...] = ()
    expect: str = "verified"
    warps: int = 2
    cluster: int = 1
    grid: int = 1  # clusters in the grid (of `cluster` CTAs each)
    nbars: int = 2
    probes: int = 0
    launches: int = 3
    zero_x: tuple[int, ...] = ()  # words of `x` set to 0 before each launch (a counter)
    extra_x: int = 0  # words of `x` past the BUF_WORDS per CTA (room for TMA descriptors)
    # the GPU it needs: litmus kernels for another architecture than the H200's are traced and
    # predicted on the CPU only, their rules are the PTX ISA's (status "PTX only")
    arch: str = "sm_90a"
    # why an sm_90a litmus has no H200 result yet (empty: it must have one in results.json)
    awaiting_h200: str = ""

    def __init__(self):
        self.probe_lines: dict[int, tuple[str, int]] = {}

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def words(self) -> int:
        return max(1, self.ctas * self.probes)

    @property
    def ctas(self) -> int:
        return self.cluster * self.grid

    def body(self) -> None:
        """The litmus itself, a `@cute.jit` method using the traced values below."""
        raise NotImplementedError

    # ------------------------------------------------------------------ inside the kernel
    # set by enter(): warp, lane, rank (CTA rank in the cluster; with clusters of one, the CTA's
    # index in the grid), cta (its index in the grid), bars, buf, x, out, atom, tma_x

    def bar(self, i: int):
        return self.bars + i

    def observe(self, slot: int, value) -> None:
        """out[rank * probes + slot] = value (by every lane of the executing warp: one value).
        Records the caller's line: the probed test/try-wait must be on it."""
        assert 0 <= slot < self.probes, f"{self.name}: slot {slot} >= probes {self.probes}"
        try:  # where the value came from: needed only by the prediction (a CPU trace)
            self.probe_lines[slot] = _source_of(value, sys.modules[type(self).__module__].__file__)
        except (AttributeError, AssertionError):
            self.probe_lines.pop(slot, None)
        self.out[self.rank * self.probes + slot] = Int32(value)

    @cute.jit
    def sleep(self, us: int) -> None:
        """Busy for about `us` microseconds (nanosleep in 1 us steps): a delay that forces the
        order of two warps on hardware. Invisible to the model (it explores every order)."""
        for _ in cutlass.range(us, unroll=1):
            nvvm.nanosleep(Int32(1000).ir_value())

    def launch_dims(self) -> dict:
        dims = dict(grid=(self.ctas, 1, 1), block=(32 * self.warps, 1, 1))
        if self.cluster > 1:
            dims["cluster"] = (self.cluster, 1, 1)
        return dims

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor):
        self.kernel(x, out).launch(**self.launch_dims())

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor):
        self.enter(x, out)

    def enter(self, x, out, atom=None, tma_x=None) -> None:
        nbars = self.nbars

        @cute.struct
        class Smem:
            bars: cute.struct.MemRange[Int64, nbars]
            buf: cute.struct.Align[cute.struct.MemRange[Int32, BUF_WORDS], 128]

        storage = cutlass.memory.SmemAllocator().allocate(Smem)
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        rank = 0
        if cutlass.const_expr(self.cluster > 1):
            rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cta = rank
        if cutlass.const_expr(self.grid > 1):
            cta, _, _ = cute.arch.block_idx()
            if cutlass.const_expr(self.cluster == 1):
                rank = cta
        self.cta = cta  # the CTA's index in the grid (its rank when the grid is one cluster)
        self.bars, self.buf = storage.bars.data_ptr(), storage.buf.data_ptr()
        self.x, self.out, self.atom, self.tma_x = x, out, atom, tma_x
        self.warp, self.lane, self.rank = warp, cute.arch.lane_idx(), rank
        self.body()

    # ------------------------------------------------------------------ host side

    def args_cpu(self):
        from warpspin.frontend import fake_tensor

        return (fake_tensor(Int32, (BUF_WORDS * self.cluster + self.extra_x,), align=16),
                fake_tensor(Int32, (self.words,), align=16))

    def run_on_device(self, report) -> None:
        """Compile, then launch `launches` times; `report(values)` after each launch returns."""
        import torch
        from cutlass.cute.runtime import from_dlpack

        x = torch.arange(BUF_WORDS * self.cluster + self.extra_x, device="cuda",
                         dtype=torch.int32) + 1
        out = torch.zeros(self.words, device="cuda", dtype=torch.int32)
        tx, to = from_dlpack(x, assumed_align=16), from_dlpack(out, assumed_align=16)
        compiled = cute.compile(self, tx, to)
        for _ in range(self.launches):
            out.zero_()
            for i in self.zero_x:
                x[i] = 0
            compiled(tx, to)
            torch.cuda.synchronize()
            report(out.tolist()[:self.ctas * self.probes])


class TmaLitmus(Litmus):
    """A litmus with a TMA load atom over `x` (Int32, `tile_words` words per tile): `self.atom`,
    `self.tma_x`.  With `multicast`, the atom is a multicast one over the cluster and a tile is
    32 words per CTA, so that each CTA's slice is 128 bytes (a TMA destination in shared memory
    must be 128-byte aligned: a 64-byte slice faults with "misaligned address" on the H200)."""
    multicast: bool = False

    @property
    def tile_words(self) -> int:
        return 32 * self.cluster if self.multicast else 32

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor):
        from cutlass.cute.nvgpu import cpasync

        words = self.tile_words
        tile = cute.make_layout(words)
        if cutlass.const_expr(self.multicast):
            atom, tma_x = cpasync.make_tiled_tma_atom(
                cpasync.CopyBulkTensorTileG2SMulticastOp(), x, tile, (words,), num_multicast=self.cluster)
        else:
            atom, tma_x = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), x, tile, (words,))
        self.kernel(atom, tma_x, x, out).launch(**self.launch_dims())

    @cute.kernel
    def kernel(self, atom: cute.CopyAtom, tma_x: cute.Tensor, x: cute.Tensor, out: cute.Tensor):
        self.enter(x, out, atom, tma_x)

    def tma_load(self, bar, tile: int = 0, mcast_mask=None) -> None:
        """One TMA load of tile `tile` of x into self.buf, completing on `bar`; call it from a
        whole warp (the copy elects one lane itself).  Without `multicast` it is one copy of 128
        bytes into the own CTA.  With `multicast`, each CTA of the cluster loads its 128-byte
        slice of the tile (`tma_partition` with the cluster layout) and writes it into every CTA
        of `mcast_mask` (an Int16, bit r = CTA r), completing 128 bytes on the barrier at `bar`'s
        offset in each of them."""
        from cutlass.cute.nvgpu import cpasync

        words = self.tile_words
        s_buf = cute.make_tensor(self.buf, cute.make_layout(words))
        g = cute.local_tile(self.tma_x, (words,), (None,))  # (words, tiles)
        ctas, coord = 1, 0
        if cutlass.const_expr(self.multicast):
            ctas, coord = self.cluster, self.rank
        ts, tg = cpasync.tma_partition(self.atom, coord, cute.make_layout(ctas),
                                       cute.group_modes(s_buf, 0, 1), cute.group_modes(g, 0, 1))
        if cutlass.const_expr(mcast_mask is None):
            cute.copy(self.atom, tg[None, tile], ts, tma_bar_ptr=bar)
        else:
            cute.copy(self.atom, tg[None, tile], ts, tma_bar_ptr=bar, mcast_mask=mcast_mask)
