"""`mcpgen bundle SPECS_DIR`: the project as an MCP Bundle (`.mcpb`, manifest_version 0.3) that a
desktop host installs in one step, and, with `--server-json`, the `server.json` that lists that
bundle in the MCP registry.

The bundle is a zip holding `manifest.json`, a launcher `server/main.py` and `project/`: mcpgen.yaml,
the specs folder and the data files the project names (see `data_files`). The manifest's server is
`"type": "python"`, the only kind manifest_version 0.3 has for a Python server (`uv`, where the host
installs the dependencies itself, comes with 0.4): the host runs `python3 server/main.py`
(`python` on Windows), which serves the packed project with the mcpgen of that Python. Each
variable the project needs (`environment_needed`, as `mcpgen config` lists them) becomes a
`user_config` entry the host asks for when installing, secrets marked `sensitive`, and is passed
to the server by name; a value is never packed, and a password written out in mcpgen.yaml
refuses the bundle.

>>> user_config({"DB_HOST": False, "DB_PASSWORD": True})["DB_PASSWORD"]["sensitive"]
True
>>> server_config({"DB_PASSWORD": True})["env"]
{'DB_PASSWORD': '${user_config.DB_PASSWORD}'}
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..checks import literal_password
from ..load.specs import LoadedProject
from ..spec.config import DuckDBConnection, URLConnection, environment_needed
from ..version import __version__
from .writing import written_whole

__all__ = [
    "BundleError",
    "BundleOptions",
    "check_name",
    "check_version",
    "data_files",
    "make_bundle",
    "manifest",
    "registry_entry",
    "server_config",
    "user_config",
]

MANIFEST_VERSION = "0.3"
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
BUNDLE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")
REGISTRY_NAME = re.compile(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+")  # the registry schema's pattern for `name`
_QUOTED = re.compile(r"'((?:[^']|'')+)'")  # SQL string literals: where a query names a file
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every entry dated the same, so the same project packs to the same bytes
_EXTRAS = {
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
}  # URL scheme -> mcpgen's extra

LAUNCHER = '''\
"""Start `mcpgen serve` on the project packed beside this folder (written by `mcpgen bundle`)."""

import sys
from pathlib import Path

SPECS = Path(__file__).resolve().parent.parent.joinpath({specs})
try:
    from mcpgen.cli import run
except ImportError:
    sys.exit("this bundle is served by mcpgen {version}, which the Python running it lacks: {install}")
sys.argv = ["mcpgen", "serve", str(SPECS)]
run()
'''


class BundleError(Exception):
    """The bundle cannot be made as asked: one sentence naming the option, file or variable."""


@dataclass(frozen=True)
class BundleOptions:
    name: str
    version: str = "0.1.0"
    author: str = "mcpgen"
    description: str | None = None
    include: tuple[str, ...] = ()  # more files to pack, globs relative to the project folder
    registry_name: str | None = None  # server.json's name, e.g. io.github.ana/sales
    url: str | None = None  # where the bundle will be downloaded from, for server.json


def check_name(name: str) -> str:
    """The bundle's name, or a BundleError saying which letters it may have.

    >>> check_name("Sales Reports")
    Traceback (most recent call last):
    ...
    mcpgen.commands.bundle.BundleError: --name 'Sales Reports' is not a bundle name: use at most 64 lower-case letters, digits, '-' and '_', starting with a letter or digit (e.g. sales-reports)
    """
    if not BUNDLE_NAME.fullmatch(name):
        example = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:64] or "sales"
        raise BundleError(
            f"--name '{name}' is not a bundle name: use at most 64 lower-case letters, digits, '-' and '_', "
            f"starting with a letter or digit (e.g. {example})"
        )
    return name


def check_version(version: str) -> str:
    """The bundle's version: one exact release (semantic versioning), as hosts and the registry compare them.

    >>> check_version("latest")
    Traceback (most recent call last):
    ...
    mcpgen.commands.bundle.BundleError: --version 'latest' is not one release: write MAJOR.MINOR.PATCH, e.g. 1.0.0 or 1.2.0-rc.1
    """
    if not SEMVER.fullmatch(version):
        raise BundleError(
            f"--version '{version}' is not one release: write MAJOR.MINOR.PATCH, e.g. 1.0.0 or 1.2.0-rc.1"
        )
    return version


def _check_no_secret(project: LoadedProject) -> None:
    """A password written out in mcpgen.yaml would be packed: refuse it, naming the connection only."""
    for name, connection in project.config.connections.items():
        if isinstance(connection, URLConnection) and (
            literal_password(connection.url) or (connection.password and "${" not in connection.password)
        ):
            raise BundleError(
                f"{project.config_path}: connection '{name}' has its password written out, and a bundle never "
                "carries a secret: write password: ${ENV_VAR}, which the host asks for when installing"
            )


def _visible(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    return not any(p.startswith(".") or p == "__pycache__" for p in parts)


def data_files(project: LoadedProject, include: tuple[str, ...] = ()) -> list[Path]:
    """The files under the project folder that its SQL names (in a `'quoted'` path or glob, in an
    init statement or a spec's query), a spec's `sql_file`, a DuckDB connection's database file,
    mcpgen.yaml's icon files and those `include` names; hidden files never."""
    root = project.root
    texts = [s.sql for s in project.specs]
    candidates: list[str] = list(include)
    for connection in project.config.connections.values():
        if isinstance(connection, DuckDBConnection):
            texts.extend(connection.init)
            candidates.append(connection.duckdb)
        elif isinstance(connection, URLConnection) and connection.url.startswith("sqlite:///"):
            candidates.append(connection.url.removeprefix("sqlite:///").split("?")[0])
    candidates.extend(i.src for i in project.config.icons)
    for text in texts:
        candidates.extend(m.replace("''", "'") for m in _QUOTED.findall(text))
    found: set[Path] = set()
    for spec in project.specs:
        if spec.spec.sql_file:
            path = (spec.path.parent / spec.spec.sql_file).resolve()
            if not path.is_relative_to(root):
                raise BundleError(
                    f"{spec.path}: sql_file '{spec.spec.sql_file}' is outside the project folder {root}, "
                    "and a bundle packs only that folder: move the file into it"
                )
            found.add(path)
    for candidate in candidates:
        if not candidate or candidate.startswith(("http:", "https:", "s3:", "data:", ":")):
            continue
        for match in glob.glob(candidate, root_dir=root, recursive=True):
            path = (root / match).resolve()
            if path.is_file() and path.is_relative_to(root) and _visible(path, root):
                found.add(path)
    return sorted(found)


def _project_files(project: LoadedProject, include: tuple[str, ...]) -> dict[str, Path]:
    """Every file the bundle packs under `project/`, by its name there (relative to the project folder)."""
    root = project.root
    files = {}
    if project.config_path is not None:
        files[project.config_path.resolve().relative_to(root).as_posix()] = project.config_path.resolve()
    for path in sorted(project.specs_dir.resolve().rglob("*")):
        if path.is_file() and _visible(path, root):
            files[path.relative_to(root).as_posix()] = path
    for path in data_files(project, include):
        files[path.relative_to(root).as_posix()] = path
    return files


def user_config(needed: dict[str, bool]) -> dict[str, dict]:
    """The host's questions: one per variable, asked at install and kept by the host (secrets hidden)."""
    return {
        name: {
            "type": "string",
            "title": name,
            "description": f"{name}, which mcpgen.yaml reads as ${{{name}}}",
            "required": True,
            "sensitive": secret,
        }
        for name, secret in needed.items()
    }


def server_config(needed: dict[str, bool]) -> dict:
    """The manifest's `mcp_config`: the launcher, run by the host's Python, with the answers by name."""
    config: dict = {"command": "python3", "args": ["${__dirname}/server/main.py"]}
    if needed:
        config["env"] = {name: f"${{user_config.{name}}}" for name in needed}
    config["platform_overrides"] = {"win32": {"command": "python"}}  # Windows' Python installs `python`
    return config


def _install_hint(project: LoadedProject) -> str:
    extras = sorted(
        {
            _EXTRAS[scheme]
            for c in project.config.connections.values()
            if isinstance(c, URLConnection) and (scheme := c.url.split(":", 1)[0].split("+")[0]) in _EXTRAS
        }
    )
    return f"pip install 'mcpgen{'[' + ','.join(extras) + ']' if extras else ''}=={__version__}'"


def _description(project: LoadedProject, options: BundleOptions) -> str:
    if options.description:
        return options.description
    names = [s.name for s in project.specs]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"mcpgen tools: {shown}" if names else "mcpgen tools"


def manifest(project: LoadedProject, options: BundleOptions, needed: dict[str, bool]) -> dict:
    """manifest.json, manifest_version 0.3."""
    document: dict = {
        "manifest_version": MANIFEST_VERSION,
        "name": options.name,
        "display_name": project.root.name,
        "version": options.version,
        "description": _description(project, options),
        "author": {"name": options.author},
        "server": {
            "type": "python",
            "entry_point": "server/main.py",
            "mcp_config": server_config(needed),
        },
        "tools": [{"name": s.name, "description": s.spec.description.strip()} for s in project.specs],
        "tools_generated": bool(project.python_files),  # Python tools are known once imported
        "compatibility": {"runtimes": {"python": ">=3.11"}},
    }
    if project.prompts:
        document["prompts_generated"] = True
    if needed:
        document["user_config"] = user_config(needed)
    return document


def registry_entry(document: dict, options: BundleOptions, sha256: str, needed: dict[str, bool]) -> dict:
    """server.json for the MCP registry: the bundle at `options.url`, its SHA-256, and the variables."""
    if not options.registry_name or not REGISTRY_NAME.fullmatch(options.registry_name):
        raise BundleError(
            f"--registry-name '{options.registry_name or ''}' is not a registry name: write it as NAMESPACE/NAME "
            "in letters, digits, '.', '-' (and '_' after the slash), e.g. io.github.ana/sales"
        )
    url = urlparse(options.url or "")
    if url.scheme != "https" or not url.netloc or not url.path.endswith(".mcpb"):
        raise BundleError(
            f"--url '{options.url or ''}' is not where the registry can download the bundle: give the https:// "
            "URL of the .mcpb file as you will publish it"
        )
    package: dict = {
        "registryType": "mcpb",
        "identifier": options.url,
        "version": options.version,
        "fileSha256": sha256,
        "transport": {"type": "stdio"},
    }
    if needed:
        package["environmentVariables"] = [
            {"name": name, "description": f"{name}, which mcpgen.yaml reads", "isRequired": True, "isSecret": secret}
            for name, secret in needed.items()
        ]
    description = document["description"]
    return {
        "$schema": REGISTRY_SCHEMA,
        "name": options.registry_name,
        "title": document["display_name"][:100],
        "description": description if len(description) <= 100 else description[:99] + "…",
        "version": options.version,
        "packages": [package],
    }


def _write_zip(out: Path, entries: dict[str, bytes | Path]) -> str:
    """Write the zip whole or not at all (beside `out`, then renamed); its SHA-256."""
    with written_whole(out) as temporary:  # not mkstemp's 0600, which kept the .mcpb from a web folder
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, content in sorted(entries.items()):
                info = zipfile.ZipInfo(name, _ZIP_TIME)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, content.read_bytes() if isinstance(content, Path) else content)
        digest = hashlib.sha256(temporary.read_bytes()).hexdigest()
    return digest


def _refuse_existing(paths: list[Path]) -> None:
    for path in paths:
        if path.exists():
            raise BundleError(f"{path} exists; give another -o, or --force to replace it")


def make_bundle(
    project: LoadedProject, out: Path, options: BundleOptions, server_json: bool = False, force: bool = False
) -> tuple[dict, str, Path | None]:
    """Write the bundle to `out` (and server.json beside it): its manifest, SHA-256 and server.json's path."""
    check_name(options.name)
    check_version(options.version)
    _check_no_secret(project)
    for path in (project.specs_dir, project.config_path):
        if path is not None and not path.resolve().is_relative_to(project.root):
            raise BundleError(
                f"{path} leads to {path.resolve()}, outside the project folder {project.root}; "
                "the bundle packs the project folder only: copy it in, or bundle from where it lives"
            )
    json_path = out.with_name("server.json") if server_json else None
    if server_json:  # its options are checked before anything is written
        registry_entry({"description": "", "display_name": ""}, options, "0" * 64, {})
    if not force:
        _refuse_existing([out, *([json_path] if json_path else [])])
    needed = environment_needed(project.config)
    document = manifest(project, options, needed)
    specs = project.specs_dir.resolve().relative_to(project.root).parts
    launcher = LAUNCHER.format(
        specs=", ".join(map(repr, ("project", *specs))), version=__version__, install=_install_hint(project)
    )
    entries: dict[str, bytes | Path] = {
        "manifest.json": (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode(),
        "server/main.py": launcher.encode(),
    }
    entries.update({f"project/{name}": path for name, path in _project_files(project, options.include).items()})
    digest = _write_zip(out, entries)
    if json_path is not None:
        entry = registry_entry(document, options, digest, needed)
        json_path.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return document, digest, json_path
