"""Run SPIN on a lowered model and map its trail back to SyncIR trace events."""
from .spin import (REDUCTION_UNSOUND, EngineError, EngineResult, EngineTimeout, check,  # noqa: F401
                   lower_and_check)
