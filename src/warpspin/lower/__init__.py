"""SyncIR -> Promela."""
from .promela import LowerError, LoweredModel, lower  # noqa: F401
