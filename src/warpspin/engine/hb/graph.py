"""The happens-before relation of one execution, as vector clocks.

A node is an event of the execution or a barrier's completion (a phase of an mbarrier, a
generation of a named barrier, of the cluster barrier or of a TMEM pair op, the end of a CTA).
`vc[a]` counts the events of actor `a` that must precede the node in every execution (its own
event included, for an event). A completion happens once all its contributors have: its `vc` is
their join and its `front` their own counts, so

    a <= b   iff   front(a) <= vc(b) pointwise,

where an event's front is its own count alone. No transitive closure is built: each node's
clock is the join of its predecessors', O(events x actors) in all.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...syncir.ir import Loc


@dataclass(eq=False)
class Node:
    name: str
    pos: float                   # where in the execution it happens
    vc: list[int]
    own: tuple[int, int] | None = None   # an event: (actor, its count: occurrence + 1)
    front: list[int] | None = None       # a completion: the counts of its contributors
    loc: Loc | None = None
    event: object = None                 # the execution's Event, for an event node
    members: list = field(default_factory=list)  # a completion: its contributor nodes
    preds: tuple = ()                    # an event: its actor's previous event, what it waited for

    @property
    def parents(self) -> tuple:
        """The nodes whose clocks this one's joins."""
        return self.preds if self.own is not None else tuple(self.members)

    @property
    def is_event(self) -> bool:
        return self.own is not None


def before(a: Node, b: Node) -> bool:
    """a happens before b (or is b) in every execution (see the module docstring)."""
    if a is b:
        return True
    if a.own is not None:
        actor, count = a.own
        return b.vc[actor] >= count
    return all(x <= y for x, y in zip(a.front, b.vc))


def join(a: list[int], b: list[int]) -> list[int]:
    return [x if x >= y else y for x, y in zip(a, b)]


def completion(name: str, pos: float, members: list[Node], actors: int,
               loc: Loc | None = None) -> Node:
    """A node that happens when the last of `members` has."""
    vc, front = [0] * actors, [0] * actors
    for m in members:
        vc = join(vc, m.vc)
        if m.own is not None:
            a, c = m.own
            front[a] = max(front[a], c)
        else:
            front = join(front, m.front)
    return Node(name, pos, vc, front=front, loc=loc, members=list(members))
