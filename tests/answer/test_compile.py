"""Specs compiled and called: the answer's prose, table, charts, sources and force text."""

import textwrap

import pytest

from mcpgen import logs
from mcpgen.errors import SpecError
from mcpgen.serve.project import open_project

CSV = (
    "city,country,population,founded\nOslo,NO,709037,1040-01-01\nBergen,NO,285911,1070-01-01\n"
    "Tokyo,JP,9733276,1457-01-01\nDuplicate,JP,1,2000-01-01\n"
)


@pytest.fixture
def make(tmp_path, monkeypatch):
    """Write one spec (YAML body) into a fresh project and open it."""
    monkeypatch.chdir(tmp_path)  # open_project changes directory; monkeypatch puts it back
    (tmp_path / "data.csv").write_text(CSV)
    (tmp_path / "mcpgen.yaml").write_text(
        textwrap.dedent("""\
        connections:
          default:
            duckdb: ":memory:"
            init: ["CREATE TABLE cities AS SELECT * FROM read_csv('data.csv')"]
        defaults: {max_rows: 3}
        """)
    )
    opened = []

    def build(body: str, columns: bool = True):
        specs = tmp_path / "specs"
        specs.mkdir(exist_ok=True)
        (specs / "tool.yaml").write_text(textwrap.dedent(body))
        project = open_project(specs, columns=columns)
        opened.append(project)
        return project.registry

    yield build
    for project in opened:
        project.close()


BASE = """\
description: Cities.
parameters:
  country: {type: string, description: Country code, required: false}
sql: SELECT city, population FROM cities WHERE :country IS NULL OR country = :country ORDER BY population DESC
sources: ["https://example.org/{{ country }}?q=1"]
"""


def test_prose_table_chart_sources_and_force(make):
    registry = make(
        BASE
        + """\
content: "{% for r in rows %}{{ r.city }} {{ r.population | thousands }}{{ ', ' if not loop.last }}{% endfor %}"
force: "{{ row_count }} rows from GeoNames"
table: {columns: [population, city], headers: {city: City}}
chart: {type: bar, x: city, y: population, title: People}
"""
    )
    result = registry.call_sync("tool", {"country": "NO"})
    assert not result.is_error
    assert result.content[0].text == "Oslo 709,037, Bergen 285,911"
    data = result.structured_content
    assert data["table"] == [["population", "City"], [709037, "Oslo"], [285911, "Bergen"]]
    assert data["charts"][0]["data"] == {
        "labels": ["Oslo", "Bergen"],
        "datasets": [{"label": "population", "data": [709037, 285911]}],
    }
    assert data["charts"][0]["options"]["plugins"]["title"]["text"] == "People"
    assert data["sources"] == ["https://example.org/NO?q=1"]
    assert data["force"] == "2 rows from GeoNames"


def test_source_values_are_url_encoded(make):
    registry = make(BASE + "content: x\n")
    assert registry.call_sync("tool", {"country": "a b/&"}).structured_content["sources"] == [
        "https://example.org/a%20b%2F%26?q=1"
    ]


def test_truncation_is_said_in_the_prose_and_the_table_keeps_max_rows(make):
    registry = make(BASE + 'content: "{{ row_count }} of max {{ max_rows }}, truncated={{ truncated }}"\n')
    result = registry.call_sync("tool", {})
    assert result.content[0].text.startswith("3 of max 3, truncated=True")
    assert "Only the first 3 rows are shown" in result.content[0].text
    assert len(result.structured_content["table"]) == 4


def test_no_rows_uses_empty_or_the_default_sentence(make):
    registry = make(BASE + "content: x\n")
    assert registry.call_sync("tool", {"country": "SE"}).content[0].text == "No rows matched."


def test_an_empty_answer_cites_the_dataset_not_a_page_made_from_the_arguments(make):
    two = BASE.replace(
        'sources: ["https://example.org/{{ country }}?q=1"]',
        'sources: ["https://example.org/{{ country }}?q=1", "https://example.org/cities"]',
    )
    registry = make(two + "content: x\n")
    assert registry.call_sync("tool", {"country": "NO"}).structured_content["sources"] == [
        "https://example.org/NO?q=1",
        "https://example.org/cities",
    ]
    assert registry.call_sync("tool", {"country": "XX"}).structured_content["sources"] == ["https://example.org/cities"]


def test_empty_may_choose_its_own_sources(make):
    registry = make(
        BASE + "content: x\nempty:\n  content: 'No city in {{ country }}.'\n"
        "  sources: ['https://example.org/search?q={{ country }}']\n"
    )
    result = registry.call_sync("tool", {"country": "XX"})
    assert result.content[0].text == "No city in XX."
    assert result.structured_content["sources"] == ["https://example.org/search?q=XX"]
    assert registry.call_sync("tool", {"country": "NO"}).structured_content["sources"] == ["https://example.org/NO?q=1"]


def test_no_rows_sends_no_header_only_table_and_no_empty_chart(make):
    registry = make(
        BASE + "content: x\nforce: 'Checked {{ row_count }} rows'\nchart: {type: bar, x: city, y: population}\n"
    )
    result = registry.call_sync("tool", {"country": "SE"})
    assert result.structured_content == {"sources": ["https://example.org/SE?q=1"], "force": "Checked 0 rows"}
    assert result.meta is None
    full = registry.call_sync("tool", {"country": "NO"}).structured_content
    assert len(full["table"]) == 3 and len(full["charts"]) == 1


def test_truncation_is_in_the_result_meta_for_the_app(make):
    registry = make(BASE + "content: x\n")
    assert registry.call_sync("tool", {}).meta["mcpgen/truncated"] == {"max_rows": 3}
    assert "mcpgen/truncated" not in registry.call_sync("tool", {"country": "NO"}).meta  # 2 rows: all of them


def test_empty_template_and_table_false(make):
    registry = make(BASE + "content: x\nempty: 'Nothing in {{ country }}.'\ntable: false\n")
    result = registry.call_sync("tool", {"country": "SE"})
    assert result.content[0].text == "Nothing in SE."
    assert "table" not in result.structured_content


def test_duplicate_column_names_stop_the_start(make):
    with pytest.raises(SpecError) as info:
        make(BASE.replace("SELECT city, population", "SELECT city, population AS city") + "content: x\n")
    [problem] = info.value.problems
    assert problem.line == 4 and problem.message.startswith("the query returns column city more than once")


def test_duplicate_column_names_are_a_clear_error_at_call_time_too(make):
    # What stands behind the start-up check (and serves SQLAlchemy connections, not described at start).
    body = BASE.replace("SELECT city, population", "SELECT city, population AS city") + "content: x\n"
    registry = make(body, columns=False)
    result = registry.call_sync("tool", {})
    assert result.is_error
    assert (
        result.content[0].text == "The query returns column city more than once; give each column its own name with AS."
    )


def test_dates_bind_as_dates_and_cells_are_iso(make):
    registry = make("""\
description: Founded after.
parameters:
  after: {type: date, description: A date}
sql: SELECT city, CAST(founded AS DATE) AS founded FROM cities WHERE CAST(founded AS DATE) > :after ORDER BY 2
sources: ["https://example.org/"]
content: "{% for r in rows %}{{ r.founded | date('%Y') }} {% endfor %}"
""")
    result = registry.call_sync("tool", {"after": "1060-01-01"})
    assert result.content[0].text == "1070 1457 2000"
    assert result.structured_content["table"][1] == ["Bergen", "1070-01-01"]


def test_a_template_error_at_run_time_is_a_clear_error_and_the_tool_keeps_working(make):
    registry = make(BASE + "content: '{{ rows[5].city }}'\n")
    failed = registry.call_sync("tool", {})
    assert failed.is_error and "undefined" in failed.content[0].text
    assert registry.call_sync("tool", {"country": "NO"}).is_error  # still the same template
    assert not make(BASE + "content: ok\n").call_sync("tool", {}).is_error


def test_call_log_line_of_a_url_connection_has_rows_and_truncated(tmp_path, monkeypatch, caplog):
    # The engine reports rows and truncation in its QueryResult; SQLite stands for every url: engine.
    import csv
    import io
    import logging
    import sqlite3

    monkeypatch.chdir(tmp_path)
    rows = list(csv.reader(io.StringIO(CSV)))[1:]
    with sqlite3.connect(tmp_path / "cities.db") as con:
        con.execute("CREATE TABLE cities (city TEXT, country TEXT, population INTEGER, founded TEXT)")
        con.executemany("INSERT INTO cities VALUES (?, ?, ?, ?)", rows)
    (tmp_path / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    url: sqlite:///cities.db\ndefaults: {max_rows: 3}\n"
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tool.yaml").write_text(BASE + 'content: "{{ row_count }}"\n')
    project = open_project(specs)
    try:
        with caplog.at_level(logging.INFO, logger="mcpgen.calls"):
            for country in ("JP", None):
                assert not project.registry.call_sync("tool", {"country": country}).is_error
            logs.flush_calls()  # lines are written by a thread
    finally:
        project.close()
    with sqlite3.connect(tmp_path / "cities.db") as con:
        japan = con.execute("SELECT count(*) FROM cities WHERE country = 'JP'").fetchone()[0]
        everywhere = con.execute("SELECT count(*) FROM cities").fetchone()[0]
    assert (japan, everywhere) == (2, 4)  # one call under the cap of 3, one over it
    lines = [r for r in caplog.records if r.name == "mcpgen.calls"]
    assert [r.getMessage().split(" ", 3)[3] for r in lines] == [
        f"rows={japan} truncated=false error=- cache=-",
        "rows=3 truncated=true error=- cache=-",
    ]
    assert all(r.fields["query_ms"] >= 0 for r in lines)


@pytest.mark.parametrize(
    "force",
    [
        "'{% if truncated %}Only the first {{ max_rows }} rows are shown.{% endif %}'",
        "'{{ \"\" }}   '",
        '"{% for r in rows if r.population > 10**9 %}{{ r.city }}{% endfor %}\\n\\t"',
    ],
    ids=["if-truncated", "blank", "loop-over-nothing"],
)
def test_a_force_that_renders_to_nothing_is_no_force(make, force):
    """structuredContent carries no `force` when its text is empty or only white space (the app then
    draws no box); the same template with something to say is sent as rendered."""
    registry = make(BASE + f"content: x\nforce: {force}\n")
    untruncated = registry.call_sync("tool", {"country": "NO"}).structured_content  # 2 rows, under max_rows 3
    assert "force" not in untruncated and len(untruncated["table"]) == 3
    if "truncated" in force:
        assert registry.call_sync("tool", {}).structured_content["force"] == "Only the first 3 rows are shown."


def test_timestamps_read_the_same_in_the_prose_as_in_the_table(make):
    """A timestamp, a time and a zoned timestamp print in the prose exactly as their table cells."""
    registry = make(
        """\
description: Times.
sql: >
  SELECT TIMESTAMP '2013-01-01 05:30:00' AS at, TIME '07:15:00' AS t, TIMESTAMPTZ '2013-06-01 12:00:00+00' AS z,
  DATE '2013-01-02' AS d
sources: ["https://example.org/"]
content: "{{ rows[0].at }}|{{ rows[0].t }}|{{ rows[0].z }}|{{ rows[0].d }}|{% for r in rows %}{{ r.at }}{% endfor %}"
"""
    )
    result = registry.call_sync("tool", {})
    header, row = result.structured_content["table"]
    assert header == ["at", "t", "z", "d"]
    assert result.content[0].text == "|".join([*map(str, row), row[0]])
    assert row[0] == "2013-01-01T05:30:00"


def test_a_kept_statement_is_not_prepared_again(make, tmp_path):
    """A spec whose query was prepared and described in this state of the data (`load.checked`) runs the
    statement kept with that fact: compiling it prepares nothing."""
    from mcpgen.answer.compile import compile_spec

    registry = make(BASE + 'content: "{{ row_count }} cities"\n')
    project = open_project(tmp_path / "specs")
    try:
        engine = project.engines["default"]
        kept = registry.get("tool").handler.query
        made, prepare = [], engine.prepare
        engine.prepare = lambda sql, types=None: made.append(sql) or prepare(sql, types)
        tool = compile_spec(project.loaded.specs[0], engine, project.loaded.config.defaults, query=kept)
        assert tool.handler.query is kept and made == []
        assert tool.handler({"country": "JP"}).result.structured_content["table"][1:]
    finally:
        project.close()
