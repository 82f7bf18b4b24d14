-- scE2G's Kendall step from the files its R side writes, in place of its
-- Python step (fast_kendall_sc's batch_kendall_tau): the RNA matrix (genes x
-- cells) and the binarised ATAC matrix (peaks x cells) as MatrixMarket, a
-- text file of gene names and one of peak names, and the candidate pairs as
-- a headerless TSV (gene, peak). It writes sce2g_tau.txt: one tau per line
-- in the pairs file's order, NA where tau is undefined or the pair names a
-- gene or peak the matrices lack. The cells have no names: both matrices
-- list them in the same order, so they are paired by position.
-- Here on small files (40 genes, 200 peaks, 300 cells, 325 pairs; made by
-- scripts/make_sce2g_demo.py, which also runs the Python step for the tests
-- to compare with). Run: cargo run --all-features -- -f sql/sce2g_step.sql
CREATE EXTERNAL TABLE rna STORED AS MTX LOCATION 'data/sce2g/rna.mtx'
OPTIONS ('rows' 'data/sce2g/rna_genes.txt');
CREATE EXTERNAL TABLE atac STORED AS MTX LOCATION 'data/sce2g/atac.mtx'
OPTIONS ('rows' 'data/sce2g/atac_peaks.txt');
CREATE EXTERNAL TABLE pairs (gene VARCHAR, peak VARCHAR) STORED AS CSV
LOCATION 'data/sce2g/pairs.tsv'
OPTIONS ('format.delimiter' E'\t', 'format.has_header' 'false');

-- The pairs file in one partition, so that row_number() numbers its lines
-- in file order.
SET datafusion.optimizer.repartition_file_scans = false;
CREATE VIEW numbered AS SELECT row_number() OVER () AS line, gene, peak FROM pairs;

-- Every line, in order: its pair's tau (the shortest text that reads back
-- as the same float), NA for a pair left out or a NaN tau.
COPY (
  SELECT CASE WHEN k.tau IS NULL OR isnan(k.tau) THEN 'NA'
              ELSE CAST(k.tau AS VARCHAR) END AS tau
  FROM numbered n
  LEFT JOIN kendall_candidate_pairs('pairs', 'rna', 'atac') k
    ON k.gene_i = n.gene AND k.gene_j = n.peak
  ORDER BY n.line
) TO 'sce2g_tau.txt' STORED AS CSV OPTIONS ('format.has_header' 'false');
