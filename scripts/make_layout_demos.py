#!/usr/bin/env python3
"""Writes the demo matrix's first 200 genes in the two other layouts.

Usage (from the repo root): python3 scripts/make_layout_demos.py

- data/demo_genes_as_columns.parquet: one row per sample (`sample_id`,
  string) and one Float64 column per gene (the AnnData / ML layout);
- data/demo_long.parquet: one row per value, columns `gene`, `sample`,
  `value` (the tidy layout).
Both hold exactly the values of data/demo_expression.parquet, so
kendall_all_pairs gives identical pairs on all three. Needs: pip install pyarrow
"""
import pyarrow as pa
import pyarrow.parquet as pq

GENES = 200
wide = pq.read_table("data/demo_expression.parquet").slice(0, GENES)
genes = wide.column("gene_id").to_pylist()
samples = [c for c in wide.column_names if c != "gene_id"]

columns = {"sample_id": pa.array(samples, pa.string())}
rows = {s: wide.column(s).to_pylist() for s in samples}
for g, gene in enumerate(genes):
    columns[gene] = pa.array([rows[s][g] for s in samples], pa.float64())
pq.write_table(pa.table(columns), "data/demo_genes_as_columns.parquet", compression="zstd")

gene_col, sample_col, value_col = [], [], []
for g, gene in enumerate(genes):
    for s in samples:
        gene_col.append(gene)
        sample_col.append(s)
        value_col.append(rows[s][g])
long = pa.table({
    "gene": pa.array(gene_col, pa.string()),
    "sample": pa.array(sample_col, pa.string()),
    "value": pa.array(value_col, pa.float64()),
})
pq.write_table(long, "data/demo_long.parquet", compression="zstd")
print(f"wrote {GENES} genes x {len(samples)} samples in both layouts")
