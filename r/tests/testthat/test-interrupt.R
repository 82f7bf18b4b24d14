# Ctrl-C and progress, in a child R process: it starts a long computation
# (450 million pairs: several seconds on any machine)
# with progress = TRUE, the test sends it SIGINT (what Ctrl-C sends) and
# measures how long the child takes to come back.
test_that("Ctrl-C stops a running computation within a second; progress is shown", {
  skip_on_os("windows")
  dir <- tempfile("interrupt")
  dir.create(dir)
  script <- file.path(dir, "child.R")
  writeLines(c(
    "library(datafusion.kendall)",
    "set.seed(1)",
    "x <- matrix(rnorm(60 * 30000), 60, 30000)",
    sprintf("status <- %s", deparse(file.path(dir, "status"))),
    "cat('started\\n', file = status)",
    "r <- tryCatch(kendall_pairs(x, threshold = 0.99, progress = TRUE),",
    "              interrupt = function(e) 'interrupted')",
    "cat(if (identical(r, 'interrupted')) 'interrupted\\n' else 'finished\\n', file = status, append = TRUE)"
  ), script)
  rscript <- file.path(R.home("bin"), "Rscript")
  pid <- as.integer(system(sprintf("%s %s 2> %s > /dev/null & echo $!", shQuote(rscript),
                                   shQuote(script), shQuote(file.path(dir, "stderr"))),
                           intern = TRUE))
  status <- function() if (file.exists(file.path(dir, "status"))) readLines(file.path(dir, "status")) else character()
  wait_for <- function(what, seconds) {
    deadline <- Sys.time() + seconds
    while (!(what %in% status()) && Sys.time() < deadline) Sys.sleep(0.02)
    what %in% status()
  }
  expect_true(wait_for("started", 60))
  Sys.sleep(3) # into the computation, past the first second (progress)
  expect_false("finished" %in% status())
  sent <- Sys.time()
  tools::pskill(pid, tools::SIGINT)
  expect_true(wait_for("interrupted", 10))
  took <- as.numeric(difftime(Sys.time(), sent, units = "secs"))
  expect_lt(took, 1)
  progress <- paste(readLines(file.path(dir, "stderr"), warn = FALSE), collapse = "\n")
  expect_match(progress, "kendall: [0-9]+ of 449985000 pairs")
})
