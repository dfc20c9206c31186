"""The verification core on its own: protocols written directly in SyncIR (no DSL, no GPU).

    warpspin check examples/syncir_ring.py:ring_correct
    warpspin check examples/syncir_ring.py:ring_missing_release

Each function returns a SyncIR Kernel; `warpspin check` model-checks it with SPIN. The source
lines in the reports point into the pseudo-files ring.py, epilogue.py and mainloop.py of
warpspin.syncir.protocols: the TMA ring, a TMA-store epilogue's staging buffer
(`warpspin check examples/syncir_ring.py:epilogue_no_fence`) and a wgmma mainloop's stages
(`warpspin check --load-races examples/syncir_ring.py:mainloop_release_before_wait`), and a
Blackwell GEMM's accumulator pipeline with its tensor memory, in umma_acc.py
(`warpspin check examples/syncir_ring.py:umma_no_dealloc`): the MMA warp allocates TMEM, commits
each tile's tcgen05.mma to acc.full, the epilogue warps release acc.empty, the MMA warp frees
the columns after the epilogue is done; `umma_data_*` follows the accumulator's stages as a TMEM
buffer (`warpspin check examples/syncir_ring.py:umma_data_release_before_wait_ld`: the MMA
writes a stage whose tcgen05.ld the epilogue has not waited for).
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


# -- staged buffers (races): a TMA-store epilogue and a wgmma mainloop, each with its bugs ------
from warpspin.syncir.protocols import (EPILOGUE_BUG_EXPECT, MAINLOOP_BUG_EXPECT,  # noqa: E402
                                       epilogue, mainloop)


def _protocol(make, prefix, name):
    def build():
        return make(bug=name)
    build.__name__ = f"{prefix}_" + (name or "correct").replace("-", "_")
    build.__doc__ = f"the {prefix} protocol" + (f" with bug {name!r}" if name else "")
    return build


for _make, _prefix, _expect in ((epilogue, "epilogue", EPILOGUE_BUG_EXPECT),
                                (mainloop, "mainloop", MAINLOOP_BUG_EXPECT)):
    for _name in (None, *_expect):
        _f = _protocol(_make, _prefix, _name)
        globals()[_f.__name__] = _f
        TARGETS.append(_f.__name__)
        EXPECT[_f.__name__] = (_expect[_name][0] if _name else None) or "verified"
# -- Blackwell: tcgen05.commit and tensor memory (the accumulator pipeline of a GEMM) ----------
from warpspin.syncir.protocols import UMMA_BUG_EXPECT, umma_acc  # noqa: E402

for _name in (None, *UMMA_BUG_EXPECT):
    _f = _protocol(umma_acc, "umma", _name)
    globals()[_f.__name__] = _f
    TARGETS.append(_f.__name__)
    EXPECT[_f.__name__] = UMMA_BUG_EXPECT[_name][0] if _name else "not-checked"  # TMEM data
# ... and with its accumulator stages as a TMEM buffer (the data followed: races on it checked)
from warpspin.syncir.protocols import UMMA_DATA_BUG_EXPECT  # noqa: E402


def _data_protocol(name):
    def build():
        return umma_acc(bug=name, data=True)
    build.__name__ = "umma_data_" + (name or "correct").replace("-", "_")
    build.__doc__ = "the umma protocol with its accumulator data" + (
        f" and bug {name!r}" if name else "")
    return build


for _name in (None, *UMMA_DATA_BUG_EXPECT):
    _f = _data_protocol(_name)
    globals()[_f.__name__] = _f
    TARGETS.append(_f.__name__)
    EXPECT[_f.__name__] = UMMA_DATA_BUG_EXPECT[_name][0] if _name else "verified"
