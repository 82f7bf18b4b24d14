#!/usr/bin/env python3
"""Reference Kendall tau-a values for the first K genes of a wide expression Parquet file.

Usage: kendall_tau_a_reference.py INPUT.parquet K OUTPUT.csv [--gene-column gene_id]

Same input layout and pair order as ../shared/tools/kendall_reference.py: one row
per gene (string gene column, then one Float64 column per sample); writes one row
per unordered pair i<j (file order): gene_i,gene_j,tau, with tau formatted by
repr(float).

tau-a = S / (n(n-1)/2), where n is the number of samples and
S = (#concordant - #discordant) sample pairs, computed exactly in integers:
for each gene the vector sign(x[b] - x[a]) over all sample pairs a<b is built
(int64, values -1/0/+1; tied sample pairs give 0), and S for gene pair (i, j) is
the integer dot product of those two vectors -- an exact O(n^2) count per pair, no
floating point and no scipy. The only rounding is the final division S / n0, done
on Python ints (correctly rounded). Tied pairs count as neither concordant nor
discordant and are NOT corrected for (that is tau-b); a constant gene therefore
gets S = 0 and tau-a = 0.0 with every other gene, exactly as the formula says.
Missing (NaN/null) values are rejected. Needs: pip install pyarrow numpy
"""
import argparse
import csv
import sys

import numpy as np
import pyarrow.parquet as pq


def sign_vectors(x: np.ndarray) -> np.ndarray:
    """(genes, n) floats -> (genes, n(n-1)/2) int64 of sign(x[:, b] - x[:, a]), a<b."""
    n = x.shape[1]
    a, b = np.triu_indices(n, k=1)
    # Comparisons of finite floats are exact.
    return (x[:, b] > x[:, a]).astype(np.int64) - (x[:, b] < x[:, a]).astype(np.int64)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("k", type=int)
    ap.add_argument("output")
    ap.add_argument("--gene-column", default="gene_id")
    args = ap.parse_args()

    table = pq.read_table(args.input)
    genes = table.column(args.gene_column).to_pylist()[: args.k]
    samples = [c for c in table.column_names if c != args.gene_column]
    x = np.column_stack(
        [table.column(c).to_numpy(zero_copy_only=False) for c in samples]
    )[: args.k].astype(np.float64)
    if not np.all(np.isfinite(x)):
        sys.exit("input contains missing or non-finite values; tau-a reference needs complete data")

    n = x.shape[1]
    n0 = n * (n - 1) // 2
    sg = sign_vectors(x)

    with open(args.output, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gene_i", "gene_j", "tau"])
        for i in range(len(genes)):
            for j in range(i + 1, len(genes)):
                s = int(np.dot(sg[i], sg[j]))  # exact: |S| <= n0, int64
                w.writerow([genes[i], genes[j], repr(float(s / n0))])


if __name__ == "__main__":
    main()
