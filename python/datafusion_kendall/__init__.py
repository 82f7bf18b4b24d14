"""All-pairs Kendall rank correlation for the ``datafusion`` Python package.

``register(ctx)`` adds the SQL table functions ``kendall_all_pairs``,
``kendall_top_partners``, ``kendall_cross_pairs`` and
``kendall_candidate_pairs`` to a
``datafusion.SessionContext``; ``session_config()`` adds the ``kendall.*``
options (``SET kendall.variant = 'c'``) to the configuration a context is
built from; ``context()`` does both. ``corr(...)`` is the one-call
convenience with pandas' habits: a pandas DataFrame, pyarrow Table, numpy
2-D array or AnnData object in, a pandas DataFrame of pairs (or a square
matrix) out. ``candidate_pairs(...)`` computes listed pairs only, and
``batch_kendall_tau(...)`` is a drop-in for ``fast_kendall_sc``'s function
of that name. ``sparse_table(...)`` makes a scipy sparse matrix or AnnData
object a table the functions read in place.

The extension is compiled against one DataFusion major version; the FFI
between it and the ``datafusion`` package is stable only within that major,
so importing this module with another major raises ImportError.

The code lives in private modules by concern: ``_session`` (options and
registration), ``_inputs`` (inputs to Arrow), ``_progress`` (progress bars),
``_corr`` (``corr()`` and its pandas results), ``_candidates``
(listed pairs) and ``_graphml`` (``write_graphml()``); ``_native`` is the
compiled extension.
"""

from __future__ import annotations

# Names the package had as attributes when it was one module (its own
# imports); kept so that none disappears.
import math  # noqa: F401
import threading  # noqa: F401
import uuid  # noqa: F401
from typing import Any  # noqa: F401

import datafusion as _datafusion

from . import _native

# Before anything else uses the extension: refuse another DataFusion major.
_native.check_host(_datafusion.__version__)

__version__: str = _native.__version__
"""The version of this package (that of the Rust crate it is built from)."""

DATAFUSION_MAJOR: int = _native.datafusion_major()
"""The DataFusion major version the extension was built against."""

from ._candidates import batch_kendall_tau, candidate_pairs  # noqa: E402
from ._corr import corr  # noqa: E402
from ._graphml import write_graphml  # noqa: E402
from ._inputs import sparse_table  # noqa: E402
from ._session import FUNCTIONS, context, register, session_config  # noqa: E402

# Documented, printed and pickled as the package's own, as before the split.
for _f in (
    batch_kendall_tau,
    candidate_pairs,
    context,
    corr,
    register,
    session_config,
    sparse_table,
    write_graphml,
):
    _f.__module__ = __name__
del _f

__all__ = [
    "DATAFUSION_MAJOR",
    "FUNCTIONS",
    "batch_kendall_tau",
    "candidate_pairs",
    "context",
    "corr",
    "register",
    "session_config",
    "sparse_table",
    "write_graphml",
]
