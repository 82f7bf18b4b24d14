"""``corr()``, the one-call convenience with pandas' habits, and the
conversion of the engine's pairs into a pandas frame or square matrix."""

from __future__ import annotations

import math
import uuid
from typing import Any


from ._missing import check_complete, diagonal
from ._inputs import _register, _to_arrow
from ._groups import group_codes, group_of_rows, groups_table, labels_of
from ._progress import _collect, _in_notebook
from ._session import result_context

_NAN_POLICIES = {
    "omit": "pairwise",
    "propagate": "propagate",
    "raise": "error",
    "complete": "complete",
}
_ALTERNATIVES = ("two-sided", "less", "greater")

_METHODS = {"a": "a", "b": "b", "c": "c", "kendall": "b", "tau-a": "a", "tau-b": "b", "tau-c": "c"}


def corr(
    data: Any,
    *,
    method: str = "b",
    min_periods: int = 1,
    threshold: float | None = None,
    p_values: bool = False,
    alternative: str = "two-sided",
    continuity: bool = False,
    nan_policy: str = "omit",
    square: bool = False,
    genes: str = "columns",
    kernel: str = "auto",
    partitions: int | None = None,
    progress: bool | None = None,
    groupby: Any = None,
):
    """Kendall's tau between every pair of genes (variables) of ``data``.

    Like ``pandas.DataFrame.corr(method='kendall')``, but computed by the
    datafusion-kendall engine: exact, on every core, orders of magnitude
    faster.

    Args:
        data: a pandas DataFrame, pyarrow Table or RecordBatch, numpy 2-D
            array, or an AnnData object. For frames, tables and arrays the
            columns are the genes and the rows the samples, as in pandas'
            ``corr`` (``genes="rows"`` for the other way round: then a frame's
            first column holds the gene ids if it holds strings, else its
            index does; a table's first string column holds them). For
            AnnData the genes are ``var_names`` and the cells the samples;
            ``.X`` may be dense or a scipy sparse matrix (absent entries are
            zeros, passed as (gene, cell, value) triples without densifying).
        method: ``'b'`` (tau-b, pandas' and scipy's coefficient, the
            default), ``'a'`` or ``'c'`` (``'kendall'`` is ``'b'``).
        min_periods: pairs with fewer samples where both genes have a value
            get NaN (pandas' ``min_periods``). Missing values (NaN, None) are
            left out pair by pair, as pandas does.
        threshold: keep only pairs with ``abs(tau) >= threshold``; the filter
            runs inside the engine, so dropped pairs never become rows.
        p_values: add ``p_value`` (scipy's ``kendalltau`` p-value) and ``n``
            (the samples the pair used).
        alternative: the alternative hypothesis of ``p_value``, as scipy's
            and R's: ``'two-sided'`` (default), ``'less'`` (tau < 0) or
            ``'greater'`` (tau > 0); the ``kendall.alternative`` option.
        continuity: R's continuity correction of the normal approximation
            (``cor.test(..., continuity=TRUE)``; exact p-values are not
            changed); the ``kendall.continuity`` option.
        nan_policy: missing values (NaN, None), with scipy's names:
            ``'omit'`` (default; each pair uses the samples both genes have,
            as pandas' ``corr``), ``'propagate'`` (a pair in which either
            gene has a missing value gets NaN tau and p-value, scipy's
            default), ``'raise'`` (an error naming the gene and sample), or
            ``'complete'`` (R's ``use="complete.obs"``: a sample missing in
            any gene is dropped for every pair). The ``kendall.missing``
            option (``'pairwise'``, ``'propagate'``, ``'error'``,
            ``'complete'``).
        square: return a square genes x genes frame like pandas' ``corr``
            (on the diagonal 1.0, or NaN for a gene with fewer than
            ``min_periods`` values; NaN for pairs without a value or below
            the threshold) instead of one row per pair. For small inputs: it holds
            every pair in memory.
        genes: ``"columns"`` (default) or ``"rows"``: where a frame, table or
            array has its genes.
        kernel: the ``kendall.kernel`` option (``'auto'`` picks the fastest).
        partitions: how many partitions (threads) compute pairs; the default
            is one per core.
        progress: show a tqdm progress bar of the pairs computed; None shows
            it in Jupyter notebooks only.
        groupby: one label per sample (row) — an array, a pandas Series
            (aligned with a frame's index, or an AnnData's ``obs_names``), or
            the name of one of a frame's columns (then not a gene) — to
            compute each group's pairs over its samples only, as pandas'
            ``data.groupby(labels).corr(method="kendall")``; one engine query
            for every group. Samples with a missing label are left out.

    Returns:
        A pandas DataFrame with columns ``gene_i, gene_j, tau`` (plus
        ``p_value, n``), one row per unordered pair of distinct genes,
        ``gene_i`` before ``gene_j`` in the input's order; or, with
        ``square=True``, the genes x genes matrix. With ``groupby``: the
        same with a leading ``group`` column (the labels, in sorted order),
        or with ``square=True`` the matrices one below the other, indexed
        by (label, gene), as pandas' ``groupby().corr()`` returns them.

    Use SQL instead (``context().sql(...)``) for outputs too large for
    memory: ``COPY (SELECT ... FROM kendall_all_pairs(...)) TO 'net.parquet'``
    streams hundreds of millions of pairs to disk, and SQL adds
    ``q_value``, top partners per gene and cross pairs between two matrices.
    """
    import pandas as pd

    variant = _METHODS.get(str(method).lower())
    if variant is None:
        raise ValueError(f"method must be 'a', 'b', 'c' or 'kendall', got {method!r}")
    if isinstance(min_periods, bool) or not isinstance(min_periods, int) or min_periods < 1:
        raise ValueError(f"min_periods must be a whole number >= 1, got {min_periods!r}")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not math.isfinite(threshold)
    ):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if alternative not in _ALTERNATIVES:
        raise ValueError(
            f"alternative must be 'two-sided', 'less' or 'greater', got {alternative!r}"
        )
    if not isinstance(continuity, bool):
        raise ValueError(f"continuity must be True or False, got {continuity!r}")
    missing = _NAN_POLICIES.get(nan_policy) if isinstance(nan_policy, str) else None
    if missing is None:
        raise ValueError(
            "nan_policy must be 'omit', 'propagate', 'raise' or 'complete', "
            f"got {nan_policy!r}"
        )
    if genes not in ("columns", "rows"):
        raise ValueError(f"genes must be 'columns' or 'rows', got {genes!r}")

    key_name = None
    if groupby is not None:
        if genes != "columns":
            raise ValueError("groupby= groups the rows (samples): it takes genes='columns'")
        data, groupby, key_name = _group_key(data, groupby, pd)
    ctx = result_context(partitions)
    table, options, gene_ids = _to_arrow(data, genes)
    if missing == "complete" and groupby is None:
        check_complete(data, table, options, gene_ids)
    grouping = None
    if groupby is not None:
        index = data.index if isinstance(data, pd.DataFrame) else getattr(data, "obs_names", None)
        codes, uniques = group_codes(groupby, _rows(data), index)
        grouping = (codes, uniques)
        groups_name = "dk_groups_" + uuid.uuid4().hex
        ctx.from_arrow(groups_table(codes), name=groups_name)
        options["groups"] = groups_name
    options.update(
        {
            "variant": variant,
            "min_periods": str(min_periods),
            "kernel": kernel,
            "alternative": alternative,
            "continuity": "true" if continuity else "false",
            "missing": missing,
        }
    )
    # Gene columns as dictionaries of the gene list: 4 bytes a row, and
    # pandas categories without converting millions of strings.
    options["gene_ids"] = "dictionary"
    name = "dk_input_" + uuid.uuid4().hex
    _register(ctx, table, name)
    for key, value in options.items():
        ctx.sql(f"SET kendall.{key} = '{value}'")
    columns = "gene_i, gene_j, tau" + (", p_value, n" if p_values else "")
    if grouping is not None:
        columns = '"group", ' + columns
    # NaN tau (a constant gene) sorts above every number in DataFusion's
    # comparisons; a threshold drops it, as pandas users expect.
    where = (
        ""
        if threshold is None
        else f" WHERE abs(tau) >= {float(threshold)!r} AND NOT isnan(tau)"
    )
    df = ctx.sql(f"SELECT {columns} FROM kendall_all_pairs('{name}'){where}")

    if progress is None:
        progress = _in_notebook()
    result = _collect(df, progress, name)
    if grouping is not None:
        return _grouped(result, grouping, data, gene_ids, square, (missing, min_periods), key_name)
    diag = diagonal(data, table, options, missing, min_periods) if square else None
    return _to_pandas(result, gene_ids, diag, pd)


def _group_key(data: Any, groupby: Any, pd: Any):
    """``data`` without the grouping column when ``groupby`` names one of
    its columns, the labels, and the key's name (pandas' index level)."""
    if isinstance(data, pd.DataFrame) and isinstance(groupby, str) and groupby in data.columns:
        return data.drop(columns=[groupby]), data[groupby], groupby
    return data, groupby, getattr(groupby, "name", None)


def _rows(data: Any) -> int:
    """The number of samples (rows) of a genes-as-columns input."""
    if hasattr(data, "n_obs"):
        return int(data.n_obs)
    if hasattr(data, "num_rows"):
        return int(data.num_rows)
    return int(data.shape[0])


def _take_rows(data: Any, rows: Any):
    """The sample rows ``rows`` of ``data`` (one group's samples)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data.iloc[rows]
    if hasattr(data, "take") and hasattr(data, "num_rows"):
        return data.take(rows)
    return data[rows]


def _grouped(result, grouping, data, gene_ids, square, missing_periods, key_name):
    """A grouped result (with its ``group`` column of codes) as pandas: a
    long frame with a leading ``group`` column of labels, rows in label
    order; or every group's square matrix, indexed by (label, gene)."""
    import numpy as np
    import pandas as pd

    codes, uniques = grouping
    row_codes = group_of_rows(result)
    order = np.argsort(row_codes, kind="stable")
    pairs = result.drop_columns(["group"]).take(order)
    row_codes = row_codes[order]
    if not square:
        frame = _to_pandas(pairs, gene_ids, None, pd)
        frame.insert(0, "group", labels_of(row_codes, uniques))
        return frame
    missing, min_periods = missing_periods
    bounds = np.searchsorted(row_codes, np.arange(len(uniques) + 1))
    squares = {}
    for code, label in enumerate(uniques):
        part = pairs.slice(bounds[code], bounds[code + 1] - bounds[code])
        samples = _take_rows(data, np.flatnonzero(codes == code))
        table, options, _ = _to_arrow(samples, "columns")
        diag = diagonal(samples, table, options, missing, min_periods)
        squares[label] = _to_pandas(part, gene_ids, diag, pd)
    columns_name = data.columns.name if isinstance(data, pd.DataFrame) else None
    return pd.concat(squares, names=[key_name, columns_name])


def _to_pandas(result: Any, gene_ids: list[str], diag: Any, pd: Any):
    """The engine's pairs (gene columns as dictionaries of the gene list) as
    a long pandas frame with categorical gene columns, or, given the
    diagonal ``diag``, a square matrix."""
    import numpy as np
    import pyarrow as pa

    def remap(names: list[str]) -> Any:
        """Positions of the engine's gene list in gene_ids (None: the same)."""
        if names == gene_ids:
            return None
        where = {g: k for k, g in enumerate(gene_ids)}
        return np.array([where[g] for g in names], dtype=np.int64)

    rows = result.num_rows
    m = len(gene_ids)
    # pandas' own code width for m categories, so from_codes keeps the array.
    width = np.int8 if m < 2**7 else np.int16 if m < 2**15 else np.int32 if m < 2**31 else np.int64

    def codes(column: str) -> Any:
        """The column's dictionary codes as positions in gene_ids, written
        batch by batch into one array (no intermediate copies: at millions
        of rows, fresh memory is what costs)."""
        out = np.empty(rows, dtype=width)
        chunks = result.column(column).chunks
        if not chunks:
            return out
        # Every batch shares the engine's gene list (the input's order):
        # compared in Arrow, converted to Python once.
        first = chunks[0].dictionary
        first_map = remap(first.to_pylist())
        pos = 0
        for chunk in chunks:
            d = chunk.dictionary
            mapping = first_map if d.equals(first) else remap(d.to_pylist())
            idx = chunk.indices.to_numpy(zero_copy_only=False)
            out[pos : pos + len(idx)] = idx if mapping is None else mapping[idx]
            pos += len(idx)
        return out

    def values(column: str, dtype: Any) -> Any:
        out = np.empty(rows, dtype=dtype)
        pos = 0
        for chunk in result.column(column).chunks:
            # Floats: nulls (too few shared samples) become NaN.
            part = chunk.to_numpy(zero_copy_only=False)
            out[pos : pos + len(part)] = part
            pos += len(part)
        return out

    i, j = codes("gene_i"), codes("gene_j")
    tau = values("tau", np.float64)
    if diag is not None:
        matrix = np.full((m, m), np.nan)
        np.fill_diagonal(matrix, diag)
        matrix[i, j] = tau
        matrix[j, i] = tau
        return pd.DataFrame(matrix, index=gene_ids, columns=gene_ids)
    categories = pd.Index(gene_ids, dtype=object)
    frame = {
        "gene_i": pd.Categorical.from_codes(i, categories=categories, validate=False),
        "gene_j": pd.Categorical.from_codes(j, categories=categories, validate=False),
        "tau": tau,
    }
    if "p_value" in result.column_names:
        frame["p_value"] = values("p_value", np.float64)
        frame["n"] = values("n", np.int64)
    return pd.DataFrame(frame, copy=False)
