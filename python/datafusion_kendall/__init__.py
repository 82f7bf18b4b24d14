"""All-pairs Kendall rank correlation for the ``datafusion`` Python package.

``register(ctx)`` adds the SQL table functions ``kendall_all_pairs``,
``kendall_top_partners`` and ``kendall_cross_pairs`` to a
``datafusion.SessionContext``; ``session_config()`` adds the ``kendall.*``
options (``SET kendall.variant = 'c'``) to the configuration a context is
built from; ``context()`` does both. ``corr(...)`` is the one-call
convenience with pandas' habits: a pandas DataFrame, pyarrow Table, numpy
2-D array or AnnData object in, a pandas DataFrame of pairs (or a square
matrix) out.

The extension is compiled against one DataFusion major version; the FFI
between it and the ``datafusion`` package is stable only within that major,
so importing this module with another major raises ImportError.
"""

from __future__ import annotations

import math
import threading
import uuid
from typing import Any

import datafusion as _datafusion

from . import _native

_native.check_host(_datafusion.__version__)

__version__: str = _native.__version__
"""The version of this package (that of the Rust crate it is built from)."""

DATAFUSION_MAJOR: int = _native.datafusion_major()
"""The DataFusion major version the extension was built against."""

FUNCTIONS: tuple[str, ...] = tuple(_native.function_names())
"""The SQL table functions :func:`register` adds."""

__all__ = [
    "DATAFUSION_MAJOR",
    "FUNCTIONS",
    "context",
    "corr",
    "register",
    "session_config",
]


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


_METHODS = {"a": "a", "b": "b", "c": "c", "kendall": "b", "tau-a": "a", "tau-b": "b", "tau-c": "c"}


def corr(
    data: Any,
    *,
    method: str = "b",
    min_periods: int = 1,
    threshold: float | None = None,
    p_values: bool = False,
    square: bool = False,
    genes: str = "columns",
    kernel: str = "auto",
    partitions: int | None = None,
    progress: bool | None = None,
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
        square: return a square genes x genes frame like pandas' ``corr``
            (1.0 on the diagonal, NaN for pairs without a value or below the
            threshold) instead of one row per pair. For small inputs: it holds
            every pair in memory.
        genes: ``"columns"`` (default) or ``"rows"``: where a frame, table or
            array has its genes.
        kernel: the ``kendall.kernel`` option (``'auto'`` picks the fastest).
        partitions: how many partitions (threads) compute pairs; the default
            is one per core.
        progress: show a tqdm progress bar of the pairs computed; None shows
            it in Jupyter notebooks only.

    Returns:
        A pandas DataFrame with columns ``gene_i, gene_j, tau`` (plus
        ``p_value, n``), one row per unordered pair of distinct genes,
        ``gene_i`` before ``gene_j`` in the input's order; or, with
        ``square=True``, the genes x genes matrix.

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
    if genes not in ("columns", "rows"):
        raise ValueError(f"genes must be 'columns' or 'rows', got {genes!r}")

    # Large batches: each crosses the FFI and is converted with fixed costs
    # of its own, and the whole result is held in memory anyway.
    config = _datafusion.SessionConfig().with_batch_size(1 << 20)
    if partitions is not None:
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions must be a whole number >= 1, got {partitions!r}")
        config = config.with_target_partitions(partitions)
    ctx = context(config)
    table, options, gene_ids = _to_arrow(data, genes)
    options.update(
        {
            "variant": variant,
            "min_periods": str(min_periods),
            "kernel": kernel,
        }
    )
    # Gene columns as dictionaries of the gene list: 4 bytes a row, and
    # pandas categories without converting millions of strings.
    options["gene_ids"] = "dictionary"
    name = "dk_input_" + uuid.uuid4().hex
    ctx.from_arrow(table, name=name)
    for key, value in options.items():
        ctx.sql(f"SET kendall.{key} = '{value}'")
    columns = "gene_i, gene_j, tau" + (", p_value, n" if p_values else "")
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
    return _to_pandas(result, gene_ids, square, pd)


def _to_arrow(data: Any, genes: str):
    """``data`` as a pyarrow Table, the ``kendall.*`` options that read it,
    and the gene ids in input order."""
    import numpy as np
    import pyarrow as pa

    if _is_anndata(data):
        return _anndata_to_arrow(data)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ValueError(f"corr() takes a 2-D array, got {data.ndim} dimensions")
        x = data.T if genes == "rows" else data
        if not (np.issubdtype(x.dtype, np.number) and not np.iscomplexobj(x)):
            raise ValueError(f"corr() takes a numeric array, got dtype {x.dtype}")
        return _matrix_table(x, [str(i) for i in range(x.shape[1])])
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        if genes == "rows":
            # Gene ids: the first column if it holds strings, else the index.
            first = data.dtypes.iloc[0] if data.shape[1] else None
            if first is not None and (pd.api.types.is_string_dtype(first) or first == object):
                frame = data.rename(columns=str)
            else:
                frame = data.rename(columns=str).reset_index(names="gene")
                frame["gene"] = frame["gene"].astype(str)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            ids = [str(g) for g in table.column(0).to_pylist()]
            return table, {"layout": "genes_as_rows"}, ids
        names = [str(c) for c in data.columns]
        _numeric_only(names, data.dtypes, pd.api.types.is_numeric_dtype)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"corr(): duplicate column (gene) name {dup!r}")
        kinds = {t for t in data.dtypes}
        only = next(iter(kinds)) if len(kinds) == 1 else None
        if isinstance(only, np.dtype) and only.kind in "iuf":
            # One plain numpy dtype: passed as it is (integers stay exact
            # beyond 2^53, as the engine compares them).
            x = data.to_numpy()
        else:
            # Mixed or nullable columns: float64, with pd.NA as NaN (missing).
            x = data.to_numpy(dtype=np.float64, na_value=np.nan)
        return _matrix_table(x, names)
    if isinstance(data, pa.Table):
        if genes == "rows":
            # The engine's default gene column: the first string column.
            strings = [
                k
                for k, t in enumerate(data.schema.types)
                if pa.types.is_string(t) or pa.types.is_large_string(t)
            ]
            if not strings:
                raise ValueError("corr(): with genes='rows' a table needs a string column of gene ids")
            ids = [str(g) for g in data.column(strings[0]).to_pylist()]
            return data, {"layout": "genes_as_rows"}, ids
        _numeric_only(
            data.column_names,
            data.schema.types,
            lambda t: pa.types.is_integer(t) or pa.types.is_floating(t),
        )
        return data, {"layout": "genes_as_columns"}, list(data.column_names)
    raise TypeError(
        "corr() takes a pandas DataFrame, pyarrow Table or RecordBatch, numpy 2-D array or "
        f"AnnData object, got {type(data).__name__}"
    )


def _matrix_table(x: Any, ids: list[str]):
    """A samples x genes matrix as an Arrow table in whichever layout has
    fewer columns (an Arrow column costs far more than a row): genes as rows
    (a gene-id column and one column per sample) or genes as columns."""
    import numpy as np
    import pyarrow as pa

    samples, m = x.shape
    if samples + 1 < m:
        rows = np.ascontiguousarray(x.T)  # genes x samples: each sample a column
        columns = {"gene": pa.array(ids, pa.string())}
        columns.update({f"s{k}": rows[:, k] for k in range(samples)})
        # rows[:, k] is strided; Arrow copies it once into a column.
        return pa.table(columns), {"layout": "genes_as_rows"}, ids
    cols = np.asfortranarray(x)
    return pa.table({g: cols[:, j] for j, g in enumerate(ids)}), {"layout": "genes_as_columns"}, ids


def _numeric_only(names, types, is_numeric) -> None:
    """pandas' rule for ``corr``: every column is a variable, so a
    non-numeric one is an error (the SQL layout would skip it as a label)."""
    for name, t in zip(names, types):
        # numpy and pandas dtypes of ints and floats: kinds i, u, f (fast);
        # others (Arrow types) by the given test.
        kind = getattr(t, "kind", None)
        if kind in ("i", "u", "f"):
            continue
        if kind == "b" or not is_numeric(t) or str(t) in ("bool", "boolean"):
            raise ValueError(
                f"corr(): column {name!r} has type {t}; with genes as columns every column "
                "is a gene and must be numeric (genes='rows' for gene ids in a column)"
            )


def _is_anndata(data: Any) -> bool:
    return type(data).__name__ == "AnnData" and hasattr(data, "X") and hasattr(data, "var_names")


def _anndata_to_arrow(adata: Any):
    """AnnData: genes are ``var_names``, cells the samples. Dense ``.X`` as
    one column per gene; sparse ``.X`` as (gene, cell, value) triples of its
    stored entries, absent entries zero."""
    import numpy as np
    import pyarrow as pa

    x = adata.X
    ids = [str(g) for g in adata.var_names]
    if len(set(ids)) != len(ids):
        dup = next(g for g in ids if ids.count(g) > 1)
        raise ValueError(f"corr(): duplicate gene id {dup!r} in var_names")
    if hasattr(x, "tocoo"):
        if adata.n_obs < 2:
            raise ValueError(f"corr(): AnnData has {adata.n_obs} cells; at least 2 are needed")
        # The engine numbers the genes of the long layout in order of first
        # appearance: cell 0's value of every gene comes first (zero or
        # not), so genes keep the order of var_names and a gene without any
        # stored entry still exists. Then the other cells' stored entries.
        x = x.tocsr()
        first = np.asarray(x[0].todense(), dtype=np.float64).ravel()
        rest = x[1:].tocoo()
        cells = rest.row.astype(np.int64) + 1
        genes = np.concatenate([np.arange(len(ids), dtype=np.int32), rest.col.astype(np.int32)])
        samples = np.concatenate([np.zeros(len(ids), dtype=np.int64), cells])
        values = np.concatenate([first, np.asarray(rest.data, dtype=np.float64)])
        # A cell without any stored entry must exist too: one explicit zero.
        seen = np.zeros(adata.n_obs, dtype=bool)
        seen[0] = True
        seen[cells] = True
        empty = np.flatnonzero(~seen)
        if len(empty):
            genes = np.concatenate([genes, np.zeros(len(empty), dtype=np.int32)])
            samples = np.concatenate([samples, empty.astype(np.int64)])
            values = np.concatenate([values, np.zeros(len(empty))])
        gene = pa.DictionaryArray.from_arrays(pa.array(genes), pa.array(ids, pa.string()))
        table = pa.table(
            {"gene": gene.cast(pa.string()), "sample": pa.array(samples), "value": pa.array(values)}
        )
        return table, {"layout": "long", "absent": "zero"}, ids
    return _matrix_table(np.asarray(x), ids)


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython  # type: ignore[import-not-found]
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _collect(df: Any, progress: bool, source: str):
    """Run ``df`` to a pyarrow Table; with ``progress``, a tqdm bar of the
    pairs computed is fed from the engine's counters of the scans of
    ``source`` (a table name of this call's own, so that calls running at
    once in other threads have bars of their own) while it runs."""
    if not progress:
        return df.to_arrow_table()
    try:
        from tqdm.auto import tqdm
    except ImportError as e:
        raise ImportError("progress=True needs tqdm (pip install tqdm)") from e
    done = threading.Event()
    bar = tqdm(total=None, unit="pairs", unit_scale=True, desc="kendall")

    def poll() -> None:
        while not done.wait(0.2):
            _update(bar, source)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    finished = False
    try:
        table = df.to_arrow_table()
        finished = True
        return table
    finally:
        done.set()
        thread.join()
        _update(bar, source)
        # The plan may be gone before the last poll: a finished query has
        # computed every pair it counted.
        if finished and bar.total is not None and bar.n < bar.total:
            bar.update(bar.total - bar.n)
        bar.close()


def _update(bar: Any, source: str) -> None:
    state = _native.progress(source)
    if state is None:
        return
    pairs, total = state
    if total is not None and bar.total != total:
        bar.total = total
        bar.refresh()
    if pairs > bar.n:
        bar.update(pairs - bar.n)


def _to_pandas(result: Any, gene_ids: list[str], square: bool, pd: Any):
    """The engine's pairs (gene columns as dictionaries of the gene list) as
    a long pandas frame with categorical gene columns, or a square matrix."""
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
    if square:
        matrix = np.full((m, m), np.nan)
        np.fill_diagonal(matrix, 1.0)
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
