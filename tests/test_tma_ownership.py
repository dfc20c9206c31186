"""TMA stores between the threads of the grid outside grid models: the boxes of coordinates
they write (extract/coords.py), proven apart by extract/ownership.py or NOT CHECKED naming the
store, never a silent VERIFIED."""
from __future__ import annotations

import itertools
import random

import pytest

from warpspin.extract.coords import box, parse_tree
from warpspin.extract.ownership import GlobalAccess, _shifts, ownership_why
from warpspin.extract.values import LANE, Folder, subst
from warpspin.syncir.ir import BinOp, Const, Loc, Var

X, Y = Var("clusterid_x"), Var("clusterid_y")


def store(coords, extents, lanes=range(1), warp=0, counters=(), same_per_trip=False,
          uncounted=False, line=10, write=True):
    return GlobalAccess(0, write, None, 0, frozenset(lanes), False, 0, warp, tuple(counters),
                        Loc("k.py", line), "", False, same_per_trip, coords=tuple(coords),
                        box=tuple(extents), uncounted=uncounted)


def lin(*terms, c=0):
    e = Const(c)
    for v, a in terms:
        e = BinOp("+", e, BinOp("*", v, Const(a)))
    return e


def test_coordinate_types_parse():
    assert parse_tree("((?{div=8},1),_)") == (("?", "1"), "_")
    assert box('!cute.coord_tensor<"(0,?{div=64})", "(((32,64),1)):(((1@0,1@1),0))">') == (32, 64)
    # two units of 64 along coordinate 0: the bounding box
    assert box('!cute.coord_tensor<"(0,?,?,?)", "(((64,64),2)):(((1@0,1@1),64@0))">') == \
        (128, 64, 1, 1)
    assert box('!cute.coord_tensor<"(0,0)", "(?,32):(1@0,1@1)">') is None  # not static
    assert box('!cute.memref<f32, gmem, "(4,4):(4,1)">') is None


def test_tiles_of_a_grid_are_apart():
    # tile (x, i): origin (64 x, 32 i), box (64, 32), x unbounded
    s = store([lin((X, 64)), lin((Var("k1"), 32))], (64, 32), counters=[("k1", 0, 3)])
    assert ownership_why([s], (None, 1, 1)) is None
    # tile (x // 1, 0) every trip: one warp's bulk stores of two trips meet
    s = store([lin((X, 64)), Const(0)], (64, 32), counters=[("k1", 0, 1)])
    assert "not ordered with each other" in ownership_why([s], (None, 1, 1))[1]
    # every cluster along y stores the same boxes
    s = store([lin((X, 64)), Const(0)], (64, 32))
    assert "every cluster along y accesses the same coordinates" in \
        ownership_why([s], (None, 2, 1))[1]
    # boxes of 64 rows 32 apart: neighbouring clusters overlap
    s = store([lin((X, 32)), Const(0)], (64, 32))
    assert "overlap" in ownership_why([s], (4, 1, 1))[1]
    # in a loop whose trips are not counted
    s = store([lin((X, 64)), Const(0)], (64, 32), uncounted=True)
    assert "not counted" in ownership_why([s], (4, 1, 1))[1]


def test_lanes_storing_one_box_from_one_source_are_one_write():
    s = store([lin((X, 64)), lin((Var("k1"), 32))], (64, 32), lanes=range(32),
              counters=[("k1", 0, 1)], same_per_trip=True)
    assert ownership_why([s], (4, 1, 1)) is None
    loose = store([lin((X, 64)), lin((Var("k1"), 32))], (64, 32), lanes=range(32),
                  counters=[("k1", 0, 1)])
    assert "not ordered with each other" in ownership_why([loose], (4, 1, 1))[1]
    other = store([lin((X, 64)), lin((Var("k1"), 32))], (64, 32), warp=1,
                  counters=[("k1", 0, 1)], line=11)
    assert "two threads of one cluster" in ownership_why([s, other], (4, 1, 1))[1]


def test_two_unbounded_dimensions_need_a_coordinate_each():
    coef = ((64, 0, 0), (0, 32, 0))
    assert _shifts(coef, (None, None, 1), (64, 32)) == set()
    assert _shifts(((64, 64, 0), (0, 32, 0)), (None, None, 1), (64, 32)) is None


def _brute_force_meet(accesses, counts) -> bool:
    """Whether two writers of a static grid touch one coordinate, one writing: every cluster,
    lane, counter value and cell enumerated. A TMA store's every issue is a writer of its own;
    lanes of one warp storing one box at one trip (`same_per_trip`) are one."""
    f, seen = Folder(), {}
    for cluster in itertools.product(*(range(n) for n in counts)):
        for k, a in enumerate(accesses):
            names = [n for n, _, _ in a.counters]
            for lane in sorted(a.lanes):
                for values in itertools.product(*(range(lo, hi + 1) for _, lo, hi in a.counters)):
                    env = dict(zip(names, values), **{LANE: lane},
                               **{f"clusterid_{d}": c for d, c in zip("xyz", cluster)})
                    o = [subst(e, env, f).value for e in a.coords]
                    who = (cluster, a.cta, a.warp, k, values) if a.same_per_trip else \
                        (cluster, a.cta, a.warp, lane, k, values)
                    for cell in itertools.product(*(range(x, x + n) for x, n in zip(o, a.box))):
                        for other, write in seen.get(cell, ()):
                            if other != who and (write or a.write):
                                return True
                        seen.setdefault(cell, []).append((who, a.write))
    return False


def test_the_box_proof_agrees_with_brute_force_on_random_boxes():
    """Random 2-D boxes at places affine in two cluster dimensions, the lane and a loop
    counter, on small static grids (and with x unbounded, against a grid of 6 along x): when
    the proof says apart, no two writers meet (0 disagreements)."""
    rng = random.Random(38)
    apart = meet = 0
    for _ in range(200):
        counts = (rng.choice([1, 2, 3]), rng.choice([1, 2]), 1)
        ext = (rng.choice([1, 2, 4]), rng.choice([1, 2, 4]))
        k = Var("k1")
        coords = [lin((X, rng.choice([0, 2, 4])), (Y, rng.choice([0, 1, 4])),
                      (Var(LANE), rng.choice([0, 4])), (k, rng.choice([0, 2, 4]))),
                  lin((X, rng.choice([0, 1, 4])), (Y, rng.choice([0, 2])),
                      (k, rng.choice([0, 1, 4])))]
        trips = [("k1", 0, rng.choice([0, 1, 2]))]
        accs = [store(coords, ext, lanes=range(rng.choice([1, 2])), counters=trips,
                      same_per_trip=rng.random() < 0.4)]
        if rng.random() < 0.4:
            accs.append(store([BinOp("+", coords[0], Const(rng.choice([0, 2, 8]))), coords[1]],
                              ext, warp=1, counters=trips, line=11))
        why = ownership_why(accs, counts)
        truth = _brute_force_meet(accs, counts)
        assert not (why is None and truth), (accs, counts)
        if counts[0] > 1 and ownership_why(accs, (None,) + counts[1:]) is None:
            assert not _brute_force_meet(accs, (6,) + counts[1:]), (accs, counts)
        apart += why is None
        meet += truth
    assert apart > 20 and meet > 20, (apart, meet)


# ---- end to end: the real DSL traces each form ---------------------------------------------
FORMS_WHY = {
    "same_tile": "every cluster along x accesses the same coordinates",
    "same_trip": "not ordered with each other",
    "two_warps": "two threads of one cluster access coordinate",
    "pair_same": "two threads of one cluster access coordinate",
    "rows_by_pairs": "not an affine function of the cluster index",
}


@pytest.mark.parametrize("form", ["per_cta", "pair", "scheduled", "flat_divide", *FORMS_WHY])
def test_tma_store_forms(form):
    from fixtures.tma_outputs import VERIFIED, output
    from warpspin.api import CheckOptions, _check_jit, verify

    fn, args = output(form)
    r = verify(fn, *args)
    if form in VERIFIED:
        assert r.outcome == "verified", str(r)
        assert "one-to-one" in str(r)
        return
    assert r.outcome == "not-checked", str(r)
    first = str(r).splitlines()[1]
    assert "races NOT CHECKED on the global tensor of TMA descriptor argument 0" in first and \
        FORMS_WHY[form] in first, first
    alone, = _check_jit(fn, args, CheckOptions(properties=("deadlock",)), form)
    assert alone.outcome == "verified", str(alone)
