-- One network per clinical group of the demo's 57 bladder samples, in one
-- query: data/demo_samples.csv lists each sample's group (its first two
-- columns: sample, outcome). The input is read once; each group's pairs are
-- computed over that group's samples only, with its own n, p- and q-values
-- (the false-discovery family is the group's pairs).
-- Run: cargo run -- -f sql/groups.sql
SET kendall.groups = 'data/demo_samples.csv';

-- Strong pairs per group (|tau| >= 0.8), and the group sizes.
SELECT "group", count(*) AS edges, max(n) AS samples
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE abs(tau) >= 0.8
GROUP BY "group"
ORDER BY "group";

-- A filter on "group" is pushed into the scan: only the sTCC-CIS samples'
-- pairs are computed, and their q-values are over those pairs alone.
SELECT gene_i, gene_j, tau, n, q_value
FROM kendall_all_pairs('data/demo_expression.parquet')
WHERE "group" = 'sTCC-CIS' AND q_value < 0.05
ORDER BY abs(tau) DESC, gene_i, gene_j
LIMIT 5;

-- Each gene's strongest partner within each group.
SELECT "group", gene, partner, tau
FROM kendall_top_partners('data/demo_expression.parquet', 1)
WHERE gene = '201012_at'
ORDER BY "group";

SET kendall.groups = '';
