"""The `warpspin explain` pages: one Markdown page per violation kind (and one for INCONCLUSIVE
verdicts), shipped in the package (warpspin/explain/*.md)."""
from __future__ import annotations

from importlib import resources
from typing import Optional

from ..syncir.trace import BOUND_KINDS, KINDS as MODEL_KINDS

KINDS = (*MODEL_KINDS, "reordered")  # and what the SASS check reports (sass/)


def _dir():
    return resources.files("warpspin").joinpath("explain")


def kinds() -> list[str]:
    """Every kind with a page, in the reports' order (then `inconclusive`)."""
    have = {p.name[:-3] for p in _dir().iterdir() if p.name.endswith(".md")}
    return [k for k in (*KINDS, "inconclusive") if k in have]


def page(kind: str) -> Optional[str]:
    """The page for `kind` (a model-bound event such as `loop-bound` shows the INCONCLUSIVE
    page), or None."""
    name = "inconclusive" if kind in BOUND_KINDS else kind
    if name not in (*KINDS, "inconclusive"):
        return None
    f = _dir().joinpath(f"{name}.md")
    return f.read_text() if f.is_file() else None
