test_that("kendall_pairs gives every pair once with cor's tau, cor.test's p-value and BH q-values", {
  x <- random_matrix(40, 15, na = 0.05, seed = 11)
  x[, 2] <- rnorm(40) # no constant gene here: every pair has a p-value
  pairs <- kendall_pairs(x, p_values = TRUE, q_values = TRUE, progress = FALSE)
  expect_s3_class(pairs, "data.frame")
  expect_named(pairs, c("gene_i", "gene_j", "tau", "p_value", "n", "q_value"))
  expect_equal(nrow(pairs), 15 * 14 / 2)
  expect_s3_class(pairs$gene_i, "factor")
  expect_identical(levels(pairs$gene_i), colnames(x))
  i <- match(as.character(pairs$gene_i), colnames(x))
  j <- match(as.character(pairs$gene_j), colnames(x))
  expect_true(all(i < j))
  r <- cor(x, method = "kendall", use = "pairwise.complete.obs")
  expect_equal(pairs$tau, r[cbind(i, j)], tolerance = 1e-12)
  ok <- complete.cases
  expect_equal(pairs$n, mapply(function(a, b) sum(ok(x[, a], x[, b])), i, j))
  # Ties everywhere and n > 33: the tie-corrected normal approximation,
  # as cor.test(exact = FALSE) computes it.
  p <- mapply(function(a, b) {
    suppressWarnings(cor.test(x[, a], x[, b], method = "kendall", exact = FALSE)$p.value)
  }, i, j)
  expect_equal(pairs$p_value, p, tolerance = 1e-10)
  expect_equal(pairs$q_value, p.adjust(p, "BH"), tolerance = 1e-10)
})

test_that("threshold keeps |tau| >= threshold inside the engine; options apply", {
  x <- random_matrix(30, 25, na = 0, seed = 12)
  all <- kendall_pairs(x, progress = FALSE)
  strong <- kendall_pairs(x, threshold = 0.2, progress = FALSE)
  expect_equal(nrow(strong), sum(abs(all$tau) >= 0.2, na.rm = TRUE))
  expect_true(all(abs(strong$tau) >= 0.2))
  tau_a <- kendall_pairs(x, variant = "a", progress = FALSE)
  expect_true(all(abs(tau_a$tau) <= abs(all$tau) + 1e-15, na.rm = TRUE))
  same <- kendall_pairs(x, options = list(kernel = "naive", partitions = 1), progress = FALSE)
  expect_identical(same$tau[order(same$gene_i, same$gene_j)], all$tau[order(all$gene_i, all$gene_j)])
  expect_error(kendall_pairs(x, options = list(kernel = "fastest")), "kendall.kernel")
  expect_error(kendall_pairs(x, threshold = "high"), "one number")
  expect_error(kendall_pairs(x, p_values = NA), "TRUE or FALSE")
})

test_that("kendall_top_partners gives each gene its k strongest partners by |tau|", {
  x <- random_matrix(30, 20, na = 0, seed = 13)
  x[, 2] <- rnorm(30)
  top <- kendall_top_partners(x, k = 3, progress = FALSE)
  expect_named(top, c("gene", "partner", "tau", "rank"))
  expect_equal(nrow(top), 20 * 3)
  r <- cor(x, method = "kendall")
  for (g in colnames(x)) {
    mine <- top[top$gene == g, ]
    others <- r[g, setdiff(colnames(x), g)]
    expect_equal(mine$tau, unname(others[order(-abs(others))][1:3]), tolerance = 1e-12)
    expect_equal(mine$rank, 1:3)
  }
  expect_error(kendall_top_partners(x, k = 0), "whole number")
})

test_that("kendall_cross_pairs pairs the genes of two matrices, samples by row, as cor(x, y)", {
  x <- random_matrix(25, 6, na = 0.05, seed = 14)
  y <- random_matrix(25, 4, na = 0.05, seed = 15, prefix = "h")
  cross <- kendall_cross_pairs(x, y, p_values = TRUE, progress = FALSE)
  expect_equal(nrow(cross), 6 * 4)
  r <- suppressWarnings(cor(x, y, method = "kendall", use = "pairwise.complete.obs"))
  got <- r[cbind(as.character(cross$gene_i), as.character(cross$gene_j))]
  expect_equal(cross$tau, got, tolerance = 1e-12)
  expect_error(kendall_cross_pairs(x, y[1:10, ]), "same number of rows")
})
