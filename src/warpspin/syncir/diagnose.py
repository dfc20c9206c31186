"""What a final state means: blocked instances, the barriers they wait on, and the kind of a
deadlock (docs/semantics.md, "Deadlock and its classification"), as a diagnosis with notes and
help lines."""
from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from .flat import Op
from .interp import Machine, ModelError, Replay, State, eval_expr
from .ir import Const, Expr, Loc, MBarRef, WordRef
from .ops import (BarArrive, BarSync, BarSyncResume, ClusterWait, Exit, GlobalLock, GlobalWait,
                  MbarWait,
                  StAsync, TmaLoad, TmemAlloc, TmemPairResume)
from .printer import fmt_op
from .trace import Complete, Step, Take


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
    barrier: str = ""          # as the user named it, e.g. "full[1]" or "named barrier 1"
    element: int = -1          # mbarrier element number (Layout.elements), -1 for others
    parity: int | None = None
    phase: int | None = None   # completed phases of the barrier (its phase bit is phase & 1)
    pending_arrivals: int | None = None
    expected_arrivals: int | None = None
    pending_tx: int | None = None
    last_observed: int | None = None


@dataclass(frozen=True)
class Note:
    """A labelled secondary location or a plain note of a diagnosis."""
    message: str
    loc: Loc | None = None


@dataclass(frozen=True)
class Diagnosis:
    kind: str
    message: str
    loc: Loc
    blocked: tuple[Blocked, ...]
    related: tuple[Loc, ...] = ()
    notes: tuple[Note, ...] = ()
    help: tuple[str, ...] = ()


def blocked_instances(m: Machine, s: State) -> list[Blocked]:
    out = []
    lay = m.layout
    for inst in m.instances:
        if m.ended(s, inst.gid) or m.is_enabled(s, inst.gid):
            continue
        p = m.kernel.processes[inst.process]
        ins = m.at(s, inst.gid)
        common = dict(process=inst.process, instance=inst.index, role=p.instance_name(inst.index),
                      cta=inst.cta, warps=p.instance_warps(inst.index), threads=inst.threads)
        st = ins.stmt if isinstance(ins, Op) else None
        if isinstance(st, MbarWait):
            n = m.element_of(st.bar, s, inst.gid)
            _, name, idx = lay.elements[n]
            mb = m.mb(s, n)
            out.append(Blocked(**common, op="mbarrier wait", loc=st.loc,
                               barrier=lay.element_name(n), element=n,
                               parity=m.eval(st.parity, s, inst.gid) & 1, phase=mb["n"],
                               pending_arrivals=mb["pend"], expected_arrivals=mb["exp"],
                               pending_tx=mb["tx"], last_observed=m.obs(s, inst.gid, name, idx)))
        elif isinstance(st, BarSyncResume):
            bid = m.eval(st.barrier_id, s, inst.gid)
            nb = m.nb(s, lay.named_slot[(inst.cta, bid)])
            want = nb["exp"]
            target = m.live(s, inst.cta) if want == -1 else want
            out.append(Blocked(**common, op="bar.sync", loc=st.loc, barrier=f"named barrier {bid}",
                               pending_arrivals=target - nb["arr"] if want else None,
                               expected_arrivals=want if want > 0 else None))
        elif isinstance(st, ClusterWait):
            out.append(Blocked(**common, op="barrier.cluster.wait", loc=st.loc,
                               barrier="the cluster barrier"))
        elif isinstance(st, TmemAlloc):
            ctas = (inst.cta - inst.cta % 2, inst.cta - inst.cta % 2 + 1) if st.pair else \
                (inst.cta,)
            held = ", ".join(f"{s[m.sl.tmem_field(x, 'cols')]} of 512 columns held by CTA {x}"
                             for x in ctas)
            out.append(Blocked(**common, op=f"tcgen05.alloc{'.cta_group::2' if st.pair else ''}",
                               loc=st.loc, barrier=f"tensor memory ({held})"))
        elif isinstance(st, TmemPairResume):
            peer = inst.cta ^ 1
            out.append(Blocked(**common, op=f"{st.what}.cta_group::2", loc=st.loc,
                               barrier=f"its CTA pair (it waits for a warp of CTA {peer} to "
                                       f"issue {st.what}.cta_group::2 too)"))
        elif isinstance(st, GlobalLock):
            val = s[m.sl.flag[st.flag]]
            want = m.eval(st.cmp, s, inst.gid)
            label = m.kernel.flag(st.flag).label or st.flag
            out.append(Blocked(**common, op="spin lock", loc=st.loc,
                               barrier=f"global flag {label} (it holds {val}; the loop waits "
                                       f"until it holds {want}, to swap it for "
                                       f"{m.eval(st.new, s, inst.gid)})"))
        elif isinstance(st, GlobalWait):
            val = s[m.sl.flag[st.flag]]
            target = m.eval(st.target, s, inst.gid)
            label = m.kernel.flag(st.flag).label or st.flag
            out.append(Blocked(**common, op="spin loop", loc=st.loc,
                               barrier=f"global flag {label} (it holds {val}; the loop waits "
                                       f"until it is {st.until} {target})"))
        else:
            out.append(Blocked(**common, op=type(st).__name__ if st else "?", loc=ins.loc))
    return out


def diagnose_deadlock(r: Replay) -> Diagnosis:
    m, s, log = r.machine, r.state, r.log
    blocked = blocked_instances(m, s)
    waits = [b for b in blocked if b.op == "mbarrier wait"]
    everyone = tuple(blocked)

    for b in waits:  # bytes expected differ from bytes delivered
        if b.pending_tx and (b.pending_arrivals == 0 or b.pending_tx < 0):
            at = log.last_expect.get(b.element, b.loc)
            more = "more" if b.pending_tx < 0 else "fewer"
            return Diagnosis(
                "tx-mismatch",
                f"{b.barrier}: every arrival is in, but {more} bytes were delivered than expected "
                f"(tx-count stuck at {b.pending_tx}); {b.role} waits forever", at, everyone,
                (b.loc,), _copy_notes(m, b),
                ("the bytes announced by expect-tx on a barrier must equal the bytes the copies "
                 "into that CTA complete on it, in every CTA of a multicast",))
    for b in waits:  # the expected count exceeds the arrivals that can come
        name = m.layout.elements[b.element][1]
        # who can arrive: statically, anyone with an arrive op on the array; of those, the ones
        # that did arrive on this very barrier (arrays mix roles: full and empty in one array)
        arrivers = m.arrivers.get((b.cta, name), set())
        arrivers = (arrivers & log.ever_arrived.get(b.element, set())) or arrivers
        arrived = set(log.arrivals.get(b.element, []))
        if b.pending_arrivals and arrivers and arrivers <= arrived:
            at = log.init_loc.get(b.element, b.loc)
            got = b.expected_arrivals - b.pending_arrivals
            who = ", ".join(sorted(m.layout.instance_name(g) for g in arrivers))
            return Diagnosis(
                "arrival-mismatch",
                f"{b.barrier} expects {b.expected_arrivals} arrivals per phase, but everything "
                f"that arrives on it has arrived and brought only {got}; {b.role} waits forever",
                at, everyone, (b.loc,),
                (Note(f"arrives on it: {who}"), Note(f"{b.role} waits here", b.loc)),
                ("the init count is per thread: a warp's arrive counts 32, one inside "
                 "elect_one counts 1",))
    for b in blocked:  # a named barrier counting more threads than ever arrive on it
        if b.op == "bar.sync" and b.expected_arrivals:
            bid = int(b.barrier.rsplit(" ", 1)[1])
            can = _named_participants(m, b.cta, bid)
            if b.expected_arrivals > can:
                return Diagnosis("arrival-mismatch",
                                 f"{b.barrier} counts {b.expected_arrivals} threads, but only {can} "
                                 f"threads ever arrive on it; {b.role} waits forever",
                                 b.loc, everyone,
                                 help=("the thread count of bar.sync must equal the threads of "
                                       "every warp that arrives on the barrier",))
    primary, why, help_ = None, "", ()
    for b in waits:  # a barrier nothing ever arrived on: the arrive is missing
        if b.pending_arrivals and not log.ever_arrived.get(b.element):
            primary = b
            why = (f"{b.role} waits forever on {b.barrier}: no thread ever arrived on it "
                   f"({b.pending_arrivals} arrivals expected per phase)")
            help_ = ("is an arrive or a release missing (e.g. consumer_release)?",)
            break
    for b in waits if primary is None else ():  # a phase bit that was not flipped
        if b.last_observed and b.parity != (b.last_observed & 1):
            primary = b
            why = (f"{b.role} waits on {b.barrier} with parity {b.parity} again: the phase it "
                   f"last observed had that parity, so it needs two more phases that never come")
            help_ = ("flip the phase bit after each pass (PipelineState.advance)",)
            break
    if primary is None:
        if not blocked:
            return Diagnosis("deadlock", "no step is possible", Loc("<unknown>", 0), ())
        primary = blocked[0]
        why = f"{primary.role} blocks forever at {primary.op}" + (
            f" on {primary.barrier}" if primary.barrier else "")
    # every blocked instance is in `everyone` (each report lists them): no note repeats one
    return Diagnosis("deadlock", why, primary.loc, everyone, help=help_)


def _copy_notes(m: Machine, b: Blocked) -> tuple[Note, ...]:
    """The copies that complete bytes on the barrier of b (the usual suspects of tx-mismatch)."""
    out = []
    seen = set()
    for (pi, pc, cta, idx), st in m.layout.async_stmt.items():
        if (cta, st.bar.name) == m.layout.elements[b.element][:2] and st.loc not in seen \
                and isinstance(st, (TmaLoad, StAsync)):
            seen.add(st.loc)
            out.append(Note(f"copies completing bytes on {st.bar.name}", st.loc))
    return tuple(out)


def _named_participants(m: Machine, cta: int, bid: int) -> int:
    """Threads of the CTA whose code has a bar.sync/bar.arrive that can name barrier `bid`."""
    total = 0
    for inst in m.instances:
        if inst.cta != cta:
            continue
        for _, ins in m.flat[inst.process].ops():
            if isinstance(ins.stmt, (BarSync, BarArrive)):
                bid_e = ins.stmt.barrier_id
                if not isinstance(bid_e, Const) or bid_e.value == bid:
                    total += ins.threads(m.flat[inst.process].process)
                    break
    return total


def concrete_op(stmt, env, kernel=None) -> str:
    """fmt_op with every operand evaluated in `env` (e.g. `mbarrier.wait empty[1], parity=0`),
    the barrier named as the user's code names it when `kernel` knows (`ab.empty[stage 1]`)."""
    def ev(e):
        try:
            return Const(eval_expr(e, env))
        except ModelError:
            return e

    changes, named = {}, []
    for f in fields(stmt):
        v = getattr(stmt, f.name)
        if isinstance(v, MBarRef):
            ref = MBarRef(v.name, ev(v.index), None if v.cta is None else ev(v.cta))
            changes[f.name] = ref
            if kernel is not None and isinstance(ref.index, Const):
                named.append((f"{ref.name}[{ref.index.value}]",
                              kernel.mbarrier(ref.name).element_name(ref.index.value)))
        elif isinstance(v, WordRef):
            ref = WordRef(v.name, ev(v.index), None if v.cta is None else ev(v.cta))
            changes[f.name] = ref
            if kernel is not None and isinstance(ref.index, Const):
                named.append((f"{ref.name}[{ref.index.value}]",
                              kernel.word_array(ref.name).element_name(ref.index.value)))
        elif isinstance(v, Expr):
            changes[f.name] = ev(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
            changes[f.name] = tuple(ev(x) for x in v)
    text = fmt_op(replace(stmt, **changes))
    for plain, name in named:
        text = text.replace(plain, name, 1)
    if kernel is not None and isinstance(getattr(stmt, "ref", None), WordRef) and \
            kernel.word_array(stmt.ref.name).grid:  # global data
        text = re.sub(r"^(ld|st)\.shared", r"\1.global", text)
    if kernel is not None:  # an array of shared data named whole (a wgmma's read, its groups)
        for w in kernel.words:
            if w.data and w.label:
                text = re.sub(rf"\b{re.escape(w.name)}\b", w.label, text)
    return text


def describe_steps(rp: Replay) -> list[str]:
    """One line per step that the replay `rp` executed (its `taken` events), with operand values
    as they were before that step: the replay that confirmed the trail is the one described."""
    m, out = rp.machine, []
    for s, ev in zip(rp.states, rp.taken):
        if isinstance(ev, Step):
            gid = m.pick_instance(s, ev)
            st = m.flat[ev.process].code[ev.pc].stmt
            env = m.env(s, gid)
            if isinstance(st, BarSyncResume):
                text = f"(resumes after bar.sync {concrete_op(st, env).split(' ', 1)[1]}"
                text = text.replace(" (resume)", "") + ")"
            elif isinstance(st, TmemPairResume):
                text = f"(resumes after {st.what}.cta_group::2: the peer CTA's warp issued it)"
            elif isinstance(st, Exit):
                text = "exit"
            else:
                text = concrete_op(st, env, m.kernel)
        elif isinstance(ev, Complete):
            st = m.flat[ev.process].code[ev.pc].stmt
            env = {n: s[i] for n, i in m.sl.param.items()}
            name = m.kernel.mbarrier(st.bar.name).element_name(ev.index)
            cta = f"@cta{ev.cta}" if m.kernel.num_ctas > 1 else ""
            text = st.completion_text(f"{name}{cta}", env)
        elif isinstance(ev, Take):
            decl = m.kernel.counter(ev.counter)
            text = f"(another CTA takes value {s[m.sl.counter[ev.counter]]} of {decl.label or decl.name})"
        else:
            raise TypeError(f"not a step of a replay: {ev!r}")
        out.append(text)
    return out
