#!/usr/bin/env Rscript
# R references for kendall.alternative, kendall.continuity and
# kendall.missing = 'complete'. Run by scripts/kendall_parity_reference.py,
# which writes the inputs as CSV (gene_id, then one column per sample; NA
# where missing) into IN_DIR:
#   Rscript scripts/kendall_parity_reference.R IN_DIR OUT_DIR
# Writes, for all pairs i < j (numbers with 17 significant digits, NA as nan):
#   OUT_DIR/parity_r_demo30.csv   demo30.csv (no ties, n = 30): tau, cor.test
#       exact p-values (p_exact_two, _less, _greater), asymptotic ones
#       (exact = FALSE: p_asym_*) and with continuity = TRUE (p_cont_*)
#   OUT_DIR/parity_r_ties.csv     ties.csv (ties, n = 57): tau, p_asym_*, p_cont_*
#   OUT_DIR/parity_r_listwise.csv listwise.csv: tau of cor(use = "complete.obs"),
#       n, and cor.test's default p-value (p_value, exact when n < 50 without
#       ties) and p_greater on the complete samples
args <- commandArgs(trailingOnly = TRUE)
in_dir <- args[1]
out_dir <- args[2]

read_matrix <- function(name) {
  d <- read.csv(file.path(in_dir, paste0(name, ".csv")), check.names = FALSE,
                stringsAsFactors = FALSE)
  x <- as.matrix(d[, -1])
  rownames(x) <- d[[1]]
  x
}

num <- function(v) ifelse(is.na(v), "nan", sprintf("%.17g", v))

p_of <- function(x, y, ...) {
  suppressWarnings(cor.test(x, y, method = "kendall", ...)$p.value)
}

write_pairs <- function(x, file, columns) {
  g <- rownames(x)
  rows <- list()
  for (i in seq_len(nrow(x) - 1)) {
    for (j in (i + 1):nrow(x)) {
      values <- columns(x[i, ], x[j, ])
      rows[[length(rows) + 1]] <- c(gene_i = g[i], gene_j = g[j],
                                    vapply(values, num, ""))
    }
  }
  out <- do.call(rbind, rows)
  write.csv(out, file.path(out_dir, file), row.names = FALSE, quote = FALSE)
  cat("wrote", file.path(out_dir, file), nrow(out), "rows\n")
}

alternatives <- c(two = "two.sided", less = "less", greater = "greater")

asymptotic <- function(x, y) {
  a <- sapply(alternatives, function(alt) p_of(x, y, alternative = alt, exact = FALSE))
  cc <- sapply(alternatives, function(alt) {
    p_of(x, y, alternative = alt, exact = FALSE, continuity = TRUE)
  })
  names(a) <- paste0("p_asym_", names(alternatives))
  names(cc) <- paste0("p_cont_", names(alternatives))
  c(a, cc)
}

tau_of <- function(x, y) suppressWarnings(cor(x, y, method = "kendall"))

write_pairs(read_matrix("demo30"), "parity_r_demo30.csv", function(x, y) {
  e <- sapply(alternatives, function(alt) p_of(x, y, alternative = alt, exact = TRUE))
  names(e) <- paste0("p_exact_", names(alternatives))
  c(tau = tau_of(x, y), e, asymptotic(x, y))
})

write_pairs(read_matrix("ties"), "parity_r_ties.csv", function(x, y) {
  c(tau = tau_of(x, y), asymptotic(x, y))
})

# Listwise: R's cor(use = "complete.obs") drops every row with an NA in any
# column of the whole matrix; cor.test is then asked on those rows.
lw <- read_matrix("listwise")
taus <- cor(t(lw), method = "kendall", use = "complete.obs")
complete <- colSums(is.na(lw)) == 0
cw <- lw[, complete]
g <- rownames(lw)
rows <- list()
for (i in seq_len(nrow(cw) - 1)) {
  for (j in (i + 1):nrow(cw)) {
    rows[[length(rows) + 1]] <- c(
      gene_i = g[i], gene_j = g[j], n = as.character(sum(complete)),
      tau = num(taus[i, j]),
      p_value = num(p_of(cw[i, ], cw[j, ])),
      p_greater = num(p_of(cw[i, ], cw[j, ], alternative = "greater"))
    )
  }
}
out <- do.call(rbind, rows)
write.csv(out, file.path(out_dir, "parity_r_listwise.csv"), row.names = FALSE, quote = FALSE)
cat("wrote", file.path(out_dir, "parity_r_listwise.csv"), nrow(out), "rows\n")
