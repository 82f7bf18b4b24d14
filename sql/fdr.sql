-- Co-expression edges at a 5 % false discovery rate: q_value is the
-- Benjamini-Hochberg adjusted p-value over ALL 1,999,000 pairs of the demo
-- matrix, whatever the WHERE clause keeps. The filter is exact and pushed
-- into the scan (one counting pass over all pairs, then the rows).
-- Run: cargo run --all-features -- -f sql/fdr.sql
SELECT count(*) AS edges, max(p_value) AS largest_p_kept
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE q_value < 0.05;

-- The strongest of them, with their p- and q-values.
SELECT gene_i, gene_j, tau, p_value, q_value
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE q_value < 0.05
ORDER BY q_value, gene_i, gene_j
LIMIT 5;

-- Benjamini-Yekutieli: FDR control under any dependence between the tests
-- (stricter: BH's q times 1 + 1/2 + ... + 1/M).
SET kendall.fdr = 'by';
SELECT count(*) AS edges_by
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE q_value < 0.05;
