"""`mcpgen init`: a new analyst's project that validates, tests and serves at once, then a real client."""

from __future__ import annotations

import json
import os

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from mcpgen.cli import main


def _init(tmp_path, monkeypatch):
    folder = tmp_path / "my project"
    result = CliRunner().invoke(main, ["init", str(folder)])
    assert result.exit_code == 0, result.output
    config = json.loads(result.output[result.output.index("{") :])
    return folder, config["mcpServers"]["my-project"]


def test_init_gives_a_project_that_validates_tests_and_answers(tmp_path, monkeypatch):
    folder, server = _init(tmp_path, monkeypatch)
    assert server["args"] == ["serve", str((folder / "specs").resolve())] and os.path.isabs(server["command"])
    monkeypatch.chdir(tmp_path)  # the commands change directory: put it back after
    runner = CliRunner()
    validated = runner.invoke(main, ["validate", str(folder / "specs")])
    assert validated.exit_code == 0 and "0 errors, 0 warnings" in validated.output, validated.output
    tested = runner.invoke(main, ["test", str(folder / "specs")])
    assert tested.exit_code == 0 and "2 passed, 0 failed" in tested.output, tested.output
    called = runner.invoke(main, ["call", "largest_cities", "--specs", str(folder / "specs"), "-a", "country=JP"])
    assert called.exit_code == 0 and "Tokyo (9,733,276), Yokohama (3,777,491)" in called.stdout, called.output


@pytest.mark.parametrize(
    ("where", "specs"), [("specs", "."), ("specs/sub", ".."), ("data", "../specs"), (".", "specs")]
)
def test_the_project_is_found_from_each_folder_the_specs_are_named_from(where, specs, tmp_path, monkeypatch):
    """The specs folder named relative to where the command runs, as `.` or `..` too: mcpgen.yaml (in its
    parent) and so the tables it loads are found, as from the project folder."""
    folder, _ = _init(tmp_path, monkeypatch)
    (folder / "specs" / "sub").mkdir()

    def run(*args: str):
        monkeypatch.chdir(folder / where)  # each command from there (serving ones change directory)
        return CliRunner().invoke(main, list(args))

    validated = run("validate", specs)
    assert validated.exit_code == 0 and "0 errors, 0 warnings" in validated.output, validated.output
    tested = run("test", specs)
    assert tested.exit_code == 0 and "2 passed, 0 failed" in tested.output, tested.output
    called = run("call", "largest_cities", "--specs", specs, "-a", "country=JP")
    assert called.exit_code == 0 and "Tokyo (9,733,276)" in called.stdout, called.output
    drafted = run("draft", "--table", "cities", "--specs", specs, "--print")
    assert drafted.exit_code == 0 and "FROM cities" in drafted.stdout, drafted.output


def test_init_overwrites_nothing(tmp_path):
    (tmp_path / "mcpgen.yaml").write_text("connections: {}\n")
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"mcpgen: error: {tmp_path / 'mcpgen.yaml'} exists already; init writes only into a new or empty project folder"
    )
    assert (tmp_path / "mcpgen.yaml").read_text() == "connections: {}\n" and not (tmp_path / "specs").exists()


@pytest.mark.slow
def test_init_then_serve_then_a_real_client(tmp_path, monkeypatch):
    """The client configuration init prints starts the server; the official client lists and calls the tool."""
    _, server = _init(tmp_path, monkeypatch)
    params = StdioServerParameters(command=server["command"], args=server["args"], env=dict(os.environ))

    async def session():
        with anyio.fail_after(60):
            async with Client(params) as client:
                tools = (await client.list_tools()).tools
                answer = await client.call_tool("largest_cities", {"country": "JP", "top_n": 3})
        return tools, answer

    tools, answer = anyio.run(session)
    assert [t.name for t in tools] == ["largest_cities"]
    assert not answer.is_error
    assert answer.structured_content["table"][1:] == [
        ["Tokyo", "JP", 9733276],
        ["Yokohama", "JP", 3777491],
        ["Osaka", "JP", 2753862],
    ]
