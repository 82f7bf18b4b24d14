#!/usr/bin/env python3
"""Small HDF5 fixtures for the `hdf5` feature's readers (AnnData .h5ad, 10x .h5).

Writes into tests/data/h5/ (from the repository root; needs
`pip install anndata h5py scipy numpy`) one matrix of counts, 12 genes x 40
cells, about 60 % zeros, with ties everywhere, one gene (ENSG00000000012)
zero in every cell and one cell (the last barcode) zero in every gene:

- csr.h5ad: AnnData, X a CSR matrix (cells by row) of float32
- csc.h5ad: AnnData, X a CSC matrix of float64
- csc_f32.h5ad: AnnData, X a CSC matrix of float32
- dense.h5ad: AnnData, X a dense 2-D dataset of int32
- tenx_v3.h5: Cell Ranger v3's filtered_feature_bc_matrix.h5 layout, written
  with h5py (group `matrix`: features x barcodes, CSC by barcode, int32
  counts, gzip-compressed datasets as Cell Ranger writes them; `features/id`
  Ensembl-style ids, `features/name` symbols; fixed-length byte strings)
- no_x.h5ad: an AnnData file without `X` (for the error test)
- dense.tsv: the same counts, genes as rows (column `gene`, then one column
  per cell id), what the Rust tests compare every fixture against bit for bit

Every value is a small integer, exact in float32, float64 and int32, so all
fixtures hold the same matrix. Deterministic (seeded).

With `--large [PATH]` it writes instead (not committed) a benchmark file:
2,000 genes x 200,000 cells, 95 % zeros, CSR float32 X, to PATH (default
/tmp/large.h5ad).

Usage: python3 scripts/make_h5_fixtures.py [--large [PATH]]
"""
import os
import sys

import anndata
import h5py
import numpy as np
import pandas as pd
import scipy.sparse as sp

OUT = "tests/data/h5"
GENES, CELLS = 12, 40


def counts() -> np.ndarray:
    """cells x genes integer counts with ties, an all-zero gene and cell."""
    rng = np.random.default_rng(20261126)
    x = rng.poisson(1.2, size=(CELLS, GENES)).astype(np.int64)
    x[rng.random((CELLS, GENES)) < 0.45] = 0
    x[:, GENES - 1] = 0  # a gene of all zeros
    x[CELLS - 1, :] = 0  # a cell of all zeros
    return x


def ids():
    genes = [f"ENSG{g + 1:011d}" for g in range(GENES)]
    cells = [f"{''.join('ACGT'[(c >> (2 * k)) & 3] for k in range(8))}-1" for c in range(CELLS)]
    return genes, cells


def adata(x, genes, cells) -> anndata.AnnData:
    return anndata.AnnData(
        X=x,
        obs=pd.DataFrame(index=pd.Index(cells)),
        var=pd.DataFrame({"symbol": [f"GENE{g + 1}" for g in range(len(genes))]},
                         index=pd.Index(genes)),
    )


def write_tenx(path, x, genes, cells) -> None:
    """Cell Ranger v3's .h5: features x barcodes in CSC (one column per barcode)."""
    m = sp.csc_matrix(x.T.astype(np.int32))  # genes x cells, compressed by cell
    m.sort_indices()
    gz = dict(compression="gzip", compression_opts=4)
    with h5py.File(path, "w") as f:
        f.attrs["filetype"] = "matrix"
        f.attrs["version"] = 2
        g = f.create_group("matrix")
        g.create_dataset("barcodes", data=np.array(cells, dtype="S"), **gz)
        g.create_dataset("data", data=m.data.astype(np.int32), **gz)
        g.create_dataset("indices", data=m.indices.astype(np.int64), **gz)
        g.create_dataset("indptr", data=m.indptr.astype(np.int64), **gz)
        g.create_dataset("shape", data=np.array(m.shape, dtype=np.int32), **gz)
        feats = g.create_group("features")
        feats.create_dataset("id", data=np.array(genes, dtype="S"), **gz)
        feats.create_dataset("name", data=np.array([f"GENE{k + 1}" for k in range(len(genes))], dtype="S"), **gz)
        feats.create_dataset("feature_type", data=np.array(["Gene Expression"] * len(genes), dtype="S"), **gz)
        feats.create_dataset("genome", data=np.array(["GRCh38"] * len(genes), dtype="S"), **gz)
        feats.create_dataset("_all_tag_keys", data=np.array([b"genome"]))


def write_tsv(path, x, genes, cells) -> None:
    with open(path, "w") as f:
        f.write("gene\t" + "\t".join(cells) + "\n")
        for g, gene in enumerate(genes):
            f.write(gene + "\t" + "\t".join(str(int(v)) for v in x[:, g]) + "\n")


def fixtures() -> None:
    os.makedirs(OUT, exist_ok=True)
    x = counts()
    genes, cells = ids()
    a = adata(sp.csr_matrix(x.astype(np.float32)), genes, cells)
    a.write_h5ad(f"{OUT}/csr.h5ad")
    adata(sp.csc_matrix(x.astype(np.float64)), genes, cells).write_h5ad(f"{OUT}/csc.h5ad")
    adata(sp.csc_matrix(x.astype(np.float32)), genes, cells).write_h5ad(f"{OUT}/csc_f32.h5ad")
    adata(x.astype(np.int32), genes, cells).write_h5ad(f"{OUT}/dense.h5ad")
    write_tenx(f"{OUT}/tenx_v3.h5", x, genes, cells)
    # An AnnData file without X: copy csr.h5ad and delete it.
    with h5py.File(f"{OUT}/csr.h5ad", "r") as src, h5py.File(f"{OUT}/no_x.h5ad", "w") as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v
        for name in src:
            if name != "X":
                src.copy(name, dst)
    write_tsv(f"{OUT}/dense.tsv", x, genes, cells)
    for name in sorted(os.listdir(OUT)):
        print(f"{OUT}/{name}: {os.path.getsize(f'{OUT}/{name}')} bytes")


def large(path: str) -> None:
    genes, cells, density = 2_000, 200_000, 0.05
    rng = np.random.default_rng(20261127)
    nnz_per_cell = rng.binomial(genes, density, size=cells)
    indptr = np.concatenate([[0], np.cumsum(nnz_per_cell)]).astype(np.int64)
    indices = np.empty(indptr[-1], dtype=np.int32)
    for c in range(cells):
        indices[indptr[c]:indptr[c + 1]] = np.sort(rng.choice(genes, nnz_per_cell[c], replace=False))
    data = rng.integers(1, 30, size=indptr[-1]).astype(np.float32)
    x = sp.csr_matrix((data, indices, indptr), shape=(cells, genes))
    a = anndata.AnnData(
        X=x,
        obs=pd.DataFrame(index=pd.Index([f"cell{c}" for c in range(cells)])),
        var=pd.DataFrame(index=pd.Index([f"gene{g}" for g in range(genes)])),
    )
    a.write_h5ad(path)
    print(f"{path}: {genes} genes x {cells} cells, {x.nnz} non-zeros, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--large":
        large(sys.argv[2] if len(sys.argv) > 2 else "/tmp/large.h5ad")
    else:
        fixtures()
