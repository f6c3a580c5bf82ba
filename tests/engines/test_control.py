"""CallControl: cancelling a call's query from another thread, and reading its progress, on the real
engines (DuckDB here; PostgreSQL and SQLite in tests/engines/sqlalchemy/test_engine.py)."""

import threading
import time

import pytest

from mcpgen.engines.control import CURRENT, CallControl, attached
from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.errors import QueryCancelled, QueryTimeout

SLOW = "SELECT count(*) FROM big a, big b WHERE hash(a.x + b.x) = :n"  # quadratic: minutes unless stopped
SCAN = "SELECT count(*), sum(hash(x)) FROM big WHERE x % 7 = :n"  # a scan DuckDB reports progress on


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("control")
    engine = DuckDBEngine(
        "default", ":memory:", ["CREATE TABLE big AS SELECT range AS x FROM range(20000000)"], root, max_concurrent=1
    )
    yield engine
    engine.close()


def in_thread(fn, watched: bool = False):
    """Run `fn` under a fresh CallControl in a thread, as the server does; (control, thread, outcome)."""
    control, outcome = CallControl(watched), {}

    def work():
        CURRENT.set(control)
        try:
            outcome["result"] = fn()
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    return control, thread, outcome


def test_without_a_control_attached_does_nothing():
    with attached(lambda: 1 / 0) as control:
        assert control is None


def test_a_control_cancelled_before_the_query_refuses_to_start_it():
    control = CallControl()
    control.cancel()
    token = CURRENT.set(control)
    try:
        with pytest.raises(QueryCancelled, match="cancelled before its query started"), attached(lambda: None):
            pass
    finally:
        CURRENT.reset(token)


def test_a_failing_progress_or_cancel_is_no_progress_and_no_crash():
    control = CallControl()
    control.attach(lambda: 1 / 0, lambda: 1 / 0)
    assert control.progress() is None
    control.cancel()  # the ZeroDivisionError is swallowed: the query had ended
    control.detach()
    assert control.cancelled and control.progress() is None


@pytest.mark.parametrize("value", [-1.0, 101.0, None])
def test_progress_outside_0_to_100_means_the_engine_cannot_say(value):
    control = CallControl()
    control.attach(lambda: None, lambda: value)
    assert control.progress() is None


def test_cancelling_stops_the_duckdb_query_and_says_cancelled_not_timed_out(engine):
    query = engine.prepare(SLOW)
    control, thread, outcome = in_thread(lambda: engine.run(query, {"n": 7}, 10, 60))
    time.sleep(0.3)
    started = time.monotonic()
    control.cancel()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - started < 2
    assert isinstance(outcome["error"], QueryCancelled), outcome
    assert str(outcome["error"]) == "the call was cancelled and its query stopped"
    # the one slot and its cursor serve the next call at once, with the right answer
    assert engine.run(engine.prepare("SELECT count(*) FROM big"), {}, 10, 5).rows == [(20000000,)]


def test_a_timeout_is_still_a_timeout_under_a_control(engine):
    query = engine.prepare(SLOW)
    control, thread, outcome = in_thread(lambda: engine.run(query, {"n": 7}, 10, 0.3))
    thread.join(10)
    assert isinstance(outcome["error"], QueryTimeout) and not control.cancelled


@pytest.mark.parametrize("watched", [True, False], ids=["watched", "unwatched"])
def test_duckdb_reports_the_progress_of_a_running_scan_only_when_it_is_read(engine, watched):
    """A call whose progress someone reads gets it; any other runs on a cursor that does not track it
    (DuckDB's tracking costs every query), with the same answer. Watched and unwatched calls in turn
    share the engine's one slot."""
    query = engine.prepare(SCAN + " AND x < (SELECT max(x) FROM big b WHERE b.x % 3 = 0)")
    for _ in range(2):
        control, thread, outcome = in_thread(lambda: engine.run(query, {"n": 3}, 10, 60), watched)
        seen = []
        while thread.is_alive():
            value = control.progress()
            if value is not None:
                seen.append(value)
            time.sleep(0.01)
        assert "result" in outcome and len(outcome["result"].rows) == 1, outcome
        assert all(0 <= v <= 100 for v in seen) and bool(seen) == watched, seen
        assert control.progress() is None  # the query is over: nothing to report, the cursor is back in the pool
        watched = not watched


def test_a_late_interrupt_does_not_reach_the_next_call_on_the_same_cursor(engine):
    """The deadline or a cancel arriving just as a call ends must not stop the next call's query."""
    quick = engine.prepare("SELECT count(*) FROM big")
    control, thread, _ = in_thread(lambda: engine.run(quick, {}, 10, 5))
    thread.join(10)
    control.cancel()  # after the call: its hold on the pooled cursor is gone
    assert engine.run(engine.prepare(SCAN), {"n": 1}, 10, 10).rows[0][0] == 2857143
