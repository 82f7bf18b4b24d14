#!/usr/bin/env python3
"""False-discovery-rate references for the `q_value` column.

Reads a reference CSV whose p-values scipy computed (`gene_i,gene_j,...,p_value,...`,
one row per pair i < j of a test matrix, `nan` where scipy gives NaN) and
writes `gene_i,gene_j,p_value,q_bh,q_by`: the Benjamini-Hochberg and
Benjamini-Yekutieli adjusted p-values of scipy.stats.false_discovery_control
over every pair whose p-value is a number (NaN pairs are not tests: they stay
`nan`, as scipy refuses NaN input).

Usage (from the repository root; needs `pip install scipy numpy`):

    python3 scripts/fdr_reference.py tests/data/bladder_ties_reference.csv tests/data/bladder_ties_fdr_reference.csv
    python3 scripts/fdr_reference.py tests/data/demo_head_reference.csv tests/data/demo_head_fdr_reference.csv
    python3 scripts/fdr_reference.py tests/data/bladder_missing_reference.csv tests/data/bladder_missing_fdr_reference.csv
"""
import csv
import sys

import numpy as np
from scipy.stats import false_discovery_control


def main(src: str, out: str) -> None:
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    p = np.array([float(r["p_value"]) for r in rows])
    tests = ~np.isnan(p)
    q = {}
    for method in ("bh", "by"):
        adjusted = np.full(p.shape, np.nan)
        adjusted[tests] = false_discovery_control(p[tests], method=method)
        q[method] = adjusted
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["gene_i", "gene_j", "p_value", "q_bh", "q_by"])
        for k, r in enumerate(rows):
            w.writerow([r["gene_i"], r["gene_j"], repr(float(p[k])),
                        repr(float(q["bh"][k])), repr(float(q["by"][k]))])
    print(f"{out}: {len(rows)} pairs, {int(tests.sum())} tests, "
          f"{int((q['bh'] < 0.05).sum())} with q_bh < 0.05")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
