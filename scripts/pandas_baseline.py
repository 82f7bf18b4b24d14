#!/usr/bin/env python3
"""Kendall all-pairs throughput of pandas, the baseline for our kernels.

Usage: pandas_baseline.py INPUT.parquet K [--gene-column gene_id]

Times pandas.DataFrame.corr(method='kendall') over the first K genes of a
genes-as-rows Parquet matrix (genes become columns, as pandas expects) and
prints pairs per second. pandas computes each pair with scipy's kendalltau
(tau-b), one core. Needs: pip install pandas scipy pyarrow
"""
import argparse
import time

import pandas as pd
import pyarrow.parquet as pq

ap = argparse.ArgumentParser()
ap.add_argument("input")
ap.add_argument("k", type=int)
ap.add_argument("--gene-column", default="gene_id")
args = ap.parse_args()

table = pq.read_table(args.input).slice(0, args.k).to_pandas()
matrix = table.set_index(args.gene_column).T  # samples x genes
k, n = matrix.shape[1], matrix.shape[0]
pairs = k * (k - 1) // 2
start = time.perf_counter()
matrix.corr(method="kendall")
secs = time.perf_counter() - start
print(f"pandas {pd.__version__}: {k} genes x {n} samples, {pairs} pairs in {secs:.2f} s "
      f"= {pairs / secs:.3e} pairs/s")
