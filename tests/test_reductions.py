"""Reductions fail closed: each applies only when every op allows it (its facts list it, its
footprint is known and of the proven shape); otherwise it is off and the model says which op
refused it (docs/semantics.md, "Reductions")."""
from dataclasses import dataclass
from typing import ClassVar

import pytest

from warpspin.lower import lower
from warpspin.syncir import (Elect, Kernel, Loc, MBarRef, MBarrierDecl, MbarArrive,
                             MbarInit, MbarInitFence, MbarWait, BarSync, Process, Var, For, Assign)
from warpspin.syncir.ops import (ALL, OPS, SYMMETRIC, Access, Footprint, SyncOp, sync_op)
from warpspin.syncir.rules import Rule

LOC = Loc("dummy.py", 42)


def kernel_with(extra) -> Kernel:
    """2 identical CTAs; a producer that inits, and 2 identical consumer warps with a
    wait -> release block (fusable), each also executing `extra`."""
    b, c = MBarRef("b"), MBarRef("c")
    prod = (Elect((MbarInit(b, 1), MbarInit(c, 2), MbarInitFence())), BarSync(),
            For("k", 0, 2, (Elect((MbarArrive(b, 1),)), MbarWait(c, Var("ph")),
                            Assign("ph", Var("ph") ^ 1))))
    cons = (BarSync(), For("k", 0, 2, (MbarWait(b, Var("ph")), Elect((MbarArrive(c, 1),)),
                                       Assign("ph", Var("ph") ^ 1))), extra)
    procs = []
    for cta in range(2):
        procs += [Process("producer", prod, cta=cta, warps=(0, 1)),
                  Process("consumer", cons, cta=cta, warps=(1, 3), instances=2)]
    return Kernel("k", tuple(procs), (MBarrierDecl("b"), MBarrierDecl("c")), num_ctas=2)


@pytest.fixture
def op_class():
    """Registers a test op class for the duration of one test."""
    made = []

    def make(name, footprint, facts):
        @sync_op
        @dataclass(frozen=True)
        class Dummy(SyncOp):
            loc: Loc = LOC
            mnemonic: ClassVar[str] = name
            proven: ClassVar[frozenset] = frozenset(facts)

            def footprint(self, k):
                return footprint

            def rule(self, c):
                return Rule([])
        made.append(name)
        return Dummy

    yield make
    for name in made:
        OPS.pop(name)


def test_control_every_reduction_applies():
    m = lower(kernel_with(Elect((MbarArrive(MBarRef("c"), 1),))))
    names = {r.split(":")[0] for r in m.reductions}
    assert names == {"independent-ctas", "symmetric-instances", "narrow-types",
                     "dead-variable-reset", "R6"}, m.reductions
    assert m.refused == ()


def test_unknown_footprint_switches_every_reduction_off(op_class):
    Dummy = op_class("dummy.unknown", None, ALL)
    m = lower(kernel_with(Dummy()))
    assert m.reductions == ()
    refused = {d.reduction: d.why for d in m.refused}
    assert set(refused) == {"independent-ctas", "symmetric-instances", "narrow-types",
                            "dead-variable-reset", "wait-release-fusion"}
    for why in refused.values():
        assert "dummy.unknown" in why and "dummy.py:42" in why and "footprint" in why


def test_op_without_facts_switches_every_reduction_off(op_class):
    Dummy = op_class("dummy.unproven", Footprint((Access("mbarrier", "read", "cta"),)), ())
    m = lower(kernel_with(Dummy()))
    assert m.reductions == ()
    assert all("dummy.unproven" in d.why and "not covered" in d.why for d in m.refused)


def test_cluster_scope_footprint_switches_independent_ctas_off(op_class):
    Dummy = op_class("dummy.cluster", Footprint((Access("mbarrier", "rw", "cluster"),)), ALL)
    m = lower(kernel_with(Dummy()))
    names = {r.split(":")[0] for r in m.reductions}
    assert "independent-ctas" not in names and "symmetric-instances" in names
    (d,) = [d for d in m.refused if d.reduction == "independent-ctas"]
    assert "dummy.cluster" in d.why and "shape" in d.why


def test_identity_write_switches_symmetry_off(op_class):
    Dummy = op_class("dummy.owner", Footprint((Access("mbarrier", "write", "cta",
                                                      identity="write"),)), ALL)
    m = lower(kernel_with(Dummy()))
    names = {r.split(":")[0] for r in m.reductions}
    assert SYMMETRIC not in names and "independent-ctas" in names
    (d,) = [d for d in m.refused if d.reduction == SYMMETRIC]
    assert "dummy.owner" in d.why


def test_refusal_is_in_the_verdict(op_class):
    from warpspin.api import verify_kernel
    Dummy = op_class("dummy.unknown2", None, ALL)
    r = verify_kernel(kernel_with(Dummy()))
    assert any("dummy.unknown2" in x for x in r.config["reductions_refused"])
    assert r.verdict == "verified" and "reduction not applied: independent-ctas" in str(r)
