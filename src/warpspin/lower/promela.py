"""SyncIR -> Promela. The op rules of syncir/ops/ are printed here (the interpreter executes the
same rules); this module adds only the encoding: processes, steps, trails and the reductions.

Each SyncIR process is a proctype executing the flat code of `syncir.flat`, so program counters
match the interpreter's. Its body is one `do` with an option per visible instruction:
`d_step { pc == v && guard -> print WS|S; rule body; local code up to the next visible
instruction; pc = next }`. One visible step is thus one indivisible SPIN transition and stores one
state, in BFS as in DFS. A violation prints `WS|V|<kind>|...` after its step's `WS|S` line, then
`assert(false)`. An exit leaves the `do`: an exited instance has terminated, an instance blocked
at a wait has not, so SPIN's "invalid end state" is the deadlock of the spec.

`async_ops` completes any in-flight copy at any time (`WS|C|...`) and, for each global counter,
takes values for the CTAs outside the model (`WS|O|<counter>`); it idles at an `end` label.

Symmetric encoding (R1): the instances of a process are records of one array kept sorted
(memcmp order, by an embedded-C insertion step after each step), so states that differ by a
permutation of identical instances are one state. Such records print their position (`WS|s`) and
every move (`WS|M`); `lower.trail.parse_trail` turns positions back into instance numbers.
Embedded C is why trails are replayed by `pan -r`, not `spin -t`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import analysis
from . import reductions as red
from .testwait import blocking_tests
from ..syncir.ir import ModelError, eval_expr
from ..syncir.flat import Bound, Branch, FlatProcess, Goto, Let, Op, flatten, is_exit
from ..syncir.ir import BinOp, Const, Expr, Kernel, MBarRef, Select, UnOp, Var, expr_vars
from ..syncir.layout import Layout
from ..syncir.objects import (CLUSTER_BARRIER, LIMITS, LIVE, MBARRIER, NAMED_BARRIER, OBSERVATION,
                              ASYNC_COPY, BUFFER, BUFFER_STAGE, GLOBAL_COUNTER, GLOBAL_FLAG,
                              SECOND_STORER_FIELDS, SHARED_COPY_FIELDS, SHARED_WORD, TENSORMAP, TMEM,
                              TMEM_STAGE_FIELDS, ctype)
from ..syncir.ops import (DEAD_RESET, EARLY_ISSUE, FAILED_TEST_BLOCKS, FUSION, MERGED_COMPLETIONS,
                          LOAD_RUN_MOVER, LOAD_RUNS, RESUME_FUSION, RESUME_MOVER,
                          NARROW_TYPES, async_word_arrays, shared_copies, wgmma_data_arrays,
                          wgmma_data_mode, storers_in_cta,
                          uses_tmem)
from ..syncir.rules import (BufField, Carried, TmapField, TmemField, Call, ClusterField, CounterField, Fail, FlagField, Hook, Inflight, Live,
                            Local, MbarField, NamedField, Obs, Self, Set, When, WordField,
                            any_of)


class LowerError(Exception):
    """The kernel uses something this lowering cannot express (it names what and where)."""


@dataclass(frozen=True)
class LoweredModel:
    kernel: Kernel
    text: str                                     # the Promela model
    layout: Layout                                # of the lowered kernel (the component for R2)
    proctypes: tuple[str, ...]                    # proctype name per SyncIR process
    symmetric: tuple[int, ...] = ()               # processes whose instances are sorted records
    # every reduction applied (docs/semantics.md, "Reductions"); the verdict names them
    reductions: tuple[str, ...] = ()
    refused: tuple[red.Decision, ...] = ()        # reductions not applied, and why
    # independent identical CTAs: the model is CTA 0 alone (`checked`, a 1-CTA kernel);
    # cta_procs[c][j] is the process of `kernel` that is process j of `checked` in CTA c
    checked: Kernel | None = None
    cta_procs: tuple[tuple[int, ...], ...] = ()
    probe_text: str = ""  # the model plus a monitor that stops at the first terminal state
    # R6 wait->release fusion: (process, wait pc, release pc) of every fused block
    fused: tuple[tuple[int, int, int], ...] = ()
    integer_problems: tuple[tuple[str, object], ...] = ()  # expressions beyond 32 bits
    # R10 resume fusion: (process, resume pc, pc of the op taken with it)
    resumed: tuple[tuple[int, int, int], ...] = ()
    # R12 prefix symmetry: the kernel the Promela text models when processes are merged
    # (`modelled`), its processes' indices in `lowered` (`modelled_procs`), and per merged
    # process m of it: (m, a, b, start), a and b the merged processes of `lowered`
    modelled: Kernel | None = None
    modelled_procs: tuple[int, ...] = ()
    merged: tuple[tuple[int, int, int, int], ...] = ()
    # symmetric processes whose record slots are SPIN processes of one shared proctype
    shared: tuple[int, ...] = ()

    @property
    def text_ignoring_deadlocks(self) -> str:
        """The model without its deadlock watcher (for pan -E, which ignores deadlocks)."""
        return _without_watch(self.text)

    @property
    def lowered(self) -> Kernel:
        """The kernel the Promela text models (the component, for independent CTAs)."""
        return self.checked if self.checked is not None else self.kernel

    @property
    def flat(self) -> tuple[FlatProcess, ...]:
        return self.layout.flat

    def original_process(self, pi: int, cta: int = 0) -> int:
        return self.cta_procs[cta][pi] if self.cta_procs else pi

    @property
    def model_kernel(self) -> Kernel:
        """The kernel whose process numbering the Promela text and its trails use."""
        return self.modelled if self.modelled is not None else self.lowered

    def lowered_step(self, pi: int, instance: int, pc: int) -> tuple[int, int, int]:
        """(process, instance, pc) of `lowered` for a step of the modelled kernel: a merged
        process's instance 0 is its prefix process's, the others those of the process it joins,
        whose code starts `start` pcs later."""
        for m, a, b, start in self.merged:
            if pi == m:
                return (a, 0, pc) if instance == 0 else (b, instance - 1, pc - start)
        return (self.modelled_procs[pi] if self.modelled_procs else pi), instance, pc


# ----------------------------------------------------------------------------- names

def cluster_var(field: str, cluster: int) -> str:
    """The Promela variable of field `field` of cluster `cluster`'s barrier."""
    return f"cl_{field}" if cluster == 0 else f"cl{cluster}_{field}"


def _ident(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _unique(names, prefix: str) -> dict[str, str]:
    out, used = {}, set()
    for n in names:
        base = prefix + _ident(n)
        cand, i = base, 1
        while cand in used:
            i += 1
            cand = f"{base}_{i}"
        used.add(cand)
        out[n] = cand
    return out


def param_names(kernel: Kernel) -> dict[str, str]:
    return _unique([p.name for p in kernel.params], "P_")


def _fold(e: Expr) -> Expr:
    """Constant-fold + - * on constants (keeps indices readable)."""
    if isinstance(e, BinOp) and e.op in ("+", "-", "*"):
        a, b = _fold(e.lhs), _fold(e.rhs)
        if isinstance(a, Const) and isinstance(b, Const):
            return Const({"+": a.value + b.value, "-": a.value - b.value,
                          "*": a.value * b.value}[e.op])
        if e.op == "*" and (a == Const(0) or b == Const(0)):
            return Const(0)
        if e.op == "+" and a == Const(0):
            return b
        if e.op in ("+", "-") and b == Const(0):
            return a
        return BinOp(e.op, a, b)
    return e


def _cta_major(size: int, cta: Expr, index: Expr) -> Expr:
    """Element `index` of CTA `cta`'s copy in a flat array of per-CTA arrays of `size`."""
    return _fold(BinOp("+", BinOp("*", cta, Const(size)), index))


# ----------------------------------------------------------------------------- the lowering

# R4 prints only the resets that can change something (analysis.nonzero); True prints every one
# (the same transition system: tests/test_narrow.py compares the two)
PRINT_EVERY_RESET = False

# A symmetric process with at least this many records prints its options once, in a proctype
# that runs once per record slot (its slot is `_pid` less the first slot's), instead of once per
# slot in one proctype: the text shrinks by the number of slots, each slot costs a SPIN process
# header in the state vector (docs/spin.md, "Record slots"). 0 turns it off.
SHARED_SLOTS_MIN = 4
WATCH_RUN = "    run ws_watch();\n"
MAX_SPIN_PROCESSES = 255  # pan's limit (a _pid is a byte); shared slots count one each


def _without_watch(text: str) -> str:
    """A model's text without its deadlock watcher's `run` (pan -E, the R2 probe)."""
    return text.replace(WATCH_RUN, "")

class _Lowering:
    def __init__(self, kernel: Kernel, reduce: bool, fuse: bool,
                 prefix: dict[int, int] | None = None):
        self.k = kernel
        # R12: merged process -> the pc at which the instances other than the first start
        self.prefix = prefix or {}
        self.reduce = reduce
        self.lay = Layout(kernel)
        self.flat = self.lay.flat
        decisions = []
        narrow = red.kernel_wide(kernel, NARROW_TYPES) if reduce else None
        dead = red.kernel_wide(kernel, DEAD_RESET) if reduce else None
        fusion = red.kernel_wide(kernel, FUSION) if reduce and fuse else None
        merge = red.kernel_wide(kernel, MERGED_COMPLETIONS) if reduce else None
        early = red.kernel_wide(kernel, EARLY_ISSUE) if reduce else None
        self.early_ok = early is not None and early.applied
        blocks = red.kernel_wide(kernel, FAILED_TEST_BLOCKS) if reduce else None
        self.blocks_ok = blocks is not None and blocks.applied
        resume = red.kernel_wide(kernel, RESUME_FUSION) if reduce else None
        runs = red.kernel_wide(kernel, LOAD_RUNS) if reduce else None
        for d in (narrow, dead, fusion, merge, early, blocks, resume, runs):
            if d is not None:
                decisions.append(d)
        self.decisions = decisions
        self.infl_classes, self.infl_base, self.infl_count, self.completions = \
            self._infl_slots(merge is not None and merge.applied)
        # value ranges: always computed (the integer check needs them); used for types with R3
        pr = {p.name: (p.lo, p.hi) for p in kernel.params}
        self.ranges = [analysis.ranges(self.lay, pi, pr) for pi in range(len(self.flat))]
        self.checked_locals = [analysis.checked_locals(r) for r in self.ranges]
        self.narrow = narrow is not None and narrow.applied
        self.dead = dead is not None and dead.applied
        liveness = [analysis.liveness(self.lay, pi) if self.dead or self.blocks_ok else None
                    for pi in range(len(self.flat))]
        self.live = liveness if self.dead else [None] * len(self.flat)  # R4 resets by it
        self.blocking = [blocking_tests(fp, liveness[pi][0], self.checked_locals[pi],
                                        analysis.pc_states(self.lay, pi, pr)[0])
                         if self.blocks_ok else {} for pi, fp in enumerate(self.flat)]
        self.fusable = [red.fusable_blocks(fp) if fusion is not None and fusion.applied else {}
                        for fp in self.flat]
        self.early = [self._early_issues(pi) if self.early_ok else {}
                      for pi in range(len(self.flat))]
        self.resumes = [self._resume_blocks(pi) if resume is not None and resume.applied else {}
                        for pi in range(len(self.flat))]
        self.resumed_by = [{n: r for r, n in f.items()} for f in self.resumes]
        self.runs = [self._load_runs(pi) if runs is not None and runs.applied else {}
                     for pi in range(len(self.flat))]
        # R4: what may be non-zero on arrival at each pc (a reset of anything else is a no-op
        # and is not printed)
        self.nonzero = [analysis.nonzero(self.lay, pi, self.live[pi], self._kills(pi),
                                         dict(self.flat[pi].process.init),
                                         (0, self.prefix[pi]) if pi in self.prefix else (0,))
                        if self.dead and not PRINT_EVERY_RESET else None
                        for pi in range(len(self.flat))]
        self.monitored = sorted({fp.code[w].stmt.bar.name for pi, fp in enumerate(self.flat)
                                 for w in self.fusable[pi]})
        self.atw = _unique(self.monitored, "atw_")
        self.params = param_names(kernel)
        self.mbars = _unique([m.name for m in kernel.mbarriers], "mb_")
        self.words = _unique([w.name for w in kernel.words], "w_")
        self.wat = _unique([w.name for w in kernel.words], "wat_")
        self.wpend = _unique(sorted(async_word_arrays(kernel)), "wp_")
        self.wread = _unique(sorted(wgmma_data_arrays(kernel)), "wr_")
        self.wunf = _unique(sorted(a for a in self.wread
                                   if wgmma_data_mode(kernel, a) == "unfenced"), "wu_")
        self.counters = _unique([c.name for c in kernel.counters], "cnt_")
        self.flags = _unique([f.name for f in kernel.flags], "flag_")
        self.tmaps = _unique([t.name for t in kernel.tensormaps], "tm_")
        self.bufs = _unique([b.name for b in kernel.buffers], "buf_")
        self.proctypes = [f"p{i}_{_ident(p.role)}" for i, p in enumerate(kernel.processes)]
        self.symmetric = set()
        for pi in range(len(self.flat)):
            if pi in self.prefix:  # R12's own precondition stands for R1's
                self.symmetric.add(pi)
                continue
            if reduce:
                d = red.symmetric(kernel, pi)
                if d.applied:
                    self.symmetric.add(pi)
                elif kernel.processes[pi].instances > 1:
                    decisions.append(d)
        self.shared = {pi for pi in self.symmetric
                       if SHARED_SLOTS_MIN and kernel.processes[pi].instances >= SHARED_SLOTS_MIN}
        while self.shared and self._spin_processes() > MAX_SPIN_PROCESSES:
            self.shared.remove(max(self.shared, key=lambda pi: kernel.processes[pi].instances))
        self.first_pid = self._first_pids()
        self.integer_problems = analysis.integer_problems(self.lay, self.ranges)
        # R3 on the shared state: what each mbarrier field needs (None: the declared types)
        self.mbf = analysis.mbar_fields(self.lay, self.ranges) if self.narrow else None
        # R3 + R4: locals that are one constant wherever read or stored (not stored)
        self.consts = [analysis.constant_locals(self.lay, pi, pr, self.live[pi][0],
                                                keep=self.checked_locals[pi])
                       if self.narrow and self.dead else {} for pi in range(len(self.flat))]

    # -- places
    def mb_index(self, array: str, cta: Expr, index: Expr) -> Expr:
        return _cta_major(self.k.mbarrier(array).size, cta, index)

    def word_index(self, array: str, cta: Expr, index: Expr) -> Expr:
        return _cta_major(self.k.word_array(array).size, cta, index)

    def _early_issues(self, pi: int) -> dict[int, Expr]:
        """R8: {pc: condition} of the async issues of process pi that the step before them
        also takes when the condition holds (docs/semantics.md). Not an R6 wait or release,
        nor a shared-word access (their monitors count the instances resting there)."""
        fused = set(self.fusable[pi]) | set(self.fusable[pi].values())
        out = {}
        for pc, ins in self.flat[pi].ops():
            cond_of = getattr(ins.stmt, "early_issue_condition", None)
            if cond_of is None or pc in fused or pc in self.lay.word_ops[pi]:
                continue
            cond = cond_of(self.lay.ctx(pi, pc))
            if cond is not None:
                out[pc] = cond
        return out

    def _resume_blocks(self, pi: int) -> dict[int, int]:
        """R10: {r: n} for every resume at pc r directly followed by the visible op at n = r + 1
        that its step may take along (docs/semantics.md). n must not be a pc that a monitor
        counts (R6's fused waits, shared-word accesses), an R8 issue, an R9 test, a resume or
        an exit. (With local code between r and n, n's guard would need it substituted; such
        pairs are left alone.)"""
        fp = self.flat[pi]
        busy = (set(self.fusable[pi]) | set(self.fusable[pi].values()) | set(self.early[pi])
                | set(self.blocking[pi]) | set(self.lay.word_ops[pi]))
        out = {}
        k = self.k
        for r, ins in fp.ops():
            n = r + 1
            nxt = fp.code[n] if n < len(fp.code) else None
            if RESUME_MOVER not in ins.stmt.facts_in(k, pi) or r in busy or not isinstance(nxt, Op):
                continue
            if n not in busy and not is_exit(nxt) and RESUME_MOVER not in nxt.stmt.facts_in(k, pi):
                out[r] = n
        return out

    def _load_runs(self, pi: int) -> dict[int, tuple[int, ...]]:
        """R11: {first pc: pcs} of every run of two or more shared-word loads at consecutive pcs
        whose word indices read no destination of an earlier load of the run (docs/semantics.md).
        No pc of a run is one another reduction takes along with a step (R8, R10)."""
        fp = self.flat[pi]
        taken = set(self.early[pi]) | set(self.resumes[pi].values())

        def load(pc) -> bool:
            """A load that may join a run: it lists the fact, and its step is never blocked
            (the run's step has no guard of its own)."""
            ins = fp.code[pc]
            return (isinstance(ins, Op) and pc not in taken
                    and LOAD_RUN_MOVER in ins.stmt.facts_in(self.k, pi)
                    and self.lay.rule(pi, pc).guard == Const(1))

        out, pc = {}, 0
        while pc < len(fp.code):
            run = []
            while pc < len(fp.code) and load(pc) and not (
                    expr_vars(fp.code[pc].stmt.ref.index)
                    & {getattr(fp.code[x].stmt, "dest", None) for x in run}):
                run.append(pc)
                pc += 1
            if len(run) > 1:
                out[run[0]] = tuple(run)
            pc += 0 if run else 1
        return out

    def spin_runs(self, pi: int) -> int:
        """How many SPIN processes init runs for process pi: one per instance, one for the
        records of a symmetric process, one per record slot when its slots are shared."""
        one = pi in self.symmetric and pi not in self.shared
        return 1 if one else self.k.processes[pi].instances

    def _spin_processes(self) -> int:
        """SPIN processes the model runs: init, those of every process, async_ops, the watcher
        and the R2 probe."""
        return 4 + sum(map(self.spin_runs, range(len(self.k.processes))))

    def _first_pids(self) -> dict[int, int]:
        """The `_pid` of each process's first SPIN process, in init's order of `run`s (init is
        pid 0)."""
        out, pid = {}, 1
        for pi in range(len(self.k.processes)):
            out[pi] = pid
            pid += self.spin_runs(pi)
        return out

    def _kills(self, pi: int) -> set[int]:
        """The visible pcs on every arrival at which an instance's dead variables are reset (it
        rests there): not pc 0 (the start state is not reset), an R8 issue, an R6 release or a
        load of an R11 run after its first (those a step may pass without resting)."""
        passed = (set(self.early[pi]) | set(self.fusable[pi].values())
                  | {pc for run in self.runs[pi].values() for pc in run[1:]})
        return {pc for pc, _ in self.flat[pi].ops() if pc and pc not in passed}

    def _infl_slots(self, merge: bool):
        """The in-flight counters: one per (copy site, target CTA, element) or, with R7, one per
        (completion class, target CTA, element). Returns the classes, each site's
        (first slot of its class, first target CTA of its class, array size), the number of
        slots and, per slot, the key of a site whose completion rule it runs (None: no site of
        the class reaches that element)."""
        sites = {}
        for key in self.lay.async_keys:
            sites.setdefault(key[:2], []).append(key)
        classes = list(self.lay.completion_classes) if merge else [(s,) for s in sites]
        base, completions, n = {}, [], 0
        for cls in classes:
            keys = [k for s in cls for k in sites[s]]
            size = self.k.mbarrier(self.lay.async_stmt[keys[0]].bar.name).size
            first, last = min(k[2] for k in keys), max(k[2] for k in keys)
            for s in cls:
                base[s] = (n, first, size)
            by_target = {}
            for k in keys:
                by_target.setdefault((k[2], k[3]), k)
            for cta in range(first, last + 1):
                for idx in range(size):
                    completions.append(by_target.get((cta, idx)))
            n += (last - first + 1) * size
        return tuple(classes), base, n, completions

    def async_index(self, p: Inflight) -> Expr:
        base, first, size = self.infl_base[(p.process, p.pc)]
        return _fold(BinOp("+", Const(base), BinOp("+", BinOp("*", BinOp("-", p.cta, Const(first)),
                                                                 Const(size)), p.index)))

    def named(self, cta: int, bid: Expr, ctx) -> str:
        bid = _fold(bid)
        if isinstance(bid, Const):
            slot = self.lay.named_slot.get((cta, bid.value))
            if slot is None:
                raise LowerError(f"named barrier {bid.value} of CTA {cta} has no slot")
            return f"nb[{slot}]"
        return f"nb[{cta * LIMITS.named_barriers} + {ctx.e(bid)}]"

    # ------------------------------------------------------------------ the whole model
    def model(self) -> str:
        out = [f"/* warpspin: kernel {self.k.name} (generated; docs/semantics.md) */",
               "c_code { static int ws_trail; }  /* embedded C: pan -r prints the WS| lines */",
               *([_typedef("MBar", MBARRIER)] if self.mbf is None else
                 [self.mbar_typedef(m.name) for m in self.k.mbarriers]),
               _typedef("NBar", NAMED_BARRIER)]
        for p in self.k.params:
            out.append(f"int {self.params[p.name]};")
        for m in self.k.mbarriers:
            t = "MBar" if self.mbf is None else "T_" + self.mbars[m.name]
            out.append(f"{t} {self.mbars[m.name]}[{m.size * self.k.num_ctas}];")
        if self.lay.named_slots:
            out.append(f"NBar nb[{len(self.lay.named_slots)}];")
        f = LIVE.fields[0]
        out.append(f"{ctype(f.lo, f.hi)} live[{self.k.num_ctas}];")
        if self.lay.cluster:
            for q in range(self.k.num_clusters):
                for f in CLUSTER_BARRIER.fields:
                    out.append(f"{ctype(f.lo, f.hi)} {cluster_var(f.name, q)};  /* cluster "
                               f"barrier: {f.doc} */")
        if self.lay.async_keys:
            f = ASYNC_COPY.fields[0]
            out.append(f"{ctype(f.lo, f.hi)} infl[{self.infl_count}];")
            if self.lay.carried_bufs:
                f = ASYNC_COPY.field("carried")
                out.append(f"{ctype(f.lo, f.hi)} carried[{self.infl_count * len(self.lay.carried_bufs)}];"
                           f"  /* {f.doc} */")
        for w in self.k.words:
            f = SHARED_WORD.field("val")
            n = w.size * w.copies(self.k.num_ctas)
            many = sum(p.instances for p in self.k.processes) > 255
            out.append(f"{ctype(f.lo, f.hi)} {self.words[w.name]}[{n}];  /* shared words */")
            out.append(f"{'short' if many else 'byte'} {self.wat[w.name]}[{2 * n}];  "
                       "/* race monitor: instances whose next step loads (0) / stores (1) it */")
            if w.name in self.wpend:
                out.append(f"{ctype(0, len(self.lay.async_keys))} {self.wpend[w.name]}[{n}];  "
                           "/* the st.async in flight that wrote it (copy counter + 1) */")
            if w.name in self.wread:
                f = SHARED_WORD.field("ard")
                out.append(f"{ctype(f.lo, f.hi)} {self.wread[w.name]}[{n}];  /* {f.doc} */")
            if w.name in self.wunf:
                out.append(f"bit {self.wunf[w.name]}[{n}];  /* unfenced generic write */")
        for c in self.k.counters:
            f = GLOBAL_COUNTER.field("val")
            out.append(f"{ctype(f.lo, f.hi)} {self.counters[c.name]};  /* global counter "
                       f"{c.label or c.name} (atom.inc) */")
        for g in self.k.flags:
            f = GLOBAL_FLAG.field("val")
            out.append(f"{ctype(f.lo, f.hi)} {self.flags[g.name]};  /* global flag "
                       f"{g.label or g.name} */")
        if uses_tmem(self.k):
            for f in TMEM.fields:
                out.append(f"{ctype(f.lo, f.hi)} tmem_{f.name}[{self.k.num_ctas}];  /* tensor "
                           f"memory: {f.doc} */")
        if self.k.tensormaps:
            out.insert(2, _typedef("TMap", TENSORMAP))
        for t in self.k.tensormaps:
            out.append(f"TMap {self.tmaps[t.name]}[{self.k.num_ctas}];  /* tensormap "
                       f"{t.label or t.name} */")
        if self.k.buffers:
            # the accumulator fields only where a TMEM buffer has them (no rule of a shared-memory
            # stage names them)
            tmem_only = () if any(b.space == "tmem" for b in self.k.buffers) else TMEM_STAGE_FIELDS
            # and those of a second storing thread only where a CTA has one
            second = () if any(len(storers_in_cta(self.k, b, c)) > 1 for b in self.k.buffers
                               for c in range(self.k.num_ctas)) else SECOND_STORER_FIELDS
            # and the count of copies in flight only where threads read another's cp.async copies
            copied = () if any(shared_copies(self.k, b.name) for b in self.k.buffers) \
                else SHARED_COPY_FIELDS
            out.insert(2, _typedef("BStage", BUFFER_STAGE, omit=tmem_only + second + copied))
            out.insert(3, _typedef("BBuf", BUFFER, omit=second))
        for b in self.k.buffers:
            out.append(f"BStage {self.bufs[b.name]}_s[{b.stages * self.k.num_ctas}];  /* staged "
                       f"buffer {b.label or b.name}, per (CTA, stage) */")
            out.append(f"BBuf {self.bufs[b.name]}[{self.k.num_ctas}];")
        if self.monitored:
            out.append("/* R6 monitor: instances at a fused wait, per (element, parity) */")
            many = sum(p.instances for p in self.k.processes) > 255
            for name in self.monitored:
                n = 2 * self.k.mbarrier(name).size * self.k.num_ctas
                out.append(f"{'short' if many else 'byte'} {self.atw[name]}[{n}];")
        out.append("")
        for pi in sorted(self.symmetric):
            out += self.record_decls(pi)
        g = _GlobalCtx(self)
        for name, body in self.lay.subrules.bodies.items():
            out += [f"inline {name}() {{", *_indent(g.stmts(body, _viol_text("-1", "-1", "-1")), 2),
                    "  skip", "}"]
        for pi in range(len(self.flat)):
            out += self.proctype(pi)
        if self.shared:
            out += self.watch_proctype()
        if self.lay.async_keys or self.k.counters:
            out += self.async_proctype()
        out += self.init()
        return "\n".join(out) + "\n"

    def init(self) -> list[str]:
        lines = ["init {", "  atomic {"]
        for p in self.k.params:
            v = self.params[p.name]
            opts = " ".join(f":: {v} = {x}" for x in p.values)
            lines.append(f"    if {opts} fi;")
            lines.append(f'    printf("WS|P|{p.name}|%d\\n", {v});')
        if self.k.constraints:  # parameter values no launch has: no instance runs
            g = _GlobalCtx(self)
            cond = " && ".join(f"({g.e(c)} != 0)" for c in self.k.constraints)
            lines.append(f"    if :: !({cond}) -> goto not_a_launch :: else -> skip fi;")
        for c in range(self.k.num_ctas):
            lines.append(f"    live[{c}] = {self.k.cta_threads(c)};")
            for t in self.k.tensormaps:
                for f in TENSORMAP.fields:
                    if f.init:
                        lines.append(f"    {self.tmaps[t.name]}[{c}].{f.name} = {f.init};")
        for m in self.k.mbarriers:
            for i in range(m.size * self.k.num_ctas):
                for f in MBARRIER.fields:
                    if f.init and self.mbar_stored(m.name, f.name):
                        lines.append(f"    {self.mbars[m.name]}[{i}].{f.name} = {f.init};")
        for pi, p in enumerate(self.k.processes):
            if pi in self.prefix:  # R12: the first record runs the prefix, the others start after
                # one d_step for the records' start-up: pan merges at most 256 statements of an
                # atomic sequence, and each d_step inside init's atomic would store a state
                rec = []
                for j in range(p.instances):
                    ctx = _Ctx(self, pi, j)
                    rec += [f"{ctx.locals[n]} = {v};" for n, v in p.init if v and n in ctx.locals]
                    rec.append(f"{ctx.gid} = {self.lay.first_gid[pi] if j == 0 else -2};")
                    if j == 0 and isinstance(self.flat[pi].code[0], Op):
                        rec += ctx.at_word(0, 1)
                    else:
                        rec += ctx.continuation(f"I{pi}_", self.prefix[pi] if j else 0)
                rec.append(f"c_code {{ ws_sort{pi}(0); }}")
                lines += ["    d_step {", *_indent(rec, 6), "    };"]
                lines += self.runs_of(pi)
                continue
            if pi in self.symmetric:
                for j in range(p.instances):
                    ctx = _Ctx(self, pi, j)
                    lines += [f"    {ctx.locals[n]} = {v};" for n, v in p.init
                              if v and n in ctx.locals]
                if not isinstance(self.flat[pi].code[0], Op):
                    # the records are global: their local start-up code runs here, inside init's
                    # atomic block, so it costs no step of the search
                    for j in range(p.instances):
                        lines += _indent(_Ctx(self, pi, j).continuation(f"I{pi}_", 0), 4)
                else:
                    for j in range(p.instances):
                        lines += _indent(_Ctx(self, pi, j).at_word(0, 1), 4)
                lines += self.runs_of(pi)
                continue
            for j in range(p.instances):
                if self.word_at_start(pi):  # counted before any process steps (as interp does)
                    lines += _indent(_Ctx(self, pi).at_word(0, 1), 4)
                lines.append(f"    run {self.proctypes[pi]}({j});")
        if self.lay.async_keys or self.k.counters:
            lines.append("    run async_ops();")
        if self.shared:
            lines.append(WATCH_RUN.rstrip("\n"))
        if self.k.constraints:
            lines.append("not_a_launch: skip")
        lines += ["  }", "}"]
        return lines

    # ------------------------------------------------------------------ one process
    def ltype(self, pi: int, name: str) -> str:
        """Promela type of a local: `int`, or the narrowest type of its value range (R3):
        `unsigned:<bits>` (a bit-field) for a non-negative range."""
        if not self.narrow:
            return "int"
        lo, hi = analysis.banded(self.ranges[pi])[name]
        return _ntype(lo, hi)

    def pc_type(self, fp: FlatProcess) -> str:
        """pc: 0..len(code) (len(code): an exited record)."""
        return _ntype(0, len(fp.code)) if self.narrow else _pc_type(fp)

    # -- mbarrier fields (R3 on the shared state: analysis.mbar_fields)
    def mbar_stored(self, array: str, field: str) -> bool:
        return self.mbf is None or self.mbf[array][field][0] == "range"

    def mbar_typedef(self, array: str) -> str:
        fields = [(_ntype(lo, hi), f.name, 0) for f in MBARRIER.fields
                  for kind, *rest in [self.mbf[array][f.name]] if kind == "range"
                  for lo, hi in [rest]]
        kept = {f for _, f, _ in fields}
        gone = [f"{f.name} = {self.mbf[array][f.name][1]}"
                + (f" where vis != 0, else {self.mbf[array][f.name][2]}"
                   if self.mbf[array][f.name][0] == "vis" else "")
                for f in MBARRIER.fields if f.name not in kept]
        note = f"  /* not stored (R3): {'; '.join(gone)} */" if gone else ""
        return f"typedef T_{self.mbars[array]} {{ {_fields(fields)} }};{note}"

    def mbar_read(self, array: str, field: str, elem: str) -> str:
        """A field that is not stored, read at element `elem` (Promela text of the element)."""
        kind, c, *z = self.mbf[array][field]
        if kind == "const":
            return _num(c)
        return f"(({elem}.vis != 0) -> {_num(c)} : {_num(z[0])})"

    def word_at_start(self, pi: int) -> bool:
        """Whether plain process pi starts at a shared-word access of a constant word: init
        counts it in the race monitor before any process takes a step."""
        acc = self.lay.word_ops[pi].get(0)
        return acc is not None and isinstance(self.flat[pi].code[0], Op) and \
            isinstance(_fold(acc[1].index), Const) and \
            (acc[1].cta is None or isinstance(_fold(acc[1].cta), Const))

    def runs_of(self, pi: int) -> list[str]:
        """init's `run`s of symmetric process pi: one per record slot when they are shared."""
        return [f"    run {self.proctypes[pi]}();"] * self.spin_runs(pi)

    def proctype(self, pi: int) -> list[str]:
        if pi in self.shared:
            return self.shared_proctype(pi)
        if pi in self.symmetric:
            return self.symmetric_proctype(pi)
        fp = self.flat[pi]
        ctx = _Ctx(self, pi)
        lines = [f"proctype {self.proctypes[pi]}(byte inst) {{"]
        init = dict(fp.process.init)
        f = OBSERVATION.fields[0]
        fields = [(self.ltype(pi, n), ctx.locals[n], 0) for n in fp.locals if n in ctx.locals]
        fields += [(ctype(f.lo, f.hi), o, self.k.mbarrier(name).size)
                   for name, o in ctx.obs.items()]
        fields.append((self.pc_type(fp), "pc", 0))
        if self.narrow:  # pan's own bit-fields (_pid, _t, _p) come first: about 16 bits
            fields = _layout(fields + [("byte", "inst", 0)], head_bits=16)
        start = {ctx.locals[n]: init.get(n, 0) for n in fp.locals if n in ctx.locals}
        for t, v, k in fields:
            if v in start or v == "pc":
                lines.append(f"  {_decl(t, v)} = {start.get(v, 0)};")
            elif v != "inst":
                lines.append(f"  {_decl(t, v, k)};")
        if not isinstance(fp.code[0], Op):
            lines += ["  d_step { true;", *_indent(ctx.continuation("I", 0), 4), "  };"]
        elif not self.word_at_start(pi) and (pc0 := ctx.at_word(0, 1)):
            # starts at a shared-word access whose index reads the instance: count it first
            lines += ["  d_step { true;", *_indent(pc0, 4), "  };"]
        lines.append("  do")
        for pc, ins in fp.ops():
            end = is_exit(ins)
            lines += self.option(ctx, pc, ins, "}; break" if end else "}",
                                 tuple(ctx.resets(None)) if end else ())
        lines += ["  od", "}", ""]
        return lines

    def option(self, ctx: "_Ctx", pc: int, ins, close: str, after: tuple[str, ...] = (),
               when: str = "") -> list[str]:
        """`:: d_step { guard -> step; local code up to the next visible pc }` (`when`: an extra
        condition on the option)."""
        if pc in self.fusable[ctx.pi]:
            return self.fused_option(ctx, pc, ins, close, after)
        if pc in self.resumes[ctx.pi]:
            return self.resume_option(ctx, pc, close, after)
        run = self.runs[ctx.pi].get(pc)
        if run is not None:
            return self.run_option(ctx, run, close, after)
        from_resume = self.resumed_by[ctx.pi].get(pc)
        guard, body = ctx.visible(pc)
        block = self.blocking[ctx.pi].get(pc)
        if block is not None:  # R9: a test bound to fail and then wait on its phase, waits
            wait = ins.stmt.wait_guard(self.lay.ctx(ctx.pi, pc))
            guard = ctx.e(any_of(wait, UnOp("not", block)))
        at = f"{ctx.pc} == {pc}" + (f" && {when}" if when else "")
        cond = at if guard == '1' else at + ' && ' + guard
        prefix = []
        if from_resume is not None:  # R10: also taken by an instance at the resume before it
            rguard, rbody = ctx.visible(from_resume)
            cond = f"({cond}) || ({ctx.pc} == {from_resume} && {rguard} && {guard})"
            prefix = [f"if :: {ctx.pc} == {from_resume} ->",
                      *_indent([*rbody, *ctx.resets(pc)], 5), "   :: else -> skip", "fi;"]
        lines = [f"  :: d_step {{ {cond} ->", *_indent(prefix, 7),
                 *_indent(ctx.at_word(pc, -1), 7), *_indent(body, 7)]
        if not is_exit(ins):
            lines += _indent(ctx.continuation(str(pc), pc + 1), 7)
        return lines + _indent(after, 7) + [f"     {close}"]

    def fused_option(self, ctx: "_Ctx", w: int, ins, close: str, after=()) -> list[str]:
        """R6 (docs/semantics.md): the wait at `w`, and when it passes cleanly and the release
        at r = fusable[w] names another element than the wait, also the `Let`s and the release,
        in one d_step (both steps print their WS|S lines). Otherwise the wait alone, as in the
        unfused model. Leaving w decrements the monitor counter of (element, parity)."""
        code = ctx.fp.code
        r = self.fusable[ctx.pi][w]
        st, rel = ins.stmt, code[r].stmt
        guard, wbody = ctx.visible(w)
        el, _, bad, aliased, passed = st.conditions(self.lay.ctx(ctx.pi, w))
        # (the index test first: the element is read only when it exists)
        clean = (f"({ctx.index_inside(st.bar)} && {ctx.e(passed)} && !{ctx.e(aliased)} && "
                 f"!{ctx.e(bad)})")
        lets = code[w + 1:r]
        diff = "1"
        rbar = getattr(rel, "bar", None)
        if rbar is not None and rbar.name == st.bar.name:
            eb = self.mb_index(rbar.name, Const(ctx.p.cta) if rbar.cta is None else rbar.cta,
                               rbar.index)
            for let in reversed(lets):
                eb = _subst(eb, let.var, let.value)
            ea = self.mb_index(st.bar.name, Const(ctx.p.cta), st.bar.index)
            diff = f"({ctx.e(ea)} != {ctx.e(eb)})"
        _, rbody = ctx.visible(r)
        fused = [*wbody, *[f"{ctx.locals[x.var]} = {ctx.e(x.value)};" for x in lets
                           if x.var in ctx.locals], *rbody,
                 *ctx.continuation(f"F{w}", r + 1)]
        alone = [*wbody, *ctx.continuation(str(w), w + 1)]
        at = f"{ctx.pc} == {w}"
        return [f"  :: d_step {{ {at if guard == '1' else at + ' && ' + guard} ->",
                *_indent(ctx.at_w(w, -1), 7),
                f"       if :: ({clean} && {diff}) ->",
                *_indent(fused, 12),
                "          :: else ->",
                *_indent(alone, 12),
                "       fi;", *_indent(after, 7), f"     {close}"]

    def resume_option(self, ctx: "_Ctx", r: int, close: str, after=()) -> list[str]:
        """R10 (docs/semantics.md): the resume at `r` alone, only while the op at n = r + 1
        cannot run; when it can, n's own option takes the instance at r (the resume and n in
        one d_step, each printing its WS|S line)."""
        n = self.resumes[ctx.pi][r]
        guard, rbody = ctx.visible(r)
        nguard, _ = ctx.visible(n)
        if nguard == "1":  # the op after it can always run: n's option takes every instance
            return []
        at = f"{ctx.pc} == {r}" + ("" if guard == "1" else f" && {guard}")
        return [f"  :: d_step {{ {at} && !({nguard}) ->", *_indent(rbody, 7),
                *_indent(ctx.continuation(str(r), n), 7), *_indent(after, 7), f"     {close}"]

    def run_option(self, ctx: "_Ctx", run: tuple[int, ...], close: str, after=()) -> list[str]:
        """R11 (docs/semantics.md): the loads of a run in one d_step (each prints its WS|S line
        and runs its race check), so the reduced step is the unreduced steps back to back."""
        body = [line for pc in run for line in ctx.visible(pc)[1]]  # no guards (_load_runs)
        return [f"  :: d_step {{ {ctx.pc} == {run[0]} ->",
                *_indent(ctx.at_word(run[0], -1), 7), *_indent(body, 7),
                *_indent(ctx.continuation(str(run[0]), run[-1] + 1), 7),
                *_indent(after, 7), f"     {close}"]

    # -- the symmetric encoding
    def record_fields(self, pi: int) -> list[tuple[str, str, int]]:
        """(type, name, array size or 0) of an instance record."""
        fp = self.flat[pi]
        f = OBSERVATION.fields[0]
        fields = [(self.pc_type(fp), "pc", 0)]
        fields += [(self.ltype(pi, n), v, 0) for n, v in _unique(fp.locals, "l_").items()
                   if n not in self.consts[pi]]
        fields += [(ctype(f.lo, f.hi), v, self.k.mbarrier(n).size)
                   for n, v in _unique(observed(self.lay, pi), "o_").items()]
        if pi in self.prefix:  # R12: the instance's identity while an element it initialized
            fields.append(("short", "me", 0))  # is not yet published, else -2 (nobody)
        return fields

    def forget_identity(self, pi: int) -> list[str]:
        """R12: `ws_forget<pi>(i)` in C: record i, past the prefix, forgets its identity once no
        element it initialized is initialized and not yet published (vis 1 or 2): no rule can
        tell it from the others. (In C, one function: as Promela text this condition over every
        element, repeated after every option of every record, was half of the model's text.)"""
        cta = self.k.processes[pi].cta
        held = []
        for name in sorted(self.lay.inited_arrays[pi]):
            size = self.k.mbarrier(name).size
            for i in range(size):
                elem = f"now.{self.mbars[name]}[{cta * size + i}]"
                if self.mbar_stored(name, "by"):
                    by = f"{elem}.by"
                else:
                    kind, c, *z = self.mbf[name]["by"]
                    by = (_num(c) if kind == "const"
                          else f"({elem}.vis != 0 ? {_num(c)} : {_num(z[0])})")
                held.append(f"({by} == r->me && ({elem}.vis == 1 || {elem}.vis == 2))")
        cond = "r->me != -2 && r->pc >= " + str(self.prefix[pi])
        if held:
            cond += " && !(" + " || ".join(held) + ")"
        return [f"  static void ws_forget{pi}(int i) {{",
                f"    struct R{pi} *r = &now.r{pi}[i];",
                f"    if ({cond}) r->me = -2;",
                "  }"]

    def record_decls(self, pi: int) -> list[str]:
        """The record type and array, and `ws_sort<pi>(i)` in C: moves record i to its place
        (the others are sorted; any total order will do, so memcmp) and prints the move for the
        trail (`WS|M`, printed only when pan replays a trail)."""
        n = self.k.processes[pi].instances
        decl = _fields(self.record_fields(pi), self.narrow)
        return [f"typedef R{pi} {{ {decl} }};",
                f"R{pi} r{pi}[{n}];",
                "c_code {",
                f"  static void ws_sort{pi}(int i) {{",
                f"    struct R{pi} t, *r = now.r{pi}; int j = i;",
                "    while (j > 0 && memcmp(&r[j], &r[j - 1], sizeof t) < 0)",
                "    { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t; j--; }",
                f"    while (j < {n - 1} && memcmp(&r[j + 1], &r[j], sizeof t) < 0)",
                "    { t = r[j]; r[j] = r[j + 1]; r[j + 1] = t; j++; }",
                f'    if (j != i) Printf("WS|M|{pi}|%d|%d\\n", i, j);',
                "  }",
                *(self.forget_identity(pi) if pi in self.prefix else ()),
                "}", ""]

    def shared_proctype(self, pi: int) -> list[str]:
        """The records of process pi, one SPIN process per record slot running this proctype:
        its slot is `_pid` less the first slot's. A slot whose record exited stays in the loop
        (`end:`: a valid end state); `ws_watch` tells a deadlock from the end of the kernel."""
        fp = self.flat[pi]
        done = len(fp.code)
        name = self.proctypes[pi]
        slot = f"(_pid - {self.first_pid[pi]})"
        ctx = _Ctx(self, pi, slot)
        c_slot = f"((int)P{name}->_pid - {self.first_pid[pi]})"
        forget = f"ws_forget{pi}({c_slot}); " if pi in self.prefix else ""
        sort = (f"c_code {{ {forget}ws_sort{pi}({c_slot}); }}",)
        lines = [f"proctype {name}() {{", "end:", "  do"]
        for pc, ins in fp.ops():
            if not is_exit(ins):
                lines += self.option(ctx, pc, ins, "}", sort)
                continue
            after = (*ctx.resets(None), f"{ctx.pc} = {done};")
            lines += self.option(ctx, pc, ins, "}", after + sort)
        lines += ["  od", "}", ""]
        return lines

    def watch_proctype(self) -> list[str]:
        """With shared record slots a blocked record does not make SPIN report an invalid end
        state (its slot rests at `end:`): when nothing else can move, a kernel whose threads
        have not all exited is deadlocked. Taken from the terminal state itself, so it is found
        at the same search depth as SPIN's own check."""
        exited = " && ".join(f"live[{c}] == 0" for c in range(self.k.num_ctas))
        return ["proctype ws_watch() {",
                f'  timeout -> if :: ({exited}) -> skip :: else -> printf("WS|X\\n"); '
                "assert(false) fi",
                "}", ""]

    def symmetric_proctype(self, pi: int) -> list[str]:
        """The records of process pi in one proctype. The exit of the last record to exit
        leaves the loop in the same step (a separate `all exited -> break` option would be an
        invisible step of its own, which delays SPIN's deadlock detection by one BFS level and
        lengthens counterexamples)."""
        fp = self.flat[pi]
        n = self.k.processes[pi].instances
        done = len(fp.code)  # the pc of an exited instance
        lines = [f"proctype {self.proctypes[pi]}() {{", "  do"]
        for i in range(n):
            ctx = _Ctx(self, pi, i)
            others = "(" + " && ".join(f"r{pi}[{j}].pc == {done}" for j in range(n) if j != i) + ")"
            forget = f"ws_forget{pi}({i}); " if pi in self.prefix else ""
            for pc, ins in fp.ops():
                sort = (f"c_code {{ {forget}ws_sort{pi}({i}); }}",)
                if not is_exit(ins):
                    lines += self.option(ctx, pc, ins, "}", sort)
                    continue
                after = (*ctx.resets(None), f"{ctx.pc} = {done};")
                lines += self.option(ctx, pc, ins, "}; break", after + sort, when=others)
                lines += self.option(ctx, pc, ins, "}", after + sort, when=f"!{others}")
        lines += ["  od", "}", ""]
        return lines

    def async_proctype(self) -> list[str]:
        lines = ["proctype async_ops() {", "end: do"]  # a valid end state: it may idle forever
        for key in self.completions:
            if key is None:
                continue
            pi, pc, cta, idx = key
            rule = self.lay.completion(key)
            g = _GlobalCtx(self)
            viol = _viol_text(str(pi), "-1", str(pc))
            lines.append(f"  :: d_step {{ {g.e(rule.guard)} ->")
            lines.append(f'       printf("WS|C|{pi}|{pc}|{cta}|{idx}\\n");')
            lines += _indent(g.stmts(rule.body, viol), 7)
            lines.append("     }")
        for c in self.k.counters:  # CTAs outside the model take values (environment steps)
            rule = self.lay.takes[c.name]
            g = _GlobalCtx(self)
            lines.append(f"  :: d_step {{ {g.e(rule.guard)} ->")
            lines.append(f'       printf("WS|O|{c.name}\\n");')
            lines += _indent(g.stmts(rule.body, _viol_text("-1", "-1", "-1")), 7)
            lines.append("     }")
        lines += ["od", "}", ""]
        return lines


def _typedef(name: str, kind, omit=()) -> str:
    fields = "; ".join(f"{ctype(f.lo, f.hi)} {f.name}" for f in kind.fields if f.name not in omit)
    return f"typedef {name} {{ {fields} }};"


def _ntype(lo: float, hi: float) -> str:
    """R3: `unsigned:<bits>` for a range in 0..2^31-1 (SPIN packs bit-fields), else the
    narrowest of byte, short, int."""
    if lo >= 0 and hi <= (1 << 31) - 1:
        return f"unsigned:{max(1, int(hi).bit_length())}"
    return ctype(lo, hi)


def _decl(t: str, name: str, n: int = 0) -> str:
    if t.startswith("unsigned:"):
        assert not n, "SPIN has no arrays of bit-fields"
        return f"unsigned {name} : {t[9:]}"
    return f"{t} {name}" + (f"[{n}]" if n else "")


_SIZE = {"int": 4, "short": 2, "byte": 1}


def _c_size(fields, head_bits: int = 0) -> int:
    """Bytes of a C struct of these (type, name, array size) fields in this order, as gcc lays it
    out (a bit-field does not straddle a 4-byte unit; bit-fields align the struct to 4)."""
    bits, align = head_bits, 4 if head_bits else 1
    for t, _, n in fields:
        if t.startswith("unsigned:"):
            w = int(t[9:])
            if bits // 32 != (bits + w - 1) // 32:
                bits = -(-bits // 32) * 32
            bits, align = bits + w, max(align, 4)
        else:
            w = 8 * _SIZE[t]
            bits = -(-bits // w) * w + w * max(n, 1)
            align = max(align, w // 8)
    size = -(-bits // 8)
    return -(-size // align) * align


def _layout(fields, head_bits: int = 0) -> list:
    """R3: the smaller of two layouts of a struct's fields: bit-fields first, then by decreasing
    size; or every bit-field as the byte/short/int holding its range (bit-fields make gcc align
    the struct to 4 bytes, which can cost more than they save)."""
    def order(fs):
        return sorted(fs, key=lambda f: (not f[0].startswith("unsigned"), -_SIZE.get(f[0], 0)))
    packed = order(fields)
    plain = order([(ctype(0, (1 << int(t[9:])) - 1) if t.startswith("unsigned:") else t, f, k)
                   for t, f, k in fields])
    return packed if _c_size(packed, head_bits) < _c_size(plain, head_bits) else plain


def _fields(fields, pack: bool = True) -> str:
    """The fields of a typedef (SPIN keeps a typedef's order), laid out by `_layout`."""
    return "; ".join(_decl(t, f, k) for t, f, k in (_layout(fields) if pack else fields))


def _num(c: int) -> str:
    return str(c) if c >= 0 else f"({c})"


def _indent(lines, n: int) -> list[str]:
    return [" " * n + x for x in lines]


def _pc_type(fp: FlatProcess) -> str:
    return "byte" if len(fp.code) < 255 else "short"


def observed(lay: Layout, pi: int) -> list[str]:
    """The mbarrier arrays process pi observes (waits on), sorted."""
    return sorted({a for a, _ in lay.obs_slots[pi]})


def _viol_text(pi: str, inst: str, pc: str):
    """Promela for a violation of `kind` at (process, instance, pc): print, then fail."""
    def viol(kind: str) -> str:
        if inst.lstrip("-").isdigit():
            return f'printf("WS|V|{kind}|{pi}|{inst}|{pc}\\n"); assert(false)'
        return f'printf("WS|V|{kind}|{pi}|%d|{pc}\\n", {inst}); assert(false)'
    return viol


def _subst(e: Expr, var: str, value: Expr) -> Expr:
    if isinstance(e, Var):
        return value if e.name == var else e
    if isinstance(e, UnOp):
        return UnOp(e.op, _subst(e.arg, var, value))
    if isinstance(e, BinOp):
        return BinOp(e.op, _subst(e.lhs, var, value), _subst(e.rhs, var, value))
    if isinstance(e, Select):
        return Select(_subst(e.cond, var, value), _subst(e.then, var, value),
                      _subst(e.else_, var, value))
    return e


class _GlobalCtx:
    """Printing of expressions and rule statements over global state (no instance)."""

    symmetric = False

    def __init__(self, low: _Lowering):
        self.low = low
        self.env: dict[str, str] = dict(low.params)
        self.gid = "(-2)"

    def e(self, x: Expr) -> str:
        """Promela text for `x`."""
        if isinstance(x, Const):
            return str(x.value) if x.value >= 0 else f"({x.value})"
        if isinstance(x, Var):
            if x.name not in self.env:
                raise LowerError(f"undefined variable {x.name!r}")
            return self.env[x.name]
        if isinstance(x, Self):
            return self.gid
        if isinstance(x, UnOp):
            a = self.e(x.arg)
            return f"(-{a})" if x.op == "-" else f"({a} == 0)"
        if isinstance(x, Select):
            return f"(({self.e(x.cond)} != 0) -> {self.e(x.then)} : {self.e(x.else_)})"
        if isinstance(x, BinOp):
            a, b = self.e(x.lhs), self.e(x.rhs)
            op = x.op
            if op == "//":  # floor division (divisor > 0)
                return f"(({a} >= 0) -> ({a} / {b}) : (-((-{a} + {b} - 1) / {b})))"
            if op == "%":
                return f"((({a} % {b}) + {b}) % {b})"
            if op in ("min", "max"):
                cmp = "<=" if op == "min" else ">="
                return f"(({a} {cmp} {b}) -> {a} : {b})"
            if op in ("and", "or"):
                return f"(({a} != 0) {'&&' if op == 'and' else '||'} ({b} != 0))"
            return f"({a} {op} {b})"
        return self.place(x)

    def place(self, p) -> str:
        low = self.low
        if isinstance(p, MbarField):
            elem = f"{low.mbars[p.array]}[{self.e(low.mb_index(p.array, p.cta, p.index))}]"
            if not low.mbar_stored(p.array, p.field):
                return low.mbar_read(p.array, p.field, elem)
            return f"{elem}.{p.field}"
        if isinstance(p, NamedField):
            return f"{low.named(p.cta, p.bid, self)}.{p.field}"
        if isinstance(p, ClusterField):
            return cluster_var(p.field, p.cluster)
        if isinstance(p, Live):
            return f"live[{self.e(p.cta)}]"
        if isinstance(p, Inflight):
            return f"infl[{self.e(low.async_index(p))}]"
        if isinstance(p, Carried):
            nb = len(low.lay.carried_bufs)
            i = self.e(low.async_index(Inflight(p.process, p.pc, p.cta, p.index)))
            return f"carried[({i}) * {nb} + {low.lay.carried_bufs.index(p.buf)}]"
        if isinstance(p, CounterField):
            return low.counters[p.name]
        if isinstance(p, FlagField):
            return low.flags[p.name]
        if isinstance(p, TmapField):
            return f"{low.tmaps[p.name]}[{self.e(p.cta)}].{p.field}"
        if isinstance(p, TmemField):
            return f"tmem_{p.field}[{self.e(p.cta)}]"
        if isinstance(p, BufField):
            name = low.bufs[p.name]
            if p.stage is None:
                return f"{name}[{self.e(p.cta)}].{p.field}"
            n = low.k.buffer(p.name).stages
            return f"{name}_s[({self.e(p.cta)}) * {n} + ({self.e(p.stage)})].{p.field}"
        if isinstance(p, WordField):
            i = self.e(low.word_index(p.array, p.cta, p.index))
            if p.field == "val":
                return f"{low.words[p.array]}[{i}]"
            if p.field == "pend":
                return f"{low.wpend[p.array]}[{i}]"
            if p.field == "ard":
                return f"{low.wread[p.array]}[{i}]"
            if p.field == "unf":
                return f"{low.wunf[p.array]}[{i}]"
            return f"{low.wat[p.array]}[({i}) * 2 + {1 if p.field == 'at_st' else 0}]"
        return self.instance_place(p)

    def instance_place(self, p) -> str:
        raise LowerError(f"{p!r} needs an executing instance")

    def stored(self, p) -> bool:
        return not isinstance(p, MbarField) or self.low.mbar_stored(p.array, p.field)

    def stmts(self, body, viol) -> list[str]:
        out: list[str] = []
        for s in body:
            if isinstance(s, Set):
                if not self.stored(s.place):
                    continue  # R3: a field or local that is not stored (its value is known)
                out.append(f"{self.place(s.place)} = {self.e(s.value)};")
            elif isinstance(s, When):
                then = self.stmts(s.then, viol) or ["skip"]
                else_ = self.stmts(s.else_, viol) or ["skip"]
                out.append(f"if :: ({self.e(s.cond)}) ->")
                out += _indent(then, 6)
                out.append("   :: else ->")
                out += _indent(else_, 6)
                out.append("fi;")
            elif isinstance(s, Fail):
                out.append(viol(s.kind) + ";")
            elif isinstance(s, Hook):
                out += self.hook(s, viol)
            elif isinstance(s, Call):
                out.append(f"{s.name}();")
            else:
                raise LowerError(f"not a rule statement: {s!r}")
        return out

    def hook(self, h: Hook, viol) -> list[str]:
        """R6 monitor, at the phase completion (before n moves) and the init of a monitored
        element: an instance sitting at a fused wait on it whose parity test passes now (parity
        1 - (n & 1)) makes the fusion unsound: report `reduction-unsound` (docs/semantics.md R6)."""
        low = self.low
        if h.name not in ("phase", "init") or h.subject is None or h.subject.array not in low.atw:
            return []
        el = h.subject
        idx = self.e(low.mb_index(el.array, el.cta, el.index))
        n = self.place(el.n)
        return [f"if :: {low.atw[el.array]}[({idx}) * 2 + 1 - ({n} & 1)] > 0 -> "
                f"{viol('reduction-unsound')} :: else fi;"]


def expr_text(e: Expr, names: dict[str, str]) -> str:
    """Promela text of a plain SyncIR expression over variables named by `names`."""
    ctx = _GlobalCtx.__new__(_GlobalCtx)
    ctx.env, ctx.gid = dict(names), "(-2)"
    return ctx.e(e)


class _Ctx(_GlobalCtx):
    """Lowering of one process: its locals and the text of its instructions. For a process of the
    symmetric encoding, `slot` is the position of the instance's record in the sorted array."""

    def __init__(self, low: _Lowering, pi: int, slot: int | str | None = None):
        super().__init__(low)
        self.pi = pi
        self.fp = low.flat[pi]
        self.p = self.fp.process
        self.symmetric = slot is not None
        rec = f"r{pi}[{slot}]." if self.symmetric else ""
        self.pc = rec + "pc"
        self.inst = str(slot) if self.symmetric else "inst"
        consts = low.consts[pi]  # R3 + R4: known locals, not stored
        self.locals = {n: rec + v for n, v in _unique(self.fp.locals, "l_").items()
                       if n not in consts}
        self.consts = {n: _num(c) for n, c in consts.items()}
        self.known, self._known = dict(consts), None
        self.env = {**low.params, **self.locals, **self.consts}
        self.obs = {n: rec + v for n, v in _unique(observed(low.lay, pi), "o_").items()}
        first = low.lay.first_gid[pi]
        # a record never stores its identity (R1's precondition), so it compares as nobody;
        # under R12 a merged process's records carry it (`me`) while it can matter
        self.gid = "(-2)" if self.symmetric else (f"({first} + inst)" if first else "inst")
        if self.symmetric and pi in low.prefix:
            self.gid = rec + "me"
        self.tag = "" if slot is None else (f"s{slot}_" if isinstance(slot, int) else "sx_")

    def instance_place(self, p) -> str:
        if isinstance(p, Local):
            if p.name in self.consts:
                return self.consts[p.name]
            if p.name not in self.locals:
                raise LowerError(f"undefined local {p.name!r}")
            return self.locals[p.name]
        if isinstance(p, Obs):
            return f"{self.obs[p.array]}[{self.e(p.index)}]"
        raise LowerError(f"not a place: {p!r}")

    def stored(self, p) -> bool:
        if isinstance(p, Local):
            return p.name not in self.consts
        return super().stored(p)

    def resets(self, pc: int | None) -> list[str]:
        """Dead-variable reset on reaching visible pc `pc` (None: exit): locals that are not
        live there, and the `obs` of barrier arrays never waited on again, become 0."""
        lv = self.low.live[self.pi]
        if lv is None:
            return []
        live, arrays = (lv[0][pc], lv[1][pc]) if pc is not None else ((), ())
        nz = self.low.nonzero[self.pi]
        nz_locals, nz_arrays = (nz[pc] if pc is not None and nz is not None
                                else (self.locals, self.obs))
        out = [f"{v} = 0;" for n, v in self.locals.items() if n not in live and n in nz_locals]
        for name, o in self.obs.items():
            if name not in arrays and name in nz_arrays:
                out += [f"{o}[{i}] = 0;" for i in range(self.low.k.mbarrier(name).size)]
        return out

    def visible(self, pc: int) -> tuple[str, list[str]]:
        """(guard, body lines) of the visible instruction at pc: its rule, printed."""
        rule = self.low.lay.rule(self.pi, pc)
        viol = _viol_text(str(self.pi), self.inst, str(pc))
        tag = "s" if self.symmetric else "S"  # a record prints its position (WS|s)
        step = f'printf("WS|{tag}|{self.pi}|%d|{pc}\\n", {self.inst});'
        guard = self.e(rule.guard)
        return ("1" if guard == "1" else guard), [step, *self.stmts(rule.body, viol)]

    def at_w(self, pc: int, delta: int) -> list[str]:
        """R6 monitor bookkeeping: an instance reaching (+1) or leaving (-1) the fused wait at
        `pc` counts in atw[element * 2 + parity]."""
        if pc not in self.low.fusable[self.pi]:
            return []
        st = self.fp.code[pc].stmt
        a = self.low.atw[st.bar.name]
        i = (f"({self.e(self.low.mb_index(st.bar.name, Const(self.p.cta), st.bar.index))}) * 2 + "
             f"({self.e(st.parity)} & 1)")
        count = f"{a}[{i}] = {a}[{i}] {'+' if delta > 0 else '-'} 1;"
        inside = self.index_inside(st.bar)
        if inside != "1":
            # an index outside the array is the wait's own invalid-operand: not counted
            count = f"if :: {inside} -> {count} :: else -> skip fi;"
        return [count]

    def index_inside(self, ref: MBarRef) -> str:
        """Promela text that is true when `ref`'s computed index names an element of its array
        ("1" for a constant index, which validation keeps inside)."""
        if isinstance(_fold(ref.index), Const):
            return "1"
        x, n = self.e(ref.index), self.low.k.mbarrier(ref.name).size
        return f"(0 <= {x} && {x} < {n})"

    def at_word(self, pc: int, delta: int) -> list[str]:
        """Race monitor bookkeeping: an instance reaching (+1) or executing (-1) a shared-word
        access at `pc` counts in wat[word * 2 + (0 load | 1 store)]."""
        acc = self.low.lay.word_ops[self.pi].get(pc)
        if acc is None:
            return []
        kind, ref = acc
        a = self.low.wat[ref.name]
        cta = Const(0) if self.low.k.word_array(ref.name).grid else \
            Const(self.p.cta) if ref.cta is None else ref.cta
        i = (f"({self.e(self.low.word_index(ref.name, cta, ref.index))}) * 2 + "
             f"{1 if kind == 'st' else 0}")
        count = f"{a}[{i}] = {a}[{i}] {'+' if delta > 0 else '-'} 1;"
        inside = []  # an index or CTA outside is the access's own invalid-operand: not counted
        if not isinstance(_fold(ref.index), Const):
            x, n = self.e(ref.index), self.low.k.word_array(ref.name).size
            inside.append(f"0 <= {x} && {x} < {n}")
        if not isinstance(_fold(cta), Const):
            inside.append(f"0 <= {self.e(cta)} && {self.e(cta)} < {self.low.k.num_ctas}")
        if inside:
            count = f"if :: ({' && '.join(inside)}) -> {count} :: else -> skip fi;"
        return [count]

    def known_branches(self) -> dict[int, int]:
        """{pc: the pc it goes to} of the branches whose condition reads only constants and
        known locals (R3): the other way is never taken, and left out, so that a step whose
        only global reads lie there stays a local step for SPIN's partial-order reduction."""
        if self._known is None:
            self._known = {}
            for pc, ins in enumerate(self.fp.code):
                if isinstance(ins, Branch) and expr_vars(ins.cond) <= self.known.keys():
                    try:
                        value = eval_expr(ins.cond, self.known)
                    except (ModelError, ArithmeticError):
                        continue
                    self._known[pc] = pc + 1 if value else ins.target
        return self._known

    # -- local code after a visible instruction, up to the next visible one(s)
    def continuation(self, tag: str, start: int) -> list[str]:
        code = self.fp.code
        tag = self.tag + tag
        early = self.low.early[self.pi]
        rests = lambda pc: isinstance(code[pc], Op) and pc not in early  # noqa: E731
        if rests(start):
            return [" ".join([*self.at_word(start, 1), *self.resets(start), *self.at_w(start, 1),
                              f"{self.pc} = {start}"])]
        taken = self.known_branches()
        order, seen, todo = [], set(), [start]
        while todo:
            pc = todo.pop()
            if pc in seen or rests(pc):
                continue
            seen.add(pc)
            order.append(pc)
            ins = code[pc]
            succ = [ins.target] if isinstance(ins, Goto) else [pc + 1]
            if isinstance(ins, Branch):
                succ = [taken[pc]] if pc in taken else succ + [ins.target]
            todo += succ

        def rest(pc: int) -> str:
            return " ".join([*self.at_word(pc, 1), *self.resets(pc), *self.at_w(pc, 1),
                             f"{self.pc} = {pc}; goto D{tag}"])

        def to(pc: int) -> str:
            return rest(pc) if rests(pc) else f"goto C{tag}_{pc}"

        band = LIMITS.local_band
        checked = self.low.checked_locals[self.pi]
        out = []
        for pc in sorted(order, key=lambda x: (x != start, x)):
            ins = code[pc]
            lab = f"C{tag}_{pc}:"
            v = _viol_text(str(self.pi), self.inst, str(pc))
            if pc in early:  # R8: the issue is taken here too when its condition holds
                _, body = self.visible(pc)
                out.append(f"{lab} if :: ({self.e(early[pc])}) -> {' '.join(body)} "
                           f"{to(pc + 1)} :: else -> {rest(pc)} fi;")
            elif isinstance(ins, Let) and ins.var in self.consts:
                out.append(f"{lab} {to(pc + 1)};")  # R3: a known local, not stored
            elif isinstance(ins, Let):
                x = self.locals[ins.var]
                check = (f" if :: ({x} > {band} || {x} < -{band}) -> {v('integer-range')} "
                         ":: else fi;" if ins.var in checked else "")
                out.append(f"{lab} {x} = {self.e(ins.value)};{check} {to(pc + 1)};")
            elif isinstance(ins, Goto):
                out.append(f"{lab} {to(ins.target)};")
            elif isinstance(ins, Branch) and pc in taken:
                out.append(f"{lab} {to(taken[pc])};")  # its condition reads only known values
            elif isinstance(ins, Branch):
                out.append(f"{lab} if :: ({self.e(ins.cond)} != 0) -> {to(pc + 1)} "
                           f":: else -> {to(ins.target)} fi;")
            elif isinstance(ins, Bound):
                c = self.locals[ins.counter]
                out.append(f"{lab} if :: {c} >= {ins.limit} -> {v('loop-bound')} "
                           f":: else -> {c} = {c} + 1 fi; {to(pc + 1)};")
        return out + [f"D{tag}: skip"]


PROBE = """
/* terminal-state probe: the first state in which no other process can move (a deadlock or the
   end of every instance) stops the search; BFS makes its trail the shortest such path */
proctype ws_probe() { timeout -> printf("WS|T\\n"); assert(false) }
"""


def lower(kernel: Kernel, reduce: bool = True, fuse: bool | None = None) -> LoweredModel:
    """Promela for `kernel`. With `reduce` (the default), the exact reductions of
    docs/semantics.md ("Reductions") whose preconditions hold apply and are listed in
    `LoweredModel.reductions` (those refused, with the op that refused them, in `refused`):
    independent identical CTAs (one is checked), identical instances of a process as sorted
    records (symmetry), narrow local types, dead-variable resets. `reduce=False` is the plain
    encoding: one Promela process per instance, every CTA, `int` locals.

    `fuse` (default: `reduce`): R6, wait->release fusion with a monitored right-mover condition.
    When its condition fails in a reachable state the model reports kind `reduction-unsound`
    (engine.check's `EngineResult.kind`); the caller must then check `lower(kernel, reduce,
    fuse=False)` instead (engine.spin.lower_and_check does both)."""
    free = [p.name for p in kernel.params if p.unbounded]
    if free:
        raise LowerError(f"parameter {free[0]} has no upper bound: a Promela model takes finite "
                         "ranges only")
    if fuse is None:
        fuse = reduce
    checked, cta_procs, reductions, refused = None, (), [], []
    if reduce:
        d, comp, per = red.independent_ctas(kernel)
        if d.applied:
            checked, cta_procs = comp, per
            reductions.append(f"independent-ctas: {kernel.num_ctas} identical CTAs, no op "
                              "crosses CTAs; one is checked")
        elif kernel.num_ctas > 1:
            refused.append(d)
    k = checked if checked is not None else kernel
    modelled, procs, merged, prefix = None, (), (), {}
    groups = red.prefix_groups(k, flatten(k)) if reduce else []
    if groups:
        modelled, procs, merged = _merge_prefix_groups(k, groups)
        prefix = {m: start for m, _, _, start in merged}
        for m, a, b, start in merged:
            reductions.append(f"R12 prefix-symmetry: {k.processes[a].role} joins the records of "
                              f"{k.processes[b].role} after its {start}-step prefix")
    low = _Lowering(modelled or k, reduce, fuse, prefix)
    text = low.model()
    if low.symmetric:
        reductions.append("symmetric-instances: identical instances of "
                          + ", ".join(k.processes[pi].role for pi in sorted(low.symmetric))
                          + " as sorted records")
    refused += [d for d in low.decisions if not d.applied]
    if low.narrow:
        reductions.append("narrow-types: locals and mbarrier fields typed by their proven range (bit-fields), known ones not stored")
    if low.dead:
        reductions.append("dead-variable-reset: dead locals and obs reset at each step")
    early = sum(map(len, low.early))
    if early:
        reductions.append(f"R8: early issue of {early} async copy site(s) (taken with the step "
                          "before them when their barrier is published and its CTA has threads left)")
    blocking = sum(map(len, low.blocking))
    if blocking:
        reductions.append(f"R9: {blocking} test-wait(s) whose failure only leads to a wait on "
                          "the same phase wait instead of failing")
    classes = [c for c in low.infl_classes if len(c) > 1]
    if classes:
        reductions.append(f"R7: merged completions: {sum(map(len, classes))} copy sites in "
                          f"{len(classes)} class(es) complete with the same step and share "
                          "their in-flight counters")
    fused = tuple((pi, w, r) for pi, f in enumerate(low.fusable) for w, r in sorted(f.items()))
    if fused:
        reductions.append(f"R6: wait-release fusion of {len(fused)} block(s) (a passing wait and "
                          "the release after it are one step; monitored, exact)")
    runs = low.runs
    if any(runs):
        reductions.append(f"R11: {sum(map(len, runs))} run(s) of shared-word loads taken as "
                          f"one step ({sum(len(r) for f in runs for r in f.values())} loads)")
    resumed = sum(map(len, low.resumes))
    if resumed:
        reductions.append(f"R10: {resumed} barrier resume(s) taken with the step after them "
                          "when it can run")
    probe = ""
    if checked is not None:
        probe = _without_watch(text)
        head, tail = probe.rsplit("  }\n}", 1)  # the end of init's atomic block
        probe = head + "    run ws_probe();\n  }\n}" + tail
        probe = probe.replace("\ninit {", PROBE + "\ninit {", 1)
    return LoweredModel(kernel, text, low.lay, tuple(low.proctypes), tuple(sorted(low.symmetric)),
                        tuple(reductions), tuple(refused), checked, cta_procs, probe, fused,
                        tuple(low.integer_problems),
                        tuple((pi, r, n) for pi, f in enumerate(low.resumes)
                              for r, n in sorted(f.items())), modelled, procs, merged,
                        tuple(sorted(low.shared)))


def _merge_prefix_groups(k: Kernel, groups) -> tuple[Kernel, tuple[int, ...], tuple]:
    """R12: `k` with each (a, b, start) of `groups` as one process of 1 + b's instances (a's
    code; b's instances start at `start`), its processes' indices in `k`, and the merged
    processes as (m, a, b, start)."""
    firsts = {a: (b, start) for a, b, start in groups}
    joined = {b for _, b, _ in groups}
    procs, out, merged = [], [], []
    for i, p in enumerate(k.processes):
        if i in joined:
            continue
        if i in firsts:
            b, start = firsts[i]
            pb = k.processes[b]
            p = replace(p, instances=1 + pb.instances, warps=(p.warps[0], pb.warps[1]))
            merged.append((len(out), i, b, start))
        out.append(p)
        procs.append(i)
    return replace(k, processes=tuple(out)), tuple(procs), tuple(merged)
