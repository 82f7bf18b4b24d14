-- Co-expression networks as GraphML files, which Cytoscape, igraph, networkx
-- and Gephi open.
-- Run: cargo run --all-features -- -f sql/graphml.sql
-- Writes network.graphml, network_annotated.graphml and top_partners.graphml
-- in the current directory.

-- Edges with |tau| >= 0.8 and their tau, p_value and q_value; nodes (the
-- genes with an edge) with their degree. The format comes from the name.
COPY (
  SELECT gene_i, gene_j, tau, p_value, q_value
  FROM kendall_all_pairs('data/demo_expression.parquet')
  WHERE abs(tau) >= 0.8
) TO 'network.graphml';

-- Node attributes joined from a table or view (here made from the probe
-- ids; in practice an annotation file): its key column, then the attributes.
-- 'all_nodes' also writes the table's genes without an edge (degree 0).
CREATE VIEW probes AS
  SELECT gene_id AS probe,
         split_part(gene_id, '_', 1) AS probe_number,
         right(gene_id, 5) = '_x_at' AS cross_hybridising
  FROM 'data/demo_expression.parquet'
  WHERE gene_id LIKE '2000%';

COPY (
  SELECT gene_i, gene_j, tau
  FROM kendall_all_pairs('data/demo_expression.parquet')
  WHERE abs(tau) >= 0.8
) TO 'network_annotated.graphml' STORED AS GRAPHML
OPTIONS ('nodes' 'probes', 'node_key' 'probe', 'all_nodes' 'true');

-- Each gene's 3 strongest partners as a directed graph (gene -> partner).
COPY (
  SELECT gene, partner, tau, rank
  FROM kendall_top_partners('data/demo_expression.parquet', 3)
) TO 'top_partners.graphml' OPTIONS ('directed' 'true');
