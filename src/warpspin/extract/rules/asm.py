"""Inline PTX: the forms the extractor reads (st.async, st.shared::cluster, bulk groups and
tensormap ops, tcgen05 MMAs with their spin waits, mul.hi) and the rule that dispatches them.
"""
from __future__ import annotations

import re

from ...frontend.mlir_data import Op
from ...syncir.ops import TmemAccess
from ...syncir.ops import MbarWait, Unsupported
from .. import tmem
from ..effects import Effects
from ..values import MulHi


def tensormap_asm_form(text: str):
    """(kind, match) of inline PTX that is a bulk group (`bulk`), a tensormap fence (`release`,
    `acquire` of one descriptor), `tensormap.cp_fenceproxy` (`copy`) or one `tensormap.replace`
    (`replace`); None for anything else."""
    m = ASM_BULK.match(text)
    if m:
        return "bulk", m
    m = ASM_TMAP_FENCE.match(text)
    if m and m.group(1) == "release" and m.group(2) is None:
        return "release", m
    if m and m.group(1) == "acquire" and m.group(2) is not None:
        return "acquire", m
    m = ASM_TMAP_COPY.match(text)
    if m:
        return "copy", m
    m = ASM_TMAP_REPLACE.search(text)
    if m and len(re.findall(r"\btensormap\.", text)) == 1:
        return "replace", m
    return None


def _asm_only_global_tensormap(text: str) -> bool:
    """Inline PTX that is a bulk group, a tensormap fence or one `tensormap.replace` of a
    descriptor in global memory (with register moves): it reads and writes no shared memory."""
    form = tensormap_asm_form(text)
    if form is None or form[0] == "copy":
        return False
    return form[0] != "replace" or (form[1].group(1) == "global" and not re.search(
        r"\bst\.|\bld\.|\bcp\.|stmatrix|ldmatrix|\batom|\bred\.", text))


def _asm_may_write_shared(text: str) -> bool:
    """Whether inline PTX may write shared memory (the copy of a descriptor out of shared memory
    reads it and writes global memory)."""
    if _asm_only_global_tensormap(text) or (tensormap_asm_form(text) or ("",))[0] == "copy":
        return False
    return bool(re.search(r"\bst\.|\bcp\.|stmatrix|\batom|\bred\.|tensormap", text))


ST_ASYNC = re.compile(r"st\.async\S*mbarrier::complete_tx::bytes(?:\.v(\d))?\.([bsuf])(\d+)\s+"
                      r"\[\{?\$r?(\d+)\}?\]\s*,\s*(\{[^}]*\}|[^,\s]+)\s*,\s*\[\{?\$r?(\d+)\}?\]")
def _one_st_async(text: str) -> bool:
    """Inline PTX whose only st.async is one the extractor reads (several: not followed)."""
    return len(re.findall(r"\bst\.async", text)) == 1 and ST_ASYNC.search(text) is not None


PTX_OPERAND = re.compile(r"^\{?\$r?(\d+)\}?$")


ASM_ST_CLUSTER = re.compile(r"^\s*st\.shared::cluster(?:\.v[248])?\.[bsuf]\d+\s+"
                            r"\[\{?\$r?(\d+)\}?\]\s*,\s*[^;\[]+;\s*$")
ASM_IGNORED = re.compile(r"^\s*griddepcontrol\.(wait|launch_dependents)\s*;\s*$")
# bulk async-groups and tensormaps in inline PTX (extract/walker.py WarpWalker.asm)
ASM_BULK = re.compile(r"^\s*cp\.async\.bulk\.(commit_group|wait_group(?:\.read)?\s+(\d+))\s*;\s*$")
ASM_TMAP_FENCE = re.compile(r"^\s*fence\.proxy\.tensormap::generic\.(release|acquire)\.\w+"
                            r"(?:\s*\[\$(\d+)\]\s*,\s*128)?\s*;\s*$")
ASM_TMAP_COPY = re.compile(r"^\s*tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic"
                           r"\.release\.\w+\.sync\.aligned\s*\[\$(\d+)\]\s*,\s*\[\$(\d+)\]\s*,"
                           r"\s*128\s*;\s*$")
ASM_TMAP_REPLACE = re.compile(r"tensormap\.replace\.tile\.\w+\.(global|shared::cta)\.")
# inline PTX that only issues tcgen05 MMAs (flash-attn-4's blackwell_helpers): register moves and
# arithmetic, an elect.sync of the issuing lane into a predicate, tcgen05.mma of one CTA, and
# spin loops of mbarrier.try_wait.parity on an operand barrier (the loop is a blocking wait)
ASM_MMA_STATEMENT = re.compile(
    r"\.reg\s+[^;]*|elect\.sync\s+_\|\w+\s*,\s*-1|"
    r"(?:mov|add|sub|and|or|xor|shl|shr|setp\.\w+)\.[\w.]*\s+[^\[\];]*|"
    r"(?:@!?\w+\s+)?tcgen05\.mma\.cta_group::1\.kind::\w+\s+\[\w+\]\s*,"
    r"(?:\s*\[\w+(?:\s*\+\s*\w+)?\]\s*,)?[^\[\];]*")
ASM_SPIN_WAIT = re.compile(r"mbarrier\.try_wait\.parity(?:\.shared::cta)?\.b64\s+(\w+)\s*,\s*"
                           r"\[\$(\d+)\]\s*,\s*\$(\d+)(?:\s*,\s*\w+)?")
ASM_LABEL = re.compile(r"^(\w+):\s*")


def tcgen05_mma_asm(text: str) -> list[tuple[int, int]] | None:
    """Inline PTX whose statements are register ops, an elect.sync into a predicate, one-CTA
    tcgen05.mma (at least one) and complete spin loops `L: mbarrier.try_wait.parity P, [$b], $p;
    @P bra D; bra L; D:`: the (barrier operand, parity operand) of each loop, in order (the MMAs
    are no steps: a later tcgen05.commit tracks them). None for anything else."""
    body = re.sub(r"//[^\n]*", "", text).strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    stmts, labels = [], []
    for raw in body.split(";"):
        st, label = " ".join(raw.split()), None
        m = ASM_LABEL.match(st)
        if m:
            label, st = m.group(1), st[m.end():]
        if st or label:
            stmts.append(st)
            labels.append(label)
    waits, i = [], 0
    while i < len(stmts):
        m = ASM_SPIN_WAIT.fullmatch(stmts[i])
        if m:
            pred, loop = m.group(1), labels[i]
            done = labels[i + 3] if i + 3 < len(labels) else None
            if loop is None or done is None or stmts[i + 1:i + 3] != [f"@{pred} bra {done}",
                                                                      f"bra {loop}"]:
                return None
            waits.append((int(m.group(2)), int(m.group(3))))
            i += 3
            continue
        if stmts[i] and not ASM_MMA_STATEMENT.fullmatch(stmts[i]):
            return None
        i += 1
    return waits if any("tcgen05.mma" in st for st in stmts) else None


ASM_SYNC = re.compile(r"mbarrier|\bbar\.|barrier|fence|cp\.async|tensormap|griddepcontrol|"
                      r"st\.async|\bred\.|\batom\.|elect|setmaxnreg|exit|\bst\.shared::cluster",
                      re.I)


class AsmRules:
    """The walker's rule for inline PTX (mixed into `WarpWalker`)."""

    def asm(self, op: Op, out) -> None:
        text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
        if "tcgen05" in text and tcgen05_mma_asm(text) is None:
            tmem.unattributed(self.ctx, "tcgen05 op", self.loc(op), "inline PTX")
        if re.fullmatch(r"\s*mul\.hi\.u32\s+\$0,\s*\$1,\s*\$2;\s*", text) and len(op.operands) == 2:
            self.env[op.result] = MulHi(op.operands[0], op.operands[1])
            return
        m = ST_ASYNC.search(text)
        if m and _one_st_async(text):
            self.st_async(op, m, out)
        elif ASM_ST_CLUSTER.match(text):
            self.st_cluster(op, int(ASM_ST_CLUSTER.match(text).group(1)), out)
        elif self.asm_tensormap(op, text, out):
            pass
        elif (spin_waits := tcgen05_mma_asm(text)) is not None:
            # its shared-memory operands were recorded as unfollowed uses (smem_uses_of)
            # an MMA may come before, between and after the spin loops: its TMEM access is
            # checked before the first and after the last (an allocation is held in between)
            if spin_waits:
                out.append(TmemAccess("tcgen05.mma", self.loc(op)))
            for bar, parity in spin_waits:
                self.mbar_stmt_at(op, bar, out, lambda b, p=parity: MbarWait(
                    b, self.expr(op.operands[p]), self.loc(op)))
            out.append(TmemAccess("tcgen05.mma", self.loc(op)))
            tmem.unattributed(self.ctx, "tcgen05.mma", self.loc(op), "inline PTX")
        elif ASM_SYNC.search(text) and not ASM_IGNORED.match(text):
            out.append(Unsupported(f"inline PTX {' '.join(text.split())[:60]!r}", self.loc(op)))
        self.set_unknown_results(op)


# none: `WarpWalker.op` itself sends inline PTX (llvm.inline_asm, nvvm.inline_ptx) to `asm`
HANDLERS: dict = {}


def asm_effects(op: Op) -> Effects:
    """Inline PTX: what its text may write in shared memory is decided from the text
    (`WarpWalker.smem_writes_of`); it may write global memory when the text has a memory
    operand (`[...]`: PTX addresses memory only so), so text with none (`mul.hi`, a fence)
    touches no memory; its rule follows a store through a cluster address (st.shared::cluster,
    st.async)."""
    text = str(op.attrs.get("asm_string") or op.attrs.get("ptxCode") or "")
    return Effects("write", "may" if "[" in text else "none", "own")

