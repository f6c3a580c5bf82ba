"""The record of which spec file defines which tool: it names the one file to read for a tool while
no file of the project changed, came or went, with the errors of the others as they were found; in
every other case (no record, a stale one, a name two files use, a tool no spec defines, an error
the call would stop at) it says nothing, and the whole project is read as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen.cli import main
from mcpgen.errors import Problem
from mcpgen.load import project as project_module
from mcpgen.load import tools

GOOD = (
    "description: Numbers.\nparameters:\n  n:\n    type: integer\n    description: how many\n    default: 2\n"
    "sql: SELECT range AS x FROM range(:n)\nsources: [https://example.org/]\n"
    "content: '{{ row_count }} numbers'\n"
)


@pytest.fixture
def specs(tmp_path, cache) -> Path:
    """numbers.yaml, renamed_file.yaml (the tool `renamed`) and broken.yaml, which names no tool."""
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "numbers.yaml").write_text(GOOD)
    (folder / "renamed_file.yaml").write_text("name: renamed\n" + GOOD)
    (folder / "broken.yaml").write_text("description: [unclosed\n")
    return folder


def test_the_record_names_the_one_file_and_the_errors_of_the_others(specs):
    assert tools.defining(specs, "renamed") is None  # nothing recorded yet
    whole = tools.load_whole(specs)
    path, left_out = tools.defining(specs, "renamed")
    assert path == specs / "renamed_file.yaml"
    assert left_out == [p for p in whole.problems if p.severity == "error"]
    assert left_out and all(p.path == str(specs / "broken.yaml") for p in left_out)
    assert isinstance(left_out[0], Problem)
    assert tools.defining(specs, "renamed_file") is None  # a file name is not a tool name
    assert tools.defining(specs, "nothing") is None


@pytest.mark.parametrize(
    "change",
    [
        lambda specs: (specs / "numbers.yaml").write_text(GOOD.replace("Numbers.", "Other numbers.")),
        lambda specs: (specs / "more.yaml").write_text(GOOD),
        lambda specs: (specs / "numbers.yaml").unlink(),
        lambda specs: (specs.parent / "mcpgen.yaml").write_text("defaults:\n  max_rows: 5\n"),
        lambda specs: (specs / "tools.py").write_text(""),
        lambda specs: (specs / "ask.prompt.yaml").write_text("description: x\n"),
    ],
    ids=["edited", "added", "removed", "mcpgen.yaml", "python file", "prompt file"],
)
def test_any_change_to_the_files_makes_the_record_stale(specs, change):
    tools.load_whole(specs)
    assert tools.defining(specs, "renamed") is not None
    change(specs)
    assert tools.defining(specs, "renamed") is None


def test_a_name_two_files_use_or_an_error_the_call_stops_at_reads_everything(specs):
    (specs / "twice.yaml").write_text("name: numbers\n" + GOOD)
    tools.load_whole(specs)
    assert tools.defining(specs, "numbers") is None
    (specs / "twice.yaml").unlink()
    (specs / "renamed.yaml").write_text("description: [unclosed\n")  # broken, with TOOL's stem
    tools.load_whole(specs)
    assert tools.defining(specs, "renamed") is None
    assert tools.defining(specs, "numbers") is not None


def test_without_a_cache_nothing_is_recorded(specs, monkeypatch):
    monkeypatch.setenv("MCPGEN_CACHE", "off")
    tools.load_whole(specs)
    assert tools.defining(specs, "numbers") is None


def test_a_corrupt_record_is_ignored(specs, cache):
    tools.load_whole(specs)
    for record in cache.glob("tools-*.json"):
        record.write_text("{not json")
    assert tools.defining(specs, "numbers") is None


@pytest.fixture
def read(monkeypatch):
    """The spec files read by each load."""
    seen: list[str] = []
    real = project_module.load_spec

    def counted(path, *args, **kwargs):
        seen.append(path.name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(project_module, "load_spec", counted)
    return seen


def test_a_second_call_reads_only_its_spec_and_says_the_same(specs, read, monkeypatch):
    monkeypatch.chdir(specs.parent)  # open_project changes directory: restored after the test
    runner = CliRunner()
    first = runner.invoke(main, ["call", "renamed", "-s", str(specs), "-a", "n=3"])
    assert first.exit_code == 0, first.output
    assert sorted(read) == ["broken.yaml", "numbers.yaml", "renamed_file.yaml"]
    read.clear()
    second = runner.invoke(main, ["call", "renamed", "-s", str(specs), "-a", "n=3"])
    assert read == ["renamed_file.yaml"]
    assert (second.exit_code, second.stdout, second.stderr) == (first.exit_code, first.stdout, first.stderr)
    assert "broken.yaml" in second.stderr and "this tool is left out here" in second.stderr
    unknown = runner.invoke(main, ["call", "renamd", "-s", str(specs)])
    assert unknown.exit_code == 2 and "(tools: numbers, renamed)" in unknown.output


PYTHON_TOOL = """\
from mcp_types import CallToolResult, TextContent

from mcpgen import DataToolOutput, registry


@registry.tool()
def hello() -> DataToolOutput:
    '''Say hello.'''
    return CallToolResult(content=[TextContent(type="text", text="hi")],
                          structured_content={"sources": ["https://example.org/"]})
"""


def test_a_python_tool_called_again_runs_the_python_files_and_reads_no_spec(specs, read, monkeypatch):
    monkeypatch.chdir(specs.parent)
    (specs / "tools.py").write_text(PYTHON_TOOL)
    runner = CliRunner()
    first = runner.invoke(main, ["call", "hello", "-s", str(specs)])
    assert first.exit_code == 0, first.output
    assert sorted(read) == ["broken.yaml", "numbers.yaml", "renamed_file.yaml"]
    read.clear()
    second = runner.invoke(main, ["call", "hello", "-s", str(specs)])
    assert read == []
    assert (second.exit_code, second.stdout, second.stderr) == (first.exit_code, first.stdout, first.stderr)
    assert "broken.yaml" in second.stderr and "imported Python tools from tools.py" in second.stderr
    assert tools.defining(specs, "hello") == (None, tools.defining(specs, "renamed")[1])
    unknown = runner.invoke(main, ["call", "helo", "-s", str(specs)])  # every tool named, as before
    assert unknown.exit_code == 2 and "(tools: numbers, renamed, hello)" in unknown.output
