"""Every example in the README and in docs/spec-format.md (the contract) runs as written."""

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from mcpgen.cli import main
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project
from mcpgen.spec.config import ProjectConfig

REPO = Path(__file__).resolve().parents[2]


def blocks(path: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (REPO / path).read_text(), re.S)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose `cities` and `countries` tables are the shipped GeoNames data."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(REPO / "examples/data/cities.csv", tmp_path)
    shutil.copy(REPO / "examples/data/countries.csv", tmp_path)
    (tmp_path / "mcpgen.yaml").write_text(
        textwrap.dedent("""\
        connections:
          default:
            duckdb: ":memory:"
            init:
              - CREATE TABLE cities AS SELECT * FROM read_csv('cities.csv')
              - CREATE TABLE countries AS SELECT * FROM read_csv('countries.csv')
        """)
    )
    (tmp_path / "specs").mkdir()
    return tmp_path


def direct(tmp_path, sql, params):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE cities AS SELECT * FROM read_csv('{tmp_path / 'cities.csv'}')")
    con.execute(f"CREATE TABLE countries AS SELECT * FROM read_csv('{tmp_path / 'countries.csv'}')")
    return con.execute(re.sub(r"(?<!:):(\w+)", r"$\1", sql), params).fetchall()


def test_the_contracts_spec_example_runs_as_written(project):
    example = blocks("docs/spec-format.md", "yaml")[0]
    (project / "specs" / "top_cities.yaml").write_text(example)
    opened = open_project(project / "specs")
    try:
        result = opened.registry.call_sync("top_cities", {"n": 2, "country": "JP"})
        spec = yaml.safe_load(example)
        rows = direct(project, spec["sql"], {"n": 2, "country": "JP"})
        assert result.structured_content["table"] == [["city", "population"], *[list(r) for r in rows]]
        assert (
            result.content[0].text == f"The 2 most populated cities are\n{rows[0][0]} ({rows[0][1]:,}), "
            f"{rows[1][0]} ({rows[1][1]:,})."
        )
        assert result.structured_content["charts"][0]["type"] == "bar"
        tool = opened.registry.get("top_cities").to_mcp()
        assert tool.title == "Most populated cities"
        assert tool.input_schema["properties"]["n"]["maximum"] == 100
    finally:
        opened.close()


def test_the_contracts_project_file_example_is_accepted(monkeypatch):
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "not-echoed")
    example = yaml.safe_load(blocks("docs/spec-format.md", "yaml")[1])
    config = ProjectConfig.model_validate(example)
    assert config.connections["default"].duckdb == "data/world.duckdb"
    assert config.connections["warehouse"].url.startswith("postgresql+psycopg://")
    assert config.defaults.timeout == 30.0


def test_the_contracts_result_example_fits_the_output_schema():
    from mcpgen.answer.results import DataToolPayload

    payload = DataToolPayload.model_validate(json.loads(blocks("docs/spec-format.md", "json")[0]))
    assert payload.sources == ["https://www.geonames.org/"] and payload.table[1] == ["Shanghai", 24874500]


def test_the_readme_spec_walkthrough_validates_and_runs(project):
    (project / "specs" / "top_cities.yaml").write_text(blocks("README.md", "yaml")[0])
    assert not load_project(project / "specs").problems
    opened = open_project(project / "specs")
    try:
        result = opened.registry.call_sync("top_cities", {"top_n": 3})
        assert not result.is_error and len(result.structured_content["table"]) == 4
        assert result.structured_content["charts"][0]["options"]["indexAxis"] == "y"
    finally:
        opened.close()


def test_the_readme_python_examples(tmp_path):
    from mcpgen import registry

    registry.take_all()
    namespace: dict = {}
    exec(compile(blocks("README.md", "python")[1], "README.md", "exec"), namespace)
    [tool] = registry.take_all()
    assert tool.name == "list_cities"
    config = json.loads(blocks("README.md", "json")[0])
    server = config["mcpServers"]["analytics"]
    assert server["args"][0] == "serve"
    # absolute paths: clients start servers from their own directory, often without the venv on PATH
    assert Path(server["command"]).is_absolute() and server["command"].endswith("/.venv/bin/mcpgen")
    assert Path(server["args"][1]).is_absolute()


@pytest.mark.slow
def test_the_readme_validate_line_is_what_validate_prints(tmp_path):
    [line] = [b.strip() for b in blocks("README.md", "text") if "populaton" in b]
    shutil.copytree(REPO / "specs", tmp_path / "specs")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    shutil.copy(REPO / "mcpgen.yaml", tmp_path)
    spec = tmp_path / "specs" / "top_cities.yaml"
    spec.write_text(spec.read_text().replace("\n  y: population\n", "\n  y: populaton\n"))
    out = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "validate", "specs/"], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 1 and out.stdout.splitlines()[0] == line


@pytest.mark.slow
def test_the_readme_quick_start_shows_what_serve_prints_on_a_terminal():
    import os
    import pty
    import queue
    import threading

    shown = next(b for b in blocks("README.md", "text") if "mcpgen: serving" in b).splitlines()
    terminal, other_end = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", "specs/"], cwd=REPO, stdin=other_end, stderr=subprocess.PIPE
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line.decode().rstrip("\n")) for line in proc.stderr], daemon=True
    ).start()
    try:
        printed = [lines.get(timeout=60) for _ in shown]  # serve keeps running: it waits for a client
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.close(terminal)
        os.close(other_end)
    assert printed == [line.replace("/path/to/mcpgen", str(REPO)) for line in shown]


@pytest.mark.slow
def test_the_readme_client_example_talks_to_the_shipped_specs(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(blocks("README.md", "python")[0])
    out = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Shanghai" in out.stdout and "[['City', 'Country', 'Population', 'Time zone']" in out.stdout


# Every field of the spec and config models is documented in docs/spec-format.md.


def _fields(model, parent=None):
    """(parent key, field name) for every field of `model` and of the models inside it."""
    import typing

    from pydantic import BaseModel

    for name, info in model.model_fields.items():
        yield parent, name
        stack = [info.annotation]
        while stack:
            kind = stack.pop()
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                yield from _fields(kind, name)
            else:
                stack.extend(typing.get_args(kind))


def _documented(field: str, parent: str | None, doc: str) -> bool:
    """A top-level field has its own table row or YAML key; a nested one is named in backticks
    on a line that names its parent, or is a key of a YAML example under its parent."""
    if parent is None:
        return bool(re.search(rf"^\| (`[^`]*` / )*`{field}[`.]", doc, re.M)) or any(
            re.search(rf"^{field}:", block, re.M) for block in blocks("docs/spec-format.md", "yaml")
        )
    for line in doc.splitlines():
        spans = " ".join(re.findall(r"`([^`]*)`", line))
        if re.search(rf"\b{parent}\b", line) and re.search(rf"(?<![\w-]){field}\b", spans):
            return True
    return any(
        re.search(rf"^\s+{field}:", block, re.M) and re.search(rf"^\s*{parent}:", block, re.M)
        for block in blocks("docs/spec-format.md", "yaml")
    )


@pytest.mark.parametrize("model", ["Spec", "ProjectConfig"])
def test_every_spec_and_config_field_is_documented(model):
    from mcpgen.spec.config import ProjectConfig
    from mcpgen.spec.models import Spec

    doc = (REPO / "docs/spec-format.md").read_text()
    fields = sorted(set(_fields({"Spec": Spec, "ProjectConfig": ProjectConfig}[model])), key=str)
    missing = [f"{parent}.{name}" if parent else name for parent, name in fields if not _documented(name, parent, doc)]
    assert missing == []


def test_the_readme_command_table_is_the_clis_own_help():
    """README.md's command table is generated by cog from `mcpgen --help`; run `cog -r README.md`."""
    from cogapp import Cog

    assert Cog().main(["cog", "--check", str(REPO / "README.md")]) == 0


def test_the_auth_guides_files_are_accepted():
    """Each mcpgen.yaml and spec block in docs/auth.md passes the models (blocks say which file they are)."""
    from mcpgen.spec.models import Spec

    checked = 0
    for block in blocks("docs/auth.md", "yaml"):
        first = block.splitlines()[0]
        data = yaml.safe_load(block)
        if first == "# mcpgen.yaml":
            ProjectConfig.model_validate(data)
        elif first.startswith("# specs/"):
            Spec.model_validate(data)
        else:
            raise AssertionError(f"a yaml block in docs/auth.md does not name its file: {first}")
        checked += 1
    assert checked >= 6


def test_the_readme_test_command_shows_why_a_test_was_skipped(tmp_path):
    """The README says a skipped test shows its reason under plain `python -m pytest`: the configured
    options make it so (a test file run under this project's configuration, in a child pytest)."""
    test = tmp_path / "test_skips.py"
    test.write_text("import pytest\n\ndef test_later():\n    pytest.skip('the service is not running here')\n")
    assert "`-rs`" in (REPO / "README.md").read_text()
    command = [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path)]
    # In one process (-n 0): two pytest-xdist workers for one test would triple the child's start-up.
    done = subprocess.run(
        [*command, "-p", "no:cacheprovider", "-n", "0", str(test)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SKIPPED [1] test_skips.py:4: the service is not running here" in done.stdout, done.stdout


def test_no_file_names_a_persons_home_folder():
    """Examples speak of example paths (`/path/to/...`), never of someone's machine."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are not known")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=30, check=True
    ).stdout.decode()
    home = re.compile(r"(?<![\w.])/(?:home|Users|root)/\w")
    found = []
    for name in filter(None, listed.split("\0")):
        path = REPO / name
        if name.endswith("package-lock.json") or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if home.search(line)]
    assert found == []


def test_the_readmes_bundle_lines_run_one_after_the_other(tmp_path, monkeypatch):
    """Built as the README shows, then built again for the registry: the second replaces the first."""
    readme = (REPO / "README.md").read_text().replace("\\\n", "")
    lines = [shlex.split(line)[1:] for line in readme.splitlines() if line.startswith("    mcpgen bundle ")]
    assert len(lines) == 2
    shutil.copy(REPO / "mcpgen.yaml", tmp_path)
    shutil.copytree(REPO / "specs", tmp_path / "specs", ignore=shutil.ignore_patterns(".*", "__pycache__"))
    shutil.copytree(REPO / "examples" / "data", tmp_path / "examples" / "data")
    monkeypatch.chdir(tmp_path)
    for args in lines:
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    server = json.loads((tmp_path / "dist" / "server.json").read_text())
    digest = hashlib.sha256((tmp_path / "dist" / "sales.mcpb").read_bytes()).hexdigest()
    assert server["version"] == "1.0.0" and server["packages"][0]["fileSha256"] == digest
