#!/usr/bin/env python3
"""scipy p-value references for kendall_all_pairs' p_value column.

Usage: kendall_pvalue_reference.py INPUT.parquet K OUTPUT.csv [--samples S]
           [--method auto|exact|asymptotic] [--gene-column gene_id]

All pairs i<j of the first K genes (and the first S sample columns, when
given), scipy.stats.kendalltau(method=...), tau-b. Writes gene_i,gene_j,tau,p_value.
With --samples also writes the subset matrix next to OUTPUT as .parquet so
the SQL test reads exactly the same data. Needs: pip install scipy pyarrow numpy
"""
import argparse
import csv

import numpy as np
import pyarrow.parquet as pq
from scipy.stats import kendalltau

ap = argparse.ArgumentParser()
ap.add_argument("input")
ap.add_argument("k", type=int)
ap.add_argument("output")
ap.add_argument("--samples", type=int)
ap.add_argument("--method", default="auto")
ap.add_argument("--gene-column", default="gene_id")
args = ap.parse_args()

table = pq.read_table(args.input).slice(0, args.k)
samples = [c for c in table.column_names if c != args.gene_column]
if args.samples:
    samples = samples[: args.samples]
    table = table.select([args.gene_column] + samples)
    pq.write_table(table, args.output.rsplit(".", 1)[0] + ".parquet", compression="zstd")
genes = table.column(args.gene_column).to_pylist()
x = np.column_stack([table.column(c).to_numpy(zero_copy_only=False) for c in samples])

with open(args.output, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["gene_i", "gene_j", "tau", "p_value"])
    for i in range(len(genes)):
        for j in range(i + 1, len(genes)):
            res = kendalltau(x[i], x[j], method=args.method)
            w.writerow([genes[i], genes[j], repr(float(res.statistic)), repr(float(res.pvalue))])
