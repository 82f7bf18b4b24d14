# WGCNA calls corFnc(x = , y = , use = "p") (pickSoftThreshold, in blocks)
# and corFnc = "kendall_cor" by name (adjacency).
base_kendall <- function(x, y = NULL, use = "everything", ...) {
  stats::cor(x, y, method = "kendall", use = use)
}

test_that("WGCNA::pickSoftThreshold(corFnc = kendall_cor) gives what cor(method = 'kendall') gives", {
  skip_if_not_installed("WGCNA")
  suppressMessages(library(WGCNA))
  x <- random_matrix(30, 50, na = 0.03, seed = 31)
  x[, 2] <- rnorm(30)
  quietly <- function(e) {
    utils::capture.output(value <- suppressWarnings(e))
    value
  }
  ours <- quietly(pickSoftThreshold(x, corFnc = kendall_cor, powerVector = 1:6,
                                    blockSize = 20, verbose = 0))
  base <- quietly(pickSoftThreshold(x, corFnc = base_kendall, powerVector = 1:6,
                                    blockSize = 20, verbose = 0))
  expect_equal(ours, base, tolerance = 1e-10)
  expect_gt(nrow(ours$fitIndices), 0)
})

test_that("WGCNA::adjacency(corFnc = 'kendall_cor') gives what cor(method = 'kendall') gives", {
  skip_if_not_installed("WGCNA")
  suppressMessages(library(WGCNA))
  x <- random_matrix(30, 40, na = 0.03, seed = 32)
  x[, 2] <- rnorm(30)
  assign("base_kendall", base_kendall, envir = globalenv())
  on.exit(rm("base_kendall", envir = globalenv()))
  for (type in c("unsigned", "signed")) {
    ours <- adjacency(x, corFnc = "kendall_cor", power = 6, type = type)
    base <- adjacency(x, corFnc = "base_kendall", power = 6, type = type)
    expect_equal(ours, base, tolerance = 1e-10)
    sel <- adjacency(x, selectCols = 1:5, corFnc = "kendall_cor", power = 2, type = type)
    expect_equal(sel, adjacency(x, selectCols = 1:5, corFnc = "base_kendall", power = 2, type = type),
                 tolerance = 1e-10)
    expect_equal(dim(sel), c(40, 5))
  }
})
