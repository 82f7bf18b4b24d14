"""Missing values of a :func:`corr` input, counted in Python: the diagonal
of ``corr(square=True)``, as pandas' ``corr`` fills it (1.0 for a gene with
at least ``min_periods`` values, NaN for one with fewer, a column of NaN
included), and the error of a listwise deletion that leaves no sample."""

from __future__ import annotations

from typing import Any


def diagonal(data: Any, table: Any, options: dict, missing: str, min_periods: int):
    """Each gene's tau with itself, in the order of the engine's genes.

    ``table`` and ``options`` are what ``_to_arrow`` made of ``data``;
    ``missing`` is the ``kendall.missing`` value: under ``'complete'`` a
    gene's values are the samples no gene misses, under ``'propagate'`` a
    gene with a missing value is NaN with itself, as with any other gene.
    """
    import numpy as np

    counts, any_missing, complete, _ = _counts(data, table, options)
    if missing == "complete":
        counts = np.full(len(counts), complete)
    out = np.where(counts >= min_periods, 1.0, np.nan)
    if missing == "propagate":
        out[any_missing] = np.nan
    return out


def check_complete(data: Any, table: Any, options: dict, ids: list) -> None:
    """For ``nan_policy='complete'``: a ``ValueError`` when no sample has
    every gene (R's ``no complete element pairs``), saying what removed
    them: a gene missing in every sample, or else that every sample misses
    some gene."""
    import numpy as np

    counts, _, complete, samples = _counts(data, table, options)
    if complete or not len(counts) or not samples:
        return
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        cause = f"gene {ids[empty[0]]!r} has no value"
    else:
        cause = "every sample misses a value in some gene"
    raise ValueError(
        "corr(): no complete element pairs: nan_policy='complete' drops every sample "
        f"missing in any gene, and {cause}; leave such genes out, or use "
        "nan_policy='omit' (for each pair, the samples both genes have)"
    )


def _counts(data: Any, table: Any, options: dict):
    """Each gene's count of values, whether it misses any, the number of
    samples no gene misses, and the number of samples."""
    import numpy as np

    if options.get("layout") == "long":
        return _sparse_counts(data.X)
    present = ~np.isnan(_dense_values(table, options))  # genes x samples
    counts = present.sum(axis=1)
    return counts, ~present.all(axis=1), int(present.all(axis=0).sum()), present.shape[1]


def _dense_values(table: Any, options: dict):
    """The values of a genes-as-columns or genes-as-rows Arrow table as a
    genes x samples float array, missing values (null, NaN) as NaN."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def floats(column: Any):
        return np.asarray(
            pc.cast(column, pa.float64()).to_numpy(), dtype=np.float64
        )

    if options.get("layout") == "genes_as_rows":
        # The gene ids: the first string column, as the engine reads it.
        ids = next(
            k
            for k, t in enumerate(table.schema.types)
            if pa.types.is_string(t) or pa.types.is_large_string(t)
        )
        columns = [floats(c) for k, c in enumerate(table.columns) if k != ids]
        return np.column_stack(columns) if columns else np.empty((table.num_rows, 0))
    columns = [floats(c) for c in table.columns]
    return np.vstack(columns) if columns else np.empty((0, table.num_rows))


def _sparse_counts(x: Any):
    """For a cells x genes scipy matrix (absent entries 0, stored NaN
    missing): each gene's count of values, whether it misses any, the
    number of cells no gene misses, and the number of cells."""
    import numpy as np

    x = x.tocsc()
    cells, genes = x.shape
    nan = np.isnan(x.data)
    gene_of = np.repeat(np.arange(genes), np.diff(x.indptr))
    missing = np.bincount(gene_of[nan], minlength=genes)
    complete = cells - len(np.unique(x.indices[nan]))
    return cells - missing, missing > 0, complete, cells
