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
- csr_gz.h5ad, csc_gz.h5ad, dense_gz.h5ad: as csr.h5ad (float32), csc.h5ad
  (float64) and dense.h5ad (int32), written with
  `write_h5ad(..., compression="gzip")` (chunked, gzip-compressed datasets,
  as published atlases are), and with categorical `obs` columns (`cluster`,
  `batch`: groups of `categories` and `codes`)
- no_x.h5ad: an AnnData file without `X` (for the error test)
- malformed/*.h5: small 10x files (3 features x 4 barcodes, variable-length
  UTF-8 ids, int64 indices, float32 data) for the error tests, one fault
  each (see `malformed()`), and a Cell Ranger v2 layout
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


def adata_annotated(x, genes, cells) -> anndata.AnnData:
    """adata() with categorical obs columns, as scanpy leaves them."""
    a = adata(x, genes, cells)
    a.obs["cluster"] = pd.Categorical([["T cell", "B cell", "NK"][c % 3] for c in range(len(cells))])
    a.obs["batch"] = pd.Categorical(["a" if c < len(cells) // 2 else "b" for c in range(len(cells))])
    a.obs["n_counts"] = np.asarray(x.sum(axis=1)).ravel().astype(np.float64)
    return a


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


def small_tenx(path, shape, indptr, indices, data) -> None:
    """A 10x file of 3 features x 4 barcodes with the given CSC arrays."""
    utf8 = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        m = f.create_group("matrix")
        m.create_dataset("shape", data=np.array(shape, dtype=np.int64))
        m.create_dataset("indptr", data=np.array(indptr, dtype=np.int64))
        m.create_dataset("indices", data=np.array(indices, dtype=np.int64))
        m.create_dataset("data", data=np.array(data, dtype=np.float32))
        m.create_dataset("barcodes", data=np.array(["w", "x", "y", "z"], dtype=object), dtype=utf8)
        m.create_group("features").create_dataset(
            "id", data=np.array(["a", "b", "c"], dtype=object), dtype=utf8)


def malformed() -> None:
    """The 10x files of tests/it/h5.rs's error test: a = (5, 0, 1, 2),
    b = (0, 3, 0, 1), c all zero, by barcode, entries of x listed out of
    feature order (good.h5); then one fault each."""
    d = f"{OUT}/malformed"
    os.makedirs(d, exist_ok=True)
    good = [0, 1, 2, 3, 5]
    ok_indices, ok_data = [0, 1, 0, 1, 0], [5.0, 3.0, 1.0, 1.0, 2.0]
    small_tenx(f"{d}/good.h5", [3, 4], good, ok_indices, ok_data)
    small_tenx(f"{d}/index_out_of_range.h5", [3, 4], good, [0, 1, 0, 7, 0], ok_data)
    small_tenx(f"{d}/indptr_not_ascending.h5", [3, 4], [0, 1, 3, 2, 5], ok_indices, ok_data)
    small_tenx(f"{d}/indptr_short.h5", [3, 4], [0, 1, 2, 3, 4], ok_indices, ok_data)
    small_tenx(f"{d}/nan.h5", [3, 4], good, ok_indices, [5.0, 3.0, np.nan, 1.0, 2.0])
    small_tenx(f"{d}/wrong_shape.h5", [4, 4], good, ok_indices, ok_data)
    small_tenx(f"{d}/duplicate.h5", [3, 4], good, [0, 1, 0, 0, 0], ok_data)
    with h5py.File(f"{d}/cellranger_v2.h5", "w") as f:
        f.create_group("GRCh38").create_dataset("genes", data=np.array([1], dtype=np.int32))


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
    gz = dict(compression="gzip")
    adata_annotated(sp.csr_matrix(x.astype(np.float32)), genes, cells).write_h5ad(f"{OUT}/csr_gz.h5ad", **gz)
    adata_annotated(sp.csc_matrix(x.astype(np.float64)), genes, cells).write_h5ad(f"{OUT}/csc_gz.h5ad", **gz)
    adata_annotated(x.astype(np.int32), genes, cells).write_h5ad(f"{OUT}/dense_gz.h5ad", **gz)
    malformed()
    # An AnnData file without X: copy csr.h5ad and delete it.
    with h5py.File(f"{OUT}/csr.h5ad", "r") as src, h5py.File(f"{OUT}/no_x.h5ad", "w") as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v
        for name in src:
            if name != "X":
                src.copy(name, dst)
    write_tsv(f"{OUT}/dense.tsv", x, genes, cells)
    for name in sorted(os.listdir(OUT)) + [f"malformed/{m}" for m in sorted(os.listdir(f"{OUT}/malformed"))]:
        if os.path.isfile(f"{OUT}/{name}"):
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
