#!/usr/bin/env python3
"""dk.corr against pandas.DataFrame.corr(method='kendall') on the same frame.

Usage: python_bench.py INPUT.parquet K [K ...] [--repeat R] [--gene-column gene_id]

For each K: the first K genes of a genes-as-rows Parquet matrix become a
samples x genes frame (pandas' shape); pandas' corr, dk.corr (long result)
and dk.corr(square=True) run on it in the same process, alternated, R times
each; medians are printed with pairs per second and the speed-ups. Also
checks that both give the same taus (max |difference|).

Needs the package (pip install ./python) and pandas, pyarrow, scipy.
"""
import argparse
import statistics
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

import datafusion_kendall as dk

ap = argparse.ArgumentParser()
ap.add_argument("input")
ap.add_argument("k", type=int, nargs="+")
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--gene-column", default="gene_id")
ap.add_argument("--blocks", action="store_true",
                help="run each tool's R repetitions back to back instead of alternating "
                     "(the first dk.corr after pandas' corr pays for memory pandas freed)")
ap.add_argument("--no-pandas-above", type=int, default=10**9,
                help="skip pandas for K above this (it takes minutes)")
args = ap.parse_args()

full = pq.read_table(args.input)
for k in args.k:
    frame = full.slice(0, k).to_pandas().set_index(args.gene_column).T
    n = frame.shape[0]
    pairs = k * (k - 1) // 2
    runs = {"pandas": [], "dk.corr": [], "dk.corr square": []}
    results = {}
    order = ([name for name in runs for _ in range(args.repeat)] if args.blocks
             else [name for _ in range(args.repeat) for name in runs])
    for name in order:
        if name == "pandas" and k > args.no_pandas_above:
            continue
        start = time.perf_counter()
        if name == "pandas":
            out = frame.corr(method="kendall")
        elif name == "dk.corr":
            out = dk.corr(frame)
        else:
            out = dk.corr(frame, square=True)
        runs[name].append(time.perf_counter() - start)
        results[name] = out
    mode = "back to back" if args.blocks else "alternated"
    print(f"{k} genes x {n} samples = {pairs} pairs, median of {args.repeat} ({mode}):")
    for name, times in runs.items():
        if not times:
            continue
        t = statistics.median(times)
        line = f"  {name:15s} {t:9.3f} s (min {min(times):.3f})  {pairs / t:10.3e} pairs/s"
        if runs["pandas"] and name != "pandas":
            line += f"  {statistics.median(runs['pandas']) / t:7.1f}x pandas"
        print(line)
    if "pandas" in results:
        a = results["dk.corr square"].to_numpy()
        b = results["pandas"].to_numpy()
        print(f"  max |tau dk - tau pandas| = {np.nanmax(np.abs(a - b)):.2e}")
