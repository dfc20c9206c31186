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
