"""GraphML files written by ``write_graphml`` read back with networkx."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from datafusion import SessionContext

import datafusion_kendall as dk

nx = pytest.importorskip("networkx")

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo_expression.parquet"


def test_a_streamed_query_round_trips_through_networkx(tmp_path):
    ctx = dk.context()
    sql = f"""SELECT gene_i, gene_j, tau, p_value, q_value
              FROM kendall_all_pairs('{DEMO}') WHERE abs(tau) >= 0.6"""
    expected = ctx.sql(sql).to_pandas()
    assert len(expected) > 100
    path = tmp_path / "net.graphml"
    assert dk.write_graphml(ctx.sql(sql), path) == len(expected)
    g = nx.read_graphml(path)
    assert not g.is_directed()
    assert g.number_of_edges() == len(expected)
    endpoints = set(expected.gene_i) | set(expected.gene_j)
    assert set(g.nodes) == endpoints
    for row in expected.sample(50, random_state=1).itertuples():
        edge = g.edges[row.gene_i, row.gene_j]
        assert edge["tau"] == row.tau  # shortest round-trip text: the same bits
        assert edge["p_value"] == row.p_value
        assert edge["q_value"] == row.q_value
    degrees = pd.concat([expected.gene_i, expected.gene_j]).value_counts()
    for node, data in g.nodes(data=True):
        assert data["degree"] == degrees[node] == g.degree[node]
        assert data["name"] == node
    assert not [p for p in tmp_path.iterdir() if p.name != "net.graphml"]


def test_node_annotations_all_nodes_directed_and_escaping(tmp_path):
    edges = pd.DataFrame(
        {
            "source": ["a", "a", "b&c"],
            "target": ["b&c", "d", "d"],
            "weight": [0.5, None, -1e-7],
            "n": pa.array([10, 9, 8], pa.int64()),
        }
    )
    nodes = pa.table({"id": ["a", "d", "z<"], "symbol": ["TP53", None, "MYC"]})
    path = tmp_path / "net.graphml"
    assert dk.write_graphml(edges, path, nodes=nodes, directed=True, all_nodes=True) == 3
    g = nx.read_graphml(path)
    assert g.is_directed()
    assert list(g.nodes) == ["a", "b&c", "d", "z<"]
    assert g.nodes["a"] == {"name": "a", "degree": 2, "symbol": "TP53"}
    assert g.nodes["d"] == {"name": "d", "degree": 2}
    assert g.nodes["z<"]["degree"] == 0
    assert g.edges["a", "b&c"]["weight"] == 0.5
    assert "weight" not in g.edges["a", "d"]
    assert g.edges["b&c", "d"]["weight"] == -1e-7
    assert g.edges["a", "d"]["n"] == 9
    assert not math.isnan(g.edges["a", "b&c"]["weight"])


def test_sql_copy_to_graphml_is_the_shell_and_rust_path(tmp_path):
    # The Python context's COPY cannot reach our writer (the FFI carries table
    # functions, not file formats): write_graphml is the Python way, and
    # errors say what went wrong.
    with pytest.raises(ValueError, match="two columns"):
        dk.write_graphml(pa.table({"only": [1]}), tmp_path / "x.graphml")
    with pytest.raises(ValueError, match="node_key"):
        dk.write_graphml(
            pa.table({"a": ["x"], "b": ["y"]}),
            tmp_path / "x.graphml",
            nodes=pa.table({"id": ["x"]}),
            node_key="nope",
        )
    with pytest.raises(TypeError, match="edges must be"):
        dk.write_graphml([1, 2], tmp_path / "x.graphml")
    ctx = SessionContext()
    df = ctx.from_pydict({"a": ["x", None], "b": ["y", "z"]})
    with pytest.raises(ValueError, match="NULL endpoint"):
        dk.write_graphml(df, tmp_path / "x.graphml")
    assert not list(tmp_path.iterdir())


# Round trips of ids and values drawn from all of Unicode: every file that
# is written reads back equal through networkx and igraph; what XML 1.0
# cannot hold is refused naming the row, and nothing is written.

#: Control characters and noncharacters XML 1.0 cannot hold.
UNWRITABLE = [chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"] + ["\ufffe", "\uffff"]

#: Hard cases every drawn string may hold: whitespace XML parsers normalise,
#: markup, quotes, combining marks, bidi and zero-width characters, C1
#: controls, line separators, a BOM, astral characters.
PIECES = [
    "\t", "\n", "\r", "\r\n", " ", "  ", "&", "<", ">", '"', "'", "&amp;", "]]>",
    "e\u0301", "\u00e9", "\u0301", "\u200b", "\u200d", "\u202e", "\u0085", "\u2028",
    "\ufeff", "\u007f", "\u009f", "\ufffd", "\U0001f9ec", "\U0010fffd", "\ud7ff", "\ue000",
    "G", "1", "_at",
]


def _draw(rng, allow_empty=False):
    """A random string: pieces above and code points from all planes
    (surrogates and unwritable characters left out)."""
    n = rng.randint(0 if allow_empty else 1, 6)
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append(rng.choice(PIECES))
        else:
            while True:
                c = chr(rng.choice([rng.randint(0x20, 0x7FF), rng.randint(0x800, 0xFFFD),
                                    rng.randint(0x10000, 0x10FFFF)]))
                if not 0xD800 <= ord(c) <= 0xDFFF and c not in UNWRITABLE:
                    break
            out.append(c)
    return "".join(out)


def _graph(rng, n_nodes=25, n_edges=40):
    """Distinct ids (with pairs a reader could merge), distinct undirected
    edges without loops, a string and a double attribute, a node table."""
    ids = ["G\t1", "G 1", "G\n1", "G\r1", "e\u0301", "\u00e9", " x", "x "]
    while len(ids) < n_nodes:
        s = _draw(rng)
        if s not in ids:
            ids.append(s)
    rng.shuffle(ids)
    pairs = set()
    while len(pairs) < n_edges:
        a, b = rng.sample(range(len(ids)), 2)
        if (b, a) not in pairs:
            pairs.add((a, b))
    pairs = sorted(pairs)
    edges = pa.table({
        "source": [ids[a] for a, _ in pairs],
        "target": [ids[b] for _, b in pairs],
        "label": [_draw(rng, allow_empty=True) for _ in pairs],
        "w": [rng.uniform(-1, 1) for _ in pairs],
    })
    annotated = ids[: n_nodes // 2]
    nodes = pa.table({"id": annotated, "note": [_draw(rng, allow_empty=True) for _ in annotated]})
    return ids, pairs, edges, nodes


def _read_networkx(path):
    g = nx.read_graphml(path)
    nodes = {n: dict(d) for n, d in g.nodes(data=True)}
    edges = {frozenset((a, b)): dict(d) for a, b, d in g.edges(data=True)}
    assert len(edges) == g.number_of_edges()
    return nodes, edges


def _read_igraph(path):
    """Nodes by their ``name``, igraph's vertex names. (Its ``id`` attribute,
    the GraphML id as libxml2 hands it over, holds ``&#38;`` for ``&``.)"""
    ig = pytest.importorskip("igraph")
    g = ig.Graph.Read_GraphML(str(path))
    ids = g.vs["name"]
    nodes = {}
    for v in g.vs:
        attrs = {k: x for k, x in v.attributes().items() if k != "id" and x is not None}
        # igraph gives every vertex every attribute: None where absent,
        # NaN for a missing double.
        nodes[ids[v.index]] = {k: x for k, x in attrs.items() if x == x}
    edges = {}
    for e in g.es:
        attrs = {k: x for k, x in e.attributes().items() if x is not None}
        edges[frozenset((ids[e.source], ids[e.target]))] = attrs
    assert len(edges) == g.ecount()
    return nodes, edges


def test_unicode_ids_and_values_round_trip_through_networkx_and_igraph(tmp_path):
    import random

    rng = random.Random(20261127)
    graphs, strings = 60, 0
    for i in range(graphs):
        ids, pairs, edges, nodes = _graph(rng)
        path = tmp_path / f"net{i}.graphml"
        assert dk.write_graphml(edges, path, nodes=nodes, all_nodes=True) == len(pairs)
        degree = {s: 0 for s in ids}
        for a, b in pairs:
            degree[ids[a]] += 1
            degree[ids[b]] += 1
        note = dict(zip(nodes["id"].to_pylist(), nodes["note"].to_pylist()))
        # The endpoints and, with all_nodes, the node table's ids.
        want_nodes = {
            s: {"name": s, "degree": degree[s], **({"note": note[s]} if s in note else {})}
            for s in ids
            if degree[s] or s in note
        }
        want_edges = {
            frozenset((s, t)): {"label": label, "w": w}
            for s, t, label, w in zip(*(edges[c].to_pylist() for c in edges.column_names))
        }
        strings += len(ids) + 2 * len(pairs)
        got_nodes, got_edges = _read_networkx(path)
        assert got_nodes == want_nodes
        assert got_edges == want_edges
        # igraph reads an absent string attribute as "" (it has no missing
        # string): the nodes without a note have note "" there.
        got_nodes, got_edges = _read_igraph(path)
        assert got_nodes == {s: {"note": "", **d} for s, d in want_nodes.items()}
        assert got_edges == want_edges
    print(f"GraphML round trip: {graphs} graphs, {strings} ids and values, networkx and igraph")


def test_unwritable_characters_and_empty_ids_are_refused_naming_the_row(tmp_path):
    import random

    rng = random.Random(7)
    path = tmp_path / "net.graphml"
    cases = 0
    for c in UNWRITABLE:
        _, _, edges, nodes = _graph(rng, n_nodes=10, n_edges=12)
        row = rng.randrange(edges.num_rows)
        column = rng.choice(["source", "target", "label"])
        values = edges[column].to_pylist()
        values[row] = values[row] + c + "x"
        bad = edges.set_column(edges.column_names.index(column), column, pa.array(values))
        with pytest.raises(ValueError, match=rf"edge row {row + 1}, column {column} .*U\+{ord(c):04X}"):
            dk.write_graphml(bad, path)
        notes = nodes["note"].to_pylist()
        notes[0] = c
        bad_nodes = nodes.set_column(1, "note", pa.array(notes))
        with pytest.raises(ValueError, match=rf"node table row 1, column note .*U\+{ord(c):04X}"):
            dk.write_graphml(edges, path, nodes=bad_nodes, all_nodes=True)
        cases += 2
    edges = pa.table({"a": ["x", "y", ""], "b": ["y", "z", "x"]})
    with pytest.raises(ValueError, match="edge row 3, column a is an empty string"):
        dk.write_graphml(edges, path)
    print(f"GraphML refusals: {cases + 1} cases")
    assert not list(tmp_path.iterdir())


def test_endpoints_missing_from_a_node_table_with_names_are_named_by_their_id(tmp_path):
    edges = pa.table({"a": ["p1", "p2"], "b": ["p2", "p3"]})
    nodes = pa.table({"probe": ["p1"], "name": ["TP53"]})
    path = tmp_path / "net.graphml"
    dk.write_graphml(edges, path, nodes=nodes)
    g = nx.read_graphml(path)
    assert {n: d["name"] for n, d in g.nodes(data=True)} == {"p1": "TP53", "p2": "p2", "p3": "p3"}
