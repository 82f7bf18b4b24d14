#!/usr/bin/env python3
"""Synthetic microarray-shaped expression matrices for the network benchmarks.

Usage:

    python3 scripts/make_network_data.py OUT.parquet [--genes 12625] [--samples 128]
        [--decimals 2] [--module-share 0.05] [--seed 1]

Writes one row per gene (``gene_id``, then one Float64 column per sample,
``s0``, ``s1``, ...), zstd-compressed, one row group. Each gene is a log2
expression level (a per-gene mean between 4 and 12 and a per-gene spread)
plus noise, rounded to ``--decimals`` places as published tables are, which
ties values within a gene the way microarray tables do (about a third of a
gene's values share a value with another at 2 decimals and 128 samples).
A share of the genes (``--module-share``) belong to co-expression modules
of 20 genes that follow one hidden profile closely, so a thresholded network
(``abs(tau) >= 0.8``) keeps some pairs; with ``--module-share 0`` every gene is
independent (no pair reaches 0.8 at 310 samples).

The defaults give the shape of the leukaemia microarray set the network
benchmark is about (12,625 probe sets x 128 samples); ``--genes 17941
--samples 310 --module-share 0`` the LightPCC paper's shape. Deterministic
for a given seed. Needs numpy and pyarrow.
"""
import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--genes", type=int, default=12625)
ap.add_argument("--samples", type=int, default=128)
ap.add_argument("--decimals", type=int, default=2)
ap.add_argument("--module-share", type=float, default=0.05)
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()

rng = np.random.default_rng(args.seed)
g, n = args.genes, args.samples
mean = rng.uniform(4.0, 12.0, size=(g, 1))
spread = rng.uniform(0.1, 1.0, size=(g, 1))
values = rng.standard_normal((g, n))
module_size = 20
modules = int(g * args.module_share) // module_size
for m in range(modules):
    profile = rng.standard_normal(n)
    rows = slice(m * module_size, (m + 1) * module_size)
    values[rows] = profile + 0.15 * rng.standard_normal((module_size, n))
values = np.round(mean + spread * values, args.decimals)
ids = pa.array([f"G{i:05d}" for i in range(g)], type=pa.string())
columns = [ids] + [pa.array(values[:, j], type=pa.float64()) for j in range(n)]
names = ["gene_id"] + [f"s{j}" for j in range(n)]
pq.write_table(pa.table(columns, names=names), args.out, compression="zstd",
               row_group_size=g)
tied = np.mean([n - len(np.unique(row)) for row in values[: min(g, 2000)]]) / n
print(f"{args.out}: {g} genes x {n} samples, {modules} modules of {module_size}, "
      f"{args.decimals} decimals, {tied:.1%} of a gene's values repeat another")
