# Run by ../cleanup in R CMD build's copy of the package (never in the
# repository): makes src/rust a crate of its own and vendors every crate it
# needs, so that the tarball installs with no network and no repository.
#
# - tools/core (the core crate's manifest, lock file, licence and sources,
#   copied through the repository's symbolic links) becomes src/rust/core,
#   its manifest stripped of what belongs to the repository: the workspace,
#   profiles, lints, benches, dev-dependencies;
# - src/rust/Cargo.toml takes the core from there with the features an R user
#   needs, and the profile of tools/profile.toml;
# - `cargo vendor` puts the sources of every dependency, at the versions of
#   the repository's lock file, into src/rust/vendor.tar.xz.

stop_if <- function(failed, ...) if (failed) stop(..., call. = FALSE)

# Drops the TOML tables whose header matches `drop` (a regular expression),
# with every line up to the next header.
drop_tables <- function(lines, drop) {
  header <- grepl("^\\s*\\[", lines)
  table <- cumsum(header)
  dropped <- unique(table[header & grepl(drop, lines)])
  lines[!(table %in% dropped & table > 0)]
}

core_in <- file.path("tools", "core")
rust <- file.path("src", "rust")
core <- file.path(rust, "core")

# The core crate.
dir.create(core, showWarnings = FALSE)
manifest <- readLines(file.path(core_in, "Cargo.toml"))
manifest <- drop_tables(manifest, paste0(
  "^\\s*\\[(workspace|profile|lints|dev-dependencies|\\[bench\\]|",
  "target\\..*\\.dev-dependencies)"))
manifest <- manifest[!grepl("^\\s*default-run\\s*=", manifest)]
writeLines(manifest, file.path(core, "Cargo.toml"))
for (f in c("src", "LICENSE")) {
  stop_if(!file.rename(file.path(core_in, f), file.path(core, f)),
          "could not move ", file.path(core_in, f))
}

# The R package's crate.
manifest_path <- file.path(rust, "Cargo.toml")
manifest <- readLines(manifest_path)
dep <- grepl("^datafusion-kendall\\s*=", manifest)
stop_if(sum(dep) != 1, "src/rust/Cargo.toml: no single datafusion-kendall dependency")
manifest[dep] <- 'datafusion-kendall = { path = "core", features = ["cloud"] }'
manifest <- drop_tables(manifest, "^\\s*\\[lints\\]")
writeLines(c(manifest, readLines(file.path("tools", "profile.toml"))), manifest_path)

# Every dependency's source, at the versions of the repository's lock file.
stop_if(!file.copy(file.path(core_in, "Cargo.lock"), file.path(rust, "Cargo.lock"),
                   overwrite = TRUE), "could not copy the lock file")
status <- system2("cargo", c("vendor", "--quiet", "--manifest-path", manifest_path,
                             file.path(rust, "vendor")), stdout = FALSE)
stop_if(status != 0, "cargo vendor failed (", status, ")")
status <- system2("tar", c("-cJf", file.path(rust, "vendor.tar.xz"), "-C", rust, "vendor"))
stop_if(status != 0, "tar failed (", status, ")")
unlink(c(file.path(rust, "vendor"), core_in), recursive = TRUE)
