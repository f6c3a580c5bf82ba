"""The MCP protocol in process: the official client against `ToolServer.server` over the SDK's
in-memory transport. No subprocess, so `server.py` is covered here; the real `mcpgen serve`
over stdio and HTTP is driven in test_e2e_stdio.py and tests/http/test_app.py."""

import anyio
import pytest
from longwork import IN_PROCESS_ROWS
from mcp import Client
from mcp.shared.exceptions import MCPError
from shipped import REPO, direct_table, good_args, shipped_specs

from mcpgen.serve import registry
from mcpgen.serve.project import open_project
from mcpgen.serve.registry import Registry
from mcpgen.serve.server import ToolServer, instructions_for


@pytest.fixture(scope="module")
def project():
    """The shipped specs/, opened once for the module (open_project changes directory)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        project = open_project(REPO / "specs")
        yield project
        project.close()


def session(server: ToolServer, check) -> None:
    async def main():
        async with Client(server.server) as client:
            await check(client)

    anyio.run(main)


def test_every_shipped_tool_is_listed_and_answers_what_duckdb_answers(project):
    specs = shipped_specs()

    async def check(client):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {*specs, "airline_lookup"}  # miles_to_km lacks DataToolOutput: not registered
        for name, spec in specs.items():
            tool = listed[name]
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema["required"] == ["sources"]
            args = good_args(spec)
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            assert result.structured_content.get("table") == direct_table(spec, args), name
            assert all(s.startswith("https://") for s in result.structured_content["sources"])

    session(ToolServer(project.registry), check)


def test_bad_arguments_are_errors_naming_the_parameter_and_the_server_keeps_serving(project):
    async def check(client):
        cases = [
            ({"top_n": 5000}, "Invalid argument 'top_n': 5000 is greater than the maximum of 50."),
            ({"top_n": "ten"}, "Invalid argument 'top_n': expected an integer, got string \"ten\"."),
            ({"top_n": 3, "limit": 3}, "Unknown argument 'limit': this tool takes top_n, country."),
            ({"country": "'; DROP TABLE cities; --"}, "Invalid argument 'country':"),
        ]
        for args, sentence in cases:
            result = await client.call_tool("top_cities", args)
            assert result.is_error
            text = result.content[0].text
            assert text.startswith(sentence), text
            assert "Traceback" not in text and "\n" not in text
        missing = await client.call_tool("country_profile", {})
        assert missing.is_error and missing.content[0].text == "Missing required argument 'country'."
        enum = await client.call_tool("busiest_routes", {"origin": "XXX"})
        assert enum.is_error and enum.content[0].text.startswith("Invalid argument 'origin': \"XXX\" is not one of")
        good = await client.call_tool("top_cities", {"top_n": 2})
        assert not good.is_error and len(good.structured_content["table"]) == 3

    session(ToolServer(project.registry), check)


def test_an_unknown_tool_is_a_protocol_error_naming_it(project):
    async def check(client):
        with pytest.raises(MCPError, match="Unknown tool: no_such_tool"):
            await client.call_tool("no_such_tool", {})
        assert not (await client.call_tool("top_cities", {"top_n": 1})).is_error  # the session still serves

    session(ToolServer(project.registry), check)


def test_a_name_a_client_made_huge_is_not_echoed_whole(project):
    huge = "n" * 100_000
    prompt = {"type": "ref/prompt", "name": huge}
    requests = {
        "Unknown tool: ": lambda client: client.call_tool(huge, {}),
        "Unknown prompt: ": lambda client: client.get_prompt(huge, {}),
        "Unknown resource: ui://": lambda client: client.read_resource("ui://" + huge),
        "Unknown prompt: n": lambda client: client.complete(prompt, {"name": "a", "value": "b"}),
    }
    said = {}

    async def check(client):
        for start, request in requests.items():
            with pytest.raises(MCPError) as refused:
                await request(client)
            said[start] = refused.value.error.message
        assert not (await client.call_tool("top_cities", {"top_n": 1})).is_error

    session(ToolServer(project.registry), check)
    assert all(said[start].startswith(start) and len(said[start]) < 300 for start in requests), said
    assert project.registry.call_sync(huge, {}).to_mcp().content[0].text == f"Unknown tool '{'n' * 57}...'."


def test_swapping_the_registry_changes_what_is_listed_and_called(project):
    server = ToolServer(project.registry)
    only_one = Registry()
    only_one.add(project.registry.get("top_cities"))

    async def check(client):
        assert len((await client.list_tools()).tools) == len(project.registry)
        server.registry = only_one
        assert [t.name for t in (await client.list_tools()).tools] == ["top_cities"]
        with pytest.raises(MCPError, match="Unknown tool: country_profile"):
            await client.call_tool("country_profile", {"country": "NO"})
        kept = await client.call_tool("top_cities", {"top_n": 1})
        assert not kept.is_error and kept.structured_content["table"][1][0] == "Shanghai"

    session(server, check)


# Strict Ajv (draft 2020-12, formats on) as a strict client runs it: unknown keywords and unknown
# formats are errors. Pinned in tests/node/package.json; .ci/run installs it into tests/.artifacts/node.
AJV = REPO / "tests" / ".artifacts" / "node" / "node_modules"
AJV_SCRIPT = """
const Ajv2020 = require("ajv/dist/2020"), addFormats = require("ajv-formats");
const schemas = JSON.parse(require("fs").readFileSync(0, "utf8"));
const errors = [];
for (const [name, schema] of Object.entries(schemas)) {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv, { keywords: false });  // formats, but not the non-standard formatMinimum keywords
  try { ajv.compile(schema); } catch (e) { errors.push(`${name}: ${e.message}`); }
}
console.log(JSON.stringify(errors));
"""


def strict_ajv_errors(schemas: dict[str, dict]) -> list[str]:
    """What a strict Ajv says about each schema (empty: every one compiles)."""
    import json
    import os
    import shutil
    import subprocess

    from services import services_required

    node = shutil.which("node")
    if node is None or not (AJV / "ajv" / "package.json").is_file() or not (AJV / "ajv-formats").is_dir():
        reason = "node or Ajv is missing: .ci/run installs tests/node/package.json into tests/.artifacts/node"
        if services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    done = subprocess.run(
        [node, "-e", AJV_SCRIPT],
        input=json.dumps(schemas),
        capture_output=True,
        text=True,
        env={**os.environ, "NODE_PATH": str(AJV)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_published_schema_compiles_under_strict_ajv(project):
    from mcpgen.spec.models import Parameter as P
    from mcpgen.spec.params import Arguments

    published: dict[str, dict] = {}

    async def check(client):
        for tool in (await client.list_tools()).tools:
            published[f"{tool.name} input"] = tool.input_schema
            published[f"{tool.name} output"] = tool.output_schema

    session(ToolServer(project.registry), check)
    every_kind = Arguments(
        {
            "day": P(type="date", description="d", minimum="2013-01-01", maximum="2014-01-01", required=False),
            "at": P(type="datetime", description="t", minimum="2013-01-01T00:00:00Z", default="2013-06-01T00:00:00Z"),
            "days": P(type="array", description="ds", items={"type": "date", "minimum": "2013-01-01"}, max_items=3),
            "kind": P(type="string", description="k", enum=["a", "b"], required=False, pattern="^[ab]$"),
            "n": P(type="integer", description="n", minimum=1, maximum=9, examples=[3]),
        }
    )
    published["every kind of parameter"] = every_kind.schema
    assert len(published) >= 20
    assert strict_ajv_errors(published) == []
    # and the check is not vacuous: the keywords published before are refused
    assert strict_ajv_errors({"old": {"type": "string", "format": "date", "formatMinimum": "2013-01-01"}}) != []


# -- long work: progress while a query runs, and cancellation that stops it ---------------------


def test_a_caller_who_asks_gets_growing_progress_while_duckdb_scans(long_project, monkeypatch):
    monkeypatch.setattr(registry, "PROGRESS_EVERY", 0.02)  # several looks during the short scan

    async def check(client):
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        result = await client.call_tool("scan", {"k": 7}, progress_callback=on_progress)
        assert not result.is_error and result.content[0].text.endswith("multiples of 7.")
        assert seen, "no progress notification arrived"
        values = [p for p, _, _ in seen]
        assert values == sorted(set(values)) and all(0 <= v <= 100 for v in values)  # strictly growing
        assert all(total == 100 and message == f"query {p:.0f}% done" for p, total, message in seen)
        silent = await client.call_tool("scan", {"k": 5})  # no callback: no progress, same answer shape
        assert not silent.is_error

    session(ToolServer(long_project.registry), check)


def test_a_cancelled_call_stops_its_query_and_the_server_serves_on(long_project):
    async def check(client):
        with anyio.move_on_after(0.5) as scope:
            await client.call_tool("forever", {})
        assert scope.cancelled_caught
        with anyio.fail_after(10):  # one slot: had the join gone on, this call would wait minutes
            result = await client.call_tool("quick", {})
        assert result.content[0].text == f"{IN_PROCESS_ROWS} numbers."

    session(ToolServer(long_project.registry), check)
    assert long_project.registry.active == 0


def _instructions(server: ToolServer, mode: str) -> str | None:
    out = {}

    async def main():
        async with Client(server.server, mode=mode) as client:
            out["instructions"] = client.instructions

    anyio.run(main)
    return out["instructions"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_instructions_summarise_the_tools_every_caller_may_see_unless_mcpgen_yaml_has_its_own(
    orders_project, tmp_path, mode
):
    from callers import write_project

    summary = _instructions(ToolServer(orders_project.registry), mode)
    assert "Tools: my_orders." in summary and "cite those sources" in summary
    assert "revenue" not in summary  # scoped: not named to callers who may not see it
    assert "my_orders" not in _instructions(ToolServer(orders_project.registry, tags=frozenset({"finance"})), mode)

    specs = write_project(tmp_path / "own")
    config = specs.parent / "mcpgen.yaml"
    config.write_text(config.read_text() + "instructions: Ask about orders; amounts are in euros.\n")
    own = open_project(specs)
    try:
        server = ToolServer(own.registry)
        assert _instructions(server, mode) == "Ask about orders; amounts are in euros."
        server.registry = orders_project.registry  # a reload: the new project's instructions
        assert _instructions(server, mode) == summary
    finally:
        own.close()


def test_the_summary_names_at_most_twenty_tools(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    for i in range(25):
        (tmp_path / "specs" / f"t{i:02}.yaml").write_text(
            f"description: T{i}.\ntitle: Tool {i}\nsql: SELECT {i} AS n\n"
            "sources: ['https://example.org/']\ncontent: '{{ rows[0].n }}'\n"
        )
    opened = open_project(tmp_path / "specs")
    try:
        summary = instructions_for(opened.registry)
    finally:
        opened.close()
    assert "t00 (Tool 0), t01 (Tool 1)" in summary and "t19 (Tool 19) and 5 more." in summary
    assert "t20" not in summary


# -- prompts ----------------------------------------------------------------------------------------

PROMPT = """\
title: Orders since
description: Look at the caller's orders from an amount up.
arguments:
  amount: {type: number, description: Smallest amount, minimum: 0, default: 5}
  style: {description: How to answer, enum: [short, "long, with reasons"]}
tools: [my_orders]
template: "With my_orders, list my orders of {{ amount }} or more, {{ style }}."
"""
SCOPED_PROMPT = """\
description: Revenue overview.
tools: [revenue]
template: "Tell me the revenue with revenue."
"""


@pytest.fixture
def prompt_project(tmp_path, monkeypatch):
    from callers import write_project

    specs = write_project(tmp_path)
    (specs / "orders_since.prompt.yaml").write_text(PROMPT)
    (specs / "revenue_overview.prompt.yaml").write_text(SCOPED_PROMPT)
    monkeypatch.chdir(tmp_path)
    opened = open_project(specs)
    yield opened
    opened.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_prompts_are_listed_and_got_with_typed_arguments_on_both_wires(prompt_project, mode):
    from callers import as_token
    from mcp.server.auth.middleware.auth_context import auth_context_var

    out = {}

    async def main():
        async with Client(ToolServer(prompt_project.registry).server, mode=mode) as client:
            out["caps"] = client.server_capabilities.prompts
            out["listed"] = (await client.list_prompts()).prompts
            out["got"] = await client.get_prompt("orders_since", {"amount": "12.5", "style": "short"})
            out["default"] = await client.get_prompt("orders_since", {"style": "long, with reasons"})
            refused = []
            for args in ({"style": "short", "amount": "lots"}, {"style": "medium"}, {}, {"style": "short", "x": "1"}):
                with pytest.raises(MCPError) as err:
                    await client.get_prompt("orders_since", args)
                refused.append((err.value.error.code, err.value.error.message))
            with pytest.raises(MCPError) as err:
                await client.get_prompt("revenue_overview", {})  # its tool is hidden from this caller
            refused.append((err.value.error.code, err.value.error.message))
            out["refused"] = refused
            out["still serving"] = not (await client.call_tool("my_orders", {})).is_error

    token = as_token([], {"email": "alice@example.com"})
    try:
        anyio.run(main)
    finally:
        auth_context_var.reset(token)
    assert out["caps"] is not None
    (listed,) = out["listed"]  # revenue_overview leads to a tool this caller may not see
    assert (listed.name, listed.title) == ("orders_since", "Orders since")
    assert [(a.name, a.required) for a in listed.arguments] == [("amount", False), ("style", True)]
    assert listed.arguments[0].description == "Smallest amount (number; at least 0; default 5)"
    assert listed.arguments[1].description == 'How to answer (one of "short", "long, with reasons")'
    (message,) = out["got"].messages
    assert (message.role, message.content.text) == ("user", "With my_orders, list my orders of 12.5 or more, short.")
    assert out["default"].messages[0].content.text.endswith("of 5 or more, long, with reasons.")
    assert out["refused"] == [
        (-32602, "Invalid argument 'amount': expected a number, got string \"lots\"."),
        (-32602, 'Invalid argument \'style\': "medium" is not one of "short", "long, with reasons".'),
        (-32602, "Missing required argument 'style'."),
        (-32602, "Unknown argument 'x': this prompt takes amount, style."),
        (-32602, "Unknown prompt: revenue_overview (prompts: orders_since)."),
    ]
    assert out["still serving"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_params_of_the_wrong_shape_are_refused_naming_the_field(prompt_project, mode):
    from callers import as_token
    from longwork import send
    from mcp.server.auth.middleware.auth_context import auth_context_var

    requests = [
        ("prompts/get", {"name": "orders_since", "arguments": {"style": 5}}),
        ("prompts/get", {"name": "orders_since", "arguments": ["short"]}),
        ("prompts/get", {"name": 7}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "orders_since"}, "argument": {"name": "style"}}),
        (
            "completion/complete",
            {"ref": {"type": "ref/tool", "name": "my_orders"}, "argument": {"name": "a", "value": ""}},
        ),
        ("tools/call", {"name": "my_orders", "arguments": "all"}),
    ]
    out = []

    async def main():
        async with Client(ToolServer(prompt_project.registry).server, mode=mode) as client:
            for method, params in requests:
                with pytest.raises(MCPError) as refused:
                    await send(client.session, method, params)
                out.append((refused.value.error.code, refused.value.error.message))
            out.append(not (await client.call_tool("my_orders", {})).is_error)

    token = as_token([], {"email": "alice@example.com"})
    try:
        anyio.run(main)
    finally:
        auth_context_var.reset(token)
    assert out == [
        (-32602, "Invalid prompts/get params: 'arguments.style' must be a string."),
        (-32602, "Invalid prompts/get params: 'arguments' must be an object."),
        (-32602, "Invalid prompts/get params: 'name' must be a string."),
        (-32602, "Invalid completion/complete params: 'argument.value' is missing."),
        (-32602, "Invalid completion/complete params: 'ref.type' is not one of the values it may take."),
        (-32602, "Invalid tools/call params: 'arguments' must be an object."),
        True,
    ]


def test_a_caller_with_the_scope_sees_the_scoped_prompt(prompt_project):
    from callers import as_token
    from mcp.server.auth.middleware.auth_context import auth_context_var

    out = {}

    async def main():
        async with Client(ToolServer(prompt_project.registry).server) as client:
            out["names"] = sorted(p.name for p in (await client.list_prompts()).prompts)
            out["text"] = (await client.get_prompt("revenue_overview", {})).messages[0].content.text

    token = as_token(["reports"], {"email": "alice@example.com"})
    try:
        anyio.run(main)
    finally:
        auth_context_var.reset(token)
    assert out == {"names": ["orders_since", "revenue_overview"], "text": "Tell me the revenue with revenue."}


AMOUNTS = """\
description: One of the caller's orders, by amount.
parameters:
  email: {type: string, description: The caller's email, from_claim: email}
  amount:
    type: number
    description: Amount
    complete: SELECT DISTINCT CAST(amount AS VARCHAR) FROM orders WHERE email = :email AND CAST(amount AS VARCHAR) LIKE :prefix || '%' ORDER BY 1
sql: SELECT id FROM orders WHERE email = :email AND amount = :amount
sources: ["https://example.org/orders"]
content: "{{ row_count }} orders"
"""
SCOPED_AMOUNTS = AMOUNTS.replace("description: One of", "scopes: [reports]\ndescription: One of")


def test_completions_run_as_the_caller_with_the_tools_identity_and_scopes(tmp_path, monkeypatch):
    from callers import as_token, write_project
    from mcp.server.auth.middleware.auth_context import auth_context_var
    from mcp.types import PromptReference

    specs = write_project(tmp_path)
    (specs / "amounts.yaml").write_text(AMOUNTS)
    (specs / "scoped_amounts.yaml").write_text(SCOPED_AMOUNTS)
    for name, tool in (("pick", "amounts"), ("pick_scoped", "scoped_amounts")):
        (specs / f"{name}.prompt.yaml").write_text(
            f"description: Pick an order.\narguments:\n  amount: {{description: Amount, complete: {tool}.amount}}\n"
            f"tools: [{tool}]\ntemplate: 'Order of {{{{ amount }}}}'\n"
        )
    monkeypatch.chdir(tmp_path)
    opened = open_project(specs)

    def ask(scopes, email, prompt):
        out = {}

        async def main():
            async with Client(ToolServer(opened.registry).server) as client:
                try:
                    ref = PromptReference(type="ref/prompt", name=prompt)
                    out["values"] = (await client.complete(ref, {"name": "amount", "value": ""})).completion.values
                except MCPError as exc:
                    out["error"] = exc.error.message

        token = as_token(scopes, {"email": email})
        try:
            anyio.run(main)
        finally:
            auth_context_var.reset(token)
        return out

    try:
        assert ask([], "alice@example.com", "pick") == {"values": ["10.0", "20.0"]}
        assert ask([], "bob@example.com", "pick") == {"values": ["5.0"]}  # the claim binds, as in the tool
        assert ask([], "alice@example.com", "pick_scoped") == {"error": "Unknown prompt: pick_scoped."}
        assert ask(["reports"], "bob@example.com", "pick_scoped") == {"values": ["5.0"]}
    finally:
        opened.close()
