"""`mcpgen config CLIENT SPECS_DIR`: the configuration that makes an MCP client start this project's
server, in the client's own file format, with absolute paths; `--write` merges it into the client's
file, keeping every other server and a backup of the file as it was.

Each client's format and default file:

- claude: Claude Desktop's `claude_desktop_config.json` (`mcpServers`), in the app's folder of the
  user's settings. It starts servers with a small environment of its own and expands no variables,
  so a variable the project needs is written with an empty value, to fill in, and one already filled
  in is kept on the next `--write`. Remote servers are added in the app, not in this file.
- vscode: the workspace's `.vscode/mcp.json` (`servers`, `"type": "stdio"` or `"http"`); a variable
  the project needs is a `promptString` input (`${input:NAME}`), asked once and kept by VS Code.
- cursor: the project's `.cursor/mcp.json` (`mcpServers`); a variable is `${env:NAME}`, read from
  Cursor's environment.

>>> client = CLIENTS["vscode"]
>>> document = client.document("analytics", Launch("/venv/bin/mcpgen", ["serve", "/p/specs"]), {"DB_PASSWORD": True})
>>> document["servers"]["analytics"]["env"], document["inputs"][0]["id"], document["inputs"][0]["password"]
({'DB_PASSWORD': '${input:DB_PASSWORD}'}, 'DB_PASSWORD', True)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spec.config import ProjectConfig, environment_needed
from .writing import written_whole


class ClientConfigError(Exception):
    """The client's file cannot be read or written: one sentence naming it."""


@dataclass(frozen=True)
class Launch:
    """How a client starts the server (stdio), or where it reaches it (`url`, HTTP)."""

    command: str = ""
    args: tuple[str, ...] | list[str] = ()
    url: str | None = None
    token_env: str | None = None  # HTTP: the variable holding the bearer token the client sends


def server_launch(specs: Path) -> Launch:
    """The `mcpgen serve SPECS` of the installation running now, with absolute paths: the `mcpgen`
    script beside this interpreter when there is one (a virtual environment's), else the
    interpreter itself running the command line."""
    specs_arg = str(specs.resolve())
    script = Path(sys.executable).with_name("mcpgen.exe" if os.name == "nt" else "mcpgen")
    if script.is_file():
        return Launch(str(script), ["serve", specs_arg])
    return Launch(sys.executable, ["-m", "mcpgen", "serve", specs_arg])


def server_name(project: Path) -> str:
    """The name the server is listed under: the project folder's, in the letters clients accept.

    >>> server_name(Path("Sales Reports"))
    'sales-reports'
    """
    return re.sub(r"[^a-z0-9_-]+", "-", project.resolve().name.lower()).strip("-") or "mcpgen"


@dataclass(frozen=True)
class Client:
    name: str
    key: str  # the top-level key holding the servers
    stdio_type: bool  # entries carry "type": "stdio" / "http"
    variable: str  # how the file refers to an environment variable: {name} is replaced
    shown_file: str  # the default file, as the docs name it

    def default_file(self, project: Path) -> Path:
        if self.name == "claude":
            return claude_desktop_file()
        return project.resolve() / f".{self.name}" / "mcp.json"

    def entry(self, launch: Launch, needed: dict[str, bool], kept_env: dict[str, Any] | None = None) -> dict:
        """One server's entry; `kept_env`: the values an earlier entry had (Claude's, filled in by hand)."""
        if launch.url is not None:
            if self.name == "claude":
                raise ClientConfigError(
                    "Claude Desktop adds a remote server in the app (Settings > Connectors), not in its "
                    "configuration file; leave out --http to have it start the server itself"
                )
            entry: dict[str, Any] = {"type": "http"} if self.stdio_type else {}
            entry["url"] = launch.url
            if launch.token_env:
                entry["headers"] = {"Authorization": "Bearer " + self.variable.format(name=launch.token_env)}
            return entry
        entry = {"type": "stdio"} if self.stdio_type else {}
        entry.update(command=launch.command, args=list(launch.args))
        if needed:
            kept = kept_env or {}
            entry["env"] = {
                name: kept.get(name, "") if self.name == "claude" else self.variable.format(name=name)
                for name in needed
            }
        return entry

    def inputs(self, launch: Launch, needed: dict[str, bool]) -> list[dict]:
        """VS Code's `inputs`: one prompt per variable the entry refers to."""
        if self.name != "vscode":
            return []
        names = {launch.token_env: True} if launch.url is not None and launch.token_env else needed
        return [
            {"type": "promptString", "id": name, "description": f"{name} for the mcpgen server", "password": secret}
            for name, secret in names.items()
        ]

    def document(self, server: str, launch: Launch, needed: dict[str, bool]) -> dict:
        """The whole file for this one server, as printed."""
        document: dict[str, Any] = {self.key: {server: self.entry(launch, needed)}}
        inputs = self.inputs(launch, needed)
        if inputs:
            document["inputs"] = inputs
        return document


def claude_desktop_file() -> Path:
    """Claude Desktop's configuration file: in ~/Library/Application Support/Claude on macOS, in
    %APPDATA%\\Claude on Windows, and in ~/.config/Claude elsewhere (where builds for Linux keep it)."""
    if sys.platform == "darwin":
        folder = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":
        folder = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        folder = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return folder / "Claude" / "claude_desktop_config.json"


CLIENTS = {
    "claude": Client("claude", "mcpServers", False, "", "claude_desktop_config.json"),
    "vscode": Client("vscode", "servers", True, "${{input:{name}}}", ".vscode/mcp.json"),
    "cursor": Client("cursor", "mcpServers", False, "${{env:{name}}}", ".cursor/mcp.json"),
}


def read_client_file(path: Path, key: str) -> dict:
    """The client's file as a JSON object (empty when it does not exist yet), or a ClientConfigError
    saying what is wrong with it; nothing is changed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClientConfigError(
            f"{path}:{exc.lineno}:{exc.colno}: is not plain JSON ({exc.msg}); nothing was written "
            "(comments and trailing commas cannot be kept: fix the file, or add the printed entry by hand)"
        ) from None
    if not isinstance(document, dict):
        raise ClientConfigError(f"{path}: holds a JSON {type(document).__name__}, not an object; nothing was written")
    if not isinstance(document.get(key, {}), dict):
        raise ClientConfigError(f"{path}: its '{key}' is not an object of servers; nothing was written")
    if not isinstance(document.get("inputs", []), list):
        raise ClientConfigError(f"{path}: its 'inputs' is not a list; nothing was written")
    return document


def merge(client: Client, document: dict, server: str, launch: Launch, needed: dict[str, bool]) -> tuple[dict, str]:
    """`document` with this server's entry added or replaced (every other server and key kept), and
    what happened: "added", "replaced" or "unchanged"."""
    servers = dict(document.get(client.key, {}))
    before = servers.get(server)
    kept_env = before.get("env") if isinstance(before, dict) and isinstance(before.get("env"), dict) else None
    servers[server] = client.entry(launch, needed, kept_env)
    merged = {**document, client.key: servers}
    inputs = client.inputs(launch, needed)
    if inputs:
        ours = {i["id"] for i in inputs}
        others = [i for i in document.get("inputs", []) if not (isinstance(i, dict) and i.get("id") in ours)]
        merged["inputs"] = [*others, *inputs]
    if before is None:
        return merged, "added"
    return merged, "unchanged" if merged == document else "replaced"


def write_client_file(path: Path, document: dict) -> Path | None:
    """Write `document` to `path` whole or not at all (a file beside it, then renamed over it), keeping
    the file as it was in PATH.bak; the backup's path (None when there was no file)."""
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    with written_whole(path) as temporary:
        temporary.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return backup


def set_up_client(
    client: str,
    specs: Path,
    config: ProjectConfig,
    write: bool = False,
    path: Path | None = None,
    server: str | None = None,
    url: str | None = None,
) -> tuple[str, list[str]]:
    """What `mcpgen config` prints (the document, or what --write did) and its notes for stderr.
    `url`: reach a running `serve --http` there (with mcpgen.yaml's first token variable, if any)."""
    chosen = CLIENTS[client]
    project = specs.resolve().parent
    server = server or server_name(project)
    if url is not None:
        launch, needed = Launch(url=url, token_env=next(iter(config.http.tokens_env), None)), {}
    else:
        launch, needed = server_launch(specs), environment_needed(config)
    path = path or chosen.default_file(project)
    notes = []
    if not write:
        out = json.dumps(chosen.document(server, launch, needed), indent=2, ensure_ascii=False)
        notes.append(f"add this to {path}, or run again with --write to merge it there")
    else:
        document, happened = merge(chosen, read_client_file(path, chosen.key), server, launch, needed)
        backup = write_client_file(path, document) if happened != "unchanged" else None
        kept = f" (the file as it was is {backup})" if backup else ""
        out = {
            "added": f"added server '{server}' to {path}{kept}",
            "replaced": f"replaced server '{server}' in {path}{kept}",
            "unchanged": f"server '{server}' in {path} is already this; nothing was written",
        }[happened]
    if needed and client == "claude":
        notes.append(
            f"Claude Desktop does not pass your shell's variables: fill in {', '.join(needed)} in the entry's env"
        )
    return out, notes
