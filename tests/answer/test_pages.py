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

CODES = ("FR", "NL", "BE")
COUNTRIES = str(CODES)  # ('FR', 'NL', 'BE'): 1,158 cities, nine pages of 137
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
    # A file of this test's own holds the cities the shapes select and a few others, not all 34,000.
    city_rows = [r for i, r in enumerate(city_rows) if r[2] in CODES or i % 100 == 0]
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


def _plan_nodes(node: dict) -> list[dict]:
    return [node, *(n for child in node.get("Plans", []) for n in _plan_nodes(child))]


def test_postgres_pages_are_page_sized_index_reads(tmp_path, monkeypatch, postgres_url):
    """Keys the table declares NOT NULL seek as one row comparison, which the index serves: a late page
    reads about a page of index entries, where the same page without it reads every row before it."""
    import re

    from mcpgen.load.columns import page_plan

    monkeypatch.chdir(tmp_path)
    table = services.unique_name("pages")
    with services.connect("postgresql") as con:
        con.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, grp int NOT NULL, label text)")
        con.execute(
            f"INSERT INTO {table} SELECT i, i % 50, CASE WHEN i % 7 = 0 THEN NULL ELSE 'l' || (i % 13) END "
            "FROM generate_series(1, 20000) i"
        )
        con.execute(f"CREATE INDEX ON {table} (grp, id)")
        con.execute(f"ANALYZE {table}")
    try:
        (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  db:\n    url: {postgres_url}\n")
        specs = tmp_path / "specs"
        specs.mkdir()
        sql = f"SELECT id, grp, label FROM {table} ORDER BY grp, id"  # label is the tie-breaker mcpgen adds
        (specs / "by_group.yaml").write_text(
            _spec(sql, "db", paged=True).replace(f"page_size: {PAGE}", "page_size: 500")
        )
        (specs / "by_group_whole.yaml").write_text(_spec(sql, "db", paged=False))
        # t2.id is NOT NULL in its table, but NULL wherever the outer join finds no row: not trusted
        joined = f"SELECT t1.id AS aid, t2.id AS bid FROM {table} t1 LEFT JOIN {table} t2 ON t2.id = t1.id * 2"
        joined += " ORDER BY bid, aid"
        (specs / "joined.yaml").write_text(
            _spec(joined, "db", paged=True).replace(f"page_size: {PAGE}", "page_size: 500")
        )
        (specs / "joined_whole.yaml").write_text(_spec(joined, "db", paged=False))
        project = open_project(specs)
        try:
            paged = _walk(project.registry, "by_group")
            whole = project.registry.call_sync("by_group_whole", {}).structured_content["table"][1:]
            assert paged == whole and len(paged) == 20000  # (grp, id) is unique: the very same sequence
            joined_pages = _walk(project.registry, "joined")
            joined_whole = project.registry.call_sync("joined_whole", {}).structured_content["table"][1:]
            assert joined_pages == joined_whole and sum(r[1] is None for r in joined_pages) == 10000
            loaded = next(s for s in project.loaded.specs if s.name == "by_group")
            plan = page_plan(project.engines["db"], loaded)
        finally:
            project.close()
        assert plan.keyset and plan.required == frozenset({0, 1})  # grp and id; label may be NULL
        key = (37, 15037, "l9")  # the 15,000th row or so: a page deep into the table
        params = {f"mcpgen_page_after_{i}": v for i, v in enumerate(key)}

        def rows_read(text: str) -> int:
            text = re.sub(r":(mcpgen_page_after_\d)", r"%(\1)s", text)
            text = text.replace(":mcpgen_page_limit", "501")
            with services.connect("postgresql") as con:
                explained = con.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + text, params).fetchone()[0][0]
            scans = [n for n in _plan_nodes(explained["Plan"]) if "Scan" in n["Node Type"]]
            return sum(n["Actual Rows"] + n.get("Rows Removed by Filter", 0) for n in scans)

        assert rows_read(plan.after((False, False, False))) <= 1500  # a page, and the group it ends in
        plan.required = frozenset()  # the same page, knowing nothing of NOT NULL
        assert rows_read(plan.after((False, False, False))) > 10000
    finally:
        services.drop_table("postgresql", table)
