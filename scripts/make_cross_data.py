#!/usr/bin/env python3
"""Two matrices for kendall_cross_pairs tests, and demo data for sql/cross.sql.

From data/demo_expression.parquet (genes as rows, `gene_id` then 57 samples):

- tests/data/cross_left.csv: the first 30 genes, 52 of the samples in a
  shuffled order; one gene rounded to 1 decimal (ties), one value removed
  (missing, an empty field).
- tests/data/cross_right.csv: genes 30-49 plus the left matrix's first gene
  again (the same id on both sides), 50 samples in another order, 45 of them
  shared with the left matrix.

Then `Rscript scripts/cross_reference.R` writes R's
`cor(x, y, method = "kendall", use = "pairwise.complete.obs")` for every
(left, right) pair to tests/data/cross_reference.csv.
Needs `pip install numpy pyarrow`; deterministic.
"""
import numpy as np
import pyarrow.parquet as pq

rng = np.random.default_rng(7)
t = pq.read_table("data/demo_expression.parquet").to_pandas()
samples = [c for c in t.columns if c != "gene_id"]

left = t.iloc[:30].copy()
left_samples = list(rng.permutation(samples)[:52])
left = left[["gene_id"] + left_samples]
left.iloc[3, 1:] = left.iloc[3, 1:].astype(float).round(1)
left = left.astype({c: object for c in left_samples})
left.iloc[5, 7] = ""

right = t.iloc[list(range(30, 50)) + [0]].copy()
shared = [s for s in left_samples][:45]
others = [s for s in samples if s not in left_samples][:5]
right_samples = list(rng.permutation(shared + others))
right = right[["gene_id"] + right_samples]

for frame, path in [(left, "tests/data/cross_left.csv"), (right, "tests/data/cross_right.csv")]:
    with open(path, "w") as f:
        f.write(",".join(frame.columns) + "\n")
        for row in frame.itertuples(index=False):
            f.write(",".join([row[0]] + ["" if v == "" else repr(float(v)) for v in row[1:]]) + "\n")
    print(path, frame.shape)
