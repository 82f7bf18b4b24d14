"""``write_graphml()``: a network as a GraphML file (Cytoscape, igraph,
networkx, Gephi), written by the Rust crate's streaming GraphML writer."""

from __future__ import annotations

import os
from typing import Any

from . import _native


def _arrow(data: Any, what: str) -> Any:
    """``data`` as an object with ``__arrow_c_stream__``."""
    if hasattr(data, "__arrow_c_stream__"):
        return data
    try:
        import pandas as pd
        import pyarrow as pa
    except ImportError:  # pragma: no cover - both are dependencies
        pd = pa = None
    if pd is not None and isinstance(data, pd.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"{what} must be a datafusion DataFrame, a pyarrow Table or a pandas "
        f"DataFrame, not {type(data).__name__}"
    )


def write_graphml(
    edges: Any,
    path: str | os.PathLike[str],
    nodes: Any = None,
    node_key: str | None = None,
    directed: bool = False,
    all_nodes: bool = False,
) -> int:
    """Write ``edges`` to the GraphML file ``path``; return the number of edges.

    ``edges`` is a datafusion DataFrame (streamed: its rows are written as
    the query computes them, never held in memory), a pyarrow Table or a
    pandas DataFrame: its first two columns are the endpoints, every other
    column an edge attribute (``tau``, ``p_value``, ``q_value``, ...). Nodes
    are the endpoints, with ``name`` and ``degree``; ``nodes`` (a frame or
    table) adds its columns as node attributes, joined on ``node_key``
    (default: its first column), and ``all_nodes=True`` also writes its rows
    that have no edge. ``directed=True`` writes a directed graph.
    """
    if node_key is not None and nodes is None:
        raise ValueError("node_key names a column of `nodes`: give `nodes` too")
    return _native.write_graphml(
        _arrow(edges, "edges"),
        os.fspath(path),
        None if nodes is None else _arrow(nodes, "nodes"),
        node_key,
        bool(directed),
        bool(all_nodes),
    )
