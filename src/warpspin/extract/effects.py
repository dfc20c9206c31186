"""What an MLIR op may do to memory besides computing its results, declared by the rule family
that owns the op: the one table the cross-cutting pass of `WarpWalker.op` (`WarpWalker.effects`)
and `Context.written_gmem` read.

* `shared`: what it does to the shared memory its operands name:
  "none" (only views, addresses, layouts or values: nothing is recorded),
  "read" (reads it: a use is recorded),
  "own" (its rule records what it writes; the pass records a use),
  "write" (may write it: a write and a use are recorded; which bytes, the operands' types and,
  for inline PTX, its text decide).
* `global_write`: "none"; "may" (may write global memory: a write into the memory a TMA
  descriptor pointer is computed from is Unsupported, and no fence is known to precede what
  follows); "own" (a tensormap write its rule reads; it still ends a fence's reach).
* `cluster`: "checked" (an access of it through a cluster address is followed as a DSMEM store
  or is Unsupported) or "own" (its rule follows what it does through one).
* `control`: it decides which of its regions run, and how often (structured control flow): a
  fence or a global write inside them is not known to precede what follows.

An op that no family declares has `UNKNOWN` (it is Unsupported unless `walker.unknown_op_why`
allows it as a value op, and the pass then records what it may do: everything).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union


@dataclass(frozen=True)
class Effects:
    shared: str = "none"
    global_write: str = "none"
    cluster: str = "checked"
    control: bool = False

    def __post_init__(self):
        assert self.shared in ("none", "read", "own", "write"), self.shared
        assert self.global_write in ("none", "may", "own"), self.global_write
        assert self.cluster in ("checked", "own"), self.cluster

    @property
    def reads_only(self) -> bool:
        """It writes no memory its operands name (a view, an address, a load)."""
        return self.shared in ("none", "read") and self.global_write == "none"


NONE = Effects()                                # values, views, addresses, layouts
READS = Effects("read")                         # loads and waits that read their operands
WRITES = Effects("write")                       # may write the shared memory it names
CONTROL = Effects(control=True)                 # scf.if, scf.for, scf.while
UNKNOWN = Effects("write", "may")               # an op no family declares

# the layout-algebra families (cute.get_*, cute.make_*, partitions, tiles, slices, ...): views
# of memory, layouts and shapes, all NONE (the view ops the walker follows have rules of their own)
VIEW_PREFIXES = ("cute.get_", "cute.make_", "cute.local_", "cute.slice", "cute.group_",
                 "cute.composition", "cute.logical_", "cute.zipped_", "cute.tiled_",
                 "cute.flat_", "cute.tuple_", "cute.recast", "cute.domain_offset",
                 "cute.append", "cute.prepend", "cute.select", "cute.size", "cute.cosize",
                 "cute.coalesce", "cute.filter", "cute.static", "cute.to_int_tuple",
                 "cute.tiled.copy.partition_", "cute.tiled.copy.retile",
                 "cute.tiled.mma.partition", "cute.mma.make_fragment")

# an op's declared effects: fixed, or chosen from the op (a copy's atom, an asm's text)
Declared = Union[Effects, Callable[[object], Effects]]


def rule(handler, effects: Declared):
    """A family's table entry: the handler and the effects it declares."""
    return Rule(handler, effects)


@dataclass(frozen=True)
class Rule:
    handle: Callable
    effects: Declared

    def of(self, op) -> Effects:
        return self.effects(op) if callable(self.effects) else self.effects
