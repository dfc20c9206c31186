"""Reference interpreter of SyncIR: plain-Python semantics (docs/semantics.md).

Two uses: `replay` confirms every SPIN counterexample step by step before it is shown, and
`explore` searches small models exhaustively (breadth-first, so counterexamples are shortest),
as the oracle of the differential tests against the Promela lowering.
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field

from .flat import (CLUSTER_ARRIVED, CLUSTER_GEN, Bound, Branch, BarResume, End, FlatProcess, Goto,
                   Let, Op, flatten)
from .ir import (BarArrive, BarSync, BinOp, ClusterArrive, ClusterWait, Const, Kernel, Loc,
                 MBarRef, MbarArrive,
                 MbarArriveExpectTx, MbarExpectTx, MbarInit, MbarInitFence, MbarTestWait,
                 MbarWait, NOLOC, Select, TmaLoad, UnOp, Unsupported, Var)
from .trace import Complete, Event, ParamChoice, Step

TX_LIMIT = (1 << 20) - 1
PHASE_LIMIT = 32767
NUM_NAMED_BARRIERS = 16

# mbarrier tuple fields
VIS, EXPECTED, PENDING, TX, N, INIT_BY = range(6)
MB_FRESH = (0, 0, 0, 0, 0, -1)
# named barrier tuple fields
NB_EXPECTED, NB_ARRIVED, NB_GEN = range(3)


class ModelError(Exception):
    """The SyncIR itself is ill-formed at run time (division by zero, index out of range)."""


@dataclass
class Violation(Exception):
    kind: str
    message: str
    loc: Loc = NOLOC
    process: int = -1
    instance: int = -1
    pc: int = -1

    def __str__(self):
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class State:
    params: tuple[int, ...]
    pcs: tuple[int, ...]                   # per global instance
    locals: tuple[tuple[int, ...], ...]    # per global instance, in FlatProcess.locals order
    obs: tuple[tuple[int, ...], ...]       # per global instance, per waited barrier slot
    mbars: tuple[tuple[int, ...], ...]     # per barrier slot (cta, array, index)
    nbars: tuple[tuple[int, int, int], ...]  # per (cta, id)
    alive: tuple[int, ...]                 # live threads per CTA
    inflight: tuple[int, ...]              # per async key (process, pc, cta, index)
    cluster: tuple[int, int] = (0, 0)      # cluster barrier: (threads arrived, generation)


_BINOPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "min": min, "max": max, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b), "and": lambda a, b: int(bool(a) and bool(b)),
    "or": lambda a, b: int(bool(a) or bool(b)),
}


def eval_expr(e, env) -> int:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise ModelError(f"undefined variable {e.name!r}") from None
    if isinstance(e, UnOp):
        v = eval_expr(e.arg, env)
        return -v if e.op == "-" else int(not v)
    if isinstance(e, Select):
        return eval_expr(e.then, env) if eval_expr(e.cond, env) else eval_expr(e.else_, env)
    if isinstance(e, BinOp):
        a, b = eval_expr(e.lhs, env), eval_expr(e.rhs, env)
        op = e.op
        if op in ("//", "%"):
            if b <= 0:
                raise ModelError(f"division by {b}")
            return a // b if op == "//" else a % b
        return _BINOPS[op](a, b)
    raise ModelError(f"not an expression: {e!r}")


@dataclass
class Instance:
    gid: int        # global instance index
    process: int    # index into kernel.processes
    index: int      # instance number within its process
    cta: int
    threads: int


class Machine:
    """The transition system of one kernel."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.flat: tuple[FlatProcess, ...] = flatten(kernel)
        self.instances: list[Instance] = []
        for pi, p in enumerate(kernel.processes):
            for j in range(p.instances):
                self.instances.append(Instance(len(self.instances), pi, j, p.cta, p.threads))
        self.gid = {(i.process, i.index): i.gid for i in self.instances}
        self.param_names = [p.name for p in kernel.params]
        # barrier slots
        self.mbar_slot: dict[tuple[int, str, int], int] = {}
        for cta in range(kernel.num_ctas):
            for m in kernel.mbarriers:
                for k in range(m.size):
                    self.mbar_slot[(cta, m.name, k)] = len(self.mbar_slot)
        self.slot_key = {v: k for k, v in self.mbar_slot.items()}
        # per process: the barrier arrays it waits on -> obs slots (array, index)
        self.obs_slots: list[dict[tuple[str, int], int]] = []
        for fp in self.flat:
            names = sorted({ins.stmt.bar.name for ins in fp.code if isinstance(ins, Op)
                            and isinstance(ins.stmt, (MbarWait, MbarTestWait))})
            slots = {}
            for n in names:
                for k in range(kernel.mbarrier(n).size):
                    slots[(n, k)] = len(slots)
            self.obs_slots.append(slots)
        # async keys: (process, pc, cta, index) for each TmaLoad
        self.async_keys: list[tuple[int, int, int, int]] = []
        for pi, fp in enumerate(self.flat):
            for pc, ins in enumerate(fp.code):
                if isinstance(ins, Op) and isinstance(ins.stmt, TmaLoad):
                    size = kernel.mbarrier(ins.stmt.bar.name).size
                    for cta in range(kernel.num_ctas):
                        for k in range(size):
                            self.async_keys.append((pi, pc, cta, k))
        self.async_slot = {k: i for i, k in enumerate(self.async_keys)}
        # static arrivers per (CTA, barrier array), for deadlock classification: local arrives
        # reach their own CTA, remote ones (bar.cta given) any CTA
        self.arrivers: dict[tuple[int, str], set[int]] = {}
        for inst in self.instances:
            for ins in self.flat[inst.process].code:
                if isinstance(ins, Op) and isinstance(ins.stmt, (MbarArrive, MbarArriveExpectTx)):
                    bar = ins.stmt.bar
                    for cta in (range(kernel.num_ctas) if bar.cta is not None else (inst.cta,)):
                        self.arrivers.setdefault((cta, bar.name), set()).add(inst.gid)

    # ------------------------------------------------------------------ helpers

    def env(self, s: State, gid: int) -> dict[str, int]:
        inst = self.instances[gid]
        fp = self.flat[inst.process]
        env = dict(zip(self.param_names, s.params))
        env.update(zip(fp.locals, s.locals[gid]))
        return env

    def initial_states(self) -> list[tuple[tuple[ParamChoice, ...], State]]:
        out = []
        ranges = [p.values for p in self.kernel.params]
        for values in itertools.product(*ranges):
            choices = tuple(ParamChoice(n, v) for n, v in zip(self.param_names, values))
            locals_ = []
            for inst in self.instances:
                fp = self.flat[inst.process]
                init = dict(fp.process.init)
                locals_.append(tuple(init.get(n, 0) for n in fp.locals))
            s = State(
                params=tuple(values),
                pcs=tuple(0 for _ in self.instances),
                locals=tuple(locals_),
                obs=tuple(tuple(0 for _ in self.obs_slots[i.process]) for i in self.instances),
                mbars=tuple(MB_FRESH for _ in self.mbar_slot),
                nbars=tuple((0, 0, 0) for _ in range(self.kernel.num_ctas * NUM_NAMED_BARRIERS)),
                alive=tuple(self.kernel.cta_threads(c) for c in range(self.kernel.num_ctas)),
                inflight=tuple(0 for _ in self.async_keys),
                cluster=(0, 0),
            )
            w = _Writer(self, s)
            for inst in self.instances:
                w.run_local(inst.gid)
            out.append((choices, w.freeze()))
        return out

    def at(self, s: State, gid: int):
        return self.flat[self.instances[gid].process].code[s.pcs[gid]]

    def ended(self, s: State, gid: int) -> bool:
        return s.pcs[gid] >= len(self.flat[self.instances[gid].process].code)

    def enabled(self, s: State) -> list[Event]:
        evs: list[Event] = []
        for inst in self.instances:
            if self.ended(s, inst.gid):
                continue
            if self.is_enabled(s, inst.gid):
                evs.append(Step(inst.process, inst.index, s.pcs[inst.gid]))
        for i, k in enumerate(self.async_keys):
            if s.inflight[i] > 0:
                evs.append(Complete(*k))
        return evs

    def is_enabled(self, s: State, gid: int) -> bool:
        ins = self.at(s, gid)
        if isinstance(ins, BarResume):
            env = self.env(s, gid)
            cta = self.instances[gid].cta
            bid = eval_expr(ins.stmt.barrier_id, env)
            return s.nbars[cta * NUM_NAMED_BARRIERS + bid][NB_GEN] != env[ins.snap]
        if isinstance(ins, Op) and isinstance(ins.stmt, MbarWait):
            return self.wait_status(s, gid, ins.stmt) != "block"
        if isinstance(ins, Op) and isinstance(ins.stmt, ClusterWait):
            env = self.env(s, gid)
            return env[CLUSTER_ARRIVED] == 0 or s.cluster[1] != env[CLUSTER_GEN]
        return True

    def wait_status(self, s: State, gid: int, st) -> str:
        """'pass', 'block', or a violation kind for a wait/test-wait of instance gid."""
        env = self.env(s, gid)
        inst = self.instances[gid]
        slot = self.resolve(inst, st.bar, env)
        mb = s.mbars[slot]
        if self.vis_violation(mb, gid, tma=False):
            return "uninitialized-barrier"
        parity = eval_expr(st.parity, env) & 1
        _, name, idx = self.slot_key[slot]
        o = s.obs[gid][self.obs_slots[inst.process][(name, idx)]]
        lag = mb[N] - o
        if (lag >= 2 and parity == (o & 1)) or lag >= 3:
            return "parity-aliasing"
        return "pass" if (mb[N] & 1) != parity else "block"

    @staticmethod
    def vis_violation(mb, gid: int, tma: bool) -> bool:
        vis = mb[VIS]
        if vis == 0:
            return True
        if vis >= 3:
            return False
        if mb[INIT_BY] != gid:
            return True
        return tma and vis < 2

    def resolve(self, inst: Instance, ref: MBarRef, env) -> int:
        cta = inst.cta if ref.cta is None else eval_expr(ref.cta, env)
        idx = eval_expr(ref.index, env)
        key = (cta, ref.name, idx)
        if key not in self.mbar_slot:
            raise ModelError(f"mbarrier {ref.name}[{idx}] in CTA {cta} does not exist")
        return self.mbar_slot[key]

    def is_deadlock(self, s: State) -> bool:
        return (not self.enabled(s)) and any(not self.ended(s, i.gid) for i in self.instances)

    def step(self, s: State, ev: Event, log: "ReplayLog | None" = None) -> State:
        """Apply one event; raises Violation when the step violates a property."""
        w = _Writer(self, s, log)
        if isinstance(ev, Step):
            gid = self.pick_instance(s, ev)
            w.exec_visible(gid)
            w.run_local(gid)
        elif isinstance(ev, Complete):
            w.complete(ev)
        else:
            raise ModelError(f"not a step: {ev}")
        return w.freeze()

    def pick_instance(self, s: State, ev: Step) -> int:
        if ev.instance >= 0:
            return self.gid[(ev.process, ev.instance)]
        # counted processes name only the class: take the first instance at that pc
        for inst in self.instances:
            if inst.process == ev.process and s.pcs[inst.gid] == ev.pc:
                return inst.gid
        raise ModelError(f"no instance of process {ev.process} at pc {ev.pc}")


@dataclass
class ReplayLog:
    """Diagnostics kept while replaying a trace (not part of the explored state)."""
    arrivals: dict[int, list[int]] = field(default_factory=dict)   # slot -> gids, current phase
    ever_arrived: dict[int, set[int]] = field(default_factory=dict)  # slot -> gids, any phase
    last_expect: dict[int, Loc] = field(default_factory=dict)      # slot -> loc of last expect_tx
    init_loc: dict[int, Loc] = field(default_factory=dict)


class _Writer:
    """Mutable copy of a State for the duration of one step."""

    def __init__(self, m: Machine, s: State, log: ReplayLog | None = None):
        self.m = m
        self.params = s.params
        self.pcs = list(s.pcs)
        self.locals = [list(x) for x in s.locals]
        self.obs = [list(x) for x in s.obs]
        self.mbars = [list(x) for x in s.mbars]
        self.nbars = [list(x) for x in s.nbars]
        self.alive = list(s.alive)
        self.inflight = list(s.inflight)
        self.cluster = list(s.cluster)
        self.log = log

    def freeze(self) -> State:
        return State(self.params, tuple(self.pcs), tuple(tuple(x) for x in self.locals),
                     tuple(tuple(x) for x in self.obs), tuple(tuple(x) for x in self.mbars),
                     tuple(tuple(x) for x in self.nbars), tuple(self.alive), tuple(self.inflight),
                     tuple(self.cluster))

    # -- environment
    def env(self, gid: int) -> dict[str, int]:
        inst = self.m.instances[gid]
        fp = self.m.flat[inst.process]
        env = dict(zip(self.m.param_names, self.params))
        env.update(zip(fp.locals, self.locals[gid]))
        return env

    def set_local(self, gid: int, name: str, value: int):
        fp = self.m.flat[self.m.instances[gid].process]
        self.locals[gid][fp.locals.index(name)] = value

    def fail(self, kind: str, msg: str, gid: int = -1, loc: Loc = NOLOC):
        if gid >= 0:
            inst = self.m.instances[gid]
            raise Violation(kind, msg, loc, inst.process, inst.index, self.pcs[gid])
        raise Violation(kind, msg, loc)

    def name(self, gid: int) -> str:
        inst = self.m.instances[gid]
        return self.m.kernel.processes[inst.process].instance_name(inst.index)

    def bar_name(self, slot: int) -> str:
        cta, name, idx = self.m.slot_key[slot]
        return f"{name}[{idx}]" + (f" of CTA {cta}" if self.m.kernel.num_ctas > 1 else "")

    # -- local code
    def run_local(self, gid: int):
        code = self.m.flat[self.m.instances[gid].process].code
        while self.pcs[gid] < len(code):
            ins = code[self.pcs[gid]]
            if isinstance(ins, Let):
                self.set_local(gid, ins.var, eval_expr(ins.value, self.env(gid)))
                self.pcs[gid] += 1
            elif isinstance(ins, Branch):
                self.pcs[gid] = self.pcs[gid] + 1 if eval_expr(ins.cond, self.env(gid)) else ins.target
            elif isinstance(ins, Goto):
                self.pcs[gid] = ins.target
            elif isinstance(ins, Bound):
                v = self.env(gid)[ins.counter] + 1
                if v > ins.limit:
                    self.fail("loop-bound", f"{self.name(gid)}: while loop ran past its bound of "
                              f"{ins.limit} iterations", gid, ins.loc)
                self.set_local(gid, ins.counter, v)
                self.pcs[gid] += 1
            else:
                return

    # -- visible instructions
    def exec_visible(self, gid: int):
        m = self.m
        inst = m.instances[gid]
        code = m.flat[inst.process].code
        ins = code[self.pcs[gid]]
        if isinstance(ins, End):
            self.exit(gid, ins.loc)
            self.pcs[gid] = len(code)
            return
        if isinstance(ins, BarResume):
            self.pcs[gid] += 1
            return
        st = ins.stmt
        env = self.env(gid)
        T = inst.threads if ins.lanes is None else ins.lanes
        if isinstance(st, MbarInit):
            slot = m.resolve(inst, st.bar, env)
            mb = self.mbars[slot]
            if mb[VIS] != 0:
                self.fail("barrier-reinit", f"{self.name(gid)} initializes {self.bar_name(slot)} "
                          "again while it is live (no mbarrier.inval)", gid, st.loc)
            count = eval_expr(st.count, env)
            if not 1 <= count <= TX_LIMIT:
                self.fail("arrival-mismatch", f"{self.bar_name(slot)} initialized with count "
                          f"{count}, outside 1..{TX_LIMIT}", gid, st.loc)
            self.mbars[slot] = [1, count, count, 0, 0, gid]
            if self.log is not None:
                self.log.init_loc[slot] = st.loc
        elif isinstance(st, MbarInitFence):
            for slot, mb in enumerate(self.mbars):
                if mb[VIS] == 1 and mb[INIT_BY] == gid:
                    mb[VIS] = 2
        elif isinstance(st, (MbarArrive, MbarArriveExpectTx, MbarExpectTx)):
            slot = m.resolve(inst, st.bar, env)
            self.check_vis(slot, gid, st, tma=False)
            if isinstance(st, (MbarArriveExpectTx, MbarExpectTx)):
                self.add_tx(slot, T * eval_expr(st.bytes, env), gid, st.loc)
                if self.log is not None:
                    self.log.last_expect[slot] = st.loc
            if isinstance(st, MbarExpectTx):
                self.try_complete(slot)
            else:
                count = T * (eval_expr(st.count, env) if isinstance(st, MbarArrive) else 1)
                self.arrive(slot, count, gid, st.loc)
        elif isinstance(st, (MbarWait, MbarTestWait)):
            status = m.wait_status(self.freeze(), gid, st)
            slot = m.resolve(inst, st.bar, env)
            if status == "uninitialized-barrier":
                self.check_vis(slot, gid, st, tma=False)
            if status == "parity-aliasing":
                _, name, idx = m.slot_key[slot]
                o = self.obs[gid][m.obs_slots[inst.process][(name, idx)]]
                self.fail("parity-aliasing",
                          f"{self.name(gid)} waits on {self.bar_name(slot)} with parity "
                          f"{eval_expr(st.parity, env) & 1}, but the barrier completed "
                          f"{self.mbars[slot][N] - o} phases since this waiter last observed it: "
                          "the parity no longer names the phase it waits for", gid, st.loc)
            passed = status == "pass"
            if passed:
                _, name, idx = m.slot_key[slot]
                self.obs[gid][m.obs_slots[inst.process][(name, idx)]] = self.mbars[slot][N]
            if isinstance(st, MbarTestWait):
                self.set_local(gid, st.dest, int(passed))
        elif isinstance(st, (BarSync, BarArrive)):
            self.bar_arrive(gid, st, env, T)
        elif isinstance(st, TmaLoad):
            for slot in self.tma_targets(inst, st, env, gid):
                self.check_vis(slot, gid, st, tma=True)
                cta, name, idx = m.slot_key[slot]
                self.inflight[m.async_slot[(inst.process, self.pcs[gid], cta, idx)]] += 1
        elif isinstance(st, ClusterArrive):
            if env[CLUSTER_ARRIVED]:
                self.fail("arrival-mismatch", f"{self.name(gid)} arrives on the cluster barrier "
                          "twice without waiting in between", gid, st.loc)
            self.set_local(gid, CLUSTER_ARRIVED, 1)
            self.set_local(gid, CLUSTER_GEN, self.cluster[1])
            self.cluster[0] += T
            self.try_complete_cluster()
        elif isinstance(st, ClusterWait):
            if not env[CLUSTER_ARRIVED]:
                self.fail("arrival-mismatch", f"{self.name(gid)} waits on the cluster barrier "
                          "without having arrived on it", gid, st.loc)
            self.set_local(gid, CLUSTER_ARRIVED, 0)
        elif isinstance(st, Unsupported):
            pass  # the pipeline refuses kernels with Unsupported ops before checking
        else:
            raise ModelError(f"unknown op {st!r}")
        self.pcs[gid] += 1

    def tma_targets(self, inst: Instance, st: TmaLoad, env, gid: int) -> list[int]:
        if st.multicast is None:
            return [self.m.resolve(inst, st.bar, env)]
        mask = eval_expr(st.multicast, env)
        ctas = [c for c in range(self.m.kernel.num_ctas) if mask >> c & 1]
        if not ctas or mask >> self.m.kernel.num_ctas:
            self.fail("scope", f"multicast mask {mask:#x} names CTAs outside the cluster of "
                      f"{self.m.kernel.num_ctas}", gid, st.loc)
        idx = eval_expr(st.bar.index, env)
        return [self.m.mbar_slot[(c, st.bar.name, idx)] for c in ctas]

    def try_complete_cluster(self):
        live = sum(self.alive)
        if self.cluster[0] > 0 and self.cluster[0] >= live:
            self.cluster[0] = 0
            self.cluster[1] += 1
            for mb in self.mbars:
                if mb[VIS] == 2:
                    mb[VIS] = 3

    def check_vis(self, slot: int, gid: int, st, tma: bool):
        mb = self.mbars[slot]
        if Machine.vis_violation(mb, gid, tma):
            what = {0: "before it is initialized",
                    1: "before its init is fenced (fence.mbarrier_init) and published by a barrier",
                    2: "before its init is published by a CTA barrier after the fence"}[mb[VIS]]
            if mb[VIS] == 1 and mb[INIT_BY] == gid and tma:
                what = "with a TMA before its init is fenced (fence.mbarrier_init)"
            self.fail("uninitialized-barrier", f"{self.name(gid)} uses {self.bar_name(slot)} {what}",
                      gid, st.loc)

    def add_tx(self, slot: int, delta: int, gid: int, loc: Loc):
        mb = self.mbars[slot]
        mb[TX] += delta
        if abs(mb[TX]) > TX_LIMIT:
            self.fail("tx-mismatch", f"tx-count of {self.bar_name(slot)} reaches {mb[TX]}, "
                      f"outside ±{TX_LIMIT}", gid, loc)

    def arrive(self, slot: int, count: int, gid: int, loc: Loc):
        mb = self.mbars[slot]
        if count > mb[PENDING]:
            self.fail("arrival-mismatch",
                      f"{self.name(gid)} arrives {count} times on {self.bar_name(slot)}, whose "
                      f"current phase expects only {mb[PENDING]} more of {mb[EXPECTED]} arrivals",
                      gid, loc)
        mb[PENDING] -= count
        if self.log is not None:
            self.log.arrivals.setdefault(slot, []).append(gid)
            self.log.ever_arrived.setdefault(slot, set()).add(gid)
        self.try_complete(slot, gid, loc)

    def try_complete(self, slot: int, gid: int = -1, loc: Loc = NOLOC):
        mb = self.mbars[slot]
        if mb[PENDING] == 0 and mb[TX] == 0:
            if mb[N] >= PHASE_LIMIT:
                self.fail("phase-bound", f"{self.bar_name(slot)} completed more than "
                          f"{PHASE_LIMIT} phases (model bound)", gid, loc)
            mb[N] += 1
            mb[PENDING] = mb[EXPECTED]
            if self.log is not None:
                self.log.arrivals[slot] = []

    def bar_arrive(self, gid: int, st, env, T: int):
        inst = self.m.instances[gid]
        bid = eval_expr(st.barrier_id, env)
        if not 0 <= bid < NUM_NAMED_BARRIERS:
            raise ModelError(f"named barrier id {bid} outside 0..15")
        if T % 32 != 0:
            self.fail("divergent-barrier", f"{self.name(gid)} ({T} threads, not whole warps) "
                      f"executes aligned barrier {bid}: every thread of the warp must execute it",
                      gid, st.loc)
        want = -1 if st.threads is None else eval_expr(st.threads, env)
        if want != -1 and (want <= 0 or want % 32 != 0):
            self.fail("arrival-mismatch", f"barrier {bid} thread count {want} is not a positive "
                      "multiple of 32", gid, st.loc)
        nb = self.nbars[inst.cta * NUM_NAMED_BARRIERS + bid]
        if nb[NB_EXPECTED] == 0:
            nb[NB_EXPECTED] = want
        elif nb[NB_EXPECTED] != want:
            def show(c): return "all threads of the CTA" if c == -1 else f"{c} threads"
            self.fail("arrival-mismatch", f"{self.name(gid)} arrives on barrier {bid} expecting "
                      f"{show(want)}, but this generation was started expecting "
                      f"{show(nb[NB_EXPECTED])}", gid, st.loc)
        if isinstance(st, BarSync):
            self.set_local(gid, _snap_of(self.m, gid, self.pcs[gid]), nb[NB_GEN])
        nb[NB_ARRIVED] += T
        target = self.alive[inst.cta] if nb[NB_EXPECTED] == -1 else nb[NB_EXPECTED]
        if nb[NB_ARRIVED] > target:
            self.fail("arrival-mismatch", f"barrier {bid}: {nb[NB_ARRIVED]} threads arrive, more "
                      f"than the {target} it counts", gid, st.loc)
        if nb[NB_ARRIVED] == target:
            self.complete_named(inst.cta, bid)

    def complete_named(self, cta: int, bid: int):
        nb = self.nbars[cta * NUM_NAMED_BARRIERS + bid]
        nb[NB_GEN] += 1
        nb[NB_ARRIVED] = 0
        nb[NB_EXPECTED] = 0
        for slot, mb in enumerate(self.mbars):
            if mb[VIS] == 2 and self.m.slot_key[slot][0] == cta:
                mb[VIS] = 3

    def exit(self, gid: int, loc: Loc):
        inst = self.m.instances[gid]
        cta = inst.cta
        self.alive[cta] -= inst.threads
        for bid in range(NUM_NAMED_BARRIERS):
            nb = self.nbars[cta * NUM_NAMED_BARRIERS + bid]
            if nb[NB_EXPECTED] == -1 and nb[NB_ARRIVED] > 0 and nb[NB_ARRIVED] >= self.alive[cta]:
                self.complete_named(cta, bid)
        self.try_complete_cluster()
        if self.alive[cta] == 0:
            for i, (pi, pc, tcta, idx) in enumerate(self.m.async_keys):
                if tcta == cta and self.inflight[i] > 0:
                    st = self.m.flat[pi].code[pc].stmt
                    self.fail("pending-at-exit",
                              f"the last threads of CTA {cta} exit while a TMA load issued at "
                              f"{st.loc} into {st.bar.name}[{idx}] is still in flight", gid, loc)

    def complete(self, ev: Complete):
        m = self.m
        key = (ev.process, ev.pc, ev.cta, ev.index)
        i = m.async_slot.get(key)
        if i is None or self.inflight[i] == 0:
            raise ModelError(f"no async op in flight for {ev}")
        self.inflight[i] -= 1
        st = m.flat[ev.process].code[ev.pc].stmt
        slot = m.mbar_slot[(ev.cta, st.bar.name, ev.index)]
        env = dict(zip(m.param_names, self.params))
        self.add_tx(slot, -eval_expr(st.bytes, env), -1, st.loc)
        self.try_complete(slot, -1, st.loc)


def _snap_of(m: Machine, gid: int, pc: int) -> str:
    ins = m.flat[m.instances[gid].process].code[pc + 1]
    assert isinstance(ins, BarResume)
    return ins.snap


# ---------------------------------------------------------------------- exploration and replay

@dataclass
class Outcome:
    """A violation (kind/message/loc) reached by `trace`, or none."""
    violation: Violation | None
    trace: list[Event]
    states: int = 0
    complete: bool = True
    final: State | None = None


def violation_kinds(kernel: Kernel, max_states: int = 200_000) -> tuple[set[str], bool]:
    """Every violation kind reachable in the kernel (the search continues past violations), and
    whether the search was complete. The oracle of the differential tests."""
    m = Machine(kernel)
    seen: set[State] = set()
    queue: deque[State] = deque()
    try:
        starts = m.initial_states()
    except Violation as v:  # a local loop ran past its bound before any step
        return {v.kind}, True
    for _, s in starts:
        if s not in seen:
            seen.add(s)
            queue.append(s)
    kinds: set[str] = set()
    while queue:
        s = queue.popleft()
        evs = m.enabled(s)
        if not evs and any(not m.ended(s, i.gid) for i in m.instances):
            kinds.add("deadlock")
        for ev in evs:
            try:
                t = m.step(s, ev)
            except Violation as v:
                kinds.add(v.kind)
                continue
            if t not in seen:
                if len(seen) >= max_states:
                    return kinds, False
                seen.add(t)
                queue.append(t)
    return kinds, True


def explore(kernel: Kernel, max_states: int = 200_000) -> Outcome:
    """Breadth-first search of every interleaving; the first violation found has a shortest trace."""
    m = Machine(kernel)
    parent: dict[State, tuple[State | None, tuple[Event, ...]]] = {}
    queue: deque[State] = deque()
    try:
        starts = m.initial_states()
    except Violation as v:  # a local loop ran past its bound before any step
        return Outcome(v, [], 0)
    for choices, s in starts:
        if s not in parent:
            parent[s] = (None, choices)
            queue.append(s)

    def path(s: State, tail: list[Event]) -> list[Event]:
        evs: list[Event] = list(tail)
        while s is not None:
            prev, via = parent[s]
            evs[:0] = list(via)
            s = prev
        return evs

    while queue:
        s = queue.popleft()
        evs = m.enabled(s)
        if not evs and any(not m.ended(s, i.gid) for i in m.instances):
            return Outcome(Violation("deadlock", "no step is possible"), path(s, []), len(parent),
                           final=s)
        for ev in evs:
            try:
                t = m.step(s, ev)
            except Violation as v:
                return Outcome(v, path(s, [ev]), len(parent), final=s)
            if t not in parent:
                if len(parent) >= max_states:
                    return Outcome(None, [], len(parent), complete=False)
                parent[t] = (s, (ev,))
                queue.append(t)
    return Outcome(None, [], len(parent))


@dataclass
class Replay:
    ok: bool                      # the trace is executable and ends in the claimed violation
    violation: Violation | None   # what the interpreter found at the end of the trace
    state: State | None
    log: ReplayLog
    machine: Machine
    steps: int = 0
    error: str = ""


def replay(kernel: Kernel, events: list[Event], expect_kind: str | None = None) -> Replay:
    """Execute `events` in order. ok when every step is enabled and the trace ends in a violation
    of `expect_kind` (a deadlock: no step possible at the end)."""
    m = Machine(kernel)
    log = ReplayLog()
    choices = {e.name: e.value for e in events if isinstance(e, ParamChoice)}
    try:
        starts = [s for c, s in m.initial_states() if all(choices.get(p.name) == p.value for p in c)]
    except Violation as v:  # a local loop ran past its bound before any step
        ok = expect_kind in (None, v.kind)
        return Replay(ok, v, None, log, m, 0, "" if ok else f"start hits {v.kind}")
    if len(starts) != 1:
        return Replay(False, None, None, log, m, 0, f"parameter choices {choices} do not fix a start")
    s = starts[0]
    steps = [e for e in events if not isinstance(e, ParamChoice)]
    for n, ev in enumerate(steps):
        if ev not in m.enabled(s) and not (isinstance(ev, Step) and ev.instance < 0):
            return Replay(False, None, s, log, m, n, f"step {n + 1} ({ev}) is not enabled")
        try:
            s = m.step(s, ev, log)
        except Violation as v:
            last = n == len(steps) - 1
            ok = (expect_kind is None or v.kind == expect_kind) and (last or v.kind == "loop-bound")
            return Replay(ok, v, s, log, m, n + 1, "" if ok else
                          f"replay hits {v.kind} at step {n + 1} of {len(steps)}")
        except ModelError as e:
            return Replay(False, None, s, log, m, n, f"model error at step {n + 1}: {e}")
    if m.is_deadlock(s):
        v = Violation("deadlock", "no step is possible")
        ok = expect_kind in (None, "deadlock")
        return Replay(ok, v, s, log, m, len(steps), "" if ok else f"trace ends in a deadlock, "
                      f"not {expect_kind}")
    return Replay(False, None, s, log, m, len(steps), "trace ends without a violation")
