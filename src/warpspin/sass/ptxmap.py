"""SASS back to its PTX line and Python line, exactly (`warpspin sass --ptxas`).

The DSL's PTX carries `.loc` directives with the Python lines, which NVVM gets wrong inside
multi-line inline asm (sass/lines.py). Before the PyPI ptxas assembles it, every PTX
instruction gets its own `.loc` into the PTX text itself; nvdisasm then names, for each SASS
instruction, the PTX line it came from, and this module turns that into the Python line in
effect there (an inline asm block's line for its inner lines).

    annotated, table = annotate(ptx)      # table[ptx line] = (file, python line, ptx text)
    functions = [resolve(f, table) for f in parse(nvdisasm(ptxas(annotated)))]
"""
from __future__ import annotations

import dataclasses
import re

from .listing import Function

PTX_NAME = "kernel.ptx"   # the file the annotation names (the next free index)
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]+)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\b")
_INSTR = re.compile(r"^\s*(@!?%?\w+\s+)?[a-z][\w.:]*(\s|;)")


def annotate(ptx: str) -> tuple[str, dict]:
    files, out, table = {}, [], {}
    loc, block = ("", 0), None
    lines = ptx.splitlines()
    for raw in lines:
        m = _FILE.match(raw)
        if m:
            files[m.group(1)] = m.group(2)
    index = max((int(k) for k in files), default=0) + 1
    for number, raw in enumerate(lines, 1):
        if "// begin inline asm" in raw:
            block = loc
        elif "// end inline asm" in raw:
            block = None
        m = _LOC.match(raw)
        if m:
            if block is None:
                loc = (files.get(m.group(1), ""), int(m.group(2)))
            continue  # every instruction gets its own below
        text = raw.strip()
        if _INSTR.match(raw) and not text.startswith(".") and text.endswith(";"):
            where = block or loc
            table[number] = (where[0], where[1], text)
            out.append(f"\t.loc\t{index} {number} 0")
        out.append(raw)
    out.append(f'\t.file\t{index} "{PTX_NAME}"')
    return "\n".join(out) + "\n", table


def resolve(f: Function, table: dict) -> Function:
    """`f` with each instruction's line the Python line of the PTX line nvdisasm named, and that
    PTX line kept (`Instr.ptx`)."""
    instrs = []
    for ins in f.instrs:
        if ins.file.endswith(PTX_NAME) and ins.line in table:
            file, line, text = table[ins.line]
            ins = dataclasses.replace(ins, file=file, line=line, ptx=ins.line, ptx_text=text)
        elif ins.file.endswith(PTX_NAME):
            ins = dataclasses.replace(ins, file="", line=0, ptx=ins.line)
        instrs.append(ins)
    return Function(f.name, instrs, dict(f.labels))
