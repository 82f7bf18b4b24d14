-- Missing values: 500 demo probe sets with 5 % of their values removed (null).
-- Run: cargo run -- -f sql/missing.sql
-- Each pair uses the samples where both genes have a value (pandas' corr,
-- R's pairwise.complete.obs); `n` is how many that is.
SET kendall.missing = 'pairwise';   -- the default; 'error' refuses null and NaN
SELECT gene_i, gene_j, tau, n
FROM kendall_all_pairs('data/demo_missing.parquet')
ORDER BY tau DESC, gene_i, gene_j
LIMIT 5;

-- Require 55 shared samples: pairs with fewer get NULL tau and p_value.
SET kendall.min_periods = 55;
SELECT count(*) AS pairs, count(tau) AS with_tau, min(n) AS fewest_shared
FROM kendall_all_pairs('data/demo_missing.parquet');

-- Filters on tau never keep a NULL tau; test for it explicitly.
SELECT count(*) AS too_few_samples
FROM kendall_all_pairs('data/demo_missing.parquet')
WHERE tau IS NULL;

SELECT gene_i, gene_j, tau, p_value, n
FROM kendall_all_pairs('data/demo_missing.parquet')
WHERE abs(tau) >= 0.7
ORDER BY abs(tau) DESC, gene_i, gene_j
LIMIT 5;
