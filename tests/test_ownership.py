"""Races between threads of the grid on global memory outside grid models
(extract/ownership.py): proven apart, or NOT CHECKED naming the access, never a silent VERIFIED."""
from __future__ import annotations

import pytest

from warpspin.extract.ownership import (GlobalAccess, affine, inline_locals, ownership_why,
                                        _shifts)
from warpspin.extract.values import LANE
from warpspin.syncir.ir import BinOp, Const, Loc, Var

X, Y = Var("clusterid_x"), Var("clusterid_y")
NAMES = ("clusterid_x", "clusterid_y", "clusterid_z")
LOC = Loc("k.py", 10)


def acc(offset, write=True, lanes=range(32), warp=0, cta=0, counters=(), one_lane=False,
        same_value=False, elem=4, line=10):
    return GlobalAccess(0, write, offset, elem, frozenset(lanes), one_lane, cta, warp,
                        tuple(counters), Loc("k.py", line), same_value=same_value)


def test_affine_forms():
    e = BinOp("+", BinOp("*", X, Const(256)), Const(12))
    assert affine(e, NAMES) == ((256, 0, 0), 12)
    # (2 * x + 1) // 2 = x, and % 2 = 1: exact because 2 divides every coefficient
    two = BinOp("+", BinOp("*", X, Const(2)), Const(1))
    assert affine(BinOp("//", two, Const(2)), NAMES) == ((1, 0, 0), 0)
    assert affine(BinOp("%", two, Const(2)), NAMES) == ((0, 0, 0), 1)
    assert affine(BinOp("//", BinOp("+", X, Const(1)), Const(2)), NAMES) is None
    assert affine(BinOp("*", X, Y), NAMES) is None
    assert affine(Var("t1"), NAMES) is None


def test_inline_locals_follows_the_walker_s_locals():
    defs = {"v1": BinOp("*", X, Const(64)), "v2": BinOp("+", Var("v1"), Const(4))}
    assert affine(inline_locals(Var("v2"), defs), NAMES) == ((64, 0, 0), 4)


def per_thread(stride=128):  # out[x * 32 + lane], 4-byte elements
    return BinOp("+", BinOp("*", X, Const(stride)), BinOp("*", Var(LANE), Const(4)))


def test_each_lane_its_own_element_in_each_cluster():
    assert ownership_why([acc(per_thread())], (None, 1, 1)) is None
    assert ownership_why([acc(per_thread())], (8, 1, 1)) is None


def test_clusters_that_overlap():
    loc, why = ownership_why([acc(per_thread(64))], (8, 1, 1))
    assert "overlap" in why and loc.line == 10
    loc, why = ownership_why([acc(BinOp("*", Var(LANE), Const(4)))], (2, 1, 1))
    assert "every cluster along x accesses the same bytes" in why
    # one cluster: nothing to meet
    assert ownership_why([acc(BinOp("*", Var(LANE), Const(4)))], (1, 1, 1)) is None


def test_clusters_at_the_lowest_digit_are_apart():
    # a column-major (4, 64) tensor: out[x, lane] is byte 4 x + 16 lane
    e = BinOp("+", BinOp("*", X, Const(4)), BinOp("*", Var(LANE), Const(16)))
    assert ownership_why([acc(e)], (4, 1, 1)) is None
    loc, why = ownership_why([acc(e)], (5, 1, 1))  # cluster 4 is cluster 0's lane 1
    assert "overlap" in why


def test_two_dimensions_of_clusters():
    e = BinOp("+", BinOp("+", BinOp("*", X, Const(128)), BinOp("*", Y, Const(512))),
              BinOp("*", Var(LANE), Const(4)))
    assert ownership_why([acc(e)], (4, None, 1)) is None
    # cluster (4, 0) lands where cluster (0, 1) does
    assert "two clusters access the same bytes" in ownership_why([acc(e)], (5, 2, 1))[1]
    assert _shifts((128, 512, 0), (None, None, 1), 128) is None  # two unbounded dimensions


def test_threads_of_one_cluster():
    # two warps storing the same elements; a warp reading what another writes
    assert "both writes" in ownership_why([acc(per_thread(), warp=0), acc(per_thread(), warp=1)],
                                          (None, 1, 1))[1]
    read = acc(per_thread(), write=False, warp=1, line=12)
    loc, why = ownership_why([acc(per_thread()), read], (None, 1, 1))
    assert "one a write" in why and loc.line == 12
    # reads alone never race; the same thread reading what it writes does not either
    assert ownership_why([read, acc(per_thread(), write=False)], (None, 1, 1)) is None
    assert ownership_why([acc(per_thread()), acc(per_thread(), write=False)], (None, 1, 1)) is None


def test_one_value_stored_by_the_lanes_of_one_store():
    flag = BinOp("*", X, Const(4))
    assert ownership_why([acc(flag, same_value=True)], (None, 1, 1)) is None
    assert "both writes" in ownership_why([acc(flag)], (None, 1, 1))[1]
    # one store per warp of one value: two warps still race
    assert "both writes" in ownership_why([acc(flag, same_value=True, warp=0),
                                           acc(flag, same_value=True, warp=1)], (None, 1, 1))[1]
    # an elected lane is one thread
    assert ownership_why([acc(flag, one_lane=True)], (None, 1, 1)) is None
    # one constant: every trip of a loop around the store writes the same
    assert ownership_why([acc(flag, same_value=True, counters=[("k1", 0, 1)])],
                         (None, 1, 1)) is None


def test_loop_counters_are_enumerated():
    e = BinOp("+", BinOp("+", BinOp("*", X, Const(512)), BinOp("*", Var("k1"), Const(128))),
              BinOp("*", Var(LANE), Const(4)))
    assert ownership_why([acc(e, counters=[("k1", 0, 3)])], (None, 1, 1)) is None
    loc, why = ownership_why([acc(e, counters=[("k1", 0, 4)])], (None, 1, 1))
    assert "overlap" in why


def test_places_not_known_are_named():
    assert "depends on t5" in ownership_why([acc(BinOp("+", Var("t5"), Var(LANE)))],
                                            (None, 1, 1))[1]
    assert ownership_why([GlobalAccess(0, True, None, 4, frozenset({0}), False, 0, 0, (), LOC,
                                       "through a view")], (1, 1, 1)) == (LOC, "through a view")


# ---- end to end: the real DSL traces each form ---------------------------------------------
FORMS_WHY = {
    "same_elements": "every cluster along x accesses the same bytes",
    "overlap": "overlap",
    "two_warps": "two threads of one cluster access byte 0",
    "neighbour_read": "overlap",
    "lane_flag": "two threads of one cluster access byte 0",
    "shared_copy": "two threads of one cluster access byte 0",
    "trip_flag": "two threads of one cluster access byte 0",
}


@pytest.mark.parametrize("form", ["per_thread", "tile", "local_tile", "loop", "one_flag", "copy",
                                  "rank_row", "warp_flag", "trip_row", *FORMS_WHY])
def test_forms(form):
    from fixtures.owned_outputs import VERIFIED, output
    from verdicts import check_output_form
    check_output_form(output, form, form in VERIFIED, FORMS_WHY.get(form, ""))


def _brute_force_meet(accesses, counts) -> bool:
    """Whether two threads of a static grid access one byte, one of them writing: every cluster,
    lane and counter value enumerated."""
    import itertools

    from warpspin.extract.values import Folder, subst
    f, seen = Folder(), {}
    for cluster in itertools.product(*(range(n) for n in counts)):
        for k, a in enumerate(accesses):
            names = [n for n, _, _ in a.counters]
            lanes = sorted(a.lanes)[:1] if a.one_lane else sorted(a.lanes)
            for lane in lanes:
                thread = (cluster, a.cta, a.warp, "elected" if a.one_lane else lane)
                for values in itertools.product(*(range(lo, hi + 1) for _, lo, hi in a.counters)):
                    env = dict(zip(names, values), **{LANE: lane},
                               **{f"clusterid_{d}": c for d, c in zip("xyz", cluster)})
                    r = subst(a.offset, env, f).value
                    for b in range(r, r + a.elem):
                        for other, write, kk in seen.get(b, ()):
                            same_store = kk == k and a.same_value and other[:3] == thread[:3]
                            if other != thread and (write or a.write) and not same_store:
                                return True
                        seen.setdefault(b, []).append((thread, a.write, k))
    return False


def test_the_proof_agrees_with_brute_force_on_random_places():
    """Random affine places over the lane, a loop counter and two cluster dimensions, on small
    static grids: whenever the proof says apart, no two threads meet (soundness, 0
    disagreements); where it says they may, they do in most draws (its precision)."""
    import random
    rng = random.Random(34)
    apart = meet = refused = 0
    for _ in range(300):
        counts = (rng.choice([1, 2, 3]), rng.choice([1, 2]), 1)
        cx, cy, cl, ck = (rng.choice([0, 4, 8, 16, 32, 64, 128]) for _ in range(4))
        e = BinOp("+", BinOp("+", BinOp("*", X, Const(cx)), BinOp("*", Y, Const(cy))),
                  BinOp("+", BinOp("*", Var(LANE), Const(cl)), BinOp("*", Var("k1"), Const(ck))))
        trips = [("k1", 0, rng.choice([0, 1, 3]))]
        accs = [acc(e, lanes=range(rng.choice([1, 4])), counters=trips,
                    same_value=rng.random() < 0.3, write=True)]
        if rng.random() < 0.5:
            accs.append(acc(BinOp("+", e, Const(rng.choice([0, 4, 64]))), write=rng.random() < 0.5,
                            warp=1, lanes=range(2), counters=trips))
        why = ownership_why(accs, counts)
        truth = _brute_force_meet(accs, counts)
        assert not (why is None and truth), (accs, counts)
        apart += why is None
        meet += truth
        refused += why is not None and not truth
    assert apart > 30 and meet > 30, (apart, meet, refused)
    assert refused <= (300 - apart) // 3, (apart, meet, refused)  # precision, not soundness
