"""The adversarial protocols of issue 7 (hand-built SyncIR, ../shared/repro/adversarial/*.py,
kept here verbatim so the suite does not depend on that folder), each with the outcome the
hardware semantics calls for: docs/semantics.md and the PTX ISA 9.x.

Each case is checked end to end (`verify_kernel`) with the reduced and the plain encoding.
`EXPECT` lists the acceptable outcomes: a violation kind (the first the search reports; several
when more than one real violation is reachable and a shortest search may report either),
"verified", "error" (the kernel is rejected as invalid SyncIR, or cannot even be built), or
"inconclusive:<word>" (INCONCLUSIVE with <word> in its reasons: a model bound, never a
VERIFIED). `HARDWARE` says what the hardware does where it differs from what warpspin must
report (a documented conservative rule, or a kernel that SyncIR cannot express).

These tests fail on the code before the SyncIR v2 core for the known holes (the exited thread
counted twice at the cluster barrier, 32-bit arithmetic in Promela, the validity rules of issue
7 item 9, cluster lifetime); nothing here is marked xfail on purpose.
"""
import shutil

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.syncir import (Assign, BarArrive, BarSync, BinOp, ClusterArrive, ClusterWait, Const,
                             Elect, Exit, For, If, Kernel, Lanes, MBarRef, MBarrierDecl,
                             MbarArrive, MbarArriveExpectTx, MbarExpectTx, MbarInit, MbarInitFence,
                             MbarTestWait, MbarWait, Param, Process, TmaLoad, Var, While)

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="needs SPIN and gcc")

b, m, c = MBarRef("b"), MBarRef("m"), MBarRef("c")
INIT = lambda *bars: Elect(tuple(MbarInit(x, n) for x, n in bars) + (MbarInitFence(),))  # noqa: E731
# p_lockstep.py: a producer handing 3 phases of b to a consumer that releases c
LOCKSTEP_INIT = Elect((MbarInit(b, 1), MbarInit(c, 1), MbarInitFence()))
LOCKSTEP_P = (LOCKSTEP_INIT, BarSync(),
              For("k", 0, 3, (MbarWait(c, Var("pc")), Elect((MbarArrive(b, 1),)),
                              Assign("pc", Var("pc") ^ 1))))

# ---------------------------------------------------------------------------- p_cluster.py
def p1_false_verified():
    # A: arrive on the cluster barrier, exit (no wait).
    # B: init m, publish; arrive+wait on the cluster barrier; then release m.
    # C: never touches the cluster barrier; waits on m.
    # PTX: barrier.cluster.wait waits for *all non-exited threads* to arrive; C never arrives
    # and never exits (it waits for m, released only after B's cluster wait) -> real deadlock.
    A = (BarSync(), ClusterArrive(relaxed=True), Exit())
    B = (Elect((MbarInit(m, 1), MbarInitFence())), BarSync(),
         ClusterArrive(relaxed=True), ClusterWait(), Elect((MbarArrive(m, 1),)))
    C = (BarSync(), MbarWait(m, 0))
    return Kernel("p1_cluster_exit_doublecount",
                  (Process("A", A, warps=(0, 1)), Process("B", B, warps=(1, 2)),
                   Process("C", C, warps=(2, 3))), (MBarrierDecl("m"),))

def p1_control():
    # same without A's early exit: A arrives, then waits -> model must report deadlock
    A = (BarSync(), ClusterArrive(relaxed=True), ClusterWait())
    B = (Elect((MbarInit(m, 1), MbarInitFence())), BarSync(),
         ClusterArrive(relaxed=True), ClusterWait(), Elect((MbarArrive(m, 1),)))
    C = (BarSync(), MbarWait(m, 0))
    return Kernel("p1_control",
                  (Process("A", A, warps=(0, 1)), Process("B", B, warps=(1, 2)),
                   Process("C", C, warps=(2, 3))), (MBarrierDecl("m"),))

def p1b_false_alarm():
    # A: arrive, exit.  B, C: arrive, wait.  PTX: B and C wait for all non-exited threads
    # (B, C) to arrive: both do -> completes; no deadlock.
    A = (ClusterArrive(relaxed=True), Exit())
    W = (ClusterArrive(relaxed=True), ClusterWait())
    return Kernel("p1b_cluster_exit_false_alarm",
                  (Process("A", A, warps=(0, 1)), Process("B", W, warps=(1, 2)),
                   Process("C", W, warps=(2, 3))), ())

def p1c_two_ctas():
    # the same across two CTAs: CTA 1 warp arrives and exits; CTA 0 has two warps.
    A = (ClusterArrive(relaxed=True), Exit())
    W = (ClusterArrive(relaxed=True), ClusterWait())
    return Kernel("p1c_cluster_exit_2cta",
                  (Process("B", W, cta=0, warps=(0, 1)), Process("C", W, cta=0, warps=(1, 2)),
                   Process("A", A, cta=1, warps=(0, 1))), (), num_ctas=2)

def p1d_false_alarm():
    # A: cluster arrive, exit.  B: init m; arrive+wait cluster; wait m.  C: arrive+wait cluster;
    # arrive m.  PTX: B and C each wait for all non-exited threads to arrive -> both pass,
    # C arrives on m, B passes: no deadlock.
    A = (BarSync(), ClusterArrive(relaxed=True), Exit())
    B = (Elect((MbarInit(m, 1), MbarInitFence())), BarSync(),
         ClusterArrive(relaxed=True), ClusterWait(), MbarWait(m, 0))
    C = (BarSync(), ClusterArrive(relaxed=True), ClusterWait(), Elect((MbarArrive(m, 1),)))
    return Kernel("p1d_cluster_exit_false_alarm",
                  (Process("A", A, warps=(0, 1)), Process("B", B, warps=(1, 2)),
                   Process("C", C, warps=(2, 3))), (MBarrierDecl("m"),))


# ---------------------------------------------------------------------------- p_lifetime.py
def p2_multicast_into_exited_cta():
    # CTA 1: init b, fence, publish by its own bar.sync, exit.
    # CTA 0: init b, fence, cluster arrive+wait (completes once CTA 1 has exited: exit leaves
    # the count), arm b, multicast a TMA into CTA 0 and CTA 1, wait b.
    # Real: the multicast writes CTA 1's shared memory and signals its mbarrier after CTA 1
    # exited (its smem may belong to another CTA by then): undefined behaviour.
    c1 = (Elect((MbarInit(b, 1), MbarInitFence())), BarSync())
    c0 = (Elect((MbarInit(b, 1), MbarInitFence())), ClusterArrive(), ClusterWait(),
          Elect((MbarArriveExpectTx(b, 64), TmaLoad(b, 64, multicast=Const(3)))),
          MbarWait(b, 0))
    return Kernel("p2_multicast_into_exited",
                  (Process("lead", c0, cta=0), Process("peer", c1, cta=1)),
                  (MBarrierDecl("b"),), num_ctas=2)

def p3_remote_arrive_into_exited_cta():
    # CTA 1: init b, fence, bar.sync (publishes), exit.  CTA 0: cluster arrive/wait (released
    # by CTA 1's exit), then arrives remotely on CTA 1's b.  Real: DSM access to an exited CTA.
    c1 = (Elect((MbarInit(b, 1), MbarInitFence())), BarSync())
    c0 = (ClusterArrive(), ClusterWait(), Elect((MbarArrive(MBarRef("b", 0, cta=1), 1),)))
    return Kernel("p3_remote_arrive_into_exited",
                  (Process("lead", c0, cta=0), Process("peer", c1, cta=1)),
                  (MBarrierDecl("b"),), num_ctas=2)


# ---------------------------------------------------------------------------- p_lockstep.py
def wg_lockstep():
    # consumer = 2 warps as ONE 64-thread instance; only one thread releases c
    W = (BarSync(), For("k", 0, 3, (MbarWait(b, Var("ph")), Lanes(1, (MbarArrive(c, 1),)),
                                    Assign("ph", Var("ph") ^ 1))))
    return Kernel("wg_lockstep", (Process("P", LOCKSTEP_P, warps=(0, 1), init=(("pc", 1),)),
                                  Process("W", W, warps=(1, 3), threads=64)), (MBarrierDecl("b"), MBarrierDecl("c")))

def wg_split():
    # the same two warps as separate processes (what the hardware runs): warp 1 never releases
    W0 = (BarSync(), For("k", 0, 3, (MbarWait(b, Var("ph")), Lanes(1, (MbarArrive(c, 1),)),
                                     Assign("ph", Var("ph") ^ 1))))
    W1 = (BarSync(), For("k", 0, 3, (MbarWait(b, Var("ph")), Assign("ph", Var("ph") ^ 1))))
    return Kernel("wg_split", (Process("P", LOCKSTEP_P, warps=(0, 1), init=(("pc", 1),)),
                               Process("W0", W0, warps=(1, 2)), Process("W1", W1, warps=(2, 3))),
                  (MBarrierDecl("b"), MBarrierDecl("c")))


# ---------------------------------------------------------------------------- p_batch2.py
def param_trip_bug2():
    # producer K trips, consumer min(K,1) trips, 2 stages: the producer blocks on empty[1]
    # phase 0 at its 4th trip: real deadlock for K=4 only.
    s, ph = Var("s"), Var("ph")
    adv = (Assign("s", s + 1), If(s.eq(2), (Assign("s", 0), Assign("ph", ph ^ 1))))
    P = (Elect((MbarInit(MBarRef("f", 0), 1), MbarInit(MBarRef("f", 1), 1),
                MbarInit(MBarRef("e", 0), 1), MbarInit(MBarRef("e", 1), 1), MbarInitFence())),
         BarSync(),
         For("k", 0, Var("K"), (MbarWait(MBarRef("e", s), ph), Elect((MbarArrive(MBarRef("f", s), 1),)), *adv)))
    C = (BarSync(), For("k", 0, BinOp("min", Var("K"), Const(1)),
                        (MbarWait(MBarRef("f", s), ph), Elect((MbarArrive(MBarRef("e", s), 1),)), *adv)))
    return Kernel("param_trip_bug2", (Process("P", P, warps=(0, 1), init=(("ph", 1),)),
                                      Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("f", 2), MBarrierDecl("e", 2)), params=(Param("K", 0, 4),))

def testwait_sym_bug2():
    # 3 symmetric consumers test-wait b; those that saw it complete skip the release of m
    # (bug): producer waits m (count 3) -> deadlock whenever some consumer saw ok=1.
    P = (INIT((b, 1), (m, 3)), BarSync(), Elect((MbarArrive(b, 1),)), MbarWait(m, 0))
    C = (BarSync(), MbarTestWait("ok", b, 0),
         If(Var("ok").eq(0), (MbarWait(b, 0), Elect((MbarArrive(m, 1),))), ()))
    return Kernel("testwait_sym_bug2", (Process("P", P, warps=(0, 1)),
                                        Process("C", C, warps=(1, 4), instances=3)),
                  (MBarrierDecl("b"), MBarrierDecl("m")))

def int_overflow_hides_deadlock():
    # interp (unbounded ints): x = 2^32 != 0 -> waits on a barrier nobody arrives on: deadlock.
    # Promela (32-bit int): x wraps to 0 -> no wait -> VERIFIED, nothing to replay.
    P = (INIT((b, 1)), BarSync(), Assign("x", Const(65536)), Assign("x", Var("x") * 65536),
         If(Var("x").ne(0), (MbarWait(b, 0),), ()))
    return Kernel("int_overflow_hides_deadlock", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))

def tx_product_overflow():
    # a whole warp (32 threads) arrive.expect_tx(2^27): each thread's expect alone exceeds the
    # tx-count range (2^20-1): real: out-of-range tx-count (UB); interp: tx-mismatch.
    # Promela computes tx + 32 * 134217728 = tx + 2^32 -> wraps to tx: phase completes.
    P = (INIT((b, 32)), BarSync(), MbarArriveExpectTx(b, 1 << 27), MbarWait(b, 0))
    return Kernel("tx_product_overflow", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))

def tx_const_overflow():
    # one thread expects 2^32 + 64 bytes, a TMA delivers 64
    P = (INIT((b, 1)), BarSync(), Elect((MbarArriveExpectTx(b, (1 << 32) + 64), TmaLoad(b, 64))), MbarWait(b, 0))
    return Kernel("tx_const_overflow", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))

def bararrive_no_count_exit():
    # bar.arrive without a thread count (PTX: "a non-zero thread count is required for
    # barrier.arrive"); validate accepts it and it means "all threads"; A arrives and exits:
    # counted twice like the cluster barrier.  C never reaches barrier 1 and waits m, which B
    # releases after its bar.sync -> real: (if it were legal) deadlock.
    A = (BarSync(), BarArrive(1, None), Exit())
    B = (Elect((MbarInit(m, 1), MbarInitFence())), BarSync(), BarSync(1), Elect((MbarArrive(m, 1),)))
    C = (BarSync(), MbarWait(m, 0))
    return Kernel("bararrive_no_count_exit", (Process("A", A, warps=(0, 1)), Process("B", B, warps=(1, 2)),
                                              Process("C", C, warps=(2, 3))), (MBarrierDecl("m"),))

def exit_in_lanes():
    return Kernel("exit_in_lanes", (Process("A", (Elect((Exit(),)),)),))


# ---------------------------------------------------------------------------- p_batch.py
def tx_before_expect():
    # consumer warp arms b with expect after a separate warp's TMA may already have completed:
    # tx goes to -64, then arrive.expect_tx(+64) brings it to 0 with pending 0 -> completes.
    P = (INIT((b, 1)), BarSync(), Elect((TmaLoad(b, 64),)))
    C = (BarSync(), Elect((MbarArriveExpectTx(b, 64),)), MbarWait(b, 0))
    return Kernel("tx_before_expect", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("b"),))

def expect_after_arrive():
    # plain arrive completes the phase (tx==0) before the later expect_tx: the consumer can pass
    # before the data landed, and the TMA bytes land in phase 1 -> real bug (early completion);
    # the next phase then has tx=0 after expect... consumer's 2nd wait for phase 1 never passes?
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, 1), MbarExpectTx(b, 64), TmaLoad(b, 64))))
    C = (BarSync(), MbarWait(b, 0), MbarWait(b, 1))
    return Kernel("expect_after_arrive", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("b"),))

def two_phase_alias():
    # count-1 barrier, producer arrives twice with no back-pressure; consumer waits parity 0 then 1.
    # real: if the producer's two arrives both land before the consumer's first wait, n=2, the
    # parity-0 wait blocks forever -> deadlock.
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, 1),)), Elect((MbarArrive(b, 1),)))
    C = (BarSync(), MbarWait(b, 0), MbarWait(b, 1))
    return Kernel("two_phase_alias", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("b"),))

def deliberate_skip():
    # consumer waits on ack m (released after the producer's 3 arrivals on b), then waits b with
    # parity 0: n(b)=3 exactly, parity 0 passes (phase 2 completed). Real: correct, no deadlock.
    P = (INIT((b, 1), (m, 1)), BarSync(),
         Elect((MbarArrive(b, 1), MbarArrive(b, 1), MbarArrive(b, 1), MbarArrive(m, 1))))
    C = (BarSync(), MbarWait(m, 0), MbarWait(b, 0))
    return Kernel("deliberate_skip", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("b"), MBarrierDecl("m")))

def exit_during_syncthreads():
    # warp A exits; B and C __syncthreads: exit releases them. real: fine.
    return Kernel("exit_during_syncthreads",
                  (Process("A", (), warps=(0, 1)), Process("B", (BarSync(),), warps=(1, 2)),
                   Process("C", (BarSync(), BarSync()), warps=(2, 3))))

def exit_during_named_count():
    # bar.sync 1, 64 by B while the other participant A exits: per the old ISA text (barriers for
    # all threads only) a deadlock; PTX 9.x exit text: "Barriers exclusively waiting on arrivals
    # from exited threads are always released" (ambiguous for explicit counts).
    return Kernel("exit_during_named_count",
                  (Process("A", (), warps=(0, 1)), Process("B", (BarSync(1, 64),), warps=(1, 2))))

def named_prodcons():
    # PTX example: producer bar.arrive 0,64 / bar.sync 1,64; consumer bar.sync 0,64 / bar.arrive 1,64
    P = (For("k", 0, 3, (BarArrive(2, 64), BarSync(3, 64))),)
    C = (For("k", 0, 3, (BarSync(2, 64), BarArrive(3, 64))),)
    return Kernel("named_prodcons", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))))

def named_arrive_then_sync_same_bar():
    # PTX caution: a warp executing bar.arrive then bar.sync on the same barrier before reset is
    # counted twice: A's two arrivals complete 64 without B; B's later bar.sync starts a new
    # generation and hangs -> real deadlock (B).
    A = (BarArrive(1, 64), BarSync(1, 64))
    B = (BarSync(1, 64),)
    return Kernel("arrive_then_sync_same", (Process("A", A, warps=(0, 1)), Process("B", B, warps=(1, 2))))

def mixed_count_forms():
    # bar.sync 0 (all threads) in warp A and bar.sync 0, 64 in warp B; CTA = 64 threads.
    # real: PTX requires the same name *and thread count* across forms; hardware likely completes
    # (speculative). model: arrival-mismatch.
    return Kernel("mixed_count_forms",
                  (Process("A", (BarSync(),), warps=(0, 1)), Process("B", (BarSync(0, 64),), warps=(1, 2))))

def wg_lanes_barsync():
    # warpgroup (128 threads) where only 2 warps (Lanes(64)) do bar.sync 1, 96 with another warp
    # real: 64 + 32 = 96 -> completes.
    W = (Lanes(64, (BarSync(1, 96),)),)
    X = (BarSync(1, 96),)
    return Kernel("wg_lanes_barsync", (Process("wg", W, warps=(0, 4), threads=128),
                                       Process("x", X, warps=(4, 5))))

def testwait_branch_sym():
    # 3 symmetric consumer warps test-wait b once; those that see it completed arrive on m,
    # the others wait b and then arrive on m. m expects 3 arrivals; producer waits m. real: fine.
    P = (INIT((b, 1), (m, 3)), BarSync(), Elect((MbarArrive(b, 1),)), MbarWait(m, 0))
    C = (BarSync(), MbarTestWait("ok", b, 0),
         If(Var("ok").eq(1), (Elect((MbarArrive(m, 1),)),),
            (MbarWait(b, 0), Elect((MbarArrive(m, 1),)))))
    return Kernel("testwait_branch_sym", (Process("P", P, warps=(0, 1)),
                                          Process("C", C, warps=(1, 4), instances=3)),
                  (MBarrierDecl("b"), MBarrierDecl("m")))

def testwait_branch_sym_bug():
    # same, but consumers that saw ok=1 arrive twice (bug): m over-arrives when >=1 sees ok
    P = (INIT((b, 1), (m, 3)), BarSync(), Elect((MbarArrive(b, 1),)), MbarWait(m, 0))
    C = (BarSync(), MbarTestWait("ok", b, 0),
         If(Var("ok").eq(1), (Elect((MbarArrive(m, 1),)), Exit()),
            (MbarWait(b, 0),)), Elect((MbarArrive(m, 1),)))
    return Kernel("testwait_branch_sym_bug", (Process("P", P, warps=(0, 1)),
                                              Process("C", C, warps=(1, 4), instances=3)),
                  (MBarrierDecl("b"), MBarrierDecl("m")))

def poll_loop():
    # polling with test-wait in a bounded while: INCONCLUSIVE expected (loop-bound reachable)
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, 1),)))
    C = (BarSync(), While(Var("ok").eq(0), (MbarTestWait("ok", b, 0),), max_iters=4))
    return Kernel("poll_loop", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("b"),))

def param_trip_bug():
    # ring-like: producer K trips (K in 0..3), consumer min(K, 2) trips: the producer blocks on
    # the empty barrier when K=3 only. real: deadlock at K=3.
    F, E = MBarRef("f", Var("s")), MBarRef("e", Var("s"))
    adv = (Assign("s", Var("s") + 1), If(Var("s").eq(2), (Assign("s", 0), Assign("ph", Var("ph") ^ 1))))
    P = (Elect((MbarInit(MBarRef("f", 0), 1), MbarInit(MBarRef("f", 1), 1),
                MbarInit(MBarRef("e", 0), 1), MbarInit(MBarRef("e", 1), 1), MbarInitFence())),
         BarSync(),
         For("k", 0, Var("K"), (MbarWait(E, Var("ph")), Elect((MbarArrive(F, 1),)), *adv)))
    C = (BarSync(), For("k", 0, BinOp("min", Var("K"), Const(2)),
                        (MbarWait(F, Var("ph")), Elect((MbarArrive(E, 1),)), *adv)))
    return Kernel("param_trip_bug", (Process("P", P, warps=(0, 1), init=(("ph", 1),)),
                                     Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("f", 2), MBarrierDecl("e", 2)), params=(Param("K", 0, 3),))

def r6_lets_change_index():
    # token ring over one array: X waits t[0] then (s := 1) arrives t[s]; Y waits t[1], arrives t[0]
    t0, t1 = MBarRef("t", 0), MBarRef("t", 1)
    X = (Elect((MbarInit(t0, 1), MbarInit(t1, 1), MbarInitFence())), BarSync(),
         Elect((MbarArrive(t0, 1),)),
         For("r", 0, 2, (MbarWait(t0, Var("ph")), Assign("s", 1), Elect((MbarArrive(MBarRef("t", Var("s")), 1),)),
                         Assign("ph", Var("ph") ^ 1))))
    Y = (BarSync(),
         For("r", 0, 2, (MbarWait(t1, Var("ph")), Assign("s", 0), Elect((MbarArrive(MBarRef("t", Var("s")), 1),)),
                         Assign("ph", Var("ph") ^ 1))))
    return Kernel("r6_lets_change_index", (Process("X", X, warps=(0, 1)), Process("Y", Y, warps=(1, 2))),
                  (MBarrierDecl("t", 2),))

def r6_same_element():
    # wait b then arrive b (same element: not fused); two symmetric instances with count 2:
    # real: instance 1 waits phase 0 which needs both arrivals: deadlock (each waits before arriving)
    C = (BarSync(), MbarWait(b, 0), Elect((MbarArrive(b, 1),)))
    I = (INIT((b, 2)), BarSync())
    return Kernel("r6_same_element", (Process("I", I, warps=(0, 1)),
                                      Process("C", C, warps=(1, 3), instances=2)), (MBarrierDecl("b"),))

def r6_wait_then_bararrive():
    # consumers wait b, then bar.arrive 1, 96; producer bar.sync 1, 96 then re-arms b.
    P = (INIT((b, 1)), BarSync(),
         For("k", 0, 2, (Elect((MbarArrive(b, 1),)), BarSync(1, 96))))
    C = (BarSync(), For("k", 0, 2, (MbarWait(b, Var("ph")), BarArrive(1, 96), Assign("ph", Var("ph") ^ 1))))
    return Kernel("r6_wait_then_bararrive", (Process("P", P, warps=(0, 1)),
                                             Process("C", C, warps=(1, 3), instances=2)), (MBarrierDecl("b"),))

def r6_wait_then_bararrive_bug():
    # same but producer does not wait for the consumers before re-arming: consumers can fall
    # two phases behind -> parity aliasing / deadlock real.
    P = (INIT((b, 1)), BarSync(), For("k", 0, 3, (Elect((MbarArrive(b, 1),)),)))
    C = (BarSync(), For("k", 0, 3, (MbarWait(b, Var("ph")), BarArrive(1, 64), Assign("ph", Var("ph") ^ 1))))
    return Kernel("r6_wait_then_bararrive_bug", (Process("P", P, warps=(0, 1)),
                                                 Process("C", C, warps=(1, 3), instances=2)), (MBarrierDecl("b"),))

def identical_ctas_deadlock_one_param():
    # 2 identical CTAs, consumer waits twice on a barrier armed once when K==1: deadlock at K=1
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, 1),)))
    C = (BarSync(), For("k", 0, Var("K"), (MbarWait(b, Var("k") % 2),)))
    procs = []
    for c in range(2):
        procs += [Process("P", P, cta=c, warps=(0, 1)), Process("C", C, cta=c, warps=(1, 2))]
    return Kernel("identical_ctas_param", tuple(procs), (MBarrierDecl("b"),), params=(Param("K", 0, 2),),
                  num_ctas=2)

def ctas_share_only_cluster_barrier():
    # 2 CTAs; CTA 1's consumer has an extra wait that only passes if ... they share only the
    # cluster barrier; CTA 0 correct, CTA 1 missing its arrive -> deadlock in CTA 1 only.
    P = (INIT((b, 1)), ClusterArrive(True), ClusterWait(), Elect((MbarArrive(b, 1),)))
    P1 = (INIT((b, 1)), ClusterArrive(True), ClusterWait())
    C = (ClusterArrive(), ClusterWait(), MbarWait(b, 0))
    return Kernel("ctas_share_cluster", (Process("P", P, cta=0, warps=(0, 1)), Process("C", C, cta=0, warps=(1, 2)),
                                         Process("P", P1, cta=1, warps=(0, 1)), Process("C", C, cta=1, warps=(1, 2))),
                  (MBarrierDecl("b"),), num_ctas=2)

def multicast_ok():
    # CTA 0 multicasts into both; each CTA arms its own b; correct. real: fine.
    P0 = (INIT((b, 1)), ClusterArrive(True), ClusterWait(),
          Elect((MbarArriveExpectTx(b, 64), TmaLoad(b, 64, multicast=Const(3)))), MbarWait(b, 0),
          ClusterArrive(), ClusterWait())
    P1 = (INIT((b, 1)), ClusterArrive(True), ClusterWait(), Elect((MbarArriveExpectTx(b, 64),)),
          MbarWait(b, 0), ClusterArrive(), ClusterWait())
    return Kernel("multicast_ok", (Process("P", P0, cta=0), Process("P", P1, cta=1)),
                  (MBarrierDecl("b"),), num_ctas=2)

def multicast_missing_expect_peer():
    # CTA 1 never arms b but waits on it: tx -64 forever -> deadlock (real).
    P0 = (INIT((b, 1)), ClusterArrive(True), ClusterWait(),
          Elect((MbarArriveExpectTx(b, 64), TmaLoad(b, 64, multicast=Const(3)))), MbarWait(b, 0),
          ClusterArrive(), ClusterWait())
    P1 = (INIT((b, 1)), ClusterArrive(True), ClusterWait(), Elect((MbarArrive(b, 1),)),
          MbarWait(b, 0), ClusterArrive(), ClusterWait())
    return Kernel("multicast_missing_expect_peer", (Process("P", P0, cta=0), Process("P", P1, cta=1)),
                  (MBarrierDecl("b"),), num_ctas=2)

def negative_arrive_count():
    # count expression 0 - 1 = -1: PTX requires count in [1, 2^20-1]; model accepts, and the
    # pending count grows. Here: init count 1, arrive(-1) then arrive(2): completes in the model.
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, Var("z") - 1), MbarArrive(b, 2))))
    C = (BarSync(), MbarWait(b, 0))
    return Kernel("negative_arrive_count", (Process("P", P, warps=(0, 1), init=(("z", 0),)),
                                            Process("C", C, warps=(1, 2))), (MBarrierDecl("b"),))

def zero_arrive_count():
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, 0), MbarArrive(b, 1))))
    C = (BarSync(), MbarWait(b, 0))
    return Kernel("zero_arrive_count", (Process("P", P, warps=(0, 1)), Process("C", C, warps=(1, 2))),
                  (MBarrierDecl("b"),))

def remote_wait():
    # a wait on another CTA's mbarrier (try_wait only supports .shared::cta): model accepts.
    P0 = (INIT((b, 1)), ClusterArrive(True), ClusterWait(), Elect((MbarArrive(b, 1),)),
          ClusterArrive(), ClusterWait())
    P1 = (ClusterArrive(True), ClusterWait(), MbarWait(MBarRef("b", 0, cta=0), 0),
          ClusterArrive(), ClusterWait())
    return Kernel("remote_wait", (Process("P", P0, cta=0), Process("Q", P1, cta=1)),
                  (MBarrierDecl("b"),), num_ctas=2)

def int_overflow():
    # x = 65536 * 65536 is 2^32 in Python, 0 in 32-bit Promela ints: the branch differs.
    P = (INIT((b, 1)), BarSync(), Assign("x", Const(65536)), Assign("x", Var("x") * 65536),
         If(Var("x").eq(0), (MbarWait(b, 0),), ()))
    return Kernel("int_overflow", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))

def tx_overflow():
    P = (INIT((b, 1)), BarSync(), Elect((MbarArriveExpectTx(b, 1 << 20),)), )
    return Kernel("tx_overflow", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))

def warp_arrive_expect_tx():
    # whole warp (32 threads) arrive.expect_tx(16) each: tx += 512, pending -= 32; TMA 512 bytes.
    P = (INIT((b, 32)), BarSync(), MbarArriveExpectTx(b, 16), Elect((TmaLoad(b, 512),)), MbarWait(b, 0))
    return Kernel("warp_arrive_expect_tx", (Process("P", P, warps=(0, 1)),), (MBarrierDecl("b"),))

def tma_no_elect_warpgroup():
    # TmaLoad by a 128-thread instance without Elect: modelled as ONE load (once per instance);
    # real PTX executed by 128 threads issues 128 loads (or 4, one per warp, if the DSL elects per warp)
    P = (INIT((b, 1)), BarSync(), Elect((MbarArriveExpectTx(b, 64),)), TmaLoad(b, 64), MbarWait(b, 0))
    return Kernel("tma_no_elect_wg", (Process("P", P, warps=(0, 4), threads=128),), (MBarrierDecl("b"),))

def cluster_double_arrive():
    return Kernel("cluster_double_arrive", (Process("A", (ClusterArrive(), ClusterArrive(), ClusterWait())),))

def arrive_after_completion():
    # count 1; two producers each arrive once (2 phases); consumer waits parity 0 only, with
    # back-pressure none: real: fine (consumer passes at n=1; at n=2, parity 0 -> blocks!) -> bug
    P = (INIT((b, 1)), BarSync(), Elect((MbarArrive(b, 1),)))
    Q = (BarSync(), Elect((MbarArrive(b, 1),)))
    C = (BarSync(), MbarWait(b, 0))
    return Kernel("arrive_after_completion", (Process("P", P, warps=(0, 1)), Process("Q", Q, warps=(1, 2)),
                                              Process("C", C, warps=(2, 3))), (MBarrierDecl("b"),))



# ---------------------------------------------------------------------------- one warp per instance
# The v2 core rejects instances of more than 32 threads (tma_no_elect_warpgroup, wg_lanes_barsync,
# wg_lockstep: "error"); these are the same kernels written as the hardware runs them, one warp
# per instance.

def wg_lanes_barsync_warps():
    # the warpgroup as 4 warps: warps 0-1 (lanes 0..63) bar.sync 1, 96 with warp x: 96 threads
    W01 = (BarSync(1, 96),)
    return Kernel("wg_lanes_barsync_warps", (Process("wg01", W01, warps=(0, 2), instances=2),
                                             Process("wg23", (), warps=(2, 4), instances=2),
                                             Process("x", (BarSync(1, 96),), warps=(4, 5))))


def tma_no_elect_warps():
    # a TMA load without elect, executed by the 4 warps of a warpgroup: one copy per thread (128
    # loads of 64 bytes) against one expect_tx(64)
    P = (INIT((b, 1)), BarSync(), Elect((MbarArriveExpectTx(b, 64),)), TmaLoad(b, 64), MbarWait(b, 0))
    W = (BarSync(), TmaLoad(b, 64), MbarWait(b, 0))
    return Kernel("tma_no_elect_warps", (Process("P", P, warps=(0, 1)),
                                         Process("W", W, warps=(1, 4), instances=3)),
                  (MBarrierDecl("b"),))


CASES = [
    # ------------------------------------------------------------ p_cluster.py (issue 7 item 7)
    # PTX 9.7.13.3: barrier.cluster.wait waits for all *non-exited* threads of the cluster to
    # arrive; an arrival by a thread that then exits must not count.
    (p1_false_verified, {"deadlock"},
     "A arrives and exits; C never arrives (waits for m, released after B's cluster wait): B hangs"),
    (p1_control, {"deadlock"}, "A arrives and waits; C never arrives: A and B hang"),
    (p1b_false_alarm, {"verified"}, "A arrives and exits; B and C (the non-exited) both arrive"),
    (p1c_two_ctas, {"verified"}, "the same across two CTAs"),
    (p1d_false_alarm, {"verified"},
     "B and C wait for each other only (A exited): both pass, C releases m, B passes"),
    # ------------------------------------------------------------ p_lifetime.py (item 9)
    (p2_multicast_into_exited_cta, {"cluster-lifetime"},
     "a multicast writes the shared memory of a CTA that may have exited: undefined"),
    (p3_remote_arrive_into_exited_cta, {"cluster-lifetime"},
     "a remote arrive into a CTA that may have exited: undefined"),
    # ------------------------------------------------------------ p_lockstep.py (item 9)
    (wg_lockstep, {"error"},
     "HARDWARE: parity-aliasing (warp 2 of the 64-thread instance never releases c and can fall "
     "two phases behind, as wg_split shows); a 64-thread instance is not valid SyncIR"),
    (wg_split, {"parity-aliasing"}, "warp 2 can fall two phases of b behind"),
    # ------------------------------------------------------------ p_batch2.py (items 8, 9)
    (param_trip_bug2, {"deadlock"}, "K=4: the producer's 4th wait on e[1] is never released"),
    (testwait_sym_bug2, {"deadlock"}, "consumers that saw b complete never release m"),
    (int_overflow_hides_deadlock, {"deadlock", "inconclusive:integer"},
     "x = 2^32 is not 0 (SyncIR integers are unbounded): the wait on b never passes; a model "
     "that computes in 32 bits must say it cannot decide (integer-range), never VERIFIED"),
    (tx_product_overflow, {"tx-mismatch", "invalid-operand"},
     "each thread's expect_tx(2^27) exceeds the tx-count range 2^20-1 (PTX 9.7.13.15.2)"),
    (tx_const_overflow, {"tx-mismatch", "invalid-operand", "inconclusive:integer"},
     "an expect_tx of 2^32+64 bytes is outside the tx-count range (PTX 9.7.13.15.2); a 32-bit "
     "model may say it cannot decide (integer-range), never VERIFIED"),
    (bararrive_no_count_exit, {"error"},
     "PTX 9.7.13.1: a non-zero thread count is required for barrier.arrive"),
    (exit_in_lanes, {"error"}, "an exit by part of a warp is not modelled: rejected, not a crash"),
    # ------------------------------------------------------------ p_batch.py
    (tx_before_expect, {"verified"}, "tx may go negative before the expect (PTX 9.7.13.15.2)"),
    (expect_after_arrive, {"deadlock"},
     "the arrive completes phase 0 at once; phase 1 gets the bytes but no arrival: the wait "
     "for phase 1 hangs"),
    (two_phase_alias, {"parity-aliasing"},
     "HARDWARE: deadlock when both arrivals land before the consumer's first wait (its parity-0 "
     "wait then sees phase bit 0 again); semantics.md names that hazard parity-aliasing"),
    (deliberate_skip, {"parity-aliasing"},
     "HARDWARE: runs (the wait sees n=3, phase bit 1, and passes); semantics.md flags a wait "
     "that skips two or more phases conservatively (parity aliasing)"),
    (exit_during_syncthreads, {"verified"}, "exit releases a bar.sync for all threads (PTX exit)"),
    (exit_during_named_count, {"arrival-mismatch"},
     "HARDWARE: B hangs (exit releases only barriers for all threads, not bar.sync 1, 64); "
     "the deadlock is classified arrival-mismatch: 64 exceeds the threads that can arrive"),
    (named_prodcons, {"verified"}, "the PTX producer/consumer example with bar.arrive/bar.sync"),
    (named_arrive_then_sync_same_bar, {"deadlock"},
     "A's bar.arrive and bar.sync fill barrier 1 (64) alone; B's later bar.sync hangs"),
    (mixed_count_forms, {"arrival-mismatch"},
     "HARDWARE: probably completes (64 = the CTA size); PTX does not define mixing the forms, "
     "semantics.md reports a generation started with another count (arrival-mismatch)"),
    (wg_lanes_barsync, {"error"}, "a 128-thread instance is not valid SyncIR (see *_warps)"),
    (wg_lanes_barsync_warps, {"verified"}, "64 + 32 threads reach bar.sync 1, 96"),
    (testwait_branch_sym, {"verified"}, "every consumer arrives on m exactly once"),
    (testwait_branch_sym_bug, {"verified"},
     "not a bug after all: a consumer that saw ok=1 arrives once and exits before the second "
     "arrive, so every consumer arrives on m exactly once"),
    (poll_loop, {"inconclusive:loop"}, "a bounded poll loop: the model bound is reachable"),
    (param_trip_bug, {"verified"},
     "not a bug after all: with 2 stages the producer runs at most 2 trips ahead, and the "
     "consumer's min(K, 2) trips release e[0] and e[1] once each, all the producer needs for "
     "K <= 4 (param_trip_bug2 is the deadlocking version)"),
    (r6_lets_change_index, {"verified"}, "a token ring over t[0], t[1]"),
    (r6_same_element, {"deadlock"}, "each consumer waits for arrivals that come after its wait"),
    (r6_wait_then_bararrive, {"verified"}, "the producer waits for the consumers' bar.arrive"),
    (r6_wait_then_bararrive_bug, {"parity-aliasing"}, "consumers can fall two phases behind"),
    (identical_ctas_deadlock_one_param, {"deadlock"}, "K=2: the second wait is never released"),
    (ctas_share_only_cluster_barrier, {"deadlock"}, "CTA 1's consumer waits for an arrive nobody does"),
    (multicast_ok, {"verified"}, "each CTA arms its barrier for the multicast bytes"),
    (multicast_missing_expect_peer, {"tx-mismatch", "pending-at-exit"},
     "CTA 1 never arms b for the 64 multicast bytes: its wait hangs when they land first "
     "(tx-count -64), or CTA 1 exits with its copy still in flight"),
    (negative_arrive_count, {"arrival-mismatch", "invalid-operand"},
     "PTX 9.7.13.15.13: the arrive count must be in 1..2^20-1"),
    (zero_arrive_count, {"arrival-mismatch", "invalid-operand"},
     "PTX 9.7.13.15.13: the arrive count must be in 1..2^20-1"),
    (remote_wait, {"scope"}, "try_wait only names the executing CTA's shared memory (PTX 9.7.13.15.16)"),
    (int_overflow, {"verified", "inconclusive:integer"},
     "x = 2^32 is not 0 in SyncIR's unbounded integers: no wait; a 32-bit model cannot decide"),
    (tx_overflow, {"tx-mismatch", "invalid-operand"}, "expect_tx(2^20) exceeds 2^20-1"),
    (warp_arrive_expect_tx, {"verified"}, "32 threads x 16 bytes = the 512-byte load"),
    (tma_no_elect_warpgroup, {"error"}, "a 128-thread instance is not valid SyncIR (see *_warps)"),
    (tma_no_elect_warps, {"pending-at-exit", "tx-mismatch"},
     "128 threads issue one 64-byte load each against one expect_tx(64): the first 64 bytes "
     "complete the phase and everyone exits with 127 loads in flight, or loads land first and "
     "the tx-count never returns to 0"),
    (cluster_double_arrive, {"arrival-mismatch"}, "each thread arrives once per cluster phase"),
    (arrive_after_completion, {"parity-aliasing"},
     "HARDWARE: deadlock when both arrivals land before C's wait (n=2, phase bit 0 again); "
     "semantics.md names it parity-aliasing"),
]


def outcome(r) -> str:
    if r.verdict == "violation":
        return r.violations[0].kind
    if r.verdict == "inconclusive":
        return "inconclusive:" + " | ".join(r.reasons)
    return r.verdict


def matches(got: str, expect: set[str]) -> bool:
    for e in expect:
        if e.startswith("inconclusive:"):
            if got.startswith("inconclusive:") and e.split(":", 1)[1] in got.lower():
                return True
        elif got == e:
            return True
    return False


@pytest.mark.parametrize("engine", ["spin-reduced", "spin-plain", "hb"])
@pytest.mark.parametrize("build,expect,why", CASES, ids=[f.__name__ for f, _, _ in CASES])
def test_adversarial(build, expect, why, engine):
    """SPIN (reduced and plain encodings) and the happens-before engine alone (which may leave a
    case outside its class: INCONCLUSIVE, never a wrong verdict)."""
    try:
        k = build()
    except (ValueError, TypeError) as e:  # the IR itself refuses the kernel
        got = "error"
        assert matches(got, expect), f"{build.__name__} cannot be built ({e}); expected {expect}: {why}"
        return
    r = verify_kernel(k, opts=CheckOptions(timeout_s=300, memory_mb=2048,
                                           reduce=engine != "spin-plain",
                                           engine="hb" if engine == "hb" else "spin"))
    got = outcome(r)
    if engine == "hb" and r.verdict == "inconclusive" and \
            any("outside the happens-before" in why_ for why_ in r.reasons):
        return
    assert matches(got, expect), f"{build.__name__}: got {got}, expected {sorted(expect)}: {why}"


for _build, _, _ in CASES:  # builders named test* (testwait_...) are not tests themselves
    _build.__test__ = False
