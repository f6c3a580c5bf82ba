import os
import time

import pytest

from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.errors import QueryError, QueryTimeout, UnsafeSQL


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A project folder: data/t.csv, a secret, and a link to a file outside it."""
    folder = tmp_path_factory.mktemp("project")
    (folder / "data").mkdir()
    (folder / "data" / "t.csv").write_text("id,name\n1,a\n2,b\n3,c\n")
    (folder / "secret.txt").write_text("x")
    outside = folder.parent / f"{folder.name}-outside.csv"
    outside.write_text("a\n1\n")
    (folder / "data" / "link.csv").symlink_to(outside)
    return folder


@pytest.fixture(scope="module")
def shared_engine(root):
    """One engine for the module: no test changes it (the ones that try check that they cannot)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        e = DuckDBEngine("default", ":memory:", ["CREATE TABLE t AS SELECT * FROM read_csv('data/t.csv')"], root)
    yield e
    e.close()


@pytest.fixture
def engine(shared_engine, root, monkeypatch):
    """The module's engine, from its project folder (the queries name files relative to it)."""
    monkeypatch.chdir(root)
    return shared_engine


def run(engine, sql, params=None, max_rows=100, timeout=5):
    return engine.run(engine.prepare(sql), params or {}, max_rows, timeout)


def test_binding_arrays_dates_and_max_rows(engine):
    assert run(engine, "SELECT name FROM t WHERE id IN :ids ORDER BY id", {"ids": [1, 3]}).rows == [("a",), ("c",)]
    assert run(engine, "SELECT name FROM t WHERE id IN :ids", {"ids": []}).rows == []
    result = run(engine, "SELECT id FROM t ORDER BY id", max_rows=2)
    assert result.rows == [(1,), (2,)] and result.truncated
    assert run(engine, "SELECT name FROM t WHERE name = :q", {"q": "a' OR '1'='1"}).rows == []
    assert run(engine, "SELECT count(*) FROM t").rows == [(3,)]


def test_an_optional_list_left_out_means_every_value(engine):
    sql = "SELECT count(*) FROM t WHERE (:ids IS NULL OR id IN :ids)"
    assert [run(engine, sql, {"ids": ids}).rows for ids in (None, [1, 3], [])] == [[(3,)], [(2,)], [(0,)]]


def test_relative_project_files_are_readable(engine):
    assert run(engine, "SELECT count(*) FROM 'data/t.csv'").rows == [(3,)]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM read_csv('../x.csv')",
        "SELECT * FROM read_csv('data/link.csv')",
        "SELECT * FROM read_csv('https://example.org/x.csv')",
    ],
)
def test_nothing_outside_the_project_is_reachable(engine, sql):
    with pytest.raises(QueryError):
        run(engine, sql)


def test_locked_settings_cannot_be_changed_even_if_a_check_were_skipped(engine):
    with pytest.raises(UnsafeSQL):
        engine.prepare("SET enable_external_access = true")
    cursor = engine._con.cursor()
    with pytest.raises(Exception, match="locked"):
        cursor.execute("SET enable_external_access = true")


def test_a_slow_query_is_cancelled_and_the_engine_stays_usable(engine):
    start = time.monotonic()
    with pytest.raises(QueryTimeout, match="longer than 0.3 s"):
        run(engine, "SELECT count(*) FROM range(100000000000) a", timeout=0.3)
    assert time.monotonic() - start < 2
    assert run(engine, "SELECT count(*) FROM t").rows == [(3,)]


def test_a_data_modifying_cte_never_runs(engine):
    with pytest.raises(UnsafeSQL, match="DELETE"):
        engine.prepare("WITH gone AS (DELETE FROM t RETURNING *) SELECT count(*) FROM gone")
    assert run(engine, "SELECT count(*) FROM t").rows == [(3,)]


def test_a_missing_database_file_is_a_clear_error(tmp_path):
    with pytest.raises(QueryError, match="does not exist"):
        DuckDBEngine("warehouse", "nope.duckdb", [], tmp_path)


def test_describe_gives_names_and_types_without_running(engine):
    # error() would fail the moment a row is produced: describe binds and plans, and reads none.
    query = engine.prepare("SELECT id, name, error('ran') AS boom FROM t WHERE id = :id")
    assert engine.describe(query, timeout=5) == [("id", "BIGINT"), ("name", "VARCHAR"), ("boom", '"NULL"')]
    with pytest.raises(QueryError, match="ran"):
        engine.run(query, {"id": 1}, max_rows=10, timeout=5)


def test_describe_points_at_the_unknown_column(engine):
    with pytest.raises(QueryError, match="nme") as caught:
        engine.describe(engine.prepare("SELECT id,\n       nme FROM t"), timeout=5)
    assert caught.value.position == (2, 8)


def test_run_reports_its_time(engine):
    result = run(engine, "SELECT count(*) FROM range(1000000)")
    assert 0 < result.seconds < 5


def test_sqlalchemy_is_imported_only_for_a_url_connection(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mcpgen.spec.config import DuckDBConnection, URLConnection\n"
        "from mcpgen.engines.factory import create_engine\n"
        "create_engine('default', DuckDBConnection(), '.').close()\n"
        "print('sqlalchemy' in sys.modules)\n"
        "create_engine('local', URLConnection(url='sqlite://'), '.').close()\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == ["False", "True"]


# Declared parameter types: each placeholder binds as its declared type, NULL or not.
TYPED = [
    # (declared type, SQL using it where an untyped NULL cannot be bound, a value, the row it gives)
    ("date", "SELECT :p + INTERVAL '3' MONTH AS v", "2000-01-31", ("2000-04-30 00:00:00",)),
    ("datetime", "SELECT :p + INTERVAL 1 HOUR AS v", "2000-01-01T10:00:00", ("2000-01-01 11:00:00",)),
    ("integer", "SELECT :p * 1000000 AS v", 5000, (5000000000,)),
    ("number", "SELECT :p // 2 AS v", 5, (2.5,)),
    ("boolean", "SELECT NOT :p AS v", True, (False,)),
    ("string", "SELECT length(:p) AS v", "abc", (3,)),
]


@pytest.mark.parametrize(("kind", "sql", "value", "row"), TYPED, ids=[t[0] for t in TYPED])
def test_a_parameter_is_described_and_bound_as_its_declared_type(engine, kind, sql, value, row):
    from mcpgen.spec.models import Parameter
    from mcpgen.spec.params import Arguments

    parameter = Parameter(type=kind, description="p", required=False)
    query = engine.prepare(sql, {"p": kind})
    assert [name for name, _ in engine.describe(query, timeout=5)] == ["v"]
    assert engine.run(query, {"p": None}, 10, 5).rows == [(None,)]
    argument = Arguments({"p": parameter}).validate({"p": value})
    assert tuple(str(v) for v in engine.run(query, argument, 10, 5).rows[0]) == tuple(str(v) for v in row)


def test_without_the_declared_type_an_untyped_null_is_refused_as_before(engine):
    with pytest.raises(QueryError, match="best candidate"):
        engine.describe(engine.prepare("SELECT :p + INTERVAL '3' MONTH AS v"), timeout=5)


def test_arrays_bind_as_lists_of_their_item_type(engine):
    query = engine.prepare(
        "SELECT name FROM t WHERE DATE '2000-01-01' + id::INT IN :days ORDER BY id", {"days": "date[]"}
    )
    assert engine.describe(query, timeout=5) == [("name", "VARCHAR")]
    import datetime as dt

    assert engine.run(query, {"days": [dt.date(2000, 1, 2), dt.date(2000, 1, 4)]}, 10, 5).rows == [("a",), ("c",)]
    assert engine.run(query, {"days": []}, 10, 5).rows == []
    ids = engine.prepare("SELECT list_sum(:ids) AS s, :ids[1] * 4000000000 AS big", {"ids": "integer[]"})
    assert engine.run(ids, {"ids": [1, 2]}, 10, 5).rows == [(3, 4000000000)]


def test_a_number_sent_as_an_integer_computes_as_the_same_number(engine):
    query = engine.prepare("SELECT :x / 2 AS half, :x // 2 AS floor_div", {"x": "number"})
    assert engine.run(query, {"x": 5}, 10, 5).rows == engine.run(query, {"x": 5.0}, 10, 5).rows


def test_a_zoned_datetime_is_not_shifted_by_the_declared_type(engine):
    import datetime as dt

    query = engine.prepare("SELECT epoch(:at) AS s", {"at": "datetime"})
    zoned = dt.datetime(2000, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    assert engine.run(query, {"at": zoned}, 10, 5).rows == [(zoned.timestamp(),)]


def test_describe_points_at_the_column_on_a_line_duckdb_shows_in_part(engine):
    sql = "SELECT " + ", ".join(f"id AS c{i}" for i in range(30)) + ", nme FROM t"
    with pytest.raises(QueryError, match="nme") as caught:
        engine.describe(engine.prepare(sql), timeout=5)
    assert caught.value.position == (1, sql.index("nme") + 1)


def test_describe_points_into_the_spec_past_cast_placeholders(engine):
    sql = "SELECT :a + 1 AS x, :b + 2 AS y, nme FROM t WHERE id IN :ids"
    with pytest.raises(QueryError, match="nme") as caught:
        engine.describe(engine.prepare(sql, {"a": "integer", "b": "date", "ids": "integer[]"}), timeout=5)
    assert caught.value.position == (1, sql.index("nme") + 1)
    two_lines = "SELECT :a AS x,\n  :b + nme AS y FROM t"
    with pytest.raises(QueryError, match="nme") as caught:
        engine.describe(engine.prepare(two_lines, {"a": "integer", "b": "integer"}), timeout=5)
    assert caught.value.position == (2, 8)


# -- threads ----------------------------------------------------------------------------------


def _threads(engine) -> int:
    return engine._con.execute("SELECT current_setting('threads')").fetchone()[0]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: every core is one thread")
def test_auto_threads_is_every_core_however_small_the_data(tmp_path, monkeypatch):
    """`auto` (the default) and null leave DuckDB's own default, every core; a number fixes it."""
    monkeypatch.chdir(tmp_path)  # DuckDB reads relative paths from the working directory
    (tmp_path / "small.csv").write_text("a\n1\n2\n")
    init = ["CREATE TABLE s AS SELECT * FROM read_csv('small.csv')"]
    engines = [DuckDBEngine("t", ":memory:", init, tmp_path, threads) for threads in ("auto", None, 1, 2)]
    try:
        assert [_threads(e) for e in engines] == [os.cpu_count(), os.cpu_count(), 1, 2]
    finally:
        for engine in engines:
            engine.close()


def test_threads_setting_takes_auto_a_number_or_null():
    from pydantic import ValidationError

    from mcpgen.spec.config import DuckDBConnection

    assert DuckDBConnection().threads == "auto"
    assert DuckDBConnection(threads=4).threads == 4 and DuckDBConnection(threads=None).threads is None
    for bad in (0, "fast", 1.5):
        with pytest.raises(ValidationError):
            DuckDBConnection(threads=bad)


def test_first_calls_from_many_threads_prepare_at_once_without_refusal(tmp_path):
    """A query prepared at its first call: forty worker threads at once, on an engine whose catalogue is not read
    yet, each get their query (DuckDB refuses a busy connection rather than wait)."""
    import threading

    engine = DuckDBEngine("default", ":memory:", [], tmp_path)
    barrier, errors, prepared = threading.Barrier(40), [], []

    def first_call(n: int) -> None:
        barrier.wait(10)
        try:
            prepared.append(engine.prepare(f"SELECT abs({n}) + :x AS v", {"x": "integer"}))  # reads it
        except Exception as exc:  # the refusal this test is about
            errors.append(repr(exc))

    threads = [threading.Thread(target=first_call, args=(n,)) for n in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert errors == [] and len(prepared) == 40
    assert engine.run(prepared[0], {"x": 2}, 10, 10).rows[0][0] in {n + 2 for n in range(40)}
