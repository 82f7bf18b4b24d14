"""Sessions: the ``kendall.*`` options in a ``SessionConfig`` and the table
functions registered on a ``SessionContext``."""

from __future__ import annotations

import datafusion as _datafusion

from . import _native

FUNCTIONS: tuple[str, ...] = tuple(_native.function_names())
"""The SQL table functions :func:`register` adds."""


def session_config(
    config: _datafusion.SessionConfig | None = None,
) -> _datafusion.SessionConfig:
    """Add the ``kendall.*`` options to ``config`` (a new one if None).

    A context built from it accepts ``SET kendall.<option> = ...`` and
    ``SHOW kendall.<option>``, as the command-line shell does. DataFusion
    cannot add an option namespace to a context that already exists, so the
    options go in with the configuration the context is built from.
    """
    if config is None:
        # SHOW needs the information schema, as in the command-line shell.
        config = _datafusion.SessionConfig().with_information_schema(True)
    return config.with_extension(_native.KendallConfig())


def register(ctx: _datafusion.SessionContext) -> _datafusion.SessionContext:
    """Register the table functions (:data:`FUNCTIONS`) on ``ctx``; returns it.

    For ``SET kendall.*`` the context must have been built from
    :func:`session_config` (or use :func:`context`); without it every
    option keeps its default.
    """
    for name in FUNCTIONS:
        ctx.register_udtf(_datafusion.udtf(_native.TableFunction(name), name))
    return ctx


def context(
    config: _datafusion.SessionConfig | None = None,
) -> _datafusion.SessionContext:
    """A new ``SessionContext`` with the ``kendall.*`` options and functions."""
    return register(_datafusion.SessionContext(session_config(config)))


def result_context(partitions: int | None) -> _datafusion.SessionContext:
    """A context for a call that collects its whole result (``corr()``,
    ``candidate_pairs()``): large batches, each crossing the FFI with fixed
    costs of its own; ``partitions`` threads (None: one per core)."""
    config = _datafusion.SessionConfig().with_batch_size(1 << 20)
    if partitions is not None:
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions must be a whole number >= 1, got {partitions!r}")
        config = config.with_target_partitions(partitions)
    return context(config)
