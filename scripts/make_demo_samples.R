# The demo's sample annotation, data/demo_samples.csv: each bladder sample's
# clinical group as the Bioconductor data package bladderbatch records it
# (Debian package r-bioc-bladderbatch): `outcome` (Normal, Biopsy, mTCC,
# sTCC-CIS, sTCC+CIS), `cancer` (Normal, Biopsy, Cancer) and the processing
# `batch` (1-5). The demo matrix's sample columns are the same ids.
# Run: Rscript scripts/make_demo_samples.R
suppressMessages(library(bladderbatch))
data(bladderdata)
p <- pData(bladderEset)
out <- data.frame(
  sample = rownames(p),
  outcome = as.character(p$outcome),
  cancer = as.character(p$cancer),
  batch = as.integer(p$batch)
)
write.csv(out, "data/demo_samples.csv", row.names = FALSE, quote = FALSE)
