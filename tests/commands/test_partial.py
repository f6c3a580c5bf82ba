"""`call`, `test -k` and `preview` need only the specs they run: another spec's error is a warning
there and that spec is left out; `serve` and `validate` still refuse the whole project."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from mcpgen.cli import main
from mcpgen.commands.preview import preview_app
from mcpgen.errors import SpecError
from mcpgen.serve.project import open_project

GOOD = """\
description: Count up to n.
parameters:
  n: {type: integer, description: How many, default: 3, minimum: 1, maximum: 10}
sql: SELECT range AS i FROM range(:n)
sources: [https://example.org/numbers]
content: "{{ row_count }} numbers"
tests:
  - name: three
    args: {n: 3}
    expect: {row_count: 3}
"""

# One broken spec per shape of problem: where loading finds it, and what it is.
BROKEN = {
    "yaml": ("description: [unclosed\n", "broken.yaml:"),
    "schema": ("description: d\nsql: SELECT 1 AS x\ncontent: x\n", "sources"),
    "unsafe_sql": ("description: d\nsql: DROP TABLE t\nsources: [https://x.org/]\ncontent: x\n", "DROP"),
    "column": (
        'description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: "{{ rows[0].y }}"\n',
        "column 'y'",
    ),
    "untranslatable": (
        "description: d\nconnection: lite\nsql: SELECT my_udf(1) AS x\nsources: [https://x.org/]\ncontent: x\n",
        "my_udf",
    ),
}
CONFIG = "connections:\n  default:\n    duckdb: ':memory:'\n  lite:\n    url: sqlite:///{db}\n"


@pytest.fixture(params=sorted(BROKEN))
def project(request, tmp_path, monkeypatch) -> tuple[Path, str]:
    monkeypatch.chdir(tmp_path)  # open_project changes the working directory; get it back afterwards
    (tmp_path / "mcpgen.yaml").write_text(CONFIG.format(db=tmp_path / "lite.db"))
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "numbers.yaml").write_text(GOOD)
    text, problem = BROKEN[request.param]
    (specs / "broken.yaml").write_text(textwrap.dedent(text))
    return specs, problem


def test_call_runs_the_tool_and_warns_of_the_broken_spec(project):
    specs, problem = project
    result = CliRunner().invoke(main, ["call", "numbers", "--specs", str(specs), "-a", "n=2"])
    assert result.exit_code == 0, result.output
    assert "2 numbers" in result.stdout
    if problem == BROKEN["column"][1]:  # found only by describing the query: `call` compiles its own spec alone
        assert "broken.yaml" not in result.stderr
        return
    warning = [line for line in result.stderr.splitlines() if "broken.yaml" in line]
    assert len(warning) >= 1 and all(": warning: " in line and "left out" in line for line in warning)
    assert problem in result.stderr


def test_calling_the_broken_spec_itself_is_its_error(project):
    specs, problem = project
    result = CliRunner().invoke(main, ["call", "broken", "--specs", str(specs)])
    assert result.exit_code == 1
    assert problem in result.stderr and "warning" not in result.stderr


def test_test_k_runs_the_selected_tests_and_warns(project):
    specs, problem = project
    result = CliRunner().invoke(main, ["test", str(specs), "-k", "numbers"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines() == ["PASS numbers[three]", "1 passed, 0 failed"]
    assert problem in result.stderr and "left out" in result.stderr
    everything = CliRunner().invoke(main, ["test", str(specs)])
    assert everything.exit_code == 2 and problem in everything.stderr


def test_preview_shows_the_good_tool_and_lists_the_broken_one(project):
    specs, problem = project
    with TestClient(preview_app(specs, watch=False), base_url="http://127.0.0.1:8765") as http:
        tools = http.get("/api/tools").json()
        assert [t["name"] for t in tools["tools"]] == ["numbers"] and tools["stale"] is False
        assert any("broken.yaml" in e["text"] and problem in e["text"] for e in tools["errors"])
        out = http.post("/api/call/numbers", json={"n": 2}).json()
        assert out["result"]["structuredContent"]["table"] == [["i"], [0], [1]]


def test_serve_and_validate_still_refuse_the_project(project):
    specs, problem = project
    with pytest.raises(SpecError) as caught:
        open_project(specs)
    assert problem in str(caught.value)
    result = CliRunner().invoke(main, ["validate", str(specs)])
    assert result.exit_code == 1 and problem in result.output


def test_a_broken_mcpgen_yaml_still_stops_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n    nope: 1\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "numbers.yaml").write_text(GOOD)
    result = CliRunner().invoke(main, ["call", "numbers", "--specs", str(specs)])
    assert result.exit_code == 1 and "nope" in result.stderr
