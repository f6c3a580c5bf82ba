"""`mcpgen draft`: a spec drafted from a data file, a database file, a database URL or a query validates,
tests and answers the rows of the query run directly; bad input is one sentence."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
from pathlib import Path

import anyio
import duckdb
import pytest
import services
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from mcpgen.cli import main
from mcpgen.commands.draft import PLACEHOLDER
from mcpgen.spec.yamlload import load_yaml

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"
SOURCE = "https://www.geonames.org/"


def _project(tmp_path: Path, *files: str) -> Path:
    folder = tmp_path / "project"
    (folder / "data").mkdir(parents=True)
    for name in files:
        shutil.copyfile(DATA / name, folder / "data" / name)
    return folder


def _draft(folder: Path, monkeypatch, *args: str):
    monkeypatch.chdir(folder)
    return CliRunner().invoke(main, ["draft", *args])


def _spec(folder: Path, name: str) -> dict:
    return load_yaml((folder / "specs" / f"{name}.yaml").read_text(), f"{name}.yaml", [])


def _direct_duckdb(folder: Path, sql: str, args: dict, database: str = ":memory:") -> list[list]:
    """The drafted query run directly on DuckDB, with its placeholders bound by DuckDB itself."""
    con = duckdb.connect(database, read_only=database != ":memory:")
    try:
        os.chdir(folder)
        named = sql
        for name in sorted(args, key=len, reverse=True):
            named = named.replace(f":{name}", f"${name}")
        return [list(r) for r in con.execute(named, args).fetchall()]
    finally:
        con.close()


def _documented(start: str) -> list[str]:
    """The command of docs/draft.md's first example that starts with `start`, as words."""
    text = (DATA.parents[1] / "docs" / "draft.md").read_text()
    line = next(line for line in text.splitlines() if line.startswith(start))
    return shlex.split(line.split("  #")[0])


def test_a_csv_draft_validates_tests_and_answers_the_query_run_directly(tmp_path, monkeypatch):
    folder = _project(tmp_path, "cities.csv")
    documented = _documented("mcpgen draft data/cities.csv")
    assert documented[2:] == ["data/cities.csv", "--source", SOURCE]
    drafted = _draft(folder, monkeypatch, *documented[2:])
    assert drafted.exit_code == 0, drafted.output
    assert drafted.stdout.splitlines()[0] == f"wrote {Path('specs') / 'cities.yaml'}"
    spec = _spec(folder, "cities")
    params = spec["parameters"]
    assert list(params) == ["country_code", "min_population", "top_n"]
    assert params["min_population"]["type"] == "integer"
    assert (params["min_population"]["minimum"], params["min_population"]["maximum"]) == (0, 24874500)
    assert "ORDER BY population DESC, geonameid" in spec["sql"]  # geonameid tells every row apart: a total order
    assert spec["chart"] == {"type": "bar", "x": "name", "y": "population"}
    assert spec["sources"] == [SOURCE]
    runner = CliRunner()
    validated = runner.invoke(main, ["validate", "specs"])
    assert validated.exit_code == 0 and "0 errors, 0 warnings" in validated.output, validated.output
    tested = runner.invoke(main, ["test", "specs"])
    assert tested.exit_code == 0 and "2 passed, 0 failed" in tested.output, tested.output
    called = runner.invoke(main, ["call", "cities", "-a", "country_code=JP", "-a", "top_n=3", "--json"])
    assert called.exit_code == 0, called.output
    table = json.loads(called.stdout)["structuredContent"]["table"]
    direct = _direct_duckdb(folder, spec["sql"], {"country_code": "JP", "min_population": None, "top_n": 3})
    assert table[1:] == direct and [r[1] for r in direct] == ["Tokyo", "Yokohama", "Osaka"]


def test_enums_and_date_bounds_come_from_the_data(tmp_path, monkeypatch):
    folder = _project(tmp_path, "flights.parquet")
    drafted = _draft(folder, monkeypatch, "data/flights.parquet", "--source", "https://www.transtats.bts.gov/")
    assert drafted.exit_code == 0, drafted.output
    spec = _spec(folder, "flights")
    params = spec["parameters"]
    assert params["origin"]["enum"] == ["EWR", "JFK", "LGA"] and params["origin"]["required"] is False
    assert params["time_hour_from"]["type"] == "datetime"
    assert params["time_hour_from"]["minimum"].startswith("2013-01-01T")
    assert spec["chart"]["type"] == "line" and spec["chart"]["x"] == "time_hour"
    tested = CliRunner().invoke(main, ["test", "specs"])
    assert tested.exit_code == 0 and "3 passed, 0 failed" in tested.output, tested.output


def test_without_a_source_validate_points_at_the_line_to_fill(tmp_path, monkeypatch):
    folder = _project(tmp_path, "gapminder.csv")
    drafted = _draft(folder, monkeypatch, "data/gapminder.csv")
    assert drafted.exit_code == 0, drafted.output
    lines = (folder / "specs" / "gapminder.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if PLACEHOLDER in text)
    path = Path("specs") / "gapminder.yaml"
    assert drafted.stderr.startswith(f"{path}:{line}: write where the data comes from there (sources:)")
    validated = CliRunner().invoke(main, ["validate", "specs"])
    assert validated.exit_code == 1
    assert f"{path}:{line}:5: error: sources[0]: '{PLACEHOLDER}' is not an absolute http(s) URL" in validated.output
    assert "1 error, 0 warnings" in validated.output  # the placeholder is all there is to fix


def test_print_writes_nothing_and_force_replaces(tmp_path, monkeypatch):
    """On the small countries.csv: what a draft holds is tested above, here only where it goes."""
    folder = _project(tmp_path, "countries.csv")
    printed = _draft(folder, monkeypatch, "data/countries.csv", "--print", "--source", SOURCE)
    assert (
        printed.exit_code == 0
        and printed.stdout.startswith("# Drafted by `mcpgen draft`")
        and not (folder / "specs").exists()
    )
    assert _draft(folder, monkeypatch, "data/countries.csv", "--source", SOURCE).exit_code == 0
    again = _draft(folder, monkeypatch, "data/countries.csv")
    assert again.exit_code == 1
    assert again.stderr == (
        f"mcpgen: error: {Path('specs') / 'countries.yaml'} exists already; draft again with --force to replace it, "
        "or --name another\n"
    )
    assert _spec(folder, "countries")["sources"] == [SOURCE]
    assert _draft(folder, monkeypatch, "data/countries.csv", "--force").exit_code == 0
    assert _spec(folder, "countries")["sources"] == [PLACEHOLDER]


def test_a_sqlite_table_gets_its_connection_and_the_same_rows(tmp_path, monkeypatch, city_rows):
    folder = _project(tmp_path)
    services.load_cities("sqlite", "cities", city_rows, sqlite_path=folder / "data" / "world.sqlite")
    drafted = _draft(folder, monkeypatch, "data/world.sqlite", "--table", "cities", "--source", SOURCE)
    assert drafted.exit_code == 0, drafted.output
    assert (folder / "mcpgen.yaml").read_text().splitlines()[1:4] == [
        "connections:",
        "  default:",
        '    url: "sqlite:///data/world.sqlite"',
    ]
    tested = CliRunner().invoke(main, ["test", "specs"])
    assert tested.exit_code == 0 and "2 passed, 0 failed" in tested.output, tested.output


def test_a_query_is_drafted_as_a_subquery(tmp_path, monkeypatch):
    folder = _project(tmp_path, "countries.csv")
    (folder / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\n    init:\n"
        "      - CREATE TABLE countries AS SELECT * FROM read_csv('data/countries.csv')\n"
    )
    documented = _documented("mcpgen draft --sql")  # docs/draft.md's example, as written
    query = documented[documented.index("--sql") + 1]
    drafted = _draft(folder, monkeypatch, *documented[2:], "--source", SOURCE)
    assert drafted.exit_code == 0, drafted.output
    spec = _spec(folder, "per_continent")
    assert query in spec["sql"] and list(spec["parameters"]) == ["continent_code", "min_countries", "top_n"]
    tested = CliRunner().invoke(main, ["test", "specs"])
    assert tested.exit_code == 0 and "3 passed, 0 failed" in tested.output, tested.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["data/missing.csv"], "data/missing.csv: no such file"),
        (["data/bad.parquet"], "data/bad.parquet: the query failed: Invalid Input Error: "),
        (
            ["data/notes.txt"],
            "data/notes.txt: not a file draft reads (CSV, TSV, Parquet, JSON, or a DuckDB or SQLite database)",
        ),
        (
            ["--table", "nosuch"],
            "--table nosuch: the query failed: Catalog Error: Table with name nosuch does not exist!",
        ),
        (["--table", "x; DROP TABLE y"], "--table: 'x; DROP TABLE y' is not a table name"),
        (
            ["nosuchdb://reader@db.internal/x", "--table", "t"],
            "nosuchdb://reader@db.internal/x: connection 'default': no SQLAlchemy dialect",
        ),
        (["postgresql+psycopg://reader:s3cret@127.0.0.1/x", "--table", "t"], "the URL holds a password: leave it out"),
        (
            ["postgresql+psycopg://reader@127.0.0.1/x", "--table", "t", "--password-env", "MCPGEN_NO_SUCH_VAR"],
            "--password-env: the environment variable MCPGEN_NO_SUCH_VAR is not set",
        ),
        (
            ["data/cities.csv", "--source", "www.geonames.org"],
            "--source: 'www.geonames.org' is not an absolute http(s) URL",
        ),
        ([], "say what to draft from"),
    ],
)
def test_bad_input_is_one_sentence(tmp_path, monkeypatch, args, message):
    folder = _project(tmp_path, "cities.csv")
    (folder / "data" / "bad.parquet").write_text("not parquet")
    (folder / "data" / "notes.txt").write_text("hello")
    result = _draft(folder, monkeypatch, *args)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"mcpgen: error: {message}") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and "s3cret" not in result.output
    assert not (folder / "specs").exists()


def test_a_file_outside_the_project_is_refused(tmp_path, monkeypatch):
    folder = _project(tmp_path)
    outside = tmp_path / "cities.csv"
    shutil.copyfile(DATA / "cities.csv", outside)
    result = _draft(folder, monkeypatch, str(outside))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"mcpgen: error: {outside} is outside the project folder {folder.resolve()}")


# --- end to end: a drafted spec over each engine, served by `mcpgen serve`, asked by the official client --------


def _serve_and_call(folder: Path, tool: str, args: dict) -> list[list]:
    params = StdioServerParameters(
        command=shutil.which("mcpgen") or "mcpgen", args=["serve", str(folder / "specs")], env=dict(os.environ)
    )

    async def session():
        with anyio.fail_after(90):
            async with Client(params) as client:
                tools = [t.name for t in (await client.list_tools()).tools]
                return tools, await client.call_tool(tool, args)

    tools, answer = anyio.run(session)
    assert tools == [tool] and not answer.is_error, answer
    return answer.structured_content["table"][1:]


def _duckdb_file(folder: Path, city_rows) -> list[str]:
    path = folder / "data" / "world.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE cities AS SELECT * FROM read_csv('{DATA / 'cities.csv'}')")
    con.close()
    return ["data/world.duckdb", "--table", "cities"]


def _sqlite_file(folder: Path, city_rows) -> list[str]:
    services.load_cities("sqlite", "cities", city_rows, sqlite_path=folder / "data" / "world.sqlite")
    return ["data/world.sqlite", "--table", "cities"]


def _csv(folder: Path, city_rows) -> list[str]:
    shutil.copyfile(DATA / "cities.csv", folder / "data" / "cities.csv")
    return ["data/cities.csv", "--name", "cities"]


def _direct(engine: str, folder: Path, sql: str, args: dict, table: str | None) -> list[list]:
    """The drafted query, translated as mcpgen translates it, run directly with the DB-API driver."""
    from mcpgen.sql.transpile import transpile

    if engine == "csv":
        return _direct_duckdb(folder, sql, args)
    if engine == "duckdb":
        return _direct_duckdb(folder, sql, args, str(folder / "data" / "world.duckdb"))
    target = {"postgresql": "postgres", "mariadb": "mysql", "sqlite": "sqlite"}[engine]
    text = transpile(sql, "duckdb", target)
    for name in sorted(args, key=len, reverse=True):  # PostgreSQL types a parameter only from a cast
        typed = {str: "TEXT", int: "BIGINT"}[type(args[name])]
        style = {"sqlite": ":{}", "mariadb": "%({})s", "postgresql": f"CAST(%({{}})s AS {typed})"}[engine]
        text = text.replace(f":{name}", style.format(name))
    if engine == "sqlite":
        con = sqlite3.connect(folder / "data" / "world.sqlite")
        try:
            return [list(r) for r in con.execute(text, args).fetchall()]
        finally:
            con.close()
    with services.connect(engine) as con:
        cur = con.cursor()
        cur.execute(text, args)
        return [list(r) for r in cur.fetchall()]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["csv", "duckdb", "sqlite", "postgresql", "mariadb"])
def test_a_drafted_spec_over_each_engine_validates_serves_and_answers(engine, tmp_path, monkeypatch, city_rows):
    folder = _project(tmp_path)
    table = None
    if engine in ("postgresql", "mariadb"):
        url = services.require(engine)
        table = services.unique_name("cities")
        services.load_cities(engine, table, city_rows)
        args = [url, "--table", table, "--name", "cities"]
    else:
        args = {"csv": _csv, "duckdb": _duckdb_file, "sqlite": _sqlite_file}[engine](folder, city_rows)
    try:
        drafted = _draft(folder, monkeypatch, *args, "--source", SOURCE)
        assert drafted.exit_code == 0, drafted.output
        validated = CliRunner().invoke(main, ["validate", "specs", "--live"])
        assert validated.exit_code == 0 and "0 errors" in validated.output, validated.output  # the superuser warns
        tested = CliRunner().invoke(main, ["test", "specs"])
        assert tested.exit_code == 0 and "0 failed" in tested.output, tested.output
        call = {"country_code": "JP", "min_population": 3000000, "top_n": 5}
        answered = _serve_and_call(folder, "cities", call)
        spec = _spec(folder, "cities")
        direct = _direct(engine, folder, spec["sql"], call, table)
        assert answered == direct and [r[1] for r in answered] == ["Tokyo", "Yokohama"], (answered, direct)
    finally:
        if table:
            services.drop_table(engine, table)


@pytest.mark.parametrize(("top_n", "said"), [(1, "1 row of cities.csv:"), (2, "2 rows of cities.csv:")])
def test_the_drafted_prose_counts_its_rows_in_words(top_n, said, tmp_path, monkeypatch):
    folder = _project(tmp_path, "cities.csv")
    assert _draft(folder, monkeypatch, "data/cities.csv", "--source", SOURCE).exit_code == 0
    called = CliRunner().invoke(main, ["call", "cities", "--specs", str(folder / "specs"), "-a", f"top_n={top_n}"])
    assert called.exit_code == 0 and called.stdout.startswith(said), called.output


def test_an_enums_values_are_listed_as_json_so_a_comma_in_one_is_no_separator(tmp_path, monkeypatch):
    """The description names each value quoted, as the refusal of a wrong one does: "Europe, West" is one."""
    folder = _project(tmp_path)
    regions = ["Europe, West", "Europe, East", 'The "Far" East']
    rows = [f'{i},"{regions[i % 3].replace(chr(34), chr(34) * 2)}",{i * 10}' for i in range(30)]
    (folder / "data" / "sales.csv").write_text("id,region,amount\n" + "\n".join(rows) + "\n")
    drafted = _draft(folder, monkeypatch, "data/sales.csv", "--source", "https://example.org/sales")
    assert drafted.exit_code == 0, drafted.output
    region = _spec(folder, "sales")["parameters"]["region"]
    assert sorted(region["enum"]) == sorted(regions)
    listed = ", ".join(json.dumps(v) for v in region["enum"])
    assert region["description"] == f"Only rows whose region is this (one of {listed}); leave it out for all"
    refused = CliRunner().invoke(main, ["call", "sales", "-a", "region=Europe"])
    assert refused.exit_code == 1 and f'"Europe" is not one of {listed}' in " ".join(refused.output.split())
