"""Grouped samples from Python: ``corr(groupby=)`` against pandas'
``groupby().corr(method="kendall")``, and ``candidate_pairs(groups=)``
against ``candidate_pairs`` on each group's cells alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import datafusion_kendall as dk

TOL = 1e-12


def frame_with_gaps(seed: int, rows: int, genes: int) -> pd.DataFrame:
    """Values with ties and missing values (NaN), genes as columns."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=(rows, genes)).astype(np.float64)
    x[rng.random(x.shape) < 0.1] = np.nan
    return pd.DataFrame(x, columns=[f"g{k}" for k in range(genes)],
                        index=[f"cell{k}" for k in range(rows)])


def labels_for(frame: pd.DataFrame, seed: int) -> pd.Series:
    rng = np.random.default_rng(seed)
    labels = pd.Series(rng.choice(["T", "B", "NK", "mono"], size=len(frame)),
                       index=frame.index, name="cluster")
    # One sample without a label: left out, as pandas leaves it out.
    labels.iloc[3] = None
    return labels


def test_square_equals_pandas_groupby_corr():
    frame = frame_with_gaps(1, 60, 7)
    labels = labels_for(frame, 2)
    ours = dk.corr(frame, groupby=labels, square=True)
    theirs = frame.groupby(labels).corr(method="kendall")
    assert list(ours.index) == list(theirs.index)
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, atol=TOL, rtol=0,
                                  check_names=False)
    # A column of the frame as the key, and labels shuffled as a Series:
    # aligned by index, as pandas aligns them.
    keyed = frame.assign(cluster=labels)
    ours = dk.corr(keyed, groupby="cluster", square=True)
    theirs = keyed.groupby("cluster").corr(method="kendall")
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, atol=TOL, rtol=0)
    shuffled = labels.sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(dk.corr(frame, groupby=shuffled, square=True),
                                  frame.groupby(labels).corr(method="kendall"),
                                  check_exact=False, atol=TOL, rtol=0, check_names=False)


def test_long_form_has_a_group_column_equal_to_each_group_alone():
    frame = frame_with_gaps(3, 80, 6)
    labels = labels_for(frame, 4)
    ours = dk.corr(frame, groupby=labels.to_numpy(), p_values=True)
    assert list(ours.columns) == ["group", "gene_i", "gene_j", "tau", "p_value", "n"]
    assert list(ours["group"].cat.categories) == ["B", "NK", "T", "mono"]
    assert ours["group"].is_monotonic_increasing
    for label in ["B", "NK", "T", "mono"]:
        alone = dk.corr(frame[labels == label], p_values=True)
        mine = ours[ours["group"] == label].drop(columns="group").reset_index(drop=True)
        for column in ["gene_i", "gene_j"]:
            assert list(mine[column].astype(str)) == list(alone[column].astype(str))
        # The same engine on the same samples: the same bits.
        for column in ["tau", "p_value", "n"]:
            np.testing.assert_array_equal(mine[column].to_numpy(), alone[column].to_numpy())


def test_groupby_takes_genes_as_columns_only():
    frame = frame_with_gaps(5, 10, 3)
    with pytest.raises(ValueError, match="genes='columns'"):
        dk.corr(frame, groupby=np.zeros(10), genes="rows")
    with pytest.raises(ValueError, match="9 labels for 10 samples"):
        dk.corr(frame, groupby=np.zeros(9))


def test_candidate_pairs_by_group_equal_each_group_alone():
    rng = np.random.default_rng(6)
    cells, genes, peaks = 300, 8, 20
    rna = rng.negative_binomial(1, 0.7, size=(cells, genes)).astype(np.float64)
    atac = (rng.random((cells, peaks)) < 0.2).astype(np.float64)
    pairs = (np.repeat(np.arange(genes), 3), rng.integers(0, peaks, size=genes * 3))
    clusters = pd.Series(rng.choice(["a", "b", "c"], size=cells))
    x, y = sp.csc_matrix(rna), sp.csc_matrix(atac)
    ours = dk.candidate_pairs(x, pairs, y, p_values=True, q_values=True, groups=clusters)
    assert list(ours.columns[:3]) == ["group", "gene_i", "gene_j"]
    key = ["gene_i", "gene_j"]
    for label in ["a", "b", "c"]:
        rows = np.flatnonzero(clusters.to_numpy() == label)
        alone = dk.candidate_pairs(x[rows], pairs, y[rows], p_values=True, q_values=True)
        mine = ours[ours["group"] == label].drop(columns="group")
        mine = mine.astype({k: str for k in key}).sort_values(key).reset_index(drop=True)
        alone = alone.astype({k: str for k in key}).sort_values(key).reset_index(drop=True)
        # q-values over the group's pairs only: equal to the group alone's.
        pd.testing.assert_frame_equal(mine, alone, check_exact=True)
