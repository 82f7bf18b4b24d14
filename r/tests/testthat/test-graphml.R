test_that("kendall_network returns the igraph network of the pairs above a threshold", {
  skip_if_not_installed("igraph")
  x <- random_matrix(30, 40, na = 0, seed = 41)
  x[, 2] <- x[, 1] + rnorm(30, sd = 0.2)
  annotation <- data.frame(probe = colnames(x), symbol = paste0("SYM", 1:40), chr = 1:40)
  g <- kendall_network(x, threshold = 0.25, nodes = annotation, node_key = "probe", progress = FALSE)
  pairs <- kendall_pairs(x, threshold = 0.25, p_values = TRUE, progress = FALSE)
  expect_s3_class(g, "igraph")
  expect_false(igraph::is_directed(g))
  expect_equal(igraph::ecount(g), nrow(pairs))
  ends <- igraph::ends(g, igraph::E(g))
  key <- function(a, b) paste(pmin(a, b), pmax(a, b))
  ours <- key(ends[, 1], ends[, 2])
  theirs <- key(as.character(pairs$gene_i), as.character(pairs$gene_j))
  expect_setequal(ours, theirs)
  expect_equal(igraph::E(g)$tau, pairs$tau[match(ours, theirs)], tolerance = 1e-15)
  expect_equal(igraph::E(g)$p_value, pairs$p_value[match(ours, theirs)], tolerance = 1e-15)
  expect_equal(unname(igraph::degree(g)), igraph::V(g)$degree)
  v <- igraph::V(g)$name
  expect_equal(igraph::V(g)$symbol, annotation$symbol[match(v, annotation$probe)])
  expect_equal(igraph::V(g)$chr, annotation$chr[match(v, annotation$probe)])
  # Only genes with an edge, unless all_nodes.
  expect_lt(igraph::vcount(g), 40)
  all <- kendall_network(x, threshold = 0.25, nodes = annotation, node_key = "probe",
                         all_nodes = TRUE, progress = FALSE)
  expect_equal(igraph::vcount(all), 40)
  expect_equal(sum(igraph::V(all)$degree == 0), 40 - igraph::vcount(g))
})

test_that("kendall_network at a false discovery rate has q-values on its edges", {
  skip_if_not_installed("igraph")
  x <- random_matrix(40, 30, na = 0, seed = 42)
  x[, 2] <- x[, 1] + rnorm(40, sd = 0.3)
  file <- tempfile(fileext = ".graphml")
  g <- kendall_network(x, q_value = 0.05, file = file, progress = FALSE)
  expect_true(file.exists(file))
  pairs <- kendall_pairs(x, p_values = TRUE, q_values = TRUE, progress = FALSE)
  expect_equal(igraph::ecount(g), sum(pairs$q_value < 0.05, na.rm = TRUE))
  expect_true(all(igraph::E(g)$q_value < 0.05))
  expect_error(kendall_network(x), "threshold")
})

test_that("kendall_write_graphml writes any edge table; igraph reads it back", {
  skip_if_not_installed("igraph")
  edges <- data.frame(from = c("a", "a", "b&c"), to = c("b&c", "d", "d"),
                      weight = c(0.5, NA, -1e-7), kind = c("x", "y", "z"))
  nodes <- data.frame(id = c("a", "d", "z"), label = c("A <1>", NA, "Z"))
  file <- tempfile(fileext = ".graphml")
  kendall_write_graphml(edges, file, nodes = nodes, all_nodes = TRUE, directed = TRUE)
  g <- igraph::read_graph(file, format = "graphml")
  expect_true(igraph::is_directed(g))
  expect_equal(igraph::vcount(g), 4)
  expect_equal(igraph::ecount(g), 3)
  expect_equal(igraph::V(g)$name, c("a", "b&c", "d", "z"))
  expect_equal(igraph::V(g)$degree, c(2, 2, 2, 0))
  expect_equal(igraph::V(g)$label[c(1, 4)], c("A <1>", "Z"))
  expect_equal(igraph::E(g)$weight, c(0.5, NA, -1e-7))
  expect_equal(igraph::E(g)$kind, c("x", "y", "z"))
  expect_error(kendall_write_graphml(edges["from"], file), "two endpoint")
  expect_error(kendall_write_graphml(edges, file, nodes = nodes, node_key = "nope"), "no column 'nope'")
  expect_error(kendall_write_graphml(edges, "s3://bucket/net.graphml"), "local files")
})

test_that("ids and values from all of Unicode read back equal through igraph, or are refused naming the row", {
  skip_if_not_installed("igraph")
  set.seed(20261127)
  # Whitespace XML parsers normalise, markup, quotes, combining marks, bidi
  # and zero-width characters, C1 controls, line separators, a BOM, astral
  # characters; then code points from all planes (no surrogates, no
  # characters XML 1.0 cannot hold).
  pieces <- c("\t", "\n", "\r", " ", "&", "<", ">", "\"", "'", "e\u0301", "\u00e9",
              "\u0301", "\u200b", "\u202e", "\u0085", "\u2028", "\ufeff", "\u007f",
              "\U0001f9ec", "\U0010fffd", "G", "1")
  code_points <- c(0x20:0x7e, 0xa0:0xd7ff, 0xe000:0xfffd, 0x10000:0x10ffff)
  draw <- function(min = 1) {
    n <- sample(min:5, 1)
    if (n == 0) return("")
    parts <- ifelse(runif(n) < 0.5, sample(pieces, n, replace = TRUE),
                    vapply(sample(code_points, n), intToUtf8, ""))
    paste0(parts, collapse = "")
  }
  graphs <- 20
  for (i in seq_len(graphs)) {
    ids <- c("G\t1", "G 1", "G\n1", "G\r1", "e\u0301", "\u00e9", " x", "x ")
    while (length(ids) < 20) ids <- unique(c(ids, draw()))
    ids <- sample(ids)
    pairs <- t(combn(length(ids), 2))
    pairs <- pairs[sample(nrow(pairs), 30), ]
    edges <- data.frame(from = ids[pairs[, 1]], to = ids[pairs[, 2]],
                        label = vapply(seq_len(30), function(i) draw(0), ""),
                        w = runif(30, -1, 1), stringsAsFactors = FALSE)
    nodes <- data.frame(id = ids[1:10], note = vapply(1:10, function(i) draw(0), ""),
                        stringsAsFactors = FALSE)
    file <- tempfile(fileext = ".graphml")
    kendall_write_graphml(edges, file, nodes = nodes, all_nodes = TRUE)
    g <- igraph::read_graph(file, format = "graphml")
    # Vertex names (igraph's `id` attribute, the GraphML id as libxml2 hands
    # it over, holds "&#38;" for "&").
    v <- igraph::V(g)$name
    # The endpoints and, with all_nodes, the node table's ids.
    expect_setequal(v, union(c(edges$from, edges$to), nodes$id))
    at <- match(v, nodes$id)
    # igraph reads an absent string attribute as "".
    expect_identical(igraph::V(g)$note, ifelse(is.na(at), "", nodes$note[at]))
    expect_identical(igraph::V(g)$degree,
                     as.numeric(table(factor(c(edges$from, edges$to), levels = v))))
    ends <- igraph::ends(g, igraph::E(g), names = FALSE)
    # Edges in the file's (the rows') order; igraph may swap the ends of an
    # undirected edge.
    a <- v[ends[, 1]]
    b <- v[ends[, 2]]
    expect_true(all((a == edges$from & b == edges$to) | (a == edges$to & b == edges$from)))
    expect_identical(igraph::E(g)$label, edges$label)
    expect_identical(igraph::E(g)$w, edges$w)
    unlink(file)
  }
  # What XML 1.0 cannot hold, and an empty id, are refused naming the row.
  file <- tempfile(fileext = ".graphml")
  for (c in c(1:8, 11, 12, 14:31)) {
    bad <- data.frame(from = c("a", "b", paste0("c", intToUtf8(c))), to = c("b", "c", "a"))
    expect_error(kendall_write_graphml(bad, file),
                 sprintf("edge row 3, column from .*U\\+%04X", c))
  }
  expect_error(kendall_write_graphml(data.frame(from = c("a", ""), to = c("b", "a")), file),
               "edge row 2, column from is an empty string")
  expect_false(file.exists(file))
  message(sprintf("GraphML round trip through igraph: %d graphs, %d refusals", graphs, 29))
})
