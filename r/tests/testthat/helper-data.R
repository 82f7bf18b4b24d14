# The values of cor()'s `use`, for the tests that try each.
uses <- c("everything", "all.obs", "complete.obs", "na.or.complete", "pairwise.complete.obs")

# Random samples x genes matrices with ties (integer levels) and continuous
# columns, a constant column, and missing values.
random_matrix <- function(n, m, na = 0.1, seed = 1, prefix = "g") {
  set.seed(seed)
  x <- matrix(NA_real_, n, m, dimnames = list(paste0("s", seq_len(n)), paste0(prefix, seq_len(m))))
  for (j in seq_len(m)) {
    x[, j] <- if (j %% 3 == 0) rnorm(n) else sample(1:(2 + j %% 5), n, replace = TRUE)
  }
  x[, 2] <- 7 # a constant gene
  if (na > 0) x[sample(length(x), round(na * length(x)))] <- NA
  x
}

# cor() and kendall_cor() side by side: value, warnings and error of each.
both <- function(f) {
  run <- function(g) {
    warnings <- character()
    value <- withCallingHandlers(
      tryCatch(g(), error = function(e) structure(conditionMessage(e), class = "failed")),
      warning = function(w) {
        warnings <<- c(warnings, conditionMessage(w))
        invokeRestart("muffleWarning")
      }
    )
    list(value = value, warnings = unique(warnings))
  }
  list(
    base = run(function() f(function(...) stats::cor(..., method = "kendall"))),
    ours = run(function() f(kendall_cor))
  )
}

# `warnings = FALSE`: base R's cor(method = "kendall", use = "everything")
# warns "the standard deviation is zero" at random when a gene has a missing
# value (it reads an unset standard deviation: 17 of 50 runs of the same call
# warned), so its warnings are not compared there.
expect_same_as_cor <- function(f, warnings = TRUE) {
  r <- both(f)
  if (inherits(r$base$value, "failed")) {
    expect_s3_class(r$ours$value, "failed")
    expect_identical(unclass(r$ours$value), unclass(r$base$value))
    return(invisible())
  }
  expect_equal(r$ours$value, r$base$value, tolerance = 1e-12)
  expect_identical(is.na(r$ours$value), is.na(r$base$value))
  expect_identical(dimnames(r$ours$value), dimnames(r$base$value))
  if (warnings) expect_identical(r$ours$warnings, r$base$warnings)
}

# A file of the repository: beside the tests in a clone (r/tests/testthat),
# or under DATAFUSION_KENDALL_REPO (a clone's root) when the tests run from
# the installed source package (R CMD check); skipped when neither has it.
repo_file <- function(...) {
  root <- Sys.getenv("DATAFUSION_KENDALL_REPO")
  if (!nzchar(root)) root <- file.path(testthat::test_path(), "..", "..", "..")
  path <- file.path(root, ...)
  if (!file.exists(path)) testthat::skip(paste("not in a clone of the repository:", path))
  normalizePath(path)
}
