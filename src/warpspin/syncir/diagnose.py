"""What a final state means: blocked instances, the barriers they wait on, and the kind of a
deadlock (docs/semantics.md, "Deadlock and its classification")."""
from __future__ import annotations

from dataclasses import dataclass

from .flat import BarResume, Op
from .interp import (EXPECTED, N, NB_ARRIVED, NB_EXPECTED, NUM_NAMED_BARRIERS, PENDING, TX,
                     Machine, Replay, State, eval_expr)
from .ir import Loc, MbarWait


@dataclass(frozen=True)
class Blocked:
    """An instance that can never move again, and what it waits for."""
    process: int
    instance: int
    role: str
    cta: int
    warps: tuple[int, int]
    threads: int
    op: str
    loc: Loc
    barrier: str = ""          # e.g. "full[1]" or "named barrier 1"
    parity: int | None = None
    phase: int | None = None   # completed phases of the barrier (its phase bit is phase & 1)
    pending_arrivals: int | None = None
    expected_arrivals: int | None = None
    pending_tx: int | None = None
    last_observed: int | None = None


@dataclass(frozen=True)
class Diagnosis:
    kind: str
    message: str
    loc: Loc
    blocked: tuple[Blocked, ...]
    related: tuple[Loc, ...] = ()


def blocked_instances(m: Machine, s: State) -> list[Blocked]:
    out = []
    for inst in m.instances:
        if m.ended(s, inst.gid) or m.is_enabled(s, inst.gid):
            continue
        p = m.kernel.processes[inst.process]
        ins = m.at(s, inst.gid)
        env = m.env(s, inst.gid)
        common = dict(process=inst.process, instance=inst.index, role=p.instance_name(inst.index),
                      cta=inst.cta, warps=p.instance_warps(inst.index), threads=inst.threads)
        if isinstance(ins, Op) and isinstance(ins.stmt, MbarWait):
            st = ins.stmt
            slot = m.resolve(inst, st.bar, env)
            cta, name, idx = m.slot_key[slot]
            mb = s.mbars[slot]
            obs = s.obs[inst.gid][m.obs_slots[inst.process][(name, idx)]]
            out.append(Blocked(**common, op="mbarrier wait", loc=st.loc,
                               barrier=f"{name}[{idx}]" + (f"@cta{cta}" if m.kernel.num_ctas > 1 else ""),
                               parity=eval_expr(st.parity, env) & 1, phase=mb[N],
                               pending_arrivals=mb[PENDING], expected_arrivals=mb[EXPECTED],
                               pending_tx=mb[TX], last_observed=obs))
        elif isinstance(ins, BarResume):
            bid = eval_expr(ins.stmt.barrier_id, env)
            nb = s.nbars[inst.cta * NUM_NAMED_BARRIERS + bid]
            want = nb[NB_EXPECTED]
            out.append(Blocked(**common, op="bar.sync", loc=ins.loc, barrier=f"named barrier {bid}",
                               pending_arrivals=(s.alive[inst.cta] if want == -1 else want) - nb[NB_ARRIVED]
                               if want else None,
                               expected_arrivals=want if want > 0 else None))
        else:
            out.append(Blocked(**common, op=type(ins).__name__, loc=ins.loc))
    return out


def diagnose_deadlock(r: Replay) -> Diagnosis:
    m, s, log = r.machine, r.state, r.log
    blocked = blocked_instances(m, s)
    waits = [b for b in blocked if b.op == "mbarrier wait"]

    for b in waits:  # bytes expected differ from bytes delivered
        if b.pending_tx and (b.pending_arrivals == 0 or b.pending_tx < 0):
            slot = _slot(m, b)
            at = log.last_expect.get(slot, b.loc)
            more = "more" if b.pending_tx < 0 else "fewer"
            return Diagnosis("tx-mismatch",
                             f"{b.barrier}: every arrival is in, but {more} bytes were delivered "
                             f"than expected (tx-count stuck at {b.pending_tx}); "
                             f"{b.role} waits forever", at, tuple(blocked), (b.loc,))
    for b in waits:  # the expected count exceeds the arrivals that can come
        slot = _slot(m, b)
        name = b.barrier.split("[")[0]
        # who can arrive: statically, anyone with an arrive op on the array; of those, the ones
        # that did arrive on this very barrier (arrays mix roles: full and empty in one array)
        arrivers = m.arrivers.get((b.cta, name), set())
        arrivers = (arrivers & log.ever_arrived.get(slot, set())) or arrivers
        arrived = set(log.arrivals.get(slot, []))
        if b.pending_arrivals and arrivers and arrivers <= arrived:
            at = log.init_loc.get(slot, b.loc)
            got = b.expected_arrivals - b.pending_arrivals
            return Diagnosis("arrival-mismatch",
                             f"{b.barrier} expects {b.expected_arrivals} arrivals per phase, but "
                             f"everything that arrives on it has arrived and brought only {got}; "
                             f"{b.role} waits forever", at, tuple(blocked), (b.loc,))
    for b in blocked:  # a named barrier counting more threads than ever arrive on it
        if b.op == "bar.sync" and b.expected_arrivals:
            bid = int(b.barrier.rsplit(" ", 1)[1])
            can = _named_participants(m, b.cta, bid)
            if b.expected_arrivals > can:
                return Diagnosis("arrival-mismatch",
                                 f"{b.barrier} counts {b.expected_arrivals} threads, but only {can} "
                                 f"threads ever arrive on it; {b.role} waits forever",
                                 b.loc, tuple(blocked))
    primary = None
    for b in waits:  # a barrier nothing ever arrived on: the arrive is missing
        slot = _slot(m, b)
        if b.pending_arrivals and not log.ever_arrived.get(slot):
            primary = b
            why = (f"{b.role} waits forever on {b.barrier}: no thread ever arrived on it "
                   f"({b.pending_arrivals} arrivals expected per phase); is an arrive or a "
                   "release missing?")
            break
    for b in waits if primary is None else ():  # a phase bit that was not flipped
        if b.last_observed and b.parity != (b.last_observed & 1):
            primary = b
            why = (f"{b.role} waits on {b.barrier} with parity {b.parity} again: the phase it "
                   f"last observed had that parity, so it needs two more phases that never come "
                   "(was the phase bit flipped?)")
            break
    if primary is None:
        if not blocked:
            return Diagnosis("deadlock", "no step is possible", Loc("<unknown>", 0), ())
        primary = blocked[0]
        why = f"{primary.role} blocks forever at {primary.op}" + (
            f" on {primary.barrier}" if primary.barrier else "")
    return Diagnosis("deadlock", why, primary.loc, tuple(blocked))


def _named_participants(m: Machine, cta: int, bid: int) -> int:
    """Threads of the CTA whose code has a bar.sync/bar.arrive that can name barrier `bid`."""
    from .ir import BarArrive, BarSync, Const
    total = 0
    for inst in m.instances:
        if inst.cta != cta:
            continue
        for ins in m.flat[inst.process].code:
            if isinstance(ins, Op) and isinstance(ins.stmt, (BarSync, BarArrive)):
                bid_e = ins.stmt.barrier_id
                if not isinstance(bid_e, Const) or bid_e.value == bid:
                    total += inst.threads if ins.lanes is None else ins.lanes
                    break
    return total


def _slot(m: Machine, b: Blocked) -> int:
    name, rest = b.barrier.split("[", 1)
    idx = int(rest.split("]", 1)[0])
    return m.mbar_slot[(b.cta, name, idx)]


def concrete_op(stmt, env) -> str:
    """fmt_op with every operand evaluated in `env` (e.g. `mbarrier.wait empty[1], parity=0`)."""
    from dataclasses import fields, replace
    from .interp import ModelError
    from .ir import Const, Expr, MBarRef
    from .printer import fmt_op

    def ev(e):
        try:
            return Const(eval_expr(e, env))
        except ModelError:
            return e

    changes = {}
    for f in fields(stmt):
        v = getattr(stmt, f.name)
        if isinstance(v, MBarRef):
            changes[f.name] = MBarRef(v.name, ev(v.index), None if v.cta is None else ev(v.cta))
        elif isinstance(v, Expr):
            changes[f.name] = ev(v)
    return fmt_op(replace(stmt, **changes))


def describe_steps(m: Machine, events) -> list[str]:
    """One line per non-parameter event, with operand values as they were at that step."""
    from .flat import BarResume, End
    from .trace import Complete, ParamChoice, Step
    out = []
    starts = [s for c, s in m.initial_states()
              if all(e in events for e in c)]
    s = starts[0] if starts else None
    for ev in events:
        if isinstance(ev, ParamChoice):
            continue
        text = ""
        if isinstance(ev, Step) and s is not None:
            gid = m.pick_instance(s, ev)
            ins = m.flat[ev.process].code[ev.pc]
            env = m.env(s, gid)
            if isinstance(ins, Op):
                text = concrete_op(ins.stmt, env)
            elif isinstance(ins, BarResume):
                text = f"(resumes after {concrete_op(ins.stmt, env)})"
            elif isinstance(ins, End):
                text = "exit"
        elif isinstance(ev, Complete):
            st = m.flat[ev.process].code[ev.pc].stmt
            env = dict(zip(m.param_names, s.params)) if s is not None else {}
            cta = f"@cta{ev.cta}" if m.kernel.num_ctas > 1 else ""
            text = f"(TMA completes {st.bar.name}[{ev.index}]{cta}: {eval_expr(st.bytes, env)} bytes)"
        out.append(text)
        if s is not None:
            try:
                s = m.step(s, ev)
            except Exception:
                s = None
    return out
