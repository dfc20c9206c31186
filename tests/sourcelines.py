"""Find the line a test expects a report to point at, by its text (line numbers drift)."""


def line_of(path: str, marker: str) -> int:
    """1-based number of the one code line of `path` containing `marker` (or ending with it, for
    markers in comments). Lines of the examples' EXPECT_AT tables, which quote the markers, and
    string-literal lines do not count."""
    with open(path) as f:
        hits = [i + 1 for i, text in enumerate(f)
                if (text.rstrip().endswith(marker) or marker in text.split("#")[0])
                and "EXPECT_AT" not in text and not text.lstrip().startswith('"')]
    assert len(hits) == 1, f"{marker!r} must appear once in the code of {path}: {hits}"
    return hits[0]
