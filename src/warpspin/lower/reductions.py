"""Which exact reductions a kernel may use (docs/semantics.md, "Reductions").

Each reduction is proven for the ops that list it in their facts (syncir/ops/) and for
footprints of a stated shape. The preconditions are allow-lists: an op that does not list a
reduction, or whose footprint is unknown or outside the proven shape, switches it off, and the
decision says which op did and where.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..syncir.flat import Branch, FlatProcess, Goto, Let, Op, is_exit
from ..syncir.ir import Kernel, walk_stmts
from ..syncir.ops import (SmemRead, SmemWrite, TmaStore, FUSION_RELEASE, FUSION_WAIT, INDEPENDENT_CTAS, SYMMETRIC,
                          SyncOp, snap_var)

LOCAL_SCOPES = ("thread", "warp", "cta")


@dataclass(frozen=True)
class Decision:
    reduction: str
    applied: bool
    why: str = ""          # when not applied: the op (and line) or the condition that refused it


def _ops(kernel: Kernel, processes=None):
    for pi, p in enumerate(kernel.processes):
        if processes is not None and pi not in processes:
            continue
        for s in walk_stmts(p.body):
            if isinstance(s, SyncOp) or type(s).__name__ not in ("Assign", "If", "For", "While",
                                                                  "Lanes"):
                yield pi, s


def _refuser(kernel: Kernel, reduction: str, ok_footprint=None, processes=None) -> str:
    """'' when every op of `kernel` (of `processes`) allows `reduction`, else why not."""
    for pi, s in _ops(kernel, processes):
        name = getattr(type(s), "mnemonic", type(s).__name__)
        where = f"`{name}` at {getattr(s, 'loc', '?')}"
        if not isinstance(s, SyncOp):
            return f"{where} is not a registered op"
        fp = s.footprint(kernel)
        if fp is None:
            return f"{where} has no known footprint"
        if reduction not in s.facts():
            return f"{where} is not covered by its proof"
        if ok_footprint is not None and not ok_footprint(fp):
            return f"{where} has a footprint outside the proven shape"
    return ""


def kernel_wide(kernel: Kernel, reduction: str) -> Decision:
    """Reductions that hold for a whole kernel or not at all: narrow types, dead resets, fusion."""
    why = _refuser(kernel, reduction)
    return Decision(reduction, not why, why)


def symmetric(kernel: Kernel, pi: int) -> Decision:
    """R1 for process pi: several instances, and no op of it stores the executing instance's
    identity in shared state (comparisons with it are proven)."""
    if kernel.processes[pi].instances < 2:
        return Decision(SYMMETRIC, False, "one instance")
    why = _refuser(kernel, SYMMETRIC,
                   lambda fp: all(a.identity != "write" for a in fp.accesses), {pi})
    return Decision(SYMMETRIC, not why, why)


def independent_ctas(kernel: Kernel) -> tuple[Decision, Kernel | None, tuple]:
    """R2: when every op touches only objects of its own CTA and every CTA runs the same
    processes, CTA 0 alone is checked. Returns the decision, the component (a 1-CTA kernel) and,
    per CTA, its processes in the component's order."""
    if kernel.num_ctas < 2:
        return Decision(INDEPENDENT_CTAS, False, "one CTA"), None, ()
    why = _refuser(kernel, INDEPENDENT_CTAS,
                   lambda fp: all(a.scope in LOCAL_SCOPES for a in fp.accesses))
    if why:
        return Decision(INDEPENDENT_CTAS, False, why), None, ()
    per = [[i for i, p in enumerate(kernel.processes) if p.cta == c] for c in range(kernel.num_ctas)]
    base = [replace(kernel.processes[i], cta=0) for i in per[0]]
    if not base:
        return Decision(INDEPENDENT_CTAS, False, "CTA 0 has no processes"), None, ()
    for c in range(1, kernel.num_ctas):
        if [replace(kernel.processes[i], cta=0) for i in per[c]] != base:
            return Decision(INDEPENDENT_CTAS, False, f"CTA {c} runs other processes than CTA 0"), \
                None, ()
    comp = Kernel(kernel.name, tuple(base), kernel.mbarriers, kernel.params, 1, kernel.loc,
                  words=kernel.words, assumptions=kernel.assumptions, counters=kernel.counters,
                  unchecked=kernel.unchecked,
                  tensormaps=kernel.tensormaps, flags=kernel.flags,
                  buffers=tuple(replace(b, storers=tuple(per[0].index(i) for i in b.storers
                                                        if i in per[0]))
                                for b in kernel.buffers),
                  constraints=kernel.constraints)
    return Decision(INDEPENDENT_CTAS, True), comp, tuple(tuple(x) for x in per)


def after_lets(fp: FlatProcess, pc: int) -> int:
    """The first pc after `pc` that is not a `Let` (straight line)."""
    n = pc + 1
    while n < len(fp.code) and isinstance(fp.code[n], Let):
        n += 1
    return n


def fusable_blocks(fp: FlatProcess) -> dict[int, int]:
    """R6: {w: r} for every visible wait at pc w > 0 whose op may be a fused wait, followed by
    `Let`s only (straight line) up to a visible op at pc r that may be a fused release."""
    out = {}
    for w, ins in enumerate(fp.code):
        if w == 0 or not (isinstance(ins, Op) and FUSION_WAIT in ins.stmt.facts()):
            continue
        r = after_lets(fp, w)
        rel = fp.code[r] if r < len(fp.code) else None
        if isinstance(rel, Op) and FUSION_RELEASE in rel.stmt.facts():
            out[w] = r
    return out



PREFIX_SYMMETRY = "prefix-symmetry"


def _shifted(ins, off: int):
    """`ins` of a process whose code runs `off` pcs later, as it reads at its own pc: jump
    targets and the bar.sync snapshot names (named by pc) moved back by `off`."""
    if isinstance(ins, (Branch, Goto)):
        return replace(ins, target=ins.target - off)
    if isinstance(ins, Op) and isinstance(getattr(ins.stmt, "snap", None), str):
        at = int(ins.stmt.snap[len(snap_var(0)) - 1:])
        return replace(ins, stmt=replace(ins.stmt, snap=snap_var(at - off)))
    return ins


def prefix_groups(kernel: Kernel, flat: tuple[FlatProcess, ...]) -> list[tuple[int, int, int]]:
    """R12 (docs/semantics.md): (a, b, start) for every process `a` of one instance whose code
    is a prefix of visible ops followed by the code of process `b`, the next process (same CTA,
    threads and initial locals): its instance joins b's instances as one more sorted record,
    starting at pc 0 while b's start at `start`. The prefix may store a's identity (mbarrier.init);
    its ops write no locals. b must be symmetric (R1's precondition), and the shared code issues
    no async op (their in-flight counters are per pc of a process)."""
    out = []
    for a in range(len(kernel.processes) - 1):
        b = a + 1
        pa, pb = kernel.processes[a], kernel.processes[b]
        fa, fb = flat[a], flat[b]
        start = len(fa.code) - len(fb.code)
        if pa.instances != 1 or start <= 0 or (pa.cta, pa.threads, pa.init) != \
                (pb.cta, pb.threads, pb.init):
            continue
        if not all(isinstance(ins, Op) and not ins.stmt.own_locals(pc) and not is_exit(ins)
                   and not isinstance(ins.stmt, (SmemWrite, SmemRead, TmaStore))
                   for pc, ins in enumerate(fa.code[:start])):
            continue  # (before a staged write or store, a prefix's arrives and fences leave the
            #           buffer bits at 0: they write no locals in effect)
        if any(_shifted(x, start) != y for x, y in zip(fa.code[start:], fb.code)):
            continue
        if any(type(ins.stmt).complete is not SyncOp.complete for _, ins in fb.ops()):
            continue
        if _refuser(kernel, SYMMETRIC, lambda fp: all(x.identity != "write" for x in fp.accesses),
                    {b}):
            continue
        if any(not isinstance(s, SyncOp) or s.footprint(kernel) is None
               for _, s in _ops(kernel, {a})):
            continue
        out.append((a, b, start))
    return out
