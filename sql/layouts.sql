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
