test_that("kendall_cor(x) equals cor(x, method = 'kendall') for every use, with ties and NA", {
  x <- random_matrix(40, 30, na = 0.05)
  for (use in uses) expect_same_as_cor(function(f) f(x, use = use), warnings = use != "everything")
  # Without missing values every use gives the same matrix.
  full <- random_matrix(35, 20, na = 0, seed = 3)
  for (use in uses) expect_same_as_cor(function(f) f(full, use = use))
  # The tau values are tau-b, checked here off the diagonal too.
  r <- suppressWarnings(kendall_cor(full))
  expect_gt(sum(!is.na(r)), 300)
})

test_that("kendall_cor(x, y) equals cor(x, y, method = 'kendall') for every use", {
  x <- random_matrix(30, 12, na = 0.08, seed = 4)
  y <- random_matrix(30, 9, na = 0.08, seed = 5, prefix = "h")
  for (use in uses) expect_same_as_cor(function(f) f(x, y, use = use), warnings = use != "everything")
  # Partial matching of `use`, as WGCNA passes it ("p").
  expect_same_as_cor(function(f) f(x, y, use = "p"))
  expect_same_as_cor(function(f) f(x, use = "pairwise"))
})

test_that("data frames, vectors, logical and integer input, as cor takes them", {
  x <- random_matrix(20, 6, na = 0, seed = 6)
  expect_same_as_cor(function(f) f(as.data.frame(x)))
  expect_same_as_cor(function(f) f(x[, 1], x[, 3]))
  expect_same_as_cor(function(f) f(x[, 1], x))
  expect_same_as_cor(function(f) f(x, x[, 4]))
  expect_same_as_cor(function(f) f(unname(x)))
  expect_same_as_cor(function(f) f(x > 3))
  storage.mode(x) <- "integer"
  expect_same_as_cor(function(f) f(x))
})

test_that("infinite values are ranked, as cor ranks them", {
  x <- random_matrix(25, 6, na = 0.05, seed = 10)
  x[3, 1] <- Inf
  x[5, 1] <- -Inf
  x[7, 3] <- Inf
  for (use in uses) expect_same_as_cor(function(f) f(x, use = use), warnings = use != "everything")
  expect_same_as_cor(function(f) f(x[, 1:3], x[, 4:6], use = "pairwise"))
})

test_that("edge cases: no rows, one row, all-NA and constant genes, no complete case", {
  x <- random_matrix(10, 5, na = 0, seed = 7)
  x[, 4] <- NA
  for (use in uses) {
    w <- use != "everything"
    expect_same_as_cor(function(f) f(x, use = use), warnings = w)
    expect_same_as_cor(function(f) f(x[0, ], use = use), warnings = w)
    expect_same_as_cor(function(f) f(x[1, , drop = FALSE], use = use), warnings = w)
    expect_same_as_cor(function(f) f(x[1:2, ], use = use), warnings = w)
    expect_same_as_cor(function(f) f(x[, -4], x[, 4:5], use = use), warnings = w)
  }
})

test_that("bad input gives cor's errors", {
  x <- random_matrix(10, 4, na = 0)
  expect_same_as_cor(function(f) f(x, use = "nonsense"))
  expect_same_as_cor(function(f) f(x[, 1]))
  expect_same_as_cor(function(f) f(x, x[1:5, ]))
  expect_same_as_cor(function(f) f(matrix(letters[1:6], 3)))
  expect_same_as_cor(function(f) f(x, letters[1:10]))
  expect_error(kendall_cor(x, method = "pearson"), "computes method")
  expect_error(kendall_cor(x, variant = "d"), "variant")
})

test_that("variants a and c are tau-a and tau-c", {
  set.seed(8)
  x <- matrix(sample(1:4, 60, TRUE), 20, 3)
  s <- function(u, v) {
    n <- length(u)
    sum(sapply(1:(n - 1), function(i) sum(sign(u[i] - u[(i + 1):n]) * sign(v[i] - v[(i + 1):n]))))
  }
  n <- nrow(x)
  a <- kendall_cor(x, variant = "a")
  expect_equal(a[1, 2], s(x[, 1], x[, 2]) / (n * (n - 1) / 2), tolerance = 1e-12)
  k <- min(length(unique(x[, 1])), length(unique(x[, 3])))
  c3 <- kendall_cor(x, variant = "c")
  expect_equal(c3[1, 3], 2 * s(x[, 1], x[, 3]) / (n^2 * (k - 1) / k), tolerance = 1e-12)
})

test_that("the whole demo matrix (2,000 probe sets) agrees with cor on a sample of pairs", {
  path <- repo_file("data", "demo_expression.parquet")
  expr <- kendall_sql(sprintf(
    "CREATE EXTERNAL TABLE e STORED AS PARQUET LOCATION '%s'; SELECT * FROM e LIMIT 300", path
  ), progress = FALSE)
  x <- t(as.matrix(expr[, -1]))
  colnames(x) <- expr[[1]]
  ours <- kendall_cor(x)
  set.seed(9)
  cols <- sample(ncol(x), 40)
  expect_equal(ours[cols, cols], cor(x[, cols], method = "kendall"), tolerance = 1e-12)
})
