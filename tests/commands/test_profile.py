"""What draft reads of the columns: kinds from values (SQLite's ISO text dates too), counts, bounds, enum values."""

from __future__ import annotations

import sqlite3

import pytest

from mcpgen.commands.profile import DraftError, ident, profile
from mcpgen.engines.factory import create_engine
from mcpgen.spec.config import DuckDBConnection, URLConnection


def test_sqlite_text_dates_are_dates_and_bounds_span_every_row(tmp_path, monkeypatch):
    con = sqlite3.connect(tmp_path / "t.sqlite")
    with con:
        con.execute("CREATE TABLE t (day TEXT, kind TEXT, amount REAL, note TEXT)")
        rows = [(f"2024-01-{d:02d}", "ab"[d % 2], d * 1.5, "x" if d == 1 else f"2024-{d}") for d in range(1, 29)]
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    con.close()
    monkeypatch.chdir(tmp_path)
    engine = create_engine("default", URLConnection(url="sqlite:///t.sqlite"), tmp_path)
    try:
        found = {c.name: c for c in profile(engine, "t", "duckdb").columns}
    finally:
        engine.close()
    assert (found["day"].kind, found["day"].low, found["day"].high) == ("date", "2024-01-01", "2024-01-28")
    assert (found["kind"].kind, found["kind"].values) == ("string", ["a", "b"])
    assert (found["amount"].kind, found["amount"].low, found["amount"].high) == ("number", 1.5, 42.0)
    assert found["note"].kind == "string" and found["note"].values == []  # text of which only some is dates


def test_an_empty_table_is_refused_in_one_sentence():
    engine = create_engine("default", DuckDBConnection(), ".")
    try:
        with pytest.raises(DraftError, match="^it has no rows, and a draft takes"):
            profile(engine, "(SELECT 1 AS x WHERE false) AS t", "duckdb")
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("name", "dialect", "written"),
    [
        ("city", "duckdb", "city"),
        ("lifeExp", "duckdb", '"lifeExp"'),
        ("my col", "mysql", "`my col`"),
        ("select", "duckdb", '"select"'),
    ],
)
def test_names_are_quoted_only_when_they_must_be(name, dialect, written):
    assert ident(name, dialect) == written
