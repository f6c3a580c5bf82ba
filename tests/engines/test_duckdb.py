import time

import pytest

from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.errors import QueryError, QueryTimeout, UnsafeSQL


@pytest.fixture
def engine(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("id,name\n1,a\n2,b\n3,c\n")
    (tmp_path / "secret.txt").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.csv"
    outside.write_text("a\n1\n")
    (tmp_path / "data" / "link.csv").symlink_to(outside)
    monkeypatch.chdir(tmp_path)
    e = DuckDBEngine("default", ":memory:", ["CREATE TABLE t AS SELECT * FROM read_csv('data/t.csv')"], tmp_path)
    yield e
    e.close()


def run(engine, sql, params=None, max_rows=100, timeout=5):
    return engine.run(engine.prepare(sql), params or {}, max_rows, timeout)


def test_binding_arrays_dates_and_max_rows(engine):
    assert run(engine, "SELECT name FROM t WHERE id IN :ids ORDER BY id", {"ids": [1, 3]}).rows == [("a",), ("c",)]
    assert run(engine, "SELECT name FROM t WHERE id IN :ids", {"ids": []}).rows == []
    result = run(engine, "SELECT id FROM t ORDER BY id", max_rows=2)
    assert result.rows == [(1,), (2,)] and result.truncated
    assert run(engine, "SELECT name FROM t WHERE name = :q", {"q": "a' OR '1'='1"}).rows == []
    assert run(engine, "SELECT count(*) FROM t").rows == [(3,)]


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
