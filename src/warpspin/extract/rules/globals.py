"""Global memory: loads of global tensors as launch values, atomics on global counters and
flags (atom.inc, atom.add, red.add), fences and spin loops on a flag.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from ...frontend.mlir_data import Op
from ...syncir.ops import (SmemRead, ADD_SEMANTICS, MEMORY_SCOPES, WAIT_SEMANTICS, GlobalAdd,
                           GlobalLock, GlobalRead, GlobalStore, GlobalWait)
from ...syncir.ir import Assign, CounterDecl, Const, Expr, If, Loc, Unchecked, Var, expr_vars
from ...syncir.ops import AtomInc, Unsupported
from .. import cute_types as ct
from ..data import DataAccess, global_alloc
from ..coords import store_box, thread_offset
from ..ownership import GlobalAccess, inline_locals
from ..partitions import (SAME_LAYOUT_ATOMS, image, layout_text, static_one_to_one, static_shape,
                          thread_partition, view_sources)
from ..values import LANE, Leaves, Ptr, Region, SliceCoord, View, opaque_reasons, opaque, subst
from ..context import INT_TYPES, _pointer_name
from .integers import CMP, PASS_THROUGH
from ..effects import Effects, NONE, READS, rule


# global reads modelled as launch choices: at most this many elements one load may read, each in
# this range unless --param says otherwise
MAX_READ_ELEMENTS = 16
READ_RANGE = (0, 3)
LANE_CHECK = "chk"  # the local a per-lane read's index checks set (to 0)
DYNAMIC_EXTENT = 3  # the elements of a tensor of dynamic extent read at a run-time index


def _subscripted_name(loc: Loc) -> Optional[str]:
    """`counts` for a load written `n = counts[e]` on its source line (one subscript there)."""
    import linecache

    names = re.findall(r"([A-Za-z_]\w*)\s*\[", linecache.getline(loc.file, loc.line)) if loc.file else []
    return names[0] if len(set(names)) == 1 else None


# llvm.fence's `ordering` (LLVM's AtomicOrdering numbers)
LLVM_ORDERINGS = {"2": "relaxed", "4": "acquire", "5": "release", "6": "acq_rel", "7": "seq_cst"}
UNSIGNED_PREDICATES = (6, 7, 8, 9)  # arith.cmpi ult, ule, ugt, uge
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _plain_tile(type_str: str) -> Optional[tuple[int, ...]]:
    """``!cute.tile<"[32:1;8:1]">`` -> (32, 8): a tile whose every mode is a plain extent; None
    for any other (a `_` mode, a strided or nested one). A mode of one element (``1:0``) is
    plain too."""
    qs = ct.quoted(type_str)
    mode = r"(?:\d+:1|1:0)"
    m = re.fullmatch(rf"\[({mode}(?:;{mode})*)\]", qs[-1].strip()) if qs else None
    return tuple(int(x.split(":")[0]) for x in m.group(1).split(";")) if m else None


def _contract_one_to_one(layout: str) -> Optional[int]:
    """The rank of a flat layout that may be one-to-one, as the host contract for tensors placed
    by coordinates states: its modes with a static stride (and more than one element) are
    compact among themselves, each stride at least the reach of the smaller ones (a dynamic
    extent only on the largest); a stride of 0, as a broadcast row has, shows it is not. None
    otherwise. (Modes of dynamic stride: the contract.)"""
    sh, _, st = layout.partition(":")
    try:
        shape, stride = ct.flatten(ct.parse_shape(sh)), ct.flatten(ct.parse_shape(st))
    except (ValueError, IndexError, TypeError):
        return None
    if len(shape) != len(stride) or "(" in sh.strip().strip("()"):
        return None
    fixed = sorted((d, n) for n, d in zip(shape, stride) if d is not None and n != 1)
    # each static stride past all the elements the smaller ones reach (a dynamic extent only
    # on the largest): compact, so one-to-one whatever the dynamic extent
    reach = 1
    for i, (d, n) in enumerate(fixed):
        if d < reach or (n is None and i != len(fixed) - 1):
            return None
        reach = d * n if n is not None else reach
    return len(shape)


def _same_layout(a, b) -> bool:
    """Two flat layouts that map every coordinate alike (a mode of one element: any stride)."""
    return a is not None and b is not None and a[0] == b[0] and \
        all(n == 1 or x == y for n, x, y in zip(a[0], a[1], b[1]))


def _memory_order(op: Op, attr: str, default: str) -> str:
    """`relaxed`, `release`, ... of an nvvm memory-order attribute (#nvvm.mem_order<release>)."""
    m = re.search(r"<(\w+)>", str(op.attrs.get(attr) or ""))
    return m.group(1) if m else default


def _memory_scope(op: Op, attr: str) -> str:
    """`cta`, `cluster`, `gpu` or `sys` of an nvvm scope (#nvvm.mem_scope<gpu>) or an LLVM sync
    scope (block, cluster, device, or none: system); PTX's default for atomics is gpu."""
    raw = str(op.attrs.get(attr) or "")
    m = re.search(r"<(\w+)>", raw)
    if m:
        return m.group(1)
    if attr == "syncscope" and op.name == "llvm.fence":
        return {"block": "cta", "cluster": "cluster", "device": "gpu", "": "sys"}.get(
            raw.strip('"'), raw)
    return "gpu" if not raw else raw


def _narrower(a: str, b: str) -> str:
    return min(a, b, key=MEMORY_SCOPES.index) if a in MEMORY_SCOPES and b in MEMORY_SCOPES else a


def _spin_address_or_value(op: Op) -> bool:
    """An op of a spin loop's condition that computes the flag's address or the value it is
    compared with: integer arithmetic and address computations, which touch no memory."""
    return op.name in PASS_THROUGH or op.name in ("cute.make_int_tuple", "cute.add_offset",
                                                  "cute.get_iter") or \
        (op.name.startswith("arith.") and op.name != "arith.cmpi" and not op.regions)


class GlobalRules:
    """The walker's rules for global memory, counters and flags (mixed into `WarpWalker`)."""

    def memref_load(self, op: Op, out) -> None:
        """``cute.memref.load`` of one element of a global tensor the kernel never writes (a
        count, an offset, a sequence length): every reader of an element sees the same value,
        chosen at launch.  Each element of the tensor that can be read is a launch parameter
        (``READ_RANGE`` by default: empty, one and many; ``--param`` sets it), and the load is
        the select of the element its index names.  Anything else stays a per-thread value."""
        t = op.operand_types[0]
        m = self.val(op.operands[0]) if op.operands else None
        if isinstance(m, Region) and m.stage is not None:
            self.staged_read(op, op.operands[0], out)
            self.set_unknown_results(op)
            return
        if isinstance(m, View) and len(op.operands) == 2 and op.results:
            # a read of a stage (the view is one, or its coordinate names one) is a staged read;
            # the value may still be a word the model follows (build.py keeps one or the other)
            stage = m.stage or self.element_stage(m, op.operands[1]) or self.plain_stage(m)
            if stage is not None:
                name = self.claim(op, stage)
                out.append(SmemRead(((name, stage.index),), self.loc(op)))
            self.smem_load(op, m, out)
            return
        root = self.ctx.gmem_root(op.operands[0]) if op.operands else None
        # a generic address a kernel argument holds is global memory (the host passes no other)
        if not ("gmem" in t or ct.memref_space(t) == "generic" and root is not None) or \
                len(op.operands) != 2 or not op.results:
            self.set_unknown_results(op)
            return
        shape = ct.layout_shape(t)
        shape = (shape,) if isinstance(shape, int) else shape  # ("4:1": a mode, no tuple)
        n = ct.size(shape) if shape is not None else None
        idx = self.expr(op.operands[1])
        written, _ = self.ctx.written_gmem()
        unknown = self.ctx.unplaced_writers(reader=root) if root is not None else []
        info = self.ctx.kernel.value_info.get(op.operands[0])
        why = None
        if root is None:
            why = "a global tensor that is not a kernel argument"
        elif root in written:
            why = f"kernel argument {root}, which the kernel writes"
            self.global_data_access(op, op.operands[1], False, out)
        elif unknown:
            why = f"global memory, which {unknown[0]} may write"
        elif op.result_types[0] not in INT_TYPES:
            why = f"{op.result_types[0]} values (integers are modelled)"
        elif shape is None or len(shape) != 1:
            why = f"a tensor of shape {shape} (a one-dimensional shape is modelled)"
        elif info is None or not info.is_block_arg or info.region != -1:
            why = (f"a view of kernel argument {root} (element reads of the argument itself are "
                   "modelled)")
        elif opaque_reasons(idx) or LANE in expr_vars(idx) and not (self.whole_warp() or
                                                                     self.active.exact):
            why = "an index that differs between threads or is not modelled"
        if why is not None:
            self.env[op.result] = opaque(f"cute.memref.load of {why}@{op.loc.short()}")
            return
        lo, hi = self.index_range(idx) if LANE not in expr_vars(idx) else (None, None)
        name = _subscripted_name(self.loc(op)) or f"arg{root}"
        if lo is None:
            self._dynamic_read(op, idx, name, root, n, out)
            return
        if lo < 0 or n is not None and hi >= n:
            self.env[op.result] = opaque(f"cute.memref.load whose index is not shown to lie in "
                                         f"0..{(n or 0) - 1}@{op.loc.short()}")
            return
        if hi - lo + 1 > MAX_READ_ELEMENTS:
            self.env[op.result] = opaque(f"cute.memref.load of any of {hi - lo + 1} elements (at "
                                         f"most {MAX_READ_ELEMENTS} are modelled)@{op.loc.short()}")
            return
        elems = self._read_elements(op, name, root, range(lo, hi + 1))
        e = elems[hi]
        for i in reversed(range(lo, hi)):
            e = self.f.select(self.f.binop("==", idx, Const(i)), elems[i], e)
        self.bind(op, e, out)

    def _read_elements(self, op: Op, name: str, root: int, which: range) -> dict:
        """The launch values elements `which` of read-only kernel argument `root` are."""
        self.ctx.assumptions.add("values read from global memory: nothing else writes the tensors "
                                 "they come from while the kernel runs, and kernel arguments "
                                 "(and the tensors TMA descriptor arguments were made from) do "
                                 "not alias")
        return {i: self.ctx.param(f"{name}_{i}", f"{name}[{i}]: element {i} of kernel argument "
                                  f"{root} (global memory, read at {op.loc.short()}; the kernel "
                                  f"does not write it)", self.loc(op), default=READ_RANGE,
                                  same_as=("gmem", root, i),
                                  alias=f"arg{root}_{i}" if name != f"arg{root}" else None)
                for i in which}

    def _dynamic_read(self, op: Op, idx: Expr, name: str, root: int, n: Optional[int],
                      out) -> None:
        """A read at an index the extractor cannot bound (a scheduler's batch index): a
        `GlobalRead` of elements 0..extent-1, which checks the index at run time. A dynamic
        extent is a launch value (`{name}_extent`, DYNAMIC_EXTENT unless given), as many
        elements as its largest value (at most MAX_READ_ELEMENTS); a static one past
        MAX_READ_ELEMENTS follows the elements given values, DYNAMIC_EXTENT at least."""
        loc = self.loc(op)
        extent: Expr = Const(n) if n is not None else self.ctx.param(
            f"{name}_extent", f"the number of elements of {name} (kernel argument {root}, read "
            f"at an index known at run time at {op.loc.short()})", loc, default=DYNAMIC_EXTENT,
            same_as=("gmem-extent", root), alias=f"arg{root}_extent")
        given = n if n is not None else self.ctx.given.get(
            extent.name, self.ctx.given.get(f"arg{root}_extent", DYNAMIC_EXTENT))
        most = given if isinstance(given, int) else given[1]
        modelled = 0
        if n is not None and n > MAX_READ_ELEMENTS:
            # a large static tensor: the elements given values (--param NAME_i), at least
            # DYNAMIC_EXTENT; a read past them is a model bound
            named = [int(m.group(2)) for k in self.ctx.given
                     if (m := re.fullmatch(f"({re.escape(name)}|arg{root})" + r"_(\d+)", k))]
            most = modelled = min(n, max([DYNAMIC_EXTENT] + [i + 1 for i in named]))
        if most > MAX_READ_ELEMENTS:
            self.env[op.result] = opaque(f"cute.memref.load of any of {most} elements (at most "
                                         f"{MAX_READ_ELEMENTS} are modelled)@{op.loc.short()}")
            return
        elems = self._read_elements(op, name, root, range(most))
        e = elems[most - 1]
        for i in reversed(range(most - 1)):
            e = self.f.select(self.f.binop("==", idx, Const(i)), elems[i], e)
        if LANE in expr_vars(idx):
            # each lane's value, an expression over the lane; + the checks' local (0), so the
            # checks are dropped with the value where nothing reads it
            chk = f"{LANE_CHECK}{op.uid}"
            self._lane_read_checks(chk, name, idx, extent, modelled, loc, out)
            self.env[op.result] = self.f.binop("+", e, Var(chk))
            return
        dest = f"v{op.uid}"
        out.append(GlobalRead(dest, name, idx, extent, e, loc, modelled))
        self.env[op.result] = Var(dest)

    def _lane_read_checks(self, chk, name, idx, extent, modelled, loc, out) -> None:
        """A load of the whole warp at an index that differs between lanes (each lane reads
        `cu_seqlens[lane + start]`): the check of each lane's index, under the conditions over
        the lane of the enclosing branches (which `scf_if` then hoists out of the branch)."""
        f = self.f
        guard = Const(1)
        for c in self.lane_conds:
            guard = c if guard == Const(1) else f.binop("and", guard, c)
        mark = len(out)
        for lane in sorted(self.active.lanes):  # (the lanes that run it: all, or a known set)
            g = subst(guard, {LANE: lane}, f)
            if isinstance(g, Const) and not g.value:
                continue
            check = GlobalRead(chk, name, subst(idx, {LANE: lane}, f), extent, Const(0), loc,
                               modelled)
            out.append(check if isinstance(g, Const) else If(g, (check,), (), loc))
        if len(out) == mark:
            out.append(Assign(chk, Const(0), loc))  # (no lane reads it: its local is still set)

    def global_data_access(self, op: Op, coord: int, write: bool, out) -> None:
        """A store or load of one element of a global tensor by the executing lanes: the bytes
        they touch of the kernel argument the tensor is, when it is that argument itself or a
        tile of it (`local_tile`) with a static layout (another view of it is not placed). In a
        grid model (every CTA of the grid) a `DataAccess` extract/data.py follows as global
        data; else a `GlobalAccess` for extract/ownership.py's proof that no two threads of
        the grid meet there."""
        root = self.ctx.gmem_root(op.operands[0])
        if root is None:
            return  # (written_gmem names the op: the global data is not followed)
        t = op.operand_types[0]
        flat, elem = self._flat(t), ct.elem_bytes(t)
        at = self.gmem_base(op.operands[0], t)
        off, extent, why = None, None, ""
        if at is None:
            info = self.ctx.kernel.value_info.get(op.operands[0])
            why = (f"the element access at {op.loc.short()} is through a view of the argument "
                   f"({info.op.name if info is not None and info.op is not None else 'a value'}"
                   "): element accesses of the argument itself and of its tiles "
                   "(cute.local_tile) are placed")
            self.ctx.data_why.setdefault(global_alloc(root), why)
        elif flat and elem:
            first, cosize = at
            view = View(Ptr(None, space="gmem"), flat[0], flat[1], elem)
            coords = self.element_coords(view, coord, t) or []
            if self.ctx.grid_why is not None and \
                    any(not isinstance(x, Expr) or opaque_reasons(x) for x in coords):
                # (outside grid models: a leaf of a coordinate tensor, `out[tXcX[0][0]]`)
                coords = self.side_coords(coord, len(view.shape)) or coords
            if len(coords) == len(view.shape) and all(
                    isinstance(x, Expr) and not opaque_reasons(x) for x in coords):
                off = self.f.binop("*", first, Const(elem))
                for x, d in zip(coords, view.stride):
                    off = self.f.binop("+", off, self.f.binop("*", x, Const(d * elem)))
                extent = (0, cosize * elem) if cosize is not None else None  # (outside grid
                # models an argument's extent may be dynamic: its places are only compared)
        if self.ctx.grid_why is not None and at is None:
            place = self.tile_of(op.operands[0], whole=False)
            if place is not None:  # an element of the thread's own part of a tile
                self._global_access(op, root, write, why="", **place)
                return
        if self.ctx.grid_why is not None:
            same, per_trip = self._one_value(op, op.operands[2] if len(op.operands) > 2 else None)
            self._global_access(op, root, write,
                                inline_locals(off, self.local_defs) if off is not None else None,
                                elem or 0, why or "its element coordinates are not known",
                                same_value=write and same, same_per_trip=write and per_trip)
            return
        spans, lanes, base = self.element_bytes(off, elem, extent) if off is not None else \
            (None, (), None)
        out.append(DataAccess(global_alloc(root), spans, write, (), self.loc(op), lanes=lanes,
                              base=base, elem=elem or 0,
                              extent=extent if base is not None else None))

    def tma_store_box(self, op: Op) -> None:
        """Outside grid models, a TMA store through a descriptor kernel argument: the box of
        coordinates it writes (coords.py) for extract/ownership.py. The DSL does not elect a
        lane for it (PTX checked): every executing lane issues the store, the same box from the
        same shared bytes when neither depends on the lane, which is one write per trip."""
        if self.ctx.grid_why is None or len(op.operands) < 3:
            return
        root = self.ctx.descriptor_argument(op.operands[0])
        if root is None:
            return
        origin, extents, why = store_box(self, op.operands[2])
        if origin is not None:
            origin = tuple(inline_locals(e, self.local_defs) for e in origin)
        no_loop, counted = self._loops_counted(op)
        one = origin is not None and self._lane_free_source(op.operands[1]) and \
            not any(LANE in expr_vars(e) for e in origin)
        self._global_access(op, root, True, None, 0,
                            why and f"the TMA store at {op.loc.short()}: {why}",
                            same_value=one and no_loop, same_per_trip=one and counted,
                            coords=origin or (), box=extents or (), uncounted=not counted)

    def _global_access(self, op: Op, root: int, write: bool, offset, elem: int, why: str = "",
                       **more) -> None:
        """Records an access of kernel argument `root` by the executing lanes for
        extract/ownership.py, which settles the op's global write."""
        lanes = self.active.lanes & self.may_lanes
        if not lanes:
            self.ctx.gmem_settled.add(op.uid)  # no lane runs it here
            self.ctx.gmem_recorded.add(op.uid)
            return
        self.ctx.global_accesses.append(GlobalAccess(
            root, write, offset, elem, frozenset(lanes),
            self.active.count == 1 and not self.active.exact,  # else each lane its own
            self.cta, self.warp, self._counter_ranges(), self.loc(op), why, **more))
        self.ctx.gmem_settled.add(op.uid)
        self.ctx.gmem_recorded.add(op.uid)

    def gmem_copy_access(self, op: Op, index: int, write: bool,
                         asynchronous: bool = False) -> None:
        """Outside grid models, a copy (universal or cp.async atom) that reads or writes a global
        tensor (operand `index`), for extract/ownership.py: the bytes of the tile `gmem_base`
        places that the tensor is (each executing thread copies all of it), or that a one-to-one
        thread partition (partitions.py) the tensor is a view inside splits: the threads using
        one partition of one tile each touch bytes of their own there, so together they are
        one accessor of the tile (`partition`)."""
        if self.ctx.grid_why is None or len(op.operands) <= index or \
                ct.memref_space(op.operand_types[index]) != "gmem":
            return
        root = self.ctx.gmem_root(op.operands[index])
        if root is None:
            return
        place = self.tile_of(op.operands[index], whole=True)
        why = "" if place is not None else (
            f"which elements the cute.copy at {op.loc.short()} {'writes' if write else 'reads'} "
            "is not followed: it copies neither a placed tile of the argument (a static "
            "layout, or a tile of static extents of a layout that may be one-to-one) nor a "
            "thread's own part of one (a one-to-one partition by a universal or cp.async tiled "
            "copy, or an SM90 MMA's accumulator, at the thread index)")
        self._global_access(op, root, write, why=why, asynchronous=asynchronous,
                            **(place or dict(offset=None, elem=0)))

    def tile_of(self, vid: int, whole: bool) -> Optional[dict]:
        """Where in a kernel argument a global tensor touches: the tile a one-to-one thread
        partition (partitions.py) that `vid` is a view inside splits (`partition` names the
        partition: the threads using it at one place touch elements of their own), or with
        `whole`, the placed tensor `vid` is a view inside. As bytes (`offset`, `elem`: a static
        layout, one-to-one for a partition) or as a box of the argument's coordinates
        (`coords`, `box`: a tile of static extents of a tensor with dynamic strides, whose
        layout the host contract makes one-to-one); None when neither."""
        k = self.ctx.kernel
        part = thread_partition(k, vid, space="gmem")
        pop = k.value_info[part].op if part is not None else None
        if pop is not None:
            tile, tile_t = pop.operands[1], pop.operand_types[1]
        elif whole:
            tile = next((v for v in view_sources(k, vid)
                         if self.gmem_base(v, k.type_of(v)) is not None
                         or v in self.gmem_ctiles), vid)
            tile_t = k.type_of(tile)
        else:
            return None
        key = f"{pop.operand_types[0]} of {tile_t}" if pop is not None else ""
        at = self.gmem_base(tile, tile_t)
        cells = image(layout_text(tile_t) or "")
        elem = ct.elem_bytes(tile_t)
        if at is not None and cells and elem and not opaque_reasons(at[0]) and \
                (pop is None or static_one_to_one(tile_t)):
            return dict(offset=inline_locals(self.f.binop("*", at[0], Const(elem)),
                                             self.local_defs),
                        elem=(max(cells) + 1) * elem, partition=key)
        placed = self.gmem_ctiles.get(tile)
        if placed is not None and static_shape(tile_t) == placed[1]:
            return dict(offset=None, elem=0, partition=key, box=placed[1],
                        coords=tuple(inline_locals(x, self.local_defs) for x in placed[0]))
        return None

    def coord_tile(self, op: Op) -> None:
        """Outside grid models, ``cute.local_tile`` of a global kernel argument with flat modes
        whose strides (or extents) are not static: the tile's origin in the argument's
        coordinates and its static extents (`gmem_ctiles`), for `tile_of`."""
        t = op.operand_types[0] if op.operand_types else ""
        if self.ctx.grid_why is None or "gmem" not in t or len(op.operands) != 3 or \
                len(op.results) != 1:
            return
        info = self.ctx.kernel.value_info.get(op.operands[0])
        layout = layout_text(t)
        if info is None or not info.is_block_arg or info.region != -1 or layout is None:
            return
        rank = _contract_one_to_one(layout)
        tile, coords = _plain_tile(op.operand_types[1]), self.coord_leaves(op.operands[2])
        if rank is None or tile is None or coords is None or not rank == len(tile) == len(coords) or \
                "(" in layout.split(":", 1)[0].strip().strip("()") or \
                static_shape(op.result_types[0]) != tile:
            return
        if any(not isinstance(x, Expr) or opaque_reasons(x) for x in coords):
            return
        self.gmem_ctiles[op.results[0]] = (
            tuple(self.f.binop("*", x, Const(m)) for x, m in zip(coords, tile)), tile)

    def gmem_partition(self, op: Op) -> None:
        """Outside grid models, a thread's part (`partition_S` / `_D` of a universal or cp.async
        tiled copy) of a global tile `gmem_base` places with a flat static layout: it begins at
        the tile's element where the thread's first value lies (coords.thread_offset), so an
        element access of the part is placed for the executing lane."""
        t = op.operand_types[1] if len(op.operand_types) > 2 else ""
        if self.ctx.grid_why is None or "gmem" not in t or len(op.results) != 1 or \
                ct.atom_kind(op.operand_types[0]) not in SAME_LAYOUT_ATOMS:
            return
        at, flat = self.gmem_base(op.operands[1], t), ct.flat_layout(t)
        coord = self.coord_leaves(op.operands[2])
        # (top-level modes of one leaf each: tiler mode j is the tile's mode j)
        if at is None or flat is None or static_shape(t) is None or coord is None or \
                len(coord) != 1 or \
                not isinstance(coord[0], Expr) or opaque_reasons(coord[0]):
            return
        crd = thread_offset(op.operand_types[0], coord[0], self.f)
        if crd is None or len(crd) > len(flat[1]):
            return
        first = at[0]
        for x, d in zip(crd, flat[1]):
            first = self.f.binop("+", first, self.f.binop("*", x, Const(d)))
        self.gmem_tiles[op.results[0]] = (first, at[1])

    def gmem_slice(self, op: Op) -> None:
        """Outside grid models, ``cute.slice`` of a global tensor `gmem_base` places
        (``y[bidx, None]``), flat and static: the modes its coordinate fixes move the first
        element; the ``_`` modes stay."""
        t = op.operand_types[0] if op.operand_types else ""
        if self.ctx.grid_why is None or "gmem" not in t or len(op.operands) != 2 or \
                len(op.results) != 1:
            return
        at, flat = self.gmem_base(op.operands[0], t), ct.flat_layout(t)
        text = ct.int_tuple_value(op.operand_types[1]) or ""
        modes = text.strip("()").split(",") if text and "(" not in text.strip("()") else None
        c = self.val(op.operands[1])
        dynamic = list(c.dynamic) if isinstance(c, SliceCoord) else []
        if at is None or flat is None or modes is None or len(modes) != len(flat[0]) or \
                modes.count("?") != len(dynamic):
            return
        first, keep = at[0], []
        for m, n, d in zip((m.strip() for m in modes), *flat):
            if m == "_":
                keep.append((n, d))
                continue
            x = dynamic.pop(0) if m == "?" else Const(int(m)) if re.fullmatch(r"-?\d+", m) \
                else None
            if not isinstance(x, Expr) or opaque_reasons(x):
                return
            first = self.f.binop("+", first, self.f.binop("*", x, Const(d)))
        if _same_layout(ct.flat_layout(op.result_types[0]), (tuple(n for n, _ in keep),
                                                             tuple(d for _, d in keep))):
            self.gmem_tiles[op.results[0]] = (first, at[1])

    def _lane_free_source(self, vid: int) -> bool:
        """A shared-memory source the same for every lane (a view or stage whose place does
        not depend on the lane)."""
        v = self.val(vid)
        stage = getattr(v, "stage", None)
        if stage is not None and LANE in expr_vars(stage.index):
            return False
        if isinstance(v, View):
            return not any(LANE in expr_vars(x) for x, _ in v.ptr.lin)
        return isinstance(v, Region)

    def _one_value(self, op: Op, vid: Optional[int]) -> tuple[bool, bool]:
        """(every execution of `op` by every lane stores one value, every lane stores one value
        at each trip of the loops around it): a constant; a value the same for every lane
        (lane-free and known) outside loops, or at each trip when every loop around is a
        counted one (`scf.for` whose counter the proof enumerates)."""
        v = self.val(vid) if vid is not None else None
        if isinstance(v, Const):
            return True, True
        if not (isinstance(v, Expr) and LANE not in expr_vars(v) and not opaque_reasons(v)):
            return False, False
        return self._loops_counted(op)

    def _loops_counted(self, op: Op) -> tuple[bool, bool]:
        """(no loop encloses `op`, every loop around it is an `scf.for` with a counted range); a
        `while` loop shown to run at most once is no loop."""
        loops = [a for a in op.ancestors() if a.name in ("scf.for", "scf.while") and
                 a.uid not in self.once_loops]
        return not loops, all(a.name == "scf.for" for a in loops) and \
            len(self._counter_ranges()) == len(self.counters)

    def _counter_ranges(self) -> tuple[tuple[str, int, int], ...]:
        """The enclosing loop counters with constant bounds, lo..hi inclusive."""
        out = []
        for name in self.counters:
            lo, hi = self.index_range(Var(name))
            if lo is not None:
                out.append((name, lo, hi))
        return tuple(out)

    def gmem_base(self, vid: int, type_str: str) -> Optional[tuple[Expr, int]]:
        """(its first element's offset from the kernel argument's, in elements; the argument's
        cosize) of a global tensor that is a kernel argument with a static layout, or a tile of
        one (`local_tile`); None for any other."""
        if vid in self.gmem_tiles:
            return self.gmem_tiles[vid]
        info = self.ctx.kernel.value_info.get(vid)
        flat = self._flat(type_str)
        if info is None or not info.is_block_arg or info.region != -1 or flat is None:
            return None
        if None in flat[0]:
            return Const(0), None
        return Const(0), View(Ptr(None, space="gmem"), flat[0], flat[1], 1).cosize

    def _flat(self, type_str: str):
        """A flat layout with static strides: static extents in grid models (which count the
        argument's cells); outside them an extent may be dynamic (None: places are only
        compared)."""
        flat = ct.flat_layout(type_str)
        if flat is not None or self.ctx.grid_why is None:
            return flat
        layout = layout_text(type_str)
        if layout is None:
            return None
        sh, _, st = layout.partition(":")
        try:
            shape, stride = ct.flatten(ct.parse_shape(sh)), ct.flatten(ct.parse_shape(st))
        except (ValueError, IndexError, TypeError):
            return None
        if len(shape) != len(stride) or None in stride:
            return None
        return tuple(shape), tuple(stride)

    def local_tile(self, op: Op, out) -> None:
        """``cute.local_tile(tensor, tile, coord)`` of a global tensor that `gmem_base` places:
        the tile's first element, when the tensor's modes are flat and static, each tile mode a
        plain extent (``N:1``) that divides its mode, the result the tile's extents on the
        tensor's strides, and each coordinate a known integer (in a grid model, a constant or
        a loop counter inside the tiles: its cells are placed). Any other tile is not placed (its accesses name it)."""
        self.set_unknown_results(op)
        self.coord_tile(op)
        t = op.operand_types[0] if op.operand_types else ""
        if "gmem" not in t or len(op.operands) != 3 or len(op.results) != 1:
            return
        at = self.gmem_base(op.operands[0], t)
        flat, tile = self._flat(t), _plain_tile(op.operand_types[1])
        shape_text = (ct.quoted(t) or [""])[-1].split(":")[0].strip()
        if at is None or flat is None or tile is None or len(tile) != len(flat[0]) or \
                "(" in shape_text.strip("()") or \
                not _same_layout(ct.flat_layout(op.result_types[0]), (tile, flat[1])) or \
                any(n is not None and n % m for n, m in zip(flat[0], tile)):
            return
        coords = self.coord_leaves(op.operands[2])
        if coords is None or len(coords) != len(tile):
            return
        first = at[0]
        for x, n, m, d in zip(coords, flat[0], tile, flat[1]):
            if not isinstance(x, Expr) or opaque_reasons(x):
                return
            lo, hi = self.index_range(x)
            # (outside grid models the place is only compared: any coordinate will do)
            if self.ctx.grid_why is None and (lo is None or lo < 0 or n is None or hi >= n // m):
                return
            first = self.f.binop("+", first, self.f.binop("*", x, Const(m * d)))
        self.gmem_tiles[op.results[0]] = (first, at[1])

    def side_coords(self, vid: int, n: int) -> Optional[list]:
        """The `n` leaves of a flat coordinate `cute.make_coord` made, its dynamic ones as the
        ownership proof reads them (`side_expr`), or None."""
        info = self.ctx.kernel.value_info.get(vid)
        if info is None or info.op is None or info.op.name != "cute.make_coord":
            return None
        text = ct.int_tuple_value(info.op.result_types[0]) or ""
        leaves = re.findall(r"\?|-?\d+", text)
        if "(" in text.strip("()") or len(leaves) != n or \
                leaves.count("?") != len(info.op.operands):
            return None
        ops = iter(info.op.operands)
        return [self.side_expr(next(ops)) if x == "?" else Const(int(x)) for x in leaves]

    def coord_leaves(self, vid: int) -> Optional[list]:
        """The leaves of a flat coordinate `cute.make_coord` made (its static leaves from the
        type, its dynamic ones the op's operands), or None."""
        c = self.val(vid)
        if isinstance(c, Leaves):
            return list(c.items)
        info = self.ctx.kernel.value_info.get(vid)
        if info is None or info.op is None or info.op.name != "cute.make_coord":
            return None
        text = ct.int_tuple_value(info.op.result_types[0]) or ""
        leaves = re.findall(r"\?|-?\d+", text)
        if "(" in text.strip("()") or leaves.count("?") != len(info.op.operands):
            return None
        ops = iter(info.op.operands)
        return [self.expr(next(ops)) if x == "?" else Const(int(x)) for x in leaves]

    def index_range(self, idx: Expr) -> tuple[Optional[int], Optional[int]]:
        """Bounds of an index: a constant, or the counter of an enclosing `for` with constant
        bounds (lo..hi inclusive); (None, None) otherwise."""
        if isinstance(idx, Const):
            return idx.value, idx.value
        if isinstance(idx, Var) and idx.name in self.counters:
            lb, ub = self.counters[idx.name]
            if isinstance(lb, Const) and isinstance(ub, Const) and ub.value > lb.value:
                return lb.value, ub.value - 1
        return None, None

    def atomic_rmw(self, op: Op, out: list) -> None:
        """``atom.inc`` by one thread on a word of global memory that is a kernel argument: a
        global work counter (a dynamic tile scheduler's semaphore), which the grid's other CTAs
        take values from too (syncir ``AtomInc``, ``Kernel.counters``).  Any other atomic, or one
        by more threads, is not modelled."""
        loc = self.loc(op)
        kind = str(op.attrs.get("op", ""))
        pointer = op.operands[0] if op.operands else None
        root = self.argument_root(pointer)
        limit = self.expr(op.operands[1]) if len(op.operands) > 1 else None
        why = None
        if kind.rstrip(">").endswith(" add"):
            if root is not None and self.ctx.word_offset(pointer) is None and \
                    self.ctx.only_data_atomics(root):
                # an add at a place that is no static word (a histogram's bin), on an argument
                # only element accesses and such adds touch: data; its old value is a value the model does not
                # follow (what depends on it is Unsupported), races on the argument NOT CHECKED
                # (outside grid models as an unplaced write: global_write_placed)
                self.set_unknown_results(op)
                if self.ctx.grid_why is None:
                    label = _pointer_name(self.k, pointer) or f"kernel argument {root}"
                    self.ctx.unchecked.append(Unchecked(
                        "race", f"global data {label}", f"the atomic add at {op.loc.short()} "
                        "is at no static word of it: its accesses are not placed", loc))
                return
            self.flag_add(op, pointer, op.operands[1] if len(op.operands) > 1 else None,
                          out, bool(op.results) and self.ctx.used(op.results[0]))
            return
        if kind.rstrip(">").endswith(" exch") and not (op.results and
                                                        self.ctx.used(op.results[0])) and \
                self.ctx.grid_why is None and root is not None and \
                self.ctx.word_offset(pointer) is not None and \
                (root, self.ctx.word_offset(pointer)) in self.ctx.flag_words():
            # an exch whose old value is unused (an unlock) stores into the flag
            self.store_into_flag(op, pointer, op.operands[1], _memory_order(op, "memOrder",
                                                                            "relaxed"),
                                 _memory_scope(op, "syncscope"), out)
            return
        if not kind.rstrip(">").endswith(" inc"):
            if root is not None and self.ctx.grid_why is not None and not any(
                    o.name == "nvvm.atomicrmw" and o.operands and
                    str(o.attrs.get("op", "")).rstrip(">").endswith(" inc") and
                    self.argument_root(o.operands[0]) == root for o in self.k.walk()):
                # outside grid models, an atomic on a kernel argument that is neither is data:
                # its result is a value the model does not follow (what depends on it is
                # Unsupported) and races on the argument are NOT CHECKED (unplaced write). Not
                # on a counter's argument: only atom.inc may change a counter
                self.set_unknown_results(op)
                return
            why = f"atomic {kind or '?'} (atom.inc on a counter and atom.add on a flag are modelled)"
        elif root is None:
            why = "atom.inc on global memory that is not a kernel argument"
        elif self.ctx.word_offset(pointer) != 0:
            why = ("atom.inc on an element of a kernel argument other than its first (the "
                   "counter model has one word per argument)")
        elif limit is None or opaque_reasons(limit) or expr_vars(limit) - set(self.ctx.params):
            why = "atom.inc whose limit is not a launch value"
        elif self.active.count != 1 or not self.active.exact and self.active.leader is None:
            why = f"atom.inc by {self.active.count} threads (each gets its own value)"
        else:
            why = self.ctx.other_writer(root, "counter", "atom.inc")
        if why is not None:
            out.append(Unsupported(f"{op.name}: {why}", loc))
            self.set_unknown_results(op)
            return
        name = f"sem{root}"
        decl = self.ctx.counters.get(name)
        if decl is None:
            label = _pointer_name(self.k, pointer) or f"kernel argument {root}"
            decl = self.ctx.counters[name] = CounterDecl(name, limit, loc, label,
                                                         others=self._other_clusters())
            self.ctx.assumptions.add(
                f"global counter {label} (atom.inc at {op.loc.short()}): it holds 0 when the "
                "kernel starts, only atom.inc changes it, no other kernel argument (nor the "
                "tensor a TMA descriptor argument was made from) aliases it, and the CTAs of the grid outside the "
                "model (any number of them) may take any of its values between two steps")
        elif decl.limit != limit:
            out.append(Unsupported(f"{op.name}: atom.inc on {decl.label} with two different "
                                   "limits", loc))
            self.set_unknown_results(op)
            return
        dest = f"a{op.uid}"
        out.append(AtomInc(dest, name, limit, loc))
        self.env[op.results[0]] = Var(dest)

    def argument_root(self, pointer: Optional[int]) -> Optional[int]:
        """The kernel argument a global pointer (an LLVM pointer cast from a cute pointer) points
        into, or None."""
        return self.ctx.pointer_root(pointer)

    def flag_unsupported(self, what: str, loc: Loc) -> Unsupported:
        """The Unsupported a flag op that is not modelled becomes: a model bound (INCONCLUSIVE)
        when the only reason is a grid larger than a grid model holds."""
        return Unsupported(what, loc, bound=bool(self.ctx.grid_why) and
                           self.ctx.grid_why.startswith("the grid has "))

    def flag_root(self, op: Op, pointer: Optional[int]) -> tuple[Optional[int], Optional[str]]:
        """(kernel argument, None) of the global flag `pointer` points at, or (None, why not)."""
        if self.ctx.grid_why is not None:
            return None, ("flags are modelled only when the model holds every CTA of the grid, "
                          f"and here {self.ctx.grid_why}")
        root = self.argument_root(pointer)
        if root is None:
            return None, "its address is not a kernel argument"
        if self.ctx.word_offset(pointer) is None:
            return None, ("its address is not an element of the kernel argument at a static "
                          "offset (get_iter, add_offset of a constant)")
        why = self.ctx.other_writer(root, "flag", "atomics")
        if why is not None:
            return None, why
        if f"sem{root}" in self.ctx.counters:
            return None, f"kernel argument {root} is also an atom.inc counter"
        return root, None

    def flag_add(self, op: Op, pointer, delta_vid, out: list, result_used: bool) -> None:
        """``atom.add`` / ``red.add`` on a global flag (syncir ``GlobalAdd``); a pending
        ``fence.acq_rel`` of the thread makes a relaxed add a release (PTX 8.7 release pattern)."""
        loc = self.loc(op)
        root, why = self.flag_root(op, pointer)
        delta = self.expr(delta_vid) if delta_vid is not None else None
        if why is None and result_used and not self._one_lane():
            why = (f"its old value is used by {self.active.count} threads (each gets its own; "
                   "one lane's is modelled)")
        if why is None and (delta is None or opaque_reasons(delta)):
            why = "the value added is not one the model follows"
        elif why is None and self._per_lane(delta):
            why = "the value added differs between the lanes that add"
        sem = _memory_order(op, "memOrder", "relaxed")
        scope = _memory_scope(op, "memScope" if op.name == "nvvm.red" else "syncscope")
        if why is None and (sem not in ADD_SEMANTICS or scope not in MEMORY_SCOPES):
            why = f"memory order {sem}, scope {scope}"
        if why is not None:
            out.append(self.flag_unsupported(f"{op.name}: an atomic add on a global flag: "
                                             f"{why}", loc))
            self.set_unknown_results(op)
            return
        if sem in ("relaxed", "acquire") and self.fence_scope is not None:  # fence; add
            sem = "release" if sem == "relaxed" else "acq_rel"
            scope = _narrower(scope, self.fence_scope)
        dest = f"a{op.uid}" if result_used else None
        out.append(GlobalAdd(self.ctx.flag(root, pointer, loc), delta, sem, scope, loc, dest))
        for r in op.results:
            self.env[r] = Var(dest) if dest else opaque(f"{op.name}@{op.loc.short()}")

    def red(self, op: Op, out: list) -> None:
        """``red.add`` (``cute.arch.red``): an add on a global flag; other reductions are not
        modelled."""
        if not re.search(r"[ <]add>?$", str(op.attrs.get("op", ""))) or len(op.operands) < 2:
            out.append(Unsupported(f"{op.name}: reduction {op.attrs.get('op', '?')} (red.add on a "
                                   "flag is modelled)", self.loc(op)))
            return
        self.flag_add(op, op.operands[0], op.operands[1], out, False)

    def llvm_fence(self, op: Op, out: list) -> None:
        """``fence`` with release (acq_rel, sc) at a scope: a relaxed add on a flag after it is a
        release; with acquire, a relaxed spin loop just before it is an acquire (PTX 8.7).  It has no
        other effect in the model (barriers and proxies are ordered by their own ops)."""
        order = str(op.attrs.get("ordering", ""))
        order = LLVM_ORDERINGS.get(order, order)  # the enum's number, or its name
        scope = _memory_scope(op, "syncscope")
        if order in ("release", "acq_rel", "seq_cst"):
            self.fence_scope = scope
        if order in ("acquire", "acq_rel", "seq_cst") and out:  # spin loop / add; fence
            last = out[-1]
            if isinstance(last, GlobalWait) and last.sem != "acquire":
                out[-1] = replace(last, sem="acquire", scope=_narrower(last.scope, scope))
            elif isinstance(last, GlobalLock) and last.sem in ("relaxed", "release"):
                out[-1] = replace(last, sem="acquire" if last.sem == "relaxed" else "acq_rel",
                                  scope=_narrower(last.scope, scope))
            elif isinstance(last, GlobalAdd) and last.dest and last.sem in ("relaxed", "release"):
                out[-1] = replace(last, sem="acquire" if last.sem == "relaxed" else "acq_rel",
                                  scope=_narrower(last.scope, scope))

    def flag_spin(self, op: Op, out: list) -> bool:
        """``while ld(flag) <cmp> target: pass`` (nothing carried, an empty body): a
        ``GlobalWait`` until the negated condition holds.  False when the loop is not that."""
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        loads = [o for o in before.ops if o.name in ("nvvm.load.ext", "nvvm.atomicrmw")]
        if op.operands or op.results or len(loads) != 1 or \
                any(o.name not in ("scf.yield", "nvvm.nanosleep") for o in after.ops):
            return False
        load = loads[0]
        if load.name == "nvvm.atomicrmw":
            return self.lock_spin(op, before, load, out)
        rest = [o for o in before.ops if o is not load and not _spin_address_or_value(o)]
        if [o.name for o in rest] != ["arith.cmpi", "scf.condition"] or \
                before.ops[-2] is not rest[0]:
            return False
        cmp, cterm = rest
        predicate = cmp.attrs.get("predicate")
        rel = CMP.get(predicate)
        if rel is None or list(cterm.operands) != list(cmp.results):
            return False
        unsigned = predicate in UNSIGNED_PREDICATES
        pre: list = []  # (the loop carries nothing: what the condition computes is invariant)
        for o in before.ops:  # the pointer's address and the target's value
            if o is not load and o is not cmp and _spin_address_or_value(o):
                self.op(o, pre)
        value = load.results[0]
        if cmp.operands[1] == value:
            lhs, rhs, rel = cmp.operands[1], cmp.operands[0], SWAPPED[rel]
        else:
            lhs, rhs = cmp.operands
        if lhs != value or rhs == value:
            return False
        out.extend(pre)
        rhs = self.expr(rhs)
        loc = self.loc(op)
        root, why = self.flag_root(load, load.operands[0] if load.operands else None)
        if why is None and unsigned:
            why = "an unsigned comparison (the model compares signed values)"
        if why is None and opaque_reasons(rhs):
            why = "the value it compares with is not one the model follows"
        elif why is None and self._per_lane(rhs):
            why = "the value it compares with differs between the lanes that spin"
        sem = _memory_order(load, "order", "weak")
        scope = _memory_scope(load, "scope")
        if why is None and (sem not in WAIT_SEMANTICS or scope not in MEMORY_SCOPES):
            why = f"memory order {sem}, scope {scope}"
        if why is not None:
            out.append(self.flag_unsupported(f"a spin loop on {load.name} (a global flag): {why}",
                                             loc))
            return True
        out.append(GlobalWait(self.ctx.flag(root, load.operands[0], loc), NEGATED[rel], rhs,
                              sem, scope, loc))
        return True

    def lock_spin(self, op: Op, before, atom: Op, out: list) -> bool:
        """``while atom.cas(flag, cmp, new) != cmp: pass`` (a spin lock), or ``while
        atom.exch(flag, new) != cmp`` (test-and-set) where every write of the flag stores
        `cmp` or `new` (so a failed exch changes nothing): a ``GlobalLock``.  False when the
        loop is not that."""
        kind = str(atom.attrs.get("op", "")).rstrip(">").rsplit(" ", 1)[-1]
        rest = [o for o in before.ops if o is not atom and not _spin_address_or_value(o)]
        if kind not in ("cas", "exch") or [o.name for o in rest] != ["arith.cmpi",
                                                                     "scf.condition"]:
            return False
        cmp, cterm = rest
        if CMP.get(cmp.attrs.get("predicate")) != "!=" or \
                list(cterm.operands) != list(cmp.results) or atom.results[0] not in cmp.operands:
            return False
        for o in before.ops:  # (invariant: the loop carries nothing)
            if o is not atom and o is not cmp and _spin_address_or_value(o):
                self.op(o, out)
        other = cmp.operands[1] if cmp.operands[0] == atom.results[0] else cmp.operands[0]
        want = self.expr(other)
        new = self.expr(atom.operands[-1])
        loc = self.loc(op)
        root, why = self.flag_root(atom, atom.operands[0])
        if why is None and not self._one_lane():
            why = (f"a lock taken by {self.active.count} threads (one wins, the others spin on; "
                   "the model's thread is the warp: one known lane is modelled)")
        if why is None and kind == "cas" and self.expr(atom.operands[1]) != want:
            why = "the loop compares the old value with another value than the one it swaps"
        if why is None and any(opaque_reasons(e) or self._per_lane(e) for e in (want, new)):
            why = "the values it swaps are not ones the model follows"
        if why is None and kind == "exch" and not self._only_writes(atom.operands[0],
                                                                    (want, new)):
            why = ("a test-and-set loop on a flag that other writes may set to a third value "
                   "(a failed exch would change it)")
        sem = _memory_order(atom, "memOrder", "relaxed")
        scope = _memory_scope(atom, "syncscope")
        if why is None and (sem not in ADD_SEMANTICS or scope not in MEMORY_SCOPES):
            why = f"memory order {sem}, scope {scope}"
        if why is not None:
            out.append(self.flag_unsupported(f"a spin loop on atom.{kind} (a lock on a global "
                                             f"flag): {why}", loc))
            return True
        out.append(GlobalLock(self.ctx.flag(root, atom.operands[0], loc), want, new, sem, scope,
                              loc))
        return True

    def _only_writes(self, pointer: int, values: tuple) -> bool:
        """Every store, exch and cas into the flag word `pointer` names writes a constant among
        `values`, and nothing else (an add, another atomic) writes it."""
        word = (self.argument_root(pointer), self.ctx.word_offset(pointer))
        allowed = {v.value for v in values if isinstance(v, Const)}
        if len(allowed) != len(values):
            return False
        for o in self.k.walk():
            if o.name == "nvvm.store.ext" and self.ctx.flag_store_word(o) == word:
                written = [o.operands[0]]
            elif o.name in ("nvvm.atomicrmw", "nvvm.red") and o.operands and \
                    (self.argument_root(o.operands[0]), self.ctx.word_offset(o.operands[0])) == word:
                kind = str(o.attrs.get("op", "")).rstrip(">").rsplit(" ", 1)[-1]
                if o.name == "nvvm.red" or kind not in ("cas", "exch"):
                    return False
                written = [o.operands[-1]]
            else:
                continue
            if any(self.k.int_constant(v) not in allowed for v in written):
                return False
        return True

    def flag_store(self, op: Op, out: list) -> None:
        """``st`` (``cute.arch.store``, any memory order) into a flag word: a ``GlobalStore``;
        a store anywhere else in global memory is a write the rules do not place."""
        if self.ctx.flag_store_word(op) is None:
            return
        self.store_into_flag(op, op.operands[1], op.operands[0],
                             _memory_order(op, "order", "weak"), _memory_scope(op, "scope"), out)

    def store_into_flag(self, op: Op, pointer: int, value_vid: int, sem: str, scope: str,
                        out: list) -> None:
        loc = self.loc(op)
        root, why = self.flag_root(op, pointer)
        value = self.expr(value_vid)
        if why is None and not self._one_lane():
            why = (f"a store by {self.active.count} threads (each a write of its own, which the "
                   "model's one step per warp does not show: one known lane is modelled)")
        if why is None and (opaque_reasons(value) or self._per_lane(value)):
            why = "the value stored is not one the model follows (or differs between lanes)"
        if why is None and (sem not in ("weak", "relaxed", "release") or
                            scope not in MEMORY_SCOPES):
            why = f"memory order {sem}, scope {scope}"
        if why is not None:
            out.append(self.flag_unsupported(f"{op.name}: a store into a global flag: {why}",
                                             loc))
            return
        if sem == "relaxed" and self.fence_scope is not None:  # fence; st.relaxed
            sem, scope = "release", _narrower(scope, self.fence_scope)
        out.append(GlobalStore(self.ctx.flag(root, pointer, loc), value, sem, scope, loc))

    def _other_clusters(self) -> Expr:
        """1 when the grid may have clusters besides the modelled one, 0 when its static shape
        says it has none; a dynamic grid may have any number."""
        if self.k.grid_dim is None:
            return Const(1)
        if self.grid_block is not None:
            return Const(0)
        n = 1
        for d in "xyz":
            n *= self.num_clusters(d, None).value  # a Const: the grid is static
        return Const(1 if n > 1 else 0)


ATOMIC = Effects("write", "may")  # an atomic on global (or shared) memory

HANDLERS = {
    "cute.memref.load": rule(GlobalRules.memref_load, READS),
    "cute.local_tile": rule(GlobalRules.local_tile, NONE),
    "nvvm.atomicrmw": rule(GlobalRules.atomic_rmw, ATOMIC),
    "nvvm.store.ext": rule(GlobalRules.flag_store, ATOMIC),
    "nvvm.red": rule(GlobalRules.red, ATOMIC),
    "llvm.fence": rule(GlobalRules.llvm_fence, NONE),
}
