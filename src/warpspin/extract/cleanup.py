"""Post-passes over extracted bodies: drop dead locals and empty structure, then turn every
surviving statement that still depends on something not understood into ``Unsupported``."""
from __future__ import annotations

from dataclasses import replace

from ..syncir.ir import (Assign, Expr, For, If, Lanes, MBarRef, MbarTestWait, Stmt, Unsupported, While,
                         EXPR_FIELDS, expr_vars, stmt_exprs, walk_stmts)
from .values import LANE, OPAQUE_PREFIX


def subst_stmts(body, env: dict, folder) -> tuple[Stmt, ...]:
    """Every expression of ``body`` (nested statements too) with ``env``'s variables replaced."""
    from .values import subst

    out = []
    for s in body:
        changes = {f: subst(getattr(s, f), env, folder) for f in EXPR_FIELDS
                   if isinstance(getattr(s, f, None), Expr)}
        bar = getattr(s, "bar", None)
        if isinstance(bar, MBarRef):
            changes["bar"] = MBarRef(bar.name, subst(bar.index, env, folder),
                                     None if bar.cta is None else subst(bar.cta, env, folder))
        if isinstance(s, If):
            changes.update(then=subst_stmts(s.then, env, folder), else_=subst_stmts(s.else_, env, folder))
        elif isinstance(s, (For, While, Lanes)):
            changes["body"] = subst_stmts(s.body, env, folder)
        out.append(replace(s, **changes) if changes else s)
    return tuple(out)


def reads_var(body, name: str) -> bool:
    return any(name in _reads(s) for s in walk_stmts(tuple(body)))


def _reads(s: Stmt) -> set[str]:
    out: set[str] = set()
    for e in stmt_exprs(s):
        out |= expr_vars(e)
    return out


def _live_vars(body: tuple[Stmt, ...]) -> set[str]:
    """Variables read by a non-Assign statement, closed over the Assigns that feed them."""
    stmts = list(walk_stmts(body))
    live: set[str] = set()
    for s in stmts:
        if not isinstance(s, Assign):
            live |= _reads(s)
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if isinstance(s, Assign) and s.var in live:
                new = expr_vars(s.value) - live
                if new:
                    live |= new
                    changed = True
    return live


def _prune(body: tuple[Stmt, ...], live: set[str]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Assign):
            if s.var in live:
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


def _problem(s: Stmt) -> str | None:
    names = _reads(s)
    if isinstance(s, MbarTestWait):
        names.discard(s.dest)
    bad = sorted(n[len(OPAQUE_PREFIX):] for n in names if n.startswith(OPAQUE_PREFIX))
    if bad:
        return "depends on " + ", ".join(bad)
    if LANE in names:
        return "depends on the lane index"
    return None


def _describe(s: Stmt) -> str:
    return {If: "branch", For: "loop", While: "while loop", Assign: "value"}.get(type(s),
                                                                                 type(s).__name__)


def mark_unsupported(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        why = _problem(s)
        if why is not None:
            out.append(Unsupported(f"{_describe(s)} {why}", getattr(s, "loc")))
            continue
        if isinstance(s, If):
            s = replace(s, then=mark_unsupported(s.then), else_=mark_unsupported(s.else_))
        elif isinstance(s, (For, While, Lanes)):
            s = replace(s, body=mark_unsupported(s.body))
        out.append(s)
    return tuple(out)


def finish(body: list[Stmt]) -> tuple[Stmt, ...]:
    return mark_unsupported(simplify_body(tuple(body)))
