"""Names of launch parameters that stay the same when the file is edited elsewhere: from the DSL
call that computes the value and the function it is in, never the line number. (Only what the
trace records is used, so a stored trace gives the same names as a fresh one.)"""
from __future__ import annotations

import re

ASSIGNED = re.compile(r"(?:self\.)?([A-Za-z_]\w*)\s*=(?!=)")


def value_name(call: str, func: str | None, leaf: int | None = None) -> str:
    """A computed launch value's name: the DSL call, the leaf of a shape it is, and the function
    it is in (`size_in_kernel`, `shape_0_in_load`). Two values of one name get _2, _3 in the order
    they are traced (walker.Context.param)."""
    call = call.rsplit(".", 1)[-1]
    call = call if re.fullmatch(r"[A-Za-z]\w*", call) else "value"
    where = (func or "").split(".<locals>.")[-1].rsplit(".", 1)[-1]
    name = call if leaf is None else f"{call}_{leaf}"
    return f"{name}_in_{where}" if re.fullmatch(r"[A-Za-z_]\w*", where) else name


def host_name(host: tuple) -> str:
    """A launch parameter's name from the host line that computes a kernel argument
    (KernelArg.host ("op", call, "file:line", text)): the variable or keyword it is assigned to
    (`total_blocks_cluster = ...`, `total_blocks=...,`), else `host_` and the DSL call."""
    m = ASSIGNED.match(host[3] if len(host) > 3 else "")
    if m:
        return m.group(1)
    call = host[1].rsplit(".", 1)[-1]
    return "host_" + (call if re.fullmatch(r"[a-z]\w*", call) else "value")
