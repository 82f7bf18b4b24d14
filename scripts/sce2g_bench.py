#!/usr/bin/env python3
"""The scE2G Kendall step on synthetic data: datafusion-kendall's
``batch_kendall_tau`` (and ``candidate_pairs`` with p- and q-values) against
``fast_kendall_sc.batch_kendall_tau``, both from the same in-memory scipy
CSC matrices, in one run; checks that every tau agrees to 1e-12.

Usage: sce2g_bench.py [--cells 20000] [--genes 1000] [--peaks 10000]
                      [--per-gene 100] [--peak-density 0.05] [--seed 1]
                      [--threads 2] [--rounds 2] [--save DIR]
                      [--large] [--skip-peer] [--query-path] [--mtx DIR]

The data follows the workload scE2G runs per cell cluster: RNA counts drawn
negative-binomial (about 74 % zeros at the defaults), normalised to 10,000
per cell and log1p-transformed as Seurat does; peaks binarised with about
``--peak-density`` ones; ``--per-gene`` candidate peaks per gene drawn at
random. Times are whole calls (conversion included), best of ``--rounds``,
tools alternated. ``--save DIR`` also writes the inputs as long-triple
Parquet files, the candidate list and ``job.sql``, the same job through the
shell (``datafusion-kendall -f DIR/job.sql``); with anndata installed also
``.h5ad`` files and ``job_h5ad.sql`` (a shell built with ``--features
hdf5``).

``--query-path`` also times ``batch_kendall_tau`` through a
``kendall_candidate_pairs`` query (its path before the direct engine call),
to show what the direct call saves.

``--mtx DIR`` writes the step's files as scE2G's R side writes them
(MatrixMarket genes x cells and peaks x cells, gene and peak names, the
headerless pairs TSV) and ``DIR/step.sql``, ``sql/sce2g_step.sql`` on
them (writing ``DIR/ours.txt``), for the end-to-end comparison:
``datafusion-kendall -f DIR/step.sql`` against ``scripts/sce2g_step.py``
on the same files (compare the outputs with ``scripts/compare_tau_lines.py``).

``--large`` draws the matrices as sparse columns (for sizes whose dense
arrays would not fit: the scE2G size is ``--genes 15000 --peaks 150000
--per-gene 634 --peak-density 0.03``); ``--skip-peer`` times ours only.

Needs: pip install ./python scipy fast_kendall_sc pyarrow (with ``--rounds 0``
no ./python: the files are written, nothing is timed)
Threads: RAYON_NUM_THREADS for fast_kendall_sc (set here from --threads),
``partitions`` for ours.
"""

from __future__ import annotations

import argparse
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("--cells", type=int, default=20000)
ap.add_argument("--genes", type=int, default=1000)
ap.add_argument("--peaks", type=int, default=10000)
ap.add_argument("--per-gene", type=int, default=100)
ap.add_argument("--peak-density", type=float, default=0.05)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--save", default=None)
ap.add_argument("--large", action="store_true")
ap.add_argument("--skip-peer", action="store_true")
ap.add_argument("--query-path", action="store_true")
ap.add_argument("--mtx", default=None)
args = ap.parse_args()
os.environ["RAYON_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

# Only the timed rounds call our package: with --rounds 0 (writing the files
# with --save or --mtx) the script runs without it installed.
dk = None
if args.rounds > 0:
    import datafusion_kendall as dk  # noqa: E402

try:
    import fast_kendall_sc as fks  # noqa: E402
except ImportError:
    fks = None
if args.skip_peer:
    fks = None


def sparse_columns(rng, cells, nonzero, draw):
    """A cells x len(nonzero) CSC matrix, column j with about nonzero[j]
    distinct random cells, values draw(k)."""
    counts = rng.binomial(cells, np.clip(nonzero / cells, 0, 1))
    col = np.repeat(np.arange(len(counts)), counts)
    key = np.unique(col.astype(np.int64) * cells + rng.integers(0, cells, size=col.size))
    col, row = key // cells, key % cells
    indptr = np.concatenate([[0], np.cumsum(np.bincount(col, minlength=len(counts)))])
    return sp.csc_matrix((draw(key.size), row.astype(np.int32), indptr), shape=(cells, len(counts)))

rng = np.random.default_rng(args.seed)
if args.large:
    # Sizes past what dense arrays hold: sparse columns drawn directly (RNA
    # at about 76 % zeros, counts 1 + geometric, normalised per cell).
    rna = sparse_columns(
        rng, args.cells, np.full(args.genes, 0.24 * args.cells), lambda k: 1.0 + rng.geometric(0.5, k)
    )
    size = np.asarray(rna.sum(axis=1)).ravel()
    rna.data = np.log1p(rna.data / np.maximum(size[rna.indices], 1) * 1e4)
    rates = np.clip(rng.gamma(2.0, args.peak_density / 2.0, size=args.peaks), 1e-4, 0.9)
    atac = sparse_columns(rng, args.cells, rates * args.cells, lambda k: np.ones(k))
else:
    # RNA: negative-binomial counts per gene with a gene-specific mean.
    means = rng.gamma(0.6, 0.8, size=args.genes)
    counts = rng.negative_binomial(1, 1.0 / (1.0 + means), size=(args.cells, args.genes))
    size = counts.sum(axis=1, keepdims=True)
    rna = sp.csc_matrix(np.log1p(counts / np.maximum(size, 1) * 1e4))
    del counts
    # Peaks: Bernoulli with a peak-specific rate around the density.
    rates = np.clip(rng.gamma(2.0, args.peak_density / 2.0, size=args.peaks), 1e-4, 0.9)
    atac = sp.csc_matrix((rng.random((args.cells, args.peaks)) < rates).astype(np.float64))
gene_idx = np.repeat(np.arange(args.genes), args.per_gene)
peak_idx = np.concatenate(
    [rng.choice(args.peaks, size=args.per_gene, replace=False) for _ in range(args.genes)]
)
print(
    f"{args.cells} cells, {args.genes} genes ({1 - rna.nnz / (args.cells * args.genes):.1%} zeros), "
    f"{args.peaks} peaks ({1 - atac.nnz / (args.cells * args.peaks):.1%} zeros), "
    f"{len(gene_idx)} candidate pairs; {args.threads} threads"
)

if args.save:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(args.save, exist_ok=True)
    for name, m, prefix in (("rna", rna, "g"), ("atac", atac, "p")):
        coo = m.tocoo()
        pq.write_table(
            pa.table(
                {
                    "gene": pa.array([f"{prefix}{k}" for k in coo.col]),
                    "sample": pa.array(coo.row.astype(np.int64)),
                    "value": pa.array(coo.data),
                }
            ),
            os.path.join(args.save, f"{name}.parquet"),
        )
    pq.write_table(
        pa.table(
            {
                "gene": pa.array([f"g{k}" for k in gene_idx]),
                "peak": pa.array([f"p{k}" for k in peak_idx]),
            }
        ),
        os.path.join(args.save, "candidates.parquet"),
    )
    # The same job through the shell: datafusion-kendall -f DIR/job.sql
    files = {k: os.path.join(args.save, f"{k}.parquet") for k in ("candidates", "rna", "atac")}
    with open(os.path.join(args.save, "job.sql"), "w") as f:
        f.write(
            "SET kendall.layout = 'long';\n"
            "SET kendall.absent = 'zero';\n"
            "SELECT count(*) AS pairs, sum(tau) AS tau_sum, sum(q_value) AS q_sum\n"
            f"FROM kendall_candidate_pairs('{files['candidates']}', '{files['rna']}', "
            f"'{files['atac']}');\n"
        )
    # The same job from AnnData files (needs anndata, and the shell built
    # with --features hdf5): datafusion-kendall -f DIR/job_h5ad.sql
    try:
        import anndata
    except ImportError:
        anndata = None
    if anndata is not None:
        for name, m, prefix in (("rna", rna, "g"), ("atac", atac, "p")):
            a = anndata.AnnData(X=sp.csr_matrix(m))
            a.var_names = [f"{prefix}{k}" for k in range(m.shape[1])]
            a.obs_names = [str(c) for c in range(m.shape[0])]
            a.write_h5ad(os.path.join(args.save, f"{name}.h5ad"))
        with open(os.path.join(args.save, "job_h5ad.sql"), "w") as f:
            h5 = {k: os.path.join(args.save, f"{k}.h5ad") for k in ("rna", "atac")}
            f.write(
                "SELECT count(*) AS pairs, sum(tau) AS tau_sum, sum(q_value) AS q_sum\n"
                f"FROM kendall_candidate_pairs('{files['candidates']}', '{h5['rna']}', "
                f"'{h5['atac']}');\n"
            )


if args.mtx:
    import scipy.io

    os.makedirs(args.mtx, exist_ok=True)
    # As R's Matrix::writeMM writes them: features x cells, no cell names.
    # RNA values with 17 significant digits (every float as it is), the
    # binarised peaks as whole numbers ("1").
    for name, m, prefix, what in (("rna", rna, "g", "genes"), ("atac", atac, "p", "peaks")):
        path = os.path.join(args.mtx, f"{name}.mtx")
        if name == "rna":
            scipy.io.mmwrite(path, m.T.tocoo(), precision=17)
        else:
            scipy.io.mmwrite(path, m.T.tocoo(), field="integer")
        with open(os.path.join(args.mtx, f"{name}_{what}.txt"), "w") as f:
            f.write("".join(f"{prefix}{k}\n" for k in range(m.shape[1])))
    with open(os.path.join(args.mtx, "pairs.tsv"), "w") as f:
        f.write("".join(f"g{g}\tp{p}\n" for g, p in zip(gene_idx, peak_idx)))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "sql", "sce2g_step.sql")) as f:
        step = f.read()
    step = step.replace("'data/sce2g/", f"'{os.path.abspath(args.mtx)}/")
    step = step.replace("'sce2g_tau.txt'", f"'{os.path.abspath(args.mtx)}/ours.txt'")
    with open(os.path.join(args.mtx, "step.sql"), "w") as f:
        f.write(step)
    print(f"wrote the step's files and step.sql to {args.mtx}")


def timed(f):
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out


results = {}
for _ in range(args.rounds):
    if fks is not None:
        t, theirs = timed(lambda: fks.batch_kendall_tau(rna, atac, gene_idx, peak_idx))
        results.setdefault("fast_kendall_sc", []).append(t)
    t, ours = timed(lambda: dk.batch_kendall_tau(rna, atac, gene_idx, peak_idx))
    results.setdefault("datafusion-kendall batch_kendall_tau", []).append(t)
    if args.query_path:
        t, by_query = timed(
            lambda: dk._candidates._batch_kendall_tau(rna, atac, gene_idx, peak_idx, query=True)
        )
        results.setdefault("batch_kendall_tau through a query", []).append(t)
        assert np.array_equal(by_query.view(np.uint64), ours.view(np.uint64)), "query path differs"
    t, frame = timed(
        lambda: dk.candidate_pairs(
            rna, (gene_idx, peak_idx), atac, p_values=True, q_values=True, partitions=args.threads
        )
    )
    results.setdefault("datafusion-kendall candidate_pairs (p, q)", []).append(t)

for name, times in results.items():
    print(f"{name:45s} best {min(times):8.3f} s  (runs: {', '.join(f'{x:.3f}' for x in times)})")
if fks is not None:
    theirs = np.asarray(theirs, dtype=np.float64)
    both = ~np.isnan(theirs)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)), "NaN patterns differ"
    diff = np.max(np.abs(ours[both] - theirs[both]), initial=0.0)
    print(f"max |tau diff| = {diff:.3g} over {both.sum()} pairs")
    assert diff <= 1e-12
    best = min(results["fast_kendall_sc"]) / min(results["datafusion-kendall batch_kendall_tau"])
    print(f"batch_kendall_tau: {best:.1f}x fast_kendall_sc")
