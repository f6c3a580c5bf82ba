"""The static checks of one spec beyond its schema, run on the spec as load_spec builds it."""

from pathlib import Path

import pytest

from mcpgen.load.project import check_unique_names, load_project
from mcpgen.load.spec_checks import LOOP_ROWS_WARNING, check_spec
from mcpgen.load.specs import LoadedSpec
from mcpgen.spec.config import ProjectConfig
from mcpgen.spec.models import Spec
from mcpgen.spec.yamlload import load_yaml

CONFIG = ProjectConfig.model_validate(
    {"connections": {"default": {"duckdb": ":memory:"}, "pg": {"url": "postgresql://u@db/x"}}}
)
BASE = "description: d\nsources: [https://example.org/]\ncontent: '{{ row_count }} rows'\n"


def check(text: str, name: str = "spec", base: str = BASE) -> tuple[LoadedSpec, list[str]]:
    data = load_yaml(base + text, f"{name}.yaml")
    spec = Spec.model_validate(data)
    loaded = LoadedSpec(Path(f"{name}.yaml"), spec, spec.name or name, "", data)
    problems: list = []
    check_spec(loaded, CONFIG, problems, Path("."))
    return loaded, [f"{p.line}:{p.col}: {p.severity}: {p.message}" for p in problems]


def test_a_clean_spec_has_no_problem_and_keeps_its_compiled_templates():
    loaded, problems = check(
        "parameters: {n: {type: integer, description: n, default: 3}}\nsql: SELECT 1 AS x LIMIT :n\n"
    )
    assert problems == [] and loaded.sql == "SELECT 1 AS x LIMIT :n" and loaded.dialect == "duckdb"
    assert set(loaded.templates) == {"content", "sources[0]"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("sql: SELECT :m AS x\n", "4:13: error: the SQL uses :m, which is not a declared parameter"),
        (
            "parameters: {n: {type: integer, description: n}}\nsql: SELECT 1 AS x\n",
            "4:14: warning: parameter 'n' is declared but the SQL never uses :n",
        ),
        (
            "parameters: {ids: {type: string, description: i}}\nsql: SELECT 1 AS x WHERE 1 IN :ids\n",
            "5:31: error: IN :ids needs an array parameter, but ids is string",
        ),
        ("sql: DELETE FROM t\n", "4:1: error: the query must only read, but it contains DELETE"),
        (
            "connection: nowhere\nsql: SELECT 1\n",
            "4:1: error: connection 'nowhere' is not defined in mcpgen.yaml (defined: default, pg)",
        ),
        ("sql_file: missing.sql\n", "4:1: error: sql_file missing.sql does not exist"),
        (
            "sql: SELECT * FROM read_csv('/etc/passwd')\n",
            "4:29: error: the SQL reads the absolute path '/etc/passwd'; paths must be relative to the project folder",
        ),
        (
            "parameters: {n: {type: integer, description: n, default: 0, minimum: 1}}\nsql: SELECT :n AS x\n",
            "4:14: error: the default of 'n' is invalid: 0 is less than the minimum of 1.",
        ),
    ],
)
def test_one_problem_at_its_place(text, problem):
    assert check(text)[1] == [problem]


def test_a_bad_tool_name_from_the_file_name():
    assert check("sql: SELECT 1 AS x\n", name="1st")[1] == [
        "1:1: error: the file name gives the tool name '1st', which is not a valid tool name; rename the file or set name:"
    ]


def test_paged_specs_need_their_own_order_and_no_limit_or_cursor_parameter():
    text = "page_size: 10\nparameters: {cursor: {type: string, description: c, required: false}}\nsql: SELECT :cursor AS x LIMIT 5\n"
    assert [p.split(": ", 2)[2] for p in check(text)[1]] == [
        "a paged spec takes 'cursor' itself: rename the parameter",
        "page_size and a LIMIT, OFFSET or FETCH of the query's own do not go together: remove it (each page is the next page_size rows)",
        "page_size needs the query to end with ORDER BY (on columns that give each row one place), or pages could repeat or skip rows",
    ]


def test_prose_that_loops_over_many_rows_is_a_warning():
    text = f"max_rows: {LOOP_ROWS_WARNING + 1}\nsql: SELECT 1 AS x\n"
    assert check(text)[1] == []  # content does not loop
    looping = BASE.replace("'{{ row_count }} rows'", "'{% for r in rows %}{{ r.x }}{% endfor %}'")
    (problem,) = check(text, base=looping)[1]
    assert problem.startswith("3:1: warning: content loops over every row, and up to 1,001 rows can come back")


def test_templates_are_checked_for_names_filters_and_hazards():
    _, problems = check("sql: SELECT 1 AS x\nforce: '{{ x.__class__ }}'\n")
    assert problems == [
        "5:14: error: force: the template reads the internal attribute '__class__', which the sandbox refuses"
    ]
    _, problems = check("sql: SELECT 1 AS x\nforce: '{{ rowz }}'\n")
    assert problems == [
        "5:12: error: force: the template uses rowz, which is neither a parameter nor one of columns, max_rows, "
        "row_count, rows, truncated; did you mean 'rows'?"
    ]


def test_unique_names_across_files():
    a, _ = check("sql: SELECT 1 AS x\n", name="a")
    b, _ = check("name: a\nsql: SELECT 1 AS x\n", name="b")
    problems: list = []
    check_unique_names([a, b], problems)
    assert [str(p) for p in problems] == ["b.yaml:4:1: tool name 'a' is already used by a.yaml"]


OPTIONAL_LIST = "parameters: {xs: {type: array, items: {type: string}, description: d, required: false}}\n"


@pytest.mark.parametrize(
    ("sql", "warned"),
    [
        ("SELECT 1 AS x FROM t WHERE x IN :xs", True),  # left out: matches nothing
        ("SELECT 1 AS x FROM t WHERE x IN :xs OR x NOT IN :xs", True),  # said once
        ("SELECT 1 AS x FROM t WHERE (:xs IS NULL OR x IN :xs)", False),  # the portable spelling
        ("SELECT 1 AS x FROM t WHERE :xs IS NOT NULL AND x IN :xs", False),
    ],
)
def test_validate_suggests_the_spelling_for_all_values_when_omitted(sql, warned):
    _, problems = check(OPTIONAL_LIST + f"sql: {sql}\n")
    expected = (
        f"5:{sql.index(':xs') + 6}: warning: xs is optional with no default, so leaving it out makes IN :xs "
        "match nothing; for all values when it is left out, write (:xs IS NULL OR <column> IN :xs), or give it a default"
    )
    assert problems == ([expected] if warned else [])


def test_an_optional_list_with_a_default_or_required_gets_no_suggestion():
    for parameter in ("default: [a]", "required: true"):
        text = f"parameters: {{xs: {{type: array, items: {{type: string}}, description: d, {parameter}}}}}\n"
        assert check(text + "sql: SELECT 1 AS x FROM t WHERE x IN :xs\n")[1] == []


def test_confirm_when_rows_over_keeps_the_counted_query_read_only_and_refuses_bad_thresholds(tmp_path):
    loaded, problems = check("sql: SELECT 1 AS x -- one row;\nconfirm: {message: Sure?, when_rows_over: 10}\n")
    assert problems == [] and loaded.count_sql is not None
    assert loaded.count_sql.startswith("SELECT count(*) AS mcpgen_rows FROM (SELECT 1 AS mcpgen_one FROM (\n")
    assert "\nSELECT 1 AS x -- one row;\n) AS mcpgen_counted LIMIT :mcpgen_count_limit)" in loaded.count_sql
    assert check("sql: SELECT 1 AS x\nconfirm: {message: Sure?}\n")[0].count_sql is None  # asks every call
    specs = tmp_path / "specs"
    specs.mkdir()
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n")
    for name, value in (("negative", "-1"), ("words", "many")):
        text = BASE + f"sql: SELECT 1 AS x\nconfirm: {{message: Sure?, when_rows_over: {value}}}\n"
        (specs / f"{name}.yaml").write_text(text)
    found = sorted(f"{Path(p.path).name}:{p.line}:{p.col}: {p.message}" for p in load_project(specs).problems)
    assert found == [
        "negative.yaml:5:27: confirm.when_rows_over: Input should be greater than or equal to 0, got -1",
        'words.yaml:5:27: confirm.when_rows_over: Input should be a valid integer, got "many"',
    ]


def test_date_arithmetic_on_a_mariadb_column_waits_for_the_databases_catalogue(mariadb_url, tmp_path, monkeypatch):
    """Plain validate (no connection) refuses `d + 5` on MariaDB at the construct, naming the engine:
    whether it adds days depends on d's type. validate --live, serve and call read the type from the
    database's catalogue and translate it as DuckDB means it (five days later, not 20000135)."""
    import textwrap

    import services
    from click.testing import CliRunner

    from mcpgen.cli import main
    from mcpgen.serve.project import open_project

    table = services.unique_name("later")
    with services.connect("mariadb") as con, con.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (d DATE, y INT)")
        cur.execute(f"INSERT INTO {table} VALUES ('2000-01-30', 2000), ('1999-12-31', 1999), (NULL, 2004)")
    try:
        (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: {mariadb_url}\n")
        (tmp_path / "specs").mkdir()
        (tmp_path / "specs" / "later.yaml").write_text(
            BASE
            + textwrap.dedent(
                f"""\
                sql: |
                  SELECT y,
                    d + 5 AS a
                  FROM {table}
                  ORDER BY y
                """
            )
        )
        monkeypatch.chdir(tmp_path)
        plain = CliRunner().invoke(main, ["validate", "specs"])
        assert plain.exit_code == 1, plain.output
        assert "later.yaml:6:5: error: `d + 5` cannot be translated for MariaDB/MySQL" in plain.output, plain.output
        live = CliRunner().invoke(main, ["validate", "--live", "specs"])
        assert live.exit_code == 0 and "later.yaml" not in live.output, live.output
        project = open_project(tmp_path / "specs")
        try:
            table_of = project.registry.call_sync("later", {}).structured_content["table"]
        finally:
            project.close()
        assert table_of == [["y", "a"], [1999, "2000-01-05"], [2000, "2000-02-04"], [2004, None]]
    finally:
        with services.connect("mariadb") as con, con.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {table}")


def test_a_test_case_expecting_an_error_is_warned_of_an_unknown_argument_name_not_of_a_wrong_value():
    """The "did you mean" sentence names the parameter, so `error_contains` would pass on a misspelt name."""
    params = (
        "parameters: {n: {type: integer, description: n, maximum: 10}, "
        "who: {type: string, description: w, from_claim: sub}}\n"
    )
    cases = [
        "{name: typo, args: {nn: 11}, expect: {error_contains: n}}",
        "{name: too big, args: {n: 11}, expect: {error_contains: maximum}}",
        "{name: not a number, args: {n: x}, expect: {error_contains: integer}}",
        "{name: claimed, args: {who: me}, expect: {error_contains: identity}}",
        "{name: plain typo, args: {m: 1}, expect: {min_rows: 1}}",
    ]
    _, problems = check(params + "sql: SELECT :n AS x, :who AS y\ntests:\n" + "".join(f"  - {c}\n" for c in cases))
    assert problems == [
        "7:18: warning: test 'typo': Unknown argument 'nn': this tool takes n (did you mean 'n'?).",
        "11:24: warning: test 'plain typo': Unknown argument 'm': this tool takes n.",
    ]


@pytest.mark.parametrize(
    "expression",
    [
        "".join(f"'a' if n > {i} else (" for i in range(120)) + "'x'" + ")" * 120,
        "(" * 150 + "n" + ")" * 150,
        "[" * 150 + "n" + "]" * 150,
        "(n + " * 150 + "1" + ")" * 150,
        "n | default(" * 150 + "1" + ")" * 150,
    ],
)
def test_a_template_nested_too_deeply_for_jinja_s_parser_is_one_sentence_at_its_line(expression):
    text = "parameters: {n: {type: integer, description: n}}\nsql: SELECT :n AS x\n"
    _, problems = check(text, base=BASE.replace("'{{ row_count }} rows'", "|\n  One.\n  {{ " + expression + " }}"))
    assert problems == [
        "5:3: error: content: template syntax error: the template nests too deeply here (brackets or if/else "
        "inside one another); split it with {% set %}"
    ]
