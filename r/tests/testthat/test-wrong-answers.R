# Inputs that once gave a wrong answer without an error: bit64's integer64
# columns (read as their raw bits), columns of other classes, and listwise
# deletion that leaves no sample.

# bit64's integer64 without needing bit64: doubles whose 8 bytes hold the
# 64-bit integers (NA is the smallest one).
as_integer64 <- function(v) {
  bytes <- unlist(lapply(v, function(x) {
    if (is.na(x)) return(as.raw(c(rep(0L, 7L), 0x80L)))
    # Two's complement: a negative x is the complement of -x - 1.
    y <- if (x < 0) -x - 1 else x
    b <- vapply(0:7, function(k) (y %/% 256^k) %% 256, numeric(1))
    as.raw(if (x < 0) 255 - b else b)
  }))
  structure(readBin(bytes, "double", n = length(v), size = 8L, endian = "little"),
            class = "integer64")
}

test_that("integer64 columns are their integers, not their bits (case: bit64)", {
  df <- data.frame(gene = c("a", "b", "c", "d"))
  df$x <- as_integer64(c(1, 2, -3, NA))
  back <- kendall_sql("SELECT * FROM t", t = df, progress = FALSE)
  expect_identical(back$x, c(1, 2, -3, NA))
  big <- data.frame(gene = "a")
  big$x <- as_integer64(2^53 + 2)
  expect_identical(kendall_sql("SELECT CAST(x AS VARCHAR) AS x FROM t", t = big,
                               progress = FALSE)$x, "9007199254740994")
  # As a table function's input: the taus of the same numbers as doubles.
  x <- round(random_matrix(10, 5, na = 0, seed = 4) * 100)
  expr <- data.frame(gene = colnames(x))
  for (s in seq_len(nrow(x))) expr[[paste0("s", s)]] <- as_integer64(x[s, ])
  pairs <- kendall_sql("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('expr')",
                       expr = expr, progress = FALSE)
  r <- suppressWarnings(stats::cor(x, method = "kendall"))
  expect_equal(pairs$tau, r[cbind(pairs$gene_i, pairs$gene_j)], tolerance = 1e-12)
  if (requireNamespace("bit64", quietly = TRUE)) {
    df$x <- bit64::as.integer64(c(1, 2, -3, NA))
    expect_identical(kendall_sql("SELECT * FROM t", t = df, progress = FALSE)$x, c(1, 2, -3, NA))
  }
})

test_that("a column of a class the bridge does not convert is refused by name", {
  df <- data.frame(gene = c("a", "b"))
  df$u <- structure(c(1, 2), class = "units")
  expect_error(kendall_sql("SELECT * FROM t", t = df), "column 'u' is of class units")
  df$u <- structure(c(1, 2), class = c("hms", "difftime"))
  expect_error(kendall_sql("SELECT * FROM t", t = df), "column 'u' is of class hms")
  # I() and ordered factors are read as their values.
  ok <- data.frame(gene = c("a", "b"), v = I(c(1.5, 2)), f = factor(c("x", "y"), ordered = TRUE))
  back <- kendall_sql("SELECT * FROM t", t = ok, progress = FALSE)
  expect_identical(back$v, c(1.5, 2))
  expect_identical(back$f, c("x", "y"))
})

test_that("listwise deletion that leaves no sample is an error (case: complete)", {
  expr <- data.frame(gene = c("a", "b", "c"), s1 = c(1, 2, NA), s2 = c(2, 1, NA), s3 = c(3, 3, NA))
  expect_error(
    kendall_sql("SELECT * FROM kendall_all_pairs('expr')", expr = expr,
                options = list(missing = "complete"), progress = FALSE),
    "no complete element pairs.*gene 'c' is missing in all 3 samples"
  )
  x <- cbind(a = c(1, 2, 3), b = c(3, 1, 2), c = NA)
  expect_error(kendall_cor(x, use = "complete.obs"), "no complete element pairs")
})

test_that("integer64 matrices and data frames are their integers in kendall_cor and kendall_pairs", {
  skip_if_not_installed("bit64")
  x <- round(random_matrix(12, 4, na = 0, seed = 8) * 10) - 20
  df <- as.data.frame(x)
  df[] <- lapply(df, bit64::as.integer64)
  expect_equal(suppressWarnings(kendall_cor(df)), suppressWarnings(stats::cor(x, method = "kendall")),
               tolerance = 1e-12)
  expect_equal(kendall_cor(df[[1]], df[[3]]), stats::cor(x[, 1], x[, 3], method = "kendall"), tolerance = 1e-12)
  pairs <- kendall_pairs(df, progress = FALSE)
  r <- suppressWarnings(stats::cor(x, method = "kendall"))
  expect_equal(pairs$tau, r[cbind(as.character(pairs$gene_i), as.character(pairs$gene_j))],
               tolerance = 1e-12)
})
