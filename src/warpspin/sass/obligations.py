"""The ordering obligations a SyncIR model assumed, as questions about SASS paths.

Every proof is about the program order the DSL emitted. Each obligation below names an order the
model relies on; the SASS check asks whether ptxas kept it: can one thread go from an instruction
of `first` to one of `then` without executing one of `fence`? Instructions are picked by the op's
SASS pattern (its registry row's `sass`) and its Python line (the line information of the
cubin). The list, with the rule that relies on each, is in docs/semantics.md ("What the SASS must
keep")."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..syncir.ir import For, If, Lanes, While
from ..syncir.ops import base as ops_base
from ..syncir.ops.buffers import FenceProxyAsync, SmemWrite, TmaStore
from ..syncir.ops.cluster import ClusterArrive, ClusterWait
from ..syncir.ops.copies import TmaLoad
from ..syncir.ops.mbarrier import MbarArrive, MbarArriveExpectTx, MbarTestWait, MbarWait
from ..syncir.ops.named import BarArrive, BarSync
from ..syncir.ops.reads import MmaRead, SmemRead, TmemLoad, TmemWaitLd, WgmmaRead
from ..syncir.ops.tcgen05 import Tcgen05Commit
from ..syncir.ops.tensormaps import BulkWaitRead, TensormapAcquire, TensormapRelease, TensormapWrite
from ..syncir.ops.words import SmemLoad, SmemStore

ACCESSES = (SmemRead, SmemWrite, SmemLoad, SmemStore, TmemLoad)
WAITS = (MbarWait, MbarTestWait, BarSync, ClusterWait)
RELEASES = (MbarArrive, MbarArriveExpectTx, BarArrive, BarSync, Tcgen05Commit, ClusterArrive)
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
    # `then` without a back edge (first must stay after then in one pass of the code)
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
        if isinstance(o, ACCESSES) and not isinstance(o, TmemLoad):
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
    out += _guarded(ops)
    loads = [o for o in ops if isinstance(o, TmemLoad)]
    wait_ld, after_ld = [], []
    for k, o in enumerate(ops):
        if isinstance(o, TmemWaitLd):
            wait_ld.append(o)
            nxt = next((p for p in ops[k + 1:] if isinstance(p, RELEASES)), None)
            if nxt is not None:
                after_ld.append(nxt)
    out.append(_ob("tmem.wait_ld", _sel("tcgen05.ld", loads), _sel("tcgen05.wait::ld", wait_ld),
                   _sel("the release after the wait", after_ld)))
    return [o for o in out if o is not None]


def _guarded(ops: list) -> list[Obligation]:
    """barrier.order, one per wait: the accesses after it (up to the next wait) and the releases
    after those."""
    out, k = [], 0
    while k < len(ops):
        if not isinstance(ops[k], WAITS):
            k += 1
            continue
        wait, j, accesses, releases = ops[k], k + 1, [], []
        while j < len(ops) and not isinstance(ops[j], WAITS):
            if isinstance(ops[j], ACCESSES):
                accesses.append(ops[j])
            elif isinstance(ops[j], RELEASES) and accesses:
                releases.append(ops[j])
            j += 1
        if j < len(ops) and isinstance(ops[j], BarSync) and accesses:
            releases.append(ops[j])  # a bar.sync both releases and waits
        if accesses:
            out.append(_ob("barrier.order",
                           _sel("the kernel's start and the releases after the accesses",
                                releases, entry=True),
                           _sel(f"the wait at line {wait.loc.line}", [wait]),
                           _sel("the accesses it guards", accesses)))
        k = j
    return out


def from_kernel(kernel) -> list[Obligation]:
    """Every obligation of every process, once each."""
    out, seen = [], set()
    for p in kernel.processes:
        for ob in _process(list(_linear(p.body))):
            key = (ob.name, ob.first.lines, ob.first.pattern, ob.fence.lines, ob.then.lines,
                   ob.then.pattern)
            if key not in seen:
                seen.add(key)
                out.append(ob)
    return out
