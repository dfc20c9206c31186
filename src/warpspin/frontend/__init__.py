"""warpspin frontend: trace CuTe DSL kernels on the CPU into plain data (no MLIR objects)."""
from .mlir_data import (Block, Frame, KernelArg, Op, Region, SourceLoc, TracedKernel, ValueId,
                        ValueInfo)
from .trace import (TraceError, capture, configured, fake_stream, fake_tensor, sym_int, trace)

__all__ = [
    "Block", "Frame", "KernelArg", "Op", "Region", "SourceLoc", "TracedKernel", "ValueId",
    "ValueInfo", "TraceError", "capture", "configured", "fake_stream", "fake_tensor", "sym_int",
    "trace",
]
