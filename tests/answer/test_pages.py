"""Pages hold each row exactly once whatever the order: ties, identical rows, NULLs, keys the query does
not select, aggregates, on DuckDB, PostgreSQL, MariaDB and SQLite. Each paged spec has an unpaged twin
(the same SQL, every row in one answer): the pages, concatenated, are that answer, row for row on the
ORDER BY columns and as a multiset on the rest (rows tied on the ORDER BY may come in either order)."""

from __future__ import annotations

import sqlite3
import textwrap
from collections import Counter

import pytest
import services

from mcpgen.answer.cursors import NEXT_CURSOR_META
from mcpgen.commands.validate import run_validate
from mcpgen.serve.project import open_project
from mcpgen.spec.models import CURSOR

COUNTRIES = "('FR', 'NL', 'BE')"  # 1,158 cities: nine pages of 137
PAGE = 137

# name -> (SQL in DuckDB's dialect, the ORDER BY columns the pages must follow exactly)
SHAPES = {
    "ties": (f"SELECT name, country_code FROM {{t}} WHERE country_code IN {COUNTRIES} ORDER BY country_code", [1]),
    "identical_rows": (
        f"SELECT country_code, timezone FROM {{t}} WHERE country_code IN {COUNTRIES} ORDER BY timezone DESC",
        [1],
    ),
    "unselected_keys": (
        f"SELECT name, population FROM {{t}} WHERE country_code IN {COUNTRIES} "
        "ORDER BY admin1_code, population % 7 DESC",
        [],
    ),
    "aggregate": (
        f"SELECT name, COUNT(*) AS n FROM {{t}} WHERE country_code IN {COUNTRIES} GROUP BY name ORDER BY COUNT(*) DESC",
        [1],
    ),
    "nulls": (
        "SELECT name, CASE WHEN population % 3 = 0 THEN NULL ELSE population % 50 END AS p "
        f"FROM {{t}} WHERE country_code IN {COUNTRIES} ORDER BY p DESC",
        [1],
    ),
    "ordinal_and_nulls_first": (
        "SELECT country_code, CASE WHEN population % 4 = 0 THEN NULL ELSE admin1_code END AS a, "
        f"population / 100000 AS band FROM {{t}} WHERE country_code IN {COUNTRIES} ORDER BY 2 NULLS FIRST, band DESC",
        [1, 2],
    ),
}


def _spec(sql: str, connection: str, paged: bool) -> str:
    size = f"page_size: {PAGE}" if paged else "max_rows: 100000"
    return textwrap.dedent(f"""\
        description: Cities, in pages.
        connection: {connection}
        sql: >-
          {sql}
        sources: [https://www.geonames.org/]
        content: "{{{{ row_count }}}} rows"
        max_bytes: 100000000
        {size}
        """)


def _walk(registry, name: str) -> list[list]:
    rows, cursor, pages = [], None, 0
    while True:
        page = registry.call_sync(name, {CURSOR: cursor} if cursor else {})
        assert not page.is_error, page.content[0].text
        rows += page.structured_content["table"][1:]
        pages += 1
        cursor = (page.meta or {}).get(NEXT_CURSOR_META)
        if cursor is None:
            assert pages > 5
            return rows
        assert pages < 1000


def _project(tmp_path, monkeypatch, kind: str, request, city_rows) -> tuple[str, str]:
    """(mcpgen.yaml, table) for a cities table on `kind`."""
    monkeypatch.chdir(tmp_path)
    if kind == "duckdb":
        services.load_cities("sqlite", "cities", city_rows, sqlite_path=tmp_path / "src.db")
        csv = tmp_path / "cities.csv"
        con = sqlite3.connect(tmp_path / "src.db")
        import csv as csv_module

        with csv.open("w", newline="") as f:
            writer = csv_module.writer(f)
            writer.writerow(services.CITY_COLUMNS)
            writer.writerows(con.execute("SELECT * FROM cities"))
        con.close()
        init = "CREATE TABLE cities AS SELECT * FROM read_csv('cities.csv', header=true)"
        return f'connections:\n  db:\n    duckdb: ":memory:"\n    init: ["{init}"]\n', "cities"
    if kind == "sqlite":
        services.load_cities("sqlite", "cities", city_rows, sqlite_path=tmp_path / "cities.db")
        return "connections:\n  db:\n    url: sqlite:///cities.db\n", "cities"
    prefix = "postgres" if kind == "postgresql" else kind
    url, table = request.getfixturevalue(f"{prefix}_url"), request.getfixturevalue(f"{prefix}_cities")
    return f"connections:\n  db:\n    url: {url}\n", table


@pytest.mark.parametrize("kind", ["duckdb", "postgresql", "mariadb", "sqlite"])
def test_pages_hold_each_row_once_whatever_the_order(kind, tmp_path, monkeypatch, request, city_rows):
    config, table = _project(tmp_path, monkeypatch, kind, request, city_rows)
    (tmp_path / "mcpgen.yaml").write_text(config)
    specs = tmp_path / "specs"
    specs.mkdir()
    for name, (sql, _) in SHAPES.items():
        (specs / f"{name}.yaml").write_text(_spec(sql.format(t=table), "db", paged=True))
        (specs / f"{name}_whole.yaml").write_text(_spec(sql.format(t=table), "db", paged=False))
    project = open_project(specs)
    try:
        for name, (_, ordered) in SHAPES.items():
            whole = project.registry.call_sync(f"{name}_whole", {}).structured_content["table"][1:]
            paged = _walk(project.registry, name)
            assert len(paged) == len(whole) > 2 * PAGE, name
            assert Counter(map(tuple, paged)) == Counter(map(tuple, whole)), name  # each row exactly once
            for i in ordered:  # in the query's own order
                assert [r[i] for r in paged] == [r[i] for r in whole], name
    finally:
        project.close()


def test_validate_says_which_pages_use_offset_and_refuses_an_order_it_cannot_make_total(tmp_path):
    (tmp_path / "mcpgen.yaml").write_text(
        'connections:\n  default:\n    duckdb: ":memory:"\n'
        '    init: ["CREATE TABLE t AS SELECT range AS n, range % 3 AS g, [range] AS l FROM range(100)"]\n'
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    shapes = {
        "keyset": "SELECT n, g FROM t ORDER BY g",
        "list_column": "SELECT n, l FROM t ORDER BY n",  # a LIST cannot ride in a cursor: OFFSET
        "distinct": "SELECT DISTINCT g FROM t ORDER BY n",  # a key outside the DISTINCT result
        "union": "SELECT n FROM t UNION ALL SELECT g FROM t ORDER BY t.n",
    }
    for name, sql in shapes.items():
        (specs / f"{name}.yaml").write_text(_spec(sql, "default", paged=True))
    found = {(p.path.rsplit("/", 1)[-1], p.severity): p.message for p in run_validate(specs).problems}
    assert not any(path == "keyset.yaml" for path, _ in found)
    assert "page_size: pages use OFFSET" in found[("list_column.yaml", "warning")]
    assert "its sort key l is BIGINT[]" in found[("list_column.yaml", "warning")]
    assert "SELECT DISTINCT must be one of its result columns" in found[("distinct.yaml", "error")]
    assert "UNION, INTERSECT or EXCEPT must name one of its result columns" in found[("union.yaml", "error")]


def test_pages_that_use_offset_still_hold_each_row_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text(
        'connections:\n  default:\n    duckdb: ":memory:"\n'
        '    init: ["CREATE TABLE t AS SELECT range % 5 AS g, [range % 11] AS l FROM range(3000)"]\n'
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "lists.yaml").write_text(_spec("SELECT g, l FROM t ORDER BY g", "default", paged=True))
    (specs / "lists_whole.yaml").write_text(_spec("SELECT g, l FROM t ORDER BY g", "default", paged=False))
    project = open_project(specs)
    try:
        paged = _walk(project.registry, "lists")
        whole = project.registry.call_sync("lists_whole", {}).structured_content["table"][1:]
    finally:
        project.close()
    assert sorted(map(repr, paged)) == sorted(map(repr, whole)) and len(paged) == 3000
    assert [r[0] for r in paged] == sorted(r[0] for r in whole)
