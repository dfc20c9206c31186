"""The happens-before relation of one complete execution and the facts the conditions read:
each barrier operation's generation, each completion's contributors, each place's accesses.

One pass over the execution, in order. An event's clock is its actor's previous clock, joined
with the completion it waited for (a parity wait: the phase it observed completing; a bar.sync
resume, a cluster wait, a TMEM pair resume: their generation's completion; an async copy's
completion: the issue of its unit when one instance issues them all). A completion's clock is
the join of its contributors' (graph.completion). Which contributions an event made, and which
completion it triggered, is read from the states around it; where it touched each place, from
its rule (accesses.py).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ...syncir.objects import MBARRIER, NAMED_BARRIER, CLUSTER_BARRIER
from ...syncir.ops import (CLUSTER_COMPLETE, CLUSTER_GEN, NAMED_COMPLETE, PAIR_COMPLETE, PHASE,
                           MmaRead, SyncOp)
from ...syncir.trace import Complete, Step, Take
from .accesses import Walker, is_generic, is_tmem_monitor
from .execution import Event, Execution, OutsideClass, Runner
from .graph import Node, completion, join

MB = {f.name: i for i, f in enumerate(MBARRIER.fields)}
NB = {f.name: i for i, f in enumerate(NAMED_BARRIER.fields)}
CL = {f.name: i for i, f in enumerate(CLUSTER_BARRIER.fields)}

# which families may change which barrier state (anything else changing it: outside the class)
MBAR_WRITERS = {"mbar.init", "mbar.fence", "mbar.update", "completion", "named.arrive",
                "cluster.arrive", "exit"}


@dataclass
class Contribution:
    node: Node
    arrival: int          # arrivals it counted in the phase
    tx: int               # transaction bytes it added (expect: > 0; delivered: < 0)


@dataclass
class Phase:
    """One phase (generation) of a barrier element: what contributed and when it completed."""
    key: tuple
    gen: int
    contributions: list[Contribution] = field(default_factory=list)
    done: Node | None = None
    exp: int = 0          # named barriers: the thread count of the generation (-1: all live)


@dataclass
class Unit:
    """An async copy issued into a slot: its issue node; its completion, once complete."""
    issue: Node
    done: Node | None = None


@dataclass
class Analysis:
    runner: Runner
    execution: Execution
    actors: int
    nodes: list[Node] = field(default_factory=list)          # one per event, in order
    phases: dict[tuple, Phase] = field(default_factory=dict)  # (kind, key, gen) -> Phase
    waits: list[tuple[Node, str, tuple, int]] = field(default_factory=list)  # node, kind, key, gen
    inits: dict[int, Node] = field(default_factory=dict)     # mbarrier element -> its init
    fences: dict[int, Node] = field(default_factory=dict)    # element -> fence that moved it to 2
    vis_uses: list[tuple[Node, int, bool]] = field(default_factory=list)  # node, element, a wait
    remote_reads: list[tuple[Node, int]] = field(default_factory=list)  # Live(t) of another CTA
    exits: dict[int, list[Node]] = field(default_factory=lambda: defaultdict(list))
    ends: dict[int, Node] = field(default_factory=dict)
    units: dict[int, list[Unit]] = field(default_factory=lambda: defaultdict(list))
    issue_bound_reads: list[tuple[Node, int]] = field(default_factory=list)
    end_reads: dict[int, list] = field(default_factory=lambda: defaultdict(list))
    word_marks: dict = field(default_factory=dict)  # st.async issue node -> words it marks
    # TMEM accumulator stages (buffer, cta, stage): the MMAs that write them, the ops that check
    # that no MMA writing them may still run (tcgen05.ld, tcgen05.dealloc)
    tmem_sets: dict = field(default_factory=lambda: defaultdict(list))
    tmem_checks: dict = field(default_factory=lambda: defaultdict(list))
    places: dict[tuple, list[tuple[Node, str]]] = field(default_factory=lambda: defaultdict(list))
    flag_adds: dict[str, list[tuple[Node, int]]] = field(default_factory=lambda: defaultdict(list))
    flag_plan: dict = field(default_factory=dict)  # _flag_plan: every add of the run
    edges: int = 0

    @property
    def machine(self):
        return self.runner.m

    def phase(self, kind: str, key, gen: int) -> Phase:
        k = (kind, key, gen)
        p = self.phases.get(k)
        if p is None:
            p = self.phases[k] = Phase((kind, key), gen)
        return p

    def publishes(self, cta: int) -> list[Node]:
        """The completions that publish CTA `cta`'s fenced mbarrier inits."""
        return [p.done for (kind, key, _), p in self.phases.items() if p.done is not None
                and ((kind == "cl" and key == self.machine.kernel.cluster_of(cta))
                     or (kind == "nb" and self.machine.layout.named_slots[key][0] == cta))]


def family(runner: Runner, ev) -> tuple[str, SyncOp | None]:
    if isinstance(ev.step, Complete):
        return "completion", None
    if isinstance(ev.step, Take):
        return "take", None
    inst = runner.m.instances[runner.m.gid[(ev.step.process, ev.step.instance)]]
    op = runner.m.flat[inst.process].code[ev.step.pc].stmt
    fam = op.hb_family()
    if fam is None:
        raise OutsideClass(f"{op.mnemonic} has no happens-before rule", op.loc)
    return fam, op


def analyze(runner: Runner, ex: Execution) -> Analysis:
    m = runner.m
    actors = runner.actors
    an = Analysis(runner, ex, actors)
    if m.kernel.flags:  # (a second pass over the run: only where a flag is)
        an.flag_plan = _flag_plan(runner, ex)
    walker = Walker(m)
    last: dict[int, list[int]] = {}
    last_node: dict[int, Node] = {}
    pair_gen: dict[int, int] = defaultdict(int)   # pair leader CTA -> completed generations
    for ev in ex.events:
        fam, op = family(runner, ev)
        vc = list(last.get(ev.actor, [0] * actors))
        vc[ev.actor] = ev.occ + 1
        gid = ev.actor if ev.actor < runner.n_inst else -1
        extra, waited = _waited(an, ev, fam, op, gid, pair_gen)
        if extra is not None:
            vc = join(vc, extra.vc)
            an.edges += 1
        loc = op.loc if op is not None else m.kernel.counter(ev.step.counter).loc \
            if isinstance(ev.step, Take) else m.flat[ev.step.process].code[ev.step.pc].stmt.loc
        preds = tuple(x for x in (last_node.get(ev.actor), extra) if x is not None)
        node = Node(_event_name(runner, ev, op), ev.n, vc, own=(ev.actor, ev.occ + 1), loc=loc,
                    event=ev, preds=preds)
        last[ev.actor], last_node[ev.actor] = vc, node
        an.nodes.append(node)
        if waited is not None:
            an.waits.append((node, *waited))
        done = _contributions(an, ev, node, fam, op, gid, pair_gen)
        _accesses(an, walker, ev, node, fam, op, gid, done)
    for cta, reads in an.end_reads.items():
        end = an.ends.get(cta)
        for key, mode in reads:
            if end is not None:
                an.places[key].append((end, mode))
    for accs in an.places.values():
        accs.sort(key=lambda x: x[0].pos)
    return an


def _event_name(runner: Runner, ev: Event, op) -> str:
    m = runner.m
    if isinstance(ev.step, Step):
        gid = ev.actor
        return f"{m.layout.instance_name(gid)}: {op.fmt()}"
    if isinstance(ev.step, Take):
        c = m.kernel.counter(ev.step.counter)
        return f"a CTA outside the model takes a value of {c.label or c.name}"
    st = m.flat[ev.step.process].code[ev.step.pc].stmt
    return f"the completion of {st.fmt()} (CTA {ev.step.cta})"


def _waited(an: Analysis, ev: Event, fam: str, op, gid: int, pair_gen):
    """(the node an event must follow beyond its actor's previous event, or None; the wait it is
    as (barrier kind, key, generation waited for), or None)."""
    m, pre = an.machine, ev.pre
    if fam in ("mbar.wait", "mbar.test"):
        el = m.element_of(op.bar, pre, gid)
        k = pre[m.sl.mb_field(el, "n")] - 1  # the phase whose completion it observed
        return (_done(an, "mb", el, k, op) if k >= 0 else None), ("mb", el, k)
    if fam == "named.resume":
        slot = m.layout.named_slot[(m.instances[gid].cta, m.eval(op.barrier_id, pre, gid))]
        g = pre[m.sl.local[gid][op.snap]]
        return _done(an, "nb", slot, g, op), ("nb", slot, g)
    if fam == "cluster.wait":
        g = pre[m.sl.local[gid][CLUSTER_GEN]]
        q = m.kernel.cluster_of(m.instances[gid].cta)
        return _done(an, "cl", q, g, op), ("cl", q, g)
    if fam == "tmem.pair.resume":
        lead = m.instances[gid].cta - m.instances[gid].cta % 2
        g = pair_gen[lead] - 1  # the generation its issue joined has completed
        return _done(an, "pair", lead, g, op), ("pair", lead, g)
    if fam == "flag.wait":
        return _flag_wait(an, ev, op, gid), None
    if fam == "completion":
        units = an.units[an.runner.slot_of(ev.actor)]
        j = sum(1 for u in units if u.done is not None)
        if j >= len(units):
            raise OutsideClass("an async copy completes with none issued")
        if len({u.issue.own[0] for u in units}) == 1:
            return units[j].issue, None  # one issuer, in program order: the j-th unit's issue
        return None, None  # several issuers: which unit it completes varies; its clock is its own
    return None, None


def _flag_wait(an: Analysis, ev: Event, op, gid: int) -> Node | None:
    """The node a spin wait on a global flag follows: the completion of the adds it cannot pass
    without (Lemma F, docs/semantics.md "Happens-before"). Flags only grow (every add is
    positive), and which adds an execution makes is the same in every execution (nothing reads
    a flag but the waits, and a passed wait reads nothing), so `plan` (every add of the run, per
    actor in program order) is every execution's. An add of actor A is needed by a wait for the
    flag to reach `need` (>=, >) when the adds of every actor but those of A from it on sum to
    less than `need`: no execution passes the wait before it. A wait until the flag == `need`
    passes only at that value: every add must then be needed (the adds sum to `need`)."""
    m = an.machine
    target = m.eval(op.target, ev.pre, gid)
    need = {">=": target, ">": target + 1, "==": target}.get(op.until)
    if need is None:
        raise OutsideClass(f"a spin wait until {op.flag} {op.until} {target}: only waits for "
                           "the flag to reach a value (>=, >, ==) are in the class", op.loc)
    plan = an.flag_plan.get(op.flag, {})
    total = sum(sum(ds) for ds in plan.values())
    if op.until == "==" and total != need:
        raise OutsideClass(f"a spin wait until {op.flag} == {need}, and the adds to it sum to "
                           f"{total}: whether an execution passes it depends on the schedule",
                           op.loc)
    needed = set()
    for actor, ds in plan.items():
        suffix = sum(ds)  # the actor's adds from the i-th on
        for i, d in enumerate(ds):
            if total - suffix < need:
                needed.add((actor, i))
            suffix -= d
    seen: dict[int, int] = defaultdict(int)
    nodes = []
    for n, _ in an.flag_adds.get(op.flag, []):
        actor = n.own[0]
        if (actor, seen[actor]) in needed:
            nodes.append(n)
        seen[actor] += 1
    if len(nodes) != len(needed):
        raise OutsideClass(f"a spin wait on {op.flag} passed before an add it needs", op.loc)
    if not nodes:
        return None
    which = m.kernel.flag(op.flag)
    return completion(f"{which.label or op.flag} reaching {need}", ev.n - 0.5, nodes,
                      an.actors, op.loc)


def _flag_plan(runner: Runner, ex: Execution) -> dict:
    """flag -> actor -> the amounts its adds add, in program order (every add of the run)."""
    m = runner.m
    plan: dict = defaultdict(lambda: defaultdict(list))
    for ev in ex.events:
        if not isinstance(ev.step, Step):
            continue
        fam, op = family(runner, ev)
        if fam == "flag.add":
            at = m.sl.flag[op.flag]
            plan[op.flag][ev.actor].append(ev.post[at] - ev.pre[at])
    return plan


def _done(an: Analysis, kind: str, key, gen: int, op) -> Node:
    p = an.phases.get((kind, key, gen))
    if p is None or p.done is None:
        raise OutsideClass(f"{op.mnemonic} passed without the completion it waits for", op.loc)
    return p.done


def _contributions(an: Analysis, ev: Event, node: Node, fam: str, op, gid: int,
                   pair_gen) -> dict[str, Node]:
    """Record what the event contributed to barriers and which completions it triggered
    ({marker: completion node})."""
    m, pre, post = an.machine, ev.pre, ev.post
    done: dict[str, Node] = {}
    hooks = {(h, e) for h, e in ev.hooks}
    if fam == "flag.add":
        at = m.sl.flag[op.flag]
        d = post[at] - pre[at]
        if d <= 0:
            raise OutsideClass(f"{node.name} adds {d} to a global flag: only positive adds (a "
                               "flag that only grows) are in the class", node.loc)
        an.flag_adds[op.flag].append((node, d))
    # async copies: issues add units to their slots, a completion finishes the oldest
    infl = m.sl.infl
    nslots = len(m.layout.async_keys)
    changed = [] if pre[infl:infl + nslots] == post[infl:infl + nslots] else \
        [i for i, (x, y) in enumerate(zip(pre[infl:infl + nslots], post[infl:infl + nslots]))
         if x != y]
    for slot in changed:
        d = post[infl + slot] - pre[infl + slot]
        if d > 0:
            if fam != "async.issue":
                raise OutsideClass(f"{node.name} issues async copies outside its rule family",
                                   node.loc)
            an.units[slot] += [Unit(node) for _ in range(d)]
        elif d < 0:
            if fam != "completion" or d != -1:
                raise OutsideClass(f"{node.name} retires async copies unexpectedly", node.loc)
            nxt = next(u for u in an.units[slot] if u.done is None)
            nxt.done = node
    # mbarrier elements
    width, nel = len(MB), len(m.layout.elements)
    touched = {e for h, e in hooks if h in ("arrive", "expect")}
    if pre[m.sl.mb:m.sl.mb + nel * width] != post[m.sl.mb:m.sl.mb + nel * width]:
        touched |= {el for el in range(nel) if pre[m.sl.mb + el * width:m.sl.mb + (el + 1) * width]
                    != post[m.sl.mb + el * width:m.sl.mb + (el + 1) * width]}
    for el in sorted(touched):
        base = m.sl.mb + el * width
        a, b = pre[base:base + width], post[base:base + width]
        if fam not in MBAR_WRITERS:
            raise OutsideClass(f"{node.name} changes mbarrier state outside its rule family",
                               node.loc)
        vis0, vis1 = a[MB["vis"]], b[MB["vis"]]
        if vis0 == 0 and vis1 == 1:
            an.inits[el] = node
        if vis0 == 1 and vis1 == 2:
            an.fences[el] = node
        n0, n1 = a[MB["n"]], b[MB["n"]]
        arrived = ("arrive", el) in hooks
        tx = b[MB["tx"]] - a[MB["tx"]]
        if fam == "completion" and not arrived and tx == 0:
            raise OutsideClass(f"{node.name} delivers no bytes: when it completes decides "
                               "nothing and may complete the phase", node.loc)
        if arrived or tx:
            if fam not in ("mbar.update", "completion"):
                raise OutsideClass(f"{node.name} counts on an mbarrier outside its rule family",
                                   node.loc)
            amount = (a[MB["pend"]] - b[MB["pend"]]) if n1 == n0 else a[MB["pend"]]
            an.phase("mb", el, n0).contributions.append(
                Contribution(node, amount if arrived else 0, tx))
        elif fam == "completion" and n1 == n0 + 1:
            an.phase("mb", el, n0).contributions.append(Contribution(node, 0, 0))
        if n1 == n0 + 1:
            ph = an.phase("mb", el, n0)
            ph.done = done[PHASE] = completion(f"phase {n0} of {m.layout.element_name(el)}",
                                               ev.n + 0.5, _phase_members(an, ph),
                                               an.actors, node.loc)
        elif n1 != n0:
            raise OutsideClass(f"{node.name} completes several phases at once", node.loc)
    # named barriers
    for slot in range(len(m.layout.named_slots)):
        base = m.sl.nb + slot * len(NB)
        a, b = pre[base:base + len(NB)], post[base:base + len(NB)]
        if a == b:
            continue
        g0, g1 = a[NB["gen"]], b[NB["gen"]]
        if fam == "named.arrive":
            ph = an.phase("nb", slot, g0)
            if not ph.contributions:
                ph.exp = _want(m, op, pre, gid)
            ph.contributions.append(Contribution(node, 1, 0))
        elif fam != "exit":
            raise OutsideClass(f"{node.name} changes a named barrier outside its rule family",
                               node.loc)
        if g1 == g0 + 1:
            done[NAMED_COMPLETE] = _complete_named(an, slot, g0, ev, node, fam)
        elif g1 != g0:
            raise OutsideClass(f"{node.name} completes several generations at once", node.loc)
    # the cluster barrier
    for q in range(m.kernel.num_clusters if m.layout.cluster else 0):
        at = m.sl.cl + q * len(CL)
        a, b = pre[at:at + len(CL)], post[at:at + len(CL)]
        g0, g1 = a[CL["gen"]], b[CL["gen"]]
        if fam == "cluster.arrive" and m.kernel.cluster_of(m.instances[gid].cta) == q:
            an.phase("cl", q, g0).contributions.append(Contribution(node, 1, 0))
        elif a != b and fam not in ("exit", "cluster.arrive"):
            raise OutsideClass(f"{node.name} changes the cluster barrier outside its rule family",
                               node.loc)
        elif a != b and m.kernel.cluster_of(m.instances[gid].cta) != q:
            raise OutsideClass(f"{node.name} changes another cluster's barrier", node.loc)
        if g1 == g0 + 1:
            done[CLUSTER_COMPLETE] = _complete_cluster(an, q, g0, ev, node, fam)
    # TMEM pair ops: the leader's `pg` bit flips when the second of the pair issues
    if fam == "tmem.pair":
        lead = m.instances[gid].cta - m.instances[gid].cta % 2
        ph = an.phase("pair", lead, pair_gen[lead])
        ph.contributions.append(Contribution(node, 1, 0))
        pg = m.sl.tmem_field(lead, "pg")
        if pre[pg] != post[pg]:
            ph.done = done[PAIR_COMPLETE] = completion(
                f"the pair's {op.mnemonic} (generation {pair_gen[lead]})", ev.n + 0.5,
                [c.node for c in ph.contributions], an.actors, node.loc)
            pair_gen[lead] += 1
    # exits and the end of each CTA
    if fam == "exit":
        cta = m.instances[gid].cta
        an.exits[cta].append(node)
        if post[m.sl.live + cta] == 0:
            an.ends[cta] = completion(f"the end of CTA {cta}", ev.n + 0.75, an.exits[cta],
                                      an.actors, node.loc)
    return done


def _phase_members(an: Analysis, ph: Phase) -> list[Node]:
    """A phase completes after its contributions, and after the issues of the copies that
    deliver its bytes: all of them are in once it completes, whichever instance issued which
    (the copies of a later phase are issued after it: conditions M1)."""
    out = [c.node for c in ph.contributions]
    for c in ph.contributions:
        if c.node.own[0] >= an.runner.n_inst:
            out += [u.issue for u in an.units.get(an.runner.slot_of(c.node.own[0]), ())
                    if u.done is c.node]
    return out


def _want(m, op, pre, gid) -> int:
    return -1 if op.threads is None else m.eval(op.threads, pre, gid)


def _complete_named(an: Analysis, slot: int, g: int, ev: Event, node: Node, fam: str) -> Node:
    """Generation g of named barrier `slot` completes in `ev`. Its contributors: its arrivals;
    for a barrier of every live thread, also the exits of the CTA's instances that did not
    arrive in it (it cannot complete while one of them lives)."""
    m = an.machine
    ph = an.phase("nb", slot, g)
    members = [c.node for c in ph.contributions]
    if ph.exp == -1:
        cta = m.layout.named_slots[slot][0]
        arrived = {c.node.own[0] for c in ph.contributions}
        for inst in m.instances:
            if inst.cta == cta and inst.gid not in arrived:
                x = next((e for e in an.exits[cta] if e.own[0] == inst.gid), None)
                if x is None and not (fam == "exit" and ev.actor == inst.gid):
                    raise OutsideClass(f"a generation of named barrier "
                                       f"{m.layout.named_slots[slot][1]} completed while "
                                       f"{m.layout.instance_name(inst.gid)} neither arrived nor "
                                       "exited")
                members.append(x if x is not None else node)
    elif fam == "exit":
        raise OutsideClass("an exit completed a counted named barrier", node.loc)
    cta, bid = m.layout.named_slots[slot]
    where = f" of CTA {cta}" if m.kernel.num_ctas > 1 else ""
    ph.done = completion(f"generation {g} of named barrier {bid}{where}", ev.n + 0.5, members,
                         an.actors, node.loc)
    return ph.done


def _complete_cluster(an: Analysis, q: int, g: int, ev: Event, node: Node, fam: str) -> Node:
    """Generation g of cluster q's barrier completes in `ev`: after its arrivals and the exits
    of the instances of the cluster that did not arrive in it."""
    m = an.machine
    ph = an.phase("cl", q, g)
    members = [c.node for c in ph.contributions]
    arrived = {c.node.own[0] for c in ph.contributions}
    exited = {x.own[0]: x for xs in an.exits.values() for x in xs}
    if fam == "exit":
        exited[ev.actor] = node
    for inst in m.instances:
        if inst.gid not in arrived and m.kernel.cluster_of(inst.cta) == q:
            x = exited.get(inst.gid)
            if x is None:
                raise OutsideClass(f"the cluster barrier completed while "
                                   f"{m.layout.instance_name(inst.gid)} neither arrived nor exited")
            members.append(x)
    which = f" of cluster {q}" if m.kernel.num_clusters > 1 else ""
    ph.done = completion(f"generation {g} of the cluster barrier{which}", ev.n + 0.5, members,
                         an.actors, node.loc)
    return ph.done


def _accesses(an: Analysis, walker: Walker, ev: Event, node: Node, fam: str, op, gid: int,
              done: dict[str, Node]) -> None:
    m = an.machine
    if isinstance(ev.step, Step):
        rule = m.layout.rule(ev.step.process, ev.step.pc)
    elif isinstance(ev.step, Take):
        # a take only moves its counter on; which values the model's atom.incs read is the
        # run's choice (every sequence of them is a run of its own), so takes order nothing
        return
    else:
        rule = m.layout.completion((ev.step.process, ev.step.pc, ev.step.cta, ev.step.index))
    own_cta = m.instances[gid].cta if gid >= 0 else None
    merged: dict[tuple[int, tuple], set] = defaultdict(set)
    accessor: dict[int, Node] = {}
    accs = walker.accesses(rule.body, rule.guard, gid, ev.pre)
    if fam == "async.issue":
        an.word_marks[node] = {a.key for a in accs if a.key[0] == "w" and a.key[4] == "pend"
                               and a.mode == "W"}
    elif fam == "completion":
        # an st.async's completion clears the words its own unit marked: no other word holds
        # its mark (one unit of an op in flight at a time: conditions A3)
        unit = next(u for u in an.units[an.runner.slot_of(ev.actor)] if u.done is node)
        marks = an.word_marks.get(unit.issue, set())
        accs = [a for a in accs if not (a.key[0] == "w" and a.key[4] == "pend")
                or a.key in marks]
    for acc in accs:
        who = node if acc.zone == "step" else done.get(acc.zone)
        if who is None:
            continue  # a completion this event did not trigger: charged where it happens
        key = acc.key
        if fam == "exit" and acc.zone == "step" and key[0] == "tmem":
            an.end_reads[own_cta].append((key, acc.mode))  # when its last threads exit
            continue
        if key[0] == "mb" and key[2] == "vis" and acc.mode == "R" and acc.zone == "step" \
                and fam not in ("mbar.init", "mbar.fence", "exit"):
            # a wait is enabled (to fail) as soon as it is reached with the init unpublished:
            # its use is checked where it is reached, after its program-order predecessor
            an.vis_uses.append((node, key[1], fam in ("mbar.wait", "mbar.test")))
        if key[0] == "live" and acc.zone == "step" and fam not in ("named.arrive",
                                                                    "cluster.arrive", "exit") \
                and key[1] != own_cta:
            an.remote_reads.append((node, key[1]))
        if key[0] == "infl" and acc.mode in ("B", "R") and fam == "async.issue":
            # a bound, or a check that another copy of the op is in flight (not modelled)
            an.issue_bound_reads.append((node, key[1]))
        if is_tmem_monitor(key) and key[4] == "mip":
            if acc.mode == "W" and fam == "generic" and acc.zone == "step" and \
                    isinstance(ev.step, Step) and isinstance(op, MmaRead):
                an.tmem_sets[key[1:4]].append(node)
            elif acc.mode == "R" and fam not in ("async.issue", "completion"):
                an.tmem_checks[key[1:4]].append(who)
        if key[0] == "flag" and fam not in ("flag.add", "flag.wait"):
            raise OutsideClass(f"{node.name} touches a global flag outside its rule family",
                               node.loc)
        if not is_generic(key):
            continue
        ident = id(who)
        accessor[ident] = who
        merged[(ident, key)].add(acc.mode)
    for (ident, key), modes in merged.items():
        an.places[key].append((accessor[ident], _merge(modes)))


def _merge(modes: set) -> str:
    modes = modes - {"B"} or {"B"}
    if modes == {"B"}:
        return "B"
    if len(modes) == 1:
        return next(iter(modes))
    return "W"
