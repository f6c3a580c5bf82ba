"""Prompt files beside the specs: each problem one sentence at file:line:col, found by validate and
by serve alike; a prompt's `tools:` must be tools of the project."""

import textwrap

import pytest

from mcpgen.errors import SpecError
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project

SPEC = """\
description: How many cities.
sql: SELECT 2 AS n
sources: ["https://example.org/"]
content: "{{ rows[0].n }}"
"""
GOOD = """\
title: Compare two cities
description: Compare two cities since a year.
arguments:
  first: {description: One city}
  second: {description: The other city}
  since: {type: integer, description: First year, default: 1990, minimum: 1900}
tools: [count]
template: |
  Compare {{ first }} and {{ second }} since {{ since }} with count.
"""


def folder(tmp_path, prompts: dict[str, str], python: str = ""):
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    (specs / "count.yaml").write_text(SPEC)
    for name, text in prompts.items():
        (specs / f"{name}.prompt.yaml").write_text(textwrap.dedent(text))
    if python:
        (specs / "tools.py").write_text(python)
    return specs


def test_a_good_prompt_is_loaded_and_is_not_a_spec(tmp_path):
    loaded = load_project(folder(tmp_path, {"compare": GOOD}))
    assert loaded.problems == []
    assert [s.name for s in loaded.specs] == ["count"]  # the prompt file is not read as a tool spec
    (prompt,) = loaded.prompts
    assert (prompt.name, list(prompt.spec.arguments), prompt.spec.tools) == (
        "compare",
        ["first", "second", "since"],
        ["count"],
    )


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (
            ("tools: [count]", "tools: [cuont]"),
            ":7:",
            "tools: 'cuont' is not a tool of this project; did you mean 'count'?",
        ),
        (
            ("{{ second }}", "{{ third }}"),
            ":9:",
            "template: third is not an argument (arguments: first, second, since)",
        ),
        (("{{ second }}", "{{ secnod }}"), ":9:", "did you mean 'second'?"),
        (("{{ second }}", "{{ second "), ":9:", "template: syntax error"),
        (
            ("default: 1990", "default: 1800"),
            ":6:",
            "arguments.since.default: Invalid argument 'since': 1800 is less than",
        ),
        (("type: integer", "type: array"), ":6:", "arguments.since.type: 'array' is not one of string, integer"),
        (("description: Compare two cities since a year.\n", ""), ":1:", "description"),
        (("template: |", "templat: |"), ":8:", "unknown key 'templat'"),
        (("{{ second }}", "{{ second.__class__ }}"), ":9:", "__class__"),
        (("  first: {description: One city}", "  1st: {description: One city}"), ":3:", "argument name '1st'"),
    ],
)
def test_each_problem_of_a_prompt_file_is_one_sentence_at_its_line(tmp_path, change, where, message):
    specs = folder(tmp_path, {"compare": GOOD.replace(*change)})
    errors = load_project(specs).errors
    assert len(errors) == 1, errors
    text = str(errors[0])
    assert f"compare.prompt.yaml{where}" in text and message in text, text
    with pytest.raises(SpecError):
        open_project(specs)


def test_an_unused_argument_is_a_warning_and_names_are_unique(tmp_path):
    specs = folder(tmp_path, {"compare": GOOD.replace("since {{ since }} ", ""), "again": "name: compare\n" + GOOD})
    problems = load_project(specs).problems
    assert sorted((p.severity, p.message) for p in problems) == [
        ("error", "prompt name 'compare' is already used by again.prompt.yaml"),
        ("warning", "argument 'since' is not used in the template"),
    ]


PY_TOOL = '''
from mcp_types import CallToolResult, TextContent
from mcpgen import DataToolOutput, registry

@registry.tool()
def lookup(q: str = "") -> DataToolOutput:
    """Look something up."""
    return CallToolResult(content=[TextContent(type="text", text=q)], structured_content={"sources": ["https://example.org/"]})
'''


def test_with_python_tools_the_prompts_tools_are_checked_when_serving_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = GOOD.replace("tools: [count]", "tools: [count, lookup]")
    opened = open_project(folder(tmp_path, {"compare": good}, PY_TOOL))
    try:
        assert list(opened.registry.prompts) == ["compare"]
    finally:
        opened.close()
    (tmp_path / "specs" / "compare.prompt.yaml").write_text(good.replace("lookup]", "lookpu]"))
    with pytest.raises(SpecError) as err:
        open_project(tmp_path / "specs")
    assert "compare.prompt.yaml:7:" in str(err.value) and "'lookpu' is not a tool of this project" in str(err.value)
