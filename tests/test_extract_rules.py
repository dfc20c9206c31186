"""The walker's dispatch table is assembled from the op tables of its rule families
(extract/rules/*.py, and the walker's own for structured control flow): no MLIR op is in two of
them, and every op of the assembled table comes from exactly one."""
import importlib
import pkgutil

from warpspin.extract import rules, walker


def _family_modules():
    return {m.name: importlib.import_module(f"{rules.__name__}.{m.name}")
            for m in pkgutil.iter_modules(rules.__path__)}


def test_every_rules_module_is_a_family():
    modules = _family_modules()
    assert modules, "no rule modules"
    for name, mod in modules.items():
        assert isinstance(getattr(mod, "HANDLERS", None), dict), name
        assert walker.FAMILIES[name] is mod.HANDLERS, name
    assert set(walker.FAMILIES) == set(modules) | {"control flow"}


def test_no_op_in_two_families():
    seen: dict[str, str] = {}
    for family, table in walker.FAMILIES.items():
        for op_name in table:
            assert op_name not in seen, f"{op_name} is in {seen[op_name]} and {family}"
            seen[op_name] = family


def test_every_handler_from_exactly_one_family():
    for op_name, rule in walker.HANDLERS.items():
        owners = [family for family, table in walker.FAMILIES.items() if op_name in table]
        assert len(owners) == 1, (op_name, owners)
        assert walker.FAMILIES[owners[0]][op_name] is rule, op_name
    assert set(walker.HANDLERS) == {op for table in walker.FAMILIES.values() for op in table}


def test_rules_are_walker_methods():
    """Every rule is the WarpWalker method of its name (a mixin's, not shadowed by another)."""
    for op_name, rule in walker.HANDLERS.items():
        assert getattr(walker.WarpWalker, rule.handle.__name__) is rule.handle, op_name


def test_every_rule_declares_its_effects():
    """Each table entry is its handler and the effects it declares (effects.py): what the op
    may do to shared and global memory and through cluster addresses; the cross-cutting pass
    reads nothing else."""
    from warpspin.extract.effects import Effects, Rule
    from warpspin.frontend.mlir_data import Op
    for op_name, rule in walker.HANDLERS.items():
        assert isinstance(rule, Rule), op_name
        assert isinstance(rule.of(Op(op_name)), Effects), op_name


def test_effects_of_ops_without_rules():
    """A value op has the effects its allow-list entry declares; the layout algebra and pure
    dialects touch nothing; an op no table names may do anything (UNKNOWN)."""
    from warpspin.extract.effects import NONE, READS, UNKNOWN
    from warpspin.frontend.mlir_data import Op
    eff = walker.effects_of
    assert eff(Op("llvm.store")).global_write == "may" and eff(Op("llvm.store")).shared == "write"
    assert eff(Op("llvm.load")) == READS and eff(Op("nvvm.load.ext")) == READS
    assert eff(Op("llvm.getelementptr")) == NONE and eff(Op("arith.addi")) == NONE
    assert eff(Op("cute.local_tile")) == NONE and eff(Op("nvvm.read.ptx.sreg.tid.x")) == NONE
    assert eff(Op("gpu.barrier")) == UNKNOWN
    assert eff(Op("cute.memref.frobnicate",
                  operand_types=["!cute.memref<f32, smem, \"4:1\">"])) == UNKNOWN
    # decided per op: inline PTX writes global memory only when its text stores
    assert eff(Op("llvm.inline_asm", attrs={"asm_string": "mul.hi.u32 $0, $1, $2;"})
               ).global_write == "none"
    assert eff(Op("llvm.inline_asm", attrs={"asm_string": "st.global.b32 [$0], $1;"})
               ).global_write == "may"


def test_an_op_with_no_rule_is_unsupported_by_construction():
    """No fall-through: an op no table names is Unsupported, naming it, unless it is a value op
    of the allow-list (a side-effect-free dialect, a cute op with no memory operand or that only
    reads memory, or one named in VALUE_OPS)."""
    from warpspin.frontend.mlir_data import Op
    why = walker.unknown_op_why
    assert why(Op("arith.remf")) is None and why(Op("math.sin")) is None
    assert why(Op("cute.make_layout", operand_types=["!cute.shape<\"(4,8)\">"])) is None
    assert why(Op("cute.get_iter", operand_types=["!cute.memref<f32, smem, \"4:1\">"])) is None
    assert why(Op("llvm.store")) is None and why(Op("nvvm.match.sync")) is None
    # a cute op on memory that is neither a known reader nor a handled op
    mem = why(Op("cute.memref.frobnicate", operand_types=["!cute.memref<f32, smem, \"4:1\">"]))
    assert mem is not None and "cute.memref.frobnicate" in mem
    # any other dialect's op: by name only
    for name in ("nvvm.barrier.cta.sync.new", "llvm.call_intrinsic", "gpu.barrier",
                 "vector.store", "memref.store"):
        assert why(Op(name)) is not None, name


def test_the_walker_emits_unsupported_for_an_unknown_op():
    from warpspin.frontend.mlir_data import Op
    from warpspin.syncir.ops import Unsupported
    w = walker.WarpWalker.__new__(walker.WarpWalker)
    w.env = {}
    emitted = []

    class _Ctx:
        smem_writes, smem_uses, accumulators = [], [], {}
        grid_why = None  # (outside grid models the walker also records unplaced global writes)

        def writes_descriptor_memory(self, op):
            return False
    w.ctx = _Ctx()
    w.loc = lambda op: None
    w.set_unknown_results = lambda op: None
    w.fence_scope = None
    w.smem_writes_of = w.smem_uses_of = lambda op: None
    w.tensormap_asm = lambda op: False
    w.op(Op("gpu.barrier"), emitted)
    assert len(emitted) == 1 and isinstance(emitted[0], Unsupported) and \
        "gpu.barrier" in emitted[0].what


def test_try_wait_with_a_time_limit_is_a_test_of_the_phase():
    """`mbarrier.try_wait.parity.timelimit` (the DSL's experimental nvvm_wrapper
    mbarrier_try_wait_parity) is a test of the phase, as `cute.arch.mbarrier_try_wait`; with
    relaxed order it acquires nothing and is refused, naming the op."""
    import pytest
    pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.experimental.primitives import nvvm_wrapper as nw
    from conformance.mbarrier import TryWaitTimeLimit
    from warpspin.extract import extract
    from warpspin.frontend import trace
    from warpspin.syncir.ir import walk_stmts
    from warpspin.syncir.ops import MbarTestWait, Unsupported

    def ops(lit):
        (tk,) = trace(lit, *lit.args_cpu(), arch=lit.arch)
        return [s for p in extract(tk).processes for s in walk_stmts(p.body)]
    got = ops(TryWaitTimeLimit())
    assert sum(isinstance(s, MbarTestWait) for s in got) == 2
    assert not any(isinstance(s, Unsupported) for s in got)

    class Relaxed(TryWaitTimeLimit):
        @cute.jit
        def body(self):
            self.init(1)
            if self.warp == 0:
                self.observe(0, nw.mbarrier_try_wait_parity(self.bar(0), 0, time_limit=1000,
                                                            order=nw.MemOrder.RELAXED))
    bad = [s for s in ops(Relaxed()) if isinstance(s, Unsupported)]
    assert bad and "timelimit with relaxed order" in bad[0].what, bad


def test_syncir_ir_does_not_import_the_ops():
    """The imports go one way: syncir/ops/ imports syncir/ir.py, which imports no op at module
    level (an op named from it is looked up lazily, for code written before the split)."""
    import ast
    import os
    import warpspin.syncir.ir as ir
    tree = ast.parse(open(ir.__file__).read())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not [n for n in top if isinstance(n, ast.ImportFrom) and (n.module or "") == "ops"]
    from warpspin.syncir.ir import MbarInit  # noqa: F401  (still importable from here)
    assert "MbarInit" not in vars(ir) and os.path.basename(ir.__file__) == "ir.py"
