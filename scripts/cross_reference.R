# R's Kendall tau-b for every (left gene, right gene) pair of the
# kendall_cross_pairs test matrices, samples matched by column name.
# Usage (from the repository root; Debian: apt-get install r-base-core):
#   Rscript scripts/cross_reference.R
left <- read.csv("tests/data/cross_left.csv", row.names = 1, check.names = FALSE)
right <- read.csv("tests/data/cross_right.csv", row.names = 1, check.names = FALSE)
shared <- intersect(colnames(left), colnames(right))
x <- t(as.matrix(left[, shared]))
y <- t(as.matrix(right[, shared]))
# Columns are genes, rows the shared samples; pairwise deletion of the
# missing value, as kendall_cross_pairs does.
tau <- cor(x, y, method = "kendall", use = "pairwise.complete.obs")
out <- file("tests/data/cross_reference.csv", "w")
writeLines("gene_i,gene_j,tau", out)
for (i in rownames(tau)) for (j in colnames(tau)) {
  writeLines(sprintf("%s,%s,%.17g", i, j, tau[i, j]), out)
}
close(out)
cat(sprintf("%d x %d pairs on %d shared samples\n", nrow(tau), ncol(tau), length(shared)))
