"""`mcpgen config CLIENT SPECS_DIR`: each client's own format with absolute paths and the variables
the project needs by name; `--write` merges into the client's file, keeps the other servers and a
backup, refuses a malformed file without touching it; the written entry starts a server that the
official client lists and calls."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import click
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from mcpgen.cli import main
from mcpgen.commands.clients import CLIENTS

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
  warehouse:
    url: postgresql://reader@${WAREHOUSE_HOST}:${WAREHOUSE_PORT:-5432}/sales
    password: ${WAREHOUSE_PASSWORD}
cursors:
  secret_env: SALES_CURSOR_KEY
http:
  tokens_env: [SALES_TOKEN]
"""
SPEC = """\
description: Two numbers.
sql: SELECT 1 AS n UNION ALL SELECT 2
sources: ["https://example.org/"]
content: "{{ row_count }} numbers"
"""


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "Sales Reports"
    (folder / "specs").mkdir(parents=True)
    (folder / "mcpgen.yaml").write_text(CONFIG)
    (folder / "specs" / "numbers.yaml").write_text(SPEC)
    return folder


def config(*args):
    return CliRunner().invoke(main, ["config", *map(str, args)])


def test_the_clients_offered_are_the_ones_known():
    command = main.get_command(click.Context(main), "config")
    assert sorted(command.params[0].type.choices) == sorted(CLIENTS)


def test_each_client_gets_its_own_format_with_absolute_paths(project, monkeypatch):
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "hunter2-in-the-shell")
    specs = str((project / "specs").resolve())
    printed = {}
    for client in ("claude", "vscode", "cursor"):
        result = config(client, project / "specs")
        assert result.exit_code == 0, result.output
        printed[client] = json.loads(result.stdout)
    vscode = printed["vscode"]["servers"]["sales-reports"]
    assert vscode["type"] == "stdio" and vscode["args"][-2:] == ["serve", specs]
    assert os.path.isabs(vscode["command"]) and os.access(vscode["command"], os.X_OK)
    # Only what has no default is needed; VS Code asks for each once (secrets hidden), Cursor reads its environment.
    assert vscode["env"] == {
        "WAREHOUSE_HOST": "${input:WAREHOUSE_HOST}",
        "WAREHOUSE_PASSWORD": "${input:WAREHOUSE_PASSWORD}",
        "SALES_CURSOR_KEY": "${input:SALES_CURSOR_KEY}",
    }
    assert [(i["id"], i["password"]) for i in printed["vscode"]["inputs"]] == [
        ("WAREHOUSE_HOST", False),
        ("WAREHOUSE_PASSWORD", True),
        ("SALES_CURSOR_KEY", True),
    ]
    cursor = printed["cursor"]["mcpServers"]["sales-reports"]
    assert "type" not in cursor and cursor["env"]["WAREHOUSE_PASSWORD"] == "${env:WAREHOUSE_PASSWORD}"
    claude = printed["claude"]["mcpServers"]["sales-reports"]
    assert claude["command"] == vscode["command"] and claude["args"] == vscode["args"]
    assert claude["env"] == dict.fromkeys(["WAREHOUSE_HOST", "WAREHOUSE_PASSWORD", "SALES_CURSOR_KEY"], "")
    assert not any("hunter2" in json.dumps(p) for p in printed.values())  # names only, never a value


def test_claude_is_told_to_fill_in_the_variables(project):
    result = config("claude", project / "specs")
    assert result.stderr.splitlines()[-1] == (
        "mcpgen: Claude Desktop does not pass your shell's variables: "
        "fill in WAREHOUSE_HOST, WAREHOUSE_PASSWORD, SALES_CURSOR_KEY in the entry's env"
    )


def test_the_default_files_are_where_each_client_reads_them(project, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    places = {
        "claude": tmp_path / "home" / ".config" / "Claude" / "claude_desktop_config.json",
        "vscode": project.resolve() / ".vscode" / "mcp.json",
        "cursor": project.resolve() / ".cursor" / "mcp.json",
    }
    for client, place in places.items():
        result = config(client, project / "specs", "--write")
        assert result.exit_code == 0 and result.stdout.strip() == f"added server 'sales-reports' to {place}"
        assert "sales-reports" in json.loads(place.read_text())[CLIENTS[client].key]


def test_write_merges_keeps_the_rest_and_a_backup(project, tmp_path):
    file = tmp_path / "mcp.json"
    before = {
        "servers": {"github": {"type": "http", "url": "https://api.example.com/mcp/"}},
        "inputs": [{"type": "promptString", "id": "gh-token", "password": True}],
        "editor.note": "kept",
    }
    file.write_text(json.dumps(before, indent=4))
    old_text = file.read_text()
    result = config("vscode", project / "specs", "--write", "--file", file)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"added server 'sales-reports' to {file} (the file as it was is {file}.bak)"
    after = json.loads(file.read_text())
    assert after["servers"]["github"] == before["servers"]["github"] and after["editor.note"] == "kept"
    assert [i["id"] for i in after["inputs"]] == [
        "gh-token",
        "WAREHOUSE_HOST",
        "WAREHOUSE_PASSWORD",
        "SALES_CURSOR_KEY",
    ]
    assert (tmp_path / "mcp.json.bak").read_text() == old_text
    again = config("vscode", project / "specs", "--write", "--file", file)
    assert again.stdout.strip() == f"server 'sales-reports' in {file} is already this; nothing was written"
    assert json.loads(file.read_text()) == after


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_mode_the_umask_gives_and_a_file_replaced_keeps_its_own(project, tmp_path, umask, mode):
    before = os.umask(umask)
    try:
        new = tmp_path / "new" / "mcp.json"
        assert config("vscode", project / "specs", "--write", "--file", new).exit_code == 0
        kept = tmp_path / "kept.json"
        kept.write_text("{}")
        kept.chmod(0o640)
        assert config("cursor", project / "specs", "--write", "--file", kept).exit_code == 0
    finally:
        os.umask(before)
    assert new.stat().st_mode & 0o777 == mode and "sales-reports" in new.read_text()
    assert kept.stat().st_mode & 0o777 == 0o640 and "sales-reports" in kept.read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_claude_keeps_the_values_filled_in_by_hand(project, tmp_path):
    file = tmp_path / "claude_desktop_config.json"
    assert config("claude", project / "specs", "--write", "--file", file).exit_code == 0
    document = json.loads(file.read_text())
    document["mcpServers"]["sales-reports"]["env"]["WAREHOUSE_HOST"] = "db.internal"
    document["mcpServers"]["sales-reports"]["args"] = ["serve", "/an/old/place"]
    file.write_text(json.dumps(document))
    result = config("claude", project / "specs", "--write", "--file", file)
    assert result.stdout.startswith(f"replaced server 'sales-reports' in {file}")
    entry = json.loads(file.read_text())["mcpServers"]["sales-reports"]
    assert entry["env"]["WAREHOUSE_HOST"] == "db.internal"
    assert entry["args"] == ["serve", str((project / "specs").resolve())]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '{\n  // my servers\n  "servers": {}\n}\n',
            ":2:3: is not plain JSON (Expecting property name enclosed in double quotes); nothing was written "
            "(comments and trailing commas cannot be kept: fix the file, or add the printed entry by hand)",
        ),
        ("[1, 2]\n", ": holds a JSON list, not an object; nothing was written"),
        ('{"servers": ["a"]}\n', ": its 'servers' is not an object of servers; nothing was written"),
    ],
)
def test_a_malformed_file_is_refused_and_left_alone(project, tmp_path, text, problem):
    file = tmp_path / "mcp.json"
    file.write_text(text)
    result = config("vscode", project / "specs", "--write", "--file", file)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == f"mcpgen: error: {file}{problem}"
    assert file.read_text() == text and not (tmp_path / "mcp.json.bak").exists()


def test_http_points_at_a_running_server_with_its_token(project):
    vscode = json.loads(config("vscode", project / "specs", "--http", "https://mcp.example.com/mcp").stdout)
    assert vscode["servers"]["sales-reports"] == {
        "type": "http",
        "url": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "Bearer ${input:SALES_TOKEN}"},
    }
    assert vscode["inputs"] == [
        {
            "type": "promptString",
            "id": "SALES_TOKEN",
            "description": "SALES_TOKEN for the mcpgen server",
            "password": True,
        }
    ]
    cursor = json.loads(config("cursor", project / "specs", "--http", "https://mcp.example.com/mcp").stdout)
    assert cursor["mcpServers"]["sales-reports"]["headers"] == {"Authorization": "Bearer ${env:SALES_TOKEN}"}
    claude = config("claude", project / "specs", "--http", "https://mcp.example.com/mcp")
    assert claude.exit_code == 1 and "Claude Desktop adds a remote server in the app" in claude.stderr
    bad = config("cursor", project / "specs", "--http", "mcp.example.com")
    assert bad.exit_code == 2 and "'mcp.example.com' is not an http:// or https:// URL" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("client", ["claude", "vscode", "cursor"])
def test_the_written_entry_starts_a_server_a_real_client_calls(tmp_path, monkeypatch, client):
    """The project `init` writes, set up with --write: the client's entry, run as the client runs it."""
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["init", "shop"]).exit_code == 0
    file = tmp_path / "client.json"
    assert config(client, Path("shop") / "specs", "--write", "--file", file).exit_code == 0
    entry = json.loads(file.read_text())[CLIENTS[client].key]["shop"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=dict(os.environ))

    async def session():
        with anyio.fail_after(60):
            async with Client(params) as mcp_client:
                return await mcp_client.call_tool("largest_cities", {"country": "JP", "top_n": 1})

    answer = anyio.run(session)
    assert not answer.is_error and answer.structured_content["table"][1] == ["Tokyo", "JP", 9733276]


def test_the_guides_example_is_what_config_prints(tmp_path):
    """docs/clients.md's example, for its mcpgen.yaml: the same entry and inputs, paths aside."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "clients.md").read_text()
    [block] = re.findall(r"```json\n(.*?)```", guide, re.S)
    shown = json.loads(block)
    folder = tmp_path / "sales"
    (folder / "specs").mkdir(parents=True)
    (folder / "specs" / "numbers.yaml").write_text(SPEC)
    (folder / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    url: postgresql://reader@${WAREHOUSE_HOST}/sales\n"
        "    password: ${WAREHOUSE_PASSWORD}\n"
    )
    printed = json.loads(config("vscode", folder / "specs").stdout)
    for document in (shown, printed):
        document["servers"]["sales"]["command"] = "mcpgen"
        document["servers"]["sales"]["args"][-1] = "specs"
    assert printed == shown
    [error] = re.findall(r"```text\n(.*?)```", guide, re.S)
    file = folder / ".vscode" / "mcp.json"
    file.parent.mkdir()
    file.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    refused = config("vscode", folder / "specs", "--write")
    assert refused.stderr.strip() == error.strip().replace(".vscode/mcp.json", str(file.resolve()))


def test_without_a_script_beside_the_interpreter_the_entry_runs_python_dash_m_mcpgen(tmp_path, monkeypatch):
    """An installation with no `mcpgen` script beside its Python: the entry starts `python -m mcpgen`,
    which serves."""
    import subprocess
    import sys

    from mcpgen.commands.clients import server_launch

    python = sys.executable
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python3"))  # no mcpgen beside it
    specs = Path(__file__).resolve().parents[2] / "specs"
    launch = server_launch(specs)
    assert (launch.command, list(launch.args)) == (sys.executable, ["-m", "mcpgen", "serve", str(specs)])
    env = {**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")}
    served = subprocess.run(
        [python, *launch.args], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    assert served.returncode == 0 and b"serving 10 tools" in served.stderr, served.stderr
