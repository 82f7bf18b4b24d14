"""Metamorphic tests at the Python doors: for a pandas frame registered on
the context and a sparse table (``dk.sparse_table``), a view that keeps
some genes, one that keeps some samples, one that changes values, and a
``CREATE TABLE AS`` copy give the same rows as the same data written to
Parquet and read back — through ``kendall_all_pairs``, as the second input
of ``kendall_cross_pairs``, and as the matrix and the second matrix of
``kendall_candidate_pairs``. The number of cases is printed in pytest's
summary."""

from __future__ import annotations

import collections
import math
import re

import numpy as np
import pandas as pd
import scipy.sparse as sp

import datafusion_kendall as dk

OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

COLUMNS = "gene_i, gene_j, tau, p_value, n"


def rows(ctx, sql: str) -> list:
    """The rows of ``sql``, each pair oriented, sorted, floats as exact
    values (NaN as a marker)."""
    frame = ctx.sql(sql).to_pandas()
    out = []
    for gi, gj, tau, p, n in frame.itertuples(index=False):
        gi, gj = sorted((str(gi), str(gj)))
        key = lambda v: "nan" if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)  # noqa: E731
        out.append((gi, gj, key(tau), key(p), int(n)))
    return sorted(out, key=repr)


def frame_input(seed: int = 11):
    """Genes as rows: a gene_id column and 12 sample columns, ties and
    missing values."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=(10, 12)).astype(np.float64)
    values[rng.random(values.shape) < 0.1] = np.nan
    frame = pd.DataFrame(values, columns=[f"s{k}" for k in range(12)])
    frame.insert(0, "gene_id", [f"g{k}" for k in range(10)])
    return frame


def sparse_input(seed: int = 12):
    """A cells x genes scipy matrix of counts, mostly zeros."""
    rng = np.random.default_rng(seed)
    x = rng.negative_binomial(1, 0.6, size=(30, 8)).astype(np.float64)
    return sp.csc_matrix(x)


def derivations(table: str, layout: str, genes: list, samples: list) -> list:
    quoted = lambda ids: ", ".join(f"'{g}'" for g in ids)  # noqa: E731
    kept_genes, kept_samples = genes[::2], [s for k, s in enumerate(samples) if k % 3 != 1]
    negated = quoted(genes[: len(genes) // 3])
    if layout == "rows":
        changed = ", ".join(
            f"CASE WHEN gene_id IN ({negated}) THEN -{s} ELSE {s} * 3 + 1 END AS {s}" for s in samples
        )
        made = [
            f"SELECT * FROM {table} WHERE gene_id IN ({quoted(kept_genes)})",
            f"SELECT gene_id, {', '.join(kept_samples)} FROM {table}",
            f"SELECT gene_id, {changed} FROM {table}",
        ]
    else:
        made = [
            f"SELECT * FROM {table} WHERE gene IN ({quoted(kept_genes)})",
            f"SELECT * FROM {table} WHERE sample IN ({quoted(kept_samples)})",
            f"SELECT gene, sample, CASE WHEN gene IN ({negated}) THEN -value "
            f"ELSE value * 3 + 1 END AS value FROM {table}",
        ]
    views = [(f"d_{what}", f"CREATE VIEW d_{what} AS {sql}") for what, sql in zip(("genes", "samples", "values"), made)]
    return views + [("d_copy", f"CREATE TABLE d_copy AS SELECT * FROM {table}")]


def test_derived_python_tables_equal_their_parquet_copies(tmp_path):
    x = sparse_input()
    frame = frame_input()
    kinds = [
        ("pandas frame", "frame", "rows", list(frame["gene_id"]), list(frame.columns[1:]), []),
        (
            "sparse table",
            "rna",
            "long",
            [str(g) for g in range(x.shape[1])],
            [str(c) for c in range(x.shape[0])],
            ["SET kendall.layout = 'long'", "SET kendall.absent = 'zero'"],
        ),
    ]
    for name, table, layout, genes, samples, settings in kinds:
        ctx = dk.context()
        ctx.from_pandas(frame, name="frame")
        ctx.register_table("rna", dk.sparse_table(x))
        for s in settings:
            ctx.sql(s)
        a, b, c = genes[0], genes[2], genes[4]
        ctx.sql(f"CREATE VIEW cand AS VALUES ('{a}', '{b}'), ('{b}', '{c}'), ('{a}', '{a}')")
        doors = {
            "all pairs": f"SELECT {COLUMNS} FROM kendall_all_pairs({{d}})",
            "cross pairs (right)": f"SELECT {COLUMNS} FROM kendall_cross_pairs('{table}', {{d}})",
            "candidate pairs (matrix)": f"SELECT {COLUMNS} FROM kendall_candidate_pairs('cand', {{d}})",
            "candidate pairs (right)": (
                f"SELECT {COLUMNS} FROM kendall_candidate_pairs('cand', '{table}', {{d}})"
            ),
        }
        for view, statement in derivations(table, layout, genes, samples):
            ctx.sql(statement).collect()
            copy = tmp_path / f"{table}-{view}.parquet"
            ctx.sql(f"COPY (SELECT * FROM {view}) TO '{copy}' STORED AS PARQUET").collect()
            for door, sql in doors.items():
                derived = rows(ctx, sql.replace("{d}", f"'{view}'"))
                parquet = rows(ctx, sql.replace("{d}", f"'{copy}'"))
                assert derived, (name, view, door)
                assert derived == parquet, (name, view, door)
                OUTCOMES[name][door] += 1
    assert sum(sum(c.values()) for c in OUTCOMES.values()) == 2 * 4 * 4


def in_place(ctx, table: str) -> int:
    """How many inputs ``kendall_all_pairs(table)`` read in place, as
    ``EXPLAIN ANALYZE`` counts them."""
    plan = ctx.sql(f"EXPLAIN ANALYZE SELECT count(*) FROM kendall_all_pairs('{table}')").to_pandas()
    text = "\n".join(str(v) for v in plan.to_numpy().ravel())
    found = re.findall(r"inputs_read_in_place=(\d+)", text)
    assert found, text
    return sum(int(k) for k in found)


def test_a_sparse_table_comes_back_through_the_ffi_as_itself():
    """The table and its plan cross the FFI twice (to the host's
    ``SessionContext`` and back to the table function): they come back as
    this library's own (``datafusion-ffi`` unwraps a handle of the library
    that made it), so the table is read in place, as is a view that is the
    table as it is; a view that filters it and a copy are read as their
    rows."""
    ctx = dk.context()
    ctx.register_table("rna", dk.sparse_table(sparse_input()))
    ctx.sql("SET kendall.layout = 'long'")
    ctx.sql("SET kendall.absent = 'zero'")
    ctx.sql("CREATE VIEW rna_all AS SELECT * FROM rna").collect()
    ctx.sql("CREATE VIEW rna_two AS SELECT * FROM rna WHERE gene IN ('0', '1')").collect()
    ctx.sql("CREATE TABLE rna_copy AS SELECT * FROM rna").collect()
    counted = {t: in_place(ctx, t) for t in ("rna", "rna_all", "rna_two", "rna_copy")}
    assert counted == {"rna": 1, "rna_all": 1, "rna_two": 0, "rna_copy": 0}, counted
