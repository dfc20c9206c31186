"""A function's control flow, one node per instruction: what can run after each.

Branches (BRA, JMP) go to their target, and on when predicated; EXIT, RET and traps end a path
(predicated: they may fall through); BSSY/BSYNC/WARPSYNC/BREAK are convergence bookkeeping and
fall through, and so does a call to a named function (sass/check.py looks inside the callee). An
indirect branch (BRX, JMX) or call has successors this module cannot name: `unknown` lists them,
and a check that meets one is INCONCLUSIVE."""
from __future__ import annotations

from dataclasses import dataclass

from .listing import Function

BRANCHES = ("BRA", "JMP")
ENDS = ("EXIT", "RET", "KILL", "BPT")
INDIRECT = ("BRX", "JMX", "RPCMOV")


@dataclass(frozen=True)
class Cfg:
    function: Function
    succ: tuple[tuple[int, ...], ...]   # instruction index -> successor indices
    unknown: tuple[int, ...]            # indices whose successors are not all known
    back: frozenset[tuple[int, int]]    # edges that go to an address not after the source


def always(pred: str) -> bool:
    return pred in ("", "PT", "UPT")


def build(f: Function) -> Cfg:
    index = {ins.addr: i for i, ins in enumerate(f.instrs)}
    labels = {lab: index[a] for lab, a in f.labels.items() if a in index}
    succ, unknown, back = [], [], set()
    n = len(f.instrs)
    for i, ins in enumerate(f.instrs):
        nxt = (i + 1,) if i + 1 < n else ()
        base = ins.base
        if base in BRANCHES:
            t = ins.target()
            j = labels.get(t) if t and not t.startswith("0x") else index.get(int(t, 16)) if t else None
            if j is None:
                unknown.append(i)
                s = nxt
            else:
                s = (j,) if always(ins.pred) else tuple(dict.fromkeys((j, *nxt)))
        elif base in ENDS:
            s = () if always(ins.pred) else nxt
        elif base in INDIRECT or base == "CALL" and not ins.target():
            unknown.append(i)
            s = nxt
        else:
            s = nxt
        for j in s:
            if f.instrs[j].addr <= ins.addr:
                back.add((i, j))
        succ.append(s)
    return Cfg(f, tuple(succ), tuple(unknown), frozenset(back))
