test_that("kendall_sql runs SQL over files", {
  path <- repo_file("data", "demo_expression.parquet")
  res <- kendall_sql(sprintf(
    "SELECT count(*) AS pairs FROM kendall_all_pairs('%s') WHERE abs(tau) >= 0.8", path
  ), progress = FALSE)
  expect_named(res, "pairs")
  expect_type(res$pairs, "double")
  expect_gt(res$pairs, 0)
  # Several statements: the last one's rows; SET and options.
  c1 <- kendall_sql(sprintf(
    "SET kendall.variant = 'c'; SELECT tau FROM kendall_all_pairs('%s') WHERE gene_i = '1007_s_at' AND gene_j = '1053_at'", path
  ), progress = FALSE)
  c2 <- kendall_sql(sprintf(
    "SELECT tau FROM kendall_all_pairs('%s') WHERE gene_i = '1007_s_at' AND gene_j = '1053_at'", path
  ), options = list(variant = "c"), progress = FALSE)
  expect_equal(c1, c2)
})

test_that("data frames are tables, column by column, with their types and NAs", {
  df <- data.frame(
    gene = c("a", "b", NA, "d"), x = c(1.5, NA, NaN, -2), k = c(1L, NA, 3L, 4L),
    flag = c(TRUE, NA, FALSE, TRUE), f = factor(c("u", "v", NA, "u"))
  )
  back <- kendall_sql("SELECT * FROM t", t = df, progress = FALSE)
  expect_identical(back$gene, df$gene)
  expect_identical(back$x[-3], df$x[-3])
  expect_true(is.nan(back$x[3]))
  expect_identical(back$k, df$k)
  expect_identical(back$flag, df$flag)
  expect_identical(back$f, as.character(df$f))
  counts <- kendall_sql("SELECT count(x) AS nx, count(k) AS nk FROM t", t = df, progress = FALSE)
  expect_equal(counts$nx, 3) # NaN is a value to SQL, NA is NULL
  expect_equal(counts$nk, 3)
})

test_that("a data frame of genes as rows is a source of the table functions", {
  x <- random_matrix(12, 8, na = 0.1, seed = 21)
  expr <- data.frame(gene = colnames(x), t(x))
  pairs <- kendall_sql("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('expr')", expr = expr, progress = FALSE)
  r <- suppressWarnings(cor(x, method = "kendall", use = "pairwise.complete.obs"))
  expect_equal(pairs$tau, r[cbind(pairs$gene_i, pairs$gene_j)], tolerance = 1e-12)
  top <- kendall_sql("SELECT * FROM kendall_top_partners('expr', 2)", expr = expr, progress = FALSE)
  expect_equal(nrow(top), 2 * 7) # the constant gene has no partner
})

test_that("errors are R errors with DataFusion's message", {
  expect_error(kendall_sql("SELECT * FROM nowhere", progress = FALSE), "nowhere")
  expect_error(kendall_sql("SELEC 1", progress = FALSE), "SELEC")
  expect_error(kendall_sql("SELECT * FROM kendall_all_pairs('missing.parquet')", progress = FALSE),
               "missing.parquet")
  expect_error(kendall_sql("SELECT 1", t = data.frame(l = I(list(1, 2)))), "column 'l'")
  expect_error(kendall_sql("SELECT 1", data.frame(a = 1)), "must be named")
  expect_error(kendall_sql("SELECT 1", t = Sys.Date()), "data frame")
  expect_error(kendall_sql("SELECT 1", t = data.frame(d = Sys.Date())), "class Date")
  expect_error(kendall_sql(c("SELECT 1", "SELECT 2")), "one string")
  expect_error(kendall_sql("SELECT 1", options = list(1)), "named")
  expect_error(kendall_sql("SELECT 1", options = list(variant = "z")), "kendall.variant")
  expect_error(kendall_sql(""), "no SQL statement")
  # An engine error inside a running query.
  x <- data.frame(gene = c("a", "a"), s1 = 1:2, s2 = 2:1)
  expect_error(kendall_sql("SELECT * FROM kendall_all_pairs('x')", x = x, progress = FALSE), "duplicate")
})
