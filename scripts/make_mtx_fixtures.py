#!/usr/bin/env python3
"""MatrixMarket fixtures for the tests of the `.mtx` reader, and what
scipy.io.mmread reads from them.

Writes tests/data/mtx/: small coordinate files (integer, real and pattern
entries; general and symmetric; comment and blank lines before the size line
(scipy refuses them between entries); plain and gzip),
each with its row names beside it (`<name>.rows.txt`, `r1`, `r2`, ...) and
some with column names (`<name>.columns.txt`, `c1`, ...; without one the
columns are named by position, `1`, `2`, ...), and
tests/data/mtx/mmread_reference.tsv: for every file, every non-zero value of
the matrix scipy.io.mmread returns (a symmetric file's mirrored entries
included), as `file, gene, sample, value` (value: Python's repr, the
shortest string that reads back as the same float).

Run from the repository root: python3 scripts/make_mtx_fixtures.py
"""

import gzip
import os

import numpy as np
import scipy.io

OUT = "tests/data/mtx"
rng = np.random.default_rng(45)


def entries(rows, cols, density, symmetric):
    """Distinct random (row, col) positions, 1-based; one triangle when symmetric."""
    cells = [(i, j) for i in range(1, rows + 1) for j in range(1, cols + 1)
             if not symmetric or j <= i]
    keep = rng.random(len(cells)) < density
    picked = [c for c, k in zip(cells, keep) if k]
    order = rng.permutation(len(picked))
    return [picked[k] for k in order]


def value(kind):
    if kind == "integer":
        return str(int(rng.integers(1, 40)))
    if kind == "real":
        return repr(float(np.round(rng.normal(2.0, 3.0), int(rng.integers(1, 17)))))
    return None


def write(name, kind, symmetry, rows, cols, density, columns_file, gz=False):
    pos = entries(rows, cols, density, symmetry == "symmetric")
    lines = [f"%%MatrixMarket matrix coordinate {kind} {symmetry}",
             "% written by scripts/make_mtx_fixtures.py", "%", "",
             f"{rows} {cols} {len(pos)}"]
    for i, j in pos:
        v = value(kind)
        lines.append(f"{i} {j}" if v is None else f"{i} {j} {v}")
    text = "\n".join(lines) + "\n"
    path = os.path.join(OUT, name + (".mtx.gz" if gz else ".mtx"))
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    with open(os.path.join(OUT, name + ".rows.txt"), "w") as f:
        f.write("".join(f"r{i}\n" for i in range(1, rows + 1)))
    if columns_file:
        with open(os.path.join(OUT, name + ".columns.txt"), "w") as f:
            f.write("".join(f"c{j}\tbarcode {j}\n" for j in range(1, cols + 1)))
    return path


FILES = [
    ("integer_general", "integer", "general", 7, 9, 0.4, True, False),
    ("real_general", "real", "general", 6, 11, 0.5, False, True),
    ("pattern_general", "pattern", "general", 8, 5, 0.3, True, False),
    ("real_symmetric", "real", "symmetric", 7, 7, 0.5, False, False),
    ("integer_symmetric", "integer", "symmetric", 6, 6, 0.6, True, True),
    ("pattern_symmetric", "pattern", "symmetric", 9, 9, 0.3, False, False),
]

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "mmread_reference.tsv"), "w") as ref:
    ref.write("file\tgene\tsample\tvalue\n")
    for name, kind, symmetry, rows, cols, density, columns_file, gz in FILES:
        path = write(name, kind, symmetry, rows, cols, density, columns_file, gz)
        dense = scipy.io.mmread(path)
        dense = dense.toarray() if hasattr(dense, "toarray") else np.asarray(dense)
        for i, j in zip(*np.nonzero(dense)):
            sample = f"c{j + 1}" if columns_file else str(j + 1)
            ref.write(f"{os.path.basename(path)}\tr{i + 1}\t{sample}\t{float(dense[i, j])!r}\n")
