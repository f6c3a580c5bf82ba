"""An in-memory DuckDB connection opened from the snapshot its `init` left in a state of the project's data,
or copied from it into memory: the same answers without running `init` again, built again for another
state, never trusted when edited, and not kept when `init` left what a DuckDB file does not hold."""

from __future__ import annotations

import duckdb
import pytest

from mcpgen.engines import duckdb as engine_module
from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.errors import QueryError

INIT = [
    "CREATE TABLE t AS SELECT * FROM read_csv('data/t.csv')",
    "CREATE VIEW v AS SELECT * FROM read_csv('data/t.csv')",
    "CREATE MACRO twice(x) AS x * 2",
]
QUERY = "SELECT current_database() AS db, (SELECT string_agg(name, ',' ORDER BY id) FROM t) AS t, "
QUERY += "(SELECT count(*) FROM v) AS v, twice(21) AS m"


@pytest.fixture
def project(tmp_path, cache, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("id,name\n1,a\n2,b\n")
    monkeypatch.chdir(tmp_path)  # DuckDB reads relative paths from the working directory
    return tmp_path


@pytest.fixture
def fills(monkeypatch):
    """How many times `init` ran (in memory, or into a snapshot being built)."""
    ran: list[int] = []
    real = engine_module._run_init
    monkeypatch.setattr(
        engine_module, "_run_init", lambda con, name, init, root: ran.append(len(init)) or real(con, name, init, root)
    )
    return ran


def answer(root, state, init=INIT, copy=False, query=QUERY):
    engine = DuckDBEngine("default", ":memory:", init, root, state=state, copy=copy)
    try:
        return engine.snapshot, engine.run(engine.prepare(query), {}, 10, 5).rows
    finally:
        engine.close()


def where_queries_run(engine: DuckDBEngine) -> tuple:
    """(the databases attached, the main one's file (None: memory), whether it is read-only)."""
    databases = engine._con.execute("SELECT database_name FROM duckdb_databases() ORDER BY 1").fetchall()
    main = "SELECT path, readonly FROM duckdb_databases() WHERE database_name = current_database()"
    return ([d for (d,) in databases], *engine._con.execute(main).fetchone())


def test_a_snapshot_answers_as_memory_and_runs_no_init(project, fills):
    _, fresh = answer(project, None)
    assert fresh == [("memory", "a,b", 2, 42)] and fills == [3]
    built, first = answer(project, "state-1")
    assert built is not None and first == fresh and fills == [3, 3, 0]  # built once, then opened with no init
    again, second = answer(project, "state-1")
    assert again == built and second == fresh and fills == [3, 3, 0, 0]


def test_another_state_of_the_data_builds_another_snapshot(project, fills):
    first, _ = answer(project, "state-1")
    (project / "data" / "t.csv").write_text("id,name\n1,a\n2,b\n3,c\n")
    second, rows = answer(project, "state-2")
    assert second != first and not first.exists() and rows == [("memory", "a,b,c", 3, 42)]


def test_an_edited_or_replaced_snapshot_is_not_trusted(project, fills):
    built, fresh = answer(project, "state-1")
    forged = duckdb.connect(str(built.parent / "forged.duckdb"))
    forged.execute("CREATE TABLE t AS SELECT 1 AS id, 'forged' AS name")
    forged.close()
    (built.parent / "forged.duckdb").replace(built)  # its signature left as it was
    fills.clear()
    rebuilt, rows = answer(project, "state-1")
    assert rebuilt == built and rows == fresh and fills == [3, 0]  # built again from init, then opened


def test_an_init_that_fails_still_says_why(project):
    with pytest.raises(QueryError, match="init statement 1 failed"):
        answer(project, "state-1", ["CREATE TABLE t AS SELECT * FROM read_csv('data/missing.csv')"])
    with pytest.raises(QueryError, match="init statement 1 changes the setting enable_external_access"):
        answer(project, "state-1", ["SET enable_external_access = true"])


def test_a_snapshot_too_big_is_not_kept_and_not_built_again(project, fills, monkeypatch):
    from mcpgen.engines import snapshots

    monkeypatch.setattr(snapshots, "MAX_SNAPSHOT_BYTES", 1000)
    _, fresh = answer(project, None)
    fills.clear()
    kept, rows = answer(project, "state-1")
    assert kept is None and rows == fresh and fills == [3, 3]  # built, found too big, then run in memory
    kept, rows = answer(project, "state-1")
    assert kept is None and rows == fresh and fills == [3, 3, 3]  # in memory only


def test_a_snapshot_others_could_swap_after_its_check_is_not_opened(project, fills):
    """DuckDB opens the file by its name after the signature is checked: a folder on the way that another
    user may write to (no sticky bit) could swap it in between, so such a snapshot is not used."""
    built, fresh = answer(project, "state-1")
    built.parent.chmod(0o777)
    try:
        fills.clear()
        again, rows = answer(project, "state-1")
        assert rows == fresh and fills[0] == 3  # init ran again rather than trust the file
    finally:
        built.parent.chmod(0o700)
    fills.clear()
    again, rows = answer(project, "state-1")
    assert again == built and rows == fresh and fills == [0]  # private again: opened as kept


def test_a_copied_snapshot_answers_from_memory_and_runs_no_init(project, fills):
    """A server copies the snapshot into memory: its queries run on memory, not on the file, and what init
    made (a table, a view over a file, a macro, a sequence, a type, a table macro) is all there."""
    init = [*INIT, "CREATE SEQUENCE s START 7", "CREATE TYPE mood AS ENUM ('ok', 'not')"]
    init += ["CREATE MACRO names() AS TABLE SELECT name FROM t", "CREATE TABLE moods AS SELECT 'ok'::mood AS m"]
    query = QUERY + ", (SELECT count(*) FROM names()) AS n, (SELECT m FROM moods) AS mood"
    _, fresh = answer(project, None, init, query=query)
    assert fresh == [("memory", "a,b", 2, 42, 2, "ok")]
    fills.clear()
    built, first = answer(project, "state-1", init, copy=True, query=query)
    assert built is not None and first == fresh and fills == [len(init), 0]  # built, then copied with no init
    engine = DuckDBEngine("default", ":memory:", init, project, state="state-1", copy=True)
    try:
        assert engine.snapshot == built and fills == [len(init), 0, 0]
        assert where_queries_run(engine) == (["memory", "system", "temp"], None, False)  # the file detached
        assert engine._con.execute("SELECT nextval('s')").fetchone() == (7,)  # as init left it
        assert engine.run(engine.prepare(query), {}, 10, 5).rows == fresh
    finally:
        engine.close()
    opened = DuckDBEngine("default", ":memory:", init, project, state="state-1")  # `call`: the file itself
    try:
        assert where_queries_run(opened)[1:] == (str(built), True)
    finally:
        opened.close()


def test_a_snapshot_that_cannot_be_copied_runs_init_in_memory(project, fills, monkeypatch):
    """A kept snapshot that DuckDB cannot attach or copy (here: not a DuckDB file at all) is let go, and
    init runs in memory instead, with the same answers."""
    from mcpgen.engines import snapshots

    _, fresh = answer(project, None)
    (project / "not-duckdb").write_bytes(b"not a database" * 1000)
    monkeypatch.setattr(snapshots, "kept", lambda where: project / "not-duckdb")
    fills.clear()
    kept, rows = answer(project, "state-1", copy=True)
    assert kept is None and rows == fresh and fills == [3]


@pytest.mark.parametrize(
    ("statements", "query", "expected"),
    [
        (["SET GLOBAL TimeZone = 'Asia/Tokyo'"], "SELECT current_setting('TimeZone') AS z", "Asia/Tokyo"),
        (["ATTACH ':memory:' AS other", "CREATE TABLE other.x AS SELECT 5 AS v"], "SELECT v FROM other.x", 5),
        (["CREATE TEMP TABLE scratch AS SELECT 1 AS x"], "SELECT 'made' AS x", "made"),
    ],
)
@pytest.mark.parametrize("copy", [False, True])
def test_an_init_that_leaves_what_a_file_does_not_hold_is_not_kept(project, fills, statements, query, expected, copy):
    """A setting, an attached database or a temporary object lives in the connection, not in its file: a
    snapshot would lose it, so that state's init runs in memory each time, and answers as it did."""
    init = [INIT[0], *statements]
    _, fresh = answer(project, None, init, query=query)
    assert fresh == [(expected,)]
    fills.clear()
    for _ in range(2):
        kept, rows = answer(project, "state-1", init, copy=copy, query=query)
        assert kept is None and rows == fresh
    assert fills == [len(init)] * 3  # tried once, found not to hold, then in memory only
