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
