"""warpspin extractor: traced MLIR data (``warpspin.frontend``) -> SyncIR ``Kernel``."""
from .build import ExtractError, ExtractorBug, build as extract, short_name

__all__ = ["ExtractError", "ExtractorBug", "extract", "short_name"]
