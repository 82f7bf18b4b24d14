# datafusion.kendall: all-pairs Kendall rank correlation from R.
# The computation is the datafusion-kendall Rust crate (src/rust), reached
# through two entry points: savvy_kd_cor__impl (a correlation matrix) and
# savvy_kd_sql__impl (SQL over files and data frames). See docs/r.md.

.INTERRUPTED <- "datafusion.kendall: interrupted"

# Runs `expr` (a call into Rust); a Ctrl-C there comes back as an error with
# the message .INTERRUPTED and is turned into what Ctrl-C gives in R: an
# `interrupt` condition (tryCatch(interrupt = ) sees it), then back to the
# top level.
.kd_interruptible <- function(expr) {
  tryCatch(expr, error = function(e) {
    if (identical(conditionMessage(e), .INTERRUPTED)) {
      signalCondition(structure(
        class = c("interrupt", "condition"),
        list(message = "interrupted: the computation was stopped", call = NULL)
      ))
      invokeRestart("abort")
    }
    stop(e)
  })
}

# `options` (a named list or vector; names with or without the `kendall.`
# prefix, or any DataFusion option such as `datafusion.execution.batch_size`)
# as a named character vector.
.kd_options <- function(options) {
  if (is.null(options) || length(options) == 0L) {
    return(character())
  }
  keys <- names(options)
  if (is.null(keys) || any(!nzchar(keys))) {
    stop("'options' must be named, e.g. list(variant = \"c\")", call. = FALSE)
  }
  keys <- ifelse(grepl(".", keys, fixed = TRUE), keys, paste0("kendall.", keys))
  values <- vapply(options, function(v) {
    if (length(v) != 1L || is.na(v)) {
      stop("each option must be one value", call. = FALSE)
    }
    if (is.logical(v)) tolower(as.character(v)) else as.character(v)
  }, character(1))
  stats::setNames(unname(values), keys)
}

# Runs SQL through the Rust side; returns the last statement's rows as a
# data frame.
.kd_sql <- function(sql, tables = list(), options = character(), progress = FALSE) {
  if (!is.character(sql) || length(sql) != 1L || is.na(sql)) {
    stop("'sql' must be one string", call. = FALSE)
  }
  tables <- lapply(tables, function(t) if (is.matrix(t)) as.data.frame(t) else t)
  for (nm in names(tables)) {
    if (!is.data.frame(tables[[nm]])) {
      stop(sprintf("'%s' must be a data frame or a matrix", nm), call. = FALSE)
    }
  }
  res <- .kd_interruptible(.Call(
    savvy_kd_sql__impl, sql, as.character(names(tables)), unname(tables),
    as.character(names(options)), as.character(unname(options)), isTRUE(progress)
  ))
  n <- if (length(res)) length(res[[1L]]) else 0L
  structure(res, class = "data.frame", row.names = c(NA_integer_, -n))
}

.sql_string <- function(s) paste0("'", gsub("'", "''", s, fixed = TRUE), "'")

.check_flag <- function(v, what) {
  if (!is.logical(v) || length(v) != 1L || is.na(v)) {
    stop(sprintf("'%s' must be TRUE or FALSE", what), call. = FALSE)
  }
}

.check_variant <- function(variant) {
  if (!is.character(variant) || length(variant) != 1L || !variant %in% c("a", "b", "c")) {
    stop("'variant' must be \"a\", \"b\" or \"c\"", call. = FALSE)
  }
}

# bit64's integer64 (a vector, a matrix, or data frame columns) as doubles
# of its integers: as.matrix() and storage.mode() would keep its bytes,
# read as tiny or NaN doubles.
.from_integer64 <- function(x, what) {
  convert <- function(v) {
    if (!inherits(v, "integer64")) return(v)
    if (!requireNamespace("bit64", quietly = TRUE)) {
      stop(sprintf("'%s' holds integer64 values; install bit64 to convert them", what), call. = FALSE)
    }
    d <- dim(v)
    n <- dimnames(v)
    v <- bit64::as.double.integer64(v)
    if (!is.null(d)) {
      dim(v) <- d
      dimnames(v) <- n
    }
    v
  }
  if (is.data.frame(x)) {
    x[] <- lapply(x, convert)
    return(x)
  }
  convert(x)
}

#' Kendall's tau between the columns of a matrix, as cor(method = "kendall")
#'
#' A drop-in for `cor(x, y, method = "kendall", use = use)`: the same
#' matrix, dimnames, `NA`s, warnings and errors for every `use`, on a numeric
#' matrix or data frame of samples (rows) by genes (columns).
kendall_cor <- function(x, y = NULL, use = "everything", method = "kendall",
                        variant = "b", progress = interactive(), groups = NULL) {
  if (!is.null(groups)) {
    return(.by_group(groups, NROW(x), function(rows) {
      kendall_cor(x[rows, , drop = FALSE],
                  if (is.null(y)) NULL else y[rows, , drop = FALSE],
                  use = use, method = method, variant = variant, progress = progress)
    }))
  }
  na.method <- pmatch(use, c(
    "all.obs", "complete.obs", "pairwise.complete.obs",
    "everything", "na.or.complete"
  ))
  if (is.na(na.method)) stop("invalid 'use' argument")
  if (!identical(method, "kendall")) {
    stop("kendall_cor computes method = \"kendall\" only; use cor() for others")
  }
  .check_variant(variant)
  x <- .from_integer64(x, "x")
  if (!is.null(y)) y <- .from_integer64(y, "y")
  if (is.data.frame(y)) y <- as.matrix(y)
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!is.matrix(x) && is.null(y)) stop("supply both 'x' and 'y' or a matrix-like 'x'")
  if (!(is.numeric(x) || is.logical(x))) stop("'x' must be numeric")
  stopifnot(is.atomic(x))
  if (!is.null(y)) {
    if (!(is.numeric(y) || is.logical(y))) stop("'y' must be numeric")
    stopifnot(is.atomic(y))
  }
  as_matrix <- is.matrix(x) || is.matrix(y)
  xm <- if (is.matrix(x)) x else matrix(x, ncol = 1L)
  ym <- if (is.null(y)) NULL else if (is.matrix(y)) y else matrix(y, ncol = 1L)
  if (!is.null(ym) && nrow(xm) != nrow(ym)) stop("incompatible dimensions")
  storage.mode(xm) <- "double"
  if (!is.null(ym)) storage.mode(ym) <- "double"
  row_names <- colnames(xm)
  col_names <- if (is.null(ym)) colnames(xm) else colnames(ym)
  shape <- function(r) {
    if (!is.null(row_names) || !is.null(col_names)) dimnames(r) <- list(row_names, col_names)
    if (as_matrix) r else r[1L, 1L]
  }
  na_matrix <- function() {
    matrix(NA_real_, ncol(xm), if (is.null(ym)) ncol(xm) else ncol(ym))
  }
  if (na.method == 1L) {
    # cor() checks the ranks, which for a single sample are its row numbers.
    if (nrow(xm) == 0L) stop("'x' is empty")
    if (nrow(xm) > 1L && (anyNA(xm) || (!is.null(ym) && anyNA(ym)))) {
      stop("missing observations in cov/cor")
    }
  }
  if (na.method %in% c(2L, 5L)) {
    ok <- if (is.null(ym)) complete.cases(xm) else complete.cases(xm, ym)
    if (!all(ok)) {
      xm <- xm[ok, , drop = FALSE]
      if (!is.null(ym)) ym <- ym[ok, , drop = FALSE]
    }
    if (nrow(xm) == 0L) {
      if (na.method == 2L) stop("no complete element pairs")
      return(shape(na_matrix()))
    }
  }
  pairwise <- na.method == 3L
  if (pairwise && !is.null(ym) && (length(xm) == 0L || length(ym) == 0L)) {
    stop("both 'x' and 'y' must be non-empty")
  }
  if (ncol(xm) == 0L || (!is.null(ym) && ncol(ym) == 0L)) {
    if (pairwise && is.null(ym)) stop("'x' is empty")
    return(shape(na_matrix()))
  }
  if (nrow(xm) < 2L) {
    # cor() has no pair of samples to compare: all NA (and, for one sample
    # without `pairwise`, no dimnames, as cor() gives).
    r <- na_matrix()
    if (nrow(xm) == 1L && !pairwise) return(if (as_matrix) r else r[1L, 1L])
    return(shape(r))
  }
  # cor() ranks infinite values (the engine refuses them as input): tau
  # depends only on order, so a gene with one is passed as its ranks.
  as_ranks <- function(m) {
    inf <- which(colSums(is.infinite(m)) > 0)
    for (j in inf) m[, j] <- rank(m[, j], na.last = "keep")
    m
  }
  xm <- as_ranks(xm)
  if (!is.null(ym)) ym <- as_ranks(ym)
  r <- .kd_interruptible(.Call(
    savvy_kd_cor__impl, xm, ym, pairwise, variant, isTRUE(progress)
  ))
  zero_sd <- isTRUE(attr(r, "zero_sd"))
  attr(r, "zero_sd") <- NULL
  dim(r) <- c(ncol(xm), if (is.null(ym)) ncol(xm) else ncol(ym))
  if (zero_sd) warning("the standard deviation is zero")
  shape(r)
}

# A samples x genes matrix or data frame as genes in rows: a `gene` column,
# then one column per sample named by its position (s1, s2, ...), so that
# two matrices' samples pair up by row, as cor(x, y) pairs them.
.genes_as_rows <- function(x, what) {
  x <- .from_integer64(x, what)
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!is.matrix(x) || !(is.numeric(x) || is.logical(x))) {
    stop(sprintf("'%s' must be a numeric matrix or data frame (samples x genes)", what), call. = FALSE)
  }
  genes <- colnames(x)
  if (is.null(genes)) genes <- paste0("V", seq_len(ncol(x)))
  storage.mode(x) <- "double"
  rows <- as.data.frame(t(x))
  names(rows) <- paste0("s", seq_len(nrow(x)))
  cbind(data.frame(gene = genes), rows)
}

.pair_columns <- function(p_values, q_values) {
  cols <- "gene_i, gene_j, tau"
  if (p_values) cols <- paste(cols, ", p_value, n")
  if (q_values) cols <- paste(cols, ", q_value")
  cols
}

.threshold_clause <- function(threshold) {
  if (is.null(threshold)) return("")
  if (!is.numeric(threshold) || length(threshold) != 1L || is.na(threshold)) {
    stop("'threshold' must be one number", call. = FALSE)
  }
  sprintf(" WHERE abs(tau) >= %.17g AND NOT isnan(tau)", threshold)
}

# A factor of one level per sample (row) of `x`, or NULL: a groups table
# for kendall.groups (the samples named as .genes_as_rows names them, s1,
# s2, ...; NA left out) and the factor's levels.
.groups_table <- function(groups, samples) {
  if (is.null(groups)) return(NULL)
  f <- as.factor(groups)
  if (length(f) != samples) {
    stop(sprintf("'groups' has %d values for %d samples (rows)", length(f), samples),
         call. = FALSE)
  }
  keep <- !is.na(f)
  data.frame(sample = paste0("s", seq_len(samples))[keep],
             group = as.character(as.integer(f[keep])))
}

# The levels of `groups` (a factor) as the `group` column of a result whose
# groups are level numbers, rows in level order.
.group_levels <- function(res, groups) {
  levels <- levels(as.factor(groups))
  code <- as.integer(res$group)
  res <- res[order(code), , drop = FALSE]
  res$group <- factor(levels[sort(code)], levels = levels)
  rownames(res) <- NULL
  res
}

# One result per level of `groups` (a factor over `samples` rows), named
# by level: `f(rows)` over each level's rows.
.by_group <- function(groups, samples, f) {
  g <- as.factor(groups)
  if (length(g) != samples) {
    stop(sprintf("'groups' has %d values for %d samples (rows)", length(g), samples),
         call. = FALSE)
  }
  out <- lapply(levels(g), function(l) f(which(!is.na(g) & g == l)))
  stats::setNames(out, levels(g))
}

#' Every pair of genes with its tau (and p-value, q-value) as a data frame
kendall_pairs <- function(x, threshold = NULL, p_values = FALSE, q_values = FALSE,
                          variant = "b", options = NULL, progress = interactive(),
                          groups = NULL) {
  .check_flag(p_values, "p_values")
  .check_flag(q_values, "q_values")
  .check_variant(variant)
  rows <- .genes_as_rows(x, "x")
  tables <- list(x = rows)
  columns <- .pair_columns(p_values, q_values)
  group_opts <- list()
  if (!is.null(groups)) {
    tables$groups <- .groups_table(groups, ncol(rows) - 1L)
    group_opts <- list(groups = "groups")
    columns <- paste("\"group\",", columns)
  }
  sql <- sprintf(
    "SELECT %s FROM kendall_all_pairs('x', 'gene')%s",
    columns, .threshold_clause(threshold)
  )
  opts <- c(
    .kd_options(c(list(variant = variant, gene_ids = "dictionary",
                       datafusion.execution.batch_size = 1048576), group_opts)),
    .kd_options(options)
  )
  res <- .kd_sql(sql, tables, opts[!duplicated(names(opts), fromLast = TRUE)], progress)
  if (is.null(groups)) res else .group_levels(res, groups)
}

#' Each gene's k strongest partners
kendall_top_partners <- function(x, k = 10L, p_values = FALSE, variant = "b",
                                 options = NULL, progress = interactive()) {
  if (!is.numeric(k) || length(k) != 1L || is.na(k) || k < 1 || k != round(k)) {
    stop("'k' must be a whole number >= 1", call. = FALSE)
  }
  .check_flag(p_values, "p_values")
  .check_variant(variant)
  cols <- if (p_values) "gene, partner, tau, rank, p_value, n" else "gene, partner, tau, rank"
  sql <- sprintf("SELECT %s FROM kendall_top_partners('x', %d, 'gene')", cols, as.integer(k))
  opts <- c(.kd_options(list(variant = variant)), .kd_options(options))
  .kd_sql(sql, list(x = .genes_as_rows(x, "x")), opts[!duplicated(names(opts), fromLast = TRUE)], progress)
}

#' Every pair of a gene of x with a gene of y
kendall_cross_pairs <- function(x, y, threshold = NULL, p_values = FALSE, q_values = FALSE,
                                variant = "b", options = NULL, progress = interactive()) {
  .check_flag(p_values, "p_values")
  .check_flag(q_values, "q_values")
  .check_variant(variant)
  left <- .genes_as_rows(x, "x")
  right <- .genes_as_rows(y, "y")
  if (ncol(left) != ncol(right)) stop("'x' and 'y' must have the same number of rows (samples)", call. = FALSE)
  sql <- sprintf(
    "SELECT %s FROM kendall_cross_pairs('x', 'y', 'gene', 'gene')%s",
    .pair_columns(p_values, q_values), .threshold_clause(threshold)
  )
  opts <- c(.kd_options(list(variant = variant, gene_ids = "dictionary")), .kd_options(options))
  .kd_sql(sql, list(x = left, y = right), opts[!duplicated(names(opts), fromLast = TRUE)], progress)
}

#' SQL with the table functions over files and R data frames
kendall_sql <- function(sql, ..., options = NULL, progress = interactive()) {
  tables <- list(...)
  if (length(tables) && (is.null(names(tables)) || any(!nzchar(names(tables))))) {
    stop("tables must be named: kendall_sql(sql, expr = my_data_frame)", call. = FALSE)
  }
  .kd_sql(sql, tables, .kd_options(options), progress)
}

.graphml_options <- function(nodes, node_key, directed, all_nodes) {
  opts <- character()
  if (!is.null(nodes)) opts <- c(opts, sprintf("'nodes' 'graphml_nodes'"))
  if (!is.null(node_key)) opts <- c(opts, sprintf("'node_key' %s", .sql_string(node_key)))
  if (directed) opts <- c(opts, "'directed' 'true'")
  if (all_nodes) opts <- c(opts, "'all_nodes' 'true'")
  if (length(opts)) paste0(" OPTIONS (", paste(opts, collapse = ", "), ")") else ""
}

#' Writes edges (a data frame: two endpoint columns, then attributes) as GraphML
kendall_write_graphml <- function(edges, file, nodes = NULL, node_key = NULL,
                                  directed = FALSE, all_nodes = FALSE) {
  if (!is.data.frame(edges) || ncol(edges) < 2L) {
    stop("'edges' must be a data frame with two endpoint columns first", call. = FALSE)
  }
  if (!is.character(file) || length(file) != 1L) stop("'file' must be one path", call. = FALSE)
  .check_flag(directed, "directed")
  .check_flag(all_nodes, "all_nodes")
  tables <- list(graphml_edges = edges)
  if (!is.null(nodes)) tables$graphml_nodes <- nodes
  sql <- sprintf(
    "COPY (SELECT * FROM graphml_edges) TO %s STORED AS GRAPHML%s",
    .sql_string(path.expand(file)), .graphml_options(nodes, node_key, directed, all_nodes)
  )
  .kd_sql(sql, tables, character(), FALSE)
  invisible(file)
}

#' A co-expression network as an igraph object (and a GraphML file)
kendall_network <- function(x, threshold = NULL, q_value = NULL, nodes = NULL, node_key = NULL,
                            all_nodes = FALSE, file = NULL, variant = "b", options = NULL,
                            progress = interactive()) {
  if (!requireNamespace("igraph", quietly = TRUE)) {
    stop("kendall_network needs the igraph package", call. = FALSE)
  }
  if (is.null(threshold) && is.null(q_value)) {
    stop("give 'threshold' (on |tau|) or 'q_value' (a false discovery rate): ",
         "every pair would be an edge", call. = FALSE)
  }
  .check_flag(all_nodes, "all_nodes")
  .check_variant(variant)
  where <- character()
  if (!is.null(threshold)) where <- sub("^ WHERE ", "", .threshold_clause(threshold))
  if (!is.null(q_value)) {
    if (!is.numeric(q_value) || length(q_value) != 1L || is.na(q_value)) {
      stop("'q_value' must be one number", call. = FALSE)
    }
    where <- c(where, sprintf("q_value < %.17g", q_value))
  }
  cols <- if (is.null(q_value)) "gene_i, gene_j, tau, p_value" else "gene_i, gene_j, tau, p_value, q_value"
  if (is.null(file)) {
    file <- tempfile(fileext = ".graphml")
    on.exit(unlink(file), add = TRUE)
  }
  tables <- list(x = .genes_as_rows(x, "x"))
  if (!is.null(nodes)) tables$graphml_nodes <- nodes
  sql <- sprintf(
    "COPY (SELECT %s FROM kendall_all_pairs('x', 'gene') WHERE %s) TO %s STORED AS GRAPHML%s",
    cols, paste(where, collapse = " AND "), .sql_string(path.expand(file)),
    .graphml_options(nodes, node_key, FALSE, all_nodes)
  )
  opts <- c(.kd_options(list(variant = variant)), .kd_options(options))
  .kd_sql(sql, tables, opts[!duplicated(names(opts), fromLast = TRUE)], progress)
  igraph::read_graph(file, format = "graphml")
}
