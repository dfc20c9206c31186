"""The SASS check (`warpspin sass`, `check --sass`): listings parsed, paths searched with the
predicates ELECT and comparisons set, every reported path replayed, and the two listings of
seed 004 (DeepGEMM PR #343) and kgrouped_tensormap compiled by the real DSL on the CPU."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from warpspin.report.render import render_text
from warpspin.sass.check import check_function
from warpspin.sass.listing import parse
from warpspin.sass.obligations import Obligation, Selector
from warpspin.sass.run import check_listing, load_obligations
from sass_listings import nvdisasm as _nv

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "sass"
PY = sys.executable


def _ob(first, fence, then, entry=False, form="between"):
    return Obligation("t", "race", "t", Selector("first", first, entry=entry),
                      Selector("fence", fence) if fence else None, Selector("then", then),
                      form=form)


def _check(body: str, ob):
    f = parse(_nv(body))[0]
    return check_function(f, [ob], [f]).results[0]


# -- the seed's listings ---------------------------------------------------------------------------
def test_seed_listing_with_the_warp_sync_keeps_the_order():
    (r,) = check_listing(str(FIX / "seed004_warp_sync.sass"), str(FIX / "seed004.toml"))
    assert r.verdict == "verified", render_text(r)
    assert r.config["sass"]["obligations"][0]["instructions"] == [16, 0, 2]


def test_seed_listing_with_the_thread_fence_is_reported_with_its_addresses():
    (r,) = check_listing(str(FIX / "seed004_thread_fence.sass"), str(FIX / "seed004.toml"))
    assert r.verdict == "violation"
    v = r.violations[0]
    assert v.kind == "reordered"
    text = render_text(r)
    for addr in ("0x32c0", "0x32d0", "0x32e0", "0x3450", "0x3460", "0x3480", "0x34a0", "0x34c0",
                 "0x34d0", "0x3510", "0x35a0"):
        assert addr in text, text
    for addr in ("0x35e0", "0x3620", "0x3680"):  # the stores after the DEPBAR
        assert addr not in text


def test_cli_listing_exit_codes_and_json(tmp_path):
    def run(listing, *extra):
        return subprocess.run([PY, "-m", "warpspin.cli", "sass", "--listing", str(listing),
                               "--obligations", str(FIX / "seed004.toml"), *extra],
                              capture_output=True, text=True, cwd=ROOT)
    ok = run(FIX / "seed004_warp_sync.sass")
    assert ok.returncode == 0 and "ORDER KEPT" in ok.stdout, ok.stdout + ok.stderr
    bad = run(FIX / "seed004_thread_fence.sass", "--json", "--sarif", str(tmp_path / "s.sarif"),
              "--html", str(tmp_path / "s.html"))
    assert bad.returncode == 1, bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["targets"][0]["violations"][0]["kind"] == "reordered"
    sarif = json.loads((tmp_path / "s.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"] == "reordered"
    assert "reordered" in (tmp_path / "s.html").read_text()
    usage = subprocess.run([PY, "-m", "warpspin.cli", "sass", "--listing", "x.sass"],
                           capture_output=True, text=True, cwd=ROOT)
    assert usage.returncode == 3


def test_obligation_files_are_checked(tmp_path):
    p = tmp_path / "o.toml"
    p.write_text('[[obligation]]\nname = "x"\nthen = "STG"\n')
    with pytest.raises(ValueError, match="no fence"):
        load_obligations(str(p))
    p.write_text("")
    with pytest.raises(ValueError, match="no \\[\\[obligation\\]\\]"):
        load_obligations(str(p))
    p.write_text('[[obligation]]\nname = "x"\nfence = "DEPBAR("\nthen = "STG"\n')
    with pytest.raises(ValueError, match="not a regular expression"):
        load_obligations(str(p))
    (r,) = check_listing(str(tmp_path / "missing.sass"), str(FIX / "seed004.toml"))
    assert r.verdict == "error" and "missing.sass" in r.reasons[0]


# -- parsing --------------------------------------------------------------------------------------
def test_cuobjdump_listing_with_absolute_targets():
    text = """
        Function : k
        /*0000*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;   /* 0x0 */
        /*0010*/               @P0 BRA 0x40 ;                            /* 0x0 */
        /*0020*/                   DEPBAR.LE SB0, 0x0 ;                  /* 0x0 */
        /*0030*/                   STG.E [R2.64], R4 ;                   /* 0x0 */
        /*0040*/                   EXIT ;                                /* 0x0 */
    """
    (f,) = parse(text)
    assert f.name == "k" and [i.addr for i in f.instrs] == [0, 0x10, 0x20, 0x30, 0x40]
    assert f.instrs[1].pred == "P0" and f.instrs[1].target() == "0x40"
    r = check_function(f, [_ob("ISETP", r"DEPBAR\.LE SB0", "STG")], [f]).results[0]
    assert r.status == "holds"


def test_nvdisasm_line_information_is_kept():
    text = ('//--------------------- .text.k ------\n'
            '\t//## File "/x/k.py", line 12\n'
            '        /*0000*/                   STG.E.128 desc[UR4][R2.64+0x10], R4 ;\n')
    (f,) = parse(text)
    i = f.instrs[0]
    assert (i.file, i.line, i.opcode, i.operands) == ("/x/k.py", 12, "STG.E.128",
                                                     ("desc[UR4][R2.64+0x10]", "R4"))


# -- the search -----------------------------------------------------------------------------------
LOOP = """
.L_top:
    ELECT P0, URZ, PT
    @!P0 BRA `(.L_skip)
    DEPBAR.LE SB0, 0x0
.L_skip:
    ELECT P0, URZ, PT
    @!P0 BRA `(.L_after)
    STG.E [R2.64], R4
.L_after:
    UTMALDG.2D [UR12], [UR8]
    ISETP.NE.AND P1, PT, R5, RZ, PT
    @P1 BRA `(.L_top)
    EXIT
"""
TENSORMAP = (r"UTMALDG", r"DEPBAR\.LE SB0", r"STG")


def test_the_elected_lane_is_the_same_at_every_elect():
    """The lane that skips the wait skips the stores too (kgrouped_tensormap's correct SASS)."""
    assert _check(LOOP, _ob(*TENSORMAP)).status == "holds"


def test_a_store_above_the_wait_is_found_and_replayed():
    moved = LOOP.replace("    DEPBAR.LE SB0, 0x0\n.L_skip:", "    STG.E [R2.64+0x8], R6\n"
                         "    DEPBAR.LE SB0, 0x0\n.L_skip:")
    r = _check(moved, _ob(*TENSORMAP))
    assert r.status == "violated"
    assert [i.opcode for i in (r.path[0], r.path[-1])] == ["UTMALDG.2D", "STG.E"]
    assert r.path[-1].operands[0] == "[R2.64+0x8]"


def test_two_different_comparisons_are_not_assumed_equal():
    """Without ELECT the two guards are different comparisons: a path may take the store and
    skip the wait."""
    two = LOOP.replace("ELECT P0, URZ, PT\n    @!P0 BRA `(.L_skip)",
                       "ISETP.NE.AND P0, PT, R7, RZ, PT\n    @!P0 BRA `(.L_skip)")
    assert _check(two, _ob(*TENSORMAP)).status == "violated"
    same = LOOP.replace("ELECT P0, URZ, PT\n    @!P0 BRA `(.L_after)", "@!P0 BRA `(.L_after)")
    same = same.replace("ELECT P0, URZ, PT\n    @!P0 BRA `(.L_skip)",
                        "ISETP.NE.AND P0, PT, R7, RZ, PT\n    @!P0 BRA `(.L_skip)")
    assert _check(same, _ob(*TENSORMAP)).status == "holds"


def test_a_fence_a_predicate_may_skip_is_neither_a_pass_nor_a_reorder():
    """Whether the predicate lets the wait run may be what orders the path (a try_wait whose
    success skips the wait): undecided. Without the predicate the order holds; with the store
    above it, the path is a reorder whatever the predicate."""
    body = "UTMALDG.2D [UR12], [UR8]\n@P3 DEPBAR.LE SB0, 0x0\nSTG.E [R2.64], R4\nEXIT"
    r = _check(body, _ob(*TENSORMAP))
    assert r.status == "inconclusive" and "a predicate may skip" in r.reason
    assert _check(body.replace("@P3 ", ""), _ob(*TENSORMAP)).status == "holds"
    above = "UTMALDG.2D [UR12], [UR8]\nSTG.E [R2.64], R4\n@P3 DEPBAR.LE SB0, 0x0\nEXIT"
    assert _check(above, _ob(*TENSORMAP)).status == "violated"


def test_unknown_sass_and_indirect_branches_are_inconclusive():
    f = parse(_nv("FROBNICATE R1, R2\nSTG.E [R2.64], R4\nEXIT"))[0]
    rep = check_function(f, [_ob(*TENSORMAP)], [f])
    assert rep.verdict == "inconclusive" and rep.unknown[0].base == "FROBNICATE"
    r = _check("UTMALDG.2D [UR12], [UR8]\nBRX R4 -0x10\nSTG.E [R2.64], R4\nEXIT\n"
               "DEPBAR.LE SB0, 0x0", _ob(*TENSORMAP))
    assert r.status == "inconclusive" and "BRX" in r.reason


def test_an_obligation_whose_instructions_are_missing_is_inconclusive():
    r = _check("UTMALDG.2D [UR12], [UR8]\nSTG.E [R2.64], R4\nEXIT", _ob(*TENSORMAP))
    assert r.status == "inconclusive" and "no SASS instruction" in r.reason


def test_entry_arms_the_barrier_obligation():
    body = "LDS R4, [R2]\nSYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3\nEXIT"
    ob = _ob("$^", r"SYNCS\.PHASECHK", r"LDS\b", entry=True)
    assert _check(body, ob).status == "violated"
    kept = "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3\nLDS R4, [R2]\nEXIT"
    assert _check(kept, ob).status == "holds"


# -- kernels compiled by the DSL on the CPU -------------------------------------------------------
dsl = pytest.mark.dsl


def _needs_dsl():
    if not os.environ.get("WARPSPIN_REQUIRE_ALL"):
        pytest.importorskip("cutlass", reason="needs nvidia-cutlass-dsl (make test installs it)")


KG = ROOT / "examples" / "kgrouped_tensormap.py"


@dsl
@pytest.mark.parametrize("variant", ["correct", "copy_after_drain", "copy_after_drain_sync"])
def test_kgrouped_sass(variant):
    _needs_dsl()
    from warpspin.api import CheckOptions, sass_target
    sys.path.insert(0, str(ROOT / "examples"))
    import kgrouped_tensormap as mod
    (r,) = sass_target(f"{KG}:{variant}", CheckOptions(arch="sm_90a"))
    assert r.outcome == mod.EXPECT_SASS[variant], render_text(r)
    names = {o["name"]: o["status"] for o in r.config["sass"]["obligations"]}
    assert set(names) >= {"tensormap.drain", "tensormap.release", "tensormap.acquire"}
    if variant == "copy_after_drain":
        v = r.violations[0]
        assert names["tensormap.drain"] == "violated"
        assert v.locations[0].line == _line("cpasync.copy_tensormap(atom, desc)",
                                             after="one lane drains, copies")
        path = [n.message for n in v.notes if n.message.startswith("SASS ")]
        assert "UTMALDG" in path[0] and "STG.E.128" in path[-1]
        assert not any("DEPBAR" in m for m in path)
        assert any("DEPBAR.LE SB0, 0x0 (not on this path)" in n.message for n in v.notes)


def _line(text: str, after: str) -> int:
    lines = KG.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if after in l)
    return next(i for i, l in enumerate(lines) if i > start and text in l) + 1


@dsl
def test_check_with_sass_turns_a_verified_model_into_a_reorder():
    """`check --sass`: the model verifies copy_after_drain (its PTX is right); the SASS does not
    keep the order, so the verdict is a violation and the exit status 1. --ptxas (the PyPI ptxas
    13.2, the release of seed 004) moves the stores the same way."""
    _needs_dsl()
    for extra in ([], ["--ptxas"]):
        run = subprocess.run([PY, "-m", "warpspin.cli", "check", f"{KG}:copy_after_drain",
                              "--sass", "--json", *extra], capture_output=True, text=True,
                             cwd=ROOT)
        assert run.returncode == 1, run.stderr
        (t,) = json.loads(run.stdout)["targets"]
        assert t["verdict"] == "violation"
        assert [v["kind"] for v in t["violations"]] == ["reordered"]
        assert ("ptxas release 13.2" in t["config"]["sass"]["assembler"]) == bool(extra)
        notes = [n["message"] for n in t["violations"][0]["notes"]]
        if extra:  # each SASS instruction of the path names its PTX line and text
            assert any("STG.E.128" in m and "st.global" in m and "(PTX line" in m
                       for m in notes), notes


def test_semantics_lists_every_obligation():
    from warpspin.sass.doc import BEGIN, END, table
    text = (ROOT / "docs" / "semantics.md").read_text()
    assert text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip() == table().strip(), \
        "run: python -m warpspin.sass.doc docs/semantics.md"


TRY_WAIT_PTX = """.version 8.8
	.loc	1 74 16
	xor.b32 	%r11, %r18, 1;
	// begin inline asm
	{
	.loc	1 77 16
	mbarrier.try_wait.parity.shared.b64 P1, [%r10], %r11, 10000000;
	}
	// end inline asm
	.loc	1 78 5
	ld.shared.u32 %r1, [%r2];
	.file	1 "/x/k.py"
"""


def _wait_74_then_read_78():
    return Obligation("barrier.order", "race", "t", Selector("start", "$^", entry=True),
                      Selector("the wait", r"SYNCS\.PHASECHK", frozenset({("/x/k.py", 74)})),
                      Selector("the read", r"LDS\b", frozenset({("/x/k.py", 78)})))


def test_lines_an_inline_asm_block_took_belong_to_its_line():
    """NVVM numbers a multi-line inline asm block's lines from its own: the try-wait at line 74
    carries line 77 in the SASS, where other code may sit. The PTX says which block took it."""
    from warpspin.sass.lines import LineMap
    ptx = TRY_WAIT_PTX
    listing = ('//--------------------- .text.k ------\n'
               '\t//## File "/x/k.py", line 77\n'
               '        /*0000*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7], R3 ;\n'
               '\t//## File "/x/k.py", line 78\n'
               '        /*0010*/                   LDS R4, [R2] ;\n'
               '        /*0020*/                   EXIT ;\n')
    f = parse(listing)[0]
    ob = _wait_74_then_read_78()
    assert check_function(f, [ob], [f]).results[0].status == "inconclusive"  # no line map
    lines = LineMap.from_ptx(ptx)
    assert lines.taken == {("/x/k.py", 77): {("/x/k.py", 74)}}
    assert check_function(f, [ob], [f], lines).results[0].status == "holds"
    # an op on line 77 whose pattern the instruction matches: it may be that op's wait
    crowded = LineMap.from_ptx(ptx, {("/x/k.py", 77): {r"SYNCS\.PHASECHK"}})
    assert check_function(f, [ob], [f], crowded).results[0].status == "inconclusive"


def test_a_path_through_a_fence_of_unknown_line_is_not_called_a_reorder():
    """ptxas gave an unrolled copy of the wait no line: a path through it may be kept in order."""
    listing = ('//--------------------- .text.k ------\n'
               '        /*0000*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7], R3 ;\n'
               '\t//## File "/x/k.py", line 78\n'
               '        /*0010*/                   LDS R4, [R2] ;\n'
               '\t//## File "/x/k.py", line 74\n'
               '        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7], R3 ;\n'
               '        /*0030*/                   EXIT ;\n')
    f = parse(listing)[0]
    ob = _wait_74_then_read_78()
    r = check_function(f, [ob], [f]).results[0]
    assert r.status == "inconclusive" and "may be it" in r.reason


@dsl
def test_check_with_sass_keeps_a_verified_kernel_whose_order_is_kept():
    _needs_dsl()
    run = subprocess.run([PY, "-m", "warpspin.cli", "check", f"{KG}:copy_after_drain_sync",
                          "--sass"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    held = re.search(r"(\d+) of (\d+) ordering obligations hold", run.stdout)
    assert "VERIFIED" in run.stdout and held and held.group(1) == held.group(2), run.stdout


def test_a_syncir_target_has_no_sass():
    run = subprocess.run([PY, "-m", "warpspin.cli", "sass",
                          str(ROOT / "examples" / "syncir_ring.py") + ":ring_correct"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 3 and "a SyncIR kernel has no SASS" in run.stdout, run.stdout


def test_annotated_ptx_maps_every_instruction_to_its_ptx_and_python_line():
    """`--ptxas`: each PTX instruction gets its own `.loc` into the PTX; the Python line is the
    one in effect there, an inline asm block's own line for its inner lines."""
    from warpspin.sass.ptxmap import annotate, resolve
    ptx = TRY_WAIT_PTX
    annotated, table = annotate(ptx)
    assert "\t.file\t2 \"kernel.ptx\"" in annotated and ".loc\t1 " not in annotated
    assert {n: (line, text.split()[0]) for n, (_, line, text) in table.items()} == {
        3: (74, "xor.b32"), 7: (74, "mbarrier.try_wait.parity.shared.b64"), 11: (78, "ld.shared.u32")}
    listing = ('//--------------------- .text.k ------\n'
               '\t//## File "kernel.ptx", line 7\n'
               '        /*0000*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7], R3 ;\n')
    (ins,) = resolve(parse(listing)[0], table).instrs
    assert (ins.file, ins.line, ins.ptx) == ("/x/k.py", 74, 7) and "try_wait" in ins.ptx_text
