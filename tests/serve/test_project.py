"""Opening a project: specs, Python tools, connections; every problem reported with file:line."""

import textwrap

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
