"""Async copies completing bytes on an mbarrier: TMA loads, bulk copies (PTX 9.7.9.25,
9.7.9.12)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import BinOp, Const, Expr, Loc, MBarRef, NOLOC, UnOp, eval_expr, _lift_fields, expr_vars
from ..objects import LIMITS
from ..rules import (BufField, El, Fail, Inflight, Live, Local, Rule, Self, TmapField, When, add,
                     all_of, any_of, sub)
from .base import (ALL, FUSION_RELEASE, INDEPENDENT_CTAS, Footprint, SyncOp, _acc, _band, _e, _eq,
                   _ge, _gt, _le, _ne, _plus, add_tx, complete_phase, fmt_bar, remote_alive,
                   resolve, sync_op, tx_bytes_check, vis_checks)
from .base import SASS_ASYNC_ISSUE, SASS_OBLIGATION


# ----------------------------------------------------------------------------- async copies

def _issue(infl: Inflight, T: int) -> list:
    return [When(_gt(infl, LIMITS.inflight - T),
                 [Fail("copy-bound", f"more than {LIMITS.inflight} copies of one op in flight "
                       "(model bound)")]),
            add(infl, T)]


def _multicast_issue(c, bar: MBarRef, mask: Expr, verb: str, verb_into: str,
                     per_target=lambda t: []) -> list:
    """An async op issued towards the barrier at `bar`'s offset in every CTA of `mask`: the mask
    must name CTAs of the cluster (scope); per target CTA t, t alive (cluster-lifetime), its
    barrier's init visible, `per_target(t)`, and one unit in flight per executing thread."""
    n, T = c.kernel.num_ctas, c.threads
    body = [When(any_of(_le(mask, 0), _ge(mask, 1 << n)),
                 [Fail("scope", "{who} " + verb + " with mask {0}, which names CTAs outside "
                       f"the cluster of {n} (or none)", (mask,))])]
    for t in range(n):
        el = El(bar.name, Const(t), bar.index)
        lifetime = [] if t == c.cta else [When(_eq(Live(Const(t)), 0), [
            Fail("cluster-lifetime", "{who} " + verb_into + " {bar}, but the threads of CTA {0} "
                 "have all exited (its shared memory may belong to another CTA by now)",
                 (Const(t),), el)])]
        body.append(When(_ne(_band(mask, Const(1 << t)), 0), [
            *lifetime, *vis_checks(el, tma=True), *per_target(t),
            *_issue(Inflight(c.process, c.pc, Const(t), bar.index), T)]))
    return body


def _copy_completes(c, bar: MBarRef, nbytes: Expr, cta: int, index: int, first=()) -> Rule:
    """One copy of the op at c towards element `index` of CTA `cta` completes: its in-flight
    count drops, `first` runs, its bytes leave the tx-count, and the phase may complete."""
    el = El(bar.name, Const(cta), Const(index))
    infl = Inflight(c.process, c.pc, Const(cta), Const(index))
    return Rule([sub(infl, 1), *first, *add_tx(el, BinOp("-", Const(0), nbytes)),
                 *complete_phase(el)], guard=_gt(infl, 0))


class _CompletesBytes:
    """An async copy whose completion delivers `bytes` of transaction to its barrier."""

    def completion_text(self, target: str, env: dict) -> str:
        """How a trace step shows one completion of this op on `target`."""
        return f"(copy completes on {target}: {eval_expr(self.bytes, env)} bytes)"


@sync_op
@dataclass(frozen=True)
class TmaLoad(_CompletesBytes, SyncOp):
    """An asynchronous copy into shared memory that completes `bytes` of transaction on `bar`
    at any later point: a TMA load, a bulk copy, an st.async. Issued once per executing thread
    (the DSL's TMA copy elects one lane itself: the extractor puts it inside `Lanes(1)`).
    `multicast`: a CTA bit mask; each copy then completes `bytes` on the barrier at the same
    offset in every CTA of the mask (`bar.cta` must be None)."""
    bar: MBarRef
    bytes: Expr
    loc: Loc = NOLOC
    multicast: Expr | None = None
    desc: str | None = None  # the tensormap it reads, when the kernel rewrites it
    # the staged buffer it fills: the stage is the barrier's index, in the barrier's CTA (the
    # issuing CTA's when the barrier is another's: the cta_group::2 form, whose bytes complete
    # on the pair leader's barrier)
    dst: str | None = None
    mnemonic: ClassVar[str] = "tma.load"
    sass_covered: ClassVar[str] = SASS_ASYNC_ISSUE
    sass: ClassVar[str] = r"UTMALDG|UBLKCP|UTMAPF"
    hb_rule: ClassVar[str | None] = "async.issue"
    ptx: ClassVar[str] = "9.7.9.25, 9.7.9.12 (st.async)"
    summary: ClassVar[str] = ("per thread, per target CTA: one copy in flight (use before the "
                              "init is fenced: uninitialized-barrier; a mask outside the "
                              "cluster: scope; into an exited CTA: cluster-lifetime; into a "
                              "stage: wrd > 0: race, gr > 0: proxy-race); each copy "
                              "completes later, in its own step: tx -= bytes, then phase "
                              "completion")
    proven: ClassVar[frozenset[str]] = ALL | {FUSION_RELEASE}

    @classmethod
    def example(cls):
        return cls(MBarRef("b"), Const(64))

    def __post_init__(self): _lift_fields(self, "bytes", "multicast")

    def fmt(self):
        mc = "" if self.multicast is None else f", multicast={_e(self.multicast)}"
        desc = "" if self.desc is None else f", desc={self.desc}"
        dst = "" if self.dst is None else f", into={self.dst}[{_e(self.bar.index)}]"
        return f"tma.load -> {fmt_bar(self.bar)}, bytes={_e(self.bytes)}{mc}{desc}{dst}"

    def own_locals(self, pc):
        from .tensormaps import tm_acquired, tm_open
        return () if self.desc is None else (tm_open(self.desc), tm_acquired(self.desc))

    def facts(self):
        crosses = self.multicast is not None or self.bar.cta is not None
        return self.proven - ({INDEPENDENT_CTAS, FUSION_RELEASE} if crosses else set())

    def problems(self, k):
        from .tensormaps import _tensormap_problems
        from .buffers import _stage_problems
        out = []
        if self.multicast is not None and self.bar.cta is not None:
            out.append("a multicast copy names its CTAs by the mask, not by the barrier")
        params = {p.name for p in k.params}
        if not expr_vars(self.bytes) <= params:
            out.append("an async copy's byte count must depend only on launch parameters")
        if self.desc is not None:
            out += _tensormap_problems(k, self.desc)
        if self.dst is not None:
            out += _stage_problems(k, self.dst, self.bar.index)
            if self.multicast is not None and self.bar.cta is not None:
                out.append("a multicast TMA load into a staged buffer through a remote barrier "
                           "is not modelled")
        return out

    def footprint(self, k):
        scope = "cluster" if self.multicast is not None or self.bar.cta is not None else "cta"
        acc = [_acc("mbarrier", "rw", scope, proxy="async", identity="compare"),
               _acc("async-copy", "write", scope, proxy="async")]
        if scope == "cluster":
            acc.append(_acc("live-threads", "read", "cluster"))
        if self.desc is not None:
            acc.append(_acc("tensormap", "rw", "cta", proxy="async", identity="compare"))
        if self.dst is not None:
            acc.append(_acc("buffer-stage", "rw", scope, proxy="async"))
        return Footprint(tuple(acc), retired_by="transaction completion on the mbarrier")

    def _fill(self, c, cta: Expr, T: int) -> list:
        """The copy starts writing its stage of `dst` in CTA `cta`: a wgmma still reading the
        stage (its group not retired by wgmma.wait_group) is a race."""
        from .buffers import _per_stage
        if self.dst is None:
            return []
        st = lambda f: BufField(self.dst, cta, self.bar.index, f)  # noqa: E731
        label = c.kernel.buffer(self.dst).label or self.dst
        return [*_per_stage(c, self.dst, self.bar.index, "fills", lambda s: []),
                When(_gt(st("wrd"), 0), [Fail(
                    "race", f"{{who}} issues a TMA load into stage {{0}} of {label} while {{1}} "
                    "wgmma read(s) of it are not retired: the reader released the stage before "
                    "its wgmma.wait_group", (self.bar.index, st("wrd")))]),
                When(_gt(st("mrd"), 0), [Fail(
                    "race", f"{{who}} issues a TMA load into stage {{0}} of {label} while {{1}} "
                    "tcgen05.mma read(s) of it may still run: no tcgen05.commit issued after "
                    "them has arrived (the stage was released before its MMAs completed)",
                    (self.bar.index, st("mrd")))]),
                When(_gt(st("gr"), 0), [Fail(
                    "proxy-race", f"{{who}} issues a TMA load (async proxy) into stage {{0}} of "
                    f"{label} while {{1}} thread group(s) that read or wrote it through the "
                    "generic proxy have not executed fence.proxy.async since: such an access "
                    "must be fenced before the release that lets the stage be refilled",
                    (self.bar.index, st("gr")))]),
                When(_gt(st("fly"), LIMITS.inflight - T), [Fail(
                    "copy-bound", f"more than {LIMITS.inflight} TMA loads into one stage in "
                    "flight (model bound)")]),
                add(st("fly"), T)]

    def _desc_read(self, c) -> list:
        """The issue reads the tensormap through the tensormap proxy: it must have been
        released by its writer and acquired by this thread since the last write; the read stays
        unretired until a wait_group.read of this thread retires its bulk async-group."""
        from .tensormaps import _one_thread, tm_acquired, tm_open
        if self.desc is None:
            return []
        tm = lambda f: TmapField(self.desc, Const(c.cta), f)  # noqa: E731
        T = c.threads
        return [*_one_thread(c, "a TMA load through a rewritten tensormap"),
                When(_eq(tm("st"), 1), [Fail(
                    "tensormap-race", f"{{who}} issues a TMA load through tensormap {self.desc}, "
                    "written and not yet released to the tensormap proxy "
                    "(fence.proxy.tensormap::generic.release)")]),
                When(all_of(_eq(tm("st"), 2), _ne(tm("by"), Self())), [Fail(
                    "unsupported", f"{{who}} loads through tensormap {self.desc}, which another "
                    "instance rewrote: that a barrier orders its release before this thread's "
                    "acquire is not checked")]),
                When(all_of(_eq(tm("st"), 2), _ne(Local(tm_acquired(self.desc)),
                                                 _plus(tm("ver"), Const(1)))), [Fail(
                    "tensormap-race", f"{{who}} issues a TMA load through tensormap {self.desc} "
                    "without acquiring its last write (fence.proxy.tensormap::generic.acquire)")]),
                add(Local(tm_open(self.desc)), T), add(tm("unret"), T)]

    def rule(self, c):
        T = c.threads
        if self.multicast is None:
            el, checks = resolve(c, self.bar)
            # a remote barrier: the cta_group::2 form, which fills the issuing CTA's stage
            into = el.cta if self.bar.cta is None else Const(c.cta)
            return Rule([*checks, *remote_alive(c, self.bar, el, "copies into"),
                         *tx_bytes_check(el, self.bytes), *vis_checks(el, tma=True),
                         *self._desc_read(c), *self._fill(c, into, T),
                         *_issue(Inflight(c.process, c.pc, el.cta, el.index), T)])
        el0, checks = resolve(c, self.bar)
        return Rule([*checks, *tx_bytes_check(el0, self.bytes),
                     *_multicast_issue(c, self.bar, self.multicast, "multicasts", "multicasts into",
                                       lambda t: self._fill(c, Const(t), T)),
                     *self._desc_read(c)])

    def early_issue_condition(self, c) -> Expr | None:
        """R8 (docs/semantics.md): when this holds, the issue commutes left with every step of
        every other instance until it is taken, but the exit of the target CTA's last threads:
        the element exists, its init is published (`vis` never leaves 3 but by a violating
        re-init), and its CTA is the issuing one (whose threads cannot all exit first) or has
        threads left (if they all exit before the unreduced issue, both models report the copy
        into the exited CTA: `cluster-lifetime` at the issue, or `pending-at-exit` at the exit).
        A multicast copy, one that fills a staged buffer (its issue reads the stage's unretired
        wgmma reads, which other instances change), or one that reads a rewritten tensormap (its
        issue reads and writes the
        tensormap's state, which other instances' writes change): None."""
        if self.multicast is not None or self.desc is not None or self.dst is not None:
            return None
        el, checks = resolve(c, self.bar)
        exists = [UnOp("not", ch.cond) for ch in checks]
        alive = _eq(el.cta, Const(c.cta)) if self.bar.cta is None else \
            any_of(_eq(el.cta, Const(c.cta)), _gt(Live(el.cta), 0))
        return all_of(*exists, alive, _eq(el.vis, 3))

    def complete(self, c, cta: int, index: int):
        into = cta if self.bar.cta is None else c.cta  # (the stage it fills: rule)
        done = [] if self.dst is None or index >= c.kernel.buffer(self.dst).stages else \
            [sub(BufField(self.dst, Const(into), Const(index), "fly"), 1)]
        return _copy_completes(c, self.bar, self.bytes, cta, index, done)

    def targets(self, kernel) -> list[int]:
        """CTAs this op may copy into."""
        if self.multicast is None and self.bar.cta is None:
            return []  # the executing CTA (the caller knows it)
        return list(range(kernel.num_ctas))
