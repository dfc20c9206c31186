"""What a failing check leaves behind in a test run: the reports on disk and a short message that
names the target, gives the headline and says where the reports are."""
from __future__ import annotations

import json
import os
import re


def write_reports(results, folder: str, what: str) -> str:
    """The text, JSON and HTML reports of `results` in `folder`; the HTML page's path."""
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, re.sub(r"[^\w.-]+", "_", what))
    with open(stem + ".txt", "w") as f:
        f.write("\n".join(str(r) for r in results) + "\n")
    with open(stem + ".json", "w") as f:
        json.dump({"targets": [r.to_dict() for r in results]}, f, indent=2)
    from .html import write_html
    write_html(results, stem + ".html")
    return stem + ".html"


def failure_text(results, html: str, lines: int = 30) -> str:
    """What a failing test prints: each result's headline, the start of the reports of those
    not verified, and where the whole reports are."""
    from .render import headline
    out = [headline(r) for r in results]
    for r in results:
        if r.verdict != "verified":
            text = str(r).splitlines()
            out += ["", *text[:lines]] + ([f"... ({len(text) - lines} more lines in the report)"]
                                          if len(text) > lines else [])
    rel = os.path.relpath(html) if not os.path.relpath(html).startswith("..") else html
    return "\n".join(out + ["", f"report: {rel} (and .txt, .json beside it)"])
