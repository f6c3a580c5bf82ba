"""A template that fails at call time (what `validate` cannot see: a value's own attribute, a division by
a row's zero, a filter given text) names its spec file and line and its key, for the caller and in the
server's log, and says nothing of Python's internals; the server keeps serving."""

import logging
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from mcpgen.cli import main
from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer

SPEC = """\
title: Template faults
description: Each kind of call meets one fault.
parameters:
  kind:
    type: string
    description: which fault
    enum: [attr, zero, type, url, force, none, ok]
sql: |
  SELECT 'Oslo' AS city, 0 AS n, 'x' AS word, :kind AS kind
  FROM range(1) WHERE :kind <> 'none'
sources:
  - https://example.org/
  - "https://example.org/{{ kind }}"
content: |
  Kind {{ kind }}.
  {% if kind == "attr" %}{{ rows[0].city.nope | upper }}{% endif %}
  {% if kind == "zero" %}{{ 10 / rows[0].n }}{% endif %}
  {% if kind == "type" %}{{ rows[0].word | round }}{% endif %}
  Done.
force: "{{ (100 // rows[0].n) if kind == 'force' else '' }}"
empty:
  content: |
    Nothing for {{ kind }}:
    {{ kind.missing | upper }}
  sources:
    - https://example.org/
"""

# kind -> (the text whose line the error names, its key, the sentence after "the template")
FAULTS = {
    "attr": ("rows[0].city.nope", "content", "uses an undefined value: 'str object' has no attribute 'nope'."),
    "zero": ("10 / rows[0].n", "content", "failed: division by zero."),
    "type": ("| round", "content", "failed: could not convert string to float: 'x'."),
    "force": ("force:", "force", "failed: integer division or modulo by zero."),
    "none": ("kind.missing", "empty.content", "uses an undefined value: 'str object' has no attribute 'missing'."),
}


def _project(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n")
    (tmp_path / "specs" / "faults.yaml").write_text(SPEC)
    return tmp_path / "specs"


def _expected(kind: str) -> str:
    mark, key, sentence = FAULTS[kind]
    line = next(n for n, text in enumerate(SPEC.splitlines(), 1) if mark in text)
    return f"specs/faults.yaml:{line}: {key}: the template {sentence}"


@pytest.mark.parametrize("kind", FAULTS)
def test_call_names_the_spec_line_and_key(tmp_path, monkeypatch, kind):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["call", "faults", "--specs", "specs", "-a", f"kind={kind}"])
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == f"error: {_expected(kind)}"


def test_a_source_url_template_names_its_line(tmp_path, monkeypatch):
    """A source URL renders before any row is read: sources[1] fails on a kind that is no number."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n")
    spec = SPEC.replace('"https://example.org/{{ kind }}"', '"https://example.org/{{ 1 // 0 }}"')
    (tmp_path / "specs" / "faults.yaml").write_text(spec)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["call", "faults", "--specs", "specs", "-a", "kind=ok"])
    line = next(n for n, text in enumerate(spec.splitlines(), 1) if "1 // 0" in text)
    expected = f"error: specs/faults.yaml:{line}: sources[1]: the template failed: integer division or modulo by zero."
    assert " ".join(result.output.split()) == expected


def test_the_server_answers_and_logs_the_place_and_keeps_serving(tmp_path, monkeypatch, caplog):
    specs = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)

    async def main_():
        async with Client(ToolServer(project.registry).server) as client:
            for kind in FAULTS:
                result = await client.call_tool("faults", {"kind": kind})
                assert result.is_error and result.content[0].text == _expected(kind)
            good = await client.call_tool("faults", {"kind": "ok"})
            assert not good.is_error and good.content[0].text.startswith("Kind ok.")

    caplog.set_level(logging.INFO, logger="mcpgen.calls")
    try:
        anyio.run(main_)
    finally:
        project.close()
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tool faults")]
    assert logged == [f"tool faults: {_expected(kind)[:-1]}" for kind in FAULTS]
    assert not any("Traceback" in r.getMessage() or "Error:" in r.getMessage() for r in caplog.records)


PROMPT = """\
description: Share of a whole.
arguments:
  parts: {type: integer, description: Into how many parts}
tools: [faults]
template: |
  Call faults.
  Give each of the {{ parts }} parts {{ 100 // parts }} percent.
"""


def test_a_prompt_that_fails_to_render_names_its_file_and_line(tmp_path, monkeypatch):
    from mcp.shared.exceptions import MCPError

    specs = _project(tmp_path)
    (specs / "share.prompt.yaml").write_text(PROMPT)
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    out = {}

    async def main_():
        async with Client(ToolServer(project.registry).server) as client:
            try:
                await client.get_prompt("share", {"parts": "0"})
            except MCPError as exc:
                out["refused"] = exc.error.message
            out["good"] = await client.get_prompt("share", {"parts": "4"})

    try:
        anyio.run(main_)
    finally:
        project.close()
    line = next(n for n, text in enumerate(PROMPT.splitlines(), 1) if "100 // parts" in text)
    assert out["refused"] == (
        f"Prompt 'share' could not be written for these arguments: specs/share.prompt.yaml:{line}: template: "
        "the template failed: integer division or modulo by zero."
    )
    assert out["good"].messages[0].content.text.endswith("25 percent.")
