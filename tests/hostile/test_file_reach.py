"""Hostile: what a DuckDB connection may read (real links in temporary projects, no mocks).

The readable set is the project's visible files, from real paths: hidden files and folders
(`.env`, `.git`) are never readable, a folder link stops the server from starting, a file
link is readable only when its target is; a root that is `/` or the home folder is refused;
`init` may not touch the locked settings and runs inside the lock; a file path the caller
chooses is refused by the checks unless it is an enum of the project's files.
"""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest

from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.engines.file_reach import FileReachError, check_root, readable_set
from mcpgen.engines.protocol import Prepared
from mcpgen.errors import QueryError, SpecError
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project

SECRET = "hunter2-do-not-leak"


def make_project(tmp_path: Path, init: list[str] | None = None, spec: str | None = None) -> Path:
    """tmp_path/outside.csv (a secret next to the project) and tmp_path/proj: mcpgen.yaml,
    data/cities.csv, a hidden .env and .git/config, specs/ with one tool. Returns the specs folder."""
    (tmp_path / "outside.csv").write_text(f"secret\n{SECRET}\n")
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "cities.csv").write_text("name,population\nOslo,709000\nBergen,285000\n")
    (root / ".env").write_text(f"DATABASE_PASSWORD={SECRET}\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[remote]\nurl = https://user:{SECRET}@example.org/x\n")
    lines = "\n".join(f"      - {json.dumps(s)}" for s in (init or []))
    (root / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\n" + (f"    init:\n{lines}\n" if init else "")
    )
    specs = root / "specs"
    specs.mkdir()
    (specs / "tool.yaml").write_text(
        textwrap.dedent(
            spec
            or """\
            description: Cities.
            sql: SELECT * FROM read_csv('data/cities.csv')
            sources: [https://example.org/]
            content: x
            """
        )
    )
    return specs


@pytest.fixture
def opened(tmp_path, monkeypatch):
    """A project opened as `serve` opens it; the engine is then given SQL directly, as if it had
    slipped past every check."""
    specs = make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    yield project.engines["default"], specs.parent
    project.close()


def read(engine, sql: str):
    return engine.run(Prepared(sql, frozenset()), {}, 1000, 5).rows


# -- Hidden files, outside files and file links at run time --------------------------------------

OUT_OF_REACH = [
    "SELECT * FROM read_text('.env')",
    "SELECT * FROM read_csv('.env')",
    "SELECT * FROM read_text('.git/config')",
    "SELECT * FROM read_text('data/../.env')",
    "SELECT * FROM read_text('{root}/.env')",
    "SELECT * FROM read_text('/proc/self/environ')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_text('../outside.csv')",
    "SELECT * FROM read_csv('data/out.csv')",
    "SELECT * FROM read_csv('data/env.csv')",
    "SELECT * FROM read_text('.git/*')",
    "SELECT * FROM glob('.*')",
    "SELECT * FROM '.env'",
]


@pytest.mark.parametrize("sql", OUT_OF_REACH)
def test_hidden_and_outside_files_cannot_be_read(opened, sql):
    engine, root = opened
    # File links made after start: one out of the project, one to a hidden file.
    (root / "data" / "out.csv").symlink_to(root.parent / "outside.csv")
    (root / "data" / "env.csv").symlink_to(root / ".env")
    try:
        result = engine.run(Prepared(sql.format(root=root), frozenset()), {}, 1000, 5)
    except QueryError as exc:
        assert SECRET not in str(exc) and "Traceback" not in str(exc)
    else:  # a CSV reader may put the first line in the column names
        assert SECRET not in repr(result.columns) + repr(result.rows), result
    assert read(engine, "SELECT count(*) FROM read_csv('data/cities.csv')") == [(2,)]


def test_glob_everything_lists_only_visible_files(opened):
    engine, _ = opened
    try:
        found = [r[0] for r in read(engine, "SELECT * FROM glob('**')")]
    except QueryError:
        found = []
    found += [r[0] for r in read(engine, "SELECT * FROM glob('data/**')")]
    assert found and all(not any(p.startswith(".") for p in Path(f).parts) for f in found), found


def test_a_file_link_to_a_visible_project_file_is_readable(tmp_path, monkeypatch):
    specs = make_project(tmp_path)
    root = specs.parent
    (root / "data" / "latest.csv").symlink_to("cities.csv")
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    try:
        assert read(project.engines["default"], "SELECT count(*) FROM read_csv('data/latest.csv')") == [(2,)]
    finally:
        project.close()


# -- Folder links: the server does not start ------------------------------------------------------

FOLDER_LINKS = [
    ("data/current", "."),  # the issue's "harmless" link
    ("data/up", "../.."),  # outward
    ("data/etc", "/etc"),  # absolute, outward
    ("data/a", "b"),  # chained: a -> b -> ..
    (".cache/root", "/"),  # inside a hidden folder: text can still walk through it
    ("docs", "data"),  # a sibling at the top that is fine for `..` ... but see below
]


@pytest.mark.parametrize("link,target", FOLDER_LINKS[:5])
def test_folder_links_stop_the_server_from_starting(tmp_path, monkeypatch, link, target):
    specs = make_project(tmp_path)
    root = specs.parent
    path = root / link
    path.parent.mkdir(parents=True, exist_ok=True)
    if link == "data/a":
        (root / "data" / "b").symlink_to("..")
    path.symlink_to(target)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        open_project(specs)
    message = str(caught.value)
    assert "link to the folder" in message and "mcpgen.yaml" in message
    assert "Traceback" not in message


def test_the_issue_escape_through_a_folder_link_is_closed(tmp_path):
    """data/current -> . and data/current/current/.../../../etc/passwd: refused at start, and an
    engine cannot be built on such a folder at all."""
    specs = make_project(tmp_path)
    (specs.parent / "data" / "current").symlink_to(".")
    with pytest.raises(FileReachError, match="link to the folder"):
        DuckDBEngine("default", ":memory:", [], root=specs.parent)


def test_a_sibling_folder_link_is_allowed_and_stays_inside(tmp_path, monkeypatch):
    specs = make_project(tmp_path)
    root = specs.parent
    (root / "lib").mkdir()
    (root / "lib" / "x.csv").write_text("a\n1\n")
    (root / "lib64").symlink_to("lib")  # as in a virtualenv: `..` means the same to DuckDB and the OS
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    try:
        engine = project.engines["default"]
        with pytest.raises(QueryError):
            read(engine, "SELECT * FROM read_text('lib64/../.env')")
    finally:
        project.close()


# -- The root ------------------------------------------------------------------------------------


def test_a_root_at_the_file_system_root_is_refused():
    with pytest.raises(FileReachError, match="file system root"):
        check_root(Path("/"))
    with pytest.raises(FileReachError, match="file system root"):
        DuckDBEngine("default", ":memory:", [], root="/")


@pytest.mark.parametrize("home", ["proj", "proj/inner"])
def test_a_root_that_is_or_holds_the_home_folder_is_refused(tmp_path, monkeypatch, home):
    specs = make_project(tmp_path)
    (tmp_path / home).mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(tmp_path / home))
    monkeypatch.chdir(tmp_path)
    assert any("home folder" in p.message for p in load_project(specs).errors)  # validate says so too
    with pytest.raises(SpecError, match="home folder"):
        open_project(specs)


def test_a_git_checkout_is_a_fine_root_and_its_git_folder_unreadable(opened):
    _, root = opened
    assert (root / ".git").is_dir()
    reach = readable_set(root)
    everything = reach.directories + reach.paths
    assert all("/.git" not in p and "/.env" not in p for p in everything), everything
    assert str(root) + os.sep not in reach.directories  # the root holds hidden entries: not allowed whole


# -- init ----------------------------------------------------------------------------------------

BAD_INIT = [
    "SET temp_directory = '/tmp'",
    "SET GLOBAL temp_directory = '/tmp'",
    "SET \"temp_directory\" = '/tmp'",
    "SET allowed_directories = ['/']",
    "SET allowed_paths = ['/etc/passwd']",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "SET extension_directory = '/tmp'",
    "SET file_search_path = '/etc'",
    "PRAGMA enable_profiling",
    "INSTALL httpfs",
    "LOAD httpfs",
    "COPY (SELECT 1) TO 'data/x.csv'",
    "CREATE VIEW v AS SELECT 1; SET temp_directory = '/tmp'",
    "CREATE TABLE p AS SELECT * FROM read_csv('/etc/passwd')",
    "CREATE TABLE p AS SELECT * FROM read_csv('../outside.csv')",
]


@pytest.mark.parametrize("statement", BAD_INIT)
def test_init_may_not_widen_the_reach(tmp_path, statement):
    specs = make_project(tmp_path, init=["CREATE TABLE ok AS SELECT 1 AS x", statement])
    problems = load_project(specs).errors
    assert problems, statement
    assert problems[0].path.endswith("mcpgen.yaml") and problems[0].line == 6, problems[0]
    assert "init statement 2" in problems[0].message
    # and the engine refuses it by itself, before running anything
    with pytest.raises(QueryError, match="init statement 1"):
        DuckDBEngine("default", ":memory:", [statement], root=specs.parent)


def test_init_runs_inside_the_readable_set(tmp_path):
    """A hidden file passes the static checks (a relative path), but init cannot read it."""
    specs = make_project(tmp_path)
    with pytest.raises(QueryError, match="init statement 1 failed"):
        DuckDBEngine("default", ":memory:", ["CREATE TABLE e AS SELECT * FROM read_text('.env')"], root=specs.parent)


def test_temp_files_go_to_a_private_folder(tmp_path):
    specs = make_project(tmp_path)
    engine = DuckDBEngine("default", ":memory:", [], root=specs.parent)
    temp = Path(read(engine, "SELECT current_setting('temp_directory')")[0][0])
    try:
        assert temp.is_dir() and not temp.is_relative_to(specs.parent)
        assert stat.S_IMODE(temp.stat().st_mode) == 0o700
    finally:
        engine.close()
    assert not temp.exists()


# -- Paths the caller would choose ---------------------------------------------------------------


def spec_with(sql: str, parameters: str = "p: {type: string, description: A path}") -> str:
    return f"""\
description: A tool.
parameters:
  {parameters}
sql: {sql}
sources: [https://example.org/]
content: x
"""


CALLER_CHOSEN = [
    "SELECT * FROM read_csv(:p)",
    "SELECT * FROM read_text(:p)",
    "SELECT * FROM read_csv(:p, header = true)",
    "SELECT * FROM read_parquet([:p])",
    "SELECT * FROM read_csv(['data/cities.csv', :p])",
    "SELECT * FROM glob(:p)",
    "SELECT * FROM query(:p)",
    "SELECT * FROM query_table(:p)",
    "SELECT * FROM read_csv('data/' || :p || '.csv')",
    "SELECT * FROM read_csv(concat('data/', :p))",
    "SELECT * FROM read_csv(format('data/{}.csv', :p))",
    "SELECT * FROM read_json_auto(lower(:p))",
]


@pytest.mark.parametrize("sql", CALLER_CHOSEN)
def test_a_path_the_caller_chooses_is_refused(tmp_path, sql):
    specs = make_project(tmp_path, spec=spec_with(sql))
    problems = load_project(specs).errors
    assert problems, sql
    assert problems[0].path.endswith("tool.yaml") and problems[0].line == 4
    assert "caller" in problems[0].message or "expression" in problems[0].message


BAD_ENUMS = ["['.env']", "['../outside.csv']", "['/etc/passwd']", "['data/cities.csv', '.git/config']", "[1]"]


@pytest.mark.parametrize("enum", BAD_ENUMS)
def test_an_enum_of_paths_outside_or_hidden_is_refused(tmp_path, enum):
    parameters = f"p: {{type: string, description: A file, enum: {enum}}}"
    specs = make_project(tmp_path, spec=spec_with("SELECT * FROM read_text(:p)", parameters))
    assert load_project(specs).errors


def test_an_enum_of_project_files_is_allowed_and_serves(tmp_path, monkeypatch):
    (tmp_path / "proj" / "data").mkdir(parents=True)
    (tmp_path / "proj" / "data" / "towns.csv").write_text("name,population\nBodø,52000\n")
    parameters = "p: {type: string, description: A file, enum: ['data/cities.csv', 'data/towns.csv']}"
    specs = make_project(tmp_path, spec=spec_with("SELECT count(*) AS n FROM read_csv(:p)", parameters))
    assert not load_project(specs).errors
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    try:
        for path, n in (("data/cities.csv", 2), ("data/towns.csv", 1)):
            result = project.registry.call_sync("tool", {"p": path})
            assert not result.is_error and result.structured_content["table"][1] == [n]
        assert project.registry.call_sync("tool", {"p": ".env"}).is_error
    finally:
        project.close()


def test_validate_command_fails_on_a_caller_chosen_path(tmp_path):
    from click.testing import CliRunner

    from mcpgen.cli import main

    specs = make_project(tmp_path, spec=spec_with("SELECT * FROM read_csv(:p)"))
    result = CliRunner().invoke(main, ["validate", "--strict", str(specs)])
    assert result.exit_code == 1
    assert "specs/tool.yaml" in result.output and "4:29" in result.output and "error" in result.output
