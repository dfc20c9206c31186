"""Verdict predicates shared by tests."""
from __future__ import annotations


GLOBAL_OBJECTS = ("global data ", "global memory", "the global tensor of TMA descriptor")


def is_global_memory(what: str) -> bool:
    """An `Unchecked`'s object that is global memory the kernel writes (extract/ownership.py)."""
    return what.startswith(GLOBAL_OBJECTS)


def verified_but_global_memory(r) -> bool:
    """Every default property checked on every object but the global memory the kernel writes,
    where threads of the grid were not shown apart (extract/ownership.py), and nothing found:
    the verdict a kernel storing its output by TMA or a copy gets."""
    unchecked = r.config.get("unchecked", ())
    return r.outcome == "not-checked" and bool(unchecked) and all(
        u.startswith("races on ") and is_global_memory(u[len("races on "):]) for u in unchecked)


def check_output_form(output, form: str, verified: bool, why: str = "") -> str:
    """Checks the kernel `output(form)` returns (fixtures/owned_outputs.py and alike): VERIFIED,
    or races NOT CHECKED on `out` with `why` in the headline and deadlock freedom alone still
    VERIFIED. The verdict's text."""
    from warpspin.api import CheckOptions, _check_jit, verify

    fn, args = output(form)
    r = verify(fn, *args)
    if verified:
        assert r.outcome == "verified", str(r)
        return str(r)
    assert r.outcome == "not-checked", str(r)
    first = str(r).splitlines()[1]
    assert "races NOT CHECKED on global data out" in first and why in first, first
    alone, = _check_jit(fn, args, CheckOptions(properties=("deadlock",)), form)
    assert alone.outcome == "verified", str(alone)
    return str(r)
