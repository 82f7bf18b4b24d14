-- Export a thresholded co-expression network of the demo matrix.
-- Run: cargo run -- -f sql/network_export.sql
-- Writes network.parquet and network.csv in the current directory.
COPY (
  SELECT gene_i, gene_j, tau
  FROM kendall_all_pairs('data/demo_expression.parquet')
  WHERE abs(tau) >= 0.8
) TO 'network.parquet';

COPY (
  SELECT gene_i, gene_j, tau
  FROM kendall_all_pairs('data/demo_expression.parquet')
  WHERE abs(tau) >= 0.8
) TO 'network.csv';

SELECT count(*) AS edges, min(tau) AS min_tau, max(tau) AS max_tau
FROM 'network.parquet';
