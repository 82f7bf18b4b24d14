# Grouped samples: kendall_pairs(groups = f) in one query against
# kendall_pairs on each level's rows alone; kendall_cor(groups = f) against
# cor() on each level's rows.

grouped_data <- function() {
  set.seed(11)
  x <- matrix(round(rnorm(60 * 8), 1), 60, 8, dimnames = list(NULL, paste0("g", 1:8)))
  x[sample(length(x), 20)] <- NA
  f <- factor(sample(c("tumour", "normal", "stroma"), 60, replace = TRUE),
              levels = c("tumour", "normal", "stroma"))
  f[5] <- NA
  list(x = x, f = f)
}

test_that("kendall_pairs(groups =) gives each level's pairs as the level alone", {
  d <- grouped_data()
  res <- kendall_pairs(d$x, p_values = TRUE, q_values = TRUE, groups = d$f,
                       progress = FALSE)
  expect_equal(names(res)[1], "group")
  expect_s3_class(res$group, "factor")
  expect_equal(levels(res$group), levels(d$f))
  expect_false(is.unsorted(as.integer(res$group)))
  for (l in levels(d$f)) {
    rows <- which(!is.na(d$f) & d$f == l)
    alone <- kendall_pairs(d$x[rows, ], p_values = TRUE, q_values = TRUE, progress = FALSE)
    mine <- res[res$group == l, -1]
    key <- function(r) paste(r$gene_i, r$gene_j)
    mine <- mine[order(key(mine)), ]
    alone <- alone[order(key(alone)), ]
    rownames(mine) <- rownames(alone) <- NULL
    # The same engine on the same samples: identical numbers.
    expect_identical(as.character(mine$gene_i), as.character(alone$gene_i))
    expect_identical(mine$tau, alone$tau)
    expect_identical(mine$p_value, alone$p_value)
    expect_identical(mine$q_value, alone$q_value)
  }
})

test_that("kendall_cor(groups =) is a list of cor() matrices, one per level", {
  d <- grouped_data()
  res <- kendall_cor(d$x, use = "pairwise.complete.obs", groups = d$f, progress = FALSE)
  expect_equal(names(res), levels(d$f))
  for (l in levels(d$f)) {
    rows <- which(!is.na(d$f) & d$f == l)
    expect_equal(res[[l]], cor(d$x[rows, ], method = "kendall", use = "pairwise.complete.obs"),
                 tolerance = 1e-12)
  }
  expect_error(kendall_pairs(d$x, groups = d$f[-1], progress = FALSE), "59 values for 60")
})
