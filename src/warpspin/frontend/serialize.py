"""``TracedKernel`` <-> compact JSON (gzip), for storing traced kernels as test fixtures.

The extractor needs no DSL once a kernel is traced; a stored trace lets a test extract real
kernels without tracing them again.  What is kept: every op (name, operands, types, attributes,
regions) and its ``SourceLoc`` without the raw ``frames`` (``SourceLoc`` equality ignores them and
nothing downstream reads them), the kernel's arguments and launch facts.  Not kept:
``mlir_text``; ``value_info`` and the op tree links are rebuilt on load.

Strings (types, names, files) are interned in one table; attribute values keep their Python
types (tuples and dicts are tagged, since JSON has only lists and string-keyed objects).
``path_map`` rewrites every file path on the way out (e.g. to drop a machine-specific prefix).
"""
from __future__ import annotations

import gzip
import json
from typing import Any, Callable, Optional

from .mlir_data import Block, KernelArg, Op, Region, SourceLoc, TracedKernel

FORMAT = 1
PathMap = Callable[[str], str]


class _Enc:
    def __init__(self, path_map: Optional[PathMap]):
        self.path_map = path_map or (lambda p: p)
        self.strings: dict[str, int] = {}
        self.locs: dict[tuple, int] = {}
        self.loc_rows: list[list] = []

    def s(self, text: str) -> int:
        i = self.strings.get(text)
        if i is None:
            i = self.strings[text] = len(self.strings)
        return i

    def loc(self, sl: SourceLoc) -> int:
        f = None if sl.file is None else self.path_map(sl.file)
        row = (f, sl.line, sl.col, sl.func, sl.lib_frame, tuple(sl.lib_frames), tuple(sl.labels))
        i = self.locs.get(row)
        if i is None:
            i = self.locs[row] = len(self.loc_rows)
            self.loc_rows.append([None if f is None else self.s(f), sl.line, sl.col,
                                  None if sl.func is None else self.s(sl.func),
                                  None if sl.lib_frame is None else self.s(sl.lib_frame),
                                  [self.s(x) for x in sl.lib_frames],
                                  [self.s(x) for x in sl.labels]])
        return i

    def value(self, v: Any) -> Any:
        if isinstance(v, tuple):
            return {"t": [self.value(x) for x in v]}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {"d": {str(k): self.value(x) for k, x in v.items()}}
        if isinstance(v, str):
            return {"s": self.s(v)}
        if v is None or isinstance(v, (bool, int, float)):
            return v
        return {"s": self.s(str(v))}

    def op(self, o: Op) -> list:
        return [self.s(o.name), o.operands, [self.s(t) for t in o.operand_types], o.results,
                [self.s(t) for t in o.result_types], self.value(o.attrs),
                [[self.block(b) for b in r.blocks] for r in o.regions], self.loc(o.loc)]

    def block(self, b: Block) -> list:
        return [b.args, [self.s(t) for t in b.arg_types], [self.op(o) for o in b.ops]]


class _Dec:
    def __init__(self, strings: list[str], locs: list[list]):
        self.strings = strings
        self.locs = [SourceLoc(file=None if f is None else strings[f], line=line, col=col,
                               func=None if fn is None else strings[fn],
                               lib_frame=None if lf is None else strings[lf],
                               lib_frames=tuple(strings[x] for x in lfs),
                               labels=tuple(strings[x] for x in labs))
                     for f, line, col, fn, lf, lfs, labs in locs]

    def value(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            if "t" in v:
                return tuple(self.value(x) for x in v["t"])
            if "d" in v:
                return {k: self.value(x) for k, x in v["d"].items()}
            return self.strings[v["s"]]
        return v

    def op(self, row: list) -> Op:
        name, operands, otypes, results, rtypes, attrs, regions, loc = row
        s = self.strings
        return Op(name=s[name], operands=list(operands), operand_types=[s[t] for t in otypes],
                  results=list(results), result_types=[s[t] for t in rtypes],
                  attrs=self.value(attrs),
                  regions=[Region([self.block(b) for b in r]) for r in regions],
                  loc=self.locs[loc])

    def block(self, row: list) -> Block:
        args, types, ops = row
        return Block(list(args), [self.strings[t] for t in types], [self.op(o) for o in ops])


def to_dict(k: TracedKernel, path_map: Optional[PathMap] = None) -> dict:
    enc = _Enc(path_map)
    body = [enc.block(b) for b in k.body.blocks]
    args = [[a.index, a.value, enc.s(a.type), enc.value(a.attrs), enc.value(a.host), a.name,
             a.example] for a in k.args]
    out = {
        "format": FORMAT, "name": k.name, "arch": k.arch, "function_name": k.function_name,
        "host_nargs": k.host_nargs, "block_dim": k.block_dim, "cluster_dim": k.cluster_dim,
        "grid_dim": k.grid_dim, "attrs": enc.value(k.attrs), "args": args,
        "loc": enc.loc(k.loc), "body": body,
    }
    out["locs"] = enc.loc_rows
    out["strings"] = list(enc.strings)
    return out


def from_dict(d: dict) -> TracedKernel:
    if d.get("format") != FORMAT:
        raise ValueError(f"unknown traced-kernel format {d.get('format')!r} (expected {FORMAT})")
    dec = _Dec(d["strings"], d["locs"])
    args = [KernelArg(i, v, dec.strings[t], dec.value(attrs), dec.value(host), name, ex)
            for i, v, t, attrs, host, name, ex in d["args"]]

    def dim(x):
        return None if x is None else tuple(x)

    return TracedKernel(
        name=d["name"], args=args, body=Region([dec.block(b) for b in d["body"]]),
        attrs=dec.value(d["attrs"]), block_dim=dim(d["block_dim"]),
        cluster_dim=dim(d["cluster_dim"]), grid_dim=dim(d["grid_dim"]), arch=d["arch"],
        function_name=d["function_name"], host_nargs=d["host_nargs"], loc=dec.locs[d["loc"]])


def dumps(k: TracedKernel, path_map: Optional[PathMap] = None) -> bytes:
    """Deterministic gzip'ed JSON (no timestamp in the gzip header)."""
    text = json.dumps(to_dict(k, path_map), separators=(",", ":"), sort_keys=True)
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def loads(data: bytes) -> TracedKernel:
    return from_dict(json.loads(gzip.decompress(data)))


def save(k: TracedKernel, path: str, path_map: Optional[PathMap] = None) -> None:
    with open(path, "wb") as f:
        f.write(dumps(k, path_map))


def load(path: str) -> TracedKernel:
    with open(path, "rb") as f:
        return loads(f.read())
