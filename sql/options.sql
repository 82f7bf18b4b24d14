-- Session options: coefficient variant, kernel, instruction set, tile size.
-- Run: cargo run -- -f sql/options.sql
SET kendall.variant = 'a';       -- 'a' | 'b' (tau-b, the default) | 'c' (tau-c)
SET kendall.kernel = 'vse';      -- auto | naive | gse | vse | bitset
SET kendall.simd = 'auto';       -- auto | avx512 | avx2 | scalar
SET kendall.tile_size = 128;     -- genes per tile edge

SELECT * FROM kendall_all_pairs('data/demo_expression.parquet', 'gene_id')
ORDER BY tau DESC, gene_i, gene_j
LIMIT 5;

-- Significance: p-values (scipy's rule), filtered inside the scan.
SET kendall.variant = 'b';
SET kendall.pvalue = 'auto';     -- auto | asymptotic | exact
SELECT gene_i, gene_j, tau, p_value
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE p_value < 1e-12
ORDER BY p_value, gene_i, gene_j
LIMIT 5;

-- See the plan: partitions, tile size, kernel, variant, pushed-down filter.
-- kendall.partitions cuts the pairs into that many balanced ranges (0: the
-- session's target partitions; on a Ballista cluster four times that).
SET kendall.partitions = 4;
EXPLAIN SELECT count(*) FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE tau BETWEEN 0.5 AND 0.9;

-- Metrics: pairs computed, rows emitted, time in the kernel.
EXPLAIN ANALYZE SELECT count(*) FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE abs(tau) >= 0.8;
