#!/usr/bin/env python3
"""Synthetic single-cell counts for the zero-inflated kernel's measurements.

Writes a Parquet file in the `genes_as_columns` layout (the AnnData layout):
one row per cell, a string column `cell`, then one Float64 column per gene of
negative-binomial counts (mean drawn per gene, dispersion 2, a shared latent
activity per module of 8 genes) with dropout tuned so that a fraction ZEROS
of all values is 0.

    python3 scripts/make_sparse_counts.py GENES CELLS ZEROS OUT [--seed S] [--tenx]
    python3 scripts/make_sparse_counts.py 800 20000 0.95 /tmp/sc_800x20000_95.parquet

With --tenx, OUT is a directory written as Cell Ranger writes a matrix
(matrix.mtx.gz, features.tsv.gz, barcodes.tsv.gz) instead. With --large
(implies --tenx) each gene's non-zero cells are drawn directly, never a
dense row, for atlas sizes (20000 200000 0.95: 2e8 entries, about 3 min);
entries come gene by gene, counts 1 + negative binomial:

    python3 scripts/make_sparse_counts.py 20000 200000 0.95 /tmp/atlas --large

Needs `pip install numpy pyarrow`. Deterministic for a seed.
"""
import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("genes", type=int)
    ap.add_argument("cells", type=int)
    ap.add_argument("zeros", type=float)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tenx", action="store_true")
    ap.add_argument("--large", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    if a.large:
        write_tenx_large(a.genes, a.cells, a.zeros, a.out, rng)
        return
    modules = max(1, a.genes // 8)
    activity = rng.gamma(0.8, 1.0, size=(modules, a.cells))
    columns = {"cell": [f"cell_{c}" for c in range(a.cells)]}
    total_zeros = 0
    for g in range(a.genes):
        mean = 2.0 * activity[g % modules] * rng.uniform(0.5, 2.0)
        x = rng.poisson(rng.gamma(2.0, mean / 2.0))
        # Dropout: keep each non-zero with the probability that gives the target zeros.
        nonzero = np.count_nonzero(x)
        keep = min(1.0, (1 - a.zeros) * a.cells / max(nonzero, 1))
        x[rng.random(a.cells) >= keep] = 0
        total_zeros += a.cells - np.count_nonzero(x)
        columns[f"gene_{g}"] = x.astype(np.float64)
    if a.tenx:
        write_tenx(columns, a.out)
    else:
        pq.write_table(pa.table(columns), a.out, compression="zstd")
    print(f"{a.out}: {a.genes} genes x {a.cells} cells, {total_zeros / (a.genes * a.cells):.1%} zeros")


def write_tenx(columns: dict, out: str) -> None:
    import gzip
    import os

    os.makedirs(out, exist_ok=True)
    genes = [k for k in columns if k != "cell"]
    counts = np.stack([columns[g] for g in genes]).astype(np.int64)  # genes x cells
    cells, rows = np.nonzero(counts.T)  # by cell, then gene: Cell Ranger's order
    with gzip.open(f"{out}/matrix.mtx.gz", "wt", compresslevel=1) as f:
        f.write("%%MatrixMarket matrix coordinate integer general\n")
        f.write(f"{counts.shape[0]} {counts.shape[1]} {len(rows)}\n")
        values = counts[rows, cells]
        f.write("".join(f"{r + 1} {c + 1} {v}\n" for r, c, v in zip(rows, cells, values)))
    with gzip.open(f"{out}/features.tsv.gz", "wt") as f:
        f.write("".join(f"{g}\t{g}\tGene Expression\n" for g in genes))
    with gzip.open(f"{out}/barcodes.tsv.gz", "wt") as f:
        f.write("".join(f"{c}\n" for c in columns["cell"]))


def write_tenx_large(genes: int, cells: int, zeros: float, out: str, rng) -> None:
    """A 10x directory of GENES x CELLS whose genes each hold about a
    fraction 1 - ZEROS of non-zero counts, drawn sparse and written block by
    block (pyarrow's CSV writer into a gzip stream)."""
    import gzip
    import os

    import pyarrow.csv as pcsv

    os.makedirs(out, exist_ok=True)
    # Each gene's cells: uniform draws, duplicates merged (a little under
    # the target density), sorted.
    draws = rng.binomial(cells, 1 - zeros, size=genes)
    rows, cols, vals = [], [], []
    for g in range(genes):
        c = np.unique(rng.integers(0, cells, size=draws[g], dtype=np.int32))
        rows.append(np.full(len(c), g + 1, dtype=np.int32))
        cols.append(c + 1)
        vals.append((1 + rng.negative_binomial(2, 0.5, size=len(c))).astype(np.int32))
    entries = sum(len(r) for r in rows)
    with pa.CompressedOutputStream(f"{out}/matrix.mtx.gz", "gzip") as f:
        f.write(b"%%MatrixMarket matrix coordinate integer general\n")
        f.write(f"{genes} {cells} {entries}\n".encode())
        options = pcsv.WriteOptions(include_header=False, delimiter=" ")
        block = 500
        for b in range(0, genes, block):
            table = pa.table(
                {
                    "r": np.concatenate(rows[b : b + block]),
                    "c": np.concatenate(cols[b : b + block]),
                    "v": np.concatenate(vals[b : b + block]),
                }
            )
            pcsv.write_csv(table, f, options)
    with gzip.open(f"{out}/features.tsv.gz", "wt") as f:
        f.write("".join(f"gene_{g}\tgene_{g}\tGene Expression\n" for g in range(genes)))
    with gzip.open(f"{out}/barcodes.tsv.gz", "wt") as f:
        f.write("".join(f"cell_{c}\n" for c in range(cells)))
    print(f"{out}: {genes} genes x {cells} cells, {entries} entries ({1 - entries / (genes * cells):.1%} zeros)")


if __name__ == "__main__":
    main()
