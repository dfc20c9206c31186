"""Run SPIN on a lowered model and map its trail back to SyncIR trace events."""
from .spin import EngineError, EngineResult, check  # noqa: F401
