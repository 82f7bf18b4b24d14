#!/usr/bin/env python3
"""Small files of the shape scE2G's R side writes for its Kendall step, and
the output its Python step (fast_kendall_sc 1.0.0, scripts/sce2g_step.py)
makes of them.

Writes data/sce2g/:
- rna.mtx: 40 genes x 300 cells (real general), counts drawn
  negative-binomial (about 75 % zeros), normalised to 10,000 per cell and
  log1p-transformed as Seurat does; gene 7 is all zeros;
- rna_genes.txt: the gene names, one per line;
- atac.mtx: 200 peaks x 300 cells, binarised (pattern general: the
  positions of the ones, as R's writeMM writes a logical matrix), about 10 %
  ones; peak 11 has none;
- atac_peaks.txt: the peak names (chr:start-end), one per line;
- pairs.tsv: candidate (gene, peak) pairs, headerless, 8 peaks per gene,
  with pairs naming a gene or a peak the matrices lack and a pair listed
  twice;
and tests/data/sce2g_tau_reference.txt, scripts/sce2g_step.py's output:
one tau per line in the pairs file's order, NA where undefined.

Run from the repository root: python3 scripts/make_sce2g_demo.py
"""

import os
import subprocess
import sys

import numpy as np

OUT = "data/sce2g"
CELLS, GENES, PEAKS, PER_GENE = 300, 40, 200, 8
rng = np.random.default_rng(2045)

os.makedirs(OUT, exist_ok=True)
counts = rng.negative_binomial(0.3, 0.3, size=(GENES, CELLS)).astype(float)
counts[7] = 0
per_cell = counts.sum(axis=0)
per_cell[per_cell == 0] = 1
rna = np.log1p(counts / per_cell * 10000)
atac = rng.random((PEAKS, CELLS)) < 0.1
atac[11] = False

genes = [f"GENE{g:03d}" for g in range(GENES)]
peaks = [f"chr1:{1000 + 500 * p}-{1300 + 500 * p}" for p in range(PEAKS)]


def write_mtx(path, matrix, kind):
    rows, cols = np.nonzero(matrix)
    order = np.lexsort((rows, cols))  # column by column, as R's dgCMatrix
    with open(path, "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate {kind} general\n")
        f.write(f"{matrix.shape[0]} {matrix.shape[1]} {len(rows)}\n")
        for k in order:
            i, j = rows[k], cols[k]
            f.write(f"{i + 1} {j + 1}\n" if kind == "pattern"
                    else f"{i + 1} {j + 1} {float(matrix[i, j])!r}\n")


write_mtx(f"{OUT}/rna.mtx", rna, "real")
write_mtx(f"{OUT}/atac.mtx", atac, "pattern")
with open(f"{OUT}/rna_genes.txt", "w") as f:
    f.write("".join(g + "\n" for g in genes))
with open(f"{OUT}/atac_peaks.txt", "w") as f:
    f.write("".join(p + "\n" for p in peaks))

pairs = []
for g in range(GENES):
    for p in rng.choice(PEAKS, size=PER_GENE, replace=False):
        pairs.append((genes[g], peaks[p]))
pairs.insert(5, ("GENE_NOT_IN_RNA", peaks[3]))
pairs.insert(50, (genes[2], "chrX:1-2"))
pairs.insert(120, pairs[17])
pairs.append(("GENE007", peaks[0]))
pairs.append((genes[1], peaks[11]))
with open(f"{OUT}/pairs.tsv", "w") as f:
    f.write("".join(f"{g}\t{p}\n" for g, p in pairs))

subprocess.run(
    [sys.executable, "scripts/sce2g_step.py", f"{OUT}/rna.mtx", f"{OUT}/rna_genes.txt",
     f"{OUT}/atac.mtx", f"{OUT}/atac_peaks.txt", f"{OUT}/pairs.tsv",
     "tests/data/sce2g_tau_reference.txt"],
    check=True,
)
