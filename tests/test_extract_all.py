"""The extractor never emits invalid SyncIR (issue 7, hole 4): every kernel the test suite can trace
(``fixtures/catalog.py``: the examples' variants, the regression kernels, quack's GEMMs with their
epilogue variants and other kernels, flash-attn-4's forwards incl. causal and varlen) extracts to
SyncIR that validates, or to an ``ExtractError`` asking for launch values; never an
``ExtractorBug``.  Whatever is not modelled is an ``Unsupported`` at a real source line.

Each kernel is traced once per session (``catalog.traced``), about 1-10 s each."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.dsl
pytest.importorskip("cutlass")

from fixtures import catalog as C  # noqa: E402
from warpspin.extract import ExtractError, extract  # noqa: E402
from warpspin.syncir import (Exit, For, If, Lanes, TmaLoad, Unsupported, While,  # noqa: E402
                             validate)

ENTRIES = C.entries()


def extract_any(k, params):
    """Extract with the entry's params; launch values it still asks for get the value 1 (whether
    the output is valid does not depend on them)."""
    try:
        return extract(k, params=params)
    except ExtractError as e:
        missing = re.findall(r"--param (\w+)=", str(e))
        if not missing:
            raise
        return extract(k, params={**{m: 1 for m in missing}, **params})


def _check_lanes(body, threads, where, inside_lanes=False):
    """Extractor invariants the validator does not state: a lane subset is a subset of the lanes
    around it; only a whole warp exits."""
    for s in body:
        if isinstance(s, Lanes):
            assert 1 <= s.count <= threads, f"{where}: Lanes({s.count}) inside {threads} lanes"
            _check_lanes(s.body, s.count, where, True)
        elif isinstance(s, Exit):
            assert not inside_lanes, f"{where}: Exit inside Lanes at {s.loc}"
        elif isinstance(s, If):
            _check_lanes(s.then, threads, where, inside_lanes)
            _check_lanes(s.else_, threads, where, inside_lanes)
        elif isinstance(s, (For, While)):
            _check_lanes(s.body, threads, where, inside_lanes)


@pytest.mark.parametrize("e", ENTRIES, ids=[e.name for e in ENTRIES])
def test_extracts_to_valid_syncir(e):
    why = C.available(e.group)
    if why:
        pytest.skip(why)
    sk = extract_any(C.traced(e.name), e.params)  # ExtractorBug (invalid SyncIR) fails here
    assert validate(sk) == []
    for p in sk.processes:
        assert 1 <= p.threads <= 32, f"{p.role}: an instance is at most one warp"
        _check_lanes(p.body, p.threads, p.role)
        for s in _walk(p.body):
            if isinstance(s, Unsupported):
                assert s.what and s.loc.line > 0 and s.loc.file != "<unknown>", s
                assert not s.what.startswith("?"), s
            if isinstance(s, TmaLoad):
                assert s.loc.line > 0, s


def _walk(body):
    for s in body:
        yield s
        for b in ((s.then, s.else_) if isinstance(s, If) else
                  (s.body,) if isinstance(s, (For, While, Lanes)) else ()):
            yield from _walk(b)


def test_catalog_covers_the_issue_kernels():
    """The kernels issue 7 names: flash-attn-4 causal and varlen forwards, quack GEMMs with
    epilogue variants, a two-warp kernel whose trip count is read from a global tensor."""
    names = {e.name for e in ENTRIES}
    assert {"fa4.sm90.causal", "fa4.sm90.varlen", "fa4.sm90.varlen_causal", "fa4.sm100.causal",
            "fa4.sm100.varlen", "quack.gemm_sm90.c", "quack.gemm_sm90.rowvec",
            "quack.gemm_sm90.colvec", "quack.gemm_sm90.c_beta_ptr", "loaded_trip_count"} <= names
    assert len([e for e in ENTRIES if e.group == "examples"]) >= 20
