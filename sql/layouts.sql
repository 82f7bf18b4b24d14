-- The same 200 demo genes in three layouts give the same pairs.
-- Run: cargo run -- -f sql/layouts.sql
-- (data/demo_genes_as_columns.parquet and data/demo_long.parquet come from
--  scripts/make_layout_demos.py)

-- One row per gene (the default layout): the first 200 genes only.
SELECT count(*) AS pairs, min(tau) AS min_tau, max(tau) AS max_tau, round(sum(tau), 6) AS tau_sum
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE gene_i IN (SELECT gene FROM 'data/demo_long.parquet' GROUP BY gene)
  AND gene_j IN (SELECT gene FROM 'data/demo_long.parquet' GROUP BY gene);

-- One row per sample, one column per gene (AnnData / machine learning).
SET kendall.layout = 'genes_as_columns';
SELECT count(*) AS pairs, min(tau) AS min_tau, max(tau) AS max_tau, round(sum(tau), 6) AS tau_sum
FROM kendall_all_pairs('data/demo_genes_as_columns.parquet');

-- One row per value (tidy): gene, sample and value columns, named here
-- explicitly (these are also the defaults).
SET kendall.layout = 'long';
SELECT count(*) AS pairs, min(tau) AS min_tau, max(tau) AS max_tau, round(sum(tau), 6) AS tau_sum
FROM kendall_all_pairs('data/demo_long.parquet', 'gene', 'sample', 'value');

-- Sparse triples, as single-cell exports list counts: only non-zero values
-- have a row. With kendall.absent = 'zero' an absent row is 0, so the
-- sparse file gives the pairs of the dense one (here: values below 4.5 set
-- to 0, then only the rest written; a gene or sample without any row would be
-- unknown to the sparse file).
COPY (SELECT gene, sample, CASE WHEN value < 4.5 THEN 0 ELSE value END AS value
      FROM 'data/demo_long.parquet') TO 'demo_dense_counts.parquet';
COPY (SELECT * FROM 'demo_dense_counts.parquet' WHERE value <> 0) TO 'demo_sparse.parquet';
SELECT count(*) AS pairs, round(sum(tau), 6) AS tau_sum
FROM kendall_all_pairs('demo_dense_counts.parquet');
SET kendall.absent = 'zero';
SELECT count(*) AS pairs, round(sum(tau), 6) AS tau_sum
FROM kendall_all_pairs('demo_sparse.parquet');
