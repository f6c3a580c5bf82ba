"""`mcpgen bundle SPECS_DIR`: an MCP Bundle that the official `mcpb` tools accept (its manifest checked
against the pinned package's own JSON Schema, unpacked, validated and packed again by its CLI), that
packs the project's files and never a secret, asks the host for each variable the project needs, and
whose server command, resolved from the manifest as a desktop host resolves it, serves the packed
project to the official MCP client; `--server-json` writes a server.json that the MCP registry's
published schema accepts. Bad inputs are refused in one sentence.

The mcpb package comes from tests/mcpb/package-lock.json (pinned, with checksums), installed by
.ci/run into tests/.artifacts/mcpb; the registry's schema from the pinned `skillsaw` test dependency,
which ships the published copy. Nothing is fetched at test time."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import anyio
import duckdb
import jsonschema
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from services import services_required

from mcpgen.cli import main
from mcpgen.version import __version__

HERE = Path(__file__).resolve().parent
MODULES = HERE.parent / ".artifacts" / "mcpb" / "node_modules"
MCPB = MODULES / "@anthropic-ai" / "mcpb"
RESOLVE = HERE.parent / "mcpb" / "resolve.mjs"
CURSOR_KEY = "a-cursor-key-of-more-than-sixteen-characters"
SECRET = "hunter2-in-the-shell-environment"

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE cities AS SELECT * FROM read_csv('data/cities.csv')
  warehouse:
    url: postgresql://reader@${WAREHOUSE_HOST}:${WAREHOUSE_PORT:-5432}/sales
    password: ${WAREHOUSE_PASSWORD}
cursors:
  secret_env: SALES_CURSOR_KEY
"""
SPEC = """\
description: The largest cities.
sql: SELECT name, population FROM cities ORDER BY population DESC LIMIT 3
sources: ["https://www.geonames.org/"]
content: "{{ row_count }} cities"
"""


def mcpb_installed() -> None:
    """Skip (or fail under MCPGEN_REQUIRE_SERVICES=1) without node or the pinned mcpb package."""
    reason = None
    if shutil.which("node") is None:
        reason = "node is not installed"
    elif not (MCPB / "package.json").is_file():
        reason = f"@anthropic-ai/mcpb is not installed in {MODULES} (see .ci/run)"
    if reason:
        if services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)


def mcpb(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["node", str(MCPB / "dist" / "cli" / "cli.js"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "Sales Reports"
    for sub in ("specs", "data", "notes"):
        (folder / sub).mkdir(parents=True)
    (folder / "mcpgen.yaml").write_text(CONFIG)
    (folder / "specs" / "largest.yaml").write_text(SPEC)
    (folder / "data" / "cities.csv").write_text("name,population\nTokyo,9733276\nOsaka,2753862\n")
    (folder / "notes" / "draft.csv").write_text("not used by any query\n")
    (folder / ".env").write_text(f"WAREHOUSE_PASSWORD={SECRET}\n")
    return folder


def bundle(*args):
    return CliRunner().invoke(main, ["bundle", *map(str, args)])


def test_the_bundle_packs_the_project_and_asks_for_its_variables(project, tmp_path, monkeypatch):
    monkeypatch.setenv("WAREHOUSE_PASSWORD", SECRET)
    out = tmp_path / "sales.mcpb"
    result = bundle(project / "specs", "-o", out)
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as archive:
        names = sorted(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
        everything = b"".join(archive.read(n) for n in names)
    # mcpgen.yaml, the specs and the file the SQL names; not the unused file, nor the hidden .env.
    assert names == [
        "manifest.json",
        "project/data/cities.csv",
        "project/mcpgen.yaml",
        "project/specs/largest.yaml",
        "server/main.py",
    ]
    assert SECRET.encode() not in everything
    assert manifest["name"] == "sales-reports" and manifest["display_name"] == "Sales Reports"
    assert manifest["manifest_version"] == "0.3"
    assert manifest["server"]["type"] == "python" and manifest["server"]["entry_point"] == "server/main.py"
    config = manifest["server"]["mcp_config"]
    assert config["args"] == ["${__dirname}/server/main.py"]
    # Only what has no default is asked for, each passed by name; secrets are marked sensitive.
    assert config["env"] == {name: f"${{user_config.{name}}}" for name in manifest["user_config"]}
    assert {k: v["sensitive"] for k, v in manifest["user_config"].items()} == {
        "WAREHOUSE_HOST": False,
        "WAREHOUSE_PASSWORD": True,
        "SALES_CURSOR_KEY": True,
    }
    assert all(v["required"] and "default" not in v for v in manifest["user_config"].values())
    assert manifest["tools"] == [{"name": "largest", "description": "The largest cities."}]
    assert result.output.startswith(f"wrote {out} (1 tool; the host asks for ")


def test_the_same_project_packs_to_the_same_bytes(project, tmp_path):
    first, second = tmp_path / "a.mcpb", tmp_path / "b.mcpb"
    assert bundle(project / "specs", "-o", first).exit_code == 0
    assert bundle(project / "specs", "-o", second).exit_code == 0
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_the_bundle_file_has_the_mode_the_user_s_umask_gives(project, tmp_path, umask, mode):
    before = os.umask(umask)
    try:
        assert bundle(project / "specs", "-o", tmp_path / "sales.mcpb").exit_code == 0
    finally:
        os.umask(before)
    assert (tmp_path / "sales.mcpb").stat().st_mode & 0o777 == mode


def test_include_packs_more_files(project, tmp_path):
    out = tmp_path / "sales.mcpb"
    assert bundle(project / "specs", "-o", out, "--include", "notes/*.csv").exit_code == 0
    assert "project/notes/draft.csv" in zipfile.ZipFile(out).namelist()


def test_a_query_file_is_packed_and_one_outside_the_project_refused(project, tmp_path):
    (project / "specs" / "sql").mkdir()
    (project / "specs" / "sql" / "largest.sql").write_text("SELECT name FROM cities")
    (project / "specs" / "largest.yaml").write_text(SPEC.replace("sql: SELECT", "sql_file: sql/largest.sql\n# SELECT"))
    out = tmp_path / "sales.mcpb"
    assert bundle(project / "specs", "-o", out).exit_code == 0
    assert "project/specs/sql/largest.sql" in zipfile.ZipFile(out).namelist()
    (tmp_path / "outside.sql").write_text("SELECT name FROM cities")
    (project / "specs" / "largest.yaml").write_text(
        SPEC.replace("sql: SELECT", "sql_file: ../../outside.sql\n# SELECT")
    )
    refused = bundle(project / "specs", "-o", tmp_path / "other.mcpb")
    assert refused.exit_code == 1 and "sql_file '../../outside.sql' is outside the project folder" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_python_without_mcpgen_is_told_what_to_install(project, tmp_path):
    """The launcher, run by a Python where mcpgen cannot be imported (-S: no site-packages), says so once."""
    out = tmp_path / "sales.mcpb"
    assert bundle(project / "specs", "-o", out).exit_code == 0
    zipfile.ZipFile(out).extractall(tmp_path / "installed")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(tmp_path / "installed" / "server" / "main.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"this bundle is served by mcpgen {__version__}, which the Python running it lacks: "
        f"pip install 'mcpgen[postgres]=={__version__}'\n"
    )


def test_the_manifest_is_valid_for_the_pinned_mcpb_schema(project, tmp_path):
    mcpb_installed()
    out = tmp_path / "sales.mcpb"
    assert bundle(project / "specs", "-o", out).exit_code == 0
    schema = json.loads((MCPB / "dist" / "mcpb-manifest-v0.3.schema.json").read_text())
    manifest = json.loads(zipfile.ZipFile(out).read("manifest.json"))
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(manifest)
    broken = {**manifest, "server": {**manifest["server"], "type": "uv"}}  # the schema does refuse a wrong one
    assert not jsonschema.Draft7Validator(schema).is_valid(broken)


def registry_schema() -> dict:
    """The MCP registry's published server.json schema, as the pinned skillsaw package ships it."""
    text = resources.files("skillsaw.schemas.mcp_registry.v2025_12_11").joinpath("server.schema.json").read_text()
    return json.loads(text)


def test_server_json_is_valid_for_the_registry_schema(project, tmp_path):
    out = tmp_path / "dist" / "sales.mcpb"
    url = "https://github.com/ana/sales/releases/download/v1.2.0/sales.mcpb"
    args = ["--server-json", "--registry-name", "io.github.ana/sales", "--url", url, "--version", "1.2.0"]
    result = bundle(project / "specs", "-o", out, *args)
    assert result.exit_code == 0, result.output
    entry = json.loads((out.parent / "server.json").read_text())
    schema = registry_schema()
    assert entry["$schema"] == schema["$id"]
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(entry)
    [package] = entry["packages"]
    assert package["fileSha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert (package["registryType"], package["identifier"], package["version"]) == ("mcpb", url, "1.2.0")
    assert [(v["name"], v["isSecret"]) for v in package["environmentVariables"]] == [
        ("WAREHOUSE_HOST", False),
        ("WAREHOUSE_PASSWORD", True),
        ("SALES_CURSOR_KEY", True),
    ]
    assert not jsonschema.Draft7Validator(schema).is_valid({**entry, "name": "sales"})  # it checks the name
    # The registry's publishing rules beyond the schema (exact versions, an MCPB URL, ...), as skillsaw checks them.
    lint = subprocess.run(
        [sys.executable, "-m", "skillsaw", "lint", str(out.parent)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert lint.returncode == 0 and "Errors:   0" in lint.stdout, lint.stdout


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--name", "Sales Reports"], "--name 'Sales Reports' is not a bundle name: use at most 64 lower-case"),
        (["--version", "latest"], "--version 'latest' is not one release: write MAJOR.MINOR.PATCH"),
        (["--version", "^1.2.0"], "--version '^1.2.0' is not one release"),
        (["--server-json", "--url", "https://x.org/s.mcpb"], "--registry-name '' is not a registry name"),
        (
            ["--server-json", "--registry-name", "io.github.ana/sales", "--url", "http://x.org/s.mcpb"],
            "--url 'http://x.org/s.mcpb' is not where the registry can download the bundle",
        ),
    ],
)
def test_bad_options_are_refused_in_one_sentence(project, tmp_path, args, problem):
    out = tmp_path / "sales.mcpb"
    result = bundle(project / "specs", "-o", out, *args)
    assert result.exit_code == 1 and result.stderr.startswith(f"mcpgen: error: {problem}")
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()


def test_an_existing_output_is_kept_unless_forced(project, tmp_path):
    out = tmp_path / "sales.mcpb"
    out.write_bytes(b"an older bundle")
    refused = bundle(project / "specs", "-o", out)
    assert refused.exit_code == 1
    assert refused.stderr == f"mcpgen: error: {out} exists; give another -o, or --force to replace it\n"
    assert out.read_bytes() == b"an older bundle"
    assert bundle(project / "specs", "-o", out, "--force").exit_code == 0 and zipfile.is_zipfile(out)


@pytest.mark.parametrize("linked", ["specs", "mcpgen.yaml"])
def test_a_specs_folder_or_project_file_linked_from_elsewhere_is_refused_in_one_sentence(project, tmp_path, linked):
    """The bundle packs the project folder: a link out of it (the specs, mcpgen.yaml) is named, not a traceback."""
    here = tmp_path / "here"
    here.mkdir()
    (here / linked).symlink_to(project / linked)
    if linked == "mcpgen.yaml":
        shutil.copytree(project / "specs", here / "specs")
    result = bundle(here / "specs", "-o", tmp_path / "x.mcpb")
    assert result.exit_code == 1 and "Traceback" not in result.output and not (tmp_path / "x.mcpb").exists()
    assert result.stderr == (
        f"mcpgen: error: {here / linked} leads to {project / linked}, outside the project folder {here}; "
        "the bundle packs the project folder only: copy it in, or bundle from where it lives\n"
    )


def test_a_written_out_password_is_never_packed(project, tmp_path):
    (project / "mcpgen.yaml").write_text(CONFIG.replace("${WAREHOUSE_PASSWORD}", SECRET))
    out = tmp_path / "sales.mcpb"
    result = bundle(project / "specs", "-o", out)
    assert result.exit_code == 1 and not out.exists()
    assert "connection 'warehouse' has its password written out, and a bundle never carries a secret" in result.stderr
    assert SECRET not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_no_specs_and_a_name_clash_are_refused_with_where(project, tmp_path):
    empty = project / "empty"
    empty.mkdir()
    result = bundle(empty, "-o", tmp_path / "x.mcpb")
    assert result.exit_code == 1 and "no spec files (*.yaml, *.yml) in" in result.stderr
    assert result.stderr.splitlines()[-1].endswith("nothing was packed") and "Traceback" not in result.output
    (project / "specs" / "again.yaml").write_text("name: largest\n" + SPEC)
    clash = bundle(project / "specs", "-o", tmp_path / "y.mcpb")
    assert clash.exit_code == 1 and "largest.yaml:1:1: tool name 'largest' is already used by" in clash.stderr
    assert not (tmp_path / "y.mcpb").exists()


@pytest.mark.slow
def test_a_host_installs_the_bundle_and_its_server_answers(tmp_path, monkeypatch):
    """`init`'s project bundled; the official mcpb CLI unpacks, validates and packs it again; the
    server command resolved from the manifest (with the answer to its question) serves the packed
    project to the official MCP client, which gets the rows DuckDB gives for the same query."""
    mcpb_installed()
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(main, ["init", "shop"]).exit_code == 0
    with open("shop/mcpgen.yaml", "a") as config:
        config.write("cursors:\n  secret_env: SHOP_CURSOR_KEY\n")
    assert bundle("shop/specs", "-o", "shop.mcpb").exit_code == 0
    unpacked = tmp_path / "installed"
    assert mcpb("unpack", "shop.mcpb", unpacked).returncode == 0
    checked = mcpb("validate", unpacked / "manifest.json")
    assert checked.returncode == 0 and "Manifest schema validation passes!" in checked.stdout
    packed = mcpb("pack", unpacked, tmp_path / "again.mcpb")
    assert packed.returncode == 0 and "total files: 5" in packed.stdout, packed.stdout + packed.stderr
    assert mcpb("info", "shop.mcpb").returncode == 0

    def resolve(answers: dict) -> dict | None:
        done = subprocess.run(
            ["node", str(RESOLVE), str(MODULES), str(unpacked), json.dumps(answers)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert resolve({}) is None  # the host does not start it before the question is answered
    server = resolve({"SHOP_CURSOR_KEY": CURSOR_KEY})
    assert server["env"] == {"SHOP_CURSOR_KEY": CURSOR_KEY}
    shutil.rmtree(tmp_path / "shop")  # the installed copy serves alone
    env = {k: v for k, v in os.environ.items() if k != "SHOP_CURSOR_KEY"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # its python3: ours
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env={**env, **server["env"]}, cwd=str(tmp_path)
    )

    async def session():
        with anyio.fail_after(60):
            async with Client(params) as mcp_client:
                return await mcp_client.call_tool("largest_cities", {"country": "JP", "top_n": 3})

    answer = anyio.run(session)
    assert not answer.is_error
    header, *rows = answer.structured_content["table"]
    direct = duckdb.sql(
        "SELECT name, country_code, population FROM read_csv(?) WHERE country_code = 'JP' "
        "ORDER BY population DESC, name LIMIT 3",
        params=[str(unpacked / "project" / "data" / "cities.csv")],
    ).fetchall()
    assert header == ["city", "country_code", "population"]
    assert [tuple(r) for r in rows] == direct and len(direct) == 3


def test_the_guides_refusals_are_what_bundle_prints(project, monkeypatch):
    """docs/clients.md's "When `bundle` refuses" lines, each from the input it describes."""
    guide = (HERE.parents[1] / "docs" / "clients.md").read_text()
    section = guide.split("## When `bundle` refuses", 1)[1]
    shown = [line.strip() for line in section.splitlines() if line.startswith("    mcpgen: error:")]
    monkeypatch.chdir(project)
    (project / "dist").mkdir()
    (project / "dist" / "sales.mcpb").write_bytes(b"")
    url = "https://x.org/s.mcpb"
    runs = [
        ["--name", "Sales Reports"],
        ["-o", "dist/sales.mcpb"],
        ["--version", "latest"],
        None,  # the password written out
        ["--server-json", "--registry-name", "sales", "--url", url],
        ["--server-json", "--registry-name", "io.github.ana/sales", "--url", "http://x.org/s.mcpb"],
    ]
    printed = []
    for args in runs:
        if args is None:
            (project / "mcpgen.yaml").write_text(CONFIG.replace("${WAREHOUSE_PASSWORD}", SECRET))
            args = []
        printed.append(bundle("specs", *args).stderr.strip())
        (project / "mcpgen.yaml").write_text(CONFIG)
    assert printed == shown
