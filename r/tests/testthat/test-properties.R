# Random calls (a fixed seed): kendall_cor, kendall_pairs and kendall_sql
# over random shapes, storage modes, NA, NaN and Inf, empty and one-sample
# inputs, duplicated names, data frames and vectors. Each equals R's answer
# (cor, or the data as R holds it) or is an R error; none aborts R. The
# number of cases is printed.

random_input <- function(n, m, kind) {
  x <- matrix(sample(c(-2:3, 0.5, 1.5), n * m, replace = TRUE), n, m)
  if (kind %in% c("na", "mixed") && length(x)) x[sample(length(x), ceiling(length(x) / 6))] <- NA
  if (kind %in% c("nan", "mixed") && length(x)) x[sample(length(x), 1)] <- NaN
  if (kind %in% c("inf", "mixed") && length(x)) x[sample(length(x), 1)] <- sample(c(Inf, -Inf), 1)
  if (kind == "integer") storage.mode(x) <- "integer"
  if (kind == "logical") x <- x > 1
  if (m && sample(3, 1) > 1) colnames(x) <- paste0("g", if (sample(4, 1) == 1) rep(1, m) else seq_len(m))
  x
}

# R's tau of two vectors over the samples both have (NA for fewer than 2).
pair_tau <- function(a, b) {
  both <- !is.na(a) & !is.na(b)
  if (sum(both) < 2) return(NA_real_)
  suppressWarnings(stats::cor(a[both], b[both], method = "kendall"))
}

# What base R's cor(use = "pairwise") of a one-column matrix stops with
# when its one tau is NA or not exactly 1 (diag() of its 1 x 1 result): a
# failure of cor's own, where kendall_cor gives the tau.
cor_own_failures <- c("invalid 'nrow' value (too large or NA)", "non-conformable arrays")

test_that("random kendall_cor calls equal cor or stop as cor does", {
  set.seed(20261127)
  cases <- 0L
  failed <- 0L
  own <- 0L
  for (k in 1:150) {
    n <- sample(0:7, 1)
    m <- sample(1:5, 1)
    kind <- sample(c("plain", "na", "nan", "inf", "mixed", "integer", "logical"), 1)
    x <- random_input(n, m, kind)
    y <- if (sample(3, 1) == 1) random_input(n, sample(1:3, 1), sample(c("plain", "na"), 1)) else NULL
    use <- sample(uses, 1)
    as_df <- sample(4, 1) == 1
    call <- function(f) {
      xx <- if (as_df && !is.null(colnames(x))) as.data.frame(x) else x
      if (is.null(y)) f(xx, use = use) else f(xx, y, use = use)
    }
    r <- both(call)
    cases <- cases + 1L
    if (inherits(r$base$value, "failed") && unclass(r$base$value) %in% cor_own_failures) {
      expect_true(use == "pairwise.complete.obs" && NCOL(x) == 1L && is.null(y))
      expect_equal(as.vector(r$ours$value), pair_tau(x[, 1], x[, 1]))
      own <- own + 1L
      next
    }
    if (inherits(r$base$value, "failed")) failed <- failed + 1L
    expect_same_as_cor(call, warnings = FALSE)
  }
  cat(sprintf("\nkendall_cor: %d random cases (%d stopped as cor stops, %d where cor fails itself)\n",
              cases, failed, own))
  expect_equal(cases, 150L)
})

test_that("random kendall_pairs calls equal cor, pair by pair, or are R errors", {
  set.seed(27)
  cases <- 0L
  errors <- 0L
  for (k in 1:60) {
    n <- sample(0:7, 1)
    m <- sample(1:5, 1)
    x <- random_input(n, m, sample(c("plain", "na", "nan", "inf", "integer"), 1))
    colnames(x) <- if (sample(4, 1) == 1) rep("g", m) else paste0("g", seq_len(m))
    threshold <- if (sample(2, 1) == 1) NULL else sample(c(0, 0.3, 1), 1)
    got <- tryCatch(kendall_pairs(x, threshold = threshold, progress = FALSE),
                    error = function(e) e)
    cases <- cases + 1L
    if (inherits(got, "error")) {
      errors <- errors + 1L
      # Refused: a duplicated name, infinite values, fewer than 2 samples.
      expect_true(anyDuplicated(colnames(x)) > 0 || any(is.infinite(x)) || n < 2,
                  info = conditionMessage(got))
      next
    }
    expect_false(anyDuplicated(colnames(x)) > 0)
    # Pair by pair: base R's cor(use = "pairwise") of a one-column matrix
    # whose tau is NA fails ("non-conformable arrays").
    r <- matrix(NA_real_, m, m, dimnames = list(colnames(x), colnames(x)))
    for (i in seq_len(m)) for (j in seq_len(m)) r[i, j] <- pair_tau(x[, i], x[, j])
    want <- r[upper.tri(r)]
    keep <- if (is.null(threshold)) rep(TRUE, length(want)) else !is.na(want) & abs(want) >= threshold
    expect_equal(nrow(got), sum(keep))
    if (nrow(got)) {
      expect_equal(got$tau, r[cbind(as.character(got$gene_i), as.character(got$gene_j))],
                   tolerance = 1e-12)
    }
  }
  cat(sprintf("\nkendall_pairs: %d random cases (%d R errors)\n", cases, errors))
  expect_equal(cases, 60L)
})

test_that("random data frames round-trip through kendall_sql or are refused by name", {
  set.seed(31)
  makers <- list(
    double = function(n) sample(c(1.5, -2, NA, NaN, Inf, 0), n, replace = TRUE),
    integer = function(n) sample(c(1L, -7L, NA), n, replace = TRUE),
    logical = function(n) sample(c(TRUE, FALSE, NA), n, replace = TRUE),
    character = function(n) sample(c("a", "\u00e9\t\"", "", NA), n, replace = TRUE),
    factor = function(n) factor(sample(c("u", "v", NA), n, replace = TRUE)),
    integer64 = function(n) {
      v <- sample(c(3, -4, 2^40, NA), n, replace = TRUE)
      if (requireNamespace("bit64", quietly = TRUE)) bit64::as.integer64(v) else NULL
    },
    date = function(n) Sys.Date() + seq_len(n),
    list = function(n) I(as.list(seq_len(n)))
  )
  expected <- function(v) {
    if (inherits(v, "integer64")) return(as.double(as.character(v)))
    if (is.factor(v)) return(as.character(v))
    v
  }
  cases <- 0L
  refused <- 0L
  for (k in 1:80) {
    n <- sample(0:5, 1)
    kinds <- sample(names(makers), sample(1:3, 1), replace = TRUE)
    df <- data.frame(row = seq_len(n))
    for (j in seq_along(kinds)) {
      v <- makers[[kinds[j]]](n)
      if (!is.null(v)) df[[paste0("c", j)]] <- v
    }
    got <- tryCatch(kendall_sql("SELECT * FROM t ORDER BY \"row\"", t = df, progress = FALSE),
                    error = function(e) e)
    cases <- cases + 1L
    bad <- names(df)[vapply(df, function(v) inherits(v, "Date") || is.list(v), logical(1))]
    if (inherits(got, "error")) {
      refused <- refused + 1L
      expect_true(length(bad) > 0, info = conditionMessage(got))
      expect_match(conditionMessage(got), sprintf("column '%s'", bad[1]), fixed = TRUE)
      next
    }
    expect_length(bad, 0)
    expect_identical(names(got), names(df))
    for (col in names(df)[-1]) {
      want <- expected(df[[col]])
      g <- got[[col]]
      if (is.double(want)) {
        expect_identical(is.na(g) & !is.nan(g), is.na(want) & !is.nan(want), info = col)
        expect_identical(g[!is.na(g)], want[!is.na(want)], info = col)
      } else {
        expect_identical(g, want, info = col)
      }
    }
  }
  cat(sprintf("\nkendall_sql: %d random data frames (%d refused by name)\n", cases, refused))
  expect_equal(cases, 80L)
})
