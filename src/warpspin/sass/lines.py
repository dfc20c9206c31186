"""What the PTX says of the cubin's line information.

NVVM numbers the lines of a multi-line inline asm block from the block's own line: the fourth
line of the try-wait loop `cute.arch.mbarrier_wait` emits at line 74 gets `.loc 1 77`, so its
`SYNCS.PHASECHK` carries line 77 in the SASS, a line that may hold other code. A `LineMap`, read
from the PTX, knows which lines such blocks took and for which line.

    lines = LineMap.from_ptx(ptx, ops_by_line)
    lines.belongs(instruction, selector, sure)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\b")


def _norm(path: str) -> str:
    return os.path.realpath(path) if path else ""


@dataclass
class LineMap:
    # (file, line an asm block's inner line took) -> {(file, the block's line)}
    taken: dict = field(default_factory=dict)
    # (file, line) -> the SASS patterns of the model's ops on it
    op_patterns: dict = field(default_factory=dict)

    @classmethod
    def from_ptx(cls, ptx: str, op_patterns: dict | None = None) -> "LineMap":
        files, loc, block, taken = {}, None, None, {}
        for line in ptx.splitlines():
            m = _FILE.match(line)
            if m:
                files[m.group(1)] = _norm(m.group(2))
                continue
            if "// begin inline asm" in line:
                block = loc
                continue
            if "// end inline asm" in line:
                block = None
                continue
            m = _LOC.match(line)
            if m:
                loc = (m.group(1), int(m.group(2)))
                if block is not None and loc != block:
                    taken.setdefault(loc, set()).add(block)
        named = {(files.get(f, ""), n): {(files.get(bf, ""), bn) for bf, bn in blocks}
                 for (f, n), blocks in taken.items()}
        return cls(named, dict(op_patterns or {}))

    def belongs(self, ins, sel, sure: bool) -> bool:
        """Whether `ins` (of the selector's pattern, on a line an asm block took) may be the
        selector's: its block is on one of the selector's lines. `sure`: and it can be nobody
        else's (one block took the line, and no op on the line has a pattern it matches)."""
        if not sel.lines or not re.match(sel.pattern, ins.body):
            return False
        where = (_norm(ins.file), ins.line)
        blocks = self.taken.get(where)
        if not blocks or not blocks & sel.lines:
            return False
        if not sure:
            return True
        mine = any(re.match(p, ins.body) for p in self.op_patterns.get(where, ()))
        return len(blocks) == 1 and not mine
