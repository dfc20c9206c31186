"""Verdict predicates shared by tests."""
from __future__ import annotations


def verified_but_global_memory(r) -> bool:
    """Every default property checked on every object but the global memory the kernel writes,
    where threads of the grid were not shown apart (extract/ownership.py), and nothing found:
    the verdict a kernel storing its output by TMA or a copy gets."""
    unchecked = r.config.get("unchecked", ())
    return r.outcome == "not-checked" and bool(unchecked) and all(
        u.startswith(("races on global data ", "races on global memory ",
                      "races on the global tensor of TMA descriptor")) for u in unchecked)
