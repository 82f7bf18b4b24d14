#!/usr/bin/env python3
"""A small single-cell demo: a 10x Genomics matrix directory and the same counts dense.

Writes (from the repository root; needs `pip install numpy pyarrow`):

- data/tenx_demo/matrix.mtx.gz, features.tsv.gz, barcodes.tsv.gz: 40 genes x 300
  cells of negative-binomial counts with dropout (about 80 % zeros), in Cell
  Ranger's layout (features as rows, barcodes as columns, 1-based coordinates,
  only non-zero entries, sorted by column as Cell Ranger writes them). Genes
  come in 4 modules of 10 that share a latent activity per cell, so they
  co-vary; two genes (GENE_39, GENE_40) are zero in every cell.
- data/tenx_demo_dense.parquet: the same counts, genes as rows (column
  `gene_id`, then one Float64 column per barcode), for checking that the
  directory reads as the same matrix.

Deterministic (seeded). Usage: python3 scripts/make_tenx_demo.py
"""
import gzip
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

GENES, CELLS, MODULES = 40, 300, 4
OUT = "data/tenx_demo"


def main() -> None:
    rng = np.random.default_rng(20261124)
    activity = rng.gamma(shape=0.6, scale=1.0, size=(MODULES, CELLS))
    depth = rng.lognormal(mean=0.0, sigma=0.4, size=CELLS)
    counts = np.zeros((GENES, CELLS), dtype=np.int64)
    for g in range(GENES - 2):
        mean = 0.8 * activity[g % MODULES] * depth * rng.uniform(0.5, 2.0)
        # Negative binomial with dispersion 2 as a gamma-Poisson mixture, then dropout.
        lam = rng.gamma(shape=2.0, scale=mean / 2.0)
        x = rng.poisson(lam)
        x[rng.random(CELLS) < 0.3] = 0
        counts[g] = x
    genes = [f"ENSG{g:011d}" for g in range(1, GENES + 1)]
    names = [f"GENE_{g}" for g in range(1, GENES + 1)]
    barcodes = [f"{''.join(rng.choice(list('ACGT'), 16))}-1" for _ in range(CELLS)]
    os.makedirs(OUT, exist_ok=True)
    rows, cols = np.nonzero(counts.T)  # by cell, then gene: Cell Ranger's order
    with gzip.open(f"{OUT}/matrix.mtx.gz", "wt", compresslevel=9) as f:
        f.write("%%MatrixMarket matrix coordinate integer general\n")
        f.write('%metadata_json: {"software_version": "make_tenx_demo.py"}\n')
        f.write(f"{GENES} {CELLS} {len(rows)}\n")
        for c, g in zip(rows, cols):
            f.write(f"{g + 1} {c + 1} {counts[g, c]}\n")
    with gzip.open(f"{OUT}/features.tsv.gz", "wt", compresslevel=9) as f:
        for i, n in zip(genes, names):
            f.write(f"{i}\t{n}\tGene Expression\n")
    with gzip.open(f"{OUT}/barcodes.tsv.gz", "wt", compresslevel=9) as f:
        for b in barcodes:
            f.write(f"{b}\n")
    table = pa.table({"gene_id": genes, **{b: counts[:, k].astype(np.float64) for k, b in enumerate(barcodes)}})
    pq.write_table(table, "data/tenx_demo_dense.parquet", compression="zstd")
    zeros = 1 - len(rows) / counts.size
    print(f"{OUT}: {GENES} genes x {CELLS} cells, {len(rows)} non-zero entries ({zeros:.1%} zeros)")


if __name__ == "__main__":
    main()
