"""Keyset pages while the data changes between them, on DuckDB, PostgreSQL, MariaDB and Spark (a slow test, on
the local cluster): every page is the rows that come after the last row given, as the data stands when the page
is asked for (docs/spec-format.md, "Pages").

Each walk changes the table at every page boundary but one in six (the last row given deleted or moved, a copy
of it added, rows tied with it on the query's own keys added on both sides of it, the next row deleted, the
first row given changed so that most orders move it after the cursor) and checks each page against the table
as it now is, sorted here in the order the page follows: the query's own ORDER BY, then every result column.
Read-ahead is off, so every page seeks by key.

Shapes of ORDER BY whose meaning is the engine's own (a name both an alias and a table's column, DISTINCT ON) are
walked on unchanging tables of every engine, and must give the whole query, in its order.
"""

from __future__ import annotations

import csv
import functools
import secrets
import sqlite3
import textwrap

import pytest
import services
from walks import follow, ok

from mcpgen.answer import pages
from mcpgen.answer.cursors import NEXT_CURSOR_META
from mcpgen.answer.readahead import ReadAhead
from mcpgen.load.columns import page_plan
from mcpgen.serve.project import open_project
from mcpgen.spec.models import CURSOR

PAGE = 5
TEXTS = ["a", "A", "a ", "ab", "B", "b", "Z"]  # case and trailing spaces: equal under a case-insensitive collation
# (id, k, s, r): id is unique until a copy of a row is added; k may be NULL; r is a 4-byte float (a double on
# MariaDB, whose driver reads a 4-byte float in six digits: pages use OFFSET there)
ROWS = [(i, None if i % 6 == 0 else i % 4, TEXTS[i % len(TEXTS)], (i % 5 + 1) / 10) for i in range(1, 49)]

# name -> (result columns, ORDER BY keys as (column, descending, NULLs first))
SHAPES = {
    "one_column": (["id", "k", "s"], [("id", False, False)]),
    "several_mixed": (["id", "k", "s"], [("k", True, True), ("s", False, False)]),
    "nulls_first": (["id", "k", "s"], [("k", False, True), ("id", True, False)]),
    "nulls_last": (["id", "k", "s"], [("k", True, False)]),
    "ties": (["id", "k", "s"], [("k", False, False)]),  # not total: mcpgen adds the result columns
    "text": (["id", "s"], [("s", True, False)]),  # under each engine's collation
    "real": (["id", "r"], [("r", False, False)]),  # a 4-byte float key
    "copies": (["k", "s"], [("k", False, False)]),  # identical rows: told apart only by their count
}
TYPES = {  # on DuckDB, the view says them
    "postgresql": ("INTEGER", "TEXT COLLATE {ci}", "REAL"),  # a nondeterministic, case-insensitive collation
    "mariadb": ("INTEGER", "VARCHAR(8) COLLATE utf8mb4_general_ci", "DOUBLE"),  # 'a' = 'A' = 'a '
}


def _text_order(kind: str, s: str) -> str:
    """A text key as the engine's collation orders it (for these ASCII values)."""
    if kind == "spark":  # by its bytes
        return s
    return s.lower().rstrip(" ") if kind == "mariadb" else s.lower()


def _order(kind: str, columns: list[str], keys: list[tuple[str, bool, bool]]):
    """A sort key for result rows: the query's keys, then every result column (text by its bytes, NULLs where
    the engine puts them going up)."""
    parts = [(columns.index(c), desc, nulls_first, c == "s") for c, desc, nulls_first in keys]
    parts += [(i, False, kind in ("mariadb", "spark"), False) for i in range(len(columns))]

    def compare(a: tuple, b: tuple) -> int:
        for i, desc, nulls_first, collated in parts:
            x, y = a[i], b[i]
            if x is None or y is None:
                if (x is None) != (y is None):
                    return (-1 if x is None else 1) * (1 if nulls_first else -1)
                continue
            if collated:
                x, y = _text_order(kind, x), _text_order(kind, y)
            if x != y:
                return (-1 if x < y else 1) * (-1 if desc else 1)
        return 0

    return functools.cmp_to_key(compare)


def _sql(table: str, columns: list[str], keys: list[tuple[str, bool, bool]]) -> str:
    """The query in DuckDB's dialect, which mcpgen translates for the others."""
    order = [f"{c}{' DESC' if desc else ''} NULLS {'FIRST' if first else 'LAST'}" for c, desc, first in keys]
    return f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(order)}"


class Table:
    """The test's table: rows held here, and written to the engine whole after each change."""

    def __init__(self, kind: str, folder, ci: str, spark=None):
        self.kind, self.folder, self.rows, self.spark = kind, folder, list(ROWS), spark
        self.name = "t" if kind == "duckdb" else services.unique_name("keyset")
        if kind == "spark":  # a view of a new table after each change: no session holds a stale file list
            self.name, self.writes = f"{folder}.rows", 0
            spark.sql(f"CREATE DATABASE {folder}")
        elif kind != "duckdb":
            with services.connect(kind) as con:
                i, s, r = (t.format(ci=ci) for t in TYPES[kind])
                con.cursor().execute(f"CREATE TABLE {self.name} (id {i}, k {i}, s {s}, r {r})")
        self.write()

    def write(self) -> None:
        if self.kind == "duckdb":  # a file of a new name each time: DuckDB may cache what it read of a file
            folder = self.folder / "t"
            folder.mkdir(exist_ok=True)
            for old in folder.iterdir():
                old.unlink()
            with open(folder / f"{secrets.token_hex(4)}.csv", "w", newline="") as f:
                csv.writer(f, quoting=csv.QUOTE_NONNUMERIC).writerows(self.rows)
            return
        if self.kind == "spark":
            self.writes += 1
            table = f"{self.folder}.rows_{self.writes}"
            values = ", ".join(
                f"({i}, CAST({'NULL' if k is None else k} AS INT), '{s}', CAST({r} AS FLOAT))"
                for i, k, s, r in self.rows
            )
            self.spark.sql(
                f"CREATE TABLE {table} USING parquet AS SELECT * FROM VALUES {values} AS v(id, k, s, r)",
                f"CREATE OR REPLACE VIEW {self.name} AS SELECT * FROM {table}",
            )
            return
        with services.connect(self.kind) as con:
            cur = con.cursor()
            cur.execute(f"DELETE FROM {self.name}")
            cur.executemany(f"INSERT INTO {self.name} VALUES (%s, %s, %s, %s)", self.rows)

    def drop(self) -> None:
        if self.kind == "spark":
            self.spark.sql(f"DROP DATABASE IF EXISTS {self.folder} CASCADE")
        elif self.kind != "duckdb":
            services.drop_table(self.kind, self.name)


def _change(table: Table, columns: list[str], order, last: tuple, now: list[tuple], boundary: int) -> None:
    """One change at a page boundary, by turns; `last` is the last row given, `now` the rows in order."""
    at = [i for i, row in enumerate(table.rows) if _project(row, columns) == last]
    after = [r for r in now if order(r) > order(last)]
    turn = boundary % 6
    if turn == 1 and at:  # the last row given deleted
        del table.rows[at[0]]
    elif turn == 2 and at:  # ... or moved: changed on every column but id
        i, k, s, r = table.rows[at[0]]
        moved = TEXTS[(TEXTS.index(s) + 3) % len(TEXTS)]
        table.rows[at[0]] = (i, 1 if k is None else (k + 1) % 5, moved, round(r + 0.1, 1))
    elif turn == 3 and at:  # a copy of it added, and rows tied with it on the query's keys on both sides
        i, k, s, r = table.rows[at[0]]
        table.rows += [table.rows[at[0]], (-100 - boundary, k, s, r), (100 + boundary, k, s, r)]
    elif turn == 4 and after:  # the next row deleted
        del table.rows[next(j for j, row in enumerate(table.rows) if _project(row, columns) == after[0])]
    elif turn == 5 and at:  # the last row given deleted, the first one changed (for most orders: moved after it)
        del table.rows[at[0]]
        first = next((j for j, row in enumerate(table.rows) if _project(row, columns) == now[0]), None)
        if first is not None:
            table.rows[first] = (table.rows[first][0], 3, "b", 0.5)
    table.write()  # turn 0: nothing changes (the seek alone, exact on every key's type)


def _project(row: tuple, columns: list[str]) -> tuple:
    """A table row as the query's result row (4-byte floats to four places, as they compare here)."""
    return _normal(row[("id", "k", "s", "r").index(c)] for c in columns)


def _normal(row) -> tuple:
    return tuple(round(v, 4) if isinstance(v, float) else v for v in row)


def _walk(registry, name: str, table: Table, columns: list[str], order) -> tuple[int, int]:
    """Walk every page, changing the table between pages; each page must be what follows the last row given.
    The number of page boundaries, and of those among copies of one row."""
    given: list[tuple] = []
    cursor, last, skip, boundary, among_copies = None, None, 0, 0, 0
    while True:
        now = sorted((_project(row, columns) for row in table.rows), key=order)
        expected = now
        if last is not None:  # the rows after the last given; if it ended among copies, the copies not yet given
            copies = max(0, sum(r == last for r in now) - skip) if skip else 0
            expected = [last] * copies + [r for r in now if order(r) > order(last)]
        page = registry.call_sync(name, {CURSOR: cursor} if cursor else {})
        assert not page.is_error, page.content[0].text
        rows = [_normal(r) for r in page.structured_content.get("table", [[]])[1:]]  # none: the data changed
        assert rows == expected[:PAGE], (name, boundary, last, skip)
        given += rows
        cursor = (page.meta or {}).get(NEXT_CURSOR_META)
        if cursor is None:
            assert len(expected) <= PAGE
            return boundary, among_copies
        last = rows[-1]
        skip = 0
        if len(expected) > PAGE and expected[PAGE] == last:  # the page ended among copies
            while skip < len(given) and given[-1 - skip] == last:
                skip += 1
            among_copies += 1
        _change(table, columns, order, last, now, boundary)
        boundary += 1


@pytest.fixture
def no_read_ahead(monkeypatch):
    monkeypatch.setattr(pages, "READ_AHEAD", ReadAhead(budget=0))


@pytest.fixture
def collation(kind):
    """A case-insensitive collation of PostgreSQL's (ICU, nondeterministic) for its table ("": none made)."""
    if kind != "postgresql":
        yield ""
        return
    services.require("postgresql")
    name = services.unique_name("ci")
    with services.connect("postgresql") as con:
        con.execute(f"CREATE COLLATION {name} (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
    yield name
    with services.connect("postgresql") as con:
        con.execute(f"DROP COLLATION IF EXISTS {name} CASCADE")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["duckdb", "postgresql", "mariadb"])
def test_each_page_is_the_rows_after_the_last_one_given_as_the_data_now_stands(
    kind, shape, collation, tmp_path, monkeypatch, request, no_read_ahead
):
    monkeypatch.chdir(tmp_path)
    if kind == "duckdb":  # a view of a file the test rewrites
        types = "{'id': 'INTEGER', 'k': 'INTEGER', 's': 'VARCHAR', 'r': 'FLOAT'}"
        source = f"read_csv('t/*.csv', header=false, quote='\\\"', columns={types})"
        view = f"CREATE VIEW t AS SELECT id, k, s COLLATE NOCASE AS s, r FROM {source}"  # NOCASE: 'a' = 'A'
        config = f'connections:\n  db:\n    duckdb: ":memory:"\n    init: ["{view}"]\n'
    else:
        url = request.getfixturevalue("postgres_url" if kind == "postgresql" else "mariadb_url")
        config = f"connections:\n  db:\n    url: {url}\n"
    (tmp_path / "mcpgen.yaml").write_text(config)
    (tmp_path / "specs").mkdir()
    table = Table(kind, tmp_path, collation)
    try:
        _walk_in_pages(tmp_path, kind, table, shape)
    finally:
        table.drop()


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
@pytest.mark.parametrize("shape", SHAPES)
def test_spark_pages_are_the_rows_after_the_last_one_given_too(
    shape, spark_cluster, tmp_path, monkeypatch, no_read_ahead
):
    monkeypatch.chdir(tmp_path)
    database = services.unique_name("keyset")
    (tmp_path / "mcpgen.yaml").write_text(
        f"connections:\n  db:\n    spark: {spark_cluster.remote}\n    database: {database}\n"
    )
    (tmp_path / "specs").mkdir()
    table = Table("spark", database, "", spark=spark_cluster)
    try:
        _walk_in_pages(tmp_path, "spark", table, shape)
    finally:
        table.drop()


def _walk_in_pages(tmp_path, kind: str, table: Table, shape: str) -> None:
    """Serve `table` through a paged spec of `shape`'s order and walk it, changing it between pages."""
    columns, keys = SHAPES[shape]
    (tmp_path / "specs" / "rows.yaml").write_text(
        textwrap.dedent(f"""\
            description: Rows, in pages.
            connection: db
            sql: {_sql(table.name, columns, keys)}
            sources: [https://example.org/]
            content: "{{{{ row_count }}}} rows"
            page_size: {PAGE}
            """)
    )
    project = open_project(tmp_path / "specs")
    try:
        assert page_plan(project.engines["db"], project.loaded.specs[0]).keyset
        boundaries, among_copies = _walk(project.registry, "rows", table, columns, _order(kind, columns, keys))
        assert boundaries >= 8 and (among_copies >= 1 or shape != "copies")
    finally:
        project.close()


# -- ORDER BY shapes: walking every page gives the whole query, in its order --------------------------------------

LETTERS = [(i, 8 - i, "abcdefg"[i - 1]) for i in range(1, 8)]  # (a, b, s): each column unique, b falling as a rises
WALKS = {
    # a result column named as a column of the table that it is not: in an expression, the name means the table's
    # column on every engine (the pages once computed it from the result column: a + 0 ordered by b)
    "an_alias_shadowing_a_column": "SELECT b AS a, s FROM {t} ORDER BY a + 0",
    "an_alias_shadowing_a_column_descending": "SELECT s, a * 10 AS b FROM {t} ORDER BY -b DESC",
    # ... and a name that is only an alias means the result column
    "an_alias_alone": "SELECT s, b * 2 AS n FROM {t} ORDER BY n * -1",
    # every result column is a key: the seek past the last row given nests 40 deep, past what SQL parsers read
    "a_wide_result": "SELECT s, " + ", ".join(f"a + {i} AS a{i}" for i in range(40)) + " FROM {t} ORDER BY s DESC",
    # the ORDER BY chooses the row each group keeps (the last of each written): it stays in the query
    "distinct_on": "SELECT DISTINCT ON (g) a % 3 AS g, s FROM {t} ORDER BY g, s DESC",
}
ENGINES = ("duckdb", "sqlite", "postgresql", "mariadb")
ONLY = {"distinct_on": ("duckdb", "postgresql")}  # the engines whose SQL has the shape


@pytest.mark.parametrize(("kind", "shape"), [(k, s) for s in WALKS for k in ONLY.get(s, ENGINES)])
def test_walking_every_page_gives_the_whole_query_in_its_order(kind, shape, tmp_path, monkeypatch, no_read_ahead):
    monkeypatch.chdir(tmp_path)
    values = ", ".join(f"({a}, {b}, '{s}')" for a, b, s in LETTERS)
    table = "t" if kind in ("duckdb", "sqlite") else services.unique_name("walks")
    if kind == "duckdb":
        init = f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) v(a, b, s)"
        config = f'connections:\n  db:\n    duckdb: ":memory:"\n    init: ["{init}"]\n'
    elif kind == "sqlite":
        with sqlite3.connect(tmp_path / "t.db") as con:
            con.execute("CREATE TABLE t (a INTEGER, b INTEGER, s TEXT)")
            con.execute(f"INSERT INTO t VALUES {values}")
        config = "connections:\n  db:\n    url: sqlite:///t.db\n"
    else:
        url = services.require(kind)
        with services.connect(kind) as con:
            con.cursor().execute(f"CREATE TABLE {table} (a INT, b INT, s VARCHAR(8))")
            con.cursor().execute(f"INSERT INTO {table} VALUES {values}")
        config = f"connections:\n  db:\n    url: {url}\n"
    (tmp_path / "mcpgen.yaml").write_text(config)
    (tmp_path / "specs").mkdir()
    spec = f"description: Rows.\nconnection: db\nsql: {WALKS[shape].format(t=table)}\nsources: [https://example.org/]\n"
    spec += 'content: "{{ row_count }} rows"\n'
    (tmp_path / "specs" / "whole.yaml").write_text(spec)
    (tmp_path / "specs" / "rows.yaml").write_text(spec + "page_size: 2\n")
    project = open_project(tmp_path / "specs")
    try:
        whole = ok(project.registry.call_sync("whole", {})).structured_content["table"]
        assert follow(lambda a: project.registry.call_sync("rows", a), {}, 2, len(LETTERS)) == whole
    finally:
        project.close()
        if kind in ("postgresql", "mariadb"):
            services.drop_table(kind, table)
