"""Post-passes over extracted bodies: drop dead locals and empty structure, then turn every
surviving statement that still depends on something not understood into ``Unsupported``."""
from __future__ import annotations

from dataclasses import replace

from ..syncir.ops import CpAsync, TmemAccess, TmemLoad
from ..syncir.validate import DEST_OPS
from ..syncir.ir import (Assign, For, If, Lanes, Stmt, While, expr_vars, map_exprs, stmt_exprs, walk_stmts)
from ..syncir.ops import GlobalRead, MbarTestWait, SmemLoad, Unsupported
from .values import LANE, OPAQUE_PREFIX


def subst_stmts(body, env: dict, folder) -> tuple[Stmt, ...]:
    """Every expression of ``body`` (nested statements too) with ``env``'s variables replaced."""
    from .values import subst

    out = []
    for s in body:
        s = map_exprs(s, lambda e: subst(e, env, folder))
        changes = {}
        if isinstance(s, If):
            changes.update(then=subst_stmts(s.then, env, folder), else_=subst_stmts(s.else_, env, folder))
        elif isinstance(s, (For, While, Lanes)):
            changes["body"] = subst_stmts(s.body, env, folder)
        out.append(replace(s, **changes) if changes else s)
    return tuple(out)


def reads_var(body, name: str) -> bool:
    return any(name in _reads(s) for s in walk_stmts(tuple(body)))


_READS: dict[int, tuple[Stmt, frozenset]] = {}  # id -> (the statement, what it reads)


def _reads(s: Stmt) -> frozenset:
    """The variables a statement reads itself (kept per statement for one `finish`: its passes
    read every statement many times)."""
    kept = _READS.get(id(s))
    if kept is not None and kept[0] is s:
        return kept[1]
    out: set[str] = set()
    for e in stmt_exprs(s):
        out |= expr_vars(e)
    _READS[id(s)] = (s, frozenset(out))
    return _READS[id(s)][1]


def _assigns(s: Stmt):
    """The local an assignment sets (an Assign, or a GlobalRead with a dest: a load into a local
    that nothing else sees), or None."""
    return s.var if isinstance(s, Assign) else s.dest if isinstance(s, GlobalRead) else None


def _live_vars(body: tuple[Stmt, ...]) -> set[str]:
    """Variables read by a statement other than an assignment (`_assigns`), closed over the
    assignments that feed them."""
    stmts = list(walk_stmts(body))
    live: set[str] = set()
    for s in stmts:
        if not _assigns(s):
            live |= _reads(s)
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if _assigns(s) in live:
                new = _reads(s) - live
                if new:
                    live |= new
                    changed = True
    return live


def _prune(body: tuple[Stmt, ...], live: set[str]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        if _assigns(s):
            if _assigns(s) in live:
                out.append(s)
        elif isinstance(s, If):
            t, e = _prune(s.then, live), _prune(s.else_, live)
            if t or e:
                out.append(replace(s, then=t, else_=e))
        elif isinstance(s, (For, While, Lanes)):
            b = _prune(s.body, live)
            if b:
                out.append(replace(s, body=b))
        else:
            out.append(s)
    return tuple(out)


def simplify_body(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """Remove dead assignments and empty control flow until nothing changes."""
    while True:
        new = _prune(body, _live_vars(body))
        if new == body:
            return body
        body = new


def _assigned(body) -> set[str]:
    """Variables a body assigns (Assign, For counters, MbarTestWait results), nested ones too."""
    out: set[str] = set()
    for s in walk_stmts(tuple(body)):
        if isinstance(s, Assign):
            out.add(s.var)
        elif isinstance(s, For):
            out.add(s.var)
        elif isinstance(s, DEST_OPS) and s.dest is not None:
            out.add(s.dest)
    return out


def _origins(s: Stmt, bad: dict[str, frozenset]) -> tuple[frozenset, bool]:
    """What a statement reads that is not modelled: the origins of the opaque values it reads
    (directly or through variables whose value is not modelled), and whether it reads the lane."""
    names = set(_reads(s))
    if isinstance(s, (MbarTestWait, SmemLoad)):
        names.discard(s.dest)
    found = {n[len(OPAQUE_PREFIX):] for n in names if n.startswith(OPAQUE_PREFIX)}
    for n in names & bad.keys():
        found |= bad[n]
    return frozenset(found), LANE in names


def _problem(s: Stmt, bad: dict[str, frozenset]) -> str | None:
    found, lane = _origins(s, bad)
    if found:
        return "depends on " + ", ".join(sorted(found))
    if lane:
        return "depends on the lane index"
    return None


def _describe(s: Stmt) -> str:
    return {If: "branch", For: "loop", While: "while loop", Assign: "value"}.get(type(s),
                                                                                 type(s).__name__)


def _taint(body: tuple[Stmt, ...], bad: dict[str, frozenset]) -> bool:
    """One pass: a variable is not modelled (``bad``, with the origins of why) when one of its
    assignments reads something not modelled, or sits in a statement that is replaced by
    ``Unsupported`` (so the assignment is gone).  Returns whether ``bad`` grew."""
    grew = False

    def mark(names, why: frozenset) -> None:
        nonlocal grew
        for n in names:
            old = bad.get(n, frozenset())
            if not why <= old:
                bad[n] = old | why
                grew = True

    for s in body:
        found, lane = _origins(s, bad)
        why = found | ({"the lane index"} if lane else frozenset())
        if isinstance(s, Assign) and why:
            mark({s.var}, why)
        elif isinstance(s, DEST_OPS) and s.dest is not None and why:
            mark({s.dest}, why)
        elif why and isinstance(s, (If, For, While)):
            mark(_assigned((s,)), why)  # the whole statement becomes Unsupported
        for b in ((s.then, s.else_) if isinstance(s, If) else
                  (s.body,) if isinstance(s, (For, While, Lanes)) else ()):
            if not (why and isinstance(s, (If, For, While))):
                grew |= _taint(b, bad)
    return grew


def _rewrite(body: tuple[Stmt, ...], bad: dict[str, frozenset]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        why = _problem(s, bad)
        if why is not None and hasattr(s, "unplaced"):
            # a data access at an address over a value not modelled: its bytes are unknown (the
            # allocation's races are then not checked, extract/data.py), not an op not modelled
            out.append(s.unplaced())
            continue
        if why is not None and isinstance(s, If) and _only_checks(s):
            # a cp.async or TMEM access issued where the model cannot tell whether it runs is
            # taken to run: a copy only sets its thread's pending bits, and a tcgen05.ld its
            # stage's pending reads, which only make later checks fail, and an access only
            # checks
            out.extend(_rewrite(s.then + s.else_, bad))
            continue
        if why is not None:
            if not isinstance(s, Assign):  # an Assign just goes: every reader is marked
                out.append(Unsupported(f"{_describe(s)} {why}", getattr(s, "loc")))
                # ops not modelled inside a dropped branch or loop stay listed (right after it:
                # reached exactly when it is, so the verdict is the same)
                seen = {out[-1]}
                for t in walk_stmts(tuple(b for body in _bodies(s) for b in body)):
                    if isinstance(t, Unsupported) and t not in seen:
                        seen.add(t)
                        out.append(t)
            continue
        if isinstance(s, If):
            s = replace(s, then=_rewrite(s.then, bad), else_=_rewrite(s.else_, bad))
        elif isinstance(s, (For, While, Lanes)):
            s = replace(s, body=_rewrite(s.body, bad))
        out.append(s)
    return tuple(out)


def _only_checks(s: If) -> bool:
    """A branch whose every op is a cp.async, a TMEM access or a tcgen05.ld read (in branches
    and loops)."""
    ops = [t for t in walk_stmts(s.then + s.else_) if not isinstance(t, (If, Lanes, For))]
    return bool(ops) and all(isinstance(t, (CpAsync, TmemAccess, TmemLoad)) for t in ops)


def _bodies(s: Stmt) -> tuple:
    if isinstance(s, If):
        return (s.then, s.else_)
    if isinstance(s, (For, While, Lanes)):
        return (s.body,)
    return ()


def mark_unsupported(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """Every statement that reads a value not modelled (an opaque value, the lane index, or a
    variable one of whose assignments does) becomes ``Unsupported`` naming the value's origin;
    assignments of such variables are removed.  Nothing left reads a variable that is not
    assigned (the extractor's output must validate)."""
    bad: dict[str, frozenset] = {}
    while _taint(body, bad):
        pass
    return _rewrite(body, bad)


def merge_adjacent_checks(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """A TMEM access right after another one (no statement between them) goes: an access only
    checks the CTA's TMEM state, so in any run where the second fails, the first, run just
    before the second (only other processes' steps are between them), fails too. The one kept
    follows its data only if both did (`TmemAccess.data`)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, TmemAccess) and out and isinstance(out[-1], TmemAccess):
            if out[-1].data and not s.data:
                out[-1] = replace(out[-1], data=False)
            continue
        if isinstance(s, If):
            s = replace(s, then=merge_adjacent_checks(s.then), else_=merge_adjacent_checks(s.else_))
        elif isinstance(s, (For, While, Lanes)):
            s = replace(s, body=merge_adjacent_checks(s.body))
        out.append(s)
    return tuple(out)


def finish(body: list[Stmt]) -> tuple[Stmt, ...]:
    from .spinwait import spin_waits
    try:
        return merge_adjacent_checks(simplify_body(mark_unsupported(simplify_body(
            spin_waits(tuple(body))))))
    finally:
        _READS.clear()
