# kendall_cor against base R's cor(method = "kendall") and pcaPP::cor.fk on
# the same matrix: 100 samples x 2,000 genes (standard normal, seed 1), one
# run each (kendall_cor: a first call, which starts the runtime, then the
# median of five). Prints the times, the ratios and the largest difference.
# Run: R CMD INSTALL r && Rscript scripts/bench_r_cor.R [genes] [samples]
suppressMessages(library(datafusion.kendall))
args <- commandArgs(trailingOnly = TRUE)
m <- if (length(args) >= 1) as.integer(args[1]) else 2000L
n <- if (length(args) >= 2) as.integer(args[2]) else 100L
set.seed(1)
x <- matrix(rnorm(n * m), n, m, dimnames = list(NULL, sprintf("g%04d", seq_len(m))))
elapsed <- function(e) unname(system.time(e, gcFirst = TRUE)["elapsed"])

first <- elapsed(ours <- kendall_cor(x, progress = FALSE))
again <- vapply(1:5, function(i) elapsed(kendall_cor(x, progress = FALSE)), numeric(1))
ours_s <- stats::median(again)
cat(sprintf("kendall_cor: first call %.3f s, then %s s (median %.3f s)\n",
            first, paste(sprintf("%.3f", again), collapse = ", "), ours_s))

fk_s <- elapsed(fk <- pcaPP::cor.fk(x))
cat(sprintf("pcaPP::cor.fk: %.2f s (%.0fx kendall_cor's median, %.0fx its first call); max |diff| %.3g\n",
            fk_s, fk_s / ours_s, fk_s / first, max(abs(fk - ours))))

base_s <- elapsed(base <- cor(x, method = "kendall"))
cat(sprintf("cor(method = \"kendall\"): %.1f s (%.0fx kendall_cor's median, %.0fx its first call); max |diff| %.3g\n",
            base_s, base_s / ours_s, base_s / first, max(abs(base - ours))))
cat(sprintf("%d genes x %d samples, %d pairs; %s\n", m, n, m * (m - 1) / 2, R.version.string))
