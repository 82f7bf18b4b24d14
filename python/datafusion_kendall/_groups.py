"""Grouped samples of :func:`corr` and :func:`candidate_pairs`: the labels
a caller gives (an array, a pandas Series or a column name, one per sample
row), turned into the engine's groups source (``kendall.groups``) and its
``group`` column back into the caller's labels."""

from __future__ import annotations

from typing import Any


def group_codes(labels: Any, rows: int, index: Any = None):
    """Each sample row's group as a code (-1 for a missing label, left out)
    and the labels in sorted order (pandas' ``groupby`` order), as
    ``pandas.factorize(sort=True)`` gives them. A pandas Series is aligned
    with ``index`` (the frame's rows) when one is given, else taken in
    order; any other array-like is taken in order."""
    import numpy as np
    import pandas as pd

    if isinstance(labels, pd.Series) and index is not None and not labels.index.equals(index):
        labels = labels.reindex(index)
    values = labels.to_numpy() if isinstance(labels, (pd.Series, pd.Index)) else labels
    if isinstance(labels, pd.Categorical):
        values = labels
    if len(values) != rows:
        raise ValueError(f"groupby has {len(values)} labels for {rows} samples (rows)")
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), uniques


def groups_table(codes: Any):
    """The engine's groups source: each labelled row's number (its sample
    id: rows without names are numbered from 0) and its code as the label."""
    import numpy as np
    import pyarrow as pa

    rows = np.flatnonzero(codes >= 0)
    return pa.table(
        {
            "sample": pa.array(rows.astype(np.int64)),
            "group": pa.array(codes[rows].astype(str), pa.string()),
        }
    )


def group_of_rows(result: Any):
    """The codes of a result's ``group`` column (strings of codes)."""
    import numpy as np

    column = result.column("group")
    if column.num_chunks == 0:
        return np.empty(0, dtype=np.int64)
    return np.asarray(column.to_numpy(zero_copy_only=False).astype(np.int64))


def labels_of(codes: Any, uniques: Any):
    """The caller's labels of ``codes`` as a pandas Categorical (categories
    in sorted order)."""
    import pandas as pd

    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques))
