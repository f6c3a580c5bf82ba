"""A query that does not parse is reported at its offending token in the spec file (`specs/x.yaml:L:C`),
the same by `validate`, `call`, `test` and `serve`, whether DuckDB's parser or sqlglot's refuses it; and by
`validate --live` where PostgreSQL or MariaDB refuses it."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen.cli import main

HEAD = "title: Broken query\ndescription: A query that does not parse.\n"
TAIL = "sources:\n  - https://example.org/\ncontent: |\n  {{ row_count }} rows\n"
IDS = "parameters:\n  ids:\n    type: array\n    items: {type: integer}\n    description: ids\n    default: [1]\n"

# TPC-H Q3 (the benchmark's own text, on DuckDB's tpch tables' names) with a comma left out before o_orderdate.
TPCH_Q3 = """\
  SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
  FROM customer, orders, lineitem
  WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
    AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
  GROUP BY l_orderkey o_orderdate, o_shippriority
  ORDER BY revenue DESC, o_orderdate
  LIMIT 10
"""

# (spec body, the text whose first character the error points at)
SHAPES = {
    "block": (
        "sql: |\n  SELECT 1 AS a,\n         2 AS b\n  FROM range(10) t\n  WHERE t.range > 1 AND AND 1\n",
        "AND 1",
    ),
    "after a list placeholder": (
        IDS + "sql: |\n  SELECT range AS a FROM range(3) WHERE range IN :ids AND AND 1\n",
        "AND 1",
    ),
    "one line": ("sql: SELECT 1 AS a FROM range(3) WHERE AND 1\n", "AND 1"),
    "quoted, at its end": ('sql: "SELECT 1 AS a FROM range(3) WHERE (1 = 1"\n', '1"\n'),  # its last character
    "tpch q3": ("sql: |\n" + TPCH_Q3, "o_orderdate, o_shippriority\n  ORDER"),
}


def _spot(text: str, mark: str) -> tuple[int, int]:
    before = text[: text.index(mark)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def _project(tmp_path: Path, body: str, config: str = "") -> Path:
    specs = tmp_path / "specs"
    specs.mkdir()
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    duckdb: ':memory:'\n" + config)
    (specs / "broken.yaml").write_text(HEAD + body + TAIL)
    return specs


def _lines(specs: Path, *command: str) -> list[str]:
    result = CliRunner().invoke(main, [*command])
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    return [line for line in result.output.splitlines() if "broken" in line]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_command_points_at_the_token_duckdb_cannot_parse(tmp_path, monkeypatch, shape):
    body, mark = SHAPES[shape]
    specs = _project(tmp_path, body)
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), mark)
    at = f"specs/broken.yaml:{line}:{col}: "
    for command in (["validate", "specs"], ["call", "broken", "--specs", "specs"], ["test", "specs"]):
        shown = _lines(specs, *command)
        assert shown and all(at in s and "cannot parse the SQL" in s for s in shown), (command, shown)


def test_serve_refuses_at_the_token(tmp_path, monkeypatch):
    from mcpgen.errors import SpecError
    from mcpgen.serve.project import open_project

    specs = _project(tmp_path, SHAPES["block"][0])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as refused:
        open_project(Path("specs"))
    line, col = _spot((specs / "broken.yaml").read_text(), SHAPES["block"][1])
    assert str(refused.value).startswith(f"specs/broken.yaml:{line}:{col}: DuckDB cannot parse the SQL")


def test_sqlglot_is_pointed_at_when_it_reads_a_query_it_translates(tmp_path, monkeypatch):
    config = "  pg:\n    url: postgresql+psycopg://postgres@127.0.0.1:5432/test\n"
    body = "connection: pg\nsql: |\n  SELECT 1 AS a\n  FROM (SELECT 1) t\n  WHERE 1 = 1 AND AND 1 = 1\n"
    specs = _project(tmp_path, body, config)
    monkeypatch.chdir(tmp_path)
    for command in (["validate", "specs"], ["call", "broken", "--specs", "specs"]):
        shown = _lines(specs, *command)
        assert shown == [
            "specs/broken.yaml:7:19: "
            + ("error: " if command[0] == "validate" else "")
            + "the SQL cannot be read as duckdb: required keyword: 'expression' missing for And, at 'AND'"
        ]


def test_a_sql_file_is_named_at_its_own_line_and_column(tmp_path, monkeypatch):
    specs = _project(tmp_path, IDS + "sql_file: queries/broken.sql\n")
    (specs / "queries").mkdir()
    (specs / "queries" / "broken.sql").write_text("SELECT range AS a\nFROM range(10)\nWHERE range IN :ids AND AND 1\n")
    monkeypatch.chdir(tmp_path)
    for command in (["validate", "specs"], ["call", "broken", "--specs", "specs"]):
        shown = _lines(specs, *command)
        assert len(shown) == 1 and "specs/broken.yaml:9:1: " in shown[0], shown
        assert "specs/queries/broken.sql:3:25: DuckDB cannot parse the SQL" in shown[0]


def test_a_completion_query_is_pointed_at_inside_its_text(tmp_path, monkeypatch):
    config = "  pg:\n    url: postgresql+psycopg://postgres@127.0.0.1:5432/test\n"
    body = (
        "connection: pg\nparameters:\n  city:\n    type: string\n    description: a city\n    complete: |\n"
        "      SELECT name FROM cities\n      WHERE name LIKE :prefix || '%' AND AND 1 = 1\n"
        "sql: SELECT name AS c FROM cities WHERE name = :city\n"
    )
    specs = _project(tmp_path, body, config)
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), "AND 1 = 1")
    assert _lines(specs, "validate", "specs") == [
        f"specs/broken.yaml:{line}:{col}: error: parameters.city.complete: the SQL cannot be read as duckdb: "
        "required keyword: 'expression' missing for And, at 'AND'"
    ]


def test_a_place_in_the_translation_is_not_taken_for_one_in_the_spec(tmp_path, monkeypatch):
    """PostgreSQL's SQL on DuckDB runs translated (reformatted): DuckDB's place in that text is not a place in
    the spec's, so the problem is at the query (it was put at line 14 of an 11-line file)."""
    body = "dialect: postgres\nsql: |\n  SELECT x.a AS a FROM (SELECT 1 AS a) AS x WHERE x.a = 1\n    AND x.nme = 2\n"
    specs = _project(tmp_path, body)
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), "SELECT x.a")
    for command in (["validate", "specs"], ["call", "broken", "--specs", "specs"]):
        shown = _lines(specs, *command)
        assert len(shown) == 1 and shown[0].startswith(f"specs/broken.yaml:{line}:{col}: "), shown
        assert 'does not have a column named "nme"' in shown[0]


# (dialect the spec is written in, its SQL, the text whose first character the server's error points at);
# {t} is the cities table. Each one the database itself refuses, after sqlglot read it.
SERVER_SHAPES = {
    "on line 1": ("", "sql: SELECT name AS city, FROM {t} WHERE population > 1\n", "FROM {t} WHERE"),
    "on a later line": (
        "",
        "sql: |\n  SELECT name AS city, 1 AS one\n  FROM {t}\n  WHERE population > 1 AND country_code IS 1\n",
        "1\n",
    ),
    "after a placeholder": (
        "",
        "sql: |\n  SELECT name AS city FROM {t}\n  WHERE country_code = :code AND name IS 'Oslo'\n",
        "'Oslo'",
    ),
    "inside a CTE": (
        "",
        "sql: |\n  WITH big AS (\n    SELECT name, population,\n    FROM {t}\n    WHERE population > 1\n  )\n"
        "  SELECT name AS city FROM big\n",
        "FROM {t}",
    ),
    "a column no table has": (
        "",
        "sql: |\n  SELECT name AS city\n  FROM {t}\n  WHERE country_code = :code AND popuation > 1\n",
        "popuation",
    ),
    "in a translated query": (
        "duckdb",
        "sql: |\n  SELECT name AS city\n  FROM {t}\n  WHERE country_code = :code\n    AND popuation > 1\n",
        "popuation",
    ),
}
CODE = "parameters:\n  code:\n    type: string\n    description: a country\n    required: false\n"


@pytest.mark.parametrize("server", ["postgres", "mariadb"])
@pytest.mark.parametrize("shape", SERVER_SHAPES)
def test_validate_live_points_at_the_token_the_database_refuses(tmp_path, monkeypatch, request, server, shape):
    """PostgreSQL's and MariaDB's place is in the statement as sent (placeholders bound, a line of mcpgen's
    before it, translated): it is found in the spec's SQL as written (it was put at the `sql:` value)."""
    url = request.getfixturevalue(f"{server}_url")
    table = request.getfixturevalue(f"{server}_cities")
    dialect, sql, mark = SERVER_SHAPES[shape]
    dialect = dialect or {"postgres": "postgres", "mariadb": "mysql"}[server]
    config = f"  db:\n    url: {url}\n"
    body = f"connection: db\ndialect: {dialect}\n{CODE if ':code' in sql else ''}{sql.format(t=table)}"
    specs = _project(tmp_path, body, config)
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), mark.format(t=table))
    shown = _lines(specs, "validate", "--live", "--timeout", "20", "specs")
    assert len(shown) == 1 and shown[0].startswith(f"specs/broken.yaml:{line}:{col}: error: the query failed: "), shown


def test_a_place_the_spec_has_twice_stays_at_the_sql_value(tmp_path, monkeypatch, mariadb_url, mariadb_cities):
    """MariaDB names an unknown column but not where it is: written twice, neither is taken for it."""
    sql = f"sql: |\n  SELECT name AS city\n  FROM {mariadb_cities}\n  WHERE popuation > 1 OR popuation < 0\n"
    specs = _project(tmp_path, f"connection: db\ndialect: mysql\n{sql}", f"  db:\n    url: {mariadb_url}\n")
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), "SELECT name")
    shown = _lines(specs, "validate", "--live", "--timeout", "20", "specs")
    assert shown == [f"specs/broken.yaml:{line}:{col}: error: the query failed: Unknown column 'popuation' in 'WHERE'"]


@pytest.mark.parametrize("server", ["postgres", "mariadb"])
@pytest.mark.parametrize("shape", SERVER_SHAPES)
def test_call_and_test_point_at_the_token_the_database_refuses_when_the_query_runs(
    tmp_path, monkeypatch, request, server, shape
):
    """Without --live nothing describes the query before it runs: the database's place in the statement
    that ran is found in the spec file as validate --live finds it (the caller was told no place)."""
    url = request.getfixturevalue(f"{server}_url")
    table = request.getfixturevalue(f"{server}_cities")
    dialect, sql, mark = SERVER_SHAPES[shape]
    dialect = dialect or {"postgres": "postgres", "mariadb": "mysql"}[server]
    body = f"connection: db\ndialect: {dialect}\n{CODE if ':code' in sql else ''}{sql.format(t=table)}"
    specs = _project(tmp_path, body, f"  db:\n    url: {url}\n")
    with (specs / "broken.yaml").open("a") as spec:
        spec.write("tests:\n  - expect: {min_rows: 0}\n")
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), mark.format(t=table))
    at = f"specs/broken.yaml:{line}:{col}: the query failed: "
    for command in (["call", "broken", "--specs", "specs"], ["test", "specs"]):
        shown = _lines(specs, *command)
        assert len(shown) == 1 and at in shown[0], (command, shown)


def test_a_server_tells_the_caller_and_its_log_where_in_the_spec_the_database_refuses(
    tmp_path, monkeypatch, caplog, postgres_url, postgres_cities
):
    """A server lets go of the specs' YAML positions once compiled: the spec file is read again for the place,
    and an edit since then (the SQL no longer the one that ran) gives no place rather than a wrong one."""
    from mcpgen.serve.project import open_project

    _, sql, mark = SERVER_SHAPES["on a later line"]
    specs = _project(tmp_path, f"connection: db\n{sql.format(t=postgres_cities)}", f"  db:\n    url: {postgres_url}\n")
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), mark)
    caplog.set_level("INFO", logger="mcpgen.calls.faults")
    project = open_project(Path("specs"), positions=False)
    try:
        [said] = project.registry.call_sync("broken").content
        assert said.text.startswith(f"specs/broken.yaml:{line}:{col}: the query failed: syntax error"), said.text
        assert f"tool broken: specs/broken.yaml:{line}:{col}: the query failed: syntax error" in caplog.text
        (specs / "broken.yaml").write_text((specs / "broken.yaml").read_text().replace("SELECT", "SELECT  "))
        [said] = project.registry.call_sync("broken").content
        assert said.text.startswith("The query failed: syntax error"), said.text
    finally:
        project.close()


def test_a_cast_postgresql_refuses_is_placed_at_its_value(tmp_path, monkeypatch, postgres_url, postgres_cities):
    sql = f"sql: |\n  SELECT name AS city,\n         CAST('many' AS integer) AS n\n  FROM {postgres_cities}\n"
    specs = _project(tmp_path, f"connection: db\ndialect: postgres\n{sql}", f"  db:\n    url: {postgres_url}\n")
    monkeypatch.chdir(tmp_path)
    line, col = _spot((specs / "broken.yaml").read_text(), "'many'")
    [shown] = _lines(specs, "call", "broken", "--specs", "specs")
    assert f'specs/broken.yaml:{line}:{col}: the query failed: invalid input syntax for type integer: "many"' in shown
