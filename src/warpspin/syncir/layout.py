"""The layout of a kernel's model, shared by both backends: its instances, the declared objects
and their slots (mbarrier elements, named barriers, the cluster barrier, live counts, in-flight
copies), and the rule of every visible instruction, built once from the op definitions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .flat import FlatProcess, Op, flatten
from .ir import Const, Kernel
from .objects import LIMITS
from .ops import (counter_take, mma_bufs, BarArrive, BarSync, BarSyncResume, ClusterArrive, ClusterWait, MbarInit,
                  SmemLoad, SmemStore, StAsync, Tcgen05Commit, TmaLoad)
from .rules import Inflight, Obs, Rule, SubRules, replace_places, rule_places


@dataclass(frozen=True)
class Instance:
    gid: int        # global instance number
    process: int    # index into kernel.processes
    index: int      # instance number within its process
    cta: int
    threads: int


@dataclass
class RuleCtx:
    """What an op's rule may know about where it runs (syncir/ops/ reads these fields)."""
    layout: "Layout"
    process: int
    pc: int
    threads: int             # threads executing the op (the instance's, or the Lanes count)

    @property
    def kernel(self) -> Kernel:
        return self.layout.kernel

    @property
    def cta(self) -> int:
        return self.layout.kernel.processes[self.process].cta

    @property
    def instance_threads(self) -> int:
        return self.layout.kernel.processes[self.process].threads

    @property
    def subrules(self) -> SubRules:
        return self.layout.subrules

    @property
    def inited_arrays(self) -> set[str]:
        return self.layout.inited_arrays[self.process]

    def named_ids(self, cta: int) -> list[int]:
        return [b for c, b in self.layout.named_slots if c == cta]

    @property
    def kernel_uses_cluster_barrier(self) -> bool:
        return self.layout.cluster

    @property
    def process_uses_cluster_barrier(self) -> bool:
        return self.layout.process_cluster[self.process]

    def async_into(self, cta: int):
        return [(k, self.layout.async_stmt[k]) for k in self.layout.async_by_cta.get(cta, ())]


@dataclass
class Layout:
    kernel: Kernel
    flat: tuple[FlatProcess, ...] = ()
    subrules: SubRules = field(default_factory=SubRules)
    # build every async completion's rule now (the Promela model needs all of them and their
    # sub-rules); the interpreter builds each one when a copy of its slot first completes
    eager_completions: bool = True

    def __post_init__(self):
        k = self.kernel
        self.flat = flatten(k)
        self.instances: list[Instance] = []
        for pi, p in enumerate(k.processes):
            for j in range(p.instances):
                self.instances.append(Instance(len(self.instances), pi, j, p.cta, p.threads))
        self.gid = {(i.process, i.index): i.gid for i in self.instances}
        self.first_gid = [self.gid[(pi, 0)] for pi in range(len(k.processes))]
        self.param_names = [p.name for p in k.params]
        # mbarrier elements: (cta, array, index) -> element number; arrays are blocks of
        # num_ctas * size elements, CTA-major (Promela: mb_<array>[cta * size + index])
        self.elements: list[tuple[int, str, int]] = []
        self.array_base: dict[str, int] = {}
        for m in k.mbarriers:
            self.array_base[m.name] = len(self.elements)
            self.elements += [(c, m.name, i) for c in range(k.num_ctas) for i in range(m.size)]
        self.element = {key: n for n, key in enumerate(self.elements)}
        # shared words: (cta, array, index) -> word number, arrays CTA-major like the mbarriers
        self.words: list[tuple[int, str, int]] = []
        self.word_base: dict[str, int] = {}
        for w in k.words:
            self.word_base[w.name] = len(self.words)
            self.words += [(c, w.name, i) for c in range(w.copies(k.num_ctas))
                           for i in range(w.size)]
        # global counters (atom.inc), one slot each, and the environment step taking from each
        self.counters: list[str] = [c.name for c in k.counters]
        self.takes: dict[str, Rule] = {c.name: counter_take(c) for c in k.counters}
        # per process: pc -> ("ld" | "st", word ref) of its shared-word accesses (race monitor)
        self.word_ops: list[dict[int, tuple[str, object]]] = [
            {pc: ("st" if isinstance(ins.stmt, SmemStore) else "ld", ins.stmt.ref)
             for pc, ins in fp.ops() if isinstance(ins.stmt, (SmemStore, SmemLoad))}
            for fp in self.flat]
        self.inited_arrays = [{ins.stmt.bar.name for _, ins in fp.ops()
                               if isinstance(ins.stmt, MbarInit)} for fp in self.flat]
        self.process_cluster = [any(isinstance(ins.stmt, (ClusterArrive, ClusterWait))
                                    for _, ins in fp.ops()) for fp in self.flat]
        self.cluster = any(self.process_cluster)
        self._named_layout()
        # async copies: one in-flight counter per (process, pc, target cta, element index)
        self.async_keys: list[tuple[int, int, int, int]] = []
        self.async_stmt: dict[tuple[int, int, int, int], TmaLoad | StAsync | Tcgen05Commit] = {}
        for pi, fp in enumerate(self.flat):
            for pc, ins in fp.ops():
                if isinstance(ins.stmt, (TmaLoad, StAsync, Tcgen05Commit)):
                    st = ins.stmt
                    ctas = st.targets(k) or [fp.process.cta]
                    for c in ctas:
                        for i in range(k.mbarrier(st.bar.name).size):
                            key = (pi, pc, c, i)
                            self.async_keys.append(key)
                            self.async_stmt[key] = st
        self.async_slot = {key: n for n, key in enumerate(self.async_keys)}
        self.async_by_cta: dict[int, list[tuple[int, int, int, int]]] = {}
        for key in self.async_keys:
            self.async_by_cta.setdefault(key[2], []).append(key)
        # staged buffers tcgen05.mma read: each in-flight slot carries a mask per buffer
        self.carried_bufs: list[str] = sorted({b for pi in range(len(k.processes))
                                               for b, _ in mma_bufs(k, pi)})
        self._rules: dict[tuple[int, int], Rule] = {}
        self._completions: dict[tuple[int, int, int, int], Rule] = {}
        # build every rule now: sub-rules are defined as rules are built
        for pi, fp in enumerate(self.flat):
            for pc, _ in fp.ops():
                self.rule(pi, pc)
        if self.eager_completions:
            for key in self.async_keys:
                self.completion(key)
        # per process: the mbarrier elements it observes (waits on), (array, index) -> slot
        self.obs_slots: list[dict[tuple[str, int], int]] = []
        for pi, fp in enumerate(self.flat):
            arrays = sorted({p.array for pc, _ in fp.ops() for p in rule_places(self.rule(pi, pc))
                             if isinstance(p, Obs)})
            slots = {}
            for a in arrays:
                for i in range(k.mbarrier(a).size):
                    slots[(a, i)] = len(slots)
            self.obs_slots.append(slots)

    def _named_layout(self):
        """One slot per (CTA, barrier id) named by a constant, or all 16 of every CTA when some
        id is dynamic."""
        ids, dynamic = set(), False
        for fp in self.flat:
            for _, ins in fp.ops():
                if isinstance(ins.stmt, (BarSync, BarArrive, BarSyncResume)):
                    bid = ins.stmt.barrier_id
                    if isinstance(bid, Const) and 0 <= bid.value < LIMITS.named_barriers:
                        ids.add((fp.process.cta, bid.value))
                    else:
                        dynamic = True
        self.named_dynamic = dynamic
        if dynamic:
            self.named_slots = [(c, i) for c in range(self.kernel.num_ctas)
                                for i in range(LIMITS.named_barriers)]
        else:
            self.named_slots = sorted(ids)
        self.named_slot = {key: n for n, key in enumerate(self.named_slots)}

    # ------------------------------------------------------------------ rules

    def ctx(self, pi: int, pc: int) -> RuleCtx:
        ins = self.flat[pi].code[pc]
        return RuleCtx(self, pi, pc, ins.threads(self.flat[pi].process))

    def rule(self, pi: int, pc: int) -> Rule:
        key = (pi, pc)
        r = self._rules.get(key)
        if r is None:
            ins = self.flat[pi].code[pc]
            assert isinstance(ins, Op)
            r = self._rules[key] = ins.stmt.rule(self.ctx(pi, pc))
        return r

    def completion(self, key: tuple[int, int, int, int]) -> Rule:
        r = self._completions.get(key)
        if r is None:
            pi, pc, cta, idx = key
            st = self.flat[pi].code[pc].stmt
            r = self._completions[key] = st.complete(self.ctx(pi, pc), cta, idx)
        return r

    @cached_property
    def completion_classes(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """The copy sites (process, pc) grouped so that two sites of one class copy into the same
        barrier array and, for every target element both can reach, complete with the same rule
        up to which site's in-flight counter it decrements (R7, docs/semantics.md)."""
        sites: dict[tuple[int, int], dict[tuple[int, int], Rule]] = {}
        for key in self.async_keys:
            pi, pc, cta, idx = key
            anon = replace_places(self.completion(key), lambda p: Inflight(-1, -1, p.cta, p.index)
                                  if isinstance(p, Inflight) else p)
            sites.setdefault((pi, pc), {})[(cta, idx)] = anon
        classes: list[list[tuple[int, int]]] = []
        for site, rules in sites.items():
            array = self.async_stmt[(*site, *next(iter(rules)))].bar.name
            for cls in classes:
                same = all(self.async_stmt[(*m, *next(iter(sites[m])))].bar.name == array
                           and all(sites[m][t] == r for t, r in rules.items() if t in sites[m])
                           for m in cls)
                if same:
                    cls.append(site)
                    break
            else:
                classes.append([site])
        return tuple(tuple(c) for c in classes)

    def completion_class(self, site: tuple[int, int]) -> tuple[tuple[int, int], ...]:
        return next(c for c in self.completion_classes if site in c)

    # ------------------------------------------------------------------ names

    def instance_name(self, gid: int) -> str:
        inst = self.instances[gid]
        return self.kernel.processes[inst.process].instance_name(inst.index)

    def element_name(self, n: int) -> str:
        cta, array, idx = self.elements[n]
        name = self.kernel.mbarrier(array).element_name(idx)
        return name + (f" of CTA {cta}" if self.kernel.num_ctas > 1 else "")

    @cached_property
    def cta_threads(self) -> list[int]:
        return [self.kernel.cta_threads(c) for c in range(self.kernel.num_ctas)]
