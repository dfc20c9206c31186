"""The checking pipeline for one SyncIR kernel: validate -> lower -> search -> replay ->
diagnose -> result.

A result starts UNDECIDED. It becomes VERIFIED in exactly one place, `_decide_verified`, after a
complete search of the whole model in which no execution reaches an unsupported op, no integer
the model cannot represent, and no violation. Everything else is a VIOLATION (replayed in the reference
interpreter first), INCONCLUSIVE (with what was truncated), UNSUPPORTED (with the op and line) or
ERROR (invalid input, or a bug of warpspin's, never a verdict on the kernel).
"""
from __future__ import annotations

import collections
import os
import traceback

from .engine.contract import (FAILED, OUTSIDE, VERIFIED as ENGINE_VERIFIED, VIOLATION as
                              ENGINE_VIOLATION, EngineOptions, Outcome)
from .engine.hb import NAME as HB, HappensBefore
from .engine.spin_engine import NAME as NAME_SPIN, TRUNCATION, Spin, integer_reasons
from .report.result import (ERROR, INCONCLUSIVE, UNDECIDED, UNSUPPORTED, VERIFIED, VIOLATION,
                            BarrierState, BlockedWait, Location, Note, Result, Stats, TraceStep,
                            Violation)
from .syncir import BOUND_KINDS, PROPERTIES, Kernel, StAsync, TensormapWrite, TmaLoad, unsupported_ops, validate
from .syncir.ir import Unchecked, eval_expr
from .syncir.ops import (CpAsync, Exit, MbarTestWait, MbarWait, SmemOwn, SmemWrite, TmaStore,
                         TmemAccess, TmemAlloc, TmemDealloc, bw_fenced, bw_unfenced)
from .syncir.diagnose import describe_steps, diagnose_deadlock
from .syncir.interp import ModelError, replay
from .syncir.passes import without_data_cells, without_noop_fences
from .syncir.summary import kernel_summary
from .syncir.unchecked import unchecked_objects
from .syncir.trace import Complete, ParamChoice, Step, Take

INTERRUPTED = TRUNCATION["interrupted"]


ENGINES = ("auto", "hb", "spin")


def check_kernel(kernel: Kernel, *, target: str = "", timeout_s: float = 600.0,
                 memory_mb: int = 4096, emit_promela: str | None = None,
                 reduce: bool = True, stats: Stats | None = None, jobs: int = 1,
                 engine: str = "auto", load_races: bool = True,
                 properties: tuple[str, ...] = PROPERTIES) -> Result:
    """`engine`: "hb" (the happens-before engine alone: a kernel outside its class is
    INCONCLUSIVE), "spin" (SPIN alone), "auto" (the happens-before engine, and SPIN for a kernel
    outside its class). `load_races`: SPIN also checks the stages TMA loads fill (the
    happens-before engine always does). `properties`: what VERIFIED must cover (PROPERTIES: all
    of them, the default); a violation of any property is reported whatever is asked."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: one of {ENGINES}")
    if not properties or set(properties) - set(PROPERTIES):
        raise ValueError(f"properties {properties!r}: some of {PROPERTIES}")
    stats = stats or Stats()
    stats.processes = sum(p.instances for p in kernel.processes)
    res = Result(target=target, kernel=kernel.name, stats=stats, config=_config(kernel))
    try:
        res.model = kernel_summary(kernel)
    except Exception:  # a kernel too broken to summarize: validation says why below
        res.model = {}
    try:
        _check(kernel, res, timeout_s, memory_mb, emit_promela, reduce, jobs, engine, load_races,
               tuple(properties))
    except Exception as e:  # a bug of warpspin's: never a verdict on the kernel
        tb = traceback.extract_tb(e.__traceback__)[-1]
        res.verdict = ERROR
        res.reasons = [f"internal error (a bug of warpspin's, please report it): "
                       f"{type(e).__name__}: {e} at {os.path.basename(tb.filename)}:{tb.lineno}"]
    if res.verdict == UNDECIDED:
        res.verdict = ERROR
        res.reasons = ["internal error: the pipeline reached no verdict"]
    return res


def _check(kernel: Kernel, res: Result, timeout_s, memory_mb, emit_promela, reduce, jobs,
           engine: str = "spin", load_races: bool = True,
           properties: tuple[str, ...] = PROPERTIES) -> None:
    problems = validate(kernel)
    if problems:
        res.verdict = ERROR
        res.reasons = [f"invalid SyncIR: {p.message}" for p in problems]
        res.reason_locations = [Location(p.loc.file, p.loc.line) for p in problems]
        return
    unsupported = unsupported_ops(kernel)
    if unsupported and not _may_be_unreached(kernel, unsupported, engine):
        _unsupported(res, unsupported)
        return
    if unsupported:  # the happens-before engine alone: does any execution reach one?
        engine = "hb"

    elided = 0
    unchecked = [u for u in unchecked_objects(kernel) if u.property in properties]
    if reduce:  # R13: the rest of the check (model, replay, report) sees the kernel without them
        kernel, elided = without_noop_fences(kernel)
    assumed = list(kernel.assumptions)
    if assumed:
        res.config["assumptions"] = assumed
    if kernel.tensormaps:
        res.config["tensormaps"] = [t.label or t.name for t in kernel.tensormaps]
    if any(b.space == "smem" for b in kernel.buffers):
        res.config["buffers"] = [b.label or b.name for b in kernel.buffers if b.space == "smem"]
    if any(b.space == "tmem" for b in kernel.buffers):
        res.config["tmem_buffers"] = [b.label or b.name for b in kernel.buffers
                                      if b.space == "tmem"]
    if set(properties) != set(PROPERTIES):
        res.config["properties"] = list(properties)
    options = EngineOptions(timeout_s=timeout_s, memory_mb=memory_mb, reduce=reduce, jobs=jobs,
                            load_races=load_races)
    # SPIN checks for races on shared data only where they are asked for (its states grow with
    # the cells; the happens-before engine's cost is linear in them)
    out = _decide(kernel, res, options, engine,
                  spin_kernel=kernel if "race" in properties else without_data_cells(kernel))
    if unsupported and not (out.verdict == ENGINE_VERIFIED or out.verdict == ENGINE_VIOLATION
                            and out.kind != "unsupported"):
        # reached (or not shown unreached): the ops not modelled decide the verdict
        res.config.pop("hb_refused", None)
        _unsupported(res, unsupported)
        return
    if unsupported:
        res.config["unreached"] = list(dict.fromkeys(
            f"`{u.what}` ({os.path.basename(u.loc.file)}:{u.loc.line})" for u in unsupported))
    if out.engine == HB and out.verdict == ENGINE_VIOLATION:
        out = _shortened(kernel, out, res, options, by_spin=engine == "auto")
    res.config.update(out.config)
    if out.engine == NAME_SPIN and elided and "reductions" in out.config:
        res.config["reductions"] = [*out.config["reductions"], "R13 no-op-fences"]
    if out.engine == NAME_SPIN and "reductions" in res.config and not res.config["reductions"]:
        res.config["reductions"] = ["none (plain encoding)"]
    if emit_promela:  # the model SPIN searched, or would have
        from .lower import lower
        _emit(out.model or lower(kernel, reduce=reduce), kernel, emit_promela)
    if out.engine == HB and out.verdict in (ENGINE_VERIFIED, ENGINE_VIOLATION):
        res.config["engine"] = HB
    if out.config.get("load_races") and "race" in properties:
        unchecked.append(Unchecked("race", "the stages TMA loads fill", "SPIN searched without "
                                   "those races (--no-load-races)"))
    if unchecked:  # (JSON properties.not_checked, the notes)
        res.config["unchecked"] = [f"{u.property}s on {u.what} ({_detail(u)})" for u in unchecked]
    if out.verdict == ENGINE_VERIFIED:
        _decide_verified(res, out, unchecked, properties)
    elif out.verdict == ENGINE_VIOLATION:  # SPIN's trail is of the kernel it lowered
        _violation(out.model.kernel if out.model is not None else kernel, out.model, res, out)
    else:
        res.verdict = ERROR if out.verdict == FAILED else INCONCLUSIVE
        res.reasons = list(out.reasons)
        res.reason_locations = [_location(l) for l in out.locations]


def _unsupported(res: Result, unsupported: list) -> None:
    bounds = all(u.bound for u in unsupported)
    res.verdict = INCONCLUSIVE if bounds else UNSUPPORTED
    res.reasons = [f"`{u.what}`: beyond a bound of the model, so it is not modelled here"
                   if bounds else f"`{u.what}` matters for synchronization and is not modelled"
                   for u in unsupported]
    res.reason_locations = [Location(u.loc.file, u.loc.line, frame=u.loc.frame or "")
                            for u in unsupported]


def _may_be_unreached(kernel: Kernel, unsupported: list, engine: str) -> bool:
    """Whether the happens-before engine may show that no execution reaches the ops not modelled
    (`unsupported`): an Unsupported's rule fails where a run meets it, and the engine's proof
    that every execution is a reordering of its runs covers the paths they take. Not for model
    bounds, a launch value with no upper bound (the cutoff's proof extrapolates the runs), or
    SPIN alone."""
    return engine in ("auto", "hb") and not any(u.bound for u in unsupported) and \
        not any(p.unbounded for p in kernel.params)


def _decide(kernel: Kernel, res: Result, options: EngineOptions, engine: str,
            spin_kernel: Kernel | None = None) -> Outcome:
    """Ask the engines `engine` names, in order, until one is not `outside` its class (SPIN is
    given `spin_kernel` when set)."""
    chain = {"auto": (HappensBefore(), Spin()), "hb": (HappensBefore(),), "spin": (Spin(),)}[engine]
    for eng in chain:
        out = eng.check(spin_kernel if spin_kernel is not None and isinstance(eng, Spin)
                        else kernel, options)
        _account(res.stats, out)
        if out.verdict != OUTSIDE:
            return out
        if eng is not chain[-1]:
            loc = out.locations[0] if out.locations else None
            at = f" ({os.path.basename(loc.file)}:{loc.line})" if loc is not None and loc.line else ""
            res.config["hb_refused"] = (out.reasons[0] + at) if out.reasons else out.verdict
    out.verdict = INCONCLUSIVE
    out.reasons = [f"outside the {out.engine} engine's class: {w}" for w in out.reasons] \
        or [f"the {out.engine} engine decided nothing"]
    return out


def _account(stats: Stats, out: Outcome) -> None:
    """The report's cost of `out`, the engine that decided (a refusing engine leaves its runs)."""
    c = out.cost
    if out.engine == HB:
        stats.hb_runs, stats.hb_ops, stats.hb_edges = c.runs, c.ops, c.edges
    else:
        stats.states, stats.transitions, stats.depth = c.states, c.transitions, c.depth
        stats.memory_mb, stats.state_vector = c.memory_mb, c.state_vector
        stats.seconds["compile"] = c.compile_seconds
        stats.cores, stats.hunts = c.cores, c.hunts
    stats.engine = out.engine
    stats.seconds["check"] = c.seconds
    if out.verdict == ENGINE_VIOLATION:
        stats.found_by = out.found_by or f"{out.engine} engine"
        stats.found_depth = out.found_depth
        stats.first_found_by = out.first_found_by or stats.found_by
        stats.first_found_s = out.first_found_s or c.seconds


SHORTEN_S = 20.0  # SPIN's BFS may spend this long shortening a happens-before counterexample


def _shortened(kernel: Kernel, found: Outcome, res: Result, options: EngineOptions,
               by_spin: bool) -> Outcome:
    """The happens-before engine's counterexample, shortened by SPIN's breadth-first search when
    `by_spin` and that finishes within SHORTEN_S; else the engine's own, saying so."""
    budget = min(SHORTEN_S, max(0.0, options.timeout_s - found.cost.seconds)) if by_spin else 0
    how = f"happens-before engine ({found.found_by})"
    res.stats.found_by = res.stats.first_found_by = how
    if budget >= 1:
        short = Spin().check(kernel, EngineOptions(timeout_s=budget, memory_mb=options.memory_mb,
                                                   load_races=True))
        if short.verdict == ENGINE_VIOLATION:
            short.config = {}
            short.found_by, short.found_depth = "exhaustive BFS (SPIN)", len(found.events)
            short.first_found_by, short.first_found_s = how, found.cost.seconds
            short.cost.seconds += found.cost.seconds
            _account(res.stats, short)
            res.stats.engine = HB
            res.stats.hb_runs, res.stats.hb_ops, res.stats.hb_edges = (
                found.cost.runs, found.cost.ops, found.cost.edges)
            short.engine = HB
            short.why_unordered = found.why_unordered  # (shown if the trail ends at that pair)
            return short
    found.found_by = how
    found.config["not_shortened"] = (
        f"SPIN's breadth-first search gave no replayed counterexample within {budget:.0f} s: the "
        "interleaving is the engine's, not a shortest one" if budget >= 1 else
        "not shortened by SPIN (--engine hb): the interleaving is the engine's")
    _account(res.stats, found)
    return found


def _decide_verified(res: Result, out: Outcome, unchecked: list, properties: tuple) -> None:
    """The only place a verdict becomes VERIFIED: the engine's check was complete and every
    property asked for was checked on every object. A property left unchecked on an object makes
    the verdict INCONCLUSIVE, the first line saying what was shown and what was not."""
    assert res.verdict == UNDECIDED and out.verdict == ENGINE_VERIFIED and out.kind is None
    if not unchecked:
        res.verdict = VERIFIED
        return
    shown = "no deadlock in any interleaving; " if "deadlock" in properties else ""
    res.verdict = INCONCLUSIVE
    res.reasons = [f"{shown if i == 0 else ''}{u.property}s NOT CHECKED on {u.what} "
                   f"({_detail(u)})" for i, u in enumerate(unchecked)]
    res.reason_locations = [_location(u.loc) for u in unchecked if u.loc.line]


def _detail(u: Unchecked) -> str:
    return f"line {u.loc.line}: {u.why}" if u.loc.line else u.why


def _violation(kernel: Kernel, model, res: Result, er) -> None:
    rp = replay(kernel, er.events, expect_kind=_engine_kind(er.kind))
    if not rp.ok:
        res.verdict = INCONCLUSIVE
        if model is not None and model.integer_problems:  # the model's 32-bit arithmetic wrapped where SyncIR's did not
            res.reasons, locs = integer_reasons(model)
            res.reason_locations = [_location(l) for l in locs]
            return
        who = "SPIN" if model is not None else "the happens-before engine"
        res.reasons = [f"{who} reported {er.kind}, but its trail does not replay in the reference "
                       f"interpreter ({rp.error}); not shown as a violation (internal disagreement)"]
        return
    v = rp.violation
    if v.kind == "unsupported":  # a rule met a case its op does not model: no verdict on it
        res.verdict = UNSUPPORTED
        res.reasons = [f"{v.message} (met on a reachable path; not modelled)"]
        res.reason_locations = [Location(v.loc.file, v.loc.line, frame=v.loc.frame or "")]
        return
    if v.kind in BOUND_KINDS:
        res.verdict = INCONCLUSIVE
        res.reasons = [f"model bound reached: {v.message}"]
        res.reason_locations = [Location(v.loc.file, v.loc.line, frame=v.loc.frame or "")]
        return
    trace = _trace_steps(rp.machine, rp.taken, describe_steps(rp), rp.states)
    notes, help_ = (), ()
    if v.kind == "deadlock":
        d = diagnose_deadlock(rp)
        kind, message = d.kind, d.message
        locs = [d.loc] + [l for l in d.related if l != d.loc]
        blocked = d.blocked
        roles = {b.loc: b.role for b in blocked}
        notes = tuple(Note(n.message, _location(n.loc) if n.loc else None) for n in d.notes)
        help_ = d.help
    else:
        kind, message, locs = v.kind, v.message, [v.loc]
        blocked = ()
        roles = {v.loc: _role(kernel, v.process, v.instance)}
        op = rp.machine.flat[v.process].code[v.pc].stmt if v.pc is not None else None
        if isinstance(op, (SmemWrite, TmaStore)):
            notes, help_ = _buffer_partners(rp, v, op)
        elif isinstance(op, Exit) and "TMA store" in message:
            notes, help_ = (), ("before the storing thread exits: "
                                "`cp.async.bulk.wait_group.read 0` "
                                "(cute.arch.cp_async_bulk_wait_group(0, read=True)) after its "
                                "last commit",)
        elif isinstance(op, Exit) and kind == "pending-at-exit" and " in flight" in message and \
                ("tcgen05.commit" in message or "a copy issued at" in message):
            notes, help_ = (), ("before the last threads of the CTA exit, one of them waits for "
                                "the barrier phase that arrive or copy completes (CUTLASS's "
                                "`producer_tail` waits on every stage of the pipeline, not only "
                                "the last)",)
        elif isinstance(op, (SmemOwn, Exit)) and kind in ("race", "pending-at-exit"):
            notes, help_ = _cp_async_partners(rp, v)
        elif kind == "tmem-lifetime":
            notes, help_ = _tmem_notes(kernel, op)
        elif kind == "race":
            notes = _race_partners(rp, v)
        elif kind == "tensormap-race":
            notes, help_ = _tensormap_partners(rp, v)
    notes = _launch_notes(kernel, er.events) + tuple(notes)
    locations = tuple(Location(l.file, l.line, roles.get(l, ""), l.frame or "") for l in locs)
    res.verdict = VIOLATION
    res.violations = [Violation(
        kind=kind, message=message, locations=_with_a_line(locations, notes, kernel),
        trace=tuple(trace),
        blocked=tuple(BlockedWait(process=b.role, role=kernel.processes[b.process].role, cta=b.cta,
                                  warps=b.warps, op=b.op, file=b.loc.file, line=b.loc.line,
                                  barrier=b.barrier, parity=b.parity, phase=b.phase,
                                  pending_arrivals=b.pending_arrivals,
                                  expected_arrivals=b.expected_arrivals, pending_tx=b.pending_tx)
                      for b in blocked),
        notes=notes, help=tuple(help_), unordered=_unordered_notes(er, v),
    )]


def _tmem_notes(kernel: Kernel, op) -> tuple[tuple[Note, ...], tuple[str, ...]]:
    """Where the kernel allocates and frees tensor memory, and the usual fix."""
    notes = tuple(Note(f"{'allocated' if isinstance(s, TmemAlloc) else 'freed'} here "
                       f"({s.fmt()})", _location(s.loc))
                  for s in kernel.ops() if isinstance(s, (TmemAlloc, TmemDealloc)))
    if isinstance(op, Exit):
        return notes, ("free every column with tcgen05.dealloc (TmemAllocator.free) before the "
                       "CTA exits, after the last tcgen05.ld of the accumulator (wait for the "
                       "epilogue warps on a barrier first)",)
    if isinstance(op, TmemAccess):
        return notes, ("free the columns only after every warp's last access: the epilogue "
                       "warps arrive on a barrier after their last tcgen05.ld and "
                       "tcgen05.wait::ld, and the allocating warp waits on it before "
                       "tcgen05.dealloc",)
    if isinstance(op, TmemAlloc):
        return notes, ("allocate before tcgen05.relinquish_alloc_permit, which promises the SM "
                       "that this CTA allocates no more",)
    return notes, ("free exactly what was allocated, once",)


def _race_partners(rp, v) -> tuple[Note, ...]:
    """The other side of a race: every other instance whose next step accesses the same words,
    and every st.async into them still in flight."""
    m, s = rp.machine, rp.state
    me = m.gid.get((v.process, v.instance))
    if s is None or me is None:
        return ()
    op = m.flat[v.process].code[v.pc].stmt
    if isinstance(op, StAsync):
        cta = m.eval(op.bar.cta, s, me) if op.bar.cta is not None else m.instances[me].cta
        first = m.eval(op.ref.index, s, me)
        name, words, kind = op.ref.name, range(first, first + len(op.values)), "st"
    elif v.pc in m.layout.word_ops[v.process]:
        kind, ref = m.layout.word_ops[v.process][v.pc]
        cta, name, first = m.instances[me].cta, ref.name, m.eval(ref.index, s, me)
        words = range(first, first + 1)
    else:
        return ()
    out = []
    for (pi, pc, c, _), slot in m.layout.async_slot.items():
        st = m.flat[pi].code[pc].stmt
        if isinstance(st, StAsync) and st.ref.name == name and c == cta and m.inflight(s, slot):
            out.append(Note("an st.async into these words is still in flight (only the "
                            "completion of its bytes on the mbarrier orders it)", _location(st.loc)))
    for inst in m.instances:
        if inst.gid == me or inst.cta != cta:
            continue
        acc = m.layout.word_ops[inst.process].get(m.pc(s, inst.gid))
        if acc is None or acc[1].name != name or (acc[0] == "ld" and kind == "ld"):
            continue
        if m.eval(acc[1].index, s, inst.gid) not in words:
            continue
        op = m.flat[inst.process].code[m.pc(s, inst.gid)].stmt
        what = "stores" if acc[0] == "st" else "loads"
        out.append(Note(f"{m.layout.instance_name(inst.gid)} {what} the same word next, with "
                        f"nothing ordering the two accesses", _location(op.loc)))
    return tuple(out)


def _tensormap_partners(rp, v) -> tuple[tuple[Note, ...], tuple[str, ...]]:
    """A write of a tensormap: the last load through it of every thread whose reads of it are
    not retired. A load: how to order it after the write. (notes, help lines)"""
    m, s = rp.machine, rp.state
    op = m.flat[v.process].code[v.pc].stmt
    if isinstance(op, TmaLoad):
        return (), ("after the writer's `fence.proxy.tensormap::generic.release` "
                    "(cpasync.fence_tma_desc_release), acquire the descriptor on the thread that "
                    "issues the load: `fence.proxy.tensormap::generic.acquire` "
                    "(cpasync.fence_tma_desc_acquire)",)
    if not isinstance(op, TensormapWrite) or s is None:
        return (), ()
    desc, last = op.desc, {}
    for ev in rp.taken:
        if isinstance(ev, Step):
            st = m.flat[ev.process].code[ev.pc]
            st = getattr(st, "stmt", None)
            if isinstance(st, TmaLoad) and st.desc == desc:
                last[m.gid.get((ev.process, ev.instance))] = st
    notes = []
    for gid, st in last.items():
        local = m.sl.local[gid]
        names = [n for n in local if n.endswith("_" + desc) and n.startswith(("_tmo_", "_tmg"))]
        if sum(s[local[n]] for n in names):
            notes.append(Note(f"a TMA load through {desc} by {m.layout.instance_name(gid)} may "
                              "still be reading the descriptor: no cp.async.bulk.wait_group.read "
                              "of that thread retired its bulk async-group", _location(st.loc)))
    return tuple(notes), ("before the rewrite, on the thread that issued the loads: "
                          "`cp.async.bulk.commit_group` then `cp.async.bulk.wait_group.read 0` "
                          "(PTX 9.7.9.26.5.2; CUTLASS's TensorMapManager.update_tensormap does)",)


def _buffer_partners(rp, v, op) -> tuple[tuple[Note, ...], tuple[str, ...]]:
    """A write of a stage a TMA store still reads: that store. A TMA store of a stage: the
    writes of it not handed over (their writers' bits still set). (notes, help lines)"""
    m, s = rp.machine, rp.state
    me = m.gid.get((v.process, v.instance))
    if s is None or me is None:
        return (), ()
    stage = m.eval(op.stage, s, me)
    last: dict = {}
    for ev in rp.taken:
        st = getattr(m.flat[ev.process].code[ev.pc], "stmt", None) if isinstance(ev, Step) else None
        if isinstance(st, (SmemWrite, TmaStore)) and st.buf == op.buf:
            gid = m.gid.get((ev.process, ev.instance))
            last[(type(st), gid, m.eval(st.stage, s, gid))] = st
    notes = []
    if isinstance(op, SmemWrite):
        for (kind, gid, stg), st in last.items():
            if kind is TmaStore and stg == stage:
                notes.append(Note(f"the TMA store of stage {stage} by {m.layout.instance_name(gid)} "
                                  "may still read it: no cp.async.bulk.wait_group.read of that "
                                  "thread retired its bulk async-group", _location(st.loc)))
        return tuple(notes), ("before a stage is written again, the storing thread waits until "
                              "at most stages-1 bulk groups still read "
                              "(`cp.async.bulk.wait_group.read`, PipelineTmaStore."
                              "producer_acquire) and then meets the writers on a named barrier",)
    if v.kind == "proxy-race":
        return (), ("every writer fences its writes to the async proxy before the barrier that "
                    "hands them over: `fence.proxy.async.shared::cta` "
                    "(cute.arch.fence_proxy('async.shared', space='cta'))",)
    for (kind, gid, stg), st in last.items():
        local = m.sl.local[gid]
        bits = [n for n in local if n in (bw_unfenced(op.buf, stage), bw_fenced(op.buf, stage))]
        if kind is SmemWrite and stg == stage and any(s[local[n]] for n in bits):
            notes.append(Note(f"{m.layout.instance_name(gid)} wrote stage {stage} here and has "
                              "not released the write on the buffer's named barrier since",
                              _location(st.loc)))
    return tuple(notes), ("after their writes (and `fence.proxy.async.shared::cta`), the writers "
                          "and the storing warp meet on one named barrier (bar.sync) before the "
                          "TMA store",)


def _cp_async_partners(rp, v) -> tuple[tuple[Note, ...], tuple[str, ...]]:
    """An access or exit while the instance's own cp.async copies may be in flight: the last
    copy it issued into each buffer since its last cp.async.wait_group (notes, help lines)."""
    m = rp.machine
    last: dict = {}
    for ev in rp.taken:
        if not isinstance(ev, Step) or (ev.process, ev.instance) != (v.process, v.instance):
            continue
        st = getattr(m.flat[ev.process].code[ev.pc], "stmt", None)
        if isinstance(st, CpAsync):
            last[st.buf] = st
    notes = tuple(Note(f"its cp.async into {m.kernel.buffer(b).label or b} issued here may still "
                       "be in flight", _location(st.loc)) for b, st in last.items())
    return notes, ("before the thread touches the bytes again or exits: "
                   "`cp.async.wait_group 0` (cute.arch.cp_async_wait_group(0)) after the last "
                   "commit, also on the path where the loop that waits runs zero times",)


def _unordered_notes(er, v) -> tuple[Note, ...]:
    """The happens-before engine's why-unordered lines, when the trail shown ends at one of the
    two ops it names (SPIN's shortened trail may end at another pair)."""
    why = getattr(er, "why_unordered", None) or []
    ends = {(l.file, l.line) for _, l in why[:2] if l is not None}
    if v.loc is None or (v.loc.file, v.loc.line) not in ends:
        return ()
    return tuple(Note(m, _location(l) if l is not None and l.line else None) for m, l in why)


def _launch_notes(kernel: Kernel, events) -> tuple[Note, ...]:
    """The launch values the counterexample chose, and which block each CTA of the cluster is."""
    values = {e.name: e.value for e in events if isinstance(e, ParamChoice)}
    chosen = [f"{p.name} = {values[p.name]}" for p in kernel.params
              if p.name in values and p.lo != p.hi]
    out = []
    if chosen:
        out.append(Note("with launch values " + ", ".join(chosen)))
    if kernel.cta_blocks and kernel.num_ctas > 1:
        try:
            blocks = [tuple(eval_expr(x, values) for x in b) for b in kernel.cta_blocks]
        except Exception:
            return tuple(out)
        where = "in this cluster " if kernel.cluster_ctas in (0, kernel.num_ctas) else \
            "in the grid (every CTA of it is modelled) "
        out.append(Note(where + ", ".join(
            f"CTA {c} is block ({', '.join(map(str, b))})" for c, b in enumerate(blocks))))
    return tuple(out)


def _with_a_line(locations: tuple, notes: tuple, kernel: Kernel) -> tuple:
    """The violation's locations, the first one a source line: a step without one (the implicit
    exit at the end of a warp's code) is reported at its first note that has one (for an exit
    holding TMEM columns, the alloc), else at the kernel."""
    if locations and locations[0].line:
        return locations
    first = next((n.location for n in notes if n.location is not None and n.location.line), None)
    if first is None and kernel.loc.line:
        first = Location(kernel.loc.file, kernel.loc.line)
    return ((first,) + locations[1:]) if first is not None else locations


def _location(loc) -> Location:
    return Location(loc.file, loc.line, frame=loc.frame or "")


def _emit(model, kernel: Kernel, emit: str | None):
    if emit:
        os.makedirs(emit, exist_ok=True)
        with open(os.path.join(emit, f"{_safe(kernel.name)}.pml"), "w") as f:
            f.write(model.text)


def _engine_kind(kind: str) -> str:
    return "deadlock" if kind in ("deadlock", "invalid-end-state") else kind


def _role(kernel: Kernel, process: int, instance: int) -> str:
    if process < 0 or instance < 0:
        return "async copy"
    return kernel.processes[process].instance_name(instance)


def _barrier_changes(m, before, after) -> tuple[BarrierState, ...]:
    """The barriers whose state differs between two consecutive states of a replay."""
    out = []
    for n in range(len(m.layout.elements)):
        a, b = m.mb(before, n), m.mb(after, n)
        if a != b:
            out.append(BarrierState(m.layout.element_name(n), b["n"], b["pend"], b["exp"], b["tx"]))
    for slot, (cta, bid) in enumerate(m.layout.named_slots):
        a, b = m.nb(before, slot), m.nb(after, slot)
        if a != b:
            where = f" of CTA {cta}" if m.kernel.num_ctas > 1 else ""
            exp = b["exp"] if b["exp"] > 0 else m.live(after, cta) if b["exp"] == -1 else 0
            out.append(BarrierState(f"named barrier {bid}{where}", b["gen"], max(0, exp - b["arr"]),
                                    exp))
    return tuple(out)


def _waited(m, ev, ins, before) -> str:
    """The barrier element an mbarrier wait step waited on, as reports name it."""
    st = getattr(ins, "stmt", None)
    if not isinstance(st, (MbarWait, MbarTestWait)) or ev.instance < 0:
        return ""
    try:
        return m.layout.element_name(m.element_of(st.bar, before, m.gid[(ev.process, ev.instance)]))
    except (ModelError, KeyError):
        return ""


def _issues(m, steps, states) -> dict[int, int]:
    """{completion's step: the step that issued its copy}: each issue adds its copies (the rise
    of its slots' in-flight counts) to its slots' queues, and a completion takes the oldest."""
    slots: dict = collections.defaultdict(list)
    for key, slot in m.layout.async_slot.items():
        slots[key[:2]].append(slot)
    queues: dict = collections.defaultdict(collections.deque)
    out = {}
    for n, ev in enumerate(steps, start=1):
        if isinstance(ev, Step) and n < len(states):
            for slot in slots.get((ev.process, ev.pc), ()):
                rise = m.inflight(states[n], slot) - m.inflight(states[n - 1], slot)
                queues[slot].extend([n] * max(0, rise))
        elif isinstance(ev, Complete):
            q = queues[m.layout.async_slot.get((ev.process, ev.pc, ev.cta, ev.index))]
            if q:
                out[n] = q.popleft()
    return out


def _trace_steps(machine, steps, texts: list[str], states=()) -> list[TraceStep]:
    """The steps a replay took, with their texts and the barrier fields each one changed."""
    assert len(texts) == len(steps)
    out = []
    issued = _issues(machine, steps, states)
    for n, (ev, op) in enumerate(zip(steps, texts), start=1):
        changed = _barrier_changes(machine, states[n - 1], states[n]) if n < len(states) else ()
        if isinstance(ev, Step):
            p = machine.kernel.processes[ev.process]
            ins = machine.flat[ev.process].code[ev.pc]
            who = p.instance_name(ev.instance) if ev.instance >= 0 else f"{p.role}[*]"
            if p.cta or machine.kernel.num_ctas > 1:
                who = f"{who}@cta{p.cta}"
            out.append(TraceStep(n, who, op, ins.loc.file, ins.loc.line, ins.loc.frame or "", p.cta,
                                 changed, _waited(machine, ev, ins, states[n - 1])))
        elif isinstance(ev, Complete):
            st = machine.flat[ev.process].code[ev.pc].stmt
            out.append(TraceStep(n, "async", op, st.loc.file, st.loc.line, st.loc.frame or "",
                                 ev.cta, changed, issued_at=issued.get(n, 0)))
        elif isinstance(ev, Take):
            decl = machine.kernel.counter(ev.counter)
            out.append(TraceStep(n, "other CTAs", op, decl.loc.file, decl.loc.line,
                                 decl.loc.frame or "", 0, changed))
    return out


def _config(kernel: Kernel) -> dict:
    cfg = {}
    for p in kernel.params:
        cfg[p.name] = p.lo if p.lo == p.hi else f"{p.lo}.." if p.unbounded else f"{p.lo}..{p.hi}"
    if kernel.num_ctas > 1:
        cfg["ctas"] = kernel.num_ctas
    if kernel.constraints:
        from .syncir.printer import fmt_expr
        cfg["assume"] = " and ".join(fmt_expr(c) for c in kernel.constraints)
    return cfg


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
