"""SASS listings as data: nvdisasm's (``-c -g``: labels, ``//## File`` lines) and cuobjdump's
(``-sass``: absolute branch targets, ``Function :`` headers), or lines grepped out of either.

    functions = parse(text)   # [Function(name, instrs, labels)]
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_FILE = re.compile(r'^\s*//## File "([^"]+)", line (\d+)')
_LABEL = re.compile(r"^(\.L[\w.$]*|[A-Za-z_$][\w.$]*):\s*$")
_FUNC_NV = re.compile(r"^//-+ \.text\.(\S+) -+")
_FUNC_CUOBJ = re.compile(r"^\s*Function\s*:\s*(\S+)")
_PRED = re.compile(r"^@(!?)(U?P(?:T|\d+))\s+")
_PRED_REG = re.compile(r"^!?U?P(?:T|\d+)$")
_TARGET = re.compile(r"`\(([^)]+)\)|^(0x[0-9a-fA-F]+)$")


@dataclass(frozen=True)
class Instr:
    addr: int
    pred: str          # "" (always), "P0", "!P0", "UP1", ...
    opcode: str        # "STG.E.128"
    operands: tuple[str, ...]
    file: str = ""     # the source line nvdisasm printed before it ("" when the listing has none)
    line: int = 0
    ptx: int = 0       # the PTX line it came from, when known (sass/ptxmap.py), and its text
    ptx_text: str = field(default="", compare=False)

    @property
    def base(self) -> str:
        return self.opcode.split(".", 1)[0]

    @property
    def body(self) -> str:
        """The instruction without its predicate: what obligation patterns match."""
        return f"{self.opcode} {', '.join(self.operands)}".strip()

    @property
    def text(self) -> str:
        return (f"@{self.pred} " if self.pred else "") + self.body

    def where(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}" if self.file else ""

    def target(self) -> str | None:
        """A branch's or call's target: a label, or an address as 0x...; None when it has none."""
        for op in self.operands:
            m = _TARGET.search(op.strip())
            if m:
                return m.group(1) or m.group(2).lower()
        return None

    def pred_dests(self) -> tuple[str, ...]:
        """The predicate registers it writes: its leading predicate operands (all of them when it
        writes the predicate file as a whole, `PR`)."""
        out = []
        for op in self.operands:
            op = op.strip()
            if op == "PR":
                return ("*",)
            if not _PRED_REG.match(op) or op.startswith("!"):
                break
            out.append(op)
        return tuple(out)


@dataclass
class Function:
    name: str
    instrs: list[Instr] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)   # label -> address


def split_operands(rest: str) -> tuple[str, ...]:
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return tuple(out)


def parse_instr(addr: int, text: str, file: str = "", line: int = 0) -> Instr:
    pred = ""
    m = _PRED.match(text)
    if m:
        pred = m.group(1) + m.group(2)
        text = text[m.end():]
    opcode, _, rest = text.strip().partition(" ")
    return Instr(addr, pred, opcode, split_operands(rest.strip()), file, line)


def parse(text: str) -> list[Function]:
    funcs: list[Function] = []
    cur: Function | None = None
    file, line = "", 0
    pending: list[str] = []

    def current() -> Function:
        nonlocal cur
        if cur is None:
            cur = Function("(listing)")
            funcs.append(cur)
        return cur

    for raw in text.splitlines():
        m = _FUNC_NV.match(raw) or _FUNC_CUOBJ.match(raw)
        if m:
            cur = Function(m.group(1))
            funcs.append(cur)
            file, line, pending = "", 0, []
            continue
        m = _FILE.match(raw)
        if m:
            file, line = m.group(1), int(m.group(2))
            continue
        m = _INSTR.match(raw)
        if m:
            f = current()
            ins = parse_instr(int(m.group(1), 16), m.group(2), file, line)
            for lab in pending:
                f.labels[lab] = ins.addr
            pending = []
            f.instrs.append(ins)
            continue
        m = _LABEL.match(raw.strip())
        if m and cur is not None and not raw.startswith("\t."):
            pending.append(m.group(1))
    for f in funcs:  # a label after the last instruction (.L_x_18, the function's end)
        f.instrs.sort(key=lambda i: i.addr)
    return [f for f in funcs if f.instrs]
