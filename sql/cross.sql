-- Every pair BETWEEN two matrices: here two probe families of the demo data,
-- as two views (any two sources work: files, tables, a 10x directory...).
-- Samples are matched by name; only the 173,544 (_s_at, _x_at) pairs are computed.
-- Run: cargo run --all-features -- -f sql/cross.sql
CREATE VIEW s_at AS SELECT * FROM 'data/demo_expression.parquet' WHERE right(gene_id, 5) = '_s_at';
CREATE VIEW x_at AS SELECT * FROM 'data/demo_expression.parquet' WHERE right(gene_id, 5) = '_x_at';

SELECT count(*) AS pairs,
       count(*) FILTER (WHERE q_value < 0.01) AS at_1pct_fdr
FROM kendall_cross_pairs('s_at', 'x_at');

-- The strongest cross pairs.
SELECT gene_i, gene_j, tau, p_value
FROM kendall_cross_pairs('s_at', 'x_at')
ORDER BY abs(tau) DESC, gene_i, gene_j
LIMIT 5;

-- The cross partners of one gene: a filter on the gene columns computes only
-- the pairs it can keep (pairs=touching in EXPLAIN): 1007_s_at's 168, not 173,544.
SELECT gene_j, tau, p_value
FROM kendall_cross_pairs('s_at', 'x_at')
WHERE gene_i = '1007_s_at'
ORDER BY abs(tau) DESC, gene_j
LIMIT 5;
