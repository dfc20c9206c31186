"""The HTML report (`--html`): real runs rendered, then loaded in headless Chromium (Debian's
`chromium`, driven by Playwright): the lanes, the steps, the blocked warps, the detail panel of a
step, no network; a screenshot is taken (WARPSPIN_UPDATE_SCREENSHOT=1 also writes the README's
docs/report-violation.png)."""
import os
import shutil

import pytest

from warpspin.api import CheckOptions, check_target
from warpspin.cli import main
from warpspin.report.html import render_html, write_html

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _check(target: str, **kw):
    (r,) = list(check_target(os.path.join(ROOT, target), CheckOptions(jobs=1, **kw)))
    return r


def _dsl_violation(target: str, **kw):
    pytest.importorskip("cutlass")
    r = _check(target, **kw)
    assert r.verdict == "violation", str(r)
    return r


@pytest.fixture(scope="module")
def violation():
    return _dsl_violation("examples/raw_mbarrier.py:missing_arrive")


@pytest.fixture(scope="module")
def ring_bug():
    r = _check("examples/syncir_ring.py:ring_missing_release")
    assert r.verdict == "violation"
    return r


@pytest.fixture(scope="module")
def verified():
    r = _check("examples/syncir_ring.py:ring_correct")
    assert r.verdict == "verified"
    return r


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (make setup installs it as root)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda q: requests.append(q.url))
    page.goto("file://" + str(path))
    return page, errors, requests


def test_the_barrier_column_adds_up_to_the_blocked_state(violation):
    """The barriers each step changed, applied in order, end where the diagnosis says the
    barrier of each blocked warp stands."""
    v = violation.violations[0]
    state = {}
    for t in v.trace:
        for b in t.barriers:
            state[b.barrier] = b
    for b in v.blocked:
        assert b.barrier in state, b
        assert state[b.barrier].phase == b.phase
        assert state[b.barrier].pending_arrivals == b.pending_arrivals
        assert state[b.barrier].expected_arrivals == b.expected_arrivals


def test_violation_page_in_chromium(browser, violation, ring_bug, tmp_path):
    path = tmp_path / "report.html"
    write_html([violation, ring_bug], str(path))
    page, errors, requests = _open(browser, path)
    for n, r in enumerate((violation, ring_bug)):
        v = r.violations[0]
        section = page.locator(f"section#r{n}")
        heads = section.locator(".lane-head[data-lane]")
        assert heads.count() >= 1 and section.locator(".step").count() == len(v.trace)
        # every blocked warp in the end row, in its role's lane, with its barrier
        assert section.locator(".blocked").count() >= 1
        for b in v.blocked:
            cell = section.locator(f".blocked [data-blocked~='{b.process}']")
            assert cell.count() == 1 and b.barrier in cell.inner_text()
        # a deadlock's steps are not painted red line by line: its blocked waits are the end row
        assert section.locator(".step.culprit").count() == 0
    # a click shows the step's source line, its library frame and the barriers' state
    v = violation.violations[0]
    last = v.trace[-1]
    page.locator(f"#s0_{last.step}").click()
    detail = page.locator("#detail")
    assert detail.is_visible()
    text = detail.inner_text()
    with open(last.file) as f:
        source = f.read().splitlines()[last.line - 1].strip()
    assert source in text and last.op in text
    assert "barriers after this step" in text and v.blocked[0].barrier in text
    assert errors == []
    assert all(u.startswith("file://") for u in requests), requests  # no network
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("WARPSPIN_UPDATE_SCREENSHOT"):
        import dataclasses
        os.chdir(ROOT)
        shown = dataclasses.replace(violation, target=os.path.relpath(violation.target, ROOT))
        page2, _, _ = _open(browser, _single(shown, tmp_path))
        page2.locator(f"#s0_{last.step}").click()
        page2.screenshot(path=os.path.join(ROOT, "docs", "report-violation.png"), full_page=True)


@pytest.fixture(scope="module")
def wide():
    """Nine warps in three roles: the page of issue 35's screenshot (the happens-before engine's
    interleaving: SPIN's BFS cannot shorten it within its 20 s, so it would only wait)."""
    return _dsl_violation("examples/hopper_pipeline.py:wrong_arrive_count", engine="hb")


def test_the_blocked_lanes_fit_the_first_viewport(browser, wide, tmp_path):
    """At 1400x900: the lane of every blocked warp, the async lane and the barrier column are
    on screen without scrolling sideways, the end row (the blocked waits) shows first, the
    headers stay on top while the lanes scroll, and no involved box cuts its text."""
    path = tmp_path / "wide.html"
    write_html([wide], str(path))
    page, errors, _ = _open(browser, path)
    v = wide.violations[0]
    for b in v.blocked:
        box = page.locator(f".blocked [data-blocked~='{b.process}']").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1400, (b.process, box)
        assert box["y"] < 900, (b.process, box)
    heads = page.locator(".lanes .lane-head")
    for n in range(heads.count()):
        box = heads.nth(n).bounding_box()
        assert box["x"] + box["width"] <= 1400, (heads.nth(n).inner_text(), box)
    assert "async" in heads.all_inner_texts()[-2] and "barriers" in heads.all_inner_texts()[-1]
    # headers stay visible: scroll the lanes to the middle
    grid = page.locator(".lanes")
    top = grid.bounding_box()["y"]
    grid.evaluate("g => g.scrollTop = g.scrollHeight / 2")
    assert abs(heads.first.bounding_box()["y"] - top) < 2
    missing = page.locator(".lanes .missing").inner_text()  # the arrivals the deadlock lacks
    assert "ab.empty[stage 0]: 248 of 256 arrivals missing" in missing, missing
    box = page.locator(".lanes .missing").bounding_box()
    assert box["x"] + box["width"] <= 1400
    cut = page.evaluate("""() => [...document.querySelectorAll('.lanes .step, .lanes .bars')]
        .filter(e => e.offsetParent && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)""")
    assert cut == [], cut
    assert errors == []


def test_a_race_highlights_its_step_not_its_line(browser, tmp_path):
    r = _dsl_violation("examples/cluster_grouped_multicast.py:odd_group")
    v = r.violations[0]
    path = tmp_path / "race.html"
    write_html([r], str(path))
    page, errors, _ = _open(browser, path)
    culprit = page.locator(".step.culprit")
    assert culprit.count() == 1 and culprit.get_attribute("id") == f"s0_{v.trace[-1].step}"
    assert errors == []


def test_a_happens_before_race_shows_the_unordered_pair_and_the_chain(browser, tmp_path):
    """The store into the peer comes after the arrive that hands it over: the page names both
    ops and the synchronization the load had, and why it does not order the store."""
    r = _dsl_violation("examples/dsmem_handoff.py:store_after_arrive")
    (v,) = r.violations
    assert v.unordered and "is not ordered before" in v.unordered[0].message
    assert any("comes after" in n.message and "mbarrier.arrive" in n.message
               for n in v.unordered), v.unordered
    path = tmp_path / "hb.html"
    write_html([r], str(path))
    page, errors, _ = _open(browser, path)
    box = page.locator(".hb")
    assert box.count() == 1
    text = box.inner_text()
    from sourcelines import line_of
    src = "examples/dsmem_handoff.py"
    store = line_of(src, "cute.arch.inline_ptx(ST_CLUSTER, read_only_args=[Int32(remote.toint()), value])")
    read = line_of(src, "# the hand-off's read")
    assert f"dsmem_handoff.py:{store}" in text and f"dsmem_handoff.py:{read}" in text, text
    assert "is not ordered before" not in page.locator(".diag").inner_text()  # shown once
    assert errors == []


def _single(r, tmp_path):
    path = tmp_path / "single.html"
    write_html([r], str(path))
    return path


def test_verified_page_shows_roles_barriers_and_the_diagram(browser, verified, tmp_path):
    path = tmp_path / "verified.html"
    write_html([verified], str(path))
    page, errors, _ = _open(browser, path)
    roles = {(l["role"], l["cta"]) for l in verified.model["lanes"]}
    assert page.locator("table.roles tr").count() == len(roles) + 1
    assert page.locator("table.barriers tr").count() == len(verified.model["barriers"]) + 1
    edges = page.locator("svg.graph line.edge")
    assert page.locator("svg.graph line.edge.arrives").count() >= 1
    assert page.locator("svg.graph line.edge.waits").count() >= 1
    want = {(e["role"], e["barrier"], e["relation"]) for e in verified.model["edges"]
            if e["relation"] in ("arrives", "waits")}
    assert edges.count() == len(want)
    shown = page.locator("svg.graph text.role").all_text_contents()
    assert sorted(shown) == sorted({r for r, _ in roles})
    assert "decided by the happens-before engine" in page.locator("dl.kv").inner_text()
    assert errors == []


def test_a_pipelines_full_and_empty_barriers_are_two_nodes(browser, tmp_path):
    """One array holds both; the page names each group as the code does."""
    pytest.importorskip("cutlass")
    r = _check("examples/hopper_pipeline.py:correct", load_races=False, engine="spin",
               timeout_s=120)
    path = tmp_path / "pipeline.html"
    write_html([r], str(path))
    page, errors, _ = _open(browser, path)
    nodes = page.locator("svg.graph text.barrier").all_text_contents()
    assert "ab.full" in nodes and "ab.empty" in nodes, nodes
    assert "--no-load-races" in page.locator("dl.kv").inner_text()  # what was not checked
    assert errors == []


def test_page_is_self_contained_and_escaped(violation):
    text = render_html([violation])
    assert "<script src" not in text and "<link" not in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text
    assert text.count("<script") == 2  # the data and the page's own script, both inline


def test_unsupported_and_inconclusive_pages_name_the_reason(tmp_path):
    from warpspin.report.result import Location, Result
    r = Result(target="k.py:f", kernel="k", verdict="unsupported",
               reasons=["`tcgen05.commit` matters for synchronization and is not modelled"],
               reason_locations=[Location(os.path.join(ROOT, "examples", "raw_mbarrier.py"), 72)])
    text = render_html([r])
    assert "UNSUPPORTED" in text and "tcgen05.commit" in text and "raw_mbarrier.py:72" in text
    assert "cute.arch.mbarrier_wait" in text  # the source line is shown


def test_cli_writes_the_page(tmp_path, monkeypatch):
    """The README's command, as written there."""
    pytest.importorskip("cutlass")
    monkeypatch.chdir(ROOT)
    out = tmp_path / "report.html"
    status = main(["check", "examples/raw_mbarrier.py:missing_arrive", "--html", str(out)])
    assert status == 1
    text = out.read_text()
    assert "VIOLATION" in text and 'class="lanes"' in text and "error[deadlock]" in text


def test_an_unwritable_report_path_is_an_error_not_a_traceback(tmp_path, capsys):
    """Found before the check, not after it."""
    status = main(["check", os.path.join(ROOT, "examples/syncir_ring.py:ring_correct"), "--jobs",
                   "1", "--html", str(tmp_path / "no-such-dir" / "r.html")])
    assert status == 3
    out = capsys.readouterr()
    assert "no writable folder" in out.err and "VERIFIED" not in out.out
