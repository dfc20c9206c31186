"""Litmus kernels for cp.async groups: one warp copies word i of x into word i of the litmus
buffer (lane i, through its own part of a tiled copy: 4-byte cp.async), commits the copy to a
cp.async group, waits for its groups, and reads its word back. What a late copy corrupts is the
value read, which no probe here follows (`examples/cp_async_drain.py` shows it on the H200,
docs/ground-truth.md); these show that each protocol completes, and what warpspin says of it."""
import cutlass
import cutlass.cute as cute
from cutlass import Int32
from cutlass.cute.nvgpu import cpasync

from .litmus import Litmus


class _CopyOwnWord(Litmus):
    warps = 1
    nbars = 1
    probes = 0
    commit = True
    wait = True
    read = True

    @cute.jit
    def body(self):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(self.buf, cute.make_layout(32))
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), Int32, num_bits_per_copy=32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(32), cute.make_layout(1))
        thr = tiled.get_slice(tidx)
        ts = thr.partition_D(s)
        cute.copy(tiled, thr.partition_S(cute.local_tile(self.x, (32,), (0,))), ts)
        if cutlass.const_expr(self.commit):
            cute.arch.cp_async_commit_group()
        if cutlass.const_expr(self.wait):
            cute.arch.cp_async_wait_group(0)
        if cutlass.const_expr(self.read):
            r = cute.make_rmem_tensor_like(ts)
            cute.autovec_copy(ts, r)


class CpAsyncWaited(_CopyOwnWord):
    """Copy, commit, wait_group 0, read: the read sees the copy. Completes. warpspin: verified."""
    rules = ("cp_async.groups", "cp_async.exit")
    expect = "verified"


class CpAsyncReadBeforeWait(_CopyOwnWord):
    """Copy, commit, read, no wait: the copy may land after the read (PTX 9.7.9.24.5).
    warpspin: race at the read."""
    rules = ("cp_async.groups",)
    expect = "race"
    wait = False


class CpAsyncUncommitted(_CopyOwnWord):
    """Copy, wait_group 0 without a commit, read: the wait covers committed groups only, so the
    copy is not waited for. warpspin: race at the read."""
    rules = ("cp_async.groups",)
    expect = "race"
    commit = False


class CpAsyncUndrainedExit(_CopyOwnWord):
    """Copy, commit, exit: the thread exits with its copy in flight. warpspin:
    pending-at-exit."""
    rules = ("cp_async.exit",)
    expect = "pending-at-exit"
    wait = False
    read = False
LITMUS = [CpAsyncWaited, CpAsyncReadBeforeWait, CpAsyncUncommitted, CpAsyncUndrainedExit]


class _CopyVectorShared(Litmus):
    """Two warps: each thread copies word tidx of x into word tidx of the litmus buffer (its own
    part of a tiled copy: 4-byte cp.async), commits and waits for its groups; the warps meet on
    named barrier 1, and every thread then reads the whole 64-word vector (a broadcast of what
    all threads copied: quack's row-vector epilogue)."""
    warps = 2
    nbars = 1
    probes = 0
    barrier = True

    @cute.jit
    def body(self):
        tidx, _, _ = cute.arch.thread_idx()
        s = cute.make_tensor(self.buf, cute.make_layout(64))
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), Int32, num_bits_per_copy=32)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(64), cute.make_layout(1))
        thr = tiled.get_slice(tidx)
        cute.copy(tiled, thr.partition_S(cute.local_tile(self.x, (64,), (0,))), thr.partition_D(s))
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
        if cutlass.const_expr(self.barrier):
            cute.arch.barrier(barrier_id=1, number_of_threads=64)
        r = cute.make_rmem_tensor_like(s)
        cute.autovec_copy(s, r)


class CpAsyncVectorShared(_CopyVectorShared):
    """Copy, commit, wait, meet, read the whole vector: every thread's copy is complete before
    its own barrier arrival, so before every read. Completes. warpspin: verified."""
    rules = ("cp_async.shared",)
    expect = "verified"


class CpAsyncVectorNoBarrier(_CopyVectorShared):
    """The same without the barrier: a thread's wait covers its own copies only, so another
    thread's word may land after the read (PTX 9.7.9.24.5). warpspin: race at the read."""
    rules = ("cp_async.shared",)
    expect = "race"
    barrier = False


LITMUS += [CpAsyncVectorShared, CpAsyncVectorNoBarrier]
