"""Progress: running a query while a tqdm bar of the pairs computed follows
the engine's counters."""

from __future__ import annotations

import threading
from typing import Any

from . import _native


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython  # type: ignore[import-not-found]
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _collect(df: Any, progress: bool, source: str):
    """Run ``df`` to a pyarrow Table; with ``progress``, a tqdm bar of the
    pairs computed is fed from the engine's counters of the scans of
    ``source`` (a table name of this call's own, so that calls running at
    once in other threads have bars of their own) while it runs."""
    if not progress:
        return _arrow(df)
    try:
        from tqdm.auto import tqdm
    except ImportError as e:
        raise ImportError("progress=True needs tqdm (pip install tqdm)") from e
    done = threading.Event()
    bar = tqdm(total=None, unit="pairs", unit_scale=True, desc="kendall")

    def poll() -> None:
        while not done.wait(0.2):
            _update(bar, source)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    finished = False
    try:
        table = _arrow(df)
        finished = True
        return table
    finally:
        done.set()
        thread.join()
        _update(bar, source)
        # The plan may be gone before the last poll: a finished query has
        # computed every pair it counted.
        if finished and bar.total is not None and bar.n < bar.total:
            bar.update(bar.total - bar.n)
        bar.close()


def _arrow(df: Any):
    """``df`` run to a pyarrow Table. The engine's errors about the data
    (the ``datafusion`` package raises them as a bare ``Exception``) are
    ``ValueError`` with the engine's message, Python's error for a bad
    value; Ctrl-C stays ``KeyboardInterrupt``."""
    try:
        return df.to_arrow_table()
    except Exception as e:
        if type(e) is Exception:
            raise ValueError(str(e)) from e
        raise


def _update(bar: Any, source: str) -> None:
    state = _native.progress(source)
    if state is None:
        return
    pairs, total = state
    if total is not None and bar.total != total:
        bar.total = total
        bar.refresh()
    if pairs > bar.n:
        bar.update(pairs - bar.n)
