-- Inputs from wherever the data lives: CSV and TSV files (plain or
-- compressed), registered tables and views, and an annotation join.
-- Run: cargo run -- -f sql/inputs.sql

-- The demo matrix as a gzip-compressed TSV, the way GEO and featureCounts
-- files come (written here by DataFusion itself).
COPY (SELECT * FROM 'data/demo_expression.parquet') TO 'demo_expression.tsv.gz'
STORED AS CSV OPTIONS ('format.delimiter' E'\t', 'format.compression' 'gzip');

-- The format comes from the name (.tsv.gz: tab-separated, gzip): the same
-- 17 strongest pairs as from the Parquet file.
SELECT count(*) AS strong_pairs
FROM kendall_all_pairs('demo_expression.tsv.gz')
WHERE abs(tau) >= 0.8;

-- A registered table, and a view that leaves out the cross-hybridising
-- probe sets (names ending in _x_at): the view is the input, by name.
CREATE EXTERNAL TABLE expr STORED AS PARQUET LOCATION 'data/demo_expression.parquet';
CREATE VIEW specific AS SELECT * FROM expr WHERE right(gene_id, 5) <> '_x_at';
SELECT count(*) AS pairs, count(*) FILTER (WHERE abs(tau) >= 0.8) AS strong_pairs
FROM kendall_all_pairs('specific');

-- Probe sets to gene symbols: join the pairs with an annotation table (here
-- the first 20 probe sets of the HG-U133A annotation; in practice a CSV
-- export of hgu133a.db or the GEO platform table).
CREATE TABLE annotation (probe VARCHAR, symbol VARCHAR) AS VALUES
  ('1007_s_at', 'DDR1'), ('1053_at', 'RFC2'), ('117_at', 'HSPA6'), ('121_at', 'PAX8'),
  ('1255_g_at', 'GUCA1A'), ('1294_at', 'UBA7'), ('1316_at', 'THRA'), ('1320_at', 'PTPN21'),
  ('1405_i_at', 'CCL5'), ('1431_at', 'CYP2E1'), ('1438_at', 'EPHB3'), ('1487_at', 'ESRRA'),
  ('1494_f_at', 'CYP2A6'), ('1598_g_at', 'GAS6'), ('160020_at', 'MMP14'), ('1729_at', 'TRADD'),
  ('1773_at', 'FNTB'), ('177_at', 'PLD1'), ('179_at', 'TESK2'), ('1861_at', 'BAD');
CREATE VIEW annotated AS
SELECT e.* FROM expr e JOIN annotation a ON e.gene_id = a.probe;
SELECT a.symbol AS symbol_i, b.symbol AS symbol_j, round(k.tau, 4) AS kendall_tau
FROM kendall_all_pairs('annotated') k
JOIN annotation a ON k.gene_i = a.probe
JOIN annotation b ON k.gene_j = b.probe
ORDER BY abs(k.tau) DESC, symbol_i, symbol_j
LIMIT 5;

-- Annotation columns beside the gene id (a symbol string, an Entrez Int64)
-- would be read as samples if numeric: leave them out with a view,
--   CREATE VIEW v AS SELECT * EXCLUDE (entrez) FROM 'expr_annotated.parquet';
-- or make an integer column the gene id by naming it:
--   SELECT * FROM kendall_all_pairs('v2', 'entrez');
