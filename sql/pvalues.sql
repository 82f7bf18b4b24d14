-- p-values as scipy and R give them: one-sided alternatives, R's continuity
-- correction, exact p-values at any n, listwise and propagating missing values.
-- Run: cargo run -- -f sql/pvalues.sql

-- One-sided (scipy's alternative='greater', R's cor.test(alternative = "greater")):
-- is the association positive? q_value adjusts these one-sided p-values.
SET kendall.alternative = 'greater';
SELECT gene_i, gene_j, tau, p_value, q_value
FROM kendall_all_pairs('data/demo_missing.parquet')
WHERE q_value < 1e-9
ORDER BY p_value, gene_i, gene_j
LIMIT 5;

-- The same pairs' exact p-values (57 samples; NaN for pairs with ties or
-- fewer shared samples with ties), and R's continuity correction of the
-- normal approximation.
SET kendall.pvalue = 'exact';
SELECT gene_i, gene_j, tau, p_value AS p_exact, n
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE gene_i = '200088_x_at' AND gene_j = '200809_x_at';
SET kendall.pvalue = 'asymptotic';
SET kendall.continuity = true;
SELECT gene_i, gene_j, tau, p_value AS p_continuity
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE gene_i = '200088_x_at' AND gene_j = '200809_x_at';
SET kendall.continuity = false;
SET kendall.pvalue = 'auto';
SET kendall.alternative = 'two-sided';

-- Missing values, three ways, on 20 genes with gaps.
CREATE VIEW twenty AS SELECT * FROM 'data/demo_missing.parquet' LIMIT 20;
-- pairwise (the default; pandas, R's pairwise.complete.obs): n varies by pair
SET kendall.missing = 'pairwise';
SELECT min(n) AS fewest, max(n) AS most, count(tau) AS with_tau
FROM kendall_all_pairs('twenty');
-- complete (R's complete.obs): only the samples every gene has, for every pair
SET kendall.missing = 'complete';
SELECT min(n) AS fewest, max(n) AS most, count(tau) AS with_tau
FROM kendall_all_pairs('twenty');
-- propagate (scipy's default): NaN for every pair touching a gene with a gap
SET kendall.missing = 'propagate';
SELECT count(*) AS pairs, sum(CASE WHEN isnan(tau) THEN 1 ELSE 0 END) AS nan_tau
FROM kendall_all_pairs('twenty');
SET kendall.missing = 'pairwise';
