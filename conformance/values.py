"""Litmus kernels for values handed through memory: shared-memory words (a store released by an
mbarrier arrive, a load after the wait that acquires it) and elements of a read-only global
tensor (one value per element, chosen at launch)."""
import cutlass
import cutlass.cute as cute
from cutlass import Int32

from cutlass.experimental import primitives as prims

from .litmus import Litmus


class _Words(Litmus):
    nbars = 2

    @cute.jit
    def init(self):
        if self.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(self.bar(0), 1)
                cute.arch.mbarrier_init(self.bar(1), 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()

    @cute.jit
    def ping_pong(self, n):
        """n rounds: warp 0 arrives on bar(0) and waits for warp 1's answer on bar(1); then
        warp 1 samples bar(0)'s phase bit with test_wait on parity 0 and 1 (probes 0 and 1)."""
        if self.warp == 0:
            for i in cutlass.range(n, unroll=1):
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(self.bar(0))
                cute.arch.mbarrier_wait(self.bar(1), i % 2)
        if self.warp == 1:
            for i in cutlass.range(n, unroll=1):
                cute.arch.mbarrier_wait(self.bar(0), i % 2)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(self.bar(1))
        cute.arch.sync_threads()
        if self.warp == 1:
            self.observe(0, cute.arch.mbarrier_test_wait(self.bar(0), 0))
            self.observe(1, cute.arch.mbarrier_test_wait(self.bar(0), 1))


class WordHandoff(_Words):
    """Warp 0 stores 7 into a shared word and arrives (release); warp 1 waits (acquire) and loads
    it: the load sees the store ordered before it, 7 (probe [7]). warpspin models the word and
    finds no race."""
    rules = ("words.handoff",)
    probes = 1

    @cute.jit
    def body(self):
        self.init()
        words = cute.make_tensor(self.buf, cute.make_layout(4))
        if self.warp == 0:
            words[0] = Int32(7)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.observe(0, words[0])


class WordHandoffTwice(_Words):
    """Two hand-offs of the same word: 7, then (after the reader's acknowledgement on bar(1)) 9.
    Each load sees the store released before the wait that precedes it: probes [7, 9]."""
    rules = ("words.handoff",)
    probes = 2

    @cute.jit
    def body(self):
        self.init()
        words = cute.make_tensor(self.buf, cute.make_layout(4))
        if self.warp == 0:
            words[0] = Int32(7)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
            cute.arch.mbarrier_wait(self.bar(1), 0)
            words[0] = Int32(9)
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(0))
        if self.warp == 1:
            cute.arch.mbarrier_wait(self.bar(0), 0)
            self.observe(0, words[0])
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(self.bar(1))
            cute.arch.mbarrier_wait(self.bar(0), 1)
            self.observe(1, words[0])


class GlobalCountDecidesPhases(_Words):
    """Both warps read n = x[1] from global memory (the kernel never writes x; the device run
    passes x[1] = 2) and play n rounds of ping-pong: warp 0 arrives on bar(0) and waits for warp
    1's answer on bar(1). Afterwards warp 1 samples bar(0)'s phase bit with test_wait on parity 0
    and 1. Both warps must read the same n, or the rounds do not match. warpspin checks every n
    in 0..3 (probes [0, 1] for even n, [1, 0] for odd n); the hardware shows the one for n = 2."""
    rules = ("gmem.read-value",)
    probes = 2

    @cute.jit
    def body(self):
        self.init()
        self.ping_pong(self.x[1])


class AtomIncWraps(Litmus):
    """Lane 0 of warp 0 takes four values from a counter in global memory (x[0], 0 at launch)
    with atom.inc wrapping at 2: 0, 1, 2 and, wrapped, 0 (probes [0, 1, 2, 0]). The launch is one
    CTA, so no other CTA takes values in between (the counter's `others` is 0) and the model has
    exactly that outcome."""
    rules = ("gmem.atom-inc",)
    probes = 4
    zero_x = (0,)

    @cute.jit
    def body(self):
        if self.warp == 0:
            if self.lane == 0:
                self.observe(0, prims.atomicrmw(prims.AtomicOp.INC, self.x.iterator, Int32(2)))
                self.observe(1, prims.atomicrmw(prims.AtomicOp.INC, self.x.iterator, Int32(2)))
                self.observe(2, prims.atomicrmw(prims.AtomicOp.INC, self.x.iterator, Int32(2)))
                self.observe(3, prims.atomicrmw(prims.AtomicOp.INC, self.x.iterator, Int32(2)))


class GlobalReadAtRunTimeIndex(_Words):
    """Both warps read i = x[1] and then n = x[i % 2]: an index known only at run time (the
    device run passes x = 0, 1, 2, ...: i = 1, n = x[1] = 1), and play n rounds of ping-pong as
    GlobalCountDecidesPhases does. warpspin checks the index against x's 64 elements when the
    load runs and follows elements 0..2 (`ld.launch`), every value 0..3 of each: probes [0, 1]
    for even n, [1, 0] for odd n; the hardware shows the one for n = 1."""
    rules = ("gmem.read-index",)
    probes = 2

    @cute.jit
    def body(self):
        self.init()
        i = self.x[1]
        self.ping_pong(self.x[i % 2])


class WarpScanRounds(_Words):
    """Warp 0 takes n from warp collectives over x[lane] read by lanes 0 and 1 (a prefix sum
    with shfl.sync.up, the total from lane 31, then popc(vote.ballot(sum > 0)) lanes added and
    taken away); warp 1 takes n = x[0] + x[1]; they play n rounds of ping-pong. The device run
    passes x = 0, 1, ...: n = 1 (probes [1, 0]). warpspin follows each lane's value and checks
    every x[0], x[1] in 0..3: the two warps always agree (verified)."""
    rules = ("warp.scan",)
    probes = 2
    awaiting_h200 = "added 2026-12-07 11:50 UTC; the device pool lent no GPU before the session ended"

    @cute.jit
    def body(self):
        self.init()
        n = Int32(0)
        if self.warp == 0:
            v = Int32(0)
            if self.lane < 2:
                v = self.x[self.lane]
            for i in cutlass.range_constexpr(5):
                p = cute.arch.shuffle_sync_up(v, offset=1 << i, mask_and_clamp=0)
                if self.lane >= (1 << i):
                    v += p
            k = cute.arch.popc(cute.arch.vote_ballot_sync(v > 0))
            n = cute.arch.shuffle_sync(v, 31) + k - k
        else:
            n = self.x[0] + self.x[1]
        self.ping_pong(n)


class GlobalReadPastTheEnd(_Words):
    """Warp 1 reads x[x[1] % 2 + 64] (the device run: x[65]), past the tensor's 64 elements
    (what the load returns is undefined; on the device it completes with the words after the
    tensor) and arrives on bar(0) that many times mod 2. warpspin: invalid-operand at the read,
    naming the index."""
    rules = ("gmem.read-index",)
    expect = "invalid-operand"

    @cute.jit
    def body(self):
        self.init()
        if self.warp == 1:
            n = self.x[self.x[1] % 2 + 64]
            for r in cutlass.range(n % 2, unroll=1):
                cute.arch.mbarrier_arrive(self.bar(0))


class _UnmodelledBranch(_Words):
    """Warp 0 waits on bar(0) with parity vote.ballot(x[lane] > 100) (0 on the device; a vote
    over per-lane loads is not modelled: the wait is an Unsupported statement) inside
    `if x[1] OP 100`; warp 1 arrives on bar(0) in that branch. The device run passes x[1] = 1."""

    @cute.jit
    def body(self):
        self.init()
        if self.taken(self.x[1]):
            if self.warp == 1:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(self.bar(0))
            if self.warp == 0:
                parity = cute.arch.vote_ballot_sync(self.x[self.lane] > 100)
                cute.arch.mbarrier_wait(self.bar(0), parity)


class UnmodelledOpNotReached(_UnmodelledBranch):
    """`if x[1] > 100`: no value of x[1] in the model's range 0..3 takes the branch, so no
    execution reaches the wait the model does not follow: warpspin says verified (the happens-
    before engine, one run per value; the wait listed as not modelled and not reached)."""
    rules = ("verdict.unreached",)

    @cute.jit
    def taken(self, v):
        return v > 100


class UnmodelledOpReached(_UnmodelledBranch):
    """`if x[1] < 100`: every run takes the branch and meets the wait: unsupported."""
    rules = ("verdict.unreached",)
    expect = "unsupported"

    @cute.jit
    def taken(self, v):
        return v < 100


LITMUS = [WordHandoff, WordHandoffTwice, GlobalCountDecidesPhases, AtomIncWraps,
          GlobalReadAtRunTimeIndex, WarpScanRounds, GlobalReadPastTheEnd, UnmodelledOpNotReached,
          UnmodelledOpReached]
