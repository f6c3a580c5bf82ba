"""Completions: built in from a parameter's rules, and from a `complete:` query run as the tool runs
(read-only, filtered by the prefix and the other arguments, at most 100 values, cached, its timeout)."""

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference

from mcpgen.answer.completions import MAX_VALUES, builtin
from mcpgen.errors import SpecError
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer
from mcpgen.spec.models import Parameter


@pytest.mark.parametrize(
    ("param", "prefix", "values"),
    [
        ({"type": "string", "enum": ["Asia", "Africa", "Europe"]}, "a", ["Asia", "Africa"]),
        ({"type": "integer", "enum": [1952, 1957, 2007]}, "19", ["1952", "1957"]),
        ({"type": "boolean"}, "", ["true", "false"]),
        ({"type": "boolean"}, "F", ["false"]),
        ({"type": "date", "minimum": "2000-01-01", "maximum": "2009-12-31"}, "2005", ["2005-01-01"]),
        ({"type": "date", "minimum": "2000-01-01", "maximum": "2009-12-31"}, "2005-07-1", ["2005-07-10"]),
        ({"type": "date", "minimum": "2000-01-01", "maximum": "2009-12-31"}, "2005-1", ["2005-10-01"]),
        ({"type": "date", "minimum": "2000-01-01", "maximum": "2009-12-31"}, "2015", []),  # outside the bounds
        ({"type": "date", "minimum": "2000-01-01", "maximum": "2009-12-31"}, "", ["2000-01-01", "2009-12-31"]),
        ({"type": "datetime"}, "2021-03", ["2021-03-01T00:00:00Z"]),
        ({"type": "string"}, "x", []),
    ],
)
def test_builtin_completions(param, prefix, values):
    assert builtin(Parameter(description="d", **param), prefix) == values


CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE c AS SELECT * FROM (VALUES ('NO', 'Europe'), ('NZ', 'Oceania'), ('NE', 'Africa'), ('JP', 'Asia')) t(code, continent)
"""
SPEC = """\
description: One country.
parameters:
  code:
    type: string
    description: Country code
    complete: SELECT code FROM c WHERE code LIKE :prefix || '%' AND (:continent IS NULL OR continent = :continent) ORDER BY code
  continent: {type: string, description: Continent, required: false}
sql: SELECT code FROM c WHERE code = :code AND (:continent IS NULL OR continent = :continent)
sources: ["https://example.org/"]
content: "{{ rows | length }}"
"""
MANY = """\
description: Many numbers.
timeout: 2s
parameters:
  n:
    type: string
    description: A number
    complete: SELECT CAST(range AS VARCHAR) FROM range(1000) WHERE CAST(range AS VARCHAR) LIKE :prefix || '%' ORDER BY range
sql: SELECT :n AS n
sources: ["https://example.org/"]
content: "{{ rows[0].n }}"
"""
PROMPT = """\
description: Ask about a country.
arguments:
  code: {description: Country code, complete: country.code}
  continent: {description: Continent, required: false}
  n: {description: A number, complete: many.n, required: false}
tools: [country]
template: "Tell me about {{ code }} in {{ continent }} {{ n }}"
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    (tmp_path / "specs" / "country.yaml").write_text(SPEC)
    (tmp_path / "specs" / "many.yaml").write_text(MANY)
    (tmp_path / "specs" / "ask.prompt.yaml").write_text(PROMPT)
    monkeypatch.chdir(tmp_path)
    opened = open_project(tmp_path / "specs")
    yield opened
    opened.close()


def complete(project, calls, mode="auto"):
    out = []

    async def main():
        async with Client(ToolServer(project.registry).server, mode=mode) as client:
            ref = PromptReference(type="ref/prompt", name="ask")
            for argument, value, context in calls:
                try:
                    result = await client.complete(ref, {"name": argument, "value": value}, context_arguments=context)
                    out.append((result.completion.values, result.completion.has_more))
                except MCPError as exc:
                    out.append((exc.error.code, exc.error.message))

    anyio.run(main)
    return out


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_query_completes_by_prefix_and_the_other_arguments_on_both_wires(project, mode):
    assert complete(
        project,
        [
            ("code", "N", None),
            ("code", "n", None),  # LIKE is case-sensitive in DuckDB: the query decides
            ("code", "N", {"continent": "Oceania"}),
            ("code", "", {"continent": "Asia"}),
            ("n", "99", None),
            ("zzz", "", None),
        ],
        mode,
    ) == [
        (["NE", "NO", "NZ"], False),
        ([], False),
        (["NZ"], False),
        (["JP"], False),
        (["99", "990", "991", "992", "993", "994", "995", "996", "997", "998", "999"], False),
        (-32602, "Prompt 'ask' has no argument 'zzz' (it takes code, continent, n)."),
    ]


def test_at_most_100_values_and_answers_are_cached(project):
    completer = project.registry.get("many").completers["n"]
    runs = []
    real_run = completer.engine.run

    def counting(*args, **kwargs):
        runs.append(args[1])
        return real_run(*args, **kwargs)

    completer.engine.run = counting
    try:
        first = complete(project, [("n", "", None), ("n", "", None), ("n", "1", None)])
    finally:
        completer.engine.run = real_run
    assert first[0] == first[1] and len(first[0][0]) == MAX_VALUES and first[0][1] is True
    assert [r["prefix"] for r in runs] == ["", "1"]  # the second asking was answered from the cache


def test_complete_queries_are_checked_like_the_tools_query(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    bad = {
        "writes": ("SELECT code FROM c", "DELETE FROM c", "parameters.code.complete:"),
        "unknown": (
            "AND (:continent IS NULL",
            "AND (:region IS NULL",
            "uses :region, which is neither :prefix nor a parameter",
        ),
    }
    for name, (old, new, _message) in bad.items():
        (tmp_path / "specs" / f"{name}.yaml").write_text(SPEC.replace(old, new, 1))
    (tmp_path / "specs" / "claimed.yaml").write_text(
        SPEC.replace("    complete: SELECT", "    from_claim: email\n    complete: SELECT")
    )
    problems = {p.path.rsplit("/", 1)[-1]: str(p) for p in load_project(tmp_path / "specs").errors}
    assert "writes.yaml:6:" in problems["writes.yaml"] and "parameters.code.complete:" in problems["writes.yaml"]
    assert (
        "uses :region, which is neither :prefix nor a parameter (:prefix, :code, :continent)"
        in problems["unknown.yaml"]
    )
    assert "complete: suggests values a person types, so not for from_claim" in problems["claimed.yaml"]


def test_a_prompt_completing_from_a_missing_tool_or_parameter_stops_the_start(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    (tmp_path / "specs" / "country.yaml").write_text(SPEC)
    (tmp_path / "specs" / "many.yaml").write_text(MANY)
    monkeypatch.chdir(tmp_path)
    for wrong, message in [
        ("country.cod", "tool 'country' has no parameter 'cod' (code, continent)"),
        ("contry.code", "'contry' is not a tool of this project"),
    ]:
        (tmp_path / "specs" / "ask.prompt.yaml").write_text(PROMPT.replace("country.code", wrong))
        with pytest.raises(SpecError) as err:
            open_project(tmp_path / "specs")
        assert "ask.prompt.yaml:3:" in str(err.value) and message in str(err.value)


SLOW = """\
description: A slow completion.
timeout: 200ms
parameters:
  x:
    type: string
    description: Anything
    complete: SELECT CAST(sum(a.range * b.range) AS VARCHAR) || :prefix FROM range(100000) a, range(100000) b
sql: SELECT :x AS x
sources: ["https://example.org/"]
content: "{{ rows[0].x }}"
"""


def test_a_completion_past_the_tools_timeout_gives_no_values_and_the_server_serves_on(tmp_path, monkeypatch):
    import time

    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "slow.yaml").write_text(SLOW)
    (tmp_path / "specs" / "ask.prompt.yaml").write_text(
        "description: Ask.\narguments:\n  x: {description: X, complete: slow.x}\ntools: [slow]\ntemplate: '{{ x }}'\n"
    )
    monkeypatch.chdir(tmp_path)
    opened = open_project(tmp_path / "specs")
    out = {}

    async def main():
        async with Client(ToolServer(opened.registry).server) as client:
            started = time.monotonic()
            result = await client.complete(PromptReference(type="ref/prompt", name="ask"), {"name": "x", "value": "1"})
            out["seconds"] = time.monotonic() - started
            out["values"] = result.completion.values
            out["answer"] = (await client.call_tool("slow", {"x": "ok"})).content[0].text

    try:
        anyio.run(main)
    finally:
        opened.close()
    assert out["values"] == [] and out["seconds"] < 5
    assert out["answer"] == "ok"
