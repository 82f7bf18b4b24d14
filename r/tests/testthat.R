library(testthat)
library(datafusion.kendall)

test_check("datafusion.kendall")
