"""The conditions under which every execution of a kernel is a reordering of the one the engine
ran (docs/semantics.md, "Happens-before", states them and proves them). Each failed condition
names the two operations that are not ordered, and a witness: the stages of a schedule that
runs the second before the first (witness.py runs it).

- generic places: every two accesses of a place, one a write (adds commute with adds), are
  ordered; a place read to check a model bound stays within its range;
- mbarriers: the arrivals and bytes of phase k+1 come after phase k completes; a wait on
  phase k comes before phase k+1 completes, and after phase k-1 has; a phase cannot complete
  before all its arrivals and bytes are in (every expect-tx is ordered before an arrival of its
  phase); its tx-count stays in range; a use of a barrier by a thread that did not initialize
  it comes after a CTA or cluster barrier that comes after the init fence;
- named barriers, the cluster barrier, TMEM pair ops: generation g+1 begins after g completes;
  a TMEM pair resume comes before the pair's next generation completes;
- CTA lifetime: an op into another CTA comes before that CTA's end; every async copy into a CTA
  completes before its end; an st.async is issued after the previous one of its op completed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...syncir.objects import KINDS_OF_OBJECTS, LIMITS
from .analysis import Analysis
from .graph import Node, before


@dataclass
class Failure:
    rule: str                    # which condition
    message: str
    first: Node                  # the operation that must come first ...
    second: Node | None          # ... and the one that may come before it
    stages: list[list[Node]] = field(default_factory=list)  # witness: reach these, in order
    held: list[Node] = field(default_factory=list)           # ... while these wait


def failures(an: Analysis, limit: int = 8) -> list[Failure]:
    out: list[Failure] = []
    for check in (_mbarriers, _peeks, _generations, _visibility, _lifetime, _places,
                  _tmem_stages, _bounds):
        out += check(an)
        if len(out) >= limit:
            break
    return out[:limit]


def _unordered(members: list[Node], b: Node) -> Node | None:
    """A member of a completion that is not ordered before `b` (None: all are)."""
    return next((m for m in members if not before(m, b)), None)


def _pred(an: Analysis, node: Node) -> Node | None:
    actor, count = node.own
    if count <= 1:
        return None
    for n in reversed(an.nodes[:int(node.pos)]):
        if n.own == (actor, count - 1):
            return n
    return None


def _mbarriers(an: Analysis) -> list[Failure]:
    out = []
    m = an.machine
    for (kind, el, k), ph in sorted(an.phases.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if kind != "mb":
            continue
        name = m.layout.element_name(el)
        prev = an.phases.get(("mb", el, k - 1))
        # M1: phase k's arrivals and bytes after phase k-1 completed
        if prev is not None and prev.done is not None:
            for c in ph.contributions:
                first = _issue_of(an, c.node)
                a = _unordered(prev.done.members, first)
                if a is not None:
                    out.append(Failure("phase-order", f"{first.name} may count on phase {k - 1} "
                                       f"of {name}, not {k}: nothing orders it after {a.name}",
                                       a, first, [[first]], [a]))
                    break
        # M3: every expect-tx of the phase before one of its arrivals
        arrivals = [c.node for c in ph.contributions if c.arrival]
        for c in ph.contributions:
            if c.tx > 0 and not c.arrival and not any(before(c.node, a) for a in arrivals):
                out.append(Failure("early-completion", f"phase {k} of {name} may complete "
                                   f"before {c.node.name} adds its bytes: nothing orders it "
                                   "before an arrival of the phase", c.node, None,
                                   [[x.node for x in ph.contributions if x.node is not c.node]],
                                   [c.node]))
        if ph.done is None and sum(c.tx for c in ph.contributions) < 0:
            out.append(Failure("early-completion", f"phase {k} of {name} receives more bytes "
                               "than it expects", ph.contributions[-1].node, None))
        # M4: the tx-count's range over every order of the phase's updates
        up = sum(c.tx for c in ph.contributions if c.tx > 0)
        down = -sum(c.tx for c in ph.contributions if c.tx < 0)
        if up > LIMITS.tx_count or down > LIMITS.tx_count:
            out.append(Failure("bound", f"the tx-count of phase {k} of {name} may leave "
                               f"±{LIMITS.tx_count} in some order of its updates",
                               ph.contributions[0].node, None))
    # M2: a wait observes the phase it waited for, whatever the order
    for node, kind, key, k in an.waits:
        if kind != "mb":
            continue
        name = m.layout.element_name(key)
        nxt = an.phases.get(("mb", key, k + 1))
        if nxt is not None and nxt.done is not None and not before(node, nxt.done):
            out.append(Failure("lap", f"phase {k + 1} of {name} may complete before {node.name} "
                               f"observes phase {k}: nothing orders the wait before it",
                               node, nxt.done, [[c.node for c in nxt.contributions]], [node]))
        if k >= 1:
            prev = an.phases[("mb", key, k - 1)].done
            p = _pred(an, node)
            a = _unordered(prev.members, p) if p is not None else prev.members[0]
            if a is not None:
                out.append(Failure("early-pass", f"{node.name} may be reached before phase "
                                   f"{k - 1} of {name} completes, and pass on its parity: "
                                   f"nothing orders {a.name} before it", a, node,
                                   [[p] if p is not None else [], [node]], [a]))
    return out


def _peeks(an: Analysis) -> list[Failure]:
    """A peeking test-wait (peek.py) stands for its wait moved to where it tested: the phase
    the wait observes completes after the warp's event before the test ... its previous phase
    before it, the barrier's init is published to the warp before it, and the warp touches the
    barrier in neither place between (its observation of it is the wait's)."""
    out = []
    m = an.machine
    by_own = {n.own: n for n in an.nodes}
    for p in an.execution.peeks:
        name = m.layout.element_name(p.element)
        prev = by_own.get((p.gid, p.before)) if p.before else None
        wait = by_own.get(p.wait) if p.wait else None
        rec = next((w for w in an.waits if w[0] is wait), None) if wait else None
        if rec is None:
            out.append(Failure("peek", f"the test-wait on {name} at line {p.loc.line} decides no "
                               "wait the engine ran", wait or prev or an.nodes[0], None))
            continue
        k = rec[3]
        if k >= 1:
            done = an.phases[("mb", p.element, k - 1)].done
            a = _unordered(done.members, prev) if prev is not None else done.members[0]
            if a is not None:
                out.append(Failure("early-pass", f"the test-wait on {name} at line {p.loc.line} "
                                   f"may pass on phase {k - 1}: nothing orders {a.name} before it",
                                   a, wait))
        init = an.inits.get(p.element)
        if init is not None and init.own[0] != p.gid:
            fence = an.fences.get(p.element)
            cta = m.layout.elements[p.element][0]
            if prev is None or fence is None or not any(
                    before(fence, q) and before(q, prev) for q in an.publishes(cta)):
                out.append(Failure("init-visibility", f"the test-wait on {name} at line "
                                   f"{p.loc.line} may run before a barrier publishes its init",
                                   fence or init, wait))
        between = [w for w in an.waits if w[0].own[0] == p.gid and w[1] == "mb"
                   and w[2] == p.element and p.before < w[0].own[1] < p.wait[1]]
        if between:
            out.append(Failure("peek", f"{between[0][0].name} waits on {name} between the "
                               f"test-wait at line {p.loc.line} and the wait it decides",
                               between[0][0], wait))
    return out


def _issue_of(an: Analysis, node: Node) -> Node:
    """For an async completion, the issue its condition is checked on (see `_mbarriers`)."""
    if node.own[0] < an.runner.n_inst:
        return node
    for u in an.units.get(an.runner.slot_of(node.own[0]), ()):
        if u.done is node:
            return u.issue
    return node


def _generations(an: Analysis) -> list[Failure]:
    """Named barriers, the cluster barrier and TMEM pairs: generation g+1 after g completes."""
    out = []
    what = {"nb": "named barrier", "cl": "the cluster barrier", "pair": "the TMEM pair op"}
    for (kind, key, g), ph in an.phases.items():
        if kind == "mb":
            continue
        prev = an.phases.get((kind, key, g - 1))
        if prev is None or prev.done is None:
            continue
        for c in ph.contributions:
            a = _unordered(prev.done.members, c.node)
            if a is not None:
                out.append(Failure("generation-order", f"{c.node.name} may arrive in generation "
                                   f"{g - 1} of {what[kind]}, not {g}: nothing orders it after "
                                   f"{a.name}", a, c.node, [[c.node]], [a]))
                break
    for node, kind, key, g in an.waits:
        if kind != "pair":
            continue
        nxt = an.phases.get(("pair", key, g + 1))
        if nxt is not None and nxt.done is not None and not before(node, nxt.done):
            out.append(Failure("lap", f"the pair's next op may complete before {node.name}",
                               node, nxt.done, [[c.node for c in nxt.contributions]], [node]))
    return out


def _visibility(an: Analysis) -> list[Failure]:
    """A barrier used by an instance other than its initializer: after a CTA or cluster barrier
    that comes after the init fence (docs/semantics.md, mbarrier init)."""
    out = []
    m = an.machine
    seen = set()
    for node, el, wait in an.vis_uses:
        init = an.inits.get(el)
        if init is None or init.own[0] == node.own[0] or (node.own, el) in seen:
            continue
        seen.add((node.own, el))
        fence = an.fences.get(el)
        cta = m.layout.elements[el][0]
        at = _pred(an, node) if wait else node  # where the wait is reached
        if fence is not None and at is not None and any(before(fence, p) and before(p, at)
                                                        for p in an.publishes(cta)):
            continue
        name = m.layout.element_name(el)
        out.append(Failure("init-visibility", f"{node.name} may use {name} before a barrier "
                           "publishes its init: no CTA or cluster barrier is ordered between "
                           "the init fence and the use", fence or init, node,
                           [_not_after(an, node, fence or init), [node]], []))
    return out


def _not_after(an: Analysis, target: Node, f: Node) -> list[Node]:
    """The events before `target` that `f` does not precede (a stage run first)."""
    return [n for n in an.nodes if before(n, target) and not before(f, n)]


def _lifetime(an: Analysis) -> list[Failure]:
    out = []
    m = an.machine
    for node, cta in an.remote_reads:
        if not any(before(node, x) for x in an.exits.get(cta, [])):
            out.append(Failure("cta-lifetime", f"{node.name} may reach CTA {cta} after its "
                               "threads have all exited: nothing orders it before an exit of "
                               f"CTA {cta}", node, an.ends.get(cta),
                               [an.exits.get(cta, [])], [node]))
    for slot, units in an.units.items():
        done = [u.done for u in units if u.done is not None]
        if not done:
            continue
        cta = m.layout.async_keys[slot][2]
        last = done[-1]
        if not any(before(last, x) for x in an.exits.get(cta, [])):
            out.append(Failure("cta-lifetime", f"{last.name} may land after the threads of CTA "
                               f"{cta} have all exited", last, an.ends.get(cta),
                               [an.exits.get(cta, [])], [last]))
    for node, slot in an.issue_bound_reads:
        earlier = [u.done for u in an.units[slot] if u.done is not None and u.done.pos < node.pos]
        if earlier and not before(earlier[-1], node):
            out.append(Failure("bound", f"{node.name} may be issued while its previous copy is "
                               "in flight (one in flight per op is modelled)", earlier[-1], node,
                               [[node]], [earlier[-1]]))
        total = len(an.units[slot])
        if total > LIMITS.inflight:
            out.append(Failure("bound", f"more than {LIMITS.inflight} copies of one op",
                               node, None))
    return out


_CONFLICT = {("W", "W"), ("W", "R"), ("W", "A"), ("R", "W"), ("A", "W"), ("R", "A"),
             ("A", "R")}


def _places(an: Analysis) -> list[Failure]:
    """Every two conflicting accesses of a generic place are ordered (the first race found)."""
    out = []
    for key, accs in an.places.items():
        frontier: list[tuple[Node, str]] = []
        for node, mode in accs:
            if mode == "B":
                continue
            race = None
            keep = []
            for prev, pm in frontier:
                if prev is node:
                    keep.append((prev, pm))
                    continue
                if (pm, mode) in _CONFLICT:
                    if not before(prev, node):
                        race = prev
                        break
                    if mode == "W":
                        continue  # every later conflict with prev conflicts with this write
                keep.append((prev, pm))
            if race is not None:
                a = race if race.is_event else _unordered(race.members, node) or race
                # the witness brings both to their accesses, then takes the later one first (a
                # race monitor sees the other poised at its access)
                both = [p for p in (_pred(an, a), _pred(an, node) if node.is_event else None)
                        if p is not None]
                msg = (f"{race.name} and {node.name} both access {_place_name(an, key)} (one "
                       "writes it) and nothing orders them")
                out.append(Failure("race", msg, a, node, [both, _targets(node)], [a]))
                # and the other order with the first one's actor stopped right after it: a
                # monitor of an access still in flight (a copy, a store's read) sees the
                # later one land while it is pending
                nxt = _succ(an, a) if a.is_event else None
                if nxt is not None:
                    out.append(Failure("race", msg, a, node, [[a], _targets(node)], [nxt]))
                break
            frontier = keep + [(node, mode)]
    return out


def _tmem_stages(an: Analysis) -> list[Failure]:
    """C10: an op that checks an accumulator stage (tcgen05.ld, tcgen05.dealloc) comes before
    every tcgen05.mma writing it, or after the landing of a tcgen05.commit that the MMA's
    thread issued after that MMA (the landing of any later commit completes it)."""
    out = []
    m = an.machine
    for (buf, cta, s), checks in an.tmem_checks.items():
        for a in an.tmem_sets.get((buf, cta, s), []):
            actor = a.own[0]
            landings = [u.done for slot, units in an.units.items()
                        if m.layout.async_keys[slot][2] == cta for u in units
                        if u.done is not None and u.issue.own[0] == actor
                        and u.issue.own[1] > a.own[1]]
            for r in checks:
                if r is a or before(r, a) or any(before(d, r) for d in landings):
                    continue
                b = m.kernel.buffer(buf)
                p = _pred(an, r) if r.is_event else None
                out.append(Failure("race", f"{r.name} may run while {a.name} still writes stage "
                                   f"{s} of {b.label or b.name} in CTA {cta}: no tcgen05.commit "
                                   "issued after that MMA is ordered to land before it", a, r,
                                   [[a, *([p] if p is not None else [])], _targets(r)], []))
                return out
    return out


def _succ(an: Analysis, node: Node) -> Node | None:
    actor, count = node.own
    for n in an.nodes[int(node.pos) + 1:]:
        if n.own == (actor, count + 1):
            return n
    return None


def _targets(node: Node) -> list[Node]:
    return [node] if node.is_event else list(node.members)


def _place_name(an: Analysis, key: tuple) -> str:
    m = an.machine
    if key[0] == "w":
        decl = m.kernel.word_array(key[1])
        return f"{decl.element_name(key[3])} of CTA {key[2]}" if m.kernel.num_ctas > 1 \
            else decl.element_name(key[3])
    if key[0] == "buf":
        b = m.kernel.buffer(key[1])
        stage = "" if key[3] is None else f" stage {key[3]}"
        return f"{b.label or b.name}{stage} ({key[4]})"
    if key[0] == "tm":
        return f"tensormap {key[1]} ({key[3]})"
    if key[0] == "tmem":
        return f"the TMEM allocation of CTA {key[1]} ({key[2]})"
    if key[0] == "ctr":
        return f"global counter {key[1]}"
    return str(key)


def _bounds(an: Analysis) -> list[Failure]:
    """A generic place read only to check a model bound: its largest value over every order of
    its adds stays within the range objects.py declares (the bound check never fires)."""
    out = []
    ranges = {(k.name, f.name): (f.lo, f.hi) for k in KINDS_OF_OBJECTS for f in k.fields}
    kinds = {"buf": ("buffer-stage", 4), "tm": ("tensormap", 3), "tmem": ("tmem", 2),
             "w": ("shared-word", 4)}
    for key, accs in an.places.items():
        if key[0] not in kinds or not any(mode == "B" for _, mode in accs):
            continue
        obj, at = kinds[key[0]]
        lo, hi = ranges.get((obj, key[at]), ranges.get(("buffer", key[at]), (None, None)))
        if hi is None:
            continue
        idx = _state_index(an, key)
        if idx is None:
            continue
        # every order of the same updates: at most the largest value written plus every rise
        rises = sum(max(0, n.event.post[idx] - n.event.pre[idx]) for n in an.nodes)
        top = max([0] + [n.event.post[idx] for n in an.nodes])
        if top + rises > hi:
            out.append(Failure("bound", f"{_place_name(an, key)} may pass its model bound of "
                               f"{hi} in some order of its updates", accs[0][0], None))
    return out


def _state_index(an: Analysis, key: tuple) -> int | None:
    sl = an.machine.sl
    if key[0] == "buf":
        return sl.buf_field(key[1], key[2], key[3], key[4])
    if key[0] == "tm":
        return sl.tm_field(key[1], key[2], key[3])
    if key[0] == "tmem":
        return sl.tmem_field(key[1], key[2])
    return None
