"""Reads of staged-buffer stages: wgmma.read, tcgen05.mma's operand reads, tcgen05.ld and
tcgen05.wait::ld, smem.read (PTX 9.7.15.5, 9.7.16, 9.7.9.8)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, NOLOC, UnOp, lift
from ..objects import LIMITS
from ..rules import BufField, Fail, Local, Rule, Set, When, add, sub
from .base import ALL, INDEPENDENT_CTAS, Footprint, SyncOp, _acc, _bit, _e, _eq, _ge, _gt, sync_op
from .base import SASS_OBLIGATION
from .tensormaps import BulkCommit, BulkWaitRead
from .buffers import (FenceProxyAsync, SmemWrite, TmaStore, _count_generic, _in_flight_fill,
                      _per_stage, _stage, _stage_problems)


def wg_open(buf: str) -> str:
    """The stages of `buf` the executing warp's uncommitted wgmmas read (a bit mask)."""
    return f"_wgo_{buf}"


def wg_group(buf: str, i: int) -> str:
    """The stages its i-th most recent wgmma group reads (the last: that group or older)."""
    return f"_wgg{i}_{buf}"


def _reads_problems(k, reads) -> list[str]:
    return [p for b, i in reads for p in _stage_problems(k, b, i)]


def _fmt_reads(reads) -> str:
    return ", ".join(f"{b}[{_e(i)}]" for b, i in reads)


class _StageReads:
    """An op that reads stages `reads`: (staged buffer, stage index) pairs."""

    @classmethod
    def example(cls):
        return cls((("sA", Const(0)), ("sB", Const(0))))

    def __post_init__(self):
        object.__setattr__(self, "reads", tuple((b, lift(i)) for b, i in self.reads))

    def problems(self, k): return _reads_problems(k, self.reads)


@sync_op
@dataclass(frozen=True)
class WgmmaRead(_StageReads, SyncOp):
    """Wgmmas (PTX 9.7.15.5, warpgroup MMA with shared-memory operand descriptors) of the
    executing warp read the stages `reads` ((buffer, stage) pairs) asynchronously, until a
    wgmma.wait_group of the warp retires their group. A TMA load into one of them still in
    flight makes it a race. (One op for the operands of consecutive wgmmas: reading never
    blocks and conflicts only with fills, so a run of reads is one step, as R11's loads.)"""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "wgmma.read"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"[HIQB]GMMA\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.15.5 (wgmma.mma_async), 9.7.15.6 (commit_group, wait_group)"
    summary: ClassVar[str] = ("per stage read: fly > 0: race (a TMA load into it is in flight); "
                              "then, unless the warp's open group already reads it, wrd += 1")
    # R6, R8, R11: it reads and writes only staged-buffer state and its own locals
    proven: ClassVar[frozenset[str]] = ALL

    def fmt(self): return f"wgmma.read {_fmt_reads(self.reads)}"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta", proxy="async"),),
                         retired_by="wgmma.wait_group of the issuing warp")

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            def one(s, buf=buf):
                wrd, open_ = _stage(c, buf, Const(s), "wrd"), Local(wg_open(buf))
                return [_in_flight_fill(c, buf, s, "reads (wgmma)"),
                        When(UnOp("not", _bit(open_, s)), [
                            When(_ge(wrd, LIMITS.inflight), [Fail(
                                "copy-bound", f"more than {LIMITS.inflight} wgmma groups "
                                "reading one stage unretired (model bound)")]),
                            add(wrd, 1), Set(open_, BinOp("|", open_, Const(1 << s)))])]
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)


def mma_open(buf: str, peer: bool = False) -> str:
    """The stages of `buf` (in the pair's other CTA with `peer`) that the executing warp's
    tcgen05.mma read since its last tcgen05.commit (a bit mask)."""
    return f"_umo{'p' if peer else ''}_{buf}"


def mma_bufs(kernel, process: int) -> tuple[tuple[str, bool], ...]:
    """(buffer, peer) of every open-read mask of a process: the shared-memory buffers its
    tcgen05.mma read, in its own CTA and, for cta_group::2 MMAs, in the pair's other CTA."""
    return _mma_stages(kernel, process, "smem")


def _mma_stages(kernel, process: int, space: str) -> tuple[tuple[str, bool], ...]:
    """(buffer, peer) of every buffer of `space` the process's tcgen05.mma access, in its own
    CTA and, for cta_group::2, in the pair's other one."""
    def compute():
        from ..ir import walk_stmts
        out: set = set()
        for st in walk_stmts(kernel.processes[process].body):
            if isinstance(st, MmaRead):
                for b, _ in st.reads:
                    if is_tmem(kernel, b) == (space == "tmem"):
                        out.add((b, False))
                        if st.pair:
                            out.add((b, True))
        return tuple(sorted(out))
    return kernel.memo(("mma_stages", process, space), compute)


def is_tmem(kernel, buf: str) -> bool:
    """Whether staged buffer `buf` is tensor memory (an accumulator's stages)."""
    try:
        return kernel.buffer(buf).space == "tmem"
    except KeyError:
        return False


def tmem_mma_bufs(kernel, process: int) -> tuple[tuple[str, bool], ...]:
    """(TMEM buffer, peer) of every accumulator stage the process's tcgen05.mma access, in its
    own CTA and, for cta_group::2, in the pair's other one."""
    return _mma_stages(kernel, process, "tmem")


def tmem_load_bufs(kernel, process: int) -> tuple[str, ...]:
    """The TMEM buffers the process reads with tcgen05.ld."""
    def compute():
        from ..ir import walk_stmts
        return tuple(sorted({b for st in walk_stmts(kernel.processes[process].body)
                             if isinstance(st, TmemLoad) for b, _ in st.reads}))
    return kernel.memo(("tmem_load_bufs", process), compute)


def tl_open(buf: str) -> str:
    """The stages of TMEM buffer `buf` the executing instance read with tcgen05.ld since its
    last tcgen05.wait::ld (a bit mask)."""
    return f"_tlo_{buf}"


COV_BITS = 30  # objects.BUFFER_STAGE `cov`


def commit_bits(layout, process: int) -> dict[int, int]:
    """The first `cov` bit of each tcgen05.commit (by flat pc) of a process: one bit per element
    of its barrier array, in code order."""
    return _commit_bits(layout, process)[0]


def _cov_bit_count(layout, process: int) -> int:
    return _commit_bits(layout, process)[1]


def _commit_bits(layout, process: int) -> tuple[dict[int, int], int]:
    """commit_bits and how many bits they take, once per kernel (its flattening is fixed)."""
    from .tcgen05 import Tcgen05Commit
    def compute():
        out, n = {}, 0
        for pc, ins in layout.flat[process].ops():
            if isinstance(ins.stmt, Tcgen05Commit):
                out[pc] = n
                n += layout.kernel.mbarrier(ins.stmt.bar.name).size
        return out, n
    return layout.kernel.memo(("commit_bits", process), compute)


def tmem_mma_issuer_problem(c) -> str:
    """Why the process's tcgen05.mma accumulator accesses cannot be followed ('' if they can):
    the stage's in-flight state is one thread's (its commits complete only its own MMAs)."""
    k = c.kernel
    mine = {b for b, _ in tmem_mma_bufs(k, c.process)}
    if not mine:
        return ""
    if k.processes[c.process].instances != 1:
        return ("tcgen05.mma on a TMEM buffer by a role of several instances (one thread issues "
                "a CTA's MMAs and their commits)")
    for pi, p in enumerate(k.processes):
        if pi != c.process and p.cta == k.processes[c.process].cta and \
                mine & {b for b, _ in tmem_mma_bufs(k, pi)}:
            return f"tcgen05.mma on one TMEM buffer by two roles ({p.role} too)"
    if _cov_bit_count(c.layout, c.process) > COV_BITS:
        return f"more than {COV_BITS} tcgen05.commit targets in one role (model bound)"
    return ""


@sync_op
@dataclass(frozen=True)
class MmaRead(_StageReads, SyncOp):
    """tcgen05.mma (PTX 9.7.16.10) of the executing warp reads the stages `reads` ((buffer,
    stage) pairs: its shared-memory operands) asynchronously; with `pair` (cta_group::2) the
    same stages of both CTAs of the pair. The reads last until the arrive of a tcgen05.commit
    the warp issues after them lands: a commit tracks every tcgen05 op its thread issued before
    it (9.7.16.12). A TMA load into such a stage before that is a race. (One op for the operands
    of consecutive MMAs, as WgmmaRead.)"""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    pair: bool = False
    mnemonic: ClassVar[str] = "tcgen05.mma.read"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"UTC\w*MMA\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16.10 (tcgen05.mma), 9.7.16.12 (tcgen05.commit)"
    summary: ClassVar[str] = ("per stage read, in its CTA (and the pair's other one with "
                              "cta_group::2): fly > 0: race (a TMA load into it is in flight); "
                              "then, unless the warp's uncommitted MMAs already read it, "
                              "mrd += 1 (until the arrive of its next tcgen05.commit)")
    # it reads and writes only staged-buffer state and its own locals (R6, R8, R11, as a wgmma
    # read); a pair read touches the other CTA's stage
    proven: ClassVar[frozenset[str]] = ALL

    def fmt(self):
        return f"tcgen05.mma.read {_fmt_reads(self.reads)}" + (" (cta_group::2)" if self.pair else "")

    def facts(self):
        return self.proven - {INDEPENDENT_CTAS} if self.pair else self.proven

    def problems(self, k):
        out = _reads_problems(k, self.reads)
        if self.pair and k.num_ctas % 2:
            out.append("a cta_group::2 tcgen05.mma needs CTA pairs (an even cluster size)")
        return out

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cluster" if self.pair else "cta",
                               proxy="async"),),
                         retired_by="the arrive of the warp's next tcgen05.commit")

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            label = c.kernel.buffer(buf).label or buf
            if is_tmem(c.kernel, buf):
                why = tmem_mma_issuer_problem(c)
                if why:
                    return Rule([Fail("unsupported", "{who} issues " + why)])
                body += _per_stage(c, buf, stage, "accumulates into",
                                   lambda s, buf=buf, label=label: self._accumulate(c, buf, s, label))
                continue

            def one(s, buf=buf, label=label):
                out = []
                for peer in ((False, True) if self.pair else (False,)):
                    cta = Const(c.cta ^ 1 if peer else c.cta)
                    st = lambda f: BufField(buf, cta, Const(s), f)  # noqa: E731
                    open_ = Local(mma_open(buf, peer))
                    out += [When(_gt(st("fly"), 0), [Fail(
                                "race", f"{{who}} reads (tcgen05.mma) stage {s} of {label} in "
                                f"CTA {cta.value} while {{0}} TMA load(s) into it are in flight: "
                                "only the completion of their bytes on the stage's mbarrier (a "
                                "wait on it) orders the read after them", (st("fly"),))]),
                            When(UnOp("not", _bit(open_, s)), [
                                When(_ge(st("mrd"), LIMITS.inflight), [Fail(
                                    "copy-bound", f"more than {LIMITS.inflight} tcgen05.mma "
                                    "reads of one stage unretired (model bound)")]),
                                add(st("mrd"), 1), Set(open_, BinOp("|", open_, Const(1 << s)))])]
                return out
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)

    def _accumulate(self, c, buf: str, s: int, label: str) -> list:
        """The MMA writes accumulator stage s (of both CTAs with cta_group::2): a tcgen05.ld of
        it not yet retired is a race; the stage is in flight, covered by no commit yet."""
        out = []
        for cta in ((c.cta, c.cta ^ 1) if self.pair else (c.cta,)):
            st = lambda f: BufField(buf, Const(cta), Const(s), f)  # noqa: E731
            out += [When(_gt(st("tld"), 0), [Fail(
                        "race", f"{{who}} writes (tcgen05.mma) stage {s} of {label} in CTA {cta} "
                        "while {0} tcgen05.ld read(s) of it are not retired: no "
                        "tcgen05.wait::ld of the reading warp comes before this MMA",
                        (st("tld"),))]),
                    Set(st("mip"), Const(1)), Set(st("cov"), Const(0))]
        return out


@sync_op
@dataclass(frozen=True)
class TmemLoad(_StageReads, SyncOp):
    """tcgen05.ld (PTX 9.7.16.8.3) of the executing warp reads stage `reads` of a TMEM buffer
    (an accumulator) asynchronously, until a tcgen05.wait::ld of the warp. A tcgen05.mma writing
    the stage that may still run (no commit issued after it has landed) makes it a race."""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tcgen05.ld.read"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"LDTM\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16.8.3 (tcgen05.ld), 9.7.16.8.5 (tcgen05.wait)"
    summary: ClassVar[str] = ("per stage read: mip = 1: race (a tcgen05.mma writing it may still "
                              "run); then, unless the instance's loads since its last "
                              "tcgen05.wait::ld already read it, tld += 1")
    # it reads and writes only staged-buffer state and its own locals (as a wgmma read)
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls((("acc", Const(0)),))

    def fmt(self): return f"tcgen05.ld.read {_fmt_reads(self.reads)}"

    def problems(self, k):
        return _reads_problems(k, self.reads) + [
            f"tcgen05.ld of {b}, which is not a TMEM buffer" for b, _ in self.reads
            if b in {x.name for x in k.buffers} and not is_tmem(k, b)]

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),),
                         retired_by="tcgen05.wait::ld of the issuing warp")

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            label = c.kernel.buffer(buf).label or buf

            def one(s, buf=buf, label=label):
                st = lambda f: _stage(c, buf, Const(s), f)  # noqa: E731
                open_ = Local(tl_open(buf))
                return [When(_eq(st("mip"), 1), [Fail(
                            "race", f"{{who}} reads (tcgen05.ld) stage {s} of {label} while a "
                            "tcgen05.mma writing it may still run: no tcgen05.commit issued "
                            "after that MMA has landed (a wait on its barrier) before this load")]),
                        When(UnOp("not", _bit(open_, s)), [
                            When(_ge(st("tld"), _MAX_LOADS), [Fail(
                                "copy-bound", f"more than {_MAX_LOADS} tcgen05.ld reads of one "
                                "stage unretired (model bound)")]),
                            add(st("tld"), 1), Set(open_, BinOp("|", open_, Const(1 << s)))])]
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)


@sync_op
@dataclass(frozen=True)
class TmemWaitLd(SyncOp):
    """tcgen05.wait::ld: the executing warp waits for its tcgen05.ld issued before; they always
    complete, so it retires them (tld -= 1 per stage the warp read since its last wait)."""
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "tcgen05.wait.ld"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"NOP\b|DEPBAR\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.16.8.5 (tcgen05.wait)"
    summary: ClassVar[str] = ("per TMEM stage the instance read since its last wait: tld -= 1")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls()

    def fmt(self): return "tcgen05.wait::ld"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),))

    def rule(self, c):
        body = []
        for b in tmem_load_bufs(c.kernel, c.process):
            open_ = Local(tl_open(b))
            body += [When(_bit(open_, s), [sub(_stage(c, b, Const(s), "tld"), 1)])
                     for s in range(c.kernel.buffer(b).stages)]
            body.append(Set(open_, Const(0)))
        return Rule(body)


_MAX_LOADS = LIMITS.inflight


@sync_op
@dataclass(frozen=True)
class SmemRead(_StageReads, SyncOp):
    """The executing threads read the stages `reads` of staged buffers through the generic
    proxy (ld.shared, ldmatrix, a shared-to-register copy). A TMA load into one of them still
    in flight makes it a race."""
    reads: tuple[tuple[str, Expr], ...]
    loc: Loc = NOLOC
    mnemonic: ClassVar[str] = "smem.read"
    sass_covered: ClassVar[str] = SASS_OBLIGATION
    sass: ClassVar[str] = r"(LDS|LDSM|LD)\b"
    hb_rule: ClassVar[str | None] = "generic"
    ptx: ClassVar[str] = "9.7.9.8 (ld.shared), 9.7.9.16 (ldmatrix)"
    summary: ClassVar[str] = ("per stage read: fly > 0: race (a TMA load into it is in flight); "
                              "of a stage TMA loads fill: unless the instance's read is already "
                              "counted, gr += 1 (until its fence.proxy.async)")
    proven: ClassVar[frozenset[str]] = ALL

    @classmethod
    def example(cls):
        return cls((("sA", Const(0)),))

    def fmt(self): return f"smem.read {_fmt_reads(self.reads)}"

    def footprint(self, k):
        return Footprint((_acc("buffer-stage", "rw", "cta"),))

    def rule(self, c):
        body = []
        for buf, stage in self.reads:
            def one(s, buf=buf):
                return [_in_flight_fill(c, buf, s, "reads"), *_count_generic(c, buf, s)]
            body += _per_stage(c, buf, stage, "reads", one)
        return Rule(body)


# ops that publish nothing of the executing thread's earlier writes to other threads (accesses
# of buffer stages, the proxy fence, issuing and waiting for its own async units): a write
# followed only by these before its fence has the fence on every path it is ordered along
_FENCE_NEUTRAL = (SmemWrite, SmemRead, FenceProxyAsync, TmaStore, BulkCommit, BulkWaitRead,
                  WgmmaRead, TmemLoad)
