"""The kernel `warpspin doctor` traces (imported only when the CuTe DSL is installed): one warp
initializes an mbarrier, fences the init and meets the CTA barrier."""
import cutlass.cute as cute
from cutlass import Int64

try:  # DSL 4.8 moved the allocator to cutlass.memory; 4.4 .. 4.7 have it in cutlass.utils
    from cutlass.memory import SmemAllocator
except ImportError:
    from cutlass.utils import SmemAllocator


@cute.kernel
def kernel():
    @cute.struct
    class Smem:
        bar: cute.struct.MemRange[Int64, 1]

    storage = SmemAllocator().allocate(Smem)
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(storage.bar.data_ptr(), 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()


@cute.jit
def launch():
    kernel().launch(grid=(1, 1, 1), block=(32, 1, 1))
