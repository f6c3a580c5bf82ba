"""The cache of checked specs: a warm load gives the very specs and problems (file:line:col) a fresh
one finds without checking anything, and whatever the checks read (the spec, mcpgen.yaml, a sql_file,
an icon, the versions) changed is checked again; a query is described again when a file changed."""

from __future__ import annotations

import io
import pickle
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from mcpgen.checks import init_problem
from mcpgen.commands.validate import run_validate
from mcpgen.errors import SpecError
from mcpgen.load import checked, spec_checks
from mcpgen.load.project import load_project

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
connections:
  default:
    duckdb: ':memory:'
    init:
      - CREATE VIEW towns AS SELECT * FROM read_csv('data/towns.csv')
"""
SPEC = """\
description: Towns of a country.
parameters:
  country: {type: string, description: ISO code, default: FR}
  unused: {type: integer, description: never read}
sql: SELECT name, people FROM towns WHERE country = :country ORDER BY people DESC
content: "{% for r in rows %}{{ r.name }} has {{ r.people | thousands }} people. {% endfor %}"
sources: [https://www.geonames.org/]
"""
BROKEN = SPEC.replace("= :country", "= :countyr").replace("{{ r.name }}", "{{ r.nmae }} {{ nope }}")


@pytest.fixture
def checks(monkeypatch):
    """The spec files whose checks ran."""
    seen: list[str] = []
    real = spec_checks.check_spec

    def counted(loaded, *args, **kwargs):
        seen.append(loaded.path.name)
        return real(loaded, *args, **kwargs)

    monkeypatch.setattr(spec_checks, "check_spec", counted)
    return seen


def project(tmp_path: Path, **specs: str) -> Path:
    folder = tmp_path / "project" / "specs"
    folder.mkdir(parents=True)
    (folder.parent / "mcpgen.yaml").write_text(CONFIG)
    (folder.parent / "data").mkdir()
    (folder.parent / "data" / "towns.csv").write_text("name,people,country\nLyon,522000,FR\nNice,342000,FR\n")
    for name, text in specs.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text))
    return folder


def outcome(loaded) -> tuple:
    """Everything loading gives, as comparable values: each spec, its SQL, templates and positions, and
    every problem as printed."""
    specs = [
        (
            s.name,
            str(s.path),
            s.sql,
            s.dialect,
            s.spec.model_dump(),
            {k: (t.source, t.ast, t.constant, t.host) for k, t in s.templates.items()},
            dict(s.data.lines),
            s.icons,
            s.completions,
        )
        for s in loaded.specs
    ]
    return specs, [(p.path, p.line, p.col, p.message, p.severity) for p in loaded.problems]


def test_a_warm_load_checks_nothing_and_gives_what_a_fresh_one_finds(cache, checks, monkeypatch):
    monkeypatch.setenv("MCPGEN_CACHE", "off")
    fresh = outcome(load_project(REPO / "specs"))
    monkeypatch.delenv("MCPGEN_CACHE")
    first = outcome(load_project(REPO / "specs"))
    checks.clear()
    warm = outcome(load_project(REPO / "specs"))
    assert checks == []
    assert warm == first == fresh and len(fresh[0]) > 5


def test_problems_come_out_of_a_cached_spec_exactly_as_from_a_fresh_load(tmp_path, cache, checks, monkeypatch):
    specs = project(tmp_path, towns=SPEC, broken=BROKEN, bad_yaml="description: [unclosed\n")
    monkeypatch.setenv("MCPGEN_CACHE", "off")
    fresh = [str(p) for p in load_project(specs).problems]
    monkeypatch.delenv("MCPGEN_CACHE")
    load_project(specs)
    checks.clear()
    warm = [str(p) for p in load_project(specs).problems]
    assert warm == fresh and checks == []
    assert any("broken.yaml:5:" in p and ":countyr" in p for p in warm)  # an error, at line and column
    assert any("towns.yaml:4:" in p and "'unused' is declared" in p for p in warm)  # a warning
    assert any("bad_yaml.yaml:" in p for p in warm)
    assert [s.name for s in load_project(specs).specs] == ["towns"]  # a spec with errors stays out


def test_a_warm_start_reads_positions_only_to_place_an_error(tmp_path, cache, monkeypatch):
    """A spec from the cache reads its YAML positions only when asked where a key is: a start that finds
    an error (here a column its data file no longer has) still places it at the same file:line:col."""
    from mcpgen.errors import SpecError
    from mcpgen.serve.project import open_project

    monkeypatch.chdir(tmp_path)  # opening a project moves into its folder: moved back after the test
    specs = project(tmp_path, towns=SPEC)
    open_project(specs).close()
    warm = load_project(specs)
    assert "data" not in vars(warm.specs[0])
    assert warm.specs[0].where("content") == (6, 1) and "data" in vars(warm.specs[0])
    (specs.parent / "data" / "towns.csv").write_text("city,people,country\nLyon,522000,FR\n")
    with pytest.raises(SpecError) as cached:
        open_project(specs)
    monkeypatch.setenv("MCPGEN_CACHE", "off")
    with pytest.raises(SpecError) as fresh:
        open_project(specs)
    assert cached.value.problems == fresh.value.problems
    assert any(p.line == 5 and '"name" not found' in p.message for p in cached.value.problems), cached.value.problems


def test_an_edited_spec_is_checked_again(tmp_path, cache, checks):
    specs = project(tmp_path, towns=SPEC, villages=SPEC)
    load_project(specs)
    checks.clear()
    (specs / "towns.yaml").write_text(BROKEN)
    loaded = load_project(specs)
    assert checks == ["towns.yaml"]
    assert [s.name for s in loaded.specs] == ["villages"] and any(":countyr" in str(p) for p in loaded.errors)


def test_an_edited_mcpgen_yaml_checks_every_spec_again(tmp_path, cache, checks):
    specs = project(tmp_path, towns=SPEC)
    assert not load_project(specs).errors
    (specs.parent / "mcpgen.yaml").write_text(CONFIG.replace("  default:", "  other:"))
    checks.clear()
    loaded = load_project(specs)
    assert checks == ["towns.yaml"]
    assert any("connection 'default' is not defined" in str(p) for p in loaded.errors)


def test_an_edited_sql_file_is_checked_again(tmp_path, cache, checks):
    specs = project(tmp_path)
    (specs / "towns.sql").write_text("SELECT name, people FROM towns WHERE country = :country ORDER BY people")
    (specs / "towns.yaml").write_text(
        "\n".join(line for line in SPEC.splitlines() if not line.startswith("sql:")) + "\nsql_file: towns.sql\n"
    )
    assert not load_project(specs).errors
    checks.clear()
    assert not load_project(specs).errors and checks == []  # unchanged: kept
    (specs / "towns.sql").write_text("SELECT name FROM towns WHERE country = :land")
    loaded = load_project(specs)
    assert checks == ["towns.yaml"] and any(":land, which is not a declared parameter" in str(p) for p in loaded.errors)
    (specs / "towns.sql").unlink()
    assert any("sql_file towns.sql does not exist" in str(p) for p in load_project(specs).errors)


def test_specs_whose_checks_read_other_files_are_checked_on_every_load(tmp_path, cache, checks):
    icon = SPEC + "icons: [{src: town.png}]\n"
    files = SPEC.replace("  unused:", "  file: {type: string, description: which, enum: [data/towns.csv]}\n  unused:")
    files = files.replace("FROM towns", "FROM read_csv(:file)")
    specs = project(tmp_path, icon=icon, files=files)
    (specs / "town.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    load_project(specs)
    checks.clear()
    assert not load_project(specs).errors and sorted(checks) == ["files.yaml", "icon.yaml"]
    (specs / "town.png").unlink()
    assert any("icon file 'town.png' cannot be read" in str(p) for p in load_project(specs).errors)


def test_validate_describes_again_only_what_changed(tmp_path, cache, monkeypatch):
    from mcpgen.commands import validate

    described: list[str] = []
    real = validate.check_spec_live
    monkeypatch.setattr(validate, "check_spec_live", lambda spec, *a: described.append(spec.name) or real(spec, *a))
    paged = SPEC.replace("ORDER BY people DESC", "ORDER BY name") + "page_size: 1\n"
    specs = project(tmp_path, towns=SPEC, paged=paged)
    fresh = run_validate(specs, jobs=1)
    assert sorted(described) == ["paged", "towns"] and fresh.warnings and not fresh.errors
    described.clear()
    warm = run_validate(specs, jobs=1)
    assert described == [] and [str(p) for p in warm.problems] == [str(p) for p in fresh.problems]
    (specs.parent / "data" / "towns.csv").write_text("city,people,country\nLyon,522000,FR\n")
    report = run_validate(specs, jobs=1)
    assert sorted(described) == ["paged", "towns"]
    assert any("towns.yaml" in p.path and '"name" not found' in p.message for p in report.errors), report.problems
    described.clear()
    assert len(run_validate(specs, jobs=1).errors) == len(report.errors) and sorted(described) == ["paged", "towns"]


def test_validate_reads_what_its_workers_kept_in_one_process(tmp_path, cache, checks, monkeypatch):
    """A big project is checked in workers only while the cache lacks much of it: what they checked and
    described is kept as one process reads it, and a changed data file sends the project to workers again."""
    from mcpgen.commands import validate

    parts: list[int] = []
    described: list[str] = []
    real_parallel, real_live = validate._static_parallel, validate.check_spec_live
    monkeypatch.setattr(validate, "_static_parallel", lambda *a: parts.append(a[2]) or real_parallel(*a))
    monkeypatch.setattr(
        validate, "check_spec_live", lambda spec, *a: described.append(spec.name) or real_live(spec, *a)
    )
    monkeypatch.setattr(validate, "_jobs", lambda files: 2 if files >= 3 else 1)  # a big project, made small
    specs = project(tmp_path, **{f"t{i}": SPEC.replace("DESC", f"DESC LIMIT {i + 1}") for i in range(4)})
    fresh = run_validate(specs)
    assert parts == [2] and fresh.warnings and not fresh.errors
    checks.clear()
    warm = run_validate(specs)
    assert parts == [2] and checks == [] and described == [] and warm.problems == fresh.problems
    assert not run_validate(specs, columns=False).errors and parts == [2]
    (specs.parent / "data" / "towns.csv").write_text("city,people,country\nLyon,522000,FR\n")
    changed = run_validate(specs)
    assert parts == [2, 2] and len(changed.errors) == 4
    assert [str(p) for p in run_validate(specs).problems] == [str(p) for p in changed.problems] and parts == [2, 2]


@pytest.mark.parametrize("library", ["pydantic", "sqlglot"])
def test_another_version_of_a_library_checks_again(tmp_path, cache, checks, monkeypatch, library):
    import pydantic

    from mcpgen import cachefile

    specs = project(tmp_path, towns=SPEC)
    load_project(specs)
    if library == "pydantic":
        monkeypatch.setattr(pydantic, "VERSION", pydantic.VERSION + ".next")
    else:  # read from its installed version file, without importing it
        assert cachefile._sqlglot_version() in cachefile._HEADER
        monkeypatch.setattr(cachefile, "_HEADER", cachefile._HEADER.replace(cachefile._sqlglot_version(), "next"))
    checks.clear()
    load_project(specs)
    assert checks == ["towns.yaml"]


def test_an_entry_cannot_run_code(tmp_path, cache, checks, monkeypatch, hostile):
    specs = project(tmp_path, towns=SPEC)
    fresh = outcome(load_project(specs))
    (path,) = cache.glob("load-*.pickle")
    header, entries = pickle.loads(path.read_bytes())
    bad = {k: pickle.dumps(([], hostile, [])) if k.startswith("checked:") else v for k, v in entries.items()}
    path.write_bytes(pickle.dumps((header, bad)))
    monkeypatch.chdir(tmp_path)
    checks.clear()
    assert outcome(load_project(specs)) == fresh and checks == ["towns.yaml"]
    assert not (tmp_path / "hostile-was-run").exists()


def test_an_entry_holds_only_a_spec_and_its_problems(tmp_path, cache, hostile):
    specs = project(tmp_path, towns=SPEC)
    load_project(specs)
    (path,) = cache.glob("load-*.pickle")
    _, entries = pickle.loads(path.read_bytes())
    (name,) = [k for k in entries if k.startswith("checked:")]
    entries[name] = pickle.dumps(([], {"not": "a spec"}, []))
    path.write_bytes(pickle.dumps((pickle.loads(path.read_bytes())[0], entries)))
    assert checked.get(name) is None  # outside a session: nothing is kept at all
    with pytest.raises(pickle.UnpicklingError):
        checked._Unpickler(io.BytesIO(pickle.dumps(hostile))).load()
    assert [s.name for s in load_project(specs).specs] == ["towns"]


def edit_entries(cache: Path, prefix: str, edit) -> int:
    """Rewrite, in every cache file, the bytes of each entry named `prefix...` as `edit(bytes)` would,
    keeping the signature it had (as a hand edit, or anyone without the user's key, would). How many."""
    edited = 0
    for path in cache.glob("load-*.pickle"):
        header, entries = pickle.loads(path.read_bytes())
        for name, signed in entries.items():
            if name.startswith(prefix):
                entries[name] = signed[:32] + edit(signed[32:])
                edited += 1
        path.write_bytes(pickle.dumps((header, entries)))
    return edited


@pytest.fixture
def prepares(monkeypatch):
    """The SQL each DuckDB engine prepared (ran the read-only and function checks on)."""
    from mcpgen.engines.duckdb import DuckDBEngine

    seen: list[str] = []
    real = DuckDBEngine.prepare
    monkeypatch.setattr(
        DuckDBEngine, "prepare", lambda self, sql, types=None: seen.append(sql) or real(self, sql, types)
    )
    return seen


def towns(specs: Path) -> list:
    """The rows `towns` answers, from a project opened as `mcpgen call` opens it."""
    from mcpgen.serve.project import open_project

    opened = open_project(specs)
    try:
        return opened.registry.call_sync("towns", {"unused": 1}).structured_content["table"][1:]
    finally:
        opened.close()


def test_a_kept_statement_is_run_unchecked_only_while_its_entry_is_as_kept(tmp_path, cache, prepares, monkeypatch):
    """The statement kept when a query was prepared and described is the verdict of the SQL checks: a
    warm open runs it unchecked; one whose entry was edited (here to run other SQL) is prepared and
    checked again from the spec, never trusted."""
    monkeypatch.chdir(tmp_path)
    specs = project(tmp_path, towns=SPEC)
    rows = towns(specs)
    assert rows == [["Lyon", 522000], ["Nice", 342000]] and len(prepares) == 1
    assert towns(specs) == rows and len(prepares) == 1  # kept: no check runs

    def other_sql(data: bytes) -> bytes:  # the same SQL checked, another statement to run
        problems, sql, statement = pickle.loads(data)
        return pickle.dumps((problems, sql, replace(statement, sql=statement.sql.replace("DESC", "ASC"))))

    assert edit_entries(cache, "described:", other_sql) == 1
    assert towns(specs) == rows and len(prepares) == 2


def test_a_kept_statement_is_bound_to_its_sql_and_the_functions_allowed(tmp_path, cache, prepares, monkeypatch):
    monkeypatch.chdir(tmp_path)
    specs = project(tmp_path, towns=SPEC)
    towns(specs)
    (specs / "towns.yaml").write_text(SPEC.replace("ORDER BY people DESC", "ORDER BY people"))
    assert towns(specs) == [["Nice", 342000], ["Lyon", 522000]] and len(prepares) == 2  # a changed query: checked
    (specs / "towns.yaml").write_text(SPEC.replace("SELECT name,", "SELECT name || setseed(0.5) AS name,"))
    with pytest.raises(SpecError, match=r"setseed\(\), which"):
        towns(specs)
    (specs / "towns.yaml").write_text(SPEC)
    towns(specs)
    before = len(prepares)
    monkeypatch.setattr(checked, "_ALLOWED", checked._ALLOWED + "\0query")
    towns(specs)
    assert len(prepares) == before + 1


def test_an_init_verdict_edited_by_hand_is_not_trusted(tmp_path, cache):
    """mcpgen.yaml's init statements are checked once and their verdicts kept: a refusal edited into a
    pass is refused again, as a fresh load refuses it."""
    specs = project(tmp_path, towns=SPEC)
    config = specs.parent / "mcpgen.yaml"
    config.write_text(CONFIG + "      - SET enable_external_access = true\n")
    init_problem.cache_clear()  # each process keeps its verdicts too: start as a new one
    refused = [str(p) for p in load_project(specs).errors]
    assert any("init statement 2 changes the setting enable_external_access" in p for p in refused), refused
    assert edit_entries(cache, "init:", lambda data: b"")
    init_problem.cache_clear()  # as another process: only the cache file is shared
    assert [str(p) for p in load_project(specs).errors] == refused


def test_an_entry_with_damaged_positions_is_checked_again_whole(tmp_path, cache, checks):
    """The YAML positions kept apart in an entry (read only to place an error) are part of the entry: damaged,
    the whole entry is refused and the spec checked again, so its errors keep their file:line:col."""
    specs = project(tmp_path, towns=SPEC)
    load_project(specs)

    def damage(data: bytes) -> bytes:
        files, loaded, positions, problems = checked._Unpickler(io.BytesIO(data)).load()
        return checked._pickled((files, loaded, positions[: len(positions) // 2], problems))

    assert edit_entries(cache, "checked:", damage) == 1
    checks.clear()
    warm = load_project(specs)
    assert checks == ["towns.yaml"] and warm.specs[0].where("content") == (6, 1)


def test_a_part_read_for_the_first_time_starts_from_the_whole_project(tmp_path, cache, checks):
    """`mcpgen call` reads one spec file with a cache file of its own: the first time, what reading the whole
    project kept is used, so nothing is checked again, and the part keeps a file of its own from then on."""
    specs = project(tmp_path, towns=SPEC, villages=SPEC)
    load_project(specs)
    files = set(cache.glob("load-*.pickle"))
    checks.clear()
    part = load_project(specs, [specs / "towns.yaml"], unique_names=False)
    assert checks == [] and [s.name for s in part.specs] == ["towns"]
    assert len(set(cache.glob("load-*.pickle")) - files) == 1


# -- mcpgen.yaml, kept as checked ---------------------------------------------------------------


@pytest.fixture
def config_checks(monkeypatch):
    """The mcpgen.yaml contents that were validated into a ProjectConfig (checked rather than kept)."""
    from mcpgen.spec.config import ProjectConfig

    seen: list = []
    real = ProjectConfig.model_validate
    monkeypatch.setattr(ProjectConfig, "model_validate", lambda data, **kw: seen.append(data) or real(data, **kw))
    return seen


WARNED = CONFIG + "  shop:\n    url: mysql+pymysql://reader:s3cret@db.example/shop\n"
BROKEN_CONFIG = CONFIG.replace("duckdb: ':memory:'", "duckdb: ':memory:'\n    threads: many")


@pytest.mark.parametrize("text", [WARNED, BROKEN_CONFIG], ids=["warning", "error"])
def test_an_unchanged_mcpgen_yaml_is_kept_as_checked_with_its_problems(
    tmp_path, cache, config_checks, monkeypatch, text
):
    specs = project(tmp_path, towns=SPEC)
    (specs.parent / "mcpgen.yaml").write_text(text)
    monkeypatch.setenv("MCPGEN_CACHE", "off")
    fresh = load_project(specs)
    monkeypatch.delenv("MCPGEN_CACHE")
    load_project(specs)
    config_checks.clear()
    warm = load_project(specs)
    assert config_checks == []
    assert warm.config == fresh.config and repr(warm.config) == repr(fresh.config)
    assert outcome(warm) == outcome(fresh) and warm.problems
    assert any("mcpgen.yaml:" in str(p) for p in warm.problems)


def test_an_edited_mcpgen_yaml_is_checked_again_at_once(tmp_path, cache, config_checks):
    specs = project(tmp_path, towns=SPEC)
    load_project(specs)
    (specs.parent / "mcpgen.yaml").write_text(CONFIG + "defaults:\n  max_rows: 7\n")
    config_checks.clear()
    loaded = load_project(specs)
    assert len(config_checks) == 1 and loaded.config.defaults.max_rows == 7
    (specs.parent / "mcpgen.yaml").write_text(CONFIG + "defaults:\n  max_rows: 0\n")
    assert any("mcpgen.yaml:" in str(p) and "max_rows" in str(p) for p in load_project(specs).errors)


def test_a_kept_mcpgen_yaml_reads_its_variables_when_the_connection_opens(tmp_path, cache, config_checks, monkeypatch):
    """`${VAR}` is not part of mcpgen.yaml as checked: with the kept config, a call reads the variable as it
    is now, so a changed value is used at once."""
    import sqlite3

    from click.testing import CliRunner

    from mcpgen.cli import main

    monkeypatch.chdir(tmp_path)  # a call moves into its project's folder: moved back after the test
    specs = project(tmp_path, towns=SPEC.replace("towns WHERE", "places WHERE"))
    for name, town in (("a", "Lyon"), ("b", "Nice")):
        with sqlite3.connect(tmp_path / f"{name}.db") as db:
            db.execute("CREATE TABLE places (name TEXT, people INTEGER, country TEXT)")
            db.execute("INSERT INTO places VALUES (?, 1000, 'FR')", (town,))
    (specs.parent / "mcpgen.yaml").write_text(
        "dialect: sqlite\nconnections:\n  default:\n    url: sqlite:///${TOWNS_DB}\n"
    )
    said = []
    for name in ("a", "b", "a"):
        monkeypatch.setenv("TOWNS_DB", str(tmp_path / f"{name}.db"))
        result = CliRunner().invoke(main, ["call", "towns", "-a", "unused=1", "--specs", str(specs)])
        assert result.exit_code == 0, result.output
        said.append("Lyon" if "Lyon has" in result.output else "Nice" if "Nice has" in result.output else result.output)
    assert said == ["Lyon", "Nice", "Lyon"]
    assert len(config_checks) == 1  # the first call checked mcpgen.yaml; the others used it as kept


def test_a_forged_mcpgen_yaml_entry_is_checked_again(tmp_path, cache, config_checks, monkeypatch, hostile):
    """An entry edited without the user's key (a looser config, or a pickle that would run code) is refused:
    mcpgen.yaml is checked again, as a fresh load checks it."""
    from mcpgen.spec.config import ProjectConfig

    specs = project(tmp_path, towns=SPEC)
    fresh = load_project(specs).config
    looser = ProjectConfig.model_validate({"defaults": {"max_rows": 10**9}})
    assert edit_entries(cache, "config:", lambda data: checked._pickled((looser, []))) == 1
    config_checks.clear()
    assert load_project(specs).config == fresh and len(config_checks) == 1
    assert edit_entries(cache, "config:", lambda data: pickle.dumps((hostile, []))) == 1
    monkeypatch.chdir(tmp_path)
    assert load_project(specs).config == fresh and len(config_checks) == 2
    assert not (tmp_path / "hostile-was-run").exists()


def test_another_pydantic_checks_mcpgen_yaml_again(tmp_path, cache, config_checks, monkeypatch):
    import pydantic

    specs = project(tmp_path, towns=SPEC)
    load_project(specs)
    monkeypatch.setattr(pydantic, "VERSION", pydantic.VERSION + ".next")
    config_checks.clear()
    load_project(specs)
    assert len(config_checks) == 1
