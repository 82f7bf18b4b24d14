#!/usr/bin/env python3
"""scE2G's Kendall step as its Python side runs it, with fast_kendall_sc
1.0.0: the reference that `sql/sce2g_step.sql` is checked against.

Usage: sce2g_step.py RNA.mtx GENES.txt ATAC.mtx PEAKS.txt PAIRS.tsv OUT.txt

Reads the files scE2G's R side writes — the RNA matrix (genes x cells) and
the binarised ATAC matrix (peaks x cells) as MatrixMarket with
scipy.io.mmread, a text file of gene names and one of peak names (one per
line), the candidate pairs as a headerless TSV (gene, peak) — maps the names
to indices, calls fast_kendall_sc.batch_kendall_tau on the cells x genes and
cells x peaks CSC matrices, and writes one tau per line in the pairs file's
order: `NA` where tau is undefined (NaN) or the pair names a gene or peak
the matrices lack. Floats are written with Python's repr (the shortest
string that reads back as the same float). Threads: RAYON_NUM_THREADS.
"""

import sys

import numpy as np
import scipy.io
import scipy.sparse as sp
from fast_kendall_sc import batch_kendall_tau


def names(path):
    with open(path) as f:
        return [line.rstrip("\r\n").split("\t")[0] for line in f]


def main(rna_path, genes_path, atac_path, peaks_path, pairs_path, out_path):
    rna = sp.csc_matrix(scipy.io.mmread(rna_path).T, dtype=np.float64)
    atac = sp.csc_matrix(scipy.io.mmread(atac_path).T, dtype=np.float64)
    gene_index = {g: i for i, g in enumerate(names(genes_path))}
    peak_index = {p: i for i, p in enumerate(names(peaks_path))}
    with open(pairs_path) as f:
        pairs = [line.rstrip("\r\n").split("\t")[:2] for line in f]
    found = [gene in gene_index and peak in peak_index for gene, peak in pairs]
    gene_idx = np.array([gene_index[g] for (g, p), ok in zip(pairs, found) if ok], dtype=np.int64)
    peak_idx = np.array([peak_index[p] for (g, p), ok in zip(pairs, found) if ok], dtype=np.int64)
    taus = iter(batch_kendall_tau(rna, atac, gene_idx, peak_idx))
    with open(out_path, "w") as out:
        for ok in found:
            tau = float(next(taus)) if ok else float("nan")
            out.write("NA\n" if np.isnan(tau) else f"{tau!r}\n")


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    main(*sys.argv[1:])
