"""An in-memory DuckDB connection opened from the snapshot its `init` left in a state of the project's data:
the same answers without running `init` again, built again for another state, and never trusted when edited."""

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
    real = engine_module._fill
    monkeypatch.setattr(
        engine_module, "_fill", lambda con, name, reach, init: ran.append(len(init)) or real(con, name, reach, init)
    )
    return ran


def answer(root, state, init=INIT):
    engine = DuckDBEngine("default", ":memory:", init, root, state=state)
    try:
        return engine.snapshot, engine.run(engine.prepare(QUERY), {}, 10, 5).rows
    finally:
        engine.close()


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
