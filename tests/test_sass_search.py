"""The SASS path search against a brute force on random listings: concrete predicate values
(the elected lane fixed per run, every comparison free), every execution explored. On listings
whose predicate writes are unpredicated the two agree exactly; with predicated writes the search
may only report more (a fresh value for a write that might not run)."""
import random

import pytest

from warpspin.sass.cfg import build
from warpspin.sass.listing import parse
from warpspin.sass.search import search
from sass_listings import nvdisasm

PREDS = ("P0", "P1")


def _listing(rng: random.Random, n: int, predicated_writes: bool) -> str:
    labels = [f".L_{k}" for k in range(3)]
    body = []
    for _ in range(n):
        kind = rng.choice(["arm", "fence", "hit", "elect", "cmp", "bra", "alu", "exit"])
        pred = ""
        if kind in ("fence", "hit", "arm", "bra", "exit") or predicated_writes and \
                kind in ("elect", "cmp"):
            pred = rng.choice(["", "", f"@{rng.choice(PREDS)} ", f"@!{rng.choice(PREDS)} "])
        if kind == "bra":
            body.append(f"{pred}BRA `({rng.choice(labels)})")
        else:
            body.append(pred + {
                "arm": "UTMALDG.2D [UR12], [UR8]", "fence": "DEPBAR.LE SB0, 0x0",
                "hit": "STG.E [R2.64], R4", "elect": f"ELECT {rng.choice(PREDS)}, URZ, PT",
                "cmp": f"ISETP.NE.AND {rng.choice(PREDS)}, PT, R1, RZ, PT", "alu": "IADD3 R1, R1, 0x1, RZ",
                "exit": "EXIT"}[kind])
    body.append("EXIT")
    for lab in labels:  # each label before a random instruction
        body.insert(rng.randrange(len(body)), lab + ":")
    return nvdisasm("\n".join(body))


def _brute(f, c, arm, fence, hit) -> bool:
    """Whether a concrete execution reaches `hit` armed."""
    seen = set()
    stack = []
    for elected in (False, True):
        for p0 in (False, True):
            for p1 in (False, True):
                stack.append((0, False, (("P0", p0), ("P1", p1)), elected))
    while stack:
        st = stack.pop()
        if st in seen:
            continue
        seen.add(st)
        i, armed, preds, elected = st
        ins = f.instrs[i]
        p = dict(preds)
        runs = True
        if ins.pred:
            reg = ins.pred.lstrip("!")
            runs = p[reg] != ins.pred.startswith("!")
        if runs and armed and i in hit:
            return True
        a2 = armed
        if runs and i in arm:
            a2 = True
        if runs and i in fence:
            a2 = False
        nexts = []
        if runs and ins.base in ("ELECT", "ISETP"):
            d = ins.operands[0]
            vals = (elected,) if ins.base == "ELECT" else (False, True)
            for v in vals:
                nexts.append({**p, d: v})
        else:
            nexts.append(p)
        if ins.base == "BRA":
            succ = [c.succ[i][0]] if runs else [i + 1]
        elif ins.base == "EXIT":
            succ = [] if runs else [i + 1]
        else:
            succ = list(c.succ[i])
        for q in nexts:
            for j in succ:
                stack.append((j, a2, tuple(sorted(q.items())), elected))
    return False


@pytest.mark.parametrize("predicated_writes", [False, True])
def test_search_agrees_with_brute_force(predicated_writes):
    rng = random.Random(20261207 + predicated_writes)
    agree = more = 0
    for _ in range(1500):
        f = parse(_listing(rng, rng.randrange(4, 14), predicated_writes))[0]
        c = build(f)
        idx = lambda op: {i for i, x in enumerate(f.instrs) if x.opcode.startswith(op)}
        arm, fence, hit = idx("UTMALDG"), idx("DEPBAR"), idx("STG")
        mine = search(c, arm, fence, hit).status == "violated"
        truth = _brute(f, c, arm, fence, hit)
        if predicated_writes:
            assert mine or not truth, f"missed a reachable hit:\n{[x.text for x in f.instrs]}"
            more += mine and not truth
        else:
            assert mine == truth, [x.text for x in f.instrs]
        agree += mine == truth
    assert agree >= 1200
