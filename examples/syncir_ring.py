"""The verification core on its own: protocols written directly in SyncIR (no DSL, no GPU).

    warpspin check examples/syncir_ring.py:ring_correct
    warpspin check examples/syncir_ring.py:ring_missing_release

Each function returns a SyncIR Kernel; `warpspin check` model-checks it with SPIN. The source
lines in the reports point into the pseudo-file ring.py of warpspin.syncir.protocols.
"""
from warpspin.syncir.protocols import RING_BUG_EXPECT, exchange, ring


def ring_correct():
    """4-stage ring, 8 k-tiles, one producer warp, two consumer warpgroups."""
    return ring(stages=4, trips=8, consumers=2, consumer_threads=128)


def ring_any_k():
    """The same ring proved for every k-tile count 0..6 in one run."""
    return ring(stages=4, trips=0, consumers=2, consumer_threads=128, trips_range=(0, 6))


def exchange_correct():
    return exchange(rounds=4)


def _bug(name):
    def make():
        return ring(stages=2, trips=4, consumers=2, bug=name)
    make.__name__ = "ring_" + name.replace("-", "_")
    make.__doc__ = f"the ring with bug {name!r}"
    return make


for _name in RING_BUG_EXPECT:
    globals()["ring_" + _name.replace("-", "_")] = _bug(_name)

TARGETS = ["ring_correct", "ring_any_k", "exchange_correct"] + [
    "ring_" + n.replace("-", "_") for n in RING_BUG_EXPECT]
# expected verdict or violation kind per target (make demo and the tests check them)
EXPECT = {"ring_correct": "verified", "ring_any_k": "verified", "exchange_correct": "verified",
          **{"ring_" + n.replace("-", "_"): kind for n, (kind, _) in RING_BUG_EXPECT.items()}}
