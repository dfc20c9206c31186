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
        assert getattr(walker.WarpWalker, rule.__name__) is rule, op_name
