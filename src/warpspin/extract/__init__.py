"""warpspin extractor: traced MLIR data (``warpspin.frontend``) -> SyncIR ``Kernel``."""
from .build import ExtractError, build as extract, short_name

__all__ = ["ExtractError", "extract", "short_name"]
