#!/usr/bin/env python3
"""Missing-value test data and its pandas / scipy references.

Usage (from the repo root): python3 scripts/kendall_missing_reference.py

Writes tests/data/bladder_missing.parquet: 40 genes of
data/demo_expression.parquet (raw RMA values, nearly tie-free) and 30 of
tests/data/bladder_ties.parquet (rounded: many ties; ids get a `_rounded`
suffix) plus its constant probe,
57 samples, with values removed at random (seed 5) as nulls or NaNs:
  - genes 0-19 and 40-54 keep every value (complete pairs stay on the fast path);
  - genes 20-34 and 55-62 lose ~10 % of their values;
  - genes 35-38 and 63-66 lose ~65 % (pairs then share 10-30 samples: small-n
    exact p-values and min_periods NULLs);
  - gene 39 keeps a single value, gene 67 none, genes 68-70 lose ~30 %;
  - the constant probe loses ~10 %.
and tests/data/bladder_missing_reference.csv with, for every pair i<j:
  n          samples where both genes have a value
  tau        pandas DataFrame.corr(method='kendall') (min_periods=1)
  tau_min30  the same with min_periods=30
  p_value    scipy.stats.kendalltau(x, y, nan_policy='omit').pvalue (method='auto')
  tau_c      scipy.stats.kendalltau(x, y, nan_policy='omit', variant='c').statistic
  tau_a      exact S / (n(n-1)/2) on the shared samples (numpy sign products)
  p_exact    scipy.stats.kendalltau(x, y, nan_policy='omit', method='exact').pvalue
             (nan where scipy refuses: ties on the shared samples)
Numbers are repr(float); NaN is written as nan. Needs: pip install pandas scipy pyarrow numpy
"""
import csv

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from scipy.stats import kendalltau

OUT = "tests/data/bladder_missing.parquet"
REF = "tests/data/bladder_missing_reference.csv"

demo = pq.read_table("data/demo_expression.parquet").slice(0, 40)
ties = pq.read_table("tests/data/bladder_ties.parquet")
ties = pa.concat_tables([ties.slice(0, 30), ties.slice(60, 1)])
source = pa.concat_tables([demo, ties])
gene_col = "gene_id"
samples = [c for c in source.column_names if c != gene_col]
# The rounded probes are the same probe sets as the first demo ones: rename.
genes = source.column(gene_col).to_pylist()
genes = genes[:40] + [g + "_rounded" for g in genes[40:70]] + genes[70:]
assert len(set(genes)) == len(genes)
x = np.column_stack([source.column(c).to_numpy() for c in samples]).astype(float)
m, n = x.shape
assert m == 71 and n == 57

rng = np.random.default_rng(5)
rate = np.zeros(m)
rate[20:35] = rate[55:63] = 0.10
rate[35:39] = rate[63:67] = 0.65
rate[68:71] = 0.30
rate[70] = 0.10  # the constant probe
missing = rng.random((m, n)) < rate[:, None]
missing[39] = True
missing[39, 7] = False
missing[67] = True
# Half the gaps are nulls, half NaN values: both mean "missing".
as_null = missing & (rng.random((m, n)) < 0.5)
as_nan = missing & ~as_null

columns = [pa.array(genes, pa.string())]
for s in range(n):
    values = np.where(as_nan[:, s], np.nan, x[:, s])
    columns.append(pa.array(values, pa.float64(), mask=as_null[:, s]))
table = pa.table(columns, names=[gene_col] + samples)
pq.write_table(table, OUT, compression="zstd", use_dictionary=False)

data = np.where(missing, np.nan, x)
frame = pd.DataFrame(data.T, columns=genes)
tau1 = frame.corr(method="kendall", min_periods=1).to_numpy()
tau30 = frame.corr(method="kendall", min_periods=30).to_numpy()

with open(REF, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["gene_i", "gene_j", "n", "tau", "tau_min30", "p_value", "tau_c", "tau_a", "p_exact"])
    for i in range(m):
        for j in range(i + 1, m):
            both = ~missing[i] & ~missing[j]
            k = int(both.sum())
            if k >= 2:
                p = kendalltau(data[i], data[j], nan_policy="omit").pvalue
                c = kendalltau(data[i], data[j], nan_policy="omit", variant="c").statistic
                u, v = data[i][both], data[j][both]
                s = int(np.sum(np.sign(u[:, None] - u[None, :]) * np.sign(v[:, None] - v[None, :]))) // 2
                a = s / (k * (k - 1) // 2)
                try:
                    e = kendalltau(data[i], data[j], nan_policy="omit", method="exact").pvalue
                except ValueError:
                    e = np.nan
            else:
                p = c = a = e = np.nan
            w.writerow([genes[i], genes[j], k, repr(float(tau1[i, j])),
                        repr(float(tau30[i, j])), repr(float(p)), repr(float(c)), repr(float(a)),
                        repr(float(e))])
print(f"wrote {OUT} ({m} genes x {n} samples, {int(missing.sum())} missing) and {REF}")
