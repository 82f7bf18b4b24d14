#!/usr/bin/env python3
"""Build the demo and test Parquet files of datafusion-kendall from the bladder matrix.

Source: ``bladder_hgu133a.parquet`` -- 22,283 Affymetrix HG-U133A probe sets x 57
bladder samples (RMA, log2) from the Bioconductor package ``bladderbatch``; one row
per probe set, column ``gene_id`` (Utf8 string) first, then 57 Float64 sample
columns (see ../shared/data/README.md).

Usage (from anywhere; output paths are always relative to the repository root):

    python3 scripts/make_data.py [SOURCE.parquet] [--references] [--reference-tool PATH]

SOURCE defaults to ``../shared/data/bladder_hgu133a.parquet`` relative to the
repository root (a SOURCE given on the command line is taken relative to the
current directory). Writes, with pyarrow, zstd compression, one row group, and the
source's column names, order and types unchanged (PLAIN encoding, no dictionary):

1. ``data/demo_expression.parquet`` -- the first 2,000 probe sets of the source
   (file order), all 57 samples, values unchanged.
2. ``tests/data/bladder_ties.parquet`` -- the first 60 probe sets of the source,
   every value rounded to 1 decimal place with ``numpy.round(x, 1)`` (this creates
   many tied values within each gene), followed by one extra row ``CONSTANT_PROBE``
   whose 57 values are all 5.0 (so tau-b is NaN for each of its pairs). 61 rows.

It then prints the commands that regenerate the reference CSVs under tests/data/.
With ``--references`` it also runs them (needs scipy; the shared scipy tool defaults
to ``../shared/tools/kendall_reference.py`` relative to the repository root):

    python3 ../shared/tools/kendall_reference.py tests/data/bladder_ties.parquet 61 tests/data/bladder_ties_reference.csv
    python3 ../shared/tools/kendall_reference.py data/demo_expression.parquet 120 tests/data/demo_head_reference.csv
    python3 scripts/kendall_tau_a_reference.py tests/data/bladder_ties.parquet 61 tests/data/bladder_ties_reference_a.csv

The script is deterministic: the same source file and pyarrow version give
byte-identical outputs (no timestamps or random numbers are involved).
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO_ROOT / ".." / "shared" / "data" / "bladder_hgu133a.parquet"
DEFAULT_TOOL = REPO_ROOT / ".." / "shared" / "tools" / "kendall_reference.py"

GENE_COLUMN = "gene_id"
DEMO_ROWS = 2000
TIES_ROWS = 60
TIES_DECIMALS = 1
CONSTANT_GENE = "CONSTANT_PROBE"
CONSTANT_VALUE = 5.0

DEMO_OUT = "data/demo_expression.parquet"
TIES_OUT = "tests/data/bladder_ties.parquet"


def reference_commands(tool: str) -> list[list[str]]:
    """The commands (run from the repository root) that make the reference CSVs."""
    return [
        ["python3", tool, TIES_OUT, "61", "tests/data/bladder_ties_reference.csv"],
        ["python3", tool, DEMO_OUT, "120", "tests/data/demo_head_reference.csv"],
        ["python3", "scripts/kendall_tau_a_reference.py", TIES_OUT, "61",
         "tests/data/bladder_ties_reference_a.csv"],
    ]


def write(table: pa.Table, rel_path: str) -> None:
    out = REPO_ROOT / rel_path
    out.parent.mkdir(parents=True, exist_ok=True)
    # PLAIN encoding (no dictionary: the float values are essentially all distinct,
    # so a dictionary only adds size) + zstd; readable by any Parquet reader.
    pq.write_table(table, out, compression="zstd", use_dictionary=False,
                   row_group_size=len(table) or None)
    print(f"wrote {rel_path}: {table.num_rows} rows x {table.num_columns} columns, "
          f"{out.stat().st_size:,} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="?", default=str(DEFAULT_SOURCE),
                    help="bladder_hgu133a.parquet (default: %(default)s)")
    ap.add_argument("--references", action="store_true",
                    help="also run the reference commands that write tests/data/*.csv")
    ap.add_argument("--reference-tool", default=os.path.relpath(DEFAULT_TOOL, REPO_ROOT),
                    help="scipy reference tool, relative to the repo root or absolute "
                         "(default: %(default)s)")
    args = ap.parse_args()

    source = pq.read_table(args.source)
    schema = source.schema.remove_metadata()
    names = schema.names
    if names[0] != GENE_COLUMN or not pa.types.is_string(schema.field(0).type):
        sys.exit(f"expected first column {GENE_COLUMN!r} of type string, got {schema.field(0)}")
    if not all(pa.types.is_float64(f.type) for f in list(schema)[1:]):
        sys.exit("expected every sample column to be Float64")
    source = source.replace_schema_metadata(None)

    # 1. demo: first DEMO_ROWS probe sets, unchanged.
    demo = source.slice(0, DEMO_ROWS).combine_chunks()
    write(demo, DEMO_OUT)

    # 2. ties: first TIES_ROWS probe sets rounded, plus one constant gene appended.
    head = source.slice(0, TIES_ROWS).combine_chunks()
    genes = head.column(GENE_COLUMN).to_pylist() + [CONSTANT_GENE]
    columns = [pa.array(genes, type=schema.field(0).type)]
    for field in list(schema)[1:]:
        values = head.column(field.name).to_numpy()
        rounded = np.round(values, TIES_DECIMALS)
        columns.append(pa.array(np.append(rounded, CONSTANT_VALUE), type=field.type))
    ties = pa.Table.from_arrays(columns, schema=schema)
    write(ties, TIES_OUT)

    cmds = reference_commands(args.reference_tool)
    print("\nreference CSVs (run from the repository root):")
    for cmd in cmds:
        print("  " + " ".join(cmd))
    if args.references:
        for cmd in cmds:
            subprocess.run(cmd, cwd=REPO_ROOT, check=True)
            print(f"ran: {' '.join(cmd)}")


if __name__ == "__main__":
    main()
