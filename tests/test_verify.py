"""End to end on SyncIR protocols: lower, real SPIN, replay, diagnosis, verdicts, reports."""
import json

import pytest

from warpspin.api import CheckOptions, verify_kernel
from warpspin.cli import main as cli_main
from warpspin.syncir import (BarSync, Elect, Kernel, Loc, MBarRef, MBarrierDecl, MbarInit, Process,
                             Unsupported, While, Var, Assign)
from warpspin.syncir.protocols import LINE, RING_BUG_EXPECT, RING_BUGS, exchange, ring


def kind_of(result):
    return result.violations[0].kind if result.violations else result.verdict


@pytest.mark.parametrize("stages", [2, 3, 4, 8])
@pytest.mark.parametrize("warpgroups", [1, 2, 3])
@pytest.mark.parametrize("trips", [0, 1, 5])
def test_correct_ring_verifies(stages, warpgroups, trips):
    """Both engines: SPIN searches the states, the happens-before engine runs it once."""
    k = ring(stages, trips, consumers=warpgroups, consumer_threads=128)
    r = verify_kernel(k, opts=CheckOptions(engine="spin"))
    assert r.verdict == "verified" and r.stats.engine == "spin", str(r)
    assert r.stats.states > 0
    r = verify_kernel(k, opts=CheckOptions(engine="hb"))
    assert r.verdict == "verified" and r.stats.engine == "happens-before", str(r)
    assert r.stats.hb_runs == 1 and r.stats.hb_ops > 0 and r.stats.states == 0


def test_ring_with_consumer_warps_verifies():
    r = verify_kernel(ring(4, 6, consumers=4, consumer_threads=32))
    assert r.verdict == "verified", str(r)


def test_exchange_verifies_and_unflipped_exchange_does_not():
    assert verify_kernel(exchange(4)).verdict == "verified"
    assert verify_kernel(exchange(4, flip=False)).verdict == "violation"


@pytest.mark.parametrize("bug", RING_BUGS)
def test_ring_bug_is_caught_with_kind_and_line(bug):
    r = verify_kernel(ring(2, 4, consumers=2, bug=bug))
    want_kind, want_line = RING_BUG_EXPECT[bug]
    assert r.verdict == "violation", str(r)
    v = r.violations[0]
    assert v.kind == want_kind, str(r)
    if want_line:
        assert v.locations[0].file == "ring.py"
        assert v.locations[0].line == LINE[want_line], str(r)
    assert v.replayed and v.trace, "every counterexample is replayed and shown"


def test_deadlock_report_names_blocked_waits():
    r = verify_kernel(ring(2, 4, consumers=2, bug="missing-release"))
    text = str(r)
    lines = text.splitlines()
    assert lines[1].startswith("error[deadlock]:")
    assert lines[2].startswith("  --> ring.py:21"), "the primary location comes first"
    assert "blocked forever:" in text and "empty[0]" in text and "pending" in text
    # each blocked warp is listed once, under "blocked forever" (no note repeats one)
    v = r.violations[0]
    assert len(v.blocked) == 3
    assert not any(n.message.endswith("also blocks here") for n in v.notes)
    assert "also blocks here" not in text
    listed = [x for x in lines if x.startswith("    ") and " (CTA " in x]
    shown = sum(1 + int(x.split(" and ")[1].split(" more")[0]) if " more (CTA" in x else 1
                for x in listed)
    assert shown == 3, listed  # every blocked warp once, alone or in its group
    assert "interleaving" in text


@pytest.mark.parametrize("reduce", [False, True])
def test_truncated_search_is_inconclusive_never_verified(reduce):
    kernel = ring(4, 16, consumers=4) if not reduce else ring(8, 64, consumers=16)
    r = verify_kernel(kernel, opts=CheckOptions(memory_mb=8, reduce=reduce, engine="spin"))
    assert r.verdict == "inconclusive", str(r)
    assert any("memory" in why for why in r.reasons)


def test_unsupported_op_gives_unsupported_with_line():
    k = Kernel("k", (Process("p", (Unsupported("llvm.inline_asm \"foo;\"", Loc("k.py", 42)),)),))
    r = verify_kernel(k)
    assert r.verdict == "unsupported"
    assert "inline_asm" in r.reasons[0] and r.reason_locations[0].line == 42


def test_loop_bound_gives_inconclusive():
    body = (Assign("i", 0), While(Var("i").lt(100), (BarSync(), Assign("i", Var("i") + 1)), max_iters=3))
    r = verify_kernel(Kernel("k", (Process("p", body),)))
    assert r.verdict == "inconclusive" and "bound" in r.reasons[0]


def test_invalid_syncir_is_an_error():
    k = Kernel("k", (Process("p", (Elect((MbarInit(MBarRef("nope"), 1),)),)),))
    assert verify_kernel(k).verdict == "error"


def test_json_contract(tmp_path):
    r = verify_kernel(ring(2, 3, consumers=2, bug="tx-bytes"), target="t.py:f")
    d = json.loads(r.to_json())
    assert d["target"] == "t.py:f" and d["verdict"] == "violation"
    v = d["violations"][0]
    assert v["kind"] == "tx-mismatch"
    assert {"file", "line", "role"} <= set(v["locations"][0])
    assert {"step", "process", "op", "file", "line"} <= set(v["trace"][0])
    assert {"processes", "states", "transitions", "seconds", "memory_mb"} <= set(d["stats"])
    assert {"trace", "extract", "check", "total"} <= set(d["stats"]["seconds"])


def test_cli_exit_status_and_json(tmp_path, capsys):
    f = tmp_path / "targets.py"
    f.write_text("from warpspin.syncir.protocols import ring\n"
                 "def good():\n    return ring(2, 2, 1)\n"
                 "def bad():\n    return ring(2, 4, 2, bug='missing-release')\n"
                 "def both():\n    return [ring(2, 2, 1), ring(2, 2, 2, bug='tx-bytes')]\n")
    assert cli_main(["check", f"{f}:good"]) == 0
    assert "VERIFIED" in capsys.readouterr().out
    assert cli_main(["check", f"{f}:bad"]) == 1
    assert "error[deadlock]" in capsys.readouterr().out
    assert cli_main(["check", "--json", f"{f}:both"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert [t["verdict"] for t in d["targets"]] == ["verified", "violation"]
    assert cli_main(["check", f"{f}:missing"]) == 3
    assert cli_main(["check", f"{tmp_path}/nofile.py:f"]) == 3
    emit = tmp_path / "pml"
    assert cli_main(["check", "--emit-promela", str(emit), f"{f}:good"]) == 0
    assert list(emit.glob("*.pml"))


def test_a_deadlock_trail_leaves_out_the_roles_it_does_not_involve():
    """A bystander warp with a barrier of its own takes turns in the trail; the text leaves its
    steps out (saying how many), --full-trace keeps them, and the HTML hides its lane."""
    import dataclasses
    from warpspin.report.html import render_html
    from warpspin.report.render import involved_roles, render_text
    from warpspin.syncir.ir import MBarRef, MBarrierDecl, Process
    from warpspin.syncir.ops import MbarArrive, MbarInit, MbarInitFence, MbarWait
    k = ring(2, 4, consumers=2, bug="missing-release")
    own = MBarRef("own")
    bystander = Process("bystander", (MbarInit(own, 32), MbarInitFence(), MbarArrive(own),
                                      MbarWait(own, 0), MbarArrive(own), MbarWait(own, 1)),
                        warps=(3, 4))
    k = dataclasses.replace(k, processes=k.processes + (bystander,),
                            mbarriers=k.mbarriers + (MBarrierDecl("own"),))
    r = verify_kernel(k, opts=CheckOptions(engine="spin"))
    (v,) = r.violations
    assert v.kind == "deadlock" and any(t.process == "bystander" for t in v.trace)
    assert involved_roles(v) == {"producer", "consumer", "async"}
    text, full = render_text(r), render_text(r, full_trace=True)
    steps = sum(t.process == "bystander" for t in v.trace)
    assert f"{steps} steps of bystander (not involved) left out" in text
    assert "bystander" not in text.split("interleaving")[1].split("\n", 1)[1]
    assert "bystander" in full.split("interleaving")[1]
    page = render_html([r])
    assert 'lane-head lane-other" data-lane="bystander"' in page
