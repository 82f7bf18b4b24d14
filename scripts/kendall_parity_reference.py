#!/usr/bin/env python3
"""scipy and R references for the options that match them: kendall.alternative,
kendall.continuity, exact p-values at large n, kendall.missing = 'complete' and
'propagate'.

Usage (from the repo root): python3 scripts/kendall_parity_reference.py
Needs: pip install scipy pyarrow numpy; Rscript (Debian: apt-get install r-base-core)
for the R files (skipped with a message when Rscript is missing).

Writes (numbers as repr(float), NaN as nan):
  tests/data/parity_scipy_missing.csv   bladder_missing.parquet, all pairs:
      p_less, p_greater   kendalltau(x, y, nan_policy='omit', alternative=...)
      tau_propagate, p_propagate   kendalltau(x, y) (nan_policy='propagate')
  tests/data/listwise_missing.parquet   genes 15-24 and 55-58 of bladder_missing.parquet
      (5 complete, 9 missing ~10 %; 4 rounded, with ties), all 57 samples
  tests/data/parity_scipy_listwise.csv  that file with every sample missing in any
      gene dropped: n, tau, p_value (method='auto'), p_less, p_greater
  tests/data/parity_scipy_ties.csv      bladder_ties.parquet, all pairs: p_less,
      p_greater (asymptotic, ties), q_greater (false_discovery_control of the
      non-NaN p_greater, Benjamini-Hochberg)
  tests/data/large_exact.parquet        6 tie-free genes x 1,100 samples (seed 27),
      genes_as_rows, correlated to different degrees
  tests/data/parity_scipy_large.csv     that file, all pairs: tau, p_exact,
      p_exact_less, p_exact_greater (method='exact'), p_asym_greater
and, with Rscript, scripts/kendall_parity_reference.R's files
  tests/data/parity_r_demo30.csv, parity_r_ties.csv, parity_r_listwise.csv.
"""
import csv
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy.stats import false_discovery_control, kendalltau

GENE = "gene_id"


def matrix(path):
    table = pq.read_table(path)
    samples = [c for c in table.column_names if c != GENE]
    genes = table.column(GENE).to_pylist()
    x = np.column_stack(
        [table.column(c).to_numpy(zero_copy_only=False) for c in samples]
    ).astype(float)
    return table, genes, samples, x


def r(v):
    return repr(float(v))


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print("wrote", path, len(rows), "rows")


def pairs(genes):
    for i in range(len(genes)):
        for j in range(i + 1, len(genes)):
            yield i, j


# 1. Pairwise one-sided p-values and scipy's default 'propagate'.
table, genes, samples, x = matrix("tests/data/bladder_missing.parquet")
rows = []
for i, j in pairs(genes):
    omit = lambda alt: kendalltau(x[i], x[j], nan_policy="omit", alternative=alt).pvalue
    prop = kendalltau(x[i], x[j])
    rows.append(
        [genes[i], genes[j], r(omit("less")), r(omit("greater")),
         r(prop.statistic), r(prop.pvalue)]
    )
write("tests/data/parity_scipy_missing.csv",
      ["gene_i", "gene_j", "p_less", "p_greater", "tau_propagate", "p_propagate"], rows)

# 2. Listwise deletion on a subset that keeps enough complete samples.
keep = list(range(15, 25)) + list(range(55, 59))
sub = table.take(pa.array(keep))
pq.write_table(sub, "tests/data/listwise_missing.parquet", compression="zstd")
lgenes = [genes[k] for k in keep]
lx = x[keep]
complete = ~np.isnan(lx).any(axis=0)
cx = lx[:, complete]
n = cx.shape[1]
assert 10 <= n <= 33, n
print("listwise: samples kept", n, "of", lx.shape[1])
rows = []
for i, j in pairs(lgenes):
    res = kendalltau(cx[i], cx[j])
    p = lambda alt: kendalltau(cx[i], cx[j], alternative=alt).pvalue
    rows.append([lgenes[i], lgenes[j], n, r(res.statistic), r(res.pvalue), r(p("less")),
                 r(p("greater"))])
write("tests/data/parity_scipy_listwise.csv",
      ["gene_i", "gene_j", "n", "tau", "p_value", "p_less", "p_greater"], rows)

# 3. One-sided asymptotic p-values with ties, and their q-values.
_, tgenes, _, tx = matrix("tests/data/bladder_ties.parquet")
tp = list(pairs(tgenes))
less = [kendalltau(tx[i], tx[j], alternative="less").pvalue for i, j in tp]
greater = np.array([kendalltau(tx[i], tx[j], alternative="greater").pvalue for i, j in tp])
q = np.full(len(tp), np.nan)
ok = ~np.isnan(greater)
q[ok] = false_discovery_control(greater[ok])
write("tests/data/parity_scipy_ties.csv",
      ["gene_i", "gene_j", "p_less", "p_greater", "q_greater"],
      [[tgenes[i], tgenes[j], r(a), r(b), r(c)] for (i, j), a, b, c in zip(tp, less, greater, q)])

# 4. Exact p-values above 1,000 samples (no ties).
rng = np.random.default_rng(27)
N = 1100
base = rng.standard_normal(N)
scales = [0.0, 0.05, 0.1, 0.3, 1.0, 30.0]
signs = [1, -1, 1, 1, -1, 1]
big = np.array([s * base + sc * rng.standard_normal(N) if sc else s * base
                for s, sc in zip(signs, scales)])
big = np.round(big, 12)
for g in big:
    assert len(np.unique(g)) == N
bgenes = [f"g{k}" for k in range(len(big))]
bcols = [f"s{k:04d}" for k in range(N)]
btable = pa.table([pa.array(bgenes)] + [pa.array(big[:, k]) for k in range(N)],
                  names=[GENE] + bcols)
pq.write_table(btable, "tests/data/large_exact.parquet", compression="zstd")
rows = []
for i, j in pairs(bgenes):
    e = lambda alt: kendalltau(big[i], big[j], method="exact", alternative=alt).pvalue
    res = kendalltau(big[i], big[j], method="exact")
    a = kendalltau(big[i], big[j], method="asymptotic", alternative="greater").pvalue
    rows.append([bgenes[i], bgenes[j], r(res.statistic), r(res.pvalue), r(e("less")),
                 r(e("greater")), r(a)])
write("tests/data/parity_scipy_large.csv",
      ["gene_i", "gene_j", "tau", "p_exact", "p_exact_less", "p_exact_greater",
       "p_asym_greater"], rows)

# 5. R: inputs as CSV (R reads no Parquet without packages) in a scratch dir.
if shutil.which("Rscript") is None:
    print("Rscript not found: R references not regenerated")
else:
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in [("demo30", "tests/data/demo_30_reference.parquet"),
                           ("ties", "tests/data/bladder_ties.parquet"),
                           ("listwise", "tests/data/listwise_missing.parquet")]:
            t, g, s, v = matrix(path)
            with open(os.path.join(tmp, name + ".csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow([GENE] + s)
                for gene, row in zip(g, v):
                    w.writerow([gene] + ["NA" if np.isnan(y) else r(y) for y in row])
        subprocess.run(["Rscript", "scripts/kendall_parity_reference.R", tmp, "tests/data"],
                       check=True)
