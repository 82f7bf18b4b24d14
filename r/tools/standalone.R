# Run by ../cleanup in R CMD build's copy of the package (never in the
# repository): makes src/rust a crate of its own and vendors every crate it
# needs, so that the tarball installs with no network and no repository.
#
# - tools/core (the core crate's manifest, lock file, licence and sources,
#   copied through the repository's symbolic links) becomes src/rust/core,
#   its manifest stripped of what belongs to the repository: the workspace,
#   profiles, lints, benches, dev-dependencies;
# - src/rust/Cargo.toml takes the core from there with the features an R user
#   needs (not the shell's), and the profile of tools/profile.toml;
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

# The value of a `key = "..."` or `key = [...]` entry of a crate's manifest
# (as `cargo vendor` writes them: normalised, an array on one line or one
# item a line), its items joined by ", ".
manifest_value <- function(lines, key) {
  at <- grep(paste0("^", key, "\\s*="), lines)[1]
  if (is.na(at)) return("")
  value <- sub(paste0("^", key, "\\s*=\\s*"), "", lines[at])
  if (value == "[") {
    end <- at + which(grepl("^\\]", lines[-seq_len(at)]))[1]
    value <- paste(trimws(lines[(at + 1):(end - 1)]), collapse = " ")
  }
  items <- trimws(strsplit(gsub("^\\[|\\]$|\"", "", value), ",")[[1]])
  paste(items[nzchar(items)], collapse = ", ")
}

# inst/AUTHORS: each vendored crate with its version, authors and licence, as
# CRAN asks of packages that bundle other authors' code.
write_authors <- function(vendor, path) {
  crates <- sort(list.dirs(vendor, recursive = FALSE))
  entries <- vapply(crates, function(dir) {
    lines <- readLines(file.path(dir, "Cargo.toml"), warn = FALSE)
    authors <- manifest_value(lines, "authors")
    sprintf("%s %s (%s): %s", manifest_value(lines, "name"),
            manifest_value(lines, "version"), manifest_value(lines, "license"),
            if (nzchar(authors)) authors else manifest_value(lines, "repository"))
  }, character(1))
  dir.create(dirname(path), showWarnings = FALSE, recursive = TRUE)
  writeLines(c(
    "The source package bundles these Rust crates (src/rust/vendor.tar.xz),",
    "each under its own licence; name version (licence): authors.",
    "", unname(entries)), path)
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
manifest[dep] <- paste('datafusion-kendall = { path = "core", default-features = false,',
                       'features = ["cloud", "hdf5"] }')
manifest <- drop_tables(manifest, "^\\s*\\[lints\\]")
writeLines(c(manifest, readLines(file.path("tools", "profile.toml"))), manifest_path)

# Every dependency's source, at the versions of the repository's lock file.
stop_if(!file.copy(file.path(core_in, "Cargo.lock"), file.path(rust, "Cargo.lock"),
                   overwrite = TRUE), "could not copy the lock file")
status <- system2("cargo", c("vendor", "--quiet", "--manifest-path", manifest_path,
                             file.path(rust, "vendor")), stdout = FALSE)
stop_if(status != 0, "cargo vendor failed (", status, ")")
write_authors(file.path(rust, "vendor"), file.path("inst", "AUTHORS"))
# xz on every core (XZ_OPT=-T0): the same archive format, built in a fraction
# of the single-threaded time.
status <- system2("tar", c("-cJf", file.path(rust, "vendor.tar.xz"), "-C", rust, "vendor"),
                  env = "XZ_OPT=-T0")
stop_if(status != 0, "tar failed (", status, ")")
unlink(c(file.path(rust, "vendor"), core_in), recursive = TRUE)
