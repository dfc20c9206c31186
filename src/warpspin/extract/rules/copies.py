"""Copies: cute.copy by its atom (TMA loads and stores, bulk copies, cp.async, copies of a
thread's own partition), copy atoms, cp.async groups and proxy fences.
"""
from __future__ import annotations

import re
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ops import CpAsync, CpAsyncCommit, CpAsyncWait, FenceProxyAsync, SmemOwn, TmaStore
from ...syncir.ir import Unchecked, Const, Expr, Lanes, MBarRef
from ...syncir.ops import TmaLoad, Unsupported
from .. import cute_types as ct
from ..data import DataAccess
from ..partitions import thread_partition
from ..values import Atom, Region, Stage, Value, View, opaque
from .tcgen05 import tmem_copy
from ..effects import Effects, NONE, rule


class CopyRules:
    """The walker's rules for TMA, bulk and cp.async copies (mixed into `WarpWalker`)."""

    # -- TMA -------------------------------------------------------------------------------
    def make_exec(self, op, out):
        self.env[op.result] = Atom(op.result_types[0], src=op.operands[0] if op.operands else None)

    def set_value(self, op, out):
        a = self.val(op.operands[0])
        if not isinstance(a, Atom) and op.operand_types[0].startswith("!cute_nvgpu.atom."):
            a = Atom(op.operand_types[0])
        m = re.search(r"<(\w+)>", str(op.attrs.get("field", "")))
        if isinstance(a, Atom) and m:
            # the descriptor pointer is kept as its value id (WarpWalker.tensormap follows it)
            v = op.operands[1] if m.group(1) == "tma_descriptor_ptr" else self.val(op.operands[1])
            self.env[op.result] = Atom(op.result_types[0], a.fields + ((m.group(1), v),), a.src)
        else:
            self.set_unknown_results(op)

    def copy(self, op: Op, out) -> None:
        atom = self.val(op.operands[0])
        t = op.operand_types[0]
        kind = ct.atom_kind(t)
        if kind == "universal_copy" and len(op.operands) > 2 and self.clc_response_load(op, out):
            return
        if kind == "tma_load":
            self.tma_load(op, atom, out)
        elif kind == "bulk_copy_g2s":  # not elected: every executing thread issues it
            self.tma_load(op, atom, out, per_thread=True)
        elif kind in ("tma_store", "tma_reduce", "bulk_copy_s2g"):
            self.tma_store(op, kind, out, atom)
        elif kind == "simt_async_copy":
            self.gmem_copy_access(op, 1, False, asynchronous=True)
            self.cp_async(op, out)
        elif kind == "tma_load_im2col":
            out.append(Unsupported(f"cute.copy with {kind} atom", self.loc(op)))
        elif (what := tmem_copy(op.operand_types)) is not None:
            self.tmem_copy(op, what, out)
        elif "tma_bar" in t or "mbar" in t:
            out.append(Unsupported(f"cute.copy with {kind or t[:40]} atom", self.loc(op)))
        elif len(op.operands) > 2:  # a copy from / into a buffer stage reads / writes it
            self.gmem_copy_access(op, 1, False)
            self.gmem_copy_access(op, 2, True)
            # (a load into registers of bytes no TMA fills is also a read of shared data: the
            # buffer of its own-part claim goes if no cp.async writes it, the data if one does)
            data = register_load(op.operand_types) and self.staged(op.operands[1]) is None
            if not self.own_access(op, op.operands[1], False, out) and \
                    not self.shared_cp_read(op, op.operands[1], out):
                self.staged_read(op, op.operands[1], out)
            if data:
                self.register_load(op, out)
            if not self.own_access(op, op.operands[2], True, out):
                self.staged_write(op, op.operands[2], out)

    def register_load(self, op: Op, out) -> None:
        """A synchronous copy from shared memory into registers (ldmatrix, a universal copy) of
        bytes that are no buffer stage: a load of those bytes as shared data (extract/data.py),
        all of the source tensor's bytes (a sound over-approximation of the lanes' addresses)."""
        v = self.val(op.operands[1])
        if isinstance(v, View) and v.ptr.alloc is not None and v.ptr.cta is None:
            if v.ptr.lin:  # a partition at the thread index: the bytes of the tensor it slices
                self.ctx.derived_view_writes = True
            (lo, hi), uid, elem = v.byte_range, v.ptr.alloc.uid, v.elem
        elif isinstance(v, Region) and v.alloc is not None:
            self.ctx.derived_view_writes = True  # a partition of a tensor, inside its bytes
            lo, hi, uid, elem = v.lo, v.hi, v.alloc, ct.elem_bytes(op.operand_types[1]) or 0
        else:
            return
        records = tuple(r for r in self.records_since_op()
                        if r[0] == "u" and self.ctx.smem_uses[r[1]][0] == uid)
        out.append(DataAccess(uid, ((lo, hi),), False, records, self.loc(op), elem=elem))

    def own_buffer(self, op: Op, vid: int) -> Optional[str]:
        """The buffer `vid` is the executing thread's own part of (a one-to-one tiled-copy
        partition at the thread index, extract/partitions.py), with `op`'s recorded accesses of
        it attributed; None if it is no such view."""
        # one-to-one among the threads that use it: this warp's (each warp's walk checks its own)
        part = thread_partition(self.ctx.kernel, vid, max_tid=32 * self.warp + self.lanes - 1)
        if part is None:
            return None
        parent = self.val(self.ctx.kernel.value_info[part].op.operands[1])
        if not isinstance(parent, View) or parent.ptr.lin:
            return None
        lo, hi = parent.byte_range
        name = self.claim(op, Stage(Const(0), 1, hi - lo, parent.ptr.alloc.uid, lo, hi))
        self.ctx.cp_partitions.setdefault(name, set()).add(part)
        self._own_part = part
        return name

    def cp_async(self, op: Op, out) -> None:
        """A cp.async (non-bulk) of the executing threads into their own part of a buffer; one
        into anything else is not followed (the verdict says so)."""
        name = self.own_buffer(op, op.operands[2]) if len(op.operands) > 2 else None
        if name is None:
            self.ctx.unchecked.append(Unchecked(
                "race", "the cp.async's destination", "not a thread's own part of a shared-memory "
                "tensor (a one-to-one tiled-copy partition at the thread index)", self.loc(op)))
            return
        self.ctx.cp_uses.setdefault(name, []).append((self._own_part, "copy", self.loc(op)))
        out.append(CpAsync(name, Const(0), self.loc(op)))

    def own_access(self, op: Op, vid: int, write: bool, out) -> bool:
        """A read or write by the executing threads of their own part of a buffer."""
        name = self.own_buffer(op, vid)
        if name is not None:
            self.ctx.cp_uses.setdefault(name, []).append(
                (self._own_part, "write" if write else "read", self.loc(op)))
            out.append(SmemOwn(name, Const(0), write, loc=self.loc(op)))
        return name is not None

    def shared_cp_read(self, op: Op, vid: int, out) -> bool:
        """A read by the executing threads of bytes of a buffer that cp.async copies write
        through another partition (a vector each thread copies a part of and every thread reads
        whole, through a broadcast layout): the buffer's one stage, read `shared` (every
        thread's copies must be retired and ordered before it; build.py keeps it only if the
        buffer's copies and writes all go through one partition)."""
        where = self._bytes(self.val(vid))
        if where is None:
            return False
        alloc, lo, hi = where
        for key, (name, _, _) in list(self.ctx.buffers.items()):
            if name in self.ctx.cp_partitions and key[0] == alloc and key[1] <= lo and \
                    hi <= key[2]:
                self.claim(op, Stage(Const(0), 1, key[2] - key[1], alloc, key[1], key[2]))
                self.ctx.cp_uses.setdefault(name, []).append((None, "read", self.loc(op)))
                out.append(SmemOwn(name, Const(0), False, loc=self.loc(op), shared=True))
                return True
        return False

    def cp_async_commit(self, op: Op, out) -> None:
        out.append(CpAsyncCommit(loc=self.loc(op)))

    def cp_async_wait(self, op: Op, out) -> None:
        self.group_wait(op, "n", CpAsyncWait, out)

    def group_wait(self, op: Op, attr: str, make, out) -> None:
        """A wait for all but the N newest groups (`attr` = N), or Unsupported if N is not a
        constant."""
        n = op.attrs.get(attr)
        if n is None or not re.fullmatch(r"\d+", str(n)):
            out.append(Unsupported(f"{op.name} with {attr} {n!r}", self.loc(op)))
            return
        out.append(make(int(str(n)), loc=self.loc(op)))

    def fence_proxy(self, op: Op, out) -> None:
        """``fence.proxy.async`` (all state spaces) and ``fence.proxy.async.shared::cta`` order
        generic-proxy writes of shared memory before async-proxy accesses (build.py keeps them
        only in kernels with a staged buffer the model follows); other proxy kinds do not."""
        if re.search(r"proxy_kind<async(\.shared)?>", str(op.attrs.get("kind", ""))):
            out.append(FenceProxyAsync(self.loc(op)))

    def tma_store(self, op: Op, kind: str, out, atom=None) -> None:
        """A TMA store (or bulk reduce / S2G copy) reads its shared-memory source until a
        wait_group.read of the issuing threads retires its bulk group. Executed by the active
        lanes (PTX has no elect for it; one per executing thread). A store through a descriptor
        in global memory is Unsupported: the model orders a kernel's rewrites of a descriptor
        (release, acquire, the drain of the reads) only against TMA loads."""
        through_pointer = isinstance(atom, Atom) and atom.get("tma_descriptor_ptr") is not None
        if kind == "tma_store" and not through_pointer:
            self.tma_store_box(op)
        if through_pointer:
            desc = self.tensormap(op, atom.get("tma_descriptor_ptr"), out)
            if desc is not None:
                where = next(t[1] for t in self.ctx.tensormaps.values() if t[0] == desc)
                out.append(Unsupported(
                    f"{kind} through the {where}: a TMA store's descriptor read (the "
                    "tensormap acquire it needs after a rewrite, the drain before the next "
                    "rewrite) is not modelled; only TMA loads are", self.loc(op)))
            return
        stage = self.staged(op.operands[1]) if len(op.operands) > 1 else None
        if stage is None:
            source = self.val(op.operands[1]) if len(op.operands) > 1 else None
            where = self._bytes(source) if isinstance(source, (View, Region)) and \
                source.stage is None else None
            if where is not None:  # a second walk follows it (build.py)
                self.ctx.plain_found.add(where)
            self.ctx.unstaged_stores.append((self.loc(op), f"{kind} whose source is not a stage "
                                             "of a staged buffer the model follows"))
            return
        name = self.claim(op, stage)
        out.append(TmaStore(name, stage.index, self.loc(op)))

    def tma_load(self, op: Op, atom: Value, out, per_thread: bool = False) -> None:
        if not isinstance(atom, Atom) or atom.get("tma_bar") is None:
            out.append(Unsupported("TMA load without a traced tma_bar", self.loc(op)))
            return
        pair = "num_cta = 2" in atom.type and not per_thread
        if "num_cta = 1" not in atom.type and not pair and not per_thread:
            out.append(Unsupported("TMA load for a CTA group other than 1 or 2", self.loc(op)))
            return
        bits = ct.copy_bits(atom.type)
        reps = ct.rest_size(op.operand_types[2]) if len(op.operand_types) > 2 else 1
        if bits is not None and reps is not None and len(op.operand_types) > 2:
            reps *= ct.atom_repeats(op.operand_types[2], bits)
        if bits is None or reps is None:
            out.append(Unsupported("TMA load with unknown byte count", self.loc(op)))
            return
        ref = self._ref_of(atom.get("tma_bar"), op)
        if isinstance(ref, str):
            out.append(Unsupported(f"TMA load: {ref}", self.loc(op)))
            return
        nbytes = bits // 8 * reps
        mask: Optional[Expr] = None
        if pair:
            # .cta_group::2: the lowering clears the peer bit of the barrier's address, so the
            # bytes complete on the barrier at the same offset in the pair's leader (even rank)
            if ref.cta is not None or atom.get("mcast_mask") is not None:
                out.append(Unsupported("TMA load for a CTA pair through a remote barrier or an "
                                       "explicit multicast mask", self.loc(op)))
                return
            group = [self.rank]
            if isinstance(op.attrs.get("multicast_layout"), str):
                group = self.block_mcast(op.attrs["multicast_layout"],
                                         pair_split="use_2cta" in op.attrs)
                if group is None:
                    out.append(Unsupported(f"TMA load for a CTA pair with multicast_layout "
                                           f"{op.attrs['multicast_layout']}", self.loc(op)))
                    return
            leaders = sorted({r - r % 2 for r in group})
            if len(leaders) != len(group):
                out.append(Unsupported("TMA load for a CTA pair multicast into both CTAs of a "
                                       "pair (two completions on one leader barrier)",
                                       self.loc(op)))
                return
            nbytes //= len(group)
            if len(group) > 1:
                mask = Const(sum(1 << r for r in leaders))
            elif leaders[0] != self.rank:
                ref = MBarRef(ref.name, ref.index, Const(self.cluster_base + leaders[0]))
        elif atom.get("mcast_mask") is not None:
            # the box is split among the CTAs of tma_partition's cta_layout (num_multicast)
            mask = self.expr_of(atom.get("mcast_mask"))
            nbytes //= self.ctx.tma_split.get(atom.src, 1)
        elif isinstance(op.attrs.get("multicast_layout"), str):
            group = self.block_mcast(op.attrs["multicast_layout"])
            if group is None:
                out.append(Unsupported(f"TMA load with multicast_layout "
                                       f"{op.attrs['multicast_layout']}", self.loc(op)))
                return
            if len(group) > 1:
                mask = Const(sum(1 << r for r in group))
                nbytes //= len(group)
        desc = None
        if atom.get("tma_descriptor_ptr") is not None:
            desc = self.tensormap(op, atom.get("tma_descriptor_ptr"), out)
            if desc is None:
                return
        stmt = TmaLoad(ref, Const(nbytes), self.loc(op), mask, desc,
                       self.fill(op, ref, pair)
                       if len(op.operands) > 2 and not (pair and mask is not None) else None)
        if per_thread:  # one copy per executing thread: the enclosing lanes give the count
            out.append(stmt)
        elif self.whole_warp():  # the lowering elects one lane of the warp: one copy per warp
            out.append(Lanes(1, (stmt,), self.loc(op)))
        else:
            out.append(Unsupported(
                "TMA load by a subset of the warp's lanes (its lowering wraps it in an "
                "elect.sync over all 32 lanes, which waits for every one of them)", self.loc(op)))

    def fill(self, op: Op, ref: MBarRef, pair: bool = False) -> Optional[str]:
        """The staged buffer a TMA load fills: its destination is a stage whose index is its
        barrier's (the stage of `full[s]`); else none (a load into a stage by another index is
        not followed: build.py sees its write as not attributed). A cta_group::2 load of the
        pair's other CTA fills its own stage and completes on the leader's barrier."""
        stage = self.staged(op.operands[2])
        if stage is None and ref.cta is None and ref.index == Const(0):
            dst = self.val(op.operands[2])
            where = self._bytes(dst) if isinstance(dst, (View, Region)) and \
                dst.stage is None else None
            if where is not None:  # a plain tensor filled through barrier 0: a second walk
                self.ctx.plain_found.add(where)
        if stage is None or (ref.cta is not None and not pair) or (
                stage.index != ref.index and self.f.binop("-", stage.index, ref.index) != Const(0)):
            return None
        name = self.claim(op, stage)
        return name

    def block_mcast(self, attr: str, pair_split: bool = False) -> Optional[list[int]]:
        """CTA ranks sharing this CTA's tile for ``cute.copy {multicast_layout = (cm,cn):(dm,dn)}``
        (the block-copy API; the compiler slices the box and builds the mask): direction (1,0)
        ("M") shares among the CTAs of the same m, (0,1) ("N") among those of the same n.
        `pair_split` (``use_2cta``: the operand is split between the CTAs of a 2-CTA MMA pair,
        ranks 2k and 2k+1 along m): only CTAs of the same position in their pair share it."""
        m = re.search(r'"\((\d+),(\d+)\):\((\d+),(\d+)\)"', attr)
        if not m:
            return None
        cm, cn, dm, dn = (int(x) for x in m.groups())
        if (dm, dn) not in ((1, 0), (0, 1)) or cm * cn != self.k.cluster_size:
            return None
        me_m, me_n = self.rank % cm, self.rank // cm
        if (dm, dn) == (1, 0):
            return [me_m + n * cm for n in range(cn)]
        if pair_split and cm % 2:
            return None
        return [m_ + me_n * cm for m_ in range(cm) if not pair_split or m_ % 2 == me_m % 2]

    def expr_of(self, value: Value) -> Expr:
        if isinstance(value, Expr):
            return value
        return opaque(getattr(value, "reason", type(value).__name__.lower()))



def _copy_effects(op) -> Effects:
    """A copy writes its destination (shared or global memory), except a load into registers
    (ldmatrix, a universal copy, a cluster launch control response), which only reads."""
    from .clc import _response_load
    loads = register_load(op.operand_types) or _response_load(op.operand_types)
    return Effects("read" if loads else "write", "may")


HANDLERS = {
    "cute_nvgpu.atom.make_exec_tma": rule(CopyRules.make_exec, NONE),
    "cute_nvgpu.atom.set_value": rule(CopyRules.set_value, NONE),
    "cute.copy": rule(CopyRules.copy, _copy_effects),
    "nvvm.fence.proxy": rule(CopyRules.fence_proxy, NONE),
    "nvvm.cp.async.commit.group": rule(CopyRules.cp_async_commit, NONE),
    "nvvm.cp.async.wait.group": rule(CopyRules.cp_async_wait, NONE),
}


# copy atoms that load shared memory into registers synchronously (generic proxy)
REGISTER_LOAD_ATOMS = ("ldsm", "universal_copy")


def register_load(types: list[str]) -> bool:
    """Whether a cute.copy (its operand types) loads shared memory into registers with a
    synchronous atom: it writes no shared memory."""
    return len(types) > 2 and ct.atom_kind(types[0]) in REGISTER_LOAD_ATOMS and \
        ct.is_smem(types[1]) and ct.memref_space(types[2]) == "rmem"
