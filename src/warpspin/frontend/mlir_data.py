"""Plain-Python mirror of the traced MLIR module.

Nothing here holds an MLIR object: the frontend converts the module inside the DSL's
trace-finalize hook (while its context is alive) and hands out these dataclasses only.

Values are small integers (``ValueId``), unique within one ``TracedKernel``.  Each value is either
the result of an op or an argument of a block; ``TracedKernel.value_info`` says which.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

ValueId = int


@dataclass(frozen=True)
class Frame:
    """One Python frame of an op's creation call chain (innermost first in ``SourceLoc.frames``)."""

    func: str  # qualified name as the DSL recorded it, e.g. "PipelineTmaAsync.producer_acquire"
    file: str
    line: int
    col: int = 0
    in_dsl: bool = False  # inside the nvidia_cutlass_dsl package


@dataclass(frozen=True)
class SourceLoc:
    """Where an op came from in Python.

    ``file``/``line``: the innermost frame outside the DSL package and the standard library (the
    user's code).  ``lib_frames``: the DSL API frames between the op and that user frame, innermost
    first, without the DSL's tracing plumbing (e.g. ``("mbarrier_wait", "MbarrierArray.wait",
    "PipelineTmaAsync.consumer_wait")``).  ``lib_frame``: the outermost of them, i.e. the library
    call the user wrote (``PipelineTmaAsync.consumer_wait``), or None for ops the user's code
    emitted directly (``if``/``for``/arith).  ``labels``: NameLoc labels that are not frames:
    ``Scope("role=producer")`` names and pipeline labels such as ``"ab.full:wait"``, outermost first.
    """

    file: Optional[str] = None
    line: Optional[int] = None
    col: Optional[int] = None
    func: Optional[str] = None
    lib_frame: Optional[str] = None
    lib_frames: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    frames: tuple[Frame, ...] = field(default=(), repr=False, compare=False)

    def short(self) -> str:
        if self.file is None:
            return "?"
        name = self.file.rsplit("/", 1)[-1]
        return f"{name}:{self.line}"

    def __str__(self) -> str:
        s = self.short()
        if self.lib_frame:
            s += f" [{self.lib_frame}]"
        return s


UNKNOWN_LOC = SourceLoc()
# a TracedKernel attribute: the grid of the host's launch, per dimension (an int where it is
# constant, else None), for a kernel whose grid is not static as a whole
GRID_EXTENTS_ATTR = "warpspin.grid_extents"


@dataclass
class Block:
    args: list[ValueId] = field(default_factory=list)
    arg_types: list[str] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)


@dataclass
class Region:
    blocks: list[Block] = field(default_factory=list)

    @property
    def entry(self) -> Block:
        return self.blocks[0]


@dataclass
class Op:
    name: str
    operands: list[ValueId] = field(default_factory=list)
    operand_types: list[str] = field(default_factory=list)
    results: list[ValueId] = field(default_factory=list)
    result_types: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    loc: SourceLoc = UNKNOWN_LOC
    # filled by TracedKernel indexing: position in the tree
    parent: Optional["Op"] = field(default=None, repr=False, compare=False)
    parent_region: int = field(default=-1, repr=False, compare=False)
    uid: int = field(default=-1, repr=False, compare=False)  # pre-order number in the kernel

    @property
    def result(self) -> ValueId:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    def walk(self) -> Iterator["Op"]:
        """Pre-order over this op and everything nested in it."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for o in b.ops:
                    yield from o.walk()

    def ancestors(self) -> Iterator["Op"]:
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def __repr__(self) -> str:  # compact; dataclass repr would print whole subtrees
        res = ", ".join(f"%{r}" for r in self.results)
        ops = ", ".join(f"%{o}" for o in self.operands)
        head = f"{res} = " if res else ""
        return f"<{head}{self.name}({ops}) @{self.loc.short()}>"


@dataclass(frozen=True)
class ValueInfo:
    """Where a value comes from: an op result, or a block argument of ``owner``'s region."""

    type: str
    op: Optional[Op] = None  # defining op (result) or op owning the block (block argument)
    index: int = 0  # result number / block-argument number
    is_block_arg: bool = False
    region: int = 0  # for block arguments: which region of ``op``; -1 = kernel entry block


@dataclass
class KernelArg:
    index: int
    value: ValueId
    type: str
    attrs: dict[str, Any] = field(default_factory=dict)
    # What the host function passes at launch: ("host", i) for its i-th argument, ("const", v),
    # or (arith op, operand, operand); None when not an integer computation.
    host: Optional[tuple] = None
    name: str = ""  # a readable name (the host function's parameter), when known
    example: Optional[int] = None  # its value for the example arguments of the trace, when known


@dataclass
class TracedKernel:
    """One ``cuda.kernel`` of a traced module, as plain data."""

    name: str
    args: list[KernelArg]
    body: Region
    attrs: dict[str, Any] = field(default_factory=dict)
    block_dim: Optional[tuple[int, int, int]] = None
    cluster_dim: Optional[tuple[int, int, int]] = None
    grid_dim: Optional[tuple[int, int, int]] = None  # only when the grid is static
    arch: Optional[str] = None
    function_name: str = ""  # the host function the DSL traced
    host_nargs: Optional[int] = None  # arguments of that host function in MLIR
    loc: SourceLoc = UNKNOWN_LOC
    mlir_text: Optional[str] = field(default=None, repr=False)  # optional generic-free dump
    value_info: dict[ValueId, ValueInfo] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.value_info:
            self.reindex()

    def int_constant(self, vid) -> Optional[int]:
        """The value of `vid` when an integer `arith.constant` makes it, else None."""
        info = self.value_info.get(vid)
        op = info.op if info is not None and not info.is_block_arg else None
        if op is None or op.name != "arith.constant":
            return None
        m = re.fullmatch(r"(-?\d+)(?: : \w+)?", str(op.attrs.get("value", "")).strip())
        return int(m.group(1)) if m else None

    def reindex(self) -> None:
        """(Re)build parent links, pre-order numbers and the value table."""
        vi: dict[ValueId, ValueInfo] = {}
        for a in self.args:
            vi[a.value] = ValueInfo(a.type, None, a.index, True, -1)
        counter = 0

        def visit(op: Op, parent: Optional[Op], ridx: int) -> None:
            nonlocal counter
            op.parent, op.parent_region, op.uid = parent, ridx, counter
            counter += 1
            for i, (r, t) in enumerate(zip(op.results, op.result_types)):
                vi[r] = ValueInfo(t, op, i)
            for ri, region in enumerate(op.regions):
                for b in region.blocks:
                    for i, (a, t) in enumerate(zip(b.args, b.arg_types)):
                        vi[a] = ValueInfo(t, op, i, True, ri)
                    for o in b.ops:
                        visit(o, op, ri)

        for b in self.body.blocks:
            for o in b.ops:
                visit(o, None, -1)
        self.value_info = vi

    # -- queries -------------------------------------------------------------------------------
    def walk(self) -> Iterator[Op]:
        for b in self.body.blocks:
            for o in b.ops:
                yield from o.walk()

    def ops_named(self, *names: str) -> list[Op]:
        return [o for o in self.walk() if o.name in names]

    def defining_op(self, v: ValueId) -> Optional[Op]:
        info = self.value_info[v]
        return None if info.is_block_arg else info.op

    def type_of(self, v: ValueId) -> str:
        return self.value_info[v].type

    def arg_index(self, v: ValueId) -> Optional[int]:
        """Kernel-argument number if ``v`` is an argument of the kernel's entry block."""
        info = self.value_info[v]
        return info.index if info.is_block_arg and info.region == -1 else None

    @property
    def threads_per_block(self) -> Optional[int]:
        if self.block_dim is None:
            return None
        x, y, z = self.block_dim
        return x * y * z

    @property
    def grid_size(self) -> int:
        """CTAs in the grid (0 when the grid size is not static)."""
        if self.grid_dim is None:
            return 0
        x, y, z = self.grid_dim
        return x * y * z

    @property
    def cluster_size(self) -> int:
        if self.cluster_dim is None:
            return 1
        x, y, z = self.cluster_dim
        return x * y * z
