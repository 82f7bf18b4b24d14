# datafusion.kendall in five minutes. Run from the top of the repository:
#   R CMD INSTALL r && Rscript r/inst/examples/quickstart.R
library(datafusion.kendall)

# SQL over a file, as in the command-line shell: the strongest pairs of the
# 2,000 demo probe sets (genes in rows, 57 samples in columns).
strong <- kendall_sql("
  SELECT gene_i, gene_j, tau, p_value
  FROM kendall_all_pairs('data/demo_expression.parquet')
  WHERE abs(tau) >= 0.8 ORDER BY tau DESC")
print(head(strong))

# The same matrix as R holds it for cor(): samples in rows, genes in columns.
expr <- kendall_sql("SELECT * FROM 'data/demo_expression.parquet'")
x <- t(as.matrix(expr[, -1]))
colnames(x) <- expr$gene_id

# cor(x, method = "kendall"), the same matrix, a few hundred times faster.
tau <- kendall_cor(x[, 1:500])
stopifnot(isTRUE(all.equal(tau[1:50, 1:50], cor(x[, 1:50], method = "kendall"))))

# One row per pair with p-values and false-discovery-rate q-values.
pairs <- kendall_pairs(x, threshold = 0.6, p_values = TRUE, q_values = TRUE)
cat(nrow(pairs), "pairs with |tau| >= 0.6\n")

# Each gene's strongest partners, and pairs across two matrices.
top <- kendall_top_partners(x, k = 3)
cross <- kendall_cross_pairs(x[, 1:100], x[, 101:200], threshold = 0.7)

# A data frame is a table too: register it by name.
annotation <- data.frame(probe = colnames(x), suffix = sub("^[0-9]+", "", colnames(x)))
kendall_sql("SELECT suffix, count(*) AS probes FROM annotation GROUP BY suffix ORDER BY probes DESC",
            annotation = annotation)

# A co-expression network for igraph (and a GraphML file for Cytoscape).
if (requireNamespace("igraph", quietly = TRUE)) {
  g <- kendall_network(x, threshold = 0.7, nodes = annotation, file = "network.graphml")
  print(g)
}

# WGCNA with Kendall's tau.
if (requireNamespace("WGCNA", quietly = TRUE)) {
  adjacency <- WGCNA::adjacency(x[, 1:200], corFnc = "kendall_cor", power = 6)
}
