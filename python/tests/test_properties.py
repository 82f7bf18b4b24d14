"""Property tests of the Python functions (Hypothesis): random dtypes,
shapes, NaN and infinite values, empty and one-sample inputs, duplicated
and integer labels, bad indices. Every call equals its reference (pandas'
``corr``, scipy's ``kendalltau``) or raises ``ValueError``, ``IndexError``
or ``TypeError``; none panics. The number of cases of each outcome is
printed in pytest's summary."""

from __future__ import annotations

import collections
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import datafusion_kendall as dk

# Outcomes by function, printed by conftest.py at the end of the run.
OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
USUAL = (ValueError, IndexError, TypeError)


def record(function: str, outcome: str) -> None:
    OUTCOMES[function][outcome] += 1


def tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """scipy's tau-b over the samples both have; NaN for fewer than 2."""
    both = ~(np.isnan(x) | np.isnan(y))
    if both.sum() < 2:
        return math.nan
    with np.errstate(all="ignore"):
        tau = stats.kendalltau(x[both], y[both]).statistic
    return math.nan if tau is None else float(tau)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


@st.composite
def matrices(draw, max_rows=7, max_cols=5, nan=True, inf=True, negative=True):
    """A samples x genes float matrix: small integers (ties) and halves;
    NaN values in about one matrix in three, an infinite value in about
    one in five (so that most calls are valid and compared, not refused)."""
    # Fewer than 2 samples or no gene in about one matrix in six.
    edge = draw(st.integers(0, 5)) == 0
    n = draw(st.integers(0, 1) if edge else st.integers(2, max_rows))
    m = draw(st.integers(0, max_cols) if edge else st.integers(1, max_cols))
    low = -3 if negative else 0
    cells = st.one_of(
        st.integers(low, 3).map(float),
        st.integers(2 * low, 6).map(lambda k: k / 2),
    )
    values = draw(st.lists(cells, min_size=n * m, max_size=n * m))
    x = np.array(values, dtype=np.float64).reshape(n, m)
    if nan and x.size and draw(st.integers(0, 2)) == 0:
        missing = draw(st.lists(st.integers(0, x.size - 1), min_size=1, max_size=max(1, x.size // 4)))
        x.flat[missing] = math.nan
    if inf and x.size and draw(st.integers(0, 4)) == 0:
        x.flat[draw(st.integers(0, x.size - 1))] = draw(st.sampled_from([math.inf, -math.inf]))
    return x


@st.composite
def labels(draw, m: int):
    """Column labels: strings, integers (possibly in another order), or
    either with a duplicate."""
    kind = draw(st.sampled_from(["str", "str", "int", "int", "dup"]))
    if kind == "int":
        return draw(st.permutations(list(range(m))))
    names = [f"g{k}" for k in range(m)]
    if kind == "dup" and m >= 2:
        names[-1] = names[0]
    return names


@SETTINGS
@given(data=st.data())
def test_corr_equals_pandas_or_raises(data):
    x = data.draw(matrices())
    n, m = x.shape
    cols = data.draw(labels(m))
    dtype = data.draw(st.sampled_from(["float64", "float32", "Float64", "int64"]))
    frame = pd.DataFrame(x, columns=cols)
    if dtype == "int64":
        if not np.isfinite(x).all():
            dtype = "Int64" if not np.isinf(x).any() else "float64"
        frame = frame.round() if dtype != "float64" else frame
    frame = frame.astype(dtype)
    min_periods = data.draw(st.integers(1, 3))
    expected = frame.corr(method="kendall", min_periods=min_periods)
    valid = len(set(cols)) == m and n >= 2 and m >= 1 and not np.isinf(x).any()
    try:
        got = dk.corr(frame, square=True, min_periods=min_periods)
    except USUAL as e:
        assert not valid, f"a valid frame was refused: {e}"
        record("corr", "raised")
        return
    got_values, want = got.to_numpy(), expected.to_numpy(dtype=np.float64)
    assert got_values.shape == want.shape
    assert np.allclose(got_values, want, atol=1e-12, equal_nan=True), (got, expected)
    assert list(got.columns) == [str(c) for c in expected.columns]
    record("corr", "equal")


@SETTINGS
@given(data=st.data())
def test_candidate_pairs_equal_scipy_or_raise(data):
    x = data.draw(matrices(inf=False, negative=True))
    n, m = x.shape
    as_frame = data.draw(st.booleans())
    cols = data.draw(labels(m)) if as_frame else list(range(m))
    k = data.draw(st.integers(0, 6))
    # Ids that name no feature (or lie outside an array) in about one call
    # in three.
    wild = data.draw(st.integers(0, 2)) == 0
    if not m:
        ids = st.just("nowhere")
    elif wild:
        ids = st.one_of(st.sampled_from(cols), st.just("nowhere"), st.integers(-1, m + 1))
    else:
        ids = st.sampled_from(cols)
    first = data.draw(st.lists(ids, min_size=k, max_size=k))
    second = data.draw(st.lists(ids, min_size=k, max_size=k))
    source = pd.DataFrame(x, columns=cols) if as_frame else x

    def side(ids):
        whole = all(isinstance(v, int) for v in ids)
        return np.array(ids, dtype=np.int64 if whole else object)

    # The reference: each distinct unordered pair of two different known
    # features, by label (frames) or position (arrays).
    position = {str(c): j for j, c in enumerate(cols)}
    expected = {}
    for a, b in zip(first, second):
        i, j = position.get(str(a)), position.get(str(b))
        if i is None or j is None or i == j:
            continue
        key = (min(i, j), max(i, j))
        expected.setdefault(key, tau_b(x[:, key[0]], x[:, key[1]]))
    duplicated = as_frame and len(set(map(str, cols))) != m
    # Integer positions into an array outside it are an IndexError.
    out_of_range = not as_frame and any(
        all(isinstance(v, int) for v in ids) and any(not 0 <= v < m for v in ids) for ids in (first, second)
    )
    valid = expected and n >= 2 and not duplicated and not out_of_range
    try:
        got = dk.candidate_pairs(source, (side(first), side(second)))
    except USUAL as e:
        assert not valid, f"a valid call was refused: {e}"
        record("candidate_pairs", "raised")
        return
    if duplicated:
        pytest.fail("a frame with duplicated labels was not refused")
    assert len(got) == len(expected), (got, expected)
    for gi, gj, tau in zip(got["gene_i"], got["gene_j"], got["tau"]):
        key = tuple(sorted((position[str(gi)], position[str(gj)])))
        assert same(tau, expected[key]), (gi, gj, tau, expected[key])
    record("candidate_pairs", "equal")


@SETTINGS
@given(data=st.data())
def test_batch_kendall_tau_equals_scipy_or_raises(data):
    rna = data.draw(matrices(nan=False, inf=False, negative=False, max_cols=4))
    n, genes = rna.shape
    peaks = data.draw(st.integers(0, 4))
    atac = np.array(
        data.draw(st.lists(st.integers(0, 2), min_size=n * peaks, max_size=n * peaks)), dtype=np.float64
    ).reshape(n, peaks)
    k = data.draw(st.integers(0, 5))
    # Indices out of range in about one call in three.
    wild = data.draw(st.integers(0, 2)) == 0

    def indices(size):
        within = st.integers(0, size - 1) if size and not wild else st.integers(-1, size)
        return np.array(data.draw(st.lists(within, min_size=k, max_size=k)), dtype=np.int64)

    gi, pi = indices(genes), indices(peaks)
    sparse = data.draw(st.booleans())
    x, y = (sp.csr_matrix(rna), sp.csc_matrix(atac)) if sparse else (rna, atac)
    bad = k and ((gi < 0).any() or (gi >= genes).any() or (pi < 0).any() or (pi >= peaks).any())
    try:
        got = dk.batch_kendall_tau(x, y, gi, pi)
    except USUAL as e:
        assert bad, f"valid indices were refused: {e}"
        record("batch_kendall_tau", "raised")
        return
    assert not bad, "bad indices were not refused"
    expected = [tau_b(rna[:, g], (atac[:, p] != 0).astype(np.float64)) for g, p in zip(gi, pi)]
    assert len(got) == k
    assert all(same(a, b) for a, b in zip(got, expected)), (got, expected)
    record("batch_kendall_tau", "equal")


@SETTINGS
@given(data=st.data())
def test_sparse_table_equals_scipy_or_raises(data):
    x = data.draw(matrices(max_rows=6, max_cols=4))
    n, m = x.shape
    kind = data.draw(st.sampled_from(["csr", "csc", "coo", "dense"]))
    dtype = data.draw(st.sampled_from([np.float64, np.float32]))
    matrix = x.astype(dtype) if kind == "dense" else sp.coo_matrix(x.astype(dtype)).asformat(kind)
    finite = np.isfinite(x).all()
    try:
        table = dk.sparse_table(matrix)
    except USUAL as e:
        assert not finite, f"a finite matrix was refused: {e}"
        record("sparse_table", "raised")
        return
    assert finite, "a matrix with NaN or infinite values was accepted"
    ctx = dk.context()
    ctx.register_table("t", table)
    try:
        got = ctx.sql("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('t')").to_pandas()
    except Exception as e:  # the datafusion package's error type for SQL
        assert n < 2 and "at least 2" in str(e), e
        record("sparse_table", "refused by the query")
        return
    dense = x.astype(dtype).astype(np.float64)
    assert len(got) == m * (m - 1) // 2
    for gi, gj, tau in zip(got["gene_i"], got["gene_j"], got["tau"]):
        want = tau_b(dense[:, int(gi)], dense[:, int(gj)])
        assert same(tau, want), (gi, gj, tau, want)
    record("sparse_table", "equal")
