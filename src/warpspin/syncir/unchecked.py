"""What the model does not check on a kernel's objects: the properties a VERIFIED of it would
not cover (pipeline._decide_verified turns each one asked for into INCONCLUSIVE)."""
from __future__ import annotations

from typing import Optional

from .ir import For, If, Kernel, Lanes, Loc, Unchecked, While, stmt_bodies, walk_stmts
from .ops import (AtomInc, BarSync, ClusterArrive, DsmemStore, GlobalAdd, GlobalLock, GlobalStore,
                  GlobalWait, MbarArrive,
                  MbarWait, SmemLoad, SmemStore,
                  TmemAccess, WarpSync, peer_word_store, tmem_access_checked)


def unchecked_objects(kernel: Kernel) -> list[Unchecked]:
    """The extractor's (buffers, copies and global data it does not follow) and the model's
    own: TMEM data, DSMEM data, and global data a flag does not order."""
    out = list(kernel.unchecked) + _global_data(kernel)
    tmem = _first(kernel, TmemAccess)
    blind = next((s for p in kernel.processes for s in walk_stmts(p.body)
                  if isinstance(s, TmemAccess) and not s.data), None)
    if blind is not None:
        out.append(Unchecked("race", "TMEM data", f"the {blind.what} at line {blind.loc.line} "
                             "is not attributed to an accumulator stage: the model checks that "
                             "the CTA holds columns at it, not which columns it touches, its "
                             "order against the other tcgen05 accesses of them, nor whether it "
                             "is in flight when they are freed", blind.loc))
        ctas = sorted({p.cta for p in kernel.processes for s in walk_stmts(p.body)
                       if isinstance(s, TmemAccess)})
        if not all(tmem_access_checked(kernel, c) for c in ctas):
            out.append(Unchecked("race", "TMEM columns", "a CTA allocates more than once (or "
                                 "in a loop, or in several warps): an access to columns one "
                                 "allocation freed while another is held is not checked",
                                 tmem.loc))
    dsmem = next((s for p in kernel.processes for body in _sequences(p.body)
                  for s, nxt in zip(body, (*body[1:], None))
                  if isinstance(s, DsmemStore) and not peer_word_store(nxt, s)), None)
    if dsmem is not None:
        out.append(Unchecked("race", "the bytes stored into a peer CTA (DSMEM)", "the model "
                             "checks the scope of the release after st.shared::cluster, not the "
                             "readers' acquire nor races on the stored bytes", dsmem.loc))
    return out


def _sequences(body: tuple):
    """`body` and every body nested in it, each as its statements in order."""
    yield body
    for s in body:
        for b in stmt_bodies(s):
            yield from _sequences(b)


def _first(kernel: Kernel, cls):
    return next((s for p in kernel.processes for s in walk_stmts(p.body) if isinstance(s, cls)),
                None)


def _global_data(kernel: Kernel) -> list[Unchecked]:
    """Races on global data (`WordsDecl.grid`) that the model's order does not cover: a flag op
    that is not a release (add) or an acquire (wait, ticket) at .gpu scope or wider, or an
    atom.inc, orders no data between CTAs (docs/semantics.md, "Global data a flag hands over");
    and a release or acquire by some lanes of a warp covers only those lanes' accesses, while
    the model's thread is the warp."""
    grid = [w for w in kernel.words if w.grid]
    if not grid:
        return []
    out = []
    why = _flag_order_why(kernel)
    for w in grid:
        name = f"global data {w.label or w.name}"
        if why is not None:
            out.append(Unchecked("race", name, why[1], why[0]))
            continue
        users = sum(p.instances for p in kernel.processes
                    if any(_touches(s, w.name) for s in walk_stmts(p.body)))
        if users < 2:  # (data one warp alone accesses meets no other warp)
            continue
        lanes = next(filter(None, (_flag_lanes(p.body, w.name) for p in kernel.processes)), None)
        if lanes is not None:
            out.append(Unchecked("race", name, lanes[1], lanes[0]))
    return out



def _touches(st, array: str) -> bool:
    return isinstance(st, (SmemStore, SmemLoad)) and st.ref.name == array


def _flag_order_why(kernel: Kernel) -> Optional[tuple[Loc, str]]:
    for p in kernel.processes:
        for s in walk_stmts(p.body):
            if isinstance(s, MbarArrive) and s.bar.cta is not None and s.scope != "cluster" \
                    or isinstance(s, ClusterArrive) and s.relaxed:
                what = "a relaxed cluster barrier arrive" if isinstance(s, ClusterArrive) else \
                    f"an arrive on another CTA's mbarrier at {s.scope} scope"
                return (s.loc, f"{what} at {s.loc.short()} releases nothing to the other CTAs of "
                        "the cluster: whether it carries a hand-off of global data is not "
                        "followed")
            if isinstance(s, AtomInc):
                return (s.loc, f"the atom.inc at {s.loc.short()} hands out values CTAs may act on: "
                        "whether it orders global data is not followed")
            if isinstance(s, GlobalAdd):
                sems = ("acq_rel",) if s.dest is not None else ("release", "acq_rel")
            elif isinstance(s, GlobalStore):
                sems = ("release",)
            elif isinstance(s, (GlobalWait, GlobalLock)):
                sems = ("acquire", "acq_rel")
            else:
                continue
            if s.sem not in sems or s.scope not in ("gpu", "sys"):
                return (s.loc, f"the flag op at {s.loc.short()} is {s.sem} at {s.scope} scope: it "
                        "orders no global data between CTAs (`scope` reports it)")
    return None


def _flag_lanes(body: tuple, array: str) -> Optional[tuple[Loc, str]]:
    """Where, in one process's `body` in program order (a loop's body twice), an add to or a
    wait on a global flag by some of its lanes (`Lanes`) meets an access of global data `array`
    by other lanes with no bar.sync (or, by the whole warp, bar.warp.sync) between: the release
    covers only the adding lanes' accesses, the acquire (a wait, or an add whose old value is
    used) orders only the waiting lanes' (PTX 8.7; a barrier orders the lanes' accesses through
    causality order, 8.9, 9.7.13.2). Two lane blocks are taken as different lanes (fail
    closed)."""
    accessed: list[tuple[Loc, object]] = []  # (where, lane block) since the last barrier
    waited: list[tuple[Loc, object]] = []    # lane-subset acquires since the last barrier

    def scan(stmts, block) -> Optional[tuple[Loc, str]]:
        for st in stmts:
            if isinstance(st, BarSync) or isinstance(st, WarpSync) and block is None:
                accessed.clear()
                waited.clear()
            elif _touches(st, array):
                w = next((w for w in waited if w[1] is not block), None)
                if w is not None:
                    return (st.loc, f"lanes access it at {st.loc.short()} after a wait by "
                            f"other lanes of their warp ({w[0].short()}) with no "
                            "bar.sync or bar.warp.sync between: the acquire orders only the lanes "
                            "that executed it")
                accessed.append((st.loc, block))
            elif block is not None and (isinstance(st, (GlobalAdd, GlobalStore)) or isinstance(
                    st, MbarArrive) and st.bar.cta is not None):
                a = next((a for a in accessed if a[1] is not block), None)
                if a is not None:
                    return (st.loc, f"some lanes release ({st.mnemonic}) at {st.loc.short()} after "
                            f"other lanes of their warp accessed it ({a[0].short()}) with no "
                            "bar.sync or bar.warp.sync between: the release covers only the "
                            "adding lanes' accesses")
                if getattr(st, "dest", None) is not None:  # an acquire too (a ticket)
                    waited.append((st.loc, block))
            elif isinstance(st, (GlobalWait, GlobalLock, MbarWait)) and block is not None:
                waited.append((st.loc, block))
            elif isinstance(st, (For, While)):
                found = scan(st.body, block) or scan(st.body, block)
                if found:
                    return found
            elif isinstance(st, If):
                found = scan(st.then, block) or scan(st.else_, block)
                if found:
                    return found
            elif isinstance(st, Lanes):
                found = scan(st.body, st if block is None else block)
                if found:
                    return found
        return None
    return scan(body, None)
