"""The ordering obligations a SyncIR model assumed, as questions about SASS paths.

Every proof is about the program order the DSL emitted. Each obligation below names an order the
model relies on; the SASS check asks whether ptxas kept it: can one thread go from an instruction
of `first` to one of `then` without executing one of `fence`? Instructions are picked by the op's
SASS pattern (its registry row's `sass`) and its Python line (the line information of the
cubin). The list, with the rule that relies on each, is in docs/semantics.md ("What the SASS must
keep")."""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field

from ..syncir.ir import For, If, Lanes, While
from ..syncir.ops import base as ops_base
from ..syncir.ops.buffers import FenceProxyAsync, SmemWrite, TmaStore
from ..syncir.ops.cluster import ClusterArrive, ClusterWait
from ..syncir.ops.copies import TmaLoad
from ..syncir.ops.cp_async import CpAsync, CpAsyncWait, SmemOwn
from ..syncir.ops.dsmem import DsmemStore
from ..syncir.ops.flags import GlobalAdd, GlobalStore, GlobalWait
from ..syncir.ops.mbarrier import MbarArrive, MbarTestWait, MbarWait
from ..syncir.ops.named import BarArrive, BarSync
from ..syncir.ops.reads import MmaRead, SmemRead, TmemLoad, TmemWaitLd, WgmmaRead
from ..syncir.ops.tcgen05 import Tcgen05Commit
from ..syncir.ops.tensormaps import BulkWaitRead, TensormapAcquire, TensormapRelease, TensormapWrite
from ..syncir.ops.wgmma import WgmmaWait
from ..syncir.ops.words import SmemLoad, SmemStore, StAsync

GENERIC_ACCESSES = (SmemRead, SmemWrite, SmemLoad, SmemStore, SmemOwn, DsmemStore)
ACCESSES = GENERIC_ACCESSES + (TmemLoad, WgmmaRead, MmaRead, StAsync)
WAITS = (MbarWait, MbarTestWait, BarSync, ClusterWait, GlobalWait)
# (an arrive.expect_tx arms the barrier for the async copy after it: the copy's completion, not
# the arrive, publishes the data)
RELEASES = (MbarArrive, BarArrive, BarSync, Tcgen05Commit, ClusterArrive, GlobalAdd, GlobalStore)
HANDOVERS = RELEASES + (TmaStore, TmaLoad, WgmmaRead, MmaRead)

# name -> (the rule that relies on it, what it says)
KINDS = {
    "tensormap.drain": ("tensormap-race", "generic stores to a tensormap come after the "
                        "cp.async.bulk.wait_group.read that retires the TMA reads of it"),
    "tensormap.release": ("tensormap-race", "generic stores to a tensormap come before the "
                          "fence.proxy.tensormap::generic.release before the TMA that uses it"),
    "tensormap.acquire": ("tensormap-race", "the tensormap acquire fence comes between the "
                          "release and the TMA that uses the descriptor"),
    "proxy.fence": ("proxy-race", "fence.proxy.async lies between generic shared accesses and "
                    "the hand-over (arrive, barrier, async op) to the async proxy"),
    "barrier.order": ("race", "a barrier wait comes before the accesses it guards, and the "
                      "release after them: no access runs between a release and the next wait"),
    "tmem.wait_ld": ("race", "tcgen05.wait::ld comes between tcgen05.ld and the release of the "
                     "TMEM columns it read"),
    "wgmma.wait": ("race", "wgmma.wait_group comes between the wgmma that reads a stage and the "
                   "release of that stage"),
    "cp_async.wait": ("race", "cp.async.wait_group comes between the cp.async copies it retires "
                      "and the first access or release after it"),
}


@dataclass(frozen=True)
class Selector:
    what: str                                 # "the TMA loads through tmap0"
    pattern: str                              # regex on an instruction's opcode and operands
    lines: frozenset = frozenset()            # {(file, line)}; empty: any line
    entry: bool = False                       # the kernel's first instruction arms too
    ops: tuple = field(default=(), compare=False)   # the SyncIR ops, for the report

    def matches(self, ins) -> bool:
        if not re.match(self.pattern, ins.body):
            return False
        return not self.lines or (_norm(ins.file), ins.line) in self.lines


@dataclass(frozen=True)
class Obligation:
    name: str          # a KINDS key, or a listing obligation's own name
    rule: str          # the violation kind whose absence relies on it
    text: str
    first: Selector
    fence: Selector | None
    then: Selector
    # "between": no path first -> then avoids fence; "order": no path from `first` reaches
    # `then` without a back edge (first must stay after then in one pass of the code);
    # "undecided": the SASS cannot answer it (`text` says why)
    form: str = "between"


def _norm(path: str) -> str:
    return os.path.realpath(path) if path else ""


def _linear(body):
    for s in body:
        if isinstance(s, (For, While, Lanes)):
            yield from _linear(s.body)
        elif isinstance(s, If):
            yield from _linear(s.then)
            yield from _linear(s.else_)
        elif isinstance(s, ops_base.SyncOp):
            yield s


def _sel(what: str, ops, entry: bool = False) -> Selector | None:
    ops = [o for o in ops if type(o).sass]
    if not ops and not entry:
        return None
    pattern = "|".join(sorted({f"(?:{type(o).sass})" for o in ops})) or "$^"
    lines = frozenset((_norm(o.loc.file), o.loc.line) for o in ops if o.loc.file)
    return Selector(what, pattern, lines, entry, tuple(ops))


def _ob(name: str, first, fence, then) -> Obligation | None:
    if first is None or fence is None or then is None:
        return None
    rule, text = KINDS[name]
    return Obligation(name, rule, text, first, fence, then)


def _tma_desc(op) -> str | None:
    return getattr(op, "desc", None)


def _process(ops: list) -> list[Obligation]:
    out = []
    for d in sorted({op.desc for op in ops if isinstance(op, TensormapWrite)}):
        tma = [o for o in ops if isinstance(o, (TmaLoad, TmaStore)) and _tma_desc(o) == d]
        writes = [o for o in ops if isinstance(o, TensormapWrite) and o.desc == d]
        waits = [o for o in ops if isinstance(o, BulkWaitRead) and d in o.maps]
        rel = [o for o in ops if isinstance(o, TensormapRelease)]
        acq = [o for o in ops if isinstance(o, TensormapAcquire) and o.desc == d]
        out += [_ob("tensormap.drain", _sel(f"the TMA through {d}", tma),
                    _sel("the wait for their reads of it", waits),
                    _sel(f"the generic stores to {d}", writes)),
                _ob("tensormap.release", _sel(f"the generic stores to {d}", writes),
                    _sel("the tensormap release fence", rel),
                    _sel(f"the TMA through {d}", tma)),
                _ob("tensormap.acquire", _sel("the tensormap release fence", rel),
                    _sel(f"the acquire fence of {d}", acq), _sel(f"the TMA through {d}", tma))]
    seen_fence, before, after = False, [], []
    fences = [o for o in ops if isinstance(o, FenceProxyAsync)]
    pending: list = []
    for k, o in enumerate(ops):
        if isinstance(o, GENERIC_ACCESSES):
            pending.append(o)
        elif isinstance(o, FenceProxyAsync):
            before += pending
            pending, seen_fence = [], True
        elif seen_fence and isinstance(o, HANDOVERS):
            after.append(o)
            seen_fence = False
    out.append(_ob("proxy.fence", _sel("the generic shared accesses before the fence", before),
                   _sel("fence.proxy.async", fences),
                   _sel("the hand-over after the fence", after)))
    for name, issue, wait, what, then in (
            ("tmem.wait_ld", TmemLoad, TmemWaitLd, "tcgen05", RELEASES),
            ("wgmma.wait", WgmmaRead, WgmmaWait, "wgmma", RELEASES),
            ("cp_async.wait", CpAsync, CpAsyncWait, "cp.async", RELEASES + ACCESSES)):
        waits, after = [], []
        for k, o in enumerate(ops):
            if isinstance(o, wait):
                waits.append(o)
                nxt = next((p for p in ops[k + 1:] if isinstance(p, then)), None)
                if nxt is not None:
                    after.append(nxt)
        out.append(_ob(name, _sel(f"the {what} ops", [o for o in ops if isinstance(o, issue)]),
                       _sel(f"the {what} wait", waits), _sel("what comes after the wait", after)))
    return [o for o in out if o is not None]


def uncovered(kernel) -> list[str]:
    """The ops of the model whose order no obligation checks and no assumption covers (their
    registry row's `sass_covered` is empty), first of each kind, as `op at file:line`."""
    seen, out = set(), []
    for p in kernel.processes:
        for op in _linear(p.body):
            if not type(op).sass_covered and type(op) not in seen:
                seen.add(type(op))
                out.append(f"{op.mnemonic} at {os.path.basename(op.loc.file)}:{op.loc.line}")
    return out


def _guards(body) -> list[tuple]:
    """(access, the waits that may be the last before it, the releases after it up to the next
    wait), in program order; a loop's body is walked twice, so an access early in it is also
    guarded by the wait late in it (the previous iteration's); after an if, either branch's last
    waits may be (a try_wait whose success skips the wait)."""
    out, state = [], {"waits": frozenset(), "current": []}

    def walk(stmts):
        for st in stmts:
            if isinstance(st, (For, While)):
                walk(st.body)
                walk(st.body)
            elif isinstance(st, Lanes):
                walk(st.body)
            elif isinstance(st, If):
                before = dict(state, current=list(state["current"]))
                walk(st.then)
                after_then = state.copy()
                state.update(before, current=list(before["current"]))
                walk(st.else_)
                state["waits"] = state["waits"] | after_then["waits"]
                state["current"] = list({id(t): t for t in (*after_then["current"],
                                                            *state["current"])}.values())
            elif isinstance(st, ops_base.SyncOp):
                step(st)

    def step(o):
        if isinstance(o, WAITS):
            if isinstance(o, BarSync):  # a bar.sync both releases and waits
                for entry in state["current"]:
                    entry[2].append(o)
            state["waits"], state["current"] = frozenset({o}), []
        if isinstance(o, ACCESSES):
            state["current"].append((o, state["waits"], []))
            out.append(state["current"][-1])
        elif isinstance(o, RELEASES) and not isinstance(o, BarSync):
            for entry in state["current"]:
                entry[2].append(o)

    walk(body)
    return out


def _guarded(triples: list) -> list[Obligation]:
    """barrier.order, one per access line: its waits, and the releases after it. Line
    information cannot tell two accesses on one line apart, so a line that is also an access no
    wait precedes (a helper called before and after a barrier) is reported undecided."""
    by_line: dict = {}
    for access, waits, releases in triples:
        by_line.setdefault((access.loc.file, access.loc.line, type(access).sass), []).append(
            (access, waits, releases))
    out = []
    for (file, line, _), group in sorted(by_line.items(), key=lambda kv: kv[0][:2]):
        waits = list({id(w): w for _, ws, _ in group for w in ws}.values())
        accesses = [a for a, _, _ in group]
        rule, text = KINDS["barrier.order"]
        if not waits:
            if any(rs for _, _, rs in group):  # its order against the release after it is unchecked
                out.append(Obligation("barrier.order", rule, (
                    f"line {line} is an access no wait precedes: that it stays before the release "
                    "after it is not checked"), Selector("", "$^"), None, Selector("", "$^"),
                    form="undecided"))
            continue
        ob = Obligation("barrier.order", rule, text,
                        _sel("the kernel's start and the releases after the accesses",
                             [r for _, _, rs in group for r in rs], entry=True),
                        _sel("the waits before them", waits),
                        _sel(f"the accesses at line {line}", accesses))
        if any(not ws for _, ws, _ in group):
            ob = dataclasses.replace(ob, form="undecided", text=(
                f"line {line} is an access after a wait and also one no wait precedes: the "
                "SASS line information cannot tell them apart"))
        out.append(ob)
    return out


def from_kernel(kernel) -> list[Obligation]:
    """Every obligation of every process, once each."""
    out, seen, triples = [], set(), []
    for p in kernel.processes:
        ops = list(_linear(p.body))
        triples += _guards(p.body)
        for ob in _process(ops) + (_guarded(triples) if p is kernel.processes[-1] else []):
            key = (ob.name, ob.first.lines, ob.first.pattern, ob.fence.lines, ob.then.lines,
                   ob.then.pattern)
            if key not in seen:
                seen.add(key)
                out.append(ob)
    return out



def patterns_by_line(kernel) -> dict:
    """(file, line) -> the SASS patterns of the model's ops on that line."""
    out: dict = {}
    for p in kernel.processes:
        for op in _linear(p.body):
            if op.loc.file and type(op).sass:
                out.setdefault((_norm(op.loc.file), op.loc.line), set()).add(type(op).sass)
    return out
