"""Listed pairs from Python: ``batch_kendall_tau`` against
``fast_kendall_sc.batch_kendall_tau`` (the wheel CI installs) and against
``scipy.stats.kendalltau``; ``candidate_pairs`` on AnnData, pandas and
sparse inputs against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats

import datafusion_kendall as dk

TOL = 1e-12


def sce2g_like(seed: int, cells: int, genes: int, peaks: int, per_gene: int):
    """A small scE2G-shaped workload: log-normalised negative-binomial RNA
    counts (mostly zeros), binarised peaks, candidate peaks per gene (with a
    repeated pair, and a constant peak)."""
    rng = np.random.default_rng(seed)
    counts = rng.negative_binomial(1, 0.8, size=(cells, genes)).astype(np.float64)
    size = counts.sum(axis=1, keepdims=True)
    rna = np.log1p(counts / np.maximum(size, 1) * 1e4)
    atac = (rng.random((cells, peaks)) < rng.uniform(0.02, 0.4, size=peaks)).astype(np.float64)
    atac[:, 0] = 0.0
    gene_idx = np.repeat(np.arange(genes), per_gene)
    peak_idx = rng.integers(0, peaks, size=genes * per_gene)
    # Gene 1 with the constant peak, and gene 1's first pair again.
    gene_idx = np.concatenate([gene_idx, [1, 1]])
    peak_idx = np.concatenate([peak_idx, [0, peak_idx[per_gene]]])
    return rna, atac, gene_idx, peak_idx


def scipy_taus(rna, atac, gene_idx, peak_idx):
    out = []
    for g, p in zip(gene_idx, peak_idx):
        tau = stats.kendalltau(rna[:, g], atac[:, p]).statistic
        out.append(np.nan if tau is None else tau)
    return np.array(out, dtype=np.float64)


def assert_taus(got, expected):
    assert got.shape == expected.shape
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    both = ~np.isnan(expected)
    assert np.max(np.abs(got[both] - expected[both]), initial=0.0) <= TOL


@pytest.mark.parametrize("sparse", [False, True])
def test_batch_kendall_tau_matches_scipy(sparse):
    rna, atac, gi, pi = sce2g_like(1, cells=400, genes=12, peaks=60, per_gene=9)
    expected = scipy_taus(rna, atac, gi, pi)
    x, y = (sp.csc_matrix(rna), sp.csr_matrix(atac)) if sparse else (rna, atac)
    got = dk.batch_kendall_tau(x, y, gi, pi)
    assert_taus(got, expected)
    # The constant peak: NaN, as fast_kendall_sc gives.
    assert np.isnan(got[-2])


def test_batch_kendall_tau_is_a_drop_in_for_fast_kendall_sc():
    fks = pytest.importorskip("fast_kendall_sc")
    rna, atac, gi, pi = sce2g_like(2, cells=2000, genes=40, peaks=400, per_gene=25)
    for x, y in [(rna, atac), (sp.csc_matrix(rna), sp.csc_matrix(atac))]:
        theirs = fks.batch_kendall_tau(x, y, gi, pi)
        ours = dk.batch_kendall_tau(x, y, gi, pi)
        assert_taus(ours, np.asarray(theirs, dtype=np.float64))


def test_batch_kendall_tau_has_the_querys_bits():
    # batch_kendall_tau calls the engine without a query; candidate_pairs
    # runs kendall_candidate_pairs: the same taus, bit for bit, in the
    # pairs' order (unsorted and repeated pairs too). A stored NaN makes it
    # take the query (the triples), with the same answer on the other pairs.
    rna, atac, gi, pi = sce2g_like(5, cells=600, genes=30, peaks=200, per_gene=20)
    order = np.random.default_rng(0).permutation(len(gi))
    gi, pi = gi[order], pi[order]
    x, y = sp.csc_matrix(rna), sp.csc_matrix(atac)
    got = dk.batch_kendall_tau(x, y, gi, pi)
    rows = dk.candidate_pairs(x, (gi, pi), y)
    by_pair = {(int(a), int(b)): t for a, b, t in zip(rows.gene_i, rows.gene_j, rows.tau)}
    expected = np.array([by_pair[(int(a), int(b))] for a, b in zip(gi, pi)])
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))
    assert got.flags.writeable
    with_nan = x.copy()
    with_nan.data[0] = np.nan
    gene_of_nan = int(np.searchsorted(with_nan.indptr, 0, side="right") - 1)
    taken = dk.batch_kendall_tau(with_nan, y, gi, pi)
    other = gi != gene_of_nan
    assert np.array_equal(taken[other].view(np.uint64), got[other].view(np.uint64))


def test_batch_kendall_tau_edge_cases():
    rna, atac, gi, pi = sce2g_like(3, cells=50, genes=3, peaks=5, per_gene=2)
    assert dk.batch_kendall_tau(rna, atac, [], []).shape == (0,)
    one = dk.batch_kendall_tau(rna[:1], atac[:1], gi, pi)
    assert one.shape == gi.shape and np.isnan(one).all()
    with pytest.raises(IndexError, match="peak_indices"):
        dk.batch_kendall_tau(rna, atac, [0], [5])
    with pytest.raises(ValueError, match="same shape"):
        dk.batch_kendall_tau(rna, atac, [0, 1], [0])
    with pytest.raises(ValueError, match="same number of cells"):
        dk.batch_kendall_tau(rna, atac[:10], [0], [0])
    with pytest.raises(ValueError, match="negative"):
        dk.batch_kendall_tau(sp.csc_matrix(-rna - 1), atac, [0], [0])


def test_candidate_pairs_on_anndata_and_frames():
    anndata = pytest.importorskip("anndata")
    rna, atac, gi, pi = sce2g_like(4, cells=300, genes=8, peaks=30, per_gene=5)
    genes = [f"G{k}" for k in range(rna.shape[1])]
    peaks = [f"chr1:{k * 100}-{k * 100 + 50}" for k in range(atac.shape[1])]
    x = anndata.AnnData(sp.csr_matrix(rna), var=pd.DataFrame(index=genes))
    y = anndata.AnnData(sp.csr_matrix(atac), var=pd.DataFrame(index=peaks))
    listed = pd.DataFrame(
        {"gene": [genes[g] for g in gi] + ["NOT_A_GENE"], "peak": [peaks[p] for p in pi] + [peaks[0]]}
    )
    got = dk.candidate_pairs(x, listed, y, p_values=True, q_values=True)
    distinct = {(genes[g], peaks[p]) for g, p in zip(gi, pi)}
    assert len(got) == len(distinct)
    for row in got.itertuples():
        g, p = genes.index(row.gene_i), peaks.index(row.gene_j)
        ref = stats.kendalltau(rna[:, g], atac[:, p])
        if np.isnan(ref.statistic):
            assert np.isnan(row.tau)
            continue
        assert abs(row.tau - ref.statistic) <= TOL
        assert abs(row.p_value - ref.pvalue) <= 1e-9 * max(ref.pvalue, 1e-300) or abs(
            row.p_value - ref.pvalue
        ) <= 1e-15
        assert row.n == rna.shape[0]
    # q-values: Benjamini–Hochberg over the listed pairs.
    ps = got["p_value"].to_numpy()
    valid = ~np.isnan(ps)
    from scipy.stats import false_discovery_control

    q = false_discovery_control(ps[valid], method="bh")
    assert np.max(np.abs(got["q_value"].to_numpy()[valid] - q)) <= 1e-12

    # Within one frame: (a, b) and (b, a) are one pair; names of columns.
    frame = pd.DataFrame(rna, columns=genes)
    within = dk.candidate_pairs(frame, (np.array(["G0", "G1", "G2"]), np.array(["G1", "G0", "G2"])))
    assert len(within) == 1
    assert (within.gene_i[0], within.gene_j[0]) == ("G0", "G1")
    assert abs(within.tau[0] - stats.kendalltau(rna[:, 0], rna[:, 1]).statistic) <= TOL


def test_millions_of_stored_entries_are_read():
    # 5 million stored entries: large record batches once made the
    # `datafusion` package abort the process while the engine read them.
    x = sp.random(20000, 1000, density=0.25, format="csc", random_state=1)
    y = sp.random(20000, 50, density=0.05, format="csc", random_state=2)
    gi, pi = np.arange(0, 1000, 100), np.arange(10)
    got = dk.batch_kendall_tau(x, y, gi, pi)
    dense_x, dense_y = x[:, gi].toarray(), y[:, pi].toarray()
    expected = np.array([stats.kendalltau(dense_x[:, k], dense_y[:, k] != 0).statistic for k in range(10)])
    assert_taus(got, expected)


def test_sparse_table_is_read_in_place_and_as_triples():
    anndata = pytest.importorskip("anndata")
    rng = np.random.default_rng(5)
    dense = rng.negative_binomial(1, 0.7, size=(60, 6)).astype(np.float64)
    dense[:, 5] = 0.0  # a gene without any entry: constant, NaN tau
    x = sp.csr_matrix(dense)  # converted to CSC by sparse_table
    adata = anndata.AnnData(
        X=x,
        obs=pd.DataFrame(index=[f"cell{k}" for k in range(60)]),
        var=pd.DataFrame(index=[f"G{g}" for g in range(6)]),
    )
    ctx = dk.context()
    ctx.register_table("rna", dk.sparse_table(adata))
    got = ctx.sql("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('rna')").to_pandas()
    assert len(got) == 15
    for row in got.itertuples():
        i, j = int(row.gene_i[1:]), int(row.gene_j[1:])
        expected = stats.kendalltau(dense[:, i], dense[:, j]).statistic
        if np.isnan(expected):
            assert np.isnan(row.tau)
        else:
            assert abs(row.tau - expected) <= TOL
    # Other queries read its stored entries as triples (one zero for the
    # empty gene and one for each cell without any entry, cells by name).
    count = ctx.sql("SELECT count(*) AS n FROM rna").to_pandas().n[0]
    empty_cells = int((np.count_nonzero(dense, axis=1) == 0).sum())
    assert count == x.nnz + 1 + empty_cells
    names = ctx.sql("SELECT DISTINCT CAST(sample AS VARCHAR) AS s FROM rna").to_pandas().s
    assert set(names) == {f"cell{k}" for k in range(60)}
    # Bad input is refused when the table is made, by name.
    bad = sp.csc_matrix(dense)
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        dk.sparse_table(bad)
    with pytest.raises(ValueError, match="3 gene and 60 cell ids"):
        dk.sparse_table(x, genes=["a", "b", "c"])
    with pytest.raises(ValueError, match="given twice"):
        dk.sparse_table(x, genes=["a"] * 6)


def test_missing_values_in_sparse_input_follow_the_missing_option():
    # A stored NaN is a missing value (read as triples, not in place).
    rna = sp.csc_matrix(np.array([[1.0, 0.0], [2.0, 1.0], [np.nan, 2.0], [4.0, 0.0], [0.0, 3.0]]))
    atac = sp.csc_matrix(np.array([[1.0], [0.0], [1.0], [1.0], [0.0]]))
    got = dk.candidate_pairs(rna, (np.array([0]), np.array([0])), atac, p_values=True)
    keep = [0, 1, 3, 4]
    expected = stats.kendalltau(rna.toarray()[keep, 0], atac.toarray()[keep, 0]).statistic
    assert abs(got.tau[0] - expected) <= TOL
    assert got.n[0] == 4
