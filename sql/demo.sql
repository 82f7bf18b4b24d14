-- A first look at the demo matrix: 2,000 probe sets x 57 bladder samples.
-- Run: cargo run -- -f sql/demo.sql
SELECT * FROM kendall_all_pairs('data/demo_expression.parquet') LIMIT 5;

-- How many of the 1,999,000 pairs are strongly co-expressed?
SELECT count(*) AS strong_pairs
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE abs(tau) >= 0.8;

-- The ten strongest.
SELECT gene_i, gene_j, tau
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE abs(tau) >= 0.8
ORDER BY abs(tau) DESC, gene_i, gene_j
LIMIT 10;
