"""docs/api-coverage.md stays true: every fixture row of the DSL API inventory is re-run and
gives the status and SyncIR the file records (bench/api_coverage.py regenerates it), and every
name the installed DSL exports in the inventory's families is listed."""
import os
import re

import pytest

if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
    pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")

from fixtures.api import all_rows  # noqa: E402
from fixtures.api.inventory import inventory_names, normalized, run_row  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "api-coverage.md")
ROW = re.compile(r"^\| `(?P<name>[^`]*)` \| (?P<spelling>.*) \(`(?P<row>\w+)`\) \| "
                 r"(?P<status>[^|]*(?:\\\|[^|]*)*) \| (?P<syncir>.*) \|$")


def _recorded() -> dict:
    out = {}
    for line in open(DOC):
        m = ROW.match(line.rstrip("\n"))
        if m:
            ops = [o.strip().strip("`").replace("\\|", "|")
                   for o in m["syncir"].split("<br>") if o.strip()]
            out[m["row"]] = (m["status"].split(":")[0], [o for o in ops if not o.startswith("...")])
    return out


RECORDED = _recorded()
ROWS = all_rows()
RAN: dict = {}


def _run(row):
    if row.name not in RAN:
        RAN[row.name] = run_row(row)
    return RAN[row.name]


def test_every_row_is_in_the_file_and_every_name_listed():
    assert {r.name for r in ROWS} == set(RECORDED), "regenerate: python bench/api_coverage.py"
    text = open(DOC).read()
    for fam, name in inventory_names():
        short = name[len(fam) + 1:] if name.startswith(fam + ".") else name
        assert f"| `{short}` |" in text, name


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_row_as_recorded(row):
    o = _run(row)
    status, ops = RECORDED[row.name]
    assert o.status == status, (o.status, o.why)
    assert list(normalized(o.syncir))[:len(ops)] == list(normalized(tuple(ops)))


def test_spellings_of_one_protocol_extract_to_the_same_syncir():
    """The file's count of protocols whose spellings agree is what the rows give now."""
    groups: dict = {}
    for r in ROWS:
        if r.protocol:
            groups.setdefault(r.protocol, []).append(normalized(_run(r).syncir))
    agree = sorted(p for p, g in groups.items() if len(g) > 1 and len(set(g)) == 1)
    m = re.search(r"each spelling of (\d+) of them extracts to the same SyncIR", open(DOC).read())
    assert m and int(m.group(1)) == len(agree), agree
