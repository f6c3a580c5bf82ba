"""Opening a project: specs, Python tools, connections; every problem reported with file:line."""

import textwrap
from pathlib import Path

import pytest

from mcpgen.errors import SpecError
from mcpgen.serve.project import open_project

SPEC = """\
description: One.
sql: SELECT 1 AS one
sources: ["https://example.org/"]
content: "{{ rows[0].one }}"
"""

TOOL = """\
from mcp.types import CallToolResult, TextContent
from mcpgen import registry, DataToolOutput


@registry.tool()
def {name}() -> DataToolOutput:
    '''A Python tool.'''
    return CallToolResult(content=[TextContent(type="text", text="hi")],
                          structured_content={{"sources": ["https://example.org/"]}})
"""


@pytest.fixture
def specs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "specs"
    folder.mkdir()
    return folder


def problems(specs) -> list[str]:
    with pytest.raises(SpecError) as info:
        open_project(specs)
    return [str(p) for p in info.value.problems]


def test_specs_and_python_tools_are_served_together(specs):
    (specs / "one.yaml").write_text(SPEC)
    (specs / "tools.py").write_text(TOOL.format(name="hello"))
    project = open_project(specs)
    try:
        assert project.registry.names() == ["one", "hello"]
        assert project.registry.call_sync("one").content[0].text == "1"
        assert project.registry.call_sync("hello").structured_content == {"sources": ["https://example.org/"]}
    finally:
        project.close()


def test_a_python_tool_named_like_a_spec_is_refused(specs):
    (specs / "one.yaml").write_text(SPEC)
    (specs / "tools.py").write_text(TOOL.format(name="one"))
    [message] = problems(specs)
    assert message.startswith(str(specs / "tools.py"))
    assert "tool name 'one' is already used by" in message


def test_a_failing_python_file_names_its_line(specs):
    (specs / "broken.py").write_text("x = 1\nraise RuntimeError('boom')\n")
    [message] = problems(specs)
    assert message == f"{specs / 'broken.py'}:2: importing the file failed: RuntimeError: boom"
    (specs / "broken.py").write_text("def f(:\n")
    [message] = problems(specs)
    assert message.startswith(f"{specs / 'broken.py'}:1:") and "syntax error" in message


def test_an_undefined_connection_and_a_failing_init_are_reported(specs):
    (specs / "one.yaml").write_text(SPEC + "connection: warehouse\n")
    [message] = problems(specs)
    assert message.startswith(f"{specs / 'one.yaml'}:5:1:") and "connection 'warehouse' is not defined" in message
    (specs / "one.yaml").write_text(SPEC)
    (specs.parent / "mcpgen.yaml").write_text(
        textwrap.dedent("""\
        connections:
          default: {duckdb: ":memory:", init: ["CREATE TABLE t AS SELECT * FROM nope"]}
        """)
    )
    [message] = problems(specs)
    assert "init statement 1 failed" in message and "nope" in message


def test_every_problem_of_a_folder_is_reported_at_once(specs):
    (specs / "a.yaml").write_text(SPEC + "titel: typo\n")
    (specs / "b.yaml").write_text(SPEC.replace("SELECT 1 AS one", "DELETE FROM t"))
    (specs / "c.yaml").write_text(SPEC.replace("{{ rows[0].one }}", "{{ yaer }}"))
    found = problems(specs)
    assert len(found) == 3
    assert found[0].startswith(f"{specs / 'a.yaml'}:5:1: unknown key 'titel'")
    assert found[1].startswith(f"{specs / 'b.yaml'}:2:") and "DELETE" in found[1]
    assert found[2].startswith(f"{specs / 'c.yaml'}:4:") and "yaer" in found[2]


def test_an_empty_folder_is_refused_not_served_with_no_tools(specs):
    assert problems(specs) == [f"{specs}: no spec files (*.yaml, *.yml) in {specs}"]


def test_a_column_the_query_does_not_return_stops_the_start(specs):
    (specs / "one.yaml").write_text(SPEC.replace("{{ rows[0].one }}", "{{ rows[0].won }}"))
    [message] = problems(specs)
    assert message.startswith(f"{specs / 'one.yaml'}:4:")
    assert (
        "the template reads column 'won' of a row, which the query does not return (the query returns one)" in message
    )
    assert message.endswith("did you mean 'one'?")


DESCRIBED_CONFIG = """\
connections:
  default:
    duckdb: ':memory:'
    init:
      - CREATE VIEW towns AS SELECT * FROM read_csv('data/towns.csv')
"""
DESCRIBED_SPEC = """\
description: Towns by size.
sql: SELECT * FROM towns ORDER BY people DESC
content: "{% for r in rows %}{{ r.name }} has {{ r.people }} people. {% endfor %}"
table: {columns: [name, people]}
sources: [https://www.geonames.org/]
"""


@pytest.fixture
def towns(tmp_path, cache, monkeypatch):
    """A project whose one query reads a data file; counts the queries described and prepared."""
    from mcpgen.engines.duckdb import DuckDBEngine
    from mcpgen.serve import project as served

    root = tmp_path / "towns"
    (root / "specs").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "mcpgen.yaml").write_text(DESCRIBED_CONFIG)
    (root / "data" / "towns.csv").write_text("name,people\nLyon,522000\nNice,342000\n")
    (root / "specs" / "towns.yaml").write_text(DESCRIBED_SPEC)
    seen: dict[str, list] = {"described": [], "prepared": []}
    real_live, real_prepare = served.check_spec_live, DuckDBEngine.prepare

    def live(spec, *args, **kwargs):
        seen["described"].append(spec.name)
        return real_live(spec, *args, **kwargs)

    def prepare(self, sql, *args, **kwargs):
        seen["prepared"].append(sql)
        return real_prepare(self, sql, *args, **kwargs)

    monkeypatch.setattr(served, "check_spec_live", live)
    monkeypatch.setattr(DuckDBEngine, "prepare", prepare)
    monkeypatch.chdir(tmp_path)  # opening a project moves to its root
    return root, seen


def _served(root):
    project = open_project(root / "specs")
    try:
        tools = [t.to_mcp().model_dump() for t in project.registry]
        answer = project.registry.call_sync("towns", {})
        return tools, answer.to_mcp().model_dump()
    finally:
        project.close()


def test_a_restart_neither_describes_nor_prepares_a_query_again(towns):
    """The statement prepared when the query was described is kept with that fact, and run as it is."""
    root, seen = towns
    first = _served(root)
    assert seen["described"] == ["towns"] and len([s for s in seen["prepared"] if "towns" in s]) == 1
    seen["described"].clear(), seen["prepared"].clear()
    project = open_project(root / "specs")
    try:
        answer = project.registry.call_sync("towns", {})
        assert seen == {"described": [], "prepared": []}
    finally:
        project.close()
    assert "Lyon has 522000 people." in answer.content[0].text and _served(root) == first


def test_a_data_file_whose_columns_changed_is_described_again(towns):
    root, seen = towns
    _served(root)
    (root / "data" / "towns.csv").write_text("town,people\nLyon,522000\n")
    seen["described"].clear()
    with pytest.raises(SpecError, match="table.columns names column 'name', which the query does not return"):
        open_project(root / "specs")
    assert seen["described"] == ["towns"]


def test_an_edited_spec_or_mcpgen_yaml_is_described_again(towns):
    root, seen = towns
    _served(root)
    (root / "specs" / "towns.yaml").write_text(DESCRIBED_SPEC.replace("DESC", "ASC"))
    seen["described"].clear()
    _served(root)
    assert seen["described"] == ["towns"]
    (root / "mcpgen.yaml").write_text(DESCRIBED_CONFIG.replace("read_csv('data/towns.csv')", "read_csv('data/x.csv')"))
    (root / "data" / "x.csv").write_text("name\nLyon\n")
    seen["described"].clear()
    with pytest.raises(SpecError, match='Referenced column "people" not found'):
        open_project(root / "specs")
    assert seen["described"] == ["towns"]


def test_a_start_that_failed_keeps_nothing(towns):
    root, seen = towns
    (root / "specs" / "towns.yaml").write_text(DESCRIBED_SPEC.replace("[name, people]", "[name, peolpe]"))
    for _ in range(2):
        seen["described"].clear()
        with pytest.raises(SpecError, match="'peolpe'"):
            open_project(root / "specs")
        assert seen["described"] == ["towns"]


PAGED = """\
description: Pages.
sql: SELECT range AS n FROM range(5) ORDER BY n
sources: ["https://example.org/"]
content: "{{ row_count }}"
page_size: 2
"""


def test_a_server_lets_go_of_the_yaml_positions_of_the_specs_it_compiled(specs):
    """`serve` opens with positions=False: a spec keeps no raw YAML past its start, except a paged one
    (its pages are planned at its first call, and say where in the file what they refuse is)."""
    (specs / "one.yaml").write_text(SPEC)
    (specs / "pages.yaml").write_text(PAGED)
    kept = open_project(specs)
    try:
        assert all(s.where("sql")[0] is not None for s in kept.loaded.specs)
    finally:
        kept.close()
    project = open_project(specs, positions=False)
    try:
        where = {s.name: s.where("sql") for s in project.loaded.specs}
        assert where["one"] == (None, None) and where["pages"][0] is not None
        assert project.registry.call_sync("one", {}).content[0].text == "1"
        first = project.registry.call_sync("pages", {})
        assert first.content[0].text.startswith("2\n") and "cursor=" in first.content[0].text, "it still pages"
    finally:
        project.close()


def test_the_tools_listing_shares_each_tools_schemas(specs):
    from mcpgen.answer.results import published_schema

    (specs / "one.yaml").write_text(SPEC)
    project = open_project(specs)
    try:
        tool = project.registry.get("one")
        listed = tool.to_mcp()
        assert listed.input_schema is tool.input_schema and listed.output_schema is published_schema()
        wire = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert wire["inputSchema"] == tool.input_schema and wire["outputSchema"] == published_schema()
    finally:
        project.close()


def write_csv_project(tmp_path: Path, columns: str) -> None:
    """A project whose in-memory DuckDB's `init` makes table t of `columns` from data/t.csv (one row, one = 1),
    and a spec `one` that reads it."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("one\n1\n")
    init = f"CREATE TABLE t AS SELECT {columns} FROM read_csv('data/t.csv')"
    (tmp_path / "mcpgen.yaml").write_text(f'connections:\n  db:\n    duckdb: ":memory:"\n    init: ["{init}"]\n')
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        SPEC.replace("SELECT 1 AS one", "SELECT one FROM t") + "connection: db\n"
    )


def test_a_server_copies_the_kept_snapshot_into_memory(tmp_path, cache, monkeypatch):
    """`call` and `test` open an in-memory DuckDB from the snapshot its `init` left, as a read-only file;
    a server copies it into memory, where each query costs less than on the file."""
    write_csv_project(tmp_path, "*")
    monkeypatch.chdir(tmp_path)
    for needed, on_file in ((lambda path: True, True), (None, False), (lambda path: True, True)):
        project = open_project(tmp_path / "specs", needed=needed)
        try:
            engine = project.engines["db"]
            assert engine.snapshot is not None
            main = "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
            assert engine._con.execute(main).fetchone() == ((str(engine.snapshot),) if on_file else (None,))
            assert project.registry.call_sync("one", {}).to_mcp().content[0].text == "1"
        finally:
            project.close()


def test_a_server_opened_again_on_new_data_copies_a_new_snapshot(tmp_path, cache, monkeypatch):
    """A reload after the data changed (a new state) builds and copies that state's snapshot, which drops
    the old one's file; the server still open on the old state answers from its copy in memory."""
    write_csv_project(tmp_path, "sum(one) AS one")
    monkeypatch.chdir(tmp_path)
    first = open_project(tmp_path / "specs")
    try:
        (tmp_path / "data" / "t.csv").write_text("one\n1\n2\n")
        second = open_project(tmp_path / "specs")
        try:
            old, new = first.engines["db"].snapshot, second.engines["db"].snapshot
            assert old is not None and new is not None and new != old and not old.parent.exists()
            assert second.registry.call_sync("one", {}).to_mcp().content[0].text == "3"
            assert first.registry.call_sync("one", {}).to_mcp().content[0].text == "1"
        finally:
            second.close()
    finally:
        first.close()
