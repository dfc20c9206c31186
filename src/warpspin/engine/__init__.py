"""The engines: SPIN (spin.py, spin_engine.py), the general one and the oracle, and the
happens-before engine (hb/). Both implement contract.py: a kernel and options in, an Outcome out."""
from .spin import (REDUCTION_UNSOUND, EngineError, EngineResult, EngineTimeout, check,  # noqa: F401
                   lower_and_check)
