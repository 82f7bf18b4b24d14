"""Two queries at once in one Python process.

Two threads sharing a ``SessionContext`` get the rows they get alone; a
query interrupted (Ctrl-C) or dropped mid-stream leaves the other running to
its own rows; two ``corr(progress=True)`` calls at once each have a bar with
its own total. The queries use the naive kernel on the demo's first 800
genes (319,600 pairs: about a second on an idle core, more on a loaded one),
so that queries started together really overlap; each test asserts that
they did (both computing at the same moment).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import datafusion_kendall as dk

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo_expression.parquet"
GENES = 800
PAIRS = GENES * (GENES - 1) // 2

STRONG = (
    "SELECT gene_i, gene_j, tau FROM kendall_all_pairs('{}') "
    "WHERE abs(tau) >= 0.8 ORDER BY gene_i, gene_j"
)
ANTI = (
    "SELECT gene_j, gene_i, tau, p_value, n FROM kendall_all_pairs('{}') "
    "WHERE tau <= -0.5 ORDER BY gene_j, gene_i"
)



def head(tmp_path: Path) -> str:
    """The demo's first GENES genes, as a Parquet file."""
    path = tmp_path / "head.parquet"
    pq.write_table(pq.read_table(DEMO).slice(0, GENES), path)
    return str(path)


# The setup of a shared context, also run by the Ctrl-C test's child process:
# the file FILE under two names (progress by source tells the queries apart).
SETUP = """
import datafusion_kendall as dk
ctx = dk.context()
ctx.register_parquet("demo_a", FILE)
ctx.register_parquet("demo_b", FILE)
ctx.sql("SET kendall.kernel = 'naive'")


def midway(source):
    state = dk._native.progress(source)
    return state is not None and state[1] is not None and 0 < state[0] < state[1]
"""


def shared_context(tmp_path):
    scope: dict = {"FILE": head(tmp_path)}
    exec(SETUP, scope)
    return scope["ctx"], scope["midway"]


def run_threads(targets, watch):
    """Runs each target in a thread of its own; returns whether ``watch()``
    held at some moment while any ran, and the targets' exceptions."""
    errors: list[BaseException] = []

    def guarded(target):
        def run():
            try:
                target()
            except BaseException as e:  # noqa: BLE001 - reported to the test
                errors.append(e)
        return run

    threads = [threading.Thread(target=guarded(t)) for t in targets]
    for t in threads:
        t.start()
    seen = False
    start = time.monotonic()
    while any(t.is_alive() for t in threads):
        seen = seen or watch()
        assert time.monotonic() - start < 300, "hung"
        time.sleep(0.005)
    for t in threads:
        t.join()
    return seen, errors


def test_two_threads_sharing_a_context_give_the_rows_they_give_alone(tmp_path):
    ctx, midway = shared_context(tmp_path)
    queries = {"demo_a": STRONG.format("demo_a"), "demo_b": ANTI.format("demo_b")}
    alone = {k: ctx.sql(q).to_arrow_table() for k, q in queries.items()}
    assert all(t.num_rows > 0 for t in alone.values())
    results = {}

    def query(k):
        return lambda: results.__setitem__(k, ctx.sql(queries[k]).to_arrow_table())

    started = time.monotonic()
    overlapped, errors = run_threads(
        [query(k) for k in queries], lambda: midway("demo_a") and midway("demo_b")
    )
    print(f"two threads: {time.monotonic() - started:.1f}s")
    assert not errors, errors
    assert overlapped, "the two queries never computed at the same time"
    for k in queries:
        assert results[k].equals(alone[k]), k


def test_a_thread_dropping_its_stream_leaves_the_other_to_finish(tmp_path):
    ctx, midway = shared_context(tmp_path)
    b_sql = STRONG.format("demo_b")
    alone = ctx.sql(b_sql).to_arrow_table()
    stop = threading.Event()
    a_rows = []
    results = {}

    def a():
        # Reads every pair as it comes, until told to stop: then drops its
        # stream mid-way.
        stream = ctx.sql("SELECT gene_i, gene_j, tau FROM kendall_all_pairs('demo_a')") \
            .execute_stream()
        for batch in stream:
            a_rows.append(batch.to_pyarrow().num_rows)
            if stop.is_set():
                break
        del stream

    def b():
        results["b"] = ctx.sql(b_sql).to_arrow_table()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    start = time.monotonic()
    while not (midway("demo_a") and midway("demo_b")):
        assert threads[0].is_alive(), "A ended (or failed) before B was under way"
        assert time.monotonic() - start < 120, "the two queries never computed at once"
        time.sleep(0.005)
    stop.set()
    threads[0].join(timeout=60)
    assert not threads[0].is_alive()
    assert threads[1].is_alive(), "B was not running when A was dropped"
    # A computes no more pairs: its plan is gone, or its count stands still.
    time.sleep(0.3)
    stopped = dk._native.progress("demo_a")
    time.sleep(0.7)
    assert dk._native.progress("demo_a") in (None, stopped), stopped
    assert sum(a_rows) < PAIRS
    threads[1].join()
    assert results["b"].equals(alone)


def test_ctrl_c_stops_one_thread_s_query_and_leaves_the_other(tmp_path):
    """SIGINT interrupts the main thread's query (KeyboardInterrupt) while
    another thread's query on the same context runs on to its rows."""
    script = f"FILE = {head(tmp_path)!r}\n" + SETUP + textwrap.dedent(
        f"""
        import json, os, signal, sys, threading, time
        # Python leaves SIGINT ignored when it starts so (a suite run in the
        # background of a non-interactive shell): Ctrl-C's handler back.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        b_sql = {STRONG.format("demo_b")!r}
        alone = ctx.sql(b_sql).to_arrow_table()
        results = {{}}
        other = threading.Thread(target=lambda: results.update(b=ctx.sql(b_sql).to_arrow_table()))

        def interrupt():
            # The long query (eight scans, several times the other's length)
            # starts first; the other query starts once it computes, and
            # Ctrl-C comes once both compute. Started the other way round, a
            # fast CPU can end the short query before the long one computes.
            while not midway("demo_a"):
                time.sleep(0.005)
            other.start()
            while not (midway("demo_a") and midway("demo_b")):
                if not other.is_alive() and "b" in results:
                    return
                time.sleep(0.005)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        scan = "SELECT gene_i FROM kendall_all_pairs('demo_a')"
        long = "SELECT count(*) FROM (" + " UNION ALL ".join([scan] * 8) + ")"
        sent = time.monotonic()
        try:
            ctx.sql(long).to_arrow_table()
            if other.is_alive():
                other.join()
            print(json.dumps({{"interrupted": False}}), flush=True)
            sys.exit(0)
        except KeyboardInterrupt:
            other_running = other.is_alive()
            time.sleep(0.3)
            before = dk._native.progress("demo_a")
            time.sleep(0.7)
            after = dk._native.progress("demo_a")
            other.join()
            print(json.dumps({{
                "interrupted": True,
                "other_running": other_running,
                "a_stopped": after is None or after == before,
                "a_progress": [before, after],
                "same_rows": results["b"].equals(alone),
                "rows": results["b"].num_rows,
            }}), flush=True)
        """
    )
    # On a loaded machine the long query may end before both were seen
    # computing at once (no Ctrl-C was sent), or the other may end before
    # the interrupt reaches Python: run again, up to five times.
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, (done.stdout, done.stderr)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        print(report)
        if report["interrupted"]:
            break
    assert report["interrupted"], report
    # The other query was not cancelled with it: it ends with its own rows
    # (whether it was still running when Python saw the interrupt depends on
    # when the interpreter handles the signal, so that is only reported).
    assert report["a_stopped"], report
    assert report["same_rows"] and report["rows"] > 0, report


def test_two_progress_bars_at_once_have_their_own_totals(monkeypatch):
    tqdm_auto = pytest.importorskip("tqdm.auto")
    import tqdm as tqdm_module

    bars = {}

    class Recording(tqdm_module.tqdm):
        """A tqdm bar writing nowhere, remembering every total it showed."""

        def __init__(self, *args, **kwargs):
            self.totals = set()
            kwargs["file"] = io.StringIO()
            super().__init__(*args, **kwargs)
            bars[threading.current_thread().name] = self

        def refresh(self, *args, **kwargs):
            if self.total is not None:
                self.totals.add(self.total)
            return super().refresh(*args, **kwargs)

        def update(self, n=1):
            if self.total is not None:
                self.totals.add(self.total)
            return super().update(n)

    rng = np.random.default_rng(7)
    # Different gene counts: different totals. 100 samples: each pair costs
    # the naive kernel 3x what the demo's 57 do, so that each call lasts
    # several of the bars' 0.2 s updates.
    data = {"small": rng.normal(size=(100, 600)), "large": rng.normal(size=(100, 800))}
    pairs = {k: x.shape[1] * (x.shape[1] - 1) // 2 for k, x in data.items()}
    options = {"kernel": "naive", "threshold": 0.3}
    alone = {k: dk.corr(x, **options) for k, x in data.items()}
    monkeypatch.setattr(tqdm_auto, "tqdm", Recording)
    results = {}

    def call(k):
        def run():
            threading.current_thread().name = k
            results[k] = dk.corr(data[k], progress=True, **options)
        return run

    def both_midway():
        live = [bars.get(k) for k in data]
        return all(b is not None and b.total is not None and 0 < b.n < b.total for b in live)

    started = time.monotonic()
    overlapped, errors = run_threads([call(k) for k in data], both_midway)
    print(f"two corr() calls: {time.monotonic() - started:.1f}s")
    assert not errors, errors
    assert overlapped, "the two bars never moved at the same time"
    for k in data:
        bar = bars[k]
        assert bar.totals == {pairs[k]}, (k, bar.totals, pairs)
        assert bar.n == pairs[k], (k, bar.n)
        pd.testing.assert_frame_equal(results[k], alone[k])
