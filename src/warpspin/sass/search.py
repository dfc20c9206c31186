"""The path search behind every obligation: can a thread go from an `arm` instruction to a `hit`
instruction without executing a `disarm` instruction?

A state is (instruction, armed, what the predicates hold, what the path assumed of them). A
predicate an ELECT wrote holds "this lane is the elected one", the same at every ELECT of the
warp (the lowest active lane: the model's one elected thread); a predicate any other instruction
wrote holds a fresh value named by that instruction, so two branches on the same comparison agree.
A predicated instruction whose predicate is not known runs on one successor state and not on the
other. A `disarm` instruction counts only when it surely runs; `arm` and `hit` whenever they may.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .cfg import BRANCHES, ENDS, Cfg, always

STATE_LIMIT = 400_000


@dataclass(frozen=True)
class Found:
    status: str                  # "holds" | "violated" | "inconclusive"
    path: tuple[int, ...] = ()   # violated: instruction indices from the arming one to the hit
    reason: str = ""
    states: int = 0


def _value(pred: str, pmap: dict, known: dict):
    neg = pred.startswith("!")
    reg = pred.lstrip("!")
    if reg in ("PT", "UPT"):
        return not neg
    sym = pmap.get(reg)
    if sym is None or sym not in known:
        return None
    return known[sym] != neg


def search(cfg: Cfg, arm, disarm, hit, arm_at_entry: bool = False,
           follow_back: bool = True, limit: int = STATE_LIMIT, block=frozenset()) -> Found:
    """`arm`, `disarm`, `hit`: sets of instruction indices; `block`: instructions that disarm
    whenever a path reaches them, whether or not their predicate lets them run."""
    instrs = cfg.function.instrs
    used = {ins.pred.lstrip("!") for ins in instrs if ins.pred}
    unknown = set(cfg.unknown)
    # a register holds one value until written, whatever it is at the start
    start = (0, arm_at_entry, tuple((p, f"init:{p}") for p in sorted(used)), ())
    parent = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        i, armed, pm, kn = state
        ins = instrs[i]
        if i in unknown:
            return Found("inconclusive", reason=f"the path reaches {ins.text} at {ins.addr:#06x}, "
                         "whose successors the listing does not name", states=len(parent))
        pmap, known = dict(pm), dict(kn)
        relevant = ins.base in BRANCHES or ins.base in ENDS or i in arm or i in disarm or i in hit
        v = True if always(ins.pred) else _value(ins.pred, pmap, known)
        outcomes = []  # (runs, what the path then knows, whether it surely runs)
        if v is None and relevant:
            sym = pmap.get(ins.pred.lstrip("!"))
            for runs in (True, False):
                k2 = dict(known)
                if sym is not None:
                    k2[sym] = runs != ins.pred.startswith("!")
                outcomes.append((runs, k2, sym is not None))
        else:
            outcomes.append((True if v is None else v, known, v is not None))
        for runs, k2, sure in outcomes:
            if runs and armed and i in hit:
                return Found("violated", _path(parent, state, arm), states=len(parent))
            a2 = armed and i not in block
            if runs and i in arm:
                a2 = True
            if runs and i in disarm and sure:  # (a bar.sync releases, then waits)
                a2 = False
            p2 = dict(pmap)
            for d in (ins.pred_dests() if (runs or v is None) else ()):
                if d == "*":
                    p2 = {}
                    continue
                if d not in used or d in ("PT", "UPT"):
                    continue
                sym = "elect" if ins.base == "ELECT" else f"@{ins.addr:x}"
                p2[d] = sym
                if sym != "elect":
                    k2 = {s: b for s, b in k2.items() if s != sym}
            if ins.base in BRANCHES:
                succ = [cfg.succ[i][0]] if runs else [i + 1] if i + 1 < len(instrs) else []
            elif ins.base in ENDS:
                succ = [] if runs else [i + 1] if i + 1 < len(instrs) else []
            else:
                succ = list(cfg.succ[i])
            live = set(p2.values()) | {"elect"}
            kt = tuple(sorted((s, b) for s, b in k2.items() if s in live))
            pt = tuple(sorted(p2.items()))
            for j in succ:
                if not follow_back and (i, j) in cfg.back:
                    continue
                nxt = (j, a2, pt, kt)
                if nxt not in parent:
                    parent[nxt] = state
                    if len(parent) > limit:
                        return Found("inconclusive", reason=f"more than {limit:,} path states",
                                     states=len(parent))
                    queue.append(nxt)
    return Found("holds", states=len(parent))


def _path(parent: dict, state, arm) -> tuple[int, ...]:
    """Instruction indices from the `arm` instruction after which the search stayed armed to
    the hit (`state`'s instruction); from the start when it was armed there."""
    chain = []
    s = state
    while s is not None:
        chain.append(s)
        s = parent[s]
    chain.reverse()
    begin = 0
    for k in range(1, len(chain)):
        if not chain[k][1]:
            begin = None
        elif chain[k - 1][0] in arm:
            begin = k - 1
        elif begin is None:
            begin = k - 1
    return tuple(s[0] for s in chain[begin or 0:])
