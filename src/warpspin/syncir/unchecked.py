"""What the model does not check on a kernel's objects: the properties a VERIFIED of it would
not cover (pipeline._decide_verified turns each one asked for into INCONCLUSIVE)."""
from __future__ import annotations

from .ir import Kernel, Unchecked, stmt_bodies, walk_stmts
from .ops import DsmemStore, TmemAccess, peer_word_store, tmem_access_checked


def unchecked_objects(kernel: Kernel) -> list[Unchecked]:
    """The extractor's (buffers, copies and global data it does not follow) and the model's
    own: TMEM data and DSMEM data."""
    out = list(kernel.unchecked)
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
