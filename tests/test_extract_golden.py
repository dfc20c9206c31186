"""Golden SyncIR: the extractor on stored traces of real kernels, compared with the printed SyncIR
it gave when the golden file was written.

``tests/fixtures/<name>.json.gz`` is a kernel traced with the real CuTe DSL (``catalog.py`` says
how), ``tests/golden/<name>.syncir`` its extracted SyncIR (``fmt_kernel``).  The golden tests need
no DSL; ``test_fixture_is_current`` traces each kernel again and checks the stored trace is what
the DSL produces today.  After a deliberate change (extractor, printer, an example, a library
version): ``WARPSPIN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_extract_golden.py``
rewrites the fixtures, their params and the golden files; review the diff of tests/golden/.
"""
from __future__ import annotations

import difflib
import gzip
import json
import os

import pytest

from fixtures import catalog as C
from warpspin.extract import extract
from warpspin.frontend import serialize
from warpspin.syncir import fmt_kernel, validate

NAMES = C.golden_names()
MAX_FIXTURE_BYTES = 2 * 1024 * 1024


def _golden_text(name: str, kernel, params) -> str:
    return fmt_kernel(extract(kernel, params=params)) + "\n"


def _diff(want: str, got: str, name: str) -> str:
    lines = list(difflib.unified_diff(want.splitlines(), got.splitlines(), f"golden/{name}",
                                      "extracted", lineterm="", n=2))
    more = f"\n... {len(lines) - 60} more lines" if len(lines) > 60 else ""
    return "\n".join(lines[:60]) + more + (
        "\n(after a deliberate change: WARPSPIN_UPDATE_GOLDEN=1 pytest tests/test_extract_golden.py)")


# ---- with the DSL: the stored traces are what the DSL produces today --------------------------------
def _golden_entries() -> list[str]:
    try:
        return sorted(e.name for e in C.entries() if e.golden)
    except ImportError:  # no DSL here: the stored names are all there is to check
        return NAMES


@pytest.mark.dsl
def test_fixture_set_matches_catalog():
    pytest.importorskip("cutlass")
    assert _golden_entries() == NAMES or C.UPDATE, (
        "catalog entries with golden=True and stored fixtures differ: "
        f"missing {sorted(set(_golden_entries()) - set(NAMES))}, "
        f"extra {sorted(set(NAMES) - set(_golden_entries()))}")


@pytest.mark.dsl
@pytest.mark.parametrize("name", _golden_entries())
def test_fixture_is_current(name):
    pytest.importorskip("cutlass")
    e = C.entry(name)
    why = C.available(e.group)
    if why:
        pytest.skip(why)
    k = C.traced(name)
    fresh = serialize.to_dict(k, C.path_map)
    if C.UPDATE:
        os.makedirs(C.FIXTURES, exist_ok=True)
        os.makedirs(C.GOLDEN, exist_ok=True)
        serialize.save(k, C.fixture_path(name), C.path_map)
        params = C.golden_params()
        params[name] = e.params
        with open(os.path.join(C.FIXTURES, "params.json"), "w") as f:
            json.dump({n: params[n] for n in sorted(params)}, f, indent=1, sort_keys=True)
            f.write("\n")
        with open(C.golden_path(name), "w") as f:
            f.write(_golden_text(name, serialize.load(C.fixture_path(name)), e.params))
        return
    assert os.path.exists(C.fixture_path(name)), f"no fixture for {name}"
    with open(C.fixture_path(name), "rb") as f:
        stored = json.loads(gzip.decompress(f.read()))
    assert stored == json.loads(json.dumps(fresh)), (
        f"the stored trace of {name} differs from what the DSL traces today "
        "(regenerate: WARPSPIN_UPDATE_GOLDEN=1 pytest tests/test_extract_golden.py)")
    assert C.golden_params().get(name, {}) == e.params


# ---- without the DSL: extract the stored traces --------------------------------------------------
def test_fixtures_are_small():
    sizes = {n: os.path.getsize(C.fixture_path(n)) for n in NAMES}
    assert len(NAMES) >= 20, NAMES
    assert sum(sizes.values()) < MAX_FIXTURE_BYTES, sizes


@pytest.mark.parametrize("name", NAMES)
def test_golden(name):
    k = serialize.load(C.fixture_path(name))
    params = C.golden_params().get(name, {})
    sk = extract(k, params=params)
    assert validate(sk) == []
    got = fmt_kernel(sk) + "\n"
    if C.UPDATE:
        with open(C.golden_path(name), "w") as f:
            f.write(got)
        return
    with open(C.golden_path(name)) as f:
        want = f.read()
    assert got == want, _diff(want, got, name)


@pytest.mark.parametrize("name", NAMES)
def test_fixture_round_trips(name):
    """Stored traces load into the same kernel they were written from (every op, type, attribute
    and location), so the golden tests see what the DSL traced."""
    with open(C.fixture_path(name), "rb") as f:
        data = f.read()
    k = serialize.loads(data)
    assert serialize.dumps(k) == data
    assert k.value_info and all(o.uid >= 0 for o in k.walk())
