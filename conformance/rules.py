"""The rules of docs/semantics.md that the litmus kernels test, by id: (section of
docs/semantics.md, PTX ISA section, the rule as the model states it)."""

RULES: dict[str, tuple[str, str, str]] = {
    # mbarrier
    "mbarrier.phase-completion": ("mbarrier", "9.7.13.15.1",
        "a phase completes when its pending arrivals and its tx-count are both zero"),
    "mbarrier.arrive-count": ("mbarrier", "9.7.13.15.13",
        "each executing thread's arrive takes `count` from the pending arrivals"),
    "mbarrier.tx-before-expect": ("mbarrier", "9.7.13.15.2",
        "bytes may complete before their expect-tx (tx-count negative); the phase completes when "
        "both reach zero"),
    "mbarrier.tx-mismatch": ("mbarrier", "9.7.13.15.2",
        "a phase whose expected bytes never all arrive never completes"),
    "mbarrier.expect-tx": ("mbarrier", "9.7.13.15.11",
        "expect_tx raises the tx-count without arriving"),
    "mbarrier.reinit": ("mbarrier", "9.7.13.15.9",
        "init on a barrier that is already initialized (no inval): barrier-reinit (undefined)"),
    "mbarrier.arrive-after-completion": ("mbarrier", "9.7.13.15.1",
        "an arrive after its phase completed counts in the next phase"),
    "mbarrier.parity-one-behind": ("Parity aliasing", "9.7.13.15.16",
        "a wait on the parity of the last completed phase passes"),
    "mbarrier.parity-two-behind": ("Parity aliasing", "9.7.13.15.16",
        "a waiter two phases behind sees the phase bit back where it was (parity-aliasing)"),
    "mbarrier.test-wait": ("mbarrier", "9.7.13.15.16",
        "test_wait and try_wait return whether the phase of the parity completed; neither blocks "
        "for good (try_wait may suspend for a while)"),
    "mbarrier.spin-test-wait": ("Spin loops on a test-wait", "9.7.13.15.16",
        "a loop that repeats try_wait / test_wait of one phase until it passes is that phase's "
        "wait: it passes once the phase completes, and spins forever (deadlock) if it never does"),
    "mbarrier.over-arrival": ("mbarrier", "9.7.13.15.13",
        "more arrivals in one step than are pending: arrival-mismatch (the excess spills into "
        "the next phase in hardware)"),
    "mbarrier.init-fence-warp": ("mbarrier", "9.7.13.4",
        "another warp may use a barrier after init, fence.mbarrier_init and a CTA barrier"),
    "mbarrier.init-fence-async": ("mbarrier", "9.7.13.4",
        "an async copy may complete on a barrier after init and fence.mbarrier_init"),
    "mbarrier.use-before-init": ("mbarrier", "9.7.13.15.9",
        "use by another warp without the fence and a barrier: uninitialized-barrier (undefined)"),
    # named barriers, exit
    "named.count": ("Named barriers and the CTA barrier", "9.7.13.1",
        "bar.sync id, N completes when N threads (whole warps) have arrived"),
    "named.no-count": ("Named barriers and the CTA barrier", "9.7.13.1",
        "bar.sync id without a count waits for every thread of the CTA"),
    "named.count-mismatch": ("Named barriers and the CTA barrier", "9.7.13.1",
        "arrivals on one generation with different thread counts: arrival-mismatch"),
    "named.warp-granular": ("Named barriers and the CTA barrier", "9.7.13.1",
        "an aligned bar by part of a warp is divergent-barrier (undefined); the non-aligned "
        "barrier.cta form by part of a warp is not modelled (UNSUPPORTED)"),
    "named.arrive-sync": ("Named barriers and the CTA barrier", "9.7.13.1",
        "bar.arrive counts towards a generation without waiting; bar.sync waits for it"),
    "exit.cta-barrier": ("Named barriers and the CTA barrier", "9.7.19.2",
        "exited threads release a barrier waiting for all threads of the CTA"),
    "exit.named-count": ("Named barriers and the CTA barrier", "9.7.19.2",
        "a barrier with an explicit thread count does not count exited threads: it hangs"),
    "exit.pending-copy": ("Async operations", "9.7.19.2",
        "the last thread of a CTA exiting while a copy into it is in flight: pending-at-exit"),
    # cluster
    "cluster.barrier": ("Cluster barrier", "9.7.13.3",
        "barrier.cluster.wait passes once every non-exited thread of the cluster arrived"),
    "cluster.exited-threads": ("Cluster barrier", "9.7.13.3",
        "threads that exited are not waited for by the cluster barrier"),
    "cluster.relaxed": ("Cluster barrier", "9.7.13.3",
        "barrier.cluster.arrive.relaxed counts like arrive (it only orders less memory)"),
    "cluster.remote-arrive": ("mbarrier", "9.7.13.15.13",
        "an arrive through mapa counts on the peer CTA's barrier"),
    "cluster.lifetime": ("Operand validity", "9.7.13.15.13",
        "an arrive into a CTA whose threads have all exited: cluster-lifetime"),
    "tma.complete-tx": ("Async operations", "9.7.9.25",
        "a TMA load completes its bytes on its barrier"),
    "tma.multicast": ("Async operations", "9.7.9.25",
        "a multicast TMA load completes its bytes on the barrier of every CTA in the mask"),
    "warp.elect-sync": ("Threads and processes", "9.7.13.x elect.sync",
        "elect.sync elects exactly one lane of the warp"),
    # values handed through memory
    "words.handoff": ("Shared-memory words (values handed between roles)", "9.7.9.8-9, 8",
        "a load ordered after a store by an mbarrier release/acquire sees that store"),
    "data.barrier": ("Shared data (race)", "8, 9.7.13.1",
        "a thread's write of shared data and another warp's access of the same bytes must be "
        "ordered by synchronization (a bar.sync both warps take part in, a release/acquire "
        "pair); else: race"),
    "gmem.read-value": ("Values read from global memory", "9.7.9.8",
        "every reader of an element of a read-only global tensor sees one value, chosen at "
        "launch; the check covers each value of its range"),
    "gmem.read-index": ("Values read from global memory", "9.7.9.8",
        "a read at an index known only at run time reads the element it names (one launch value "
        "per element); an index outside the tensor: invalid-operand"),
    "warp.scan": ("Threads and processes", "9.7.8.6 shfl.sync, 9.7.8.5 vote.sync",
        "shfl.sync gives each lane the value of its source lane (idx b, up lane - b, down "
        "lane + b, bfly lane ^ b; out of the clamp's range: its own); vote.ballot's popc counts "
        "the lanes whose predicate holds"),
    "verdict.unreached": ("Verdicts", "-",
        "an op the model does not follow decides the verdict (UNSUPPORTED) only where an "
        "execution reaches it"),
    "tensormap.drain": ("Tensormaps rewritten in global memory (tensormap-race)", "9.7.9.26.5.2",
        "a TMA load reads its descriptor until a cp.async.bulk.wait_group.read of its thread "
        "retires its bulk async-group; a rewrite before that: tensormap-race"),
    "tensormap.several": ("Tensormaps rewritten in global memory (tensormap-race)", "5.5.8",
        "two descriptor pointers name one descriptor when their addresses (a kernel argument plus "
        "a linear byte offset) are equal, two when they are 128 bytes or more apart; else "
        "unsupported"),
    "tensormap.acquire": ("Tensormaps rewritten in global memory (tensormap-race)", "9.7.13.4",
        "a TMA load through a rewritten descriptor needs the writer's release and its own "
        "acquire (fence.proxy.tensormap::generic); without them: tensormap-race"),
    "buffer.reuse": ("Staged buffers that TMA stores read (race, proxy-race)", "9.7.9.26.5.2",
        "a TMA store reads its stage until a cp.async.bulk.wait_group.read of its thread retires "
        "its bulk async-group; a write of the stage before that: race"),
    "buffer.handover": ("Staged buffers that TMA stores read (race, proxy-race)", "9.7.13.1",
        "writes of a stage reach a TMA store only through a named barrier generation the storing "
        "thread waits in after them; a store before that: race"),
    "buffer.warp-handover": ("Staged buffers that TMA stores read (race, proxy-race)", "9.7.13.2",
        "bar.warp.sync by a buffer's only storing warp, which writes it, hands its lanes' writes "
        "to its own later TMA stores"),
    "buffer.two-storers": ("Staged buffers that TMA stores read (race, proxy-race)", "9.7.13.1",
        "two storing threads in a CTA (a ping-pong epilogue): each store needs the stage's writes "
        "handed over to its own thread; a write its turn's barrier does not order after the other "
        "thread's retired stores: race"),
    "buffer.proxy": ("Staged buffers that TMA stores read (race, proxy-race)", "9.7.13.4",
        "generic-proxy writes of a stage need a fence.proxy.async between them and the TMA store "
        "(async proxy); without it: proxy-race"),
    "buffer.read-proxy": ("Staged buffers that TMA stores read (race, proxy-race)", "9.7.13.4",
        "generic-proxy reads of a stage a TMA load refills need a fence.proxy.async between them "
        "and the release that lets the refill be issued; without it (or with the fence after "
        "the release): proxy-race at the refill"),
    "cp_async.groups": ("cp.async groups (race, pending-at-exit)", "9.7.9.24.5",
        "a thread's cp.async copies are complete and visible to it only after a "
        "cp.async.wait_group of the thread retires their group (committed groups only); an "
        "access of the bytes before that: race"),
    "cp_async.shared": ("cp.async groups (race, pending-at-exit)", "9.7.9.24.5",
        "bytes other threads copy with cp.async are visible to a reader only after each copying "
        "thread's cp.async.wait_group and a barrier from it to the reader; a read before: race"),
    "cp_async.exit": ("cp.async groups (race, pending-at-exit)", "9.7.9.24.3",
        "a thread that exits with cp.async copies not retired leaves them writing shared memory "
        "its CTA may no longer own: pending-at-exit"),
    "dsmem.release-scope": ("DSMEM stores released to a peer CTA (scope)", "8.5",
        "a store into a peer CTA's shared memory (st.shared::cluster) reaches threads of that CTA "
        "through an arrive on its barrier only if the arrive releases at cluster scope; at CTA "
        "scope or relaxed: scope"),
    "dsmem.data": ("DSMEM stores released to a peer CTA (race)", "8.5, 9.7.9.9",
        "the bytes a store into a peer CTA's shared memory writes are that CTA's shared data: a "
        "read or write of them there that no barrier orders after the store (an arrive that "
        "releases it at cluster scope, the phase's completion, the reader's wait): race"),
    "dsmem.peer-running": ("DSMEM stores released to a peer CTA (cluster-lifetime)", "9.7.9.9, "
        "CUDA cluster.sync", "a store into a peer CTA's shared memory before the storing thread "
        "passed a cluster wait: nothing shows the peer is running, and its shared memory is its "
        "own only once it runs: cluster-lifetime"),
    "wgmma.accumulator": ("wgmma accumulator registers (race)", "9.7.15.5, 9.7.15.6",
        "a wgmma writes its accumulator registers until a wgmma.wait_group of the warp retires "
        "its group; a load, store or copy of them before then (other than by a wgmma that "
        "accumulates into them): race; a wgmma into them with no wgmma.fence after the warp's "
        "last access of them, or before its first wgmma: race"),
    "wgmma.operand": ("wgmma operands threads write (race, proxy-race)", "9.7.15.5, 9.7.15.6, 9.7.13.4",
        "a wgmma reads its shared-memory operands until a wgmma.wait_group of the warp retires "
        "its group; a thread's store of them not ordered before the wgmma, or not after that "
        "wait: race; a store ordered before it with no fence.proxy.async between (the writer's "
        "own fence before its next synchronization): proxy-race"),
    "gmem.atom-inc": ("Global work counters (dynamic tile schedulers)", "9.7.13.5",
        "atom.inc returns the old value and wraps to 0 after its limit; other CTAs may take "
        "values between two of it"),
    "tcgen05.commit": ("tcgen05 and tensor memory (tmem-lifetime)", "tcgen05.commit (PTX only)",
        "tcgen05.commit puts one arrive per executing thread in flight on its mbarrier; it lands "
        "once the thread's earlier tcgen05 ops complete"),
    "tcgen05.mma-read": ("Staged buffers that TMA stores read (race, proxy-race)", "tcgen05.mma (PTX only)",
        "a tcgen05.mma reads its shared-memory operands asynchronously until a tcgen05.commit "
        "its thread issues after it arrives; a TMA load into the stage before that: race"),
    "tcgen05.accumulator": ("tcgen05 and tensor memory (tmem-lifetime)",
        "tcgen05.mma, tcgen05.ld (PTX only)",
        "a tcgen05.mma writes its TMEM accumulator until a tcgen05.commit its thread issues after "
        "it lands; a tcgen05.ld of it before that, or an MMA into it before the load's "
        "tcgen05.wait::ld: race"),
    "tmem.alloc-free": ("tcgen05 and tensor memory (tmem-lifetime)", "tcgen05.alloc (PTX only)",
        "a CTA's allocated columns must be freed before its last threads exit: tmem-lifetime"),
    "tmem.relinquish": ("tcgen05 and tensor memory (tmem-lifetime)",
        "tcgen05.relinquish_alloc_permit (PTX only)",
        "an alloc after the CTA relinquished its allocation permit: tmem-lifetime"),
    "tmem.alloc-blocks": ("tcgen05 and tensor memory (tmem-lifetime)", "tcgen05.alloc (PTX only)",
        "tcgen05.alloc blocks while the CTA's columns and the new ones exceed 512"),
    "tmem.pair": ("tcgen05 and tensor memory (tmem-lifetime)",
        "tcgen05.alloc.cta_group::2 (PTX only)",
        "a cta_group::2 alloc / dealloc / relinquish is issued by one warp in each CTA of the "
        "pair: the first waits for its peer's (one that never comes: deadlock), the second "
        "applies it to both CTAs (a different op or column count: arrival-mismatch)"),
    "clc.try_cancel": ("Cluster launch control", "clusterlaunchcontrol.try_cancel (PTX only)",
        "try_cancel writes its 16-byte response asynchronously and completes 16 bytes on its "
        "mbarrier: a read of the response before that completion is a race, a barrier nobody "
        "arms never completes"),
    "tmem.access": ("tcgen05 and tensor memory (tmem-lifetime)", "tcgen05.ld (PTX only)",
        "a tcgen05.ld / st / cp / mma issued while its CTA holds no TMEM columns (before the "
        "alloc, or after the dealloc): tmem-lifetime"),
    "gmem.flag-handoff": ("Global flags between CTAs (deadlock, scope)", "9.7.13.5, 9.7.9.8",
        "a spin loop on a global flag blocks until the adds of other CTAs make its condition "
        "true; one that never sees it: deadlock"),
    "gmem.flag-order": ("Global flags between CTAs (deadlock, scope)", "8.5, 8.7",
        "an add another CTA waits for must be a release at a scope that includes it (a wait an "
        "acquire); a relaxed add, or one at .cta scope across CTAs: scope"),
    "gmem.flag-element": ("Global flags between CTAs (deadlock, scope)", "9.7.13.5, 9.7.9.8",
        "each word of a kernel argument that atomics add to is its own flag (x[0] and x[1] are "
        "two): a wait on one is not satisfied by adds to another (a wait for an add that never "
        "comes to its word: deadlock)"),
    "gmem.flag-store": ("Global flags between CTAs (deadlock, scope)", "9.7.9.9, 8.7",
        "a flag set with st (cute.arch.store) takes the stored value; a waiter sees it once it "
        "is stored; a store another CTA waits for must be a release (.release, or a fence "
        "before a relaxed store): a relaxed or plain store is scope"),
    "gmem.lock": ("Global flags between CTAs (deadlock, scope)", "9.7.13.5, 8.7",
        "a spin loop on atom.cas (or a test-and-set atom.exch on a word that holds only its two "
        "values) takes the lock in one step when the word holds the compared value; a lock never "
        "released: the next taker spins forever (deadlock); the lock must be an acquire and the "
        "unlock a release (scope)"),
    "grid.clusters": ("Global flags between CTAs (deadlock, scope)", "9.7.13.3, 9.7.13.15.13",
        "a grid model of several clusters has one cluster barrier per cluster (completed by the "
        "threads of its cluster alone) and arrives into mbarriers of CTAs of the arriving "
        "thread's cluster; a cycle of waits through both (a cluster barrier waiting for a CTA "
        "that spins on a flag another cluster sets after it): deadlock"),
    "gmem.flag-data": ("Global data a flag hands over (race)", "8.7, 8.9",
        "element stores and loads of a kernel argument in a grid model are cells of one array "
        "for the grid: an access no flag hand-off (release add, acquire wait, bar.sync around "
        "a lane's) orders before another CTA's access of the same element, one a store: race"),
    "warp.sync": ("bar.warp.sync orders its warp's lanes", "9.7.13.2, 8.9",
        "bar.warp.sync with every lane in its mask, by the whole warp, orders each lane's "
        "earlier accesses before every lane's later ones: a lane-subset release or acquire of a "
        "flag, or shared data between lanes, is ordered through it (without it: races NOT "
        "CHECKED); in the model the warp is one thread and the op changes nothing"),
    "gmem.owned": ("Global memory between the threads of the grid (race)", "8.2, 8.9",
        "outside grid models, element stores and loads of a written kernel argument at places "
        "affine in the cluster index: no byte accessed by two threads of the grid with a write "
        "among the accesses (one store of one value by a warp's lanes is one write: a "
        "constant, or a lane-free value outside loops); anything else: races NOT CHECKED, "
        "naming the access"),
    "gmem.partition-owned": ("Global tiles threads copy into through a thread partition, "
        "between the threads of the grid (race)", "8.2, 8.9",
        "outside grid models, a copy (cute.copy, autovec_copy) or element access of a thread's "
        "part of a tile of a written kernel argument (partition_S / partition_D of a universal "
        "or cp.async tiled copy with a one-to-one thread-value layout whose tile divides the "
        "tensor, or partition_C of an SM90 MMA laid out along M and N, at the thread index, "
        "over a tile with a one-to-one static layout) touches the tile's bytes, and the threads "
        "of a CTA using one partition at one place are one accessor there (each touches "
        "elements of its own); a copy of a whole tile by each thread touches all of it; an "
        "element of a thread's part of a static-stride tile is placed at the thread's first "
        "value (tv(tid, 0) read over the tiler), as is a coordinate of an identity tensor's "
        "partition, and a branch on such a coordinate runs in the lanes whose condition does "
        "not fold to false; anything else: races NOT CHECKED, naming the copy"),
    "gmem.tma-owned": ("Global tiles TMA stores write, between the threads of the grid (race)",
        "9.7.9.25.5.2, 8.2, 8.9",
        "outside grid models, a TMA store through a descriptor kernel argument writes the box "
        "its destination coordinate tensor spans, at coordinates affine in the cluster index "
        "over the loop counters: no coordinate written by two of them unless by the lanes of "
        "one warp issuing one store of one shared-memory source at one trip (the DSL does not "
        "elect a lane: each issues the same box from the same bytes); two bulk stores of one "
        "thread are two writers (their writes complete asynchronously); anything else: races "
        "NOT CHECKED, naming the store"),
}
