#!/usr/bin/env python3
"""Copies an expression matrix (genes as rows) with values removed at random.

Usage: add_missing.py INPUT.parquet OUTPUT.parquet RATE [--seed S] [--gene-column gene_id]

Each sample value becomes null with probability RATE (independently), for
benchmarking the missing-value path, e.g.
  python3 scripts/add_missing.py ../shared/data/bladder_hgu133a.parquet /tmp/bladder_1pct.parquet 0.01
Needs: pip install pyarrow numpy
"""
import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ap = argparse.ArgumentParser()
ap.add_argument("input")
ap.add_argument("output")
ap.add_argument("rate", type=float)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--gene-column", default="gene_id")
args = ap.parse_args()

table = pq.read_table(args.input)
rng = np.random.default_rng(args.seed)
columns, removed = [], 0
for name in table.column_names:
    column = table.column(name).combine_chunks()
    if name != args.gene_column:
        drop = rng.random(len(column)) < args.rate
        removed += int(drop.sum())
        column = pa.array(column.to_numpy(zero_copy_only=False), column.type, mask=drop)
    columns.append(column)
pq.write_table(pa.table(columns, names=table.column_names), args.output, compression="zstd")
print(f"{args.output}: {removed} of {table.num_rows * (table.num_columns - 1)} values removed")
