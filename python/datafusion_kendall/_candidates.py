"""Candidate pairs from Python: :func:`candidate_pairs` (any inputs, a frame
of pairs out) and :func:`batch_kendall_tau`, a drop-in for
``fast_kendall_sc.batch_kendall_tau`` (index arrays in, an aligned numpy
array out). Both run ``kendall_candidate_pairs`` over the features the
pairs use, passed to the engine as sparse matrices that it reads in place
(``SparseMatrix``): a sparse matrix is never densified."""

from __future__ import annotations

import uuid
from typing import Any


from ._inputs import _chunked, _register, _sparse_input
from ._progress import _collect, _in_notebook
from ._groups import group_codes, group_of_rows, groups_table, labels_of
from ._session import result_context


def batch_kendall_tau(rna_matrix: Any, atac_matrix: Any, gene_indices: Any, peak_indices: Any):
    """Kendall's tau-b of listed (gene, peak) pairs, as
    ``fast_kendall_sc.batch_kendall_tau`` computes it (same arguments, same
    result), by the datafusion-kendall engine.

    Args:
        rna_matrix: cells x genes, a numpy array or scipy sparse matrix
            (sparse values must be >= 0; absent entries are 0).
        atac_matrix: cells x peaks, 0/1 accessibility as a numpy array or
            scipy sparse matrix (every non-zero entry counts as 1).
        gene_indices, peak_indices: 1-D integer arrays of equal length; pair
            ``k`` is ``(gene_indices[k], peak_indices[k])``.

    Returns:
        A float64 numpy array aligned with the pairs: tau-b, NaN where it is
        undefined (a constant gene or peak, fewer than two cells).
    """
    return _batch_kendall_tau(rna_matrix, atac_matrix, gene_indices, peak_indices, query=False)


def _batch_kendall_tau(
    rna_matrix: Any, atac_matrix: Any, gene_indices: Any, peak_indices: Any, *, query: bool
):
    """:func:`batch_kendall_tau`; with ``query``, through a
    ``kendall_candidate_pairs`` query instead of the direct call (the same
    taus, for benchmarks)."""
    import numpy as np
    import pyarrow as pa

    from ._native import SparseMatrix, cross_listed_tau

    genes = np.asarray(gene_indices)
    peaks = np.asarray(peak_indices)
    if genes.shape != peaks.shape or genes.ndim != 1:
        raise ValueError("gene_indices and peak_indices must be 1-D arrays of the same shape.")
    if rna_matrix.shape[0] != atac_matrix.shape[0]:
        raise ValueError(
            "rna_matrix and atac_matrix must have the same number of cells (rows): "
            f"{rna_matrix.shape[0]} vs {atac_matrix.shape[0]}."
        )
    if len(genes) == 0:
        return np.array([], dtype=np.float64)
    # The indices are checked whatever the cells: a bad index is an error
    # even where every tau would be NaN.
    for name, idx, bound in (
        ("gene_indices", genes, rna_matrix.shape[1]),
        ("peak_indices", peaks, atac_matrix.shape[1]),
    ):
        if not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"{name} must hold integers, got dtype {idx.dtype}")
        if idx.min() < 0 or idx.max() >= bound:
            raise IndexError(f"{name} must lie in [0, {bound}), got {idx.min()}..{idx.max()}")
    if rna_matrix.shape[0] < 2:
        return np.full(len(genes), np.nan)
    # Only the features the pairs use, each once.
    used_genes, gene_pos = _used(genes, rna_matrix.shape[1])
    used_peaks, peak_pos = _used(peaks, atac_matrix.shape[1])
    rna = _columns(rna_matrix, used_genes, binary=False, what="rna_matrix")
    atac = _columns(atac_matrix, used_peaks, binary=True, what="atac_matrix")
    x = _sparse_input(rna, _numbered(rna.shape[1], 0))
    y = _sparse_input(atac, _numbered(atac.shape[1], rna.shape[1]))
    if not query and isinstance(x, SparseMatrix) and isinstance(y, SparseMatrix):
        # The engine straight into an array aligned with the pairs: no
        # query, no table of rows (the taus are the query's, bit for bit).
        taus = cross_listed_tau(
            x,
            y,
            pa.array(gene_pos.astype(np.uint32, copy=False)),
            pa.array(peak_pos.astype(np.uint32, copy=False)),
            "b",
            None,
        )
        return np.frombuffer(taus, dtype=np.float64)
    # A stored NaN (missing) value: the query, which reads its triples
    # (and `query`: the same through a query, for benchmarks).
    result = _run(
        rna,
        atac,
        gene_pos,
        peak_pos,
        columns="gene_i, gene_j, tau",
        options={},
        progress=False,
        partitions=None,
    )
    tau = np.full(len(genes), np.nan)
    if result.num_rows:
        keys = _codes(result, "gene_i") * len(used_peaks) + (
            _codes(result, "gene_j") - len(used_genes)
        )
        values = _floats(result, "tau")
        if (np.diff(keys) < 0).any():
            order = np.argsort(keys, kind="stable")
            keys, values = keys[order], values[order]
        wanted = gene_pos * len(used_peaks) + peak_pos
        found = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        hit = keys[found] == wanted
        tau[hit] = values[found[hit]]
    return tau


def _used(indices: Any, size: int):
    """The distinct values of ``indices`` (integers in ``[0, size)``),
    ascending, and each index's position among them: ``np.unique`` with
    ``return_inverse``, in O(len + size) rather than a sort. When at least
    half of the features are used, all of them (positions are then the
    indices)."""
    import numpy as np

    present = np.zeros(size, dtype=bool)
    present[indices] = True
    used = np.flatnonzero(present)
    if 2 * len(used) >= size:
        # Most features are used: all of them, so that the matrix is passed
        # as it is (taking its columns would copy nearly all of it).
        return np.arange(size), np.asarray(indices, dtype=np.int64)
    position = np.cumsum(present, dtype=np.int64) - 1
    return used, position[indices]


def candidate_pairs(
    x: Any,
    pairs: Any,
    y: Any = None,
    *,
    method: str = "b",
    p_values: bool = False,
    q_values: bool = False,
    threshold: float | None = None,
    alternative: str = "two-sided",
    kernel: str = "auto",
    partitions: int | None = None,
    progress: bool | None = None,
    groups: Any = None,
):
    """Kendall's tau of listed pairs of features, within ``x`` or between
    ``x`` and ``y`` (the same cells, in the same order).

    Args:
        x, y: cells x features: an AnnData object (features ``var_names``),
            a pandas DataFrame (features its columns), a numpy array or a
            scipy sparse matrix (features numbered from 0). Sparse inputs
            stay sparse (absent entries are 0).
        pairs: a pandas DataFrame whose first two columns hold the pairs'
            features (names, or positions for arrays), or a tuple of two
            arrays ``(first, second)``.
        method: ``'b'`` (tau-b, default), ``'a'`` or ``'c'``.
        p_values: add ``p_value`` and ``n``.
        q_values: add ``q_value`` (Benjamini–Hochberg over the listed pairs).
        threshold: keep pairs with ``abs(tau) >= threshold`` (in the engine).
        alternative: ``'two-sided'``, ``'less'`` or ``'greater'``.
        kernel, partitions, progress: as for :func:`corr`.
        groups: one label per cell (row), e.g. ``adata.obs["cluster"]`` (a
            Series aligned with an AnnData's ``obs_names`` or a frame's
            index) or an array in cell order: each group's pairs are
            computed over its cells only, with p- and q-values per group
            (the false-discovery family is the group's pairs), in one
            engine query. Cells with a missing label are left out.

    Returns:
        A pandas DataFrame ``gene_i, gene_j, tau`` (plus ``p_value, n`` and
        ``q_value``), one row per distinct listed pair whose features exist
        (in ``x`` alone, ``(a, b)`` and ``(b, a)`` are one pair, and a
        feature with itself is none), in no particular order. With
        ``groups``: a leading ``group`` column (the labels, categories in
        sorted order), rows in label order.
    """
    import numpy as np
    import pandas as pd

    from ._corr import _ALTERNATIVES, _METHODS

    variant = _METHODS.get(str(method).lower())
    if variant is None:
        raise ValueError(f"method must be 'a', 'b', 'c' or 'kendall', got {method!r}")
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be 'two-sided', 'less' or 'greater', got {alternative!r}")
    x_ids, x_labelled = _feature_ids(x)
    y_ids, y_labelled = _feature_ids(y) if y is not None else (x_ids, x_labelled)
    if y is not None and x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y must have the same cells (rows): {x.shape[0]} vs {y.shape[0]}")
    first, second = _pair_positions(pairs, (x_ids, x_labelled), (y_ids, y_labelled))
    if y is None:
        # One matrix: the union of the features used, once.
        used, pos = np.unique(np.concatenate([first, second]), return_inverse=True)
        first, second = pos[: len(first)], pos[len(first) :]
        xs = _columns(x, used, binary=False, what="x")
        names_i = names_j = [x_ids[k] for k in used]
        ys, offset = None, 0
    else:
        used_x, first = _used(first, len(x_ids))
        used_y, second = _used(second, len(y_ids))
        xs = _columns(x, used_x, binary=False, what="x")
        ys = _columns(y, used_y, binary=False, what="y")
        names_i, names_j = [x_ids[k] for k in used_x], [y_ids[k] for k in used_y]
        offset = len(used_x)
    columns = "gene_i, gene_j, tau" + (", p_value, n" if p_values else "") + (
        ", q_value" if q_values else ""
    )
    where = "" if threshold is None else f" WHERE abs(tau) >= {float(threshold)!r} AND NOT isnan(tau)"
    grouping = None
    if groups is not None:
        index = getattr(x, "obs_names", None)
        if index is None and isinstance(x, pd.DataFrame):
            index = x.index
        grouping = group_codes(groups, x.shape[0], index)
        columns = '"group", ' + columns
    result = _run(
        xs,
        ys,
        first,
        second,
        columns=columns,
        options={"variant": variant, "alternative": alternative, "kernel": kernel},
        progress=_in_notebook() if progress is None else progress,
        partitions=partitions,
        where=where,
        groups=None if grouping is None else groups_table(grouping[0]),
    )
    frame = {}
    if grouping is not None:
        row_codes = group_of_rows(result)
        order = np.argsort(row_codes, kind="stable")
        result = result.drop_columns(["group"]).take(order)
        frame["group"] = labels_of(row_codes[order], grouping[1])
    # x's and y's names may coincide: each column has categories of its own.
    frame |= {
        "gene_i": pd.Categorical.from_codes(
            _codes(result, "gene_i"), categories=pd.Index(names_i, dtype=object)
        ),
        "gene_j": pd.Categorical.from_codes(
            _codes(result, "gene_j") - offset, categories=pd.Index(names_j, dtype=object)
        ),
        "tau": _floats(result, "tau"),
    }
    if p_values:
        frame["p_value"] = _floats(result, "p_value")
        frame["n"] = np.asarray(result.column("n").to_numpy(), dtype=np.int64)
    if q_values:
        frame["q_value"] = _floats(result, "q_value")
    # Not copied into one block (pandas would stack the float columns).
    return pd.DataFrame(frame, copy=False)


def _feature_ids(data: Any) -> tuple[list[str], bool]:
    """Names of the features (columns) of ``data``, and whether they are
    labels of its own (AnnData's ``var_names``, a DataFrame's columns) rather
    than positions (arrays and scipy matrices, numbered from 0). Labels must
    be unique (as text): a pair could not say which feature it means."""
    labels = None
    if type(data).__name__ == "AnnData":
        labels = [str(g) for g in data.var_names]
    else:
        try:
            import pandas as pd

            if isinstance(data, pd.DataFrame):
                labels = [str(c) for c in data.columns]
        except ImportError:  # pragma: no cover - pandas is a dependency
            pass
    if labels is not None:
        if len(set(labels)) != len(labels):
            seen: set = set()
            dup = next(g for g in labels if g in seen or seen.add(g))
            raise ValueError(f"candidate_pairs(): duplicate feature label {dup!r}")
        return labels, True
    if len(getattr(data, "shape", ())) != 2:
        raise TypeError(
            "candidate_pairs() takes AnnData, a pandas DataFrame, a numpy 2-D array or a "
            f"scipy sparse matrix, got {type(data).__name__}"
        )
    return [str(k) for k in range(data.shape[1])], False


def _pair_positions(pairs: Any, x_features: tuple, y_features: tuple):
    """The pairs as feature positions. Ids are labels where the input has
    them (a DataFrame's columns, integers included, and AnnData's
    ``var_names``), matched by their text, unknown ones left out; integers
    are positions into an array or scipy matrix. A list none of whose pairs
    names two features is an error, as in ``kendall_candidate_pairs``."""
    import numpy as np

    if isinstance(pairs, tuple) and len(pairs) == 2:
        first, second = (np.asarray(p) for p in pairs)
    elif hasattr(pairs, "iloc") and getattr(pairs, "shape", (0, 0))[1] >= 2:
        first, second = pairs.iloc[:, 0].to_numpy(), pairs.iloc[:, 1].to_numpy()
    else:
        raise TypeError("pairs must be a DataFrame of two id columns or a tuple (first, second)")
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError("the two sides of pairs must be 1-D and of the same length")

    def positions(ids: Any, features: tuple, side: str):
        names, labelled = features
        if not labelled and np.issubdtype(ids.dtype, np.integer):
            if len(ids) and (ids.min() < 0 or ids.max() >= len(names)):
                raise IndexError(f"{side} positions must lie in [0, {len(names)})")
            return ids.astype(np.int64, copy=False)
        where = {n: k for k, n in enumerate(names)}
        return np.array([where.get(str(v), -1) for v in ids], dtype=np.int64)

    listed_first, listed_second = first, second
    first = positions(first, x_features, "first")
    second = positions(second, y_features, "second")
    # Positions are all known; names may not be (-1).
    known = (first >= 0) & (second >= 0)
    if len(first) and not known.any():
        raise ValueError(
            f"none of the {len(first)} pairs of the candidate list names two genes of the "
            f"matrix (the first: '{listed_first[0]}' and '{listed_second[0]}'); the first "
            "two columns of pairs must be the ids of gene_i and gene_j"
        )
    if not known.all():
        return first[known], second[known]
    return first, second


def _columns(data: Any, used: Any, *, binary: bool, what: str):
    """Columns ``used`` of a cells x features input as a scipy CSC matrix
    (binarised: non-zero entries 1). The caller's matrix itself when it is
    one already (its cached checks are kept); never changed in place."""
    import numpy as np
    import scipy.sparse as sp

    x = data.X if type(data).__name__ == "AnnData" else data
    if hasattr(x, "iloc"):
        x = x.to_numpy(dtype=np.float64, na_value=np.nan)
    if sp.issparse(x):
        if x.format != "csc":
            x = x.tocsc()
        if len(used) != x.shape[1] or (np.diff(used) != 1).any():
            x = x[:, used]
        if x.dtype != np.float64:
            x = x.astype(np.float64)
        # (Reductions, no array made; NaN is no negative value.)
        if not binary and x.data.size and x.data.min() < 0:
            raise ValueError(f"a sparse {what} must not hold negative values (absent entries are 0)")
    else:
        x = sp.csc_matrix(np.asarray(x, dtype=np.float64)[:, used])
    if binary and x.data.size and not (x.data.min() == 1.0 and x.data.max() == 1.0):
        # A new matrix of the same entries (the caller's keeps its values).
        x = sp.csc_matrix(((x.data != 0).astype(np.float64), x.indices, x.indptr), shape=x.shape)
    return x


def _numbered(m: int, offset: int):
    """Feature ids ``offset .. offset + m`` as Arrow strings."""
    import numpy as np
    import pyarrow as pa

    return pa.array(np.arange(offset, offset + m, dtype=np.int64)).cast(pa.string())


def _run(x, y, first, second, *, columns, options, progress, partitions, where="", groups=None):
    """``kendall_candidate_pairs`` of the listed positions over the CSC
    matrices ``x`` (and ``y``); the gene columns come back as dictionaries
    whose codes are the positions (``y``'s after ``x``'s)."""
    import numpy as np
    import pyarrow as pa

    ctx = result_context(partitions)
    tag = uuid.uuid4().hex
    names = {"x": f"dk_x_{tag}", "y": f"dk_y_{tag}", "pairs": f"dk_pairs_{tag}"}
    m = x.shape[1]
    _register(ctx, _sparse_input(x, _numbered(m, 0)), names["x"])
    sources = f"'{names['pairs']}', '{names['x']}'"
    offset = 0
    if y is not None:
        _register(ctx, _sparse_input(y, _numbered(y.shape[1], m)), names["y"])
        sources += f", '{names['y']}'"
        offset = m
    # Integer ids: the engine looks them up as integers among the numbered
    # features (no strings made).
    ids = lambda a: pa.array(np.asarray(a, dtype=np.int64))  # noqa: E731
    ctx.from_arrow(
        _chunked(pa.table({"first": ids(first), "second": ids(np.asarray(second) + offset)})),
        name=names["pairs"],
    )
    settings = {"layout": "long", "absent": "zero", "gene_ids": "dictionary", **options}
    if groups is not None:
        # Cells are numbered from 0 (their sample ids): so are the groups'.
        names["groups"] = f"dk_groups_{tag}"
        ctx.from_arrow(groups, name=names["groups"])
        settings["groups"] = names["groups"]
    for key, value in settings.items():
        ctx.sql(f"SET kendall.{key} = '{value}'")
    df = ctx.sql(f"SELECT {columns} FROM kendall_candidate_pairs({sources}){where}")
    return _collect(df, progress, names["x"])


def _codes(result: Any, column: str):
    """A dictionary gene column's positions (the ids are positions)."""
    import numpy as np

    out = np.empty(result.num_rows, dtype=np.int64)
    pos = 0
    # The batches share one dictionary (every gene): parsed once.
    parsed: dict = {}
    for chunk in result.column(column).chunks:
        dictionary = chunk.dictionary
        key = (dictionary.buffers()[1].address, len(dictionary))
        names = parsed.get(key)
        if names is None:
            names = dictionary.to_numpy(zero_copy_only=False).astype(np.int64)
            parsed[key] = names
        idx = chunk.indices.to_numpy(zero_copy_only=False)
        out[pos : pos + len(idx)] = names[idx]
        pos += len(idx)
    return out


def _floats(result: Any, column: str):
    import numpy as np

    out = np.empty(result.num_rows)
    pos = 0
    for chunk in result.column(column).chunks:
        part = chunk.to_numpy(zero_copy_only=False)
        out[pos : pos + len(part)] = part
        pos += len(part)
    return out
