"""`warpspin explain KIND`: a page for every violation kind (and for INCONCLUSIVE verdicts), and
the command each page gives for its minimal example really reports that kind."""
import os
import re

import pytest

from warpspin.cli import main
from warpspin.report.explain import kinds, page
from warpspin.syncir.trace import BOUND_KINDS, KINDS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = re.compile(r"^\s*(?:\$\s*)?warpspin check (\S+)((?:\s+--param\s+\S+)*)\s*$", re.M)


def test_every_kind_has_a_page():
    assert kinds() == [*KINDS, "reordered", "inconclusive"]
    for k in kinds():
        text = page(k)
        assert text.startswith(f"# {k}\n"), k
        for section in ("## Usual fixes",):
            assert section in text, (k, section)


def test_a_bound_event_shows_the_inconclusive_page():
    for k in BOUND_KINDS:
        assert page(k) == page("inconclusive")


def test_cli_prints_a_page_and_lists_the_kinds(capsys):
    assert main(["explain", "race"]) == 0
    assert capsys.readouterr().out == page("race")
    assert main(["explain"]) == 0
    out = capsys.readouterr().out
    assert all(k in out for k in kinds())
    assert main(["explain", "no-such-kind"]) == 3
    assert "no page for 'no-such-kind'" in capsys.readouterr().err


def _examples():
    for k in KINDS:
        text = page(k) or ""
        for m in COMMAND.finditer(text):
            yield pytest.param(k, m.group(1), m.group(2).split(), id=f"{k}:{m.group(1)}")


@pytest.mark.parametrize("kind,target,params", list(_examples()))
def test_the_example_of_a_page_reports_its_kind(kind, target, params, capsys):
    pytest.importorskip("cutlass")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        main(["check", target, *params, "--jobs", "1", "--timeout", "120"])
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert f"error[{kind}]" in out, out
