"""The test suite cannot hang: every test that outlives its timeout ends the run with a stack of every thread.

Two layers, because a stuck test can be stuck in two ways:

* pytest-timeout with `timeout_method = "thread"` (pyproject.toml): at the test's timeout a
  watcher thread prints every thread's stack and ends the process. (The "signal" method raises
  in the main thread, which a C call that retries on EINTR never sees, and an exception raised
  inside an event loop can leave `asyncio.run` waiting forever for a worker thread at shutdown.)
* That watcher is Python code and needs the GIL; a C call that blocks while holding it (libpq's
  PQgetResult through psycopg's binary build, once) stops it too. So `faulthandler`'s watchdog, a
  C thread that needs no GIL, dumps the stacks and exits `HANG_GRACE` seconds later.

Loaded by tests/conftest.py; `python -m pytest -p hangs` loads it for tests outside the folder.
"""

from __future__ import annotations

import faulthandler
import os
import sys

import pytest
from _pytest._io import TerminalWriter

HANG_GRACE = float(os.environ.get("MCPGEN_TEST_HANG_GRACE", "10"))
_stderr: list = []  # the real stderr, kept before output capture replaces it


def pytest_configure(config) -> None:
    if not _stderr:
        _stderr.append(os.fdopen(os.dup(sys.__stderr__.fileno()), "w"))
    if hasattr(config, "workerinput"):  # a pytest-xdist worker's stdout goes nowhere: pytest-timeout's stacks to stderr
        config.get_terminal_writer = lambda: TerminalWriter(_stderr[0])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    seconds = item_timeout(item)
    if seconds > 0:
        faulthandler.dump_traceback_later(seconds + HANG_GRACE, exit=True, file=_stderr[0] if _stderr else sys.stderr)
    try:
        return (yield)
    finally:
        if seconds > 0:
            faulthandler.cancel_dump_traceback_later()


def item_timeout(item) -> float:
    """The test's pytest-timeout (for the whole of its setup, call and teardown, as pytest-timeout
    counts it): its `timeout` marker, else --timeout, PYTEST_TIMEOUT or the ini's (0: none)."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and (marker.args or "timeout" in marker.kwargs):
        value = marker.args[0] if marker.args else marker.kwargs["timeout"]
    else:
        value = item.config.getoption("timeout", None)
        if value is None:
            value = os.environ.get("PYTEST_TIMEOUT") or item.config.getini("timeout") or 0
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0
