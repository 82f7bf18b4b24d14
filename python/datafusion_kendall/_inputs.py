"""Inputs of :func:`corr`: pandas DataFrames, pyarrow Tables and
RecordBatches, numpy 2-D arrays and AnnData objects (dense or scipy-sparse
``.X``) as Arrow tables, with the ``kendall.*`` options that read them and
the gene ids in input order."""

from __future__ import annotations

from typing import Any


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


# Rows per record batch of a table handed to the engine. The `datafusion`
# package aborts the process (a Tokio task spawned outside its runtime,
# while the extension reads the table through the FFI) for a memory table
# whose record batches are large: 5 million rows of triples did, 300,000
# did not. Batches of this many rows (slices, no copy) are read fine.
CHUNK_ROWS = 1 << 16


def _chunked(table: Any):
    """``table`` as record batches of at most :data:`CHUNK_ROWS` rows."""
    import pyarrow as pa

    if all(len(b) <= CHUNK_ROWS for b in table.to_batches()):
        return table
    return pa.Table.from_batches(table.to_batches(max_chunksize=CHUNK_ROWS), schema=table.schema)


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


def _sparse_input(x: Any, names: Any):
    """A cells x features scipy CSC matrix for the engine, gene ids ``names``
    (an Arrow string array), cells numbered from 0: a ``SparseMatrix``
    sharing its arrays (the engine reads them in place), or, when a stored
    value is not finite (NaN: missing), its triples
    (:func:`_sparse_triples`), which the ``kendall.missing`` option reads."""
    import numpy as np
    import pyarrow as pa

    cells = pa.array(np.arange(x.shape[0], dtype=np.int64)).cast(pa.string())
    try:
        # (The engine checks every value: a pass of ours would read them twice.)
        return sparse_table(x, genes=names, cells=cells)
    except ValueError:
        if x.data.size and not _all_finite(x.data):
            return _sparse_triples(x, names)
        raise


def _all_finite(values: Any) -> bool:
    """Whether every value is finite: their sum is, unless it overflowed
    (then each value is tested)."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.add.reduce(values))) or bool(np.isfinite(values).all())


def sparse_table(data: Any, genes: Any = None, cells: Any = None):
    """A cells x genes sparse matrix as a table for
    ``SessionContext.register_table(name, ...)``, which the Kendall table
    functions read in place (as a 10x directory: long layout, absent entries
    0 implied) and other queries as ``(gene, sample, value)`` triples of its
    stored entries.

    Args:
        data: an AnnData object (genes ``var_names``, cells ``obs_names``)
            or a scipy sparse matrix (or a numpy array), cells x genes.
            Values must be finite.
        genes, cells: ids overriding those of ``data`` (default for a
            matrix: positions ``0, 1, ...`` as text).

    The scipy arrays are shared, not copied, when ``data`` is already CSC
    with sorted indices and float values; keep them unchanged while the
    table is registered.
    """
    import numpy as np
    import pyarrow as pa
    import scipy.sparse as sp

    from ._native import SparseMatrix

    x = data.X if _is_anndata(data) else data
    if genes is None and _is_anndata(data):
        genes = [str(g) for g in data.var_names]
    if cells is None and _is_anndata(data):
        cells = [str(c) for c in data.obs_names]
    if len(getattr(x, "shape", ())) != 2:
        raise TypeError(
            "sparse_table() takes an AnnData object, a scipy sparse matrix or a numpy 2-D array, "
            f"got {type(data).__name__}"
        )
    if not (sp.issparse(x) and x.format == "csc"):
        x = sp.csc_matrix(x)
    # (scipy keeps this check's result on the matrix: a matrix passed again
    # is not checked again.)
    if not x.has_canonical_format:
        # Sorted indices, duplicates summed (scipy's meaning of them).
        x = x.copy()
        x.sum_duplicates()
    n, m = x.shape

    def ids(given: Any, k: int):
        if given is None:
            return pa.array(np.arange(k, dtype=np.int64)).cast(pa.string())
        if isinstance(given, pa.Array):
            return given
        return pa.array([str(v) for v in given], pa.string())

    genes, cells = ids(genes, m), ids(cells, n)
    if len(genes) != m or len(cells) != n:
        raise ValueError(f"{len(genes)} gene and {len(cells)} cell ids for a {n} x {m} matrix")
    data = x.data if x.data.dtype in (np.float64, np.float32) else x.data.astype(np.float64)
    return SparseMatrix(genes, cells, pa.array(x.indptr), pa.array(x.indices), pa.array(data))


def _register(ctx: Any, table: Any, name: str) -> None:
    """Registers ``table`` (a pyarrow Table or a ``SparseMatrix``) in
    ``ctx`` as ``name``."""
    from ._native import SparseMatrix

    if isinstance(table, SparseMatrix):
        ctx.register_table(name, table)
    else:
        ctx.from_arrow(_chunked(table), name=name)


def _sparse_triples(x: Any, names: Any):
    """A cells x features scipy CSC matrix as a (gene, sample, value) table
    of its stored entries, gene ids ``names`` (an Arrow string array). The
    engine numbers genes and cells in order of first appearance, and reads
    rows sorted by (gene, cell) without sorting them; so the rows come in
    that order, the first feature with every cell (its zeros explicit: cells
    are numbered 0, 1, ... on every input), and a feature without any stored
    entry as one explicit zero."""
    import numpy as np
    import pyarrow as pa

    n_cells, m = x.shape
    if not x.has_sorted_indices:
        x = x.copy()
        x.sort_indices()
    indptr = x.indptr.astype(np.int64)
    stored = np.diff(indptr)
    counts = np.maximum(stored, 1)
    if m:
        counts[0] = n_cells
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    total = int(starts[-1])
    genes = np.repeat(np.arange(m, dtype=np.int32), counts)
    samples = np.zeros(total, dtype=np.int32)
    values = np.zeros(total, dtype=np.float64)
    if m:
        samples[:n_cells] = np.arange(n_cells, dtype=np.int32)
        first = slice(indptr[0], indptr[1])
        values[x.indices[first]] = x.data[first]
        # The other features' entries, each feature's at its start.
        rest = slice(indptr[1], indptr[m])
        to = np.repeat(starts[1:m] - indptr[1:m], stored[1:]) + np.arange(indptr[1], indptr[m])
        samples[to] = x.indices[rest]
        values[to] = x.data[rest]
    # Genes as a dictionary and cells as integers: the engine numbers each
    # id once, not once per entry as text.
    gene = pa.DictionaryArray.from_arrays(pa.array(genes), names)
    return pa.table({"gene": gene, "sample": pa.array(samples), "value": pa.array(values)})


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
        table = _sparse_input(x.tocsc(), pa.array(ids, pa.string()))
        return table, {"layout": "long", "absent": "zero"}, ids
    return _matrix_table(np.asarray(x), ids)
