"""Why two operations of a failed condition are unordered, in the report's words: the
synchronization the second one did have (the barrier phases in its past, nearest first, and who
completed them), and that the first one is in none of them."""
from __future__ import annotations

from ...syncir.ir import Loc
from .conditions import Failure
from .graph import Node, before

MAX_LINKS = 3


def why_unordered(f: Failure) -> list[tuple[str, Loc | None]]:
    """(message, location) lines: the two ops, then the barrier phases that order the second
    after other threads' work, nearest first, each with the ops that completed it."""
    if f.second is None:
        return []
    first, second = f.first, f.second
    out: list[tuple[str, Loc | None]] = [
        (f"happens-before: {first.name} is not ordered before {second.name}", first.loc),
        (f"the second of the two ({second.name}) is here", second.loc)]
    links = _synchronizations(second)
    if not links:
        out.append((f"{second.name} waits on nothing another thread completes before it", None))
        return out
    for done in links:
        by = sorted({m.name for m in _events(done)})
        shown = ", ".join(by[:4]) + (f" and {len(by) - 4} more" if len(by) > 4 else "")
        out.append((f"{second.name} is ordered after {done.name}, completed by {shown}; "
                    f"{_relation(first, done)}", _loc_of(done)))
    return out


def _relation(first: Node, done: Node) -> str:
    if before(first, done):
        return "the first one precedes it"
    mine = [m for m in _events(done) if first.own and m.own and m.own[0] == first.own[0]]
    if mine:
        last = max(mine, key=lambda m: m.own[1])
        where = f" (line {last.loc.line})" if last.loc is not None and last.loc.line else ""
        return (f"the first one comes after {last.name}{where} in its thread's program order, "
                "so this does not order it")
    return "the first one's thread takes no part in it"


def _synchronizations(node: Node) -> list[Node]:
    """The completions in `node`'s past, nearest first (breadth-first over its predecessors)."""
    seen, order, todo = set(), [], [node]
    while todo and len(order) < MAX_LINKS:
        nxt = []
        for n in todo:
            for p in n.parents:
                if id(p) in seen:
                    continue
                seen.add(id(p))
                if not p.is_event:
                    order.append(p)
                    if len(order) == MAX_LINKS:
                        return order
                nxt.append(p)
        todo = nxt
    return order


def _events(done: Node) -> list[Node]:
    out, todo = [], list(done.members)
    while todo:
        m = todo.pop()
        if m.is_event:
            out.append(m)
        else:
            todo += m.members
    return out


def _loc_of(done: Node) -> Loc | None:
    return next((m.loc for m in _events(done) if m.loc is not None), done.loc)
