-- Only LISTED pairs: a candidate list (enhancer-gene candidates near each gene,
-- a curated interaction list) as any source whose first two columns are the
-- ids of gene_i and gene_j. Here: each _s_at probe with the _x_at probes that
-- share its first three characters, within the demo data.
-- Run: cargo run --all-features -- -f sql/candidates.sql
CREATE VIEW s_at AS SELECT * FROM 'data/demo_expression.parquet' WHERE right(gene_id, 5) = '_s_at';
CREATE VIEW x_at AS SELECT * FROM 'data/demo_expression.parquet' WHERE right(gene_id, 5) = '_x_at';
CREATE VIEW candidates AS
SELECT s.gene_id AS probe, x.gene_id AS partner
FROM s_at s JOIN x_at x ON left(s.gene_id, 3) = left(x.gene_id, 3);

-- Two matrices: gene_i from the first, gene_j from the second; q-values over the listed pairs.
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE q_value < 0.01) AS at_1pct_fdr
FROM kendall_candidate_pairs('candidates', 's_at', 'x_at');

SELECT gene_i, gene_j, tau, p_value
FROM kendall_candidate_pairs('candidates', 's_at', 'x_at')
ORDER BY abs(tau) DESC, gene_i, gene_j
LIMIT 3;

-- One matrix: the same list within the whole demo data gives the same pairs.
SELECT count(*) AS pairs
FROM kendall_candidate_pairs('candidates', 'data/demo_expression.parquet');
