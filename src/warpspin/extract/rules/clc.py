"""Cluster launch control: try_cancel, the load of its response and query_cancel.
"""
from __future__ import annotations

import re

from ...frontend.mlir_data import Op
from ...syncir.ops import CLC_WORDS, ClcTryCancel
from ...syncir.ir import CounterDecl, Const, Var, WordRef, expr_vars
from ...syncir.ops import SmemLoad, TmaLoad, Unsupported
from .. import cute_types as ct
from ..values import LANE, ClcResponse, View, opaque
from ..effects import Effects, NONE, WRITES, rule


def _response_load(types: list[str]) -> bool:
    """A cute.copy of one 16-byte element of shared memory into registers (how
    ``cute.arch.clc_response`` loads a cluster launch control response)."""
    return len(types) > 2 and ct.atom_kind(types[0]) == "universal_copy" and \
        ct.is_smem(types[1]) and "i128" in types[1] and bool(re.search(r', "1:\d+">$', types[1])) \
        and "rmem" in types[2]


class ClcRules:
    """The walker's rules for cluster launch control (mixed into `WarpWalker`)."""

    def clc_try_cancel(self, op: Op, out) -> None:
        """``clusterlaunchcontrol.try_cancel`` (``cute.arch.issue_clc_query``) by one thread:
        syncir ``ClcTryCancel`` on the grid's pool of clusters not started (a launch range,
        ``clc_pool``), its response the four words at its address; at an address the model does
        not follow, a copy of 16 bytes whose response is not followed."""
        loc = self.loc(op)
        multicast = "multicast" in op.attrs and str(op.attrs["multicast"]).lower() != "false"
        ref = self.bar_ref(op.operands[1], op) if len(op.operands) == 2 else "operands not understood"
        why = ref if isinstance(ref, str) else None
        if why is None and ref.cta is not None:
            why = "a barrier in another CTA"
        if why is None and not self._one_lane():
            why = f"issued by {self.active.count} threads (each asks on its own)"
        if why is not None:
            out.append(Unsupported(f"clusterlaunchcontrol.try_cancel: {why}", loc))
            return
        words = self.words_at(op, self.val(op.operands[0]), CLC_WORDS)
        if isinstance(words, str):
            self.note_smem_write(op.operands[0], f"a try_cancel response at {words}@{op.loc.short()}")
            mask = Const((1 << self.k.cluster_size) - 1) if multicast else None
            out.append(TmaLoad(ref, Const(4 * CLC_WORDS), loc, multicast=mask))
            return
        if "clc" not in self.ctx.counters:
            alone = self._other_clusters() == Const(0)  # a static grid of one cluster
            pool = self.ctx.param("clc_pool", "clusters of the grid a try_cancel may still cancel "
                                  "(grants in the whole launch)", loc,
                                  default=(0, 0) if alone else (0, 2))
            self.ctx.counters["clc"] = CounterDecl("clc", pool, loc, "the grid's clusters not "
                                                   "yet started", others=Const(0))
            self.ctx.assumptions.add(
                f"cluster launch control (try_cancel at {op.loc.short()}): the grid grants at "
                "most clc_pool clusters in all (--param clc_pool sets the range checked), a "
                "response is a success or a failure in any order of the model's issues, and the "
                "cancelled cluster's ctaid is not followed")
        out.append(ClcTryCancel.make(WordRef(*words), ref, "clc", multicast, loc))

    def clc_response_load(self, op: Op, out) -> bool:
        """A 16-byte copy of shared words into registers (``cute.arch.clc_response``): the load
        of the first word, which ``query_cancel.is_canceled`` reads (``ClcResponse``)."""
        if not _response_load(op.operand_types):
            return False
        src, info = self.val(op.operands[1]), self.k.value_info.get(op.operands[1])
        if isinstance(src, View):
            p = src.ptr
        elif info is not None and info.op is not None and info.op.name == "cute.make_view":
            p = self.val(info.op.operands[0])  # a view at a dynamic offset (a pipeline stage)
        else:
            return False
        words = self.words_at(op, p, CLC_WORDS)
        if isinstance(words, str) or (LANE in expr_vars(words[1]) and self.whole_warp()):
            return False
        dest = f"t{op.uid}"
        out.append(SmemLoad(dest, WordRef(*words), self.loc(op)))
        self.ctx.clc_loads.add(dest)
        self.env[op.operands[2]] = ClcResponse("a 16-byte shared-memory load", word=Var(dest))
        return True

    def clc_response_value(self, op: Op, out) -> None:
        """``cute.memref.load_vec`` / ``vector.extract`` of a CLC response keep it."""
        v = self.val(op.operands[0]) if op.operands else None
        if isinstance(v, ClcResponse) and len(op.results) == 1:
            self.env[op.results[0]] = v
        else:
            self.set_unknown_results(op)

    def clc_query(self, op: Op, out) -> None:
        """``clusterlaunchcontrol.query_cancel``: ``is_canceled`` of a followed response is its
        first word != 0; the cancelled cluster's ctaid is not followed."""
        v = self.val(op.operands[0]) if op.operands else None
        kind = str(op.attrs.get("query_type", ""))
        if isinstance(v, ClcResponse) and v.word is not None and kind.rstrip(">").endswith("is_canceled"):
            self.env[op.results[0]] = self.f.binop("!=", v.word, Const(0))
        else:
            what = "the ctaid of the cancelled cluster" if "cta_id" in kind else "a response"
            self.env[op.results[0]] = opaque(f"clusterlaunchcontrol.query_cancel of {what} "
                                             f"(not followed)@{op.loc.short()}")


TRY_CANCEL = Effects("own")  # its rule records the response it writes

HANDLERS = {
    "nvvm.clusterlaunchcontrol.try.cancel": rule(ClcRules.clc_try_cancel, TRY_CANCEL),
    "nvvm.clusterlaunchcontrol.query.cancel": rule(ClcRules.clc_query, WRITES),
    "cute.memref.load_vec": rule(ClcRules.clc_response_value, WRITES),
    "vector.extract": rule(ClcRules.clc_response_value, NONE),
}
