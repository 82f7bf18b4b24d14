-- A 10x Genomics matrix directory, as Cell Ranger writes it (matrix.mtx.gz,
-- features.tsv.gz, barcodes.tsv.gz): 40 genes x 300 cells of sparse counts,
-- 81 % zeros (made by scripts/make_tenx_demo.py). It is read as
-- (gene, cell, count) triples with absent entries 0: no layout to set.
-- Run: cargo run --all-features -- -f sql/single_cell.sql
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE tau > 0.3) AS strong,
       count(*) FILTER (WHERE isnan(tau)) AS with_an_all_zero_gene
FROM kendall_all_pairs('data/tenx_demo/');

-- Co-expressed genes at 1 % FDR, strongest first.
SELECT gene_i, gene_j, tau, q_value
FROM kendall_all_pairs('data/tenx_demo/')
WHERE q_value < 0.01
ORDER BY tau DESC, gene_i, gene_j
LIMIT 5;
