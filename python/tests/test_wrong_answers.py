"""Inputs that once gave a wrong answer without an error, each checked
against its reference: a view or copy of a sparse table (read as its rows,
not as the table it comes from), candidate pairs of a frame with integer
labels, indices checked before anything else, the diagonal of
``corr(square=True)`` as pandas gives it, and listwise deletion that leaves
no sample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats

import datafusion_kendall as dk

def sparse_counts(seed: int = 3, cells: int = 40, genes: int = 6):
    """A cells x genes scipy CSC matrix of counts, mostly zeros, with every
    cell holding an entry of gene 0 or 1."""
    rng = np.random.default_rng(seed)
    x = rng.negative_binomial(1, 0.7, size=(cells, genes)).astype(np.float64)
    x[:, 0] = np.where(x[:, 0] + x[:, 1] == 0, 1.0, x[:, 0])
    return sp.csc_matrix(x)


def pairs_of(ctx, source: str) -> pd.DataFrame:
    frame = ctx.sql(f"SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{source}')").to_pandas()
    frame["gene_i"] = frame["gene_i"].astype(str)
    frame["gene_j"] = frame["gene_j"].astype(str)
    return frame.sort_values(["gene_i", "gene_j"]).reset_index(drop=True)


def test_views_and_copies_of_a_sparse_table_are_read_as_their_rows():
    """Case: a view of two genes of a sparse table gives one pair, not every
    pair of the table; a view negating a gene negates its taus; a
    CREATE TABLE AS copy of two genes gives one pair."""
    x = sparse_counts()
    dense = x.toarray()
    ctx = dk.context()
    ctx.register_table("rna", dk.sparse_table(x))
    whole = pairs_of(ctx, "rna")
    assert len(whole) == 15
    xy = stats.kendalltau(dense[:, 0], dense[:, 1]).statistic
    ctx.sql("SET kendall.layout = 'long'")
    ctx.sql("SET kendall.absent = 'zero'")
    ctx.sql("CREATE VIEW two AS SELECT * FROM rna WHERE gene IN ('0', '1')")
    two = pairs_of(ctx, "two")
    assert len(two) == 1, two
    assert abs(two["tau"][0] - xy) <= 1e-12
    ctx.sql("CREATE TABLE copied AS SELECT * FROM rna WHERE gene IN ('0', '1')")
    copied = pairs_of(ctx, "copied")
    assert len(copied) == 1, copied
    ctx.sql(
        "CREATE VIEW negated AS SELECT gene, sample, "
        "CASE WHEN gene = '0' THEN -value ELSE value END AS value FROM rna"
    )
    negated = pairs_of(ctx, "negated")
    assert len(negated) == 15
    got = negated[(negated.gene_i == "0") & (negated.gene_j == "1")]["tau"].iloc[0]
    assert abs(got + xy) <= 1e-12


def test_candidate_pairs_take_integer_labels_of_a_frame_as_labels():
    """Case: a frame whose columns are the integers [2, 0, 1] and the pair
    (0, 1) computes the columns labelled 0 and 1, not positions 0 and 1."""
    rng = np.random.default_rng(5)
    values = rng.normal(size=(30, 3))
    frame = pd.DataFrame(values, columns=[2, 0, 1])
    got = dk.candidate_pairs(frame, (np.array([0]), np.array([1])))
    assert len(got) == 1
    expected = stats.kendalltau(frame[0], frame[1]).statistic
    assert abs(got["tau"][0] - expected) <= 1e-12
    assert (str(got["gene_i"][0]), str(got["gene_j"][0])) == ("0", "1")
    # An array has no labels: integers are positions.
    got = dk.candidate_pairs(values, (np.array([0]), np.array([1])))
    assert abs(got["tau"][0] - stats.kendalltau(values[:, 0], values[:, 1]).statistic) <= 1e-12


def test_candidate_pairs_naming_no_gene_raise_the_sql_error():
    """Case: a list none of whose ids names a gene is the SQL function's
    error, not an empty frame."""
    frame = pd.DataFrame(np.random.default_rng(6).normal(size=(10, 3)), columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="none of the 2 pairs of the candidate list names two genes"):
        dk.candidate_pairs(frame, pd.DataFrame({"i": ["x", "a"], "j": ["y", "z"]}))
    # One known pair among unknown ones: that pair.
    got = dk.candidate_pairs(frame, pd.DataFrame({"i": ["x", "a"], "j": ["y", "b"]}))
    assert len(got) == 1


@pytest.mark.parametrize("cells", [0, 1])
def test_batch_kendall_tau_checks_indices_with_fewer_than_two_cells(cells):
    """Case: with fewer than 2 cells, negative and out-of-range indices are
    errors, as with more cells, not NaN."""
    rna, atac = np.zeros((cells, 3)), np.zeros((cells, 4))
    for genes, peaks in (([-1], [0]), ([3], [0]), ([0], [4]), ([0], [-2])):
        with pytest.raises(IndexError):
            dk.batch_kendall_tau(rna, atac, np.array(genes), np.array(peaks))
    assert np.isnan(dk.batch_kendall_tau(rna, atac, np.array([0]), np.array([1]))).all()


def test_sparse_matrix_with_offsets_up_then_down_is_a_value_error():
    """Case: offsets that rise past the entries and fall back are a
    ValueError (once a panic that `except Exception` did not catch)."""
    import pyarrow as pa

    from datafusion_kendall._native import SparseMatrix

    with pytest.raises(ValueError, match="offsets decrease at gene 'y'"):
        SparseMatrix(
            pa.array(["x", "y"]),
            pa.array(["a", "b", "c"]),
            pa.array(np.array([0, 3, 2], dtype=np.int64)),
            pa.array(np.array([0, 1], dtype=np.int32)),
            pa.array(np.array([1.0, 2.0])),
        )


def test_square_corr_diagonal_is_nan_where_pandas_has_nan():
    """Case: an all-NaN column (and, with min_periods, one with too few
    values) has NaN on the diagonal, as in pandas."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(rng.normal(size=(12, 4)), columns=list("abcd"))
    frame["c"] = np.nan
    frame.loc[:8, "d"] = np.nan
    for min_periods in (1, 4):
        got = dk.corr(frame, square=True, min_periods=min_periods)
        expected = frame.corr(method="kendall", min_periods=min_periods)
        pd.testing.assert_frame_equal(got, expected, check_exact=False, atol=1e-12)
    assert np.isnan(dk.corr(frame, square=True).loc["c", "c"])


def test_listwise_deletion_that_leaves_no_sample_is_an_error():
    """Case: nan_policy='complete' with an all-NaN column removes every
    sample: an error naming the gene, in Python and in SQL (as R's
    cor(use = "complete") stops), not NaN rows with n = 0."""
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0], "c": [np.nan] * 3})
    with pytest.raises(ValueError, match="no complete element pairs.*gene 'c' has no value"):
        dk.corr(frame, nan_policy="complete")
    ctx = dk.context()
    ctx.from_pandas(frame, name="t")
    ctx.sql("SET kendall.layout = 'genes_as_columns'")
    ctx.sql("SET kendall.missing = 'complete'")
    with pytest.raises(Exception, match="no complete element pairs.*gene 'c' is missing in all 3"):
        ctx.sql("SELECT * FROM kendall_all_pairs('t')").to_pandas()
