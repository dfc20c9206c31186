"""SyncIR: the small, printable synchronization IR that every stage speaks."""
from .ir import *  # noqa: F401,F403
from .ir import Elect, Lanes, walk_stmts, stmt_exprs, lift, expr_vars  # noqa: F401
from .ops import *  # noqa: F401,F403  (the ops: syncir/ops/, which imports ir, never the reverse)
from .ops import (BarArrive, BarSync, BarSyncResume, ClusterArrive, ClusterWait, Exit,  # noqa: F401
                  MbarArriveExpectTx, MbarArrive, MbarExpectTx, MbarInit, MbarInitFence,
                  MbarTestWait, MbarWait, SyncOp, TmaLoad, Unsupported)
from .printer import fmt_kernel, fmt_process, fmt_expr, fmt_op  # noqa: F401
from .validate import validate, check, InvalidKernel, Problem, unsupported_ops  # noqa: F401
from .trace import ParamChoice, Step, Complete, Take, KINDS, BOUND_KINDS  # noqa: F401
