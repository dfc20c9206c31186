"""Declared objects of the model and the hardware limits, each defined once.

An object kind has a scope (where its instances live: per CTA, per cluster, per instance) and
state fields, each with its value range and initial value. The Promela lowering types each field
by its range (`ctype`), the interpreter lays the same fields out in its state vector, and
`docs/semantics.md` lists them (tests/test_semantics_doc.py checks it against this table).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Hardware limits (PTX ISA 9.x section in each comment) and model bounds."""
    warp_threads: int = 32                 # a process instance is at most one warp
    cta_threads: int = 1024                # threads per CTA (launch limit)
    cluster_ctas: int = 16                 # CTAs per cluster (non-portable maximum, 9.7.13.3)
    named_barriers: int = 16               # bar/barrier ids 0..15 per CTA (9.7.13.1)
    arrive_count: int = (1 << 20) - 1      # mbarrier expected/arrive count 1..2^20-1 (9.7.13.15.1)
    tx_count: int = (1 << 20) - 1          # |tx-count| and one expect/complete 0..2^20-1 (9.7.13.15.2)
    phase_bound: int = 32767               # model bound: completed phases/generations per barrier
    local_band: int = 1 << 20              # model bound: |value| of a local (integer-range)
    inflight: int = 32767                  # model bound: copies in flight per issuing op and target


LIMITS = Limits()
INT32 = (-(1 << 31), (1 << 31) - 1)  # Promela `int`


@dataclass(frozen=True)
class FieldDecl:
    name: str
    lo: int
    hi: int
    init: int
    doc: str


@dataclass(frozen=True)
class ObjectKind:
    name: str
    scope: str              # "cta": one per CTA (per array element); "cluster": one per cluster
    fields: tuple[FieldDecl, ...]
    doc: str

    def field(self, name: str) -> FieldDecl:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


_TX = LIMITS.tx_count
_CNT = LIMITS.arrive_count
_PH = LIMITS.phase_bound
_CTA_T = LIMITS.cta_threads
_MAX_INSTANCES = LIMITS.cluster_ctas * LIMITS.cta_threads  # one instance per thread at most

MBARRIER = ObjectKind("mbarrier", "cta", (
    FieldDecl("vis", 0, 3, 0, "init visibility: 0 not initialized, 1 initialized, 2 fenced "
              "(fence.mbarrier_init), 3 published by a CTA or cluster barrier"),
    FieldDecl("exp", 0, _CNT, 0, "expected arrivals per phase (the init count)"),
    FieldDecl("pend", 0, _CNT, 0, "arrivals still due in the current phase"),
    # one step adds at most 32 threads x 2^20-1 bytes before the range check fails it
    FieldDecl("tx", -(_TX + 32 * _TX), _TX + 32 * _TX, 0, "transaction count (bytes expected "
              "and not yet delivered; negative when bytes land before their expect-tx)"),
    FieldDecl("n", 0, _PH, 0, "completed phases (the phase bit is n & 1)"),
    FieldDecl("by", -1, _MAX_INSTANCES, -1, "the instance that initialized it"),
), "an mbarrier in shared memory (PTX 9.7.13.15), one per array element per CTA")

NAMED_BARRIER = ObjectKind("named-barrier", "cta", (
    FieldDecl("exp", -1, _CTA_T, 0, "threads expected in this generation: 0 idle, -1 every "
              "non-exited thread of the CTA (bar.sync without a count)"),
    FieldDecl("arr", 0, 2 * _CTA_T, 0, "threads arrived in this generation"),
    FieldDecl("gen", 0, _PH, 0, "completed generations"),
), "a named barrier (bar.sync/bar.arrive id, PTX 9.7.13.1), 16 per CTA; id 0 is also the CTA "
   "barrier")

CLUSTER_BARRIER = ObjectKind("cluster-barrier", "cluster", (
    FieldDecl("arr", 0, LIMITS.cluster_ctas * _CTA_T, 0,
              "non-exited threads arrived in this phase"),
    FieldDecl("gen", 0, _PH, 0, "completed phases"),
), "the cluster barrier (barrier.cluster.arrive/wait, PTX 9.7.13.3), one per cluster")

LIVE = ObjectKind("live-threads", "cta", (
    FieldDecl("live", 0, _CTA_T, 0, "threads of the CTA that have not exited"),
), "the threads of a CTA that have not exited (PTX 9.7.19.2 exit)")

ASYNC_COPY = ObjectKind("async-copy", "cta", (
    FieldDecl("inflight", 0, LIMITS.inflight, 0, "copies issued and not yet complete"),
    FieldDecl("carried", 0, (1 << 16) - 1, 0, "per staged buffer that tcgen05.mma reads: the "
              "stages whose reads the tcgen05.commits in flight retire when they land"),
), "asynchronous copies (TMA loads, bulk copies, st.async) in flight towards one mbarrier element, "
   "per issuing op")

OBSERVATION = ObjectKind("observation", "instance", (
    FieldDecl("obs", 0, _PH, 0, "completed phases the instance's last passing wait saw"),
), "what an instance last observed of an mbarrier it waits on (parity aliasing)")

SHARED_WORD = ObjectKind("shared-word", "cta", (
    FieldDecl("val", -LIMITS.local_band, LIMITS.local_band, 0,
              "the value last stored (a tile index, a flag; 0 before any store)"),
    FieldDecl("at_ld", 0, _MAX_INSTANCES, 0, "instances whose next step loads it (race monitor: "
              "a function of the other state, no states of its own)"),
    FieldDecl("at_st", 0, _MAX_INSTANCES, 0, "instances whose next step stores it (race monitor)"),
    FieldDecl("pend", 0, LIMITS.inflight, 0, "the st.async in flight that wrote it (its copy "
              "counter's number + 1; 0: none); only in arrays an st.async writes"),
    FieldDecl("ard", 0, LIMITS.inflight, 0, "the (warp, wgmma group) pairs not retired whose "
              "wgmmas read it; only in arrays of shared data a wgmma reads"),
    FieldDecl("unf", 0, 1, 0, "1: written through the generic proxy with no fence.proxy.async "
              "that may order the write before a wgmma; only in such arrays of a kernel with "
              "no proxy fence"),
), "a 32-bit word of shared memory used as a value by several roles (st.shared / ld.shared, "
   "PTX 9.7.9.8-9), one per array element per CTA")

GLOBAL_COUNTER = ObjectKind("global-counter", "grid", (
    FieldDecl("val", 0, LIMITS.local_band, 0, "the value the next atom.inc returns (0 at launch); "
              "CTAs outside the model take values too"),
), "a 32-bit word of global memory that CTAs take work from with atom.inc (PTX 9.7.13.5), a "
   "dynamic tile scheduler's semaphore; one per counter, shared with the grid")

GLOBAL_FLAG = ObjectKind("global-flag", "grid", (
    FieldDecl("val", -LIMITS.local_band, LIMITS.local_band, 0, "its value (0 at launch)"),
    FieldDecl("unrel", 0, 1, 0, "1 once an add that is not a release changed it: a wait that sees "
              "the value does not see the writes made before that add"),
), "a 32-bit word of global memory that CTAs add to (atom.add / red.add, PTX 9.7.13.5-6) and "
   "spin on until it holds a value (ld.acquire in a loop, 9.7.9.8); one per flag, in the grid")

TENSORMAP = ObjectKind("tensormap", "cta", (
    FieldDecl("st", 0, 2, 0, "0: as launched (never written), 1: written and not yet released "
              "to the tensormap proxy, 2: written and released"),
    FieldDecl("ver", 0, LIMITS.local_band, 0, "writes so far (an acquire remembers the one it "
              "saw)"),
    FieldDecl("by", -1, _MAX_INSTANCES, -1, "the instance that wrote it last"),
    FieldDecl("wt", 0, 32, 0, "how many of its threads wrote it (a release by fewer threads of "
              "that instance releases nothing: each thread's fence covers its own writes)"),
    FieldDecl("unret", 0, LIMITS.local_band, 0, "TMA reads of it issued and not yet retired by "
              "a cp.async.bulk.wait_group.read of their issuing thread"),
), "a TMA descriptor in global memory that the kernel rewrites (PTX 9.7.9.26.5.2, 9.7.9.27 "
   "tensormap.replace, 9.7.13.4 fence.proxy.tensormap), one per CTA")

_BATCHES = _MAX_INSTANCES * 2  # write batches of one stage: at most one per instance, twice
BUFFER_STAGE = ObjectKind("buffer-stage", "cta", (
    FieldDecl("unret", 0, LIMITS.local_band, 0, "TMA stores reading the stage, issued and not yet "
              "retired by a cp.async.bulk.wait_group.read of their issuing thread"),
    FieldDecl("pend", 0, _BATCHES, 0, "write batches (an instance's writes of the stage since "
              "its last release) not yet handed over to the storing thread"),
    FieldDecl("raw", 0, _BATCHES, 0, "batches handed over without a fence.proxy.async between "
              "the write and the hand-over (until the storing thread fences)"),
    FieldDecl("lost", 0, _BATCHES, 0, "unfenced batches released in a barrier generation the "
              "storing thread did not wait in (whether a fence lies on their way to its stores "
              "is not followed); all such batches where a writer may synchronize between a "
              "write and its fence"),
    FieldDecl("raw1", 0, _BATCHES, 0, "`raw` of the CTA's second storing thread"),
    FieldDecl("lost1", 0, _BATCHES, 0, "`lost` of the CTA's second storing thread"),
    FieldDecl("cf", 0, _BATCHES, 0, "fenced batches released in the open generation of the "
              "buffer's barrier"),
    FieldDecl("cu", 0, _BATCHES, 0, "unfenced batches released in that generation"),
    FieldDecl("fly", 0, LIMITS.inflight, 0, "TMA loads into the stage issued and not complete"),
    FieldDecl("wrd", 0, LIMITS.inflight, 0, "wgmma reads of the stage (one per warp and wgmma) "
              "not yet retired by a wgmma.wait_group of their warp"),
    FieldDecl("mrd", 0, LIMITS.inflight, 0, "tcgen05.mma reads of the stage (one per warp and "
              "commit) not yet retired by the arrive of a tcgen05.commit issued after them"),
    FieldDecl("tld", 0, LIMITS.inflight, 0, "of a TMEM buffer: tcgen05.ld reads of the stage (one "
              "per instance) not yet retired by a tcgen05.wait::ld of their instance"),
    FieldDecl("mip", 0, 1, 0, "of a TMEM buffer: 1 while a tcgen05.mma access of the stage may "
              "still run (no tcgen05.commit issued after its last access has landed); a race "
              "monitor"),
    FieldDecl("cov", 0, (1 << 30) - 1, 0, "of a TMEM buffer: the commit slots (a bit each) "
              "issued after the stage's last tcgen05.mma access; the landing of any of them "
              "completes it (a race monitor)"),
    FieldDecl("cpw", 0, _MAX_INSTANCES, 0, "of a buffer other threads read than the ones "
              "whose cp.async copies write it: instances with copies into the stage not yet "
              "retired by their cp.async.wait_group"),
    FieldDecl("gr", 0, _MAX_INSTANCES, 0, "instances that read the stage through the generic "
              "proxy and have not executed fence.proxy.async since (a TMA load may not refill it)"),
), "one stage of a staged shared-memory buffer: TMA stores read it (PTX 9.7.9.25 "
   "cp.async.bulk.tensor, 9.7.9.26.5 bulk groups, 9.7.13.4 fence.proxy.async), or TMA loads "
   "fill it and wgmma or threads read it (9.7.15.5-6), per CTA")

# the stage fields only a TMEM buffer (an accumulator) uses
TMEM_STAGE_FIELDS = ("tld", "mip", "cov")
# the stage field only a cp.async buffer that other threads read uses
SHARED_COPY_FIELDS = ("cpw",)

BUFFER = ObjectKind("buffer", "cta", (
    FieldDecl("swait", 0, 1, 0, "the storing thread waits in the open generation of the "
              "buffer's barrier"),
    FieldDecl("swait1", 0, 1, 0, "`swait` of the CTA's second storing thread"),
), "what a staged buffer records once (not per stage), per CTA")

# a CTA has at most two storing threads per buffer (the warp groups of a ping-pong epilogue);
# the fields of the second, per slot, and only kernels with a second storing thread have them
MAX_STORERS = 2
SECOND_STORER_FIELDS = ("raw1", "lost1", "swait1")


def storer_field(field: str, slot: int) -> str:
    """The name of `field` (swait, raw, lost) of storing slot `slot` of a CTA."""
    return field if slot == 0 else f"{field}{slot}"

TMEM_COLUMNS = 512
TMEM = ObjectKind("tmem", "cta", (
    FieldDecl("cols", 0, TMEM_COLUMNS, 0, "columns of tensor memory the CTA holds (tcgen05.alloc "
              "adds, tcgen05.dealloc frees)"),
    FieldDecl("rel", 0, 1, 0, "1 once the CTA relinquished its allocation permit "
              "(tcgen05.relinquish_alloc_permit): a later alloc is undefined"),
    # cta_group::2 ops, in the object of the pair's leader (the even rank)
    FieldDecl("pa", 0, 1, 0, "1 while one warp of the pair waits in a cta_group::2 "
              "alloc/dealloc/relinquish for its peer's"),
    FieldDecl("pk", 0, 3, 0, "which op it waits in (1 alloc, 2 dealloc, 3 relinquish)"),
    FieldDecl("pw", 0, 1, 0, "which CTA of the pair it is (rank mod 2)"),
    FieldDecl("pn", 0, TMEM_COLUMNS, 0, "the columns it named"),
    FieldDecl("pg", 0, 1, 0, "the pair's generation: flips when the second warp issues the op"),
), "the tensor memory allocation of a CTA (PTX tcgen05.alloc, tcgen05.dealloc, "
   "tcgen05.relinquish_alloc_permit: 128 lanes x 512 columns per SM), per CTA; only in "
   "kernels that allocate")

KINDS_OF_OBJECTS = (MBARRIER, NAMED_BARRIER, CLUSTER_BARRIER, LIVE, ASYNC_COPY, OBSERVATION,
                    SHARED_WORD, GLOBAL_COUNTER, GLOBAL_FLAG, TENSORMAP, BUFFER_STAGE, BUFFER, TMEM)

def ctype(lo: float, hi: float) -> str:
    """The narrowest Promela integer type holding lo..hi."""
    if lo >= 0 and hi <= 255:
        return "byte"
    if lo >= -32768 and hi <= 32767:
        return "short"
    return "int"
