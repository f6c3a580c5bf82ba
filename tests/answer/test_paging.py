"""Big answers: pages with signed cursors, prose cut with a sentence, the byte cap on the table."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path

import anyio
import duckdb
import pytest
import services
from mcp import Client, StdioServerParameters
from walks import follow, ok

from mcpgen.answer.compile import NOTE_ROOM
from mcpgen.answer.cursors import NEXT_CURSOR_META, Cursors, Position
from mcpgen.answer.numbers import FORMATS_META, column_formats
from mcpgen.answer.results import to_cell
from mcpgen.commands.validate import run_validate
from mcpgen.serve.project import open_project
from mcpgen.spec.models import CURSOR

REPO = Path(__file__).resolve().parents[2]
FLIGHTS = REPO / "examples" / "data" / "flights.parquet"
# (year, month, day, sched_dep_time, carrier, flight, origin) is unique: a total order, so pages are stable
FLIGHT_COLUMNS = "year, month, day, sched_dep_time, carrier, flight, origin, dep_delay, time_hour"
FLIGHT_ORDER = "year, month, day, sched_dep_time, carrier, flight, origin"

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    init: ["CREATE TABLE nums AS SELECT range AS n, 'row ' || range AS label FROM range(1000)"]
"""

NUMS = """\
description: Numbers below a bound.
parameters:
  below: {type: integer, description: Upper bound, default: 1000}
sql: SELECT n, label FROM nums WHERE n < :below ORDER BY n
sources: [https://example.org/]
content: "{{ row_count }} numbers from {{ rows[0].n }}"
page_size: 300
"""


@pytest.fixture
def make(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    opened = []

    def build(spec: str = NUMS, config: str = CONFIG, name: str = "nums"):
        (tmp_path / "mcpgen.yaml").write_text(config)
        specs = tmp_path / "specs"
        specs.mkdir(exist_ok=True)
        (specs / f"{name}.yaml").write_text(textwrap.dedent(spec))
        project = open_project(specs)
        opened.append(project)
        return project.registry

    yield build
    for project in opened:
        project.close()


def test_pages_cover_every_row_once_in_order(make):
    registry = make()
    first = ok(registry.call_sync("nums", {}))
    assert len(first.structured_content["table"]) == 301 and first.content[0].text.startswith("300 numbers from 0")
    assert "Rows 1 to 300; more remain" in first.content[0].text
    table = follow(lambda a: registry.call_sync("nums", a), {})
    assert table[1:] == [[n, f"row {n}"] for n in range(1000)]
    small = ok(registry.call_sync("nums", {"below": 10}))  # one page: no cursor, no note
    assert NEXT_CURSOR_META not in small.meta and "Rows" not in small.content[0].text


def test_the_cursor_is_published_in_the_input_schema(make):
    schema = make().get("nums").input_schema
    assert schema["properties"][CURSOR]["type"] == ["string", "null"]
    assert CURSOR not in schema.get("required", []) and schema["additionalProperties"] is False


def _next(registry, arguments=None) -> str:
    return ok(registry.call_sync("nums", arguments or {})).meta[NEXT_CURSOR_META]


@pytest.mark.parametrize(
    "change",
    ["forged", "altered offset", "altered signature", "other arguments", "not a string", "garbage"],
)
def test_a_cursor_that_was_not_given_for_this_answer_is_one_clear_error(make, change):
    registry = make()
    cursor = _next(registry)
    body, mac, kid = cursor.split(".")
    arguments: dict = {}
    if change == "forged":
        cursor = Cursors(b"x" * 32).issue("nums", "anything", Position(300))
    elif change == "altered offset":
        _, rest = base64.urlsafe_b64decode(body + "==").decode().split(".", 1)
        cursor = base64.urlsafe_b64encode(f"0.{rest}".encode()).decode().rstrip("=") + "." + mac + "." + kid
    elif change == "altered signature":
        cursor = body + "." + ("A" if mac[0] != "A" else "B") + mac[1:] + "." + kid
    elif change == "other arguments":
        arguments = {"below": 999}
    elif change == "not a string":
        cursor = 300  # type: ignore[assignment]
    else:
        cursor = "'; DROP TABLE nums; --"
    result = registry.call_sync("nums", {**arguments, CURSOR: cursor})
    assert result.is_error
    text = result.content[0].text
    assert text.startswith(f"Invalid argument '{CURSOR}'") and text.count(".") >= 1 and "\n" not in text


def test_an_expired_cursor_is_refused(make, monkeypatch):
    registry = make()
    cursor = _next(registry)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 7200)  # the default time to live is one hour
    result = registry.call_sync("nums", {CURSOR: cursor})
    assert result.is_error and "expired" in result.content[0].text


CACHED = CONFIG + "defaults: {cache: 1h}\ncursors: {ttl: 1s}\n"


@pytest.fixture
def clock(monkeypatch):
    """Moves both clocks (the cursors' wall clock, the cache's monotonic one) forward by hand."""
    offset = [0.0]
    real_time, real_monotonic = time.time, time.monotonic
    monkeypatch.setattr(time, "time", lambda: real_time() + offset[0])
    monkeypatch.setattr(time, "monotonic", lambda: real_monotonic() + offset[0])
    return offset


def test_an_expired_cursor_is_refused_even_when_its_page_is_cached(make, clock):
    registry = make(config=CACHED)
    cursor = _next(registry)
    second = ok(registry.call_sync("nums", {CURSOR: cursor}))
    assert second.meta["mcpgen/cache"] == "miss"
    assert ok(registry.call_sync("nums", {CURSOR: cursor})).meta["mcpgen/cache"] == "hit"
    clock[0] += 5
    result = registry.call_sync("nums", {CURSOR: cursor})
    assert result.is_error and "expired" in result.content[0].text


def test_a_cached_page_never_hands_out_an_expired_cursor(make, clock):
    registry = make(config=CACHED)
    _next(registry)
    clock[0] += 5  # past the cursor's time to live, well within the cache's hour
    fresh = ok(registry.call_sync("nums", {}))
    assert fresh.meta["mcpgen/cache"] == "miss"
    second = ok(registry.call_sync("nums", {CURSOR: fresh.meta[NEXT_CURSOR_META]}))
    assert second.structured_content["table"][1][0] == 300


def test_a_forged_cursor_for_a_cached_offset_is_refused(make):
    registry = make(config=CACHED)
    ok(registry.call_sync("nums", {CURSOR: _next(registry)}))  # the page at offset 300 is kept
    forged = Cursors(b"x" * 32, ttl=60).issue("nums", "anything", Position(300))
    result = registry.call_sync("nums", {CURSOR: forged})
    assert result.is_error and "does not continue" in result.content[0].text


def test_a_cursor_from_another_tool_or_spec_version_is_refused(make):
    cursor = _next(make())
    twin = make(NUMS, name="nums_twin")  # same SQL under another name
    assert "does not continue" in twin.call_sync("nums_twin", {CURSOR: cursor}).content[0].text
    changed = make(NUMS.replace("label FROM", "label, n * 2 AS twice FROM"))  # the spec changed: a new version
    assert changed.call_sync("nums", {CURSOR: cursor}).is_error
    same = make()
    assert not same.call_sync("nums", {CURSOR: cursor}).is_error  # the same project: the cursor still works
    moved = make(config=CONFIG + "defaults: {timeout: 5s}\n")  # the project's settings changed
    assert moved.call_sync("nums", {CURSOR: cursor}).is_error


def test_replicas_sharing_a_key_accept_each_other_s_cursors(make, monkeypatch):
    monkeypatch.setenv("MCPGEN_TEST_CURSOR_KEY", "k" * 32)
    config = CONFIG + "cursors: {secret_env: MCPGEN_TEST_CURSOR_KEY}\n"
    cursor = _next(make(config=config))
    other_replica = make(config=config)
    assert ok(other_replica.call_sync("nums", {CURSOR: cursor})).structured_content["table"][1][0] == 300
    assert make().call_sync("nums", {CURSOR: cursor}).is_error  # no key configured: this process's own


def test_a_configured_key_must_be_set(make, monkeypatch):
    monkeypatch.delenv("MCPGEN_TEST_CURSOR_KEY", raising=False)
    with pytest.raises(Exception, match="cursors.secret_env names MCPGEN_TEST_CURSOR_KEY"):
        make(config=CONFIG + "cursors: {secret_env: MCPGEN_TEST_CURSOR_KEY}\n")


def test_validate_wants_order_by_for_pages_and_warns_on_long_loops(tmp_path):
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "unordered.yaml").write_text(NUMS.replace(" ORDER BY n", ""))
    (specs / "inner_order.yaml").write_text(
        NUMS.replace(
            "SELECT n, label FROM nums WHERE n < :below ORDER BY n", "SELECT * FROM (SELECT n FROM nums ORDER BY n) t"
        )
    )
    (specs / "own_limit.yaml").write_text(NUMS.replace("ORDER BY n", "ORDER BY n LIMIT :below"))
    (specs / "takes_cursor.yaml").write_text(
        NUMS.replace("  below:", "  cursor: {type: string, description: x, required: false}\n  below:")
    )
    loop = "{% for r in rows %}{{ r.n }} {% endfor %}"
    (specs / "long_loop.yaml").write_text(
        NUMS.replace("page_size: 300", "max_rows: 100000").replace(
            '"{{ row_count }} numbers from {{ rows[0].n }}"', f'"{loop}"'
        )
    )
    (specs / "short_loop.yaml").write_text(
        NUMS.replace("page_size: 300", "max_rows: 100000")
        .replace('"{{ row_count }} numbers from {{ rows[0].n }}"', f'"{loop}"')
        .replace("ORDER BY n", "ORDER BY n LIMIT 20")
    )
    report = run_validate(specs)
    found = {(Path(p.path).stem, p.severity): p.message for p in report.problems}
    assert "ORDER BY" in found[("unordered", "error")]
    assert "ORDER BY" in found[("inner_order", "error")]
    assert "'cursor'" in found[("takes_cursor", "error")]
    assert "LIMIT" in found[("own_limit", "error")]
    assert "up to 100,000 rows" in found[("long_loop", "warning")]
    assert not any(stem == "short_loop" for stem, _ in found)


def test_prose_past_the_cap_is_cut_with_a_sentence(make):
    spec = NUMS.replace("page_size: 300", "").replace(
        '"{{ row_count }} numbers from {{ rows[0].n }}"', '"{% for r in rows %}{{ r.label * 20 }}\\n{% endfor %}"'
    )
    result = ok(make(spec).call_sync("nums", {}))  # 1,000 lines of ~120 characters: past 100,000
    text = result.content[0].text
    assert len(text) <= 100_200 and text.endswith("(The text stops here: it reached the limit of 100,000 characters.)")
    assert len(result.structured_content["table"]) == 1001  # the table still holds every row


def test_max_bytes_cuts_the_table_and_says_so(make):
    spec = NUMS.replace("page_size: 300", "max_bytes: 5000").replace("n, label", "n, label, label AS again")
    result = ok(make(spec).call_sync("nums", {}))
    table = result.structured_content["table"]
    assert 10 < len(table) - 1 < 1000
    assert table[1:] == [[n, f"row {n}", f"row {n}"] for n in range(len(table) - 1)]
    assert f"first {len(table) - 1:,} of 1,000 rows" in result.content[0].text
    size = len(result.content[0].text) + len(json.dumps(result.structured_content))
    assert size <= 5000


def test_a_cut_table_formats_its_numbers_from_the_rows_it_keeps(make):
    """The number formats go with the table sent: the rows cut for max_bytes, with three decimals, count for nothing."""
    spec = NUMS.replace("page_size: 300", "max_bytes: 5000").replace(
        "n, label", "n, label, CASE WHEN n < 900 THEN n / 2 ELSE n / 8 END AS x"
    )
    result = ok(make(spec).call_sync("nums", {}))
    table = result.structured_content["table"]
    assert 10 < len(table) - 1 < 900
    assert (
        result.meta[FORMATS_META]
        == column_formats(table)
        == [{"decimals": 0, "grouping": True}, None, {"decimals": 1, "grouping": True}]
    )
    whole = ok(make(spec.replace("max_bytes: 5000", "max_bytes: 1000000")).call_sync("nums", {}))
    assert whole.meta[FORMATS_META][2] == {"decimals": 3, "grouping": True}  # 999 / 8 = 124.875


# --- the 336,776-row flights table, paged through the real server, against the query run directly ---


def _flights_spec(table: str, connection: str = "default") -> str:
    return textwrap.dedent(f"""\
        description: Every flight, in pages.
        connection: {connection}
        sql: SELECT {FLIGHT_COLUMNS} FROM {table} ORDER BY {FLIGHT_ORDER}
        sources: [https://github.com/hadley/nycflights13]
        content: "{{{{ row_count }}}} flights"
        page_size: 60000
        max_bytes: 100000000
        """)


def _served_pages(specs: Path) -> list[list]:
    async def main():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcpgen.cli", "serve", str(specs)], cwd=REPO, env=dict(os.environ)
        )  # this checkout's mcpgen and the tests' settings, not only the SDK's default variables
        async with Client(params) as client:
            return await follow_async(client)

    async def follow_async(client):
        rows, cursor = [], None
        while True:
            page = await client.call_tool("flights_pages", {CURSOR: cursor} if cursor else {})
            ok(page)
            header, *body = page.structured_content["table"]
            rows += body
            cursor = (page.meta or {}).get(NEXT_CURSOR_META)
            if cursor is None:
                return [header, *rows]

    return anyio.run(main)


def _direct(sql: str) -> list[list]:
    con = duckdb.connect()
    cur = con.execute(sql)
    header = [d[0] for d in cur.description]
    return [header, *([to_cell(v) for v in row] for row in cur.fetchall())]


# 336,776 rows served, paged and compared: CPU-bound, a minute and a half on a loaded machine under -n 2 (load
# average 20), too near the default 120 s timeout, past which a stuck test ends the run.
FLIGHTS_TIMEOUT = pytest.mark.timeout(600)


@pytest.mark.slow
@FLIGHTS_TIMEOUT
def test_flights_pages_on_duckdb_concatenate_to_the_full_result(tmp_path):
    shutil.copyfile(FLIGHTS, tmp_path / "flights.parquet")  # DuckDB reads only under the project's folder
    (tmp_path / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\n"
        "    init: [\"CREATE TABLE flights AS SELECT * FROM read_parquet('flights.parquet')\"]\n"
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "flights_pages.yaml").write_text(_flights_spec("flights"))
    served = _served_pages(tmp_path / "specs")
    direct = _direct(f"SELECT {FLIGHT_COLUMNS} FROM '{FLIGHTS}' ORDER BY {FLIGHT_ORDER}")
    assert len(served) - 1 == 336_776
    assert served == direct


@pytest.mark.slow
@FLIGHTS_TIMEOUT
def test_flights_pages_on_postgresql_concatenate_to_the_full_result(tmp_path, postgres_url):
    table = services.unique_name("flights")
    source = duckdb.connect()
    rows = source.execute(f"SELECT {FLIGHT_COLUMNS} FROM '{FLIGHTS}'").fetchall()
    try:
        with services.connect("postgresql") as con:
            cur = con.cursor()
            cur.execute(
                f"CREATE TABLE {table} (year int, month int, day int, sched_dep_time int, carrier text, "
                "flight int, origin text, dep_delay int, time_hour timestamptz)"
            )
            with cur.copy(f"COPY {table} ({FLIGHT_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  pg:\n    url: {postgres_url}\n")
        (tmp_path / "specs").mkdir()
        (tmp_path / "specs" / "flights_pages.yaml").write_text(_flights_spec(table, "pg"))
        served = _served_pages(tmp_path / "specs")
        with services.connect("postgresql") as con:
            cur = con.cursor()
            cur.execute(f"SELECT {FLIGHT_COLUMNS} FROM {table} ORDER BY {FLIGHT_ORDER}")
            direct = [[d.name for d in cur.description], *([to_cell(v) for v in row] for row in cur.fetchall())]
        assert len(served) - 1 == 336_776
        assert served == direct
    finally:
        services.drop_table("postgresql", table)


# --- every SQLAlchemy backend pages the same way: a LIMIT/OFFSET around the query, bound values ---


@pytest.mark.parametrize("kind", ["postgresql", "mariadb", "sqlite"])
def test_pages_on_every_sqlalchemy_backend_equal_the_query(kind, request, tmp_path, monkeypatch, city_rows):
    monkeypatch.chdir(tmp_path)
    if kind == "sqlite":
        services.load_cities("sqlite", "cities", city_rows, sqlite_path=tmp_path / "cities.db")
        url, table = "sqlite:///cities.db", "cities"
    else:
        prefix = "postgres" if kind == "postgresql" else kind
        url, table = request.getfixturevalue(f"{prefix}_url"), request.getfixturevalue(f"{prefix}_cities")
    sql = f"SELECT geonameid, name, population FROM {table} WHERE country_code = :cc ORDER BY geonameid"
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  db:\n    url: {url}\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "cities_pages.yaml").write_text(
        textwrap.dedent(f"""\
            description: Cities of a country, in pages.
            connection: db
            parameters:
              cc: {{type: string, description: Country code}}
            sql: {sql}
            sources: [https://www.geonames.org/]
            content: "{{{{ row_count }}}} cities"
            page_size: 40
            """)
    )
    project = open_project(tmp_path / "specs")
    try:
        served = follow(lambda a: project.registry.call_sync("cities_pages", a), {"cc": "JP"})
    finally:
        project.close()
    expected = sorted((r[0], r[1], r[4]) for r in city_rows if r[2] == "JP")
    assert len(expected) > 100  # several pages
    assert served == [["geonameid", "name", "population"], *([list(r) for r in expected])]


SERIES = """\
description: A long series chart.
sql: SELECT 'label ' || n AS x, 'series ' || (n % {kinds}) AS s, n AS y FROM nums WHERE n < 400 ORDER BY n
sources: [https://example.org/]
content: "{{{{ row_count }}}} rows"
chart: {{type: line, x: x, y: y, series: s}}
max_bytes: 100000
"""


@pytest.mark.parametrize("kinds", [400, 40, 1])
def test_max_bytes_holds_a_series_chart_whose_pivot_grows_as_labels_times_series(make, kinds):
    registry = make(SERIES.format(kinds=kinds), name="series")
    result = ok(registry.call_sync("series", {}))
    size = len(result.to_mcp().model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size <= 100_000, size  # the whole answer, in real bytes
    kept = len(result.structured_content["table"]) - 1
    if kinds == 1:  # no pivot to speak of: every row fits
        assert kept == 400
    else:
        assert 0 < kept < 400 and f"first {kept:,} of 400 rows" in result.content[0].text
        labels = result.structured_content["charts"][0]["data"]["labels"]
        assert len(labels) == kept  # the chart holds the same rows as the table


# --- every cap of an answer counts real bytes, whatever the rows hold ---------------------------------

WIDE = "\N{GRINNING FACE}"  # four bytes in UTF-8, one character
HOSTILE_ANSWERS = {
    "wide unicode cells": ("n, repeat('\N{GRINNING FACE}', 200) AS label", "{{ row_count }} rows", ""),
    "control characters": ("n, repeat(chr(1), 300) AS label", "{{ row_count }} rows", ""),  # six bytes each
    "many columns": ("n, " + ", ".join(f"label || '{WIDE}' AS c{i}" for i in range(300)), "{{ row_count }} rows", ""),
    "wide prose": ("n, label", f"{{% for r in rows %}}{WIDE * 90}{{{{ r.label }}}}\\n{{% endfor %}}", ""),
    "wide force text": ("n, label", "{{ row_count }} rows", f"{{% for r in rows %}}{WIDE * 90}\\n{{% endfor %}}"),
    "long values": ("n, repeat('x', 60000) AS label", "{{ row_count }} rows", ""),  # one cell over max_bytes
}


@pytest.mark.parametrize(("select", "content", "force"), HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_max_bytes_holds_the_whole_answer_in_real_bytes(make, select, content, force):
    """Prose, force text, table and charts together stay within max_bytes as the answer is sent (UTF-8
    JSON), with wide characters, escaped control characters, many columns and long values; the table keeps
    the longest head that fits and the prose says so."""
    spec = textwrap.dedent(f"""\
        description: A hostile answer.
        sql: SELECT n AS y, {select} FROM nums ORDER BY n
        sources: [https://example.org/]
        content: "{content}"
        chart: {{type: bar, x: n, y: y}}
        max_bytes: 50000
        """) + (f'force: "{force}"\n' if force else "")
    result = ok(make(spec, name="hostile").call_sync("hostile", {}))
    size = len(result.to_mcp().model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size <= 50_000, size
    kept = len(result.structured_content["table"]) - 1
    assert kept < 1000 and f"first {kept:,} of 1,000 rows" in result.content[0].text
    if "wide" in content or "wide" in force:
        assert kept > 0  # the cut prose or force leaves room for rows


@pytest.mark.parametrize("kinds", [400, 40])
def test_max_bytes_holds_a_wide_unicode_series_chart(make, kinds):
    spec = SERIES.format(kinds=kinds).replace("'label ' || n", f"repeat('{WIDE}', 30) || n")
    result = ok(make(spec, name="series").call_sync("series", {}))
    size = len(result.to_mcp().model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size <= 100_000, size
    kept = len(result.structured_content["table"]) - 1
    assert 0 < kept < 400 and len(result.structured_content["charts"][0]["data"]["labels"]) == kept


CURSOR_KEYS = {
    "a long sort key": "SELECT n, repeat('x', 20000) || lpad(n::VARCHAR, 4, '0') AS k FROM nums ORDER BY k",
    "a wide unicode sort key": f"SELECT n, repeat('{WIDE}', 5000) || lpad(n::VARCHAR, 4, '0') AS k FROM nums ORDER BY k",
    "many sort columns": "SELECT n, "
    + ", ".join(f"label || repeat('y', 40) || '{i}' AS k{i}" for i in range(60))
    + " FROM nums ORDER BY n DESC, "
    + ", ".join(f"k{i}" for i in range(60)),
}


@pytest.mark.parametrize("sql", CURSOR_KEYS.values(), ids=CURSOR_KEYS.keys())
def test_a_cursor_stays_small_whatever_the_sort_key_holds(make, sql):
    """A keyset cursor carries the last row's sort key; past MAX_CURSOR_KEY bytes it carries none and the
    next page starts by OFFSET: every cursor is at most about a kilobyte, and the pages still hold each
    row once, in order."""
    spec = textwrap.dedent(f"""\
        description: Pages over a hostile sort key.
        sql: "{sql}"
        sources: [https://example.org/]
        content: "{{{{ row_count }}}} rows"
        page_size: 150
        max_bytes: 100000000
        """)
    registry = make(spec, name="keys")
    cursors: list[str] = []

    def call(arguments):
        result = registry.call_sync("keys", arguments)
        if (result.meta or {}).get(NEXT_CURSOR_META):
            cursors.append(result.meta[NEXT_CURSOR_META])
        return result

    table = follow(call, {})
    assert len(cursors) == 6 and max(map(len, cursors)) <= 1024, [len(c) for c in cursors]
    numbers = [row[0] for row in table[1:]]
    assert sorted(numbers) == list(range(1000)) and numbers == (sorted(numbers, reverse="DESC" in sql))


# --- the prose's share of max_bytes, to the byte ------------------------------------------------------


@pytest.mark.parametrize("over", [0, 1], ids=["exactly at the limit", "one byte over"])
@pytest.mark.parametrize("page", [False, True], ids=["truncated", "paged"])
def test_prose_exactly_at_its_share_of_max_bytes_is_kept_and_one_byte_more_is_cut(make, over, page):
    """The prose gets what max_bytes leaves after the sources, the note (truncated, or the page's) and the
    cursor, counted as UTF-8 JSON: wide characters, a quote, a backslash and a control character (escaped)
    in the prose, the note's escaped line breaks. A prose that takes exactly its share is sent whole; one
    byte more, and it is cut, saying so."""
    share = 5000 - NOTE_ROOM - len(json.dumps({"sources": ["https://example.org/"]}))
    probe = ok(make(_prose_spec("x", page), name="prose").call_sync("prose", {}))
    note = probe.content[0].text.removeprefix("x")  # what the answer adds after the prose
    assert note.startswith("\n\n(")
    cursor = len(json.dumps(probe.meta[NEXT_CURSOR_META])) if page else 0
    share -= len(json.dumps(note, ensure_ascii=False).encode()) + cursor
    head = f'caf\N{LATIN SMALL LETTER E WITH ACUTE} "{WIDE}" \\ \x01 '
    fill = share - len(json.dumps(head, ensure_ascii=False).encode()) + over
    prose = head + "y" * fill
    assert len(json.dumps(prose, ensure_ascii=False).encode()) == share + over
    text = ok(make(_prose_spec(prose, page), name="prose").call_sync("prose", {})).content[0].text
    if over:
        assert text.startswith(head) and "The text stops here" in text and "bytes" in text
    else:  # whole, then the note (a page's cursor differs from the probe's, not its length)
        assert text.startswith(prose + "\n\n(") and len(text) == len(prose + note)


def _prose_spec(prose: str, page: bool) -> str:
    """A tool of `prose` whose query matches more rows than it shows: a page of them, or the first max_rows."""
    literal = json.dumps(prose, ensure_ascii=False)  # YAML reads JSON's string escapes
    return (
        textwrap.dedent("""\
        description: Prose of a set size.
        sql: SELECT n FROM nums ORDER BY n
        sources: [https://example.org/]
        table: false
        max_bytes: 5000
        """)
        + f"content: {literal}\n"
        + ("page_size: 5\n" if page else "max_rows: 5\n")
    )
