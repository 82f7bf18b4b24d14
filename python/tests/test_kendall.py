"""datafusion_kendall from Python, against scipy and pandas.

References: tests/data/*_reference*.csv at the top of the repository are
scipy's ``kendalltau`` for the same files (see tests/data/README.md); the
in-memory tests compare with ``pandas.DataFrame.corr(method='kendall')`` and
``scipy.stats.kendalltau`` computed here.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import datafusion
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

import datafusion_kendall as dk

REPO = Path(__file__).resolve().parents[2]
TIES = REPO / "tests" / "data" / "bladder_ties.parquet"
MISSING = REPO / "tests" / "data" / "bladder_missing.parquet"
TENX_DENSE = REPO / "data" / "tenx_demo_dense.parquet"
TOL = 1e-12


def reference(name: str) -> pd.DataFrame:
    return pd.read_csv(REPO / "tests" / "data" / name, keep_default_na=True)


def assert_close(ours: pd.DataFrame, ref: pd.DataFrame, columns: list[str], ref_columns=None):
    """Same pairs, and every value within TOL (NaN where the reference is NaN)."""
    ref_columns = ref_columns or columns
    merged = ours.merge(ref, on=["gene_i", "gene_j"], how="outer", indicator=True,
                        suffixes=("", "_ref"))
    assert (merged["_merge"] == "both").all(), merged[merged["_merge"] != "both"].head()
    assert len(merged) == len(ref)
    for ours_col, ref_col in zip(columns, ref_columns):
        ref_name = ref_col if ref_col not in columns or ref_col != ours_col else ref_col + "_ref"
        a = merged[ours_col].to_numpy(dtype=float, na_value=np.nan)
        b = merged[ref_name].to_numpy(dtype=float, na_value=np.nan)
        assert np.array_equal(np.isnan(a), np.isnan(b)), f"{ours_col}: NaN pattern differs"
        ok = ~np.isnan(a)
        worst = np.max(np.abs(a[ok] - b[ok]), initial=0.0)
        assert worst <= TOL, f"{ours_col}: max |diff| {worst}"


def genes_as_columns(path: Path) -> pd.DataFrame:
    """A genes-as-rows Parquet file as pandas' shape: samples x genes."""
    frame = pq.read_table(path).to_pandas()
    return frame.set_index(frame.columns[0]).T


def long_pairs_from_square(square: pd.DataFrame) -> pd.DataFrame:
    genes = list(square.columns)
    rows = [(genes[i], genes[j], square.iat[i, j])
            for i in range(len(genes)) for j in range(i + 1, len(genes))]
    return pd.DataFrame(rows, columns=["gene_i", "gene_j", "tau"])


# --- SQL ---------------------------------------------------------------------

def test_sql_on_a_file_equals_scipy():
    ctx = dk.context()
    ours = ctx.sql(
        f"SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('{TIES}')"
    ).to_pandas()
    assert_close(ours, reference("bladder_ties_reference.csv"), ["tau", "p_value"])


@pytest.mark.parametrize("variant,ref", [("a", "bladder_ties_reference_a.csv"),
                                         ("c", "bladder_ties_reference_c.csv")])
def test_set_variant_takes_effect(variant, ref):
    ctx = dk.context()
    ctx.sql(f"SET kendall.variant = '{variant}'")
    shown = ctx.sql("SHOW kendall.variant").to_pandas()
    assert shown.iloc[0, 1] == variant
    ours = ctx.sql(f"SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{TIES}')").to_pandas()
    assert_close(ours, reference(ref), ["tau"])


def test_bad_option_value_gives_our_message():
    ctx = dk.context()
    ctx.sql("SET kendall.variant = 'z'")
    with pytest.raises(Exception, match="kendall.variant"):
        ctx.sql(f"SELECT count(*) FROM kendall_all_pairs('{TIES}')").collect()


def test_register_on_an_existing_context_uses_defaults():
    ctx = datafusion.SessionContext()
    dk.register(ctx)
    n = ctx.sql(f"SELECT count(*) AS n FROM kendall_all_pairs('{TIES}')").to_pandas()
    assert n["n"][0] == 61 * 60 // 2
    with pytest.raises(Exception, match="kendall"):
        ctx.sql("SET kendall.variant = 'c'")


def test_registered_pandas_frame_is_an_input():
    ctx = dk.context()
    frame = pq.read_table(TIES).to_pandas()
    ctx.from_pandas(frame, name="expr")
    ours = ctx.sql("SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('expr') "
                   "WHERE p_value < 1e-6 OR p_value >= 1e-6 OR p_value IS NULL").to_pandas()
    assert_close(ours, reference("bladder_ties_reference.csv"), ["tau", "p_value"])


def test_dictionary_gene_ids_reach_pandas_as_categories():
    ctx = dk.context()
    ctx.sql("SET kendall.gene_ids = 'dictionary'")
    got = ctx.sql(f"SELECT gene_i, gene_j, tau, p_value FROM kendall_all_pairs('{TIES}')").to_pandas()
    assert isinstance(got["gene_i"].dtype, pd.CategoricalDtype)
    got = got.astype({"gene_i": str, "gene_j": str})
    assert_close(got, reference("bladder_ties_reference.csv"), ["tau", "p_value"])


def test_other_table_functions_are_registered():
    ctx = dk.context()
    top = ctx.sql(f"SELECT count(*) AS n FROM kendall_top_partners('{TIES}', 3)").to_pandas()
    # CONSTANT_PROBE's taus are all NaN: it has no partners.
    assert top["n"][0] == 60 * 3


def test_missing_file_names_the_file():
    ctx = dk.context()
    with pytest.raises(Exception, match="no_such_file.parquet"):
        ctx.sql("SELECT * FROM kendall_all_pairs('no_such_file.parquet')").collect()


# --- corr() ------------------------------------------------------------------

def test_corr_of_a_frame_equals_pandas():
    frame = genes_as_columns(TIES).iloc[:, :30]
    ours = dk.corr(frame, square=True)
    theirs = frame.corr(method="kendall")
    a, b = ours.to_numpy(), theirs.to_numpy()
    assert list(ours.columns) == list(theirs.columns)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.nanmax(np.abs(a - b)) <= TOL


def test_corr_long_equals_scipy_with_p_values():
    frame = genes_as_columns(TIES)
    ours = dk.corr(frame, p_values=True)
    assert list(ours.columns) == ["gene_i", "gene_j", "tau", "p_value", "n"]
    assert_close(ours, reference("bladder_ties_reference.csv"), ["tau", "p_value"])
    assert (ours["n"] == 57).all()


def test_corr_threshold_filters_in_the_engine():
    frame = genes_as_columns(TIES)
    ref = reference("bladder_ties_reference.csv")
    ours = dk.corr(frame, threshold=0.5)
    kept = ref[np.abs(ref["tau"]) >= 0.5]
    assert_close(ours, kept, ["tau"])


def test_corr_missing_values_and_min_periods_equal_pandas():
    frame = genes_as_columns(MISSING)
    ours = dk.corr(frame, min_periods=30, square=True)
    theirs = frame.corr(method="kendall", min_periods=30)
    a, b = ours.to_numpy(), theirs.to_numpy()
    off = ~np.eye(len(a), dtype=bool)
    assert np.array_equal(np.isnan(a[off]), np.isnan(b[off]))
    assert np.nanmax(np.abs(a[off] - b[off])) <= TOL
    ref = reference("bladder_missing_reference.csv")
    long = dk.corr(frame, min_periods=30)
    assert_close(long, ref, ["tau"], ["tau_min30"])


def test_corr_alternative_continuity_and_nan_policy_equal_scipy_and_r():
    frame = genes_as_columns(TIES)
    ours = dk.corr(frame, p_values=True, alternative="greater")
    assert_close(ours, reference("parity_scipy_ties.csv"), ["p_value"], ["p_greater"])
    ours = dk.corr(frame, p_values=True, alternative="less", continuity=True)
    assert_close(ours, reference("parity_r_ties.csv"), ["p_value"], ["p_cont_less"])
    # scipy's default nan_policy: NaN for a pair touching a gene with a gap.
    ours = dk.corr(genes_as_columns(MISSING), p_values=True, nan_policy="propagate")
    assert_close(ours, reference("parity_scipy_missing.csv"), ["tau", "p_value"],
                 ["tau_propagate", "p_propagate"])
    # R's use="complete.obs".
    listwise = genes_as_columns(REPO / "tests" / "data" / "listwise_missing.parquet")
    ours = dk.corr(listwise, p_values=True, nan_policy="complete")
    assert_close(ours, reference("parity_r_listwise.csv"), ["tau", "p_value"])
    assert (ours["n"] == 19).all()
    with pytest.raises(ValueError, match="nan_policy must be"):
        dk.corr(frame, nan_policy="drop")
    with pytest.raises(ValueError, match="alternative must be"):
        dk.corr(frame, alternative="bigger")
    with pytest.raises(ValueError, match="continuity must be"):
        dk.corr(frame, continuity="yes")
    with pytest.raises(Exception, match="kendall.missing"):
        dk.corr(genes_as_columns(MISSING), nan_policy="raise")


@pytest.mark.parametrize("method,ref", [("a", "bladder_ties_reference_a.csv"),
                                        ("c", "bladder_ties_reference_c.csv")])
def test_corr_methods(method, ref):
    ours = dk.corr(genes_as_columns(TIES), method=method)
    assert_close(ours, reference(ref), ["tau"])


def test_corr_of_numpy_and_arrow_and_rows():
    frame = genes_as_columns(TIES).iloc[:, :20]
    expected = frame.corr(method="kendall").to_numpy()
    by_array = dk.corr(frame.to_numpy(), square=True)
    assert list(by_array.columns) == [str(i) for i in range(20)]
    assert np.nanmax(np.abs(by_array.to_numpy() - expected)) <= TOL
    by_rows = dk.corr(frame.to_numpy().T, genes="rows", square=True)
    assert np.nanmax(np.abs(by_rows.to_numpy() - expected)) <= TOL
    table = pa.Table.from_pandas(frame, preserve_index=False)
    by_table = dk.corr(table, square=True)
    assert np.nanmax(np.abs(by_table.to_numpy() - expected)) <= TOL
    gene_rows = pq.read_table(TIES).to_pandas().iloc[:20]
    by_frame_rows = dk.corr(gene_rows, genes="rows", square=True)
    assert list(by_frame_rows.columns) == list(frame.columns)
    assert np.nanmax(np.abs(by_frame_rows.to_numpy() - expected)) <= TOL


def test_corr_keeps_integers_exact_and_nullable_values_missing():
    # 2^53 and 2^53 + 1 are one float64 but two integers: no tie in int64.
    big = 2**53
    ints = pd.DataFrame({"a": [big, big + 1, big + 2], "b": [1, 2, 3]})
    assert dk.corr(ints)["tau"].tolist() == [1.0]
    nullable = pd.DataFrame({"a": pd.array([1, 2, None, 4], dtype="Int64"),
                             "b": [1.0, 2.0, 3.0, 5.0]})
    got = dk.corr(nullable, p_values=True)
    assert got["tau"].tolist() == [1.0] and got["n"].tolist() == [3]


def scipy_pairs(x: np.ndarray, ids: list[str]) -> pd.DataFrame:
    rows = []
    for i in range(x.shape[1]):
        for j in range(i + 1, x.shape[1]):
            rows.append((ids[i], ids[j], stats.kendalltau(x[:, i], x[:, j]).statistic))
    return pd.DataFrame(rows, columns=["gene_i", "gene_j", "tau"])


@pytest.mark.parametrize("sparse", [False, True])
def test_corr_of_anndata_equals_scipy(sparse):
    anndata = pytest.importorskip("anndata")
    import scipy.sparse as sp

    genes = pq.read_table(TENX_DENSE).to_pandas()
    ids = [str(g) for g in genes.iloc[:, 0]]
    x = genes.iloc[:, 1:].to_numpy(dtype=np.float32).T  # cells x genes
    adata = anndata.AnnData(X=sp.csr_matrix(x) if sparse else x)
    adata.var_names = ids
    ours = dk.corr(adata)
    assert_close(ours, scipy_pairs(x.astype(np.float64), ids), ["tau"])


def test_a_10x_directory_reads_as_its_dense_matrix():
    # Through the FFI the directory's scan comes back as a foreign plan; the
    # engine still reads the matrix itself (no triples).
    ctx = dk.context()
    query = "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}') ORDER BY gene_i, gene_j"
    tenx = ctx.sql(query.format(REPO / "data" / "tenx_demo")).to_pandas()
    dense = ctx.sql(query.format(TENX_DENSE)).to_pandas()
    assert len(tenx) == 40 * 39 // 2
    pd.testing.assert_frame_equal(tenx, dense)


def test_bad_input_raises_our_message():
    # The engine's messages, through the FFI, as Python exceptions.
    with pytest.raises(Exception, match="needs at least 2"):
        dk.corr(pd.DataFrame({"a": [1.0], "b": [2.0]}))
    dup = pd.DataFrame({"gene": ["g1", "g1"], "s1": [1.0, 2.0], "s2": [2.0, 1.0]})
    with pytest.raises(Exception, match="duplicate gene id"):
        dk.corr(dup, genes="rows")
    with pytest.raises(Exception, match="'s1'"):
        dk.corr(pd.DataFrame({"gene": ["g1", "g2"], "s1": ["x", "y"], "s2": [2.0, 1.0]}),
                genes="rows")
    # corr()'s own checks, before anything runs.
    with pytest.raises(ValueError, match="column 'b' has type"):
        dk.corr(pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]}))
    with pytest.raises(ValueError, match="finite"):
        dk.corr(pd.DataFrame({"a": [1.0, 2.0], "b": [2.0, 1.0]}), threshold=float("inf"))
    with pytest.raises(ValueError, match="method"):
        dk.corr(pd.DataFrame({"a": [1.0, 2.0], "b": [2.0, 1.0]}), method="pearson")
    with pytest.raises(TypeError, match="corr\\(\\) takes"):
        dk.corr([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="duplicate"):
        dk.corr(pd.DataFrame([[1.0, 2.0], [2.0, 1.0]], columns=["g", "g"]))


def test_progress_bar_counts_every_pair(capsys):
    pytest.importorskip("tqdm")
    dk.corr(genes_as_columns(TIES), progress=True)
    err = capsys.readouterr().err
    assert "kendall" in err and "1.83k/1.83k" in err, err


# --- versions and cancellation ---------------------------------------------

def test_versions():
    assert dk.DATAFUSION_MAJOR == int(datafusion.__version__.split(".")[0])
    assert set(dk.FUNCTIONS) == {"kendall_all_pairs", "kendall_top_partners",
                                 "kendall_cross_pairs", "kendall_candidate_pairs",
                                 "kendall_candidate_taus"}
    cargo = (REPO / "Cargo.toml").read_text()
    assert f'version = "{dk.__version__}"' in cargo
    # The wheel pins the datafusion package to the major it was built on.
    m = dk.DATAFUSION_MAJOR
    assert f'"datafusion>={m},<{m + 1}"' in (REPO / "python" / "pyproject.toml").read_text()


def test_mismatched_datafusion_major_is_refused(monkeypatch):
    monkeypatch.setattr(datafusion, "__version__", f"{dk.DATAFUSION_MAJOR + 1}.0.0")
    with pytest.raises(ImportError, match="only stable within one major"):
        importlib.reload(dk)
    monkeypatch.undo()
    importlib.reload(dk)


def test_ctrl_c_stops_a_long_call():
    """SIGINT (what Ctrl-C in a notebook sends) raises KeyboardInterrupt in
    the middle of a long corr() and the process ends promptly."""
    script = textwrap.dedent(
        """
        import signal, sys, time, numpy as np, datafusion_kendall as dk
        # Python leaves SIGINT ignored when it starts so (a suite run in the
        # background of a non-interactive shell): Ctrl-C's handler back.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        rng = np.random.default_rng(1)
        x = rng.normal(size=(3000, 1500))
        print("started", flush=True)
        t = time.monotonic()
        try:
            dk.corr(x, kernel="naive", threshold=0.99)
        except KeyboardInterrupt:
            print(f"interrupted after {time.monotonic() - t:.1f}s", flush=True)
            # The computation stopped: no scan is left, or its count of
            # pairs no longer moves.
            time.sleep(0.5)
            before = dk._native.progress()
            time.sleep(1.0)
            after = dk._native.progress()
            print(f"progress {before} {after}", flush=True)
            sys.exit(3 if after is None or after == before else 4)
        print("finished", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, err = proc.communicate(timeout=30)
        waited = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, (proc.returncode, out, err)
    assert "interrupted" in out
    assert waited < 10, f"took {waited:.1f}s to stop"


def test_readme_example_runs():
    """python/examples/quickstart.py is the README's example, verbatim."""
    done = subprocess.run([sys.executable, "python/examples/quickstart.py"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "17 pairs with |tau_c| >= 0.8" in done.stdout
    assert "pairs with p < 1e-6" in done.stdout
    readme = (REPO / "README.md").read_text()
    example = (REPO / "python" / "examples" / "quickstart.py").read_text()
    body = example.split('"""', 2)[2].strip()
    assert body in readme, "README's Python example differs from python/examples/quickstart.py"
