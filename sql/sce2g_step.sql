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

-- Every line of the pairs file, in order (kendall_candidate_taus gives
-- one row per line, ordered by line): its pair's tau (the shortest text
-- that reads back as the same float), NA for a line whose gene or peak the
-- matrices lack (NULL) or a NaN tau.
COPY (
  SELECT CASE WHEN tau IS NULL OR isnan(tau) THEN 'NA'
              ELSE CAST(tau AS VARCHAR) END AS tau
  FROM kendall_candidate_taus('pairs', 'rna', 'atac')
  ORDER BY line
) TO 'sce2g_tau.txt' STORED AS CSV OPTIONS ('format.has_header' 'false');
