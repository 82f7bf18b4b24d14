-- AnnData (.h5ad) and 10x Genomics (.h5) files, read directly (the `hdf5`
-- feature, on by default: a pure-Rust reader, no system library needed). The fixtures of tests/data/h5/ (scripts/make_h5_fixtures.py)
-- hold 12 genes x 40 cells of counts, one gene zero in every cell. A file is
-- read as (gene, cell, value) triples with absent entries 0: no layout to set.
-- Run: cargo run -- -f sql/hdf5.sql
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE isnan(tau)) AS with_an_all_zero_gene
FROM kendall_all_pairs('tests/data/h5/csr.h5ad');

-- The same counts as Cell Ranger's filtered_feature_bc_matrix.h5: each gene's
-- strongest partner, and whether the TSV of the same matrix agrees.
SELECT count(*) AS edges,
       count(*) FILTER (WHERE h.tau = t.tau) AS same_tau
FROM kendall_top_partners('tests/data/h5/tenx_v3.h5', 1) h
JOIN kendall_top_partners('tests/data/h5/dense.tsv', 1) t
  ON h.gene = t.gene AND h.partner = t.partner;
