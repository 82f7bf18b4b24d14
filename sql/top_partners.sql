-- The 20 strongest partners of one probe set (gene), by |tau|.
-- The gene filter is pushed into the scan: only the 1,999 pairs that touch
-- 201012_at are computed (EXPLAIN shows gene_filter=... pairs=touching).
-- Run: cargo run -- -f sql/top_partners.sql
SELECT CASE WHEN gene_i = '201012_at' THEN gene_j ELSE gene_i END AS partner,
       tau
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE gene_i = '201012_at' OR gene_j = '201012_at'
ORDER BY abs(tau) DESC, partner
LIMIT 20;

-- Every gene's 3 strongest partners at once (both directions: a pair can
-- appear under each of its genes), computed in one pass with bounded
-- per-gene state: ties in |tau| go to the partner first in the input.
SELECT gene, partner, tau, rank
FROM kendall_top_partners('data/demo_expression.parquet', 3)
WHERE gene IN ('200088_x_at', '201012_at')
ORDER BY gene, rank;
