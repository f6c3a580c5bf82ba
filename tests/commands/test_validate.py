"""`mcpgen validate`: the broken-spec corpus, the shipped specs, live checks, formats and exit codes."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from mcpgen.checks import (
    chart_sense,
    literal_password,
    outside_paths,
    row_references,
    source_problem,
    template_hazards,
)
from mcpgen.cli import main
from mcpgen.commands.validate import run_validate
from mcpgen.redaction import redact
from mcpgen.spec.models import Chart
from mcpgen.templates.render import PROSE

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "specs"
BROKEN = Path(__file__).resolve().parents[1] / "broken"
EXPECTED = yaml.safe_load((BROKEN / "expected.yaml").read_text(encoding="utf-8"))
SECRET = "hunter2-s3cret"
# --live's bound on each connection: a refused one answers at once, and a loaded machine took past 5 s to get there.
LIVE_TIMEOUT = "30"


@pytest.fixture(autouse=True)
def _keep_cwd():
    cwd = os.getcwd()
    yield
    os.chdir(cwd)


def _case_dir(name: str) -> Path:
    return BROKEN / EXPECTED[name]["problem"].split("/", 1)[0]


# --- the corpus -------------------------------------------------------------------------------


def test_the_corpus_has_at_least_30_cases_and_every_folder_an_expectation():
    folders = {p.name for p in BROKEN.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    described = {_case_dir(name).name for name in EXPECTED}
    assert folders == described
    assert len(folders) >= 30


def test_the_corpus_carries_every_hostile_input_a_spec_can_carry():
    carried = {e["hostile"] for e in EXPECTED.values() if "hostile" in e}
    assert {7, 8, 9, 10, 11, 12, 13} <= carried


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_broken_spec_prints_its_exact_line(name, monkeypatch):
    """The line `mcpgen validate` prints, path:line:col: severity: message, with its suggestion."""
    expect = EXPECTED[name]
    monkeypatch.chdir(BROKEN)
    args = ["validate", *(["--live", "--timeout", LIVE_TIMEOUT] if expect.get("live") else []), _case_dir(name).name]
    result = CliRunner().invoke(main, args)
    assert expect["problem"] in result.output.splitlines(), result.output
    strict = [] if ": error: " in expect["problem"] else ["--strict"]  # a warning fails only with --strict
    assert CliRunner().invoke(main, [*args[:1], *strict, *args[1:]]).exit_code == 1


def test_warnings_alone_pass_unless_strict():
    for name in ("dsn_literal_password", "unused_parameter", "chart_scales_on_pie"):
        report = run_validate(_case_dir(name))
        assert not report.errors and report.warnings, name
        assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_column_cases_on_duckdb_are_found_without_live_and_pass_with_static():
    for name, expect in EXPECTED.items():
        if expect.get("columns"):
            assert run_validate(_case_dir(name)).exit_code() == 1, name
            assert run_validate(_case_dir(name), columns=False).exit_code() == 0, name


def test_sqlalchemy_columns_are_only_checked_live_and_the_summary_says_so():
    report = run_validate(_case_dir("live_unreachable_db"))
    assert report.connections == {"warehouse": "not checked"} and not report.errors
    result = CliRunner().invoke(main, ["validate", str(_case_dir("live_unreachable_db"))])
    assert "(static; columns not checked: run --live)" in result.output.splitlines()[-1]


def test_sources_that_are_all_templates_warn_unless_empty_names_its_own(tmp_path):
    head = "description: d\nparameters: {c: {type: string, description: c}}\nsql: SELECT :c AS x\n"
    templated = "sources: ['https://x.org/{{ c }}']\ncontent: x\n"
    specs = _project(tmp_path, {"a": head + templated})
    [warning] = run_validate(specs).problems
    assert warning.severity == "warning" and warning.line == 4 and "every source is a template" in warning.message
    chosen = "empty:\n  content: none\n  sources: ['https://x.org/', 'x.org/{{ c }}']\n"
    [error] = run_validate(_project(tmp_path, {"a": head + templated + chosen})).problems
    assert (error.line, error.col) == (8, 31)
    assert error.message.startswith("empty.sources[1]: 'x.org/{{ c }}' is not an absolute http(s) URL")


def test_an_empty_folder_is_an_error(tmp_path):
    (tmp_path / "specs").mkdir()
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "specs")])
    assert result.exit_code == 1
    assert (
        result.output.splitlines()[0]
        == f"{tmp_path / 'specs'}: error: no spec files (*.yaml, *.yml) in {tmp_path / 'specs'}"
    )
    assert "0 spec files checked" in result.output and "✓" not in result.output


def test_a_connection_named_without_any_mcpgen_yaml_says_the_file_is_missing(tmp_path):
    spec = "description: d\nconnection: warehouse\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n"
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "a.yaml").write_text(spec)
    [error] = run_validate(specs).problems
    assert (error.line, error.message) == (
        2,
        f"connection 'warehouse' is not defined: there is no mcpgen.yaml in the project folder {tmp_path.resolve()}, "
        "so the only connection is 'default' (DuckDB on the project's files)",
    )


@pytest.mark.parametrize(
    ("config", "sql", "where"),
    [  # the file named from the spec's folder, or by its name alone; in a spec, and in mcpgen.yaml's init
        (None, "SELECT * FROM 'sales.csv'", "a.yaml"),
        (None, "SELECT * FROM read_csv('sales.csv', header = true)", "a.yaml"),
        (
            "connections:\n  default:\n    duckdb: ':memory:'\n    init: [\"CREATE TABLE s AS FROM 'sales.csv'\"]\n",
            "SELECT 1 AS x",
            "mcpgen.yaml",
        ),
    ],
)
@pytest.mark.parametrize("hidden", [False, True])
def test_a_relative_path_naming_no_file_says_where_paths_start_and_the_file_meant(tmp_path, config, sql, where, hidden):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text("region,units\nNorth,3\n")
    if hidden:  # a project with a hidden folder (.git) has DuckDB read a list of files: another message
        (tmp_path / ".hidden").mkdir()
        (tmp_path / ".hidden" / "sales.csv").write_text("secret,1\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "a.yaml").write_text(f"description: d\nsql: {sql}\nsources: [https://x.org/]\ncontent: x\n")
    if config:
        (tmp_path / "mcpgen.yaml").write_text(config)
    [error] = run_validate(specs).problems
    assert error.path.endswith(where)
    assert error.message.endswith(
        f"(no such file: paths start at the project folder {tmp_path.resolve()}; did you mean 'data/sales.csv'?)"
    ), error.message


def test_a_python_tool_with_a_syntax_error_is_reported_without_running_it(tmp_path):
    # Written here, not kept in tests/broken/: pytest would import it (--doctest-modules).
    specs = _project(tmp_path, {"a": "description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n"})
    (specs / "tools.py").write_text("import os\nos.remove('nothing')\n\ndef broken(n: int = 3) -> int\n    return n\n")
    report = run_validate(specs)
    assert [(p.path, p.line, p.message) for p in report.problems] == [
        (str(specs / "tools.py"), 4, "syntax error: expected ':'")
    ]


def test_a_file_over_the_size_limit_is_refused(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "big.yaml").write_text("description: x\n" + "# padding\n" * 120_000)
    report = run_validate(specs)
    assert [p.message for p in report.errors] == ["the file is larger than 1024 KiB"]
    assert report.errors[0].path == str(specs / "big.yaml")


# --- the shipped specs ------------------------------------------------------------------------


def test_every_shipped_spec_passes_static_and_live_validation():
    report = run_validate(SPECS, live=True)
    assert report.problems == [], "\n".join(map(str, report.problems))
    assert report.files >= 9 and report.connections == {"default": "ok"}


def test_cli_validate_live_specs_exits_0():
    result = CliRunner().invoke(main, ["validate", "--live", str(SPECS)])
    assert result.exit_code == 0, result.output
    assert "0 errors, 0 warnings" in result.output


def test_live_checks_change_nothing_and_restore_the_working_directory(tmp_path):
    cwd = os.getcwd()
    before = {p: p.stat().st_mtime_ns for p in (REPO / "examples" / "data").iterdir()}
    run_validate(SPECS, live=True)
    assert os.getcwd() == cwd
    assert {p: p.stat().st_mtime_ns for p in (REPO / "examples" / "data").iterdir()} == before


def test_live_describe_does_not_run_the_query(tmp_path):
    """A query that would scan ten billion rows is described in well under a second."""
    specs = _project(
        tmp_path,
        {
            "slow": """\
        description: Slow
        sql: SELECT count(*) AS n FROM range(10000000000) t(x) WHERE x % 7 = 3
        sources: [https://example.org/]
        content: "{{ rows[0].n }} {{ rows[0].m }}"
        """
        },
    )
    report = run_validate(specs, live=True, timeout=5)
    assert report.seconds < 3
    assert [p.message for p in report.problems] == [
        "content: the template reads column 'm' of a row, which the query does not return (the query returns n)"
    ]


def test_an_unreachable_database_is_one_error_per_connection(tmp_path):
    config = (
        "connections:\n  default:\n    duckdb: ':memory:'\n"
        f"  warehouse:\n    url: postgresql+psycopg://reader:{SECRET}@127.0.0.1:9/x\n"
        "    connect_args: {connect_timeout: 2}\n"
    )
    spec = (
        "description: d\nconnection: warehouse\nsql: SELECT 1 AS x\nsources: [https://x.org/]\n"
        "content: '{{ rows[0].x }}'\n"
    )
    specs = _project(
        tmp_path,
        {"a": spec, "b": spec.replace("SELECT 1", "SELECT 2"), "c": spec.replace("SELECT 1", "SELECT 3")},
        config=config,
    )
    report = run_validate(specs, live=True, timeout=5)
    assert [p.message for p in report.errors] == ["connection 'warehouse' is unavailable: Connection refused"]
    assert report.errors[0].path.endswith("mcpgen.yaml") and report.errors[0].line == 4
    assert report.connections == {"warehouse": "unreachable"}


def test_a_broken_init_is_one_clear_error(tmp_path):
    config = "connections:\n  default:\n    duckdb: ':memory:'\n    init: [CREATE VIEW v AS SELECT * FROM nowhere]\n"
    specs = _project(
        tmp_path, {"a": "description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n"}, config=config
    )
    report = run_validate(specs, live=True)
    assert len(report.errors) == 1
    assert "connection 'default': init statement 1 failed" in report.errors[0].message


# --- secrets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["dsn_literal_password", "password_field_literal", "live_unreachable_db"])
@pytest.mark.parametrize("fmt", ["text", "json", "github"])
@pytest.mark.parametrize("live", [False, True])
def test_a_literal_password_never_appears_in_any_output(case, fmt, live):
    args = ["validate", "--format", fmt, *(["--live", "--timeout", LIVE_TIMEOUT] if live else []), str(BROKEN / case)]
    result = CliRunner().invoke(main, args)
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert SECRET not in output
    assert "password" in output
    assert result.exit_code in (0, 1)


def test_redact_removes_secrets_from_messages():
    assert redact(f"could not connect with {SECRET}", [SECRET]) == "could not connect with ***"


# --- formats and exit codes -------------------------------------------------------------------


def test_exit_codes_0_1_2(tmp_path):
    runner = CliRunner()
    assert runner.invoke(main, ["validate", str(SPECS)]).exit_code == 0
    assert runner.invoke(main, ["validate", str(BROKEN / "insert")]).exit_code == 1
    assert runner.invoke(main, ["validate", str(BROKEN / "unused_parameter")]).exit_code == 0
    assert runner.invoke(main, ["validate", "--strict", str(BROKEN / "unused_parameter")]).exit_code == 1
    assert runner.invoke(main, ["validate", str(tmp_path / "missing")]).exit_code == 2


def test_json_format_is_stable():
    result = CliRunner().invoke(main, ["validate", "--format", "json", str(BROKEN / "duplicate_tool_names")])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert set(data) == {
        "version",
        "specs_dir",
        "live",
        "strict",
        "files",
        "errors",
        "warnings",
        "ok",
        "exit_code",
        "connections",
        "notes",
        "problems",
    }
    assert data["version"] == 1 and data["ok"] is False and data["exit_code"] == 1 and data["files"] == 2
    assert data["errors"] == 1 and data["warnings"] == 0
    [problem] = data["problems"]
    assert problem == {
        "file": str(BROKEN / "duplicate_tool_names" / "b.yaml"),
        "line": 1,
        "column": 1,
        "severity": "error",
        "message": f"tool name 'cities' is already used by {BROKEN / 'duplicate_tool_names' / 'a.yaml'}",
    }


def test_github_format_annotates_each_problem():
    result = CliRunner().invoke(main, ["validate", "--format", "github", str(BROKEN / "yaml11_boolean")])
    lines = result.output.splitlines()
    path = BROKEN / "yaml11_boolean" / "spec.yaml"
    assert (
        f'::error file={path},line=12,col=3::annotations.openWorldHint: Input should be a valid boolean, got "no"'
        in lines
    )
    assert any(line.startswith(f"::warning file={path},line=12,col=18::'no' is read as") for line in lines)
    assert result.exit_code == 1


def test_github_format_escapes_percent_and_property_separators(tmp_path):
    """A `%` in a message and `,` `:` in the file name would end or corrupt the workflow command."""
    project = tmp_path / "team,a:b"
    project.mkdir()
    specs = _project(
        project, {"a": "description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: c\n'50%': 1\n"}
    )
    result = CliRunner().invoke(main, ["validate", "--format", "github", str(specs)])
    annotations = [line for line in result.output.splitlines() if line.startswith("::error")]
    path = str(specs / "a.yaml").replace(",", "%2C").replace(":", "%3A")
    assert annotations == [f"::error file={path},line=5,col=1::unknown key '50%25'"]


def test_text_format_is_one_line_per_problem_and_plain_when_not_a_tty():
    folder = BROKEN / "template_class_mro"
    result = CliRunner().invoke(main, ["validate", str(folder)])
    assert "\x1b[" not in result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        f"{folder / 'spec.yaml'}:12:9: error: content: the template reads the internal attribute '__class__', "
        "which the sandbox refuses"
    )
    assert all(
        re.match(rf"^{re.escape(str(folder))}/spec\.yaml:\d+:\d+: (error|warning): ", line) for line in lines[:2]
    )
    assert lines[2] == "" and lines[-1].startswith("✗ 1 spec file checked (static): 2 errors, 0 warnings")


def test_grouped_format_keeps_a_header_per_file():
    folder = BROKEN / "template_class_mro"
    lines = CliRunner().invoke(main, ["validate", "--format", "grouped", str(folder)]).output.splitlines()
    assert lines[0] == str(folder / "spec.yaml")
    assert re.match(r"^\s+12:9\s+error\s+content: the template reads the internal attribute", lines[1])


def test_text_format_is_coloured_on_a_terminal():
    from mcpgen.commands.reports import format_text

    report = run_validate(BROKEN / "insert")
    assert "\x1b[31m" in format_text(report, color=True)
    assert "\x1b[" not in format_text(report, color=False)
    assert click.unstyle(format_text(report, color=True)) == format_text(report, color=False)


# --- big projects: the parallel path finds exactly what the sequential one does ----------------


def test_parallel_static_validation_matches_sequential(tmp_path):
    spec = (
        "description: d{i}\nparameters:\n  n: {{type: integer, description: n, default: 1}}\n"
        "sql: SELECT {i} AS x LIMIT :n\nsources: [https://x.org/]\ncontent: '{{{{ rows[0].x }}}}'\n"
    )
    specs = {f"t{i:03d}": spec.format(i=i) for i in range(240)}
    specs["t005"] = specs["t005"].replace("SELECT", "DELETE FROM t; SELECT")
    specs["t117"] = "name: t001\n" + specs["t117"]  # a duplicate name across two workers' shares
    specs["t200"] = specs["t200"].replace("{{ rows[0].x }}", "{{ yaer }}")
    folder = _project(tmp_path, specs)
    one, two = run_validate(folder, jobs=1), run_validate(folder, jobs=2)
    assert len(one.errors) == 3
    assert one.problems == two.problems


# --- the static helpers -------------------------------------------------------------------------


def test_row_references_follow_rows_through_loops_filters_and_sets():
    source = textwrap.dedent("""\
        {% set top = rows | first %}{{ top.a }}{{ rows[0]['b'] }}{{ (rows | last).c }}
        {% for r in rows | sort(attribute='d') %}{{ r.e }}{{ r.get('x') }}{% for k, v in r.items() %}{% endfor %}{% endfor %}
        {{ rows | sum(attribute='f') }}{{ rows | map(attribute='g') | join }}{{ rows | selectattr('h') | list }}
        {% for r in rows[:2] %}{{ r['i'] }}{% endfor %}{% for c in columns %}{{ c.upper() }}{% endfor %}
        {% set total = 3 %}{{ total.real }}{% for r in other %}{{ r.nope }}{% endfor %}""")
    refs = row_references(PROSE.parse(source))
    assert [name for _, name in refs] == ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    assert refs[0][0] == 1 and refs[-1][0] == 4


def test_row_references_follow_groupby_groups():
    source = (
        "{% for g in rows | groupby('a') %}{% set first = g.list[0] %}{{ g.grouper }}{{ first.b }}{% endfor %}"
        "{% for key, items in rows | groupby('c') %}{% for r in items %}{{ r.d }}{% endfor %}{% endfor %}"
    )
    assert [name for _, name in row_references(PROSE.parse(source))] == ["a", "b", "c", "d"]


def test_safe_templates_have_no_hazards():
    for source in [
        "{{ rows | length }} {{ '%s km' | format(3) }} {{ 'a' * 3 }} {{ 2 ** 10 }}",
        "{% for i in range(10) %}{{ i }}{% endfor %}{{ r.format if r else '' }}",
        "{{ rows[0].city ~ '!' }}",
    ]:
        assert template_hazards(PROSE.parse(source)) == [], source


def test_hazards_name_what_is_wrong():
    cases = {
        "{{ x.__class__ }}": "internal attribute '__class__'",
        "{{ x['_y'] }}": "internal item '_y'",
        "{{ x | attr('y') }}": "attr filter",
        "{{ 'x' * 100001 }}": "100,001 items",
        "{{ 2 ** 100000 }}": "power 100,000",
        "{% import 'x' as y %}": "{% import %}",
        "{% extends 'x' %}": "{% extends %}",
        "{{ x.mro() }}": "'mro'",
    }
    for source, text in cases.items():
        hazards = template_hazards(PROSE.parse(source))
        assert hazards and text in hazards[0][1], (source, hazards)


def test_outside_paths_reads_file_functions_only_and_skips_comments():
    assert outside_paths("SELECT '/etc/passwd' AS not_a_file, 'https://x.org' AS url") == []
    assert outside_paths("-- read_csv('/etc/passwd')\nSELECT 1") == []
    assert outside_paths("SELECT * FROM read_csv('data/cities.csv')") == []
    assert [r[:2] for r in outside_paths("SELECT *\nFROM read_csv(['data/a.csv', '/etc/x'])")] == [(2, 30)]
    assert outside_paths("SELECT * FROM 's3://bucket/x.parquet'")[0][2].endswith(
        "over the network; only files inside the project folder can be read"
    )
    assert "'..'" in outside_paths("SELECT * FROM read_parquet('data/../../x.parquet')")[0][2]


def test_sources_must_be_absolute_http_urls_with_a_literal_host():
    assert source_problem("https://www.geonames.org/countries/{{ country }}/") is None
    assert source_problem("http://example.org") is None
    assert source_problem("https://example.org/?q={{ q }}") is None
    assert "absolute" in source_problem("/relative/path")
    assert "host" in source_problem("https://{{ host }}.example.org/")
    assert "spaces" in source_problem("https://example.org/a b")


def test_literal_passwords_are_found_and_env_references_are_not():
    assert literal_password("postgresql://u:p@h/db")
    assert literal_password("mysql+pymysql://u:p%40ss@h:3306/db")
    assert not literal_password("postgresql://u@h/db")
    assert not literal_password("postgresql://u:${PW}@h/db")
    assert not literal_password("sqlite:///data/x.db")


def test_chart_sense():
    def messages(**kw):
        return [m for _, _, m in chart_sense(Chart(**kw))]

    assert messages(type="bar", x="a", y="b") == []
    assert messages(type="stacked_bar", x="a", y=["b", "c"]) == []
    assert "nothing to stack" in messages(type="stacked_bar", x="a", y="b")[0]
    assert "indexAxis only applies to bar" in messages(type="line", x="a", y="b", options={"indexAxis": "y"})[0]
    assert "not a Chart.js 4 option" in messages(type="bar", x="a", y="b", options={"colour": "red"})[0]
    assert "both x and y" in messages(type="scatter", x="a", y="a")[0]


# --- helpers ----------------------------------------------------------------------------------

CITIES_CONFIG = (
    "connections:\n  default:\n    duckdb: ':memory:'\n    init:\n"
    "      - CREATE TABLE cities AS SELECT * FROM (VALUES ('Tokyo', 37)) t(name, population)\n"
)


def _project(tmp_path: Path, specs: dict[str, str], config: str = CITIES_CONFIG) -> Path:
    folder = tmp_path / "specs"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    (tmp_path / "mcpgen.yaml").write_text(config)
    for name, text in specs.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text))
    return folder


def test_live_checks_on_postgresql(tmp_path, postgres_url, postgres_cities):
    """SQLAlchemy connections are described too (skips without the PostgreSQL test service)."""
    from sqlalchemy.engine import make_url

    url = make_url(postgres_url)
    config = f"connections:\n  default:\n    url: {url.set(password=None).render_as_string(hide_password=False)}\n" + (
        f"    password: {url.password}\n" if url.password else ""
    )
    specs = _project(
        tmp_path,
        {
            "pg": f"""\
        description: d
        parameters:
          code: {{type: string, description: c, required: false}}
        sql: SELECT name AS city, population FROM {postgres_cities} WHERE :code IS NULL OR country_code = :code
        sources: [https://x.org/]
        content: "{{% for r in rows %}}{{{{ r.city }}}} {{{{ r.pop }}}}{{% endfor %}}"
        table: {{columns: [city, population]}}
        """
        },
        config=config,
    )
    report = run_validate(specs, live=True, timeout=10)
    assert [p.message for p in report.errors] == [
        "content: the template reads column 'pop' of a row, which the query does not return "
        "(the query returns city, population)"
    ]
    if url.password:
        result = CliRunner().invoke(main, ["validate", "--live", "--format", "json", str(specs)])
        assert url.password not in result.output


def test_every_schema_error_of_a_file_is_reported_once(tmp_path):
    specs = _project(
        tmp_path,
        {
            "a": "title: x\ntitel: y\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n"
            "chart: {type: histogram, x: a, y: b}\ntable: {columns: 3}\n"
        },
    )
    assert [(p.line, p.message) for p in run_validate(specs).problems] == [
        (1, "missing required field 'description'"),
        (2, "unknown key 'titel'"),
        (
            6,
            "chart.type: 'histogram' is not one of bar, line, area, pie, doughnut, scatter, horizontal_bar, stacked_bar",
        ),
        (7, "table.columns: Input should be a valid list, got 3"),
    ]


TRICKY_SQL = [
    "SELECT 1 AS x",
    "SELECT 1;",
    "select * from cities where name = 'DELETE'",
    "WITH t AS (SELECT 1) SELECT * FROM t",
    "FROM cities",
    "VALUES (1, 2)",
    "TABLE cities",
    "(SELECT 1) UNION ALL (SELECT 2)",
    "SELECT * FROM cities FOR UPDATE",
    "SELECT * FROM cities FOR SHARE",
    "SELECT 1 INTO t",
    "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone",
    "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
    "SELECT 1; SELECT 2",
    "SELECT 1; DROP TABLE t",
    "DROP TABLE t; SELECT 1",
    "SET x = 1",
    "RESET lock_configuration",
    "CALL f()",
    "PRAGMA version",
    "COPY t TO 'x.csv'",
    "ATTACH 'x.db'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "EXPORT DATABASE 'x'",
    "UPDATE t SET a = 1",
    "CREATE TEMP TABLE t AS SELECT 1",
    "SELECT replace(name, 'a', 'b') FROM t",
    'SELECT "update" FROM t',
    "PIVOT t ON a USING sum(b)",
    "SELECT * FROM t WHERE a IN (SELECT b FROM u)",
    "SELECT set FROM t",
    "BEGIN; SELECT 1; COMMIT",
    "START TRANSACTION",
    "SELECT 1 -- ; DROP TABLE t",
]


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "mysql", "sqlite"])
def test_the_read_only_fast_path_agrees_with_the_full_parse(monkeypatch, dialect):
    from mcpgen.errors import UnsafeSQL
    from mcpgen.sql import statements as sqlmod

    queries = list(TRICKY_SQL)
    for path in sorted(SPECS.glob("*.yaml")) + sorted(BROKEN.glob("*/*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and isinstance(data.get("sql"), str):
            queries.append(data["sql"])

    def verdict(query):
        try:
            sqlmod.check_read_only(query, dialect)
            return "ok"
        except UnsafeSQL as exc:
            return str(exc)

    fast = [verdict(q) for q in queries]
    monkeypatch.setattr(sqlmod, "_plainly_reads", lambda tokens: False)
    sqlmod.tokenize.cache_clear()
    assert [verdict(q) for q in queries] == fast


def test_constant_arithmetic_in_templates_never_crashes_the_check():
    for source in [
        "{{ 2.5 ** 3 }}",
        "{{ 0 ** -1 }}",
        "{{ (-8) ** 0.5 }}",
        "{{ 'ab' * -1 }}",
        "{{ [1, 2] * 3.5 }}",
        "{{ 1e308 * 10 }}",
        "{{ 10 // 0 }}",
        "{{ 9 ** 9 ** 9 }}",
        "{{ -'x' }}",
    ]:
        assert template_hazards(PROSE.parse(source)) == [], source
    assert "astronomical" in template_hazards(PROSE.parse("{{ 'x' * 10 ** 9999 }}"))[0][1]


def test_typed_parameters_in_date_arithmetic_validate_and_call_on_duckdb(tmp_path, monkeypatch):
    """A date or datetime parameter plus an INTERVAL binds as declared: validate describes it, and a call
    runs it with a value and with the parameter left out (a NULL of the declared type)."""
    config = (
        "connections:\n  default:\n    duckdb: ':memory:'\n    init:\n"
        "      - CREATE TABLE orders AS SELECT DATE '1995-01-01' + i::INT AS o_date, i AS qty FROM range(400) t(i)\n"
    )
    specs = _project(
        tmp_path,
        {
            "since": """\
        description: Orders in the three months after a day
        parameters:
          day: {type: date, description: first day, required: false}
          at: {type: datetime, description: a moment, required: false}
          extra: {type: integer, description: days added, default: 0}
        sql: |
          SELECT count(*) AS n, max(o_date) AS last
          FROM orders
          WHERE o_date >= :day AND o_date < :day + INTERVAL '3' MONTH + :extra * INTERVAL 1 DAY
             OR (:day IS NULL AND o_date < CAST(:at + INTERVAL 1 DAY AS DATE))
        sources: [https://example.org/]
        content: "{{ rows[0].n }} orders"
        """
        },
        config,
    )
    report = run_validate(specs)
    assert [p.message for p in report.problems] == []
    monkeypatch.chdir(tmp_path)

    def call(*args: str) -> list:
        result = CliRunner().invoke(main, ["call", "since", "--specs", str(specs), "--json", *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["structuredContent"]["table"][1]

    assert call("-a", "day=1995-02-01")[0] == 89  # February to April 1995
    assert call("-a", "day=1995-02-01", "-a", "extra=2")[0] == 91
    assert call("-a", "at=1995-01-10T23:00:00")[0] == 10  # January 1 to 10
    assert call()[0] == 0
