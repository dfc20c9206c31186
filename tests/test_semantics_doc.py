"""docs/semantics.md holds the op and object tables generated from their definitions."""
import os

from warpspin.syncir.doc import generated_sections, update
from warpspin.syncir.ops import OPS

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "semantics.md")


def test_generated_tables_are_current():
    text = open(DOC).read()
    assert update(text) == text, ("docs/semantics.md is stale: run "
                                  "python -m warpspin.syncir.doc docs/semantics.md")


def test_every_op_is_in_the_table():
    text = open(DOC).read()
    for (begin, end), body in generated_sections().items():
        assert begin in text and end in text
    for mnemonic in OPS:
        assert f"| `{mnemonic}` |" in text, mnemonic
