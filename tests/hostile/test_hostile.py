"""Hostile inputs (prompt injection, SQL tricks, oversized or malformed values), each test asserting the safe behaviour it names.

"Clear error": an isError result with one sentence naming the parameter or problem,
no traceback, no secret. "Nothing lost": the data is unchanged (rows counted after
the attempt) and the server serves the next good call.

The sections are numbered. Timeouts and outages on PostgreSQL (sections 16 and 17) live with
the SQLAlchemy engine's tests; here they run on DuckDB. Sections 20-22 run in-process against the ASGI app here, and
against a real `mcpgen serve --http` process in tests/http/test_app.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import httpx2
import jsonschema
import pytest
from hostile_specs import CITIES, PYTHON_TOOLS, SPECS, write_project

from mcpgen.answer.results import output_schema
from mcpgen.engines.protocol import Prepared
from mcpgen.errors import QueryError, SpecError
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    cwd = os.getcwd()
    specs = write_project(tmp_path_factory.mktemp("hostile"))
    (specs / "python_tools.py").write_text(PYTHON_TOOLS)
    # Not described at start (dup_columns would stop it): these tests hold the call-time defences.
    project = open_project(specs, columns=False)
    yield project
    project.close()
    os.chdir(cwd)


def call(project, tool, **arguments):
    return project.registry.call_sync(tool, arguments)


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def assert_clear_error(result, *needles):
    """isError, one short sentence, naming what it must, with no traceback."""
    assert result.is_error, text(result)
    message = text(result)
    assert "Traceback" not in message and 'File "' not in message
    assert len(message) < 400 and "\n" not in message.strip(), message
    for needle in needles:
        assert needle.lower() in message.lower(), f"{needle!r} not in {message!r}"
    return message


def city_count(project) -> int:
    result = call(project, "count_cities")
    assert not result.is_error
    return result.structured_content["table"][1][0]


def still_serving(project):
    result = call(project, "find_city", name="Oslo")
    assert not result.is_error and result.structured_content["table"][1][1] == "Oslo"


@pytest.fixture
def sql_runs(project, monkeypatch):
    """Count the queries that reach the engine."""
    engine = project.engines["default"]
    runs = []
    real = engine.run

    def counted(*args, **kwargs):
        runs.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "run", counted)
    return runs


# 1. SQL in a string parameter -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "'; DROP TABLE cities; --",
        "a' OR '1'='1",
        "Oslo'; DELETE FROM cities; SELECT '",
        "1); DROP TABLE cities; --",
        "$name",
        ":name",
    ],
)
def test_01_sql_in_a_string_is_a_value(project, value):
    result = call(project, "find_city", name=value)
    assert not result.is_error, text(result)
    assert "table" not in result.structured_content  # matched nothing: no header-only table
    assert city_count(project) == len(CITIES)
    still_serving(project)


def test_01_sql_in_an_array_and_a_source_url(project):
    result = call(project, "find_city", ids=[1, 2])
    assert [row[1] for row in result.structured_content["table"][1:]] == ["Oslo", "Bergen"]
    result = call(project, "url_source", q="x/../../admin?y=1#z' OR 1=1")
    assert not result.is_error
    assert result.structured_content["sources"] == [
        "https://example.org/search/x%2F..%2F..%2Fadmin%3Fy%3D1%23z%27%20OR%201%3D1"
    ]
    assert city_count(project) == len(CITIES)


# 2. Wrong types --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, needles",
    [
        ({"min_pop": "1; DROP TABLE cities"}, ["min_pop", "integer"]),
        ({"name": {"$ne": 1}}, ["name", "string"]),
        ({"ratio": float("nan")}, ["ratio"]),
        ({"ratio": float("inf")}, ["ratio"]),
        ({"min_pop": 2**70}, ["min_pop"]),
        ({"ratio": True}, ["ratio", "number"]),
        ({"min_pop": 1.5}, ["min_pop", "integer"]),
        ({"flag": "true"}, ["flag", "boolean"]),
        ({"ids": "1,2"}, ["ids", "array"]),
        ({"ids": [1, "2; DROP"]}, ["ids[1]", "integer"]),
    ],
)
def test_02_wrong_types_fail_before_sql(project, sql_runs, arguments, needles):
    assert_clear_error(call(project, "find_city", **arguments), *needles)
    assert sql_runs == []
    assert city_count(project) == len(CITIES)


def test_02_null_for_a_parameter_with_a_default_binds_the_default_never_null(project):
    nulls = call(project, "find_city", name=None, min_pop=None, ratio=None, kind=None, flag=None)
    assert not nulls.is_error, text(nulls)
    assert nulls.structured_content == call(project, "find_city").structured_content


# 3. Constraints --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, needles",
    [
        ({"min_pop": -1}, ["min_pop", "minimum"]),
        ({"min_pop": 100000001}, ["min_pop", "maximum"]),
        ({"kind": "huge"}, ["kind", "one of"]),
        ({"code": "no"}, ["code", "pattern"]),
        ({"code": "ABC"}, ["code", "length"]),
        ({"ids": [1, 2, 3, 4, 5, 6]}, ["ids", "maximum of 5"]),
        ({"ids": []}, ["ids", "minimum of 1"]),
    ],
)
def test_03_constraints_are_named(project, sql_runs, arguments, needles):
    assert_clear_error(call(project, "find_city", **arguments), *needles)
    assert sql_runs == []


# 4. Undeclared and missing arguments ----------------------------------------------------------


def test_04_unknown_argument_is_named(project, sql_runs):
    assert_clear_error(call(project, "find_city", nmae="Oslo"), "nmae")
    assert_clear_error(call(project, "count_cities", limit=1), "limit")
    assert sql_runs == []


def test_04_missing_required_is_named(project, sql_runs):
    assert_clear_error(call(project, "url_source"), "missing", "q")
    assert sql_runs == []


def test_04_defaults_apply_only_where_declared(project, sql_runs):
    result = call(project, "find_city")
    assert not result.is_error
    values = sql_runs[-1][1]
    assert values["min_pop"] == 0 and values["kind"] == "big" and values["flag"] is True
    assert values["name"] is None and values["code"] is None and values["ids"] is None  # no default: NULL
    assert len(result.structured_content["table"]) == len(CITIES) + 1


# 5. Huge, NUL, surrogates, invalid UTF-8 ------------------------------------------------------


@pytest.mark.parametrize(
    "value, needles",
    [
        ("x" * 10_000_000, ["name", "longer"]),
        ("Oslo\x00; DROP TABLE cities", ["name", "NUL"]),
        ("Oslo\ud800", ["name", "Unicode"]),
    ],
)
def test_05_huge_nul_and_lone_surrogate(project, sql_runs, value, needles):
    assert_clear_error(call(project, "find_city", name=value), *needles)
    assert sql_runs == []
    still_serving(project)


@pytest.mark.slow
def test_05_invalid_utf8_on_stdio_and_the_process_lives(tmp_path):
    specs = write_project(tmp_path, {"count_cities": SPECS["count_cities"]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def send(obj_or_bytes):
        data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode() + b"\n"
        proc.stdin.write(data)
        proc.stdin.flush()

    def receive(request_id):
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read().decode()
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert "result" in receive(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "count_cities\xff\xfe"}}\n')
        send(b"\xc3\x28 not json at all \xed\xa0\x80\n")
        send(
            b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "count_cities", '
            b'"arguments": {"x": "\\ud800"}}}\n'
        )
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "count_cities", "arguments": {}}})
        answer = receive(4)
        assert answer["result"]["isError"] is False
        assert answer["result"]["structuredContent"]["table"][1] == [len(CITIES)]
        assert proc.poll() is None
    finally:
        proc.stdin.close()
        proc.wait(10)


# 6. Row values that look like templates, instructions or images -------------------------------


def test_06_row_values_are_plain_text(project):
    result = call(project, "notes")
    prose = text(result)
    assert "{{7*7}}" in prose and "49" not in prose
    assert "Ignore previous instructions" in prose  # shown as data, and only as data
    assert "![logo](" not in prose and "! [logo](" in prose  # no live image link


# 7. Two statements and writes in specs ---------------------------------------------------------

WRITES = [
    "SELECT 1; DROP TABLE cities",
    "DROP TABLE cities; SELECT 1",
    "INSERT INTO cities VALUES (9, 'x', 1)",
    "UPDATE cities SET population = 0",
    "DELETE FROM cities",
    "CREATE TEMP TABLE x AS SELECT 1",
    "CREATE TABLE x (a INT)",
    "COPY cities TO 'out.csv'",
    "ATTACH 'x.db' AS x",
    "INSTALL httpfs",
    "LOAD httpfs",
    "PRAGMA version",
    "SET threads = 1",
    "CALL pragma_version()",
    "EXPORT DATABASE 'out'",
    "WITH gone AS (DELETE FROM cities RETURNING *) SELECT count(*) FROM gone",
    "SET VARIABLE x = 1",
    "SELECT 1 AS a INTO newtable",
    "DETACH memory",
    "USE memory",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "COMMIT; DROP TABLE cities",
]


@pytest.mark.parametrize("sql", WRITES)
def test_07_writes_are_rejected_with_file_and_line(tmp_path, sql):
    spec = {
        "bad": f"""
        description: A write in disguise.
        sources: [https://example.org/]
        content: x
        sql: "{sql}"
        """
    }
    specs = write_project(tmp_path, {**spec, "count_cities": SPECS["count_cities"]})
    loaded = load_project(specs)
    errors = [str(p) for p in loaded.errors]
    assert errors and all(e.startswith(f"{specs / 'bad.yaml'}:") for e in errors), errors
    assert any(":5:" in e for e in errors), errors  # the sql: line
    cwd = os.getcwd()
    try:
        with pytest.raises(SpecError):
            open_project(specs)  # serve refuses to start: nothing ran
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("sql", WRITES)
def test_07_the_engine_refuses_writes_even_unchecked(project, sql):
    engine = project.engines["default"]
    with pytest.raises(Exception):
        engine.prepare(sql)
    assert city_count(project) == len(CITIES)


# 8. DuckDB reaching outside the project -------------------------------------------------------

OUTSIDE = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_csv('https://example.org/x.csv')",
    "SELECT * FROM read_csv('../outside.csv')",
    "SELECT * FROM read_csv('data/link.csv')",
    "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "SET allowed_directories = ['/']",
    "ATTACH '/tmp/evil.duckdb' AS evil",
    "COPY cities TO '/tmp/mcpgen-evil.csv'",
    "INSTALL httpfs",
]


@pytest.mark.parametrize("sql", OUTSIDE)
def test_08_outside_access_refused_at_run_time(project, sql):
    root = Path.cwd()
    (root.parent / "outside.csv").write_text("a\n1\n")
    link = root / "data" / "link.csv"
    if not link.is_symlink():
        link.symlink_to(root.parent / "outside.csv")
    engine = project.engines["default"]
    with pytest.raises(QueryError) as caught:  # run as if it had slipped past every check
        engine.run(Prepared(sql, frozenset()), {}, 10, 5)
    assert "Traceback" not in str(caught.value)
    # the lock-down still holds afterwards
    with pytest.raises(QueryError):
        engine.run(Prepared("SELECT * FROM read_csv('/etc/passwd')", frozenset()), {}, 10, 5)
    assert not Path("/tmp/mcpgen-evil.csv").exists()
    still_serving(project)


# 9. Template escapes ---------------------------------------------------------------------------

ESCAPES = [
    "{{ ''.__class__.__mro__ }}",
    "{{ rows | attr('__class__') }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ (rows | attr('format'))('x') }}",
    "{{ joiner.__init__.__globals__.os }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ rows['__class__'] }}",
    "{{ namespace.__init__.__globals__ }}",
]


@pytest.mark.parametrize("template", ESCAPES)
def test_09_template_escapes_refused_by_validate(tmp_path, template):
    spec = {
        "escape": f"""
        description: An escape attempt.
        sql: SELECT 1 AS x
        sources: [https://example.org/]
        content: "{template}"
        """
    }
    loaded = load_project(write_project(tmp_path, spec))
    assert loaded.errors, f"validate accepted {template}"
    assert all(str(p).startswith(str(tmp_path / "specs" / "escape.yaml") + ":") for p in loaded.errors)


@pytest.mark.parametrize("template", ESCAPES)
def test_09_template_escapes_refused_by_the_sandbox(template):
    from jinja2.exceptions import SecurityError, UndefinedError

    from mcpgen.templates.render import PROSE

    with pytest.raises((SecurityError, UndefinedError)):
        PROSE.from_string(template).render(rows=[{"x": 1}])


# 10. Templates that would run forever or explode ---------------------------------------------


def test_10_huge_string_and_power_are_stopped():
    from mcpgen.errors import RenderError
    from mcpgen.templates.render import Template

    for source in [
        "{{ 'x' * 10**9 }}",
        "{{ [1] * 10**8 }}",
        "{{ 2 ** 100000 }}",
        "{{ 'x' * 100000 * 100000 }}",
        # one operation, no loop: each of these built a GB-sized value before the fix
        "{{ (9 ** 9999) ** 9999 > 1 }}",
        "{{ '%999999999s' % 'x' }}",
        "{{ 'x' | center(999999999) }}",
        "{{ 'x'.ljust(999999999) }}",
        "{{ '{:>999999999}'.format('x') }}",
        "{{ ('x' * 100000) | replace('', 'y' * 100000) }}",
        "{{ '%*s' | format(999999999, 'x') }}",
        "{% set ns = namespace(x=3) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
    ]:
        start = time.monotonic()
        with pytest.raises(RenderError):
            Template(source).render({})
        assert time.monotonic() - start < 2


def test_10_nested_loops_and_big_output_are_stopped(project):
    start = time.monotonic()
    assert_clear_error(call(project, "nested_loops"), "template", "longer")
    assert time.monotonic() - start < 3
    big = call(project, "big_output")  # prose past the cap is cut where it stops, and says so
    assert not big.is_error and len(text(big)) < 100_200
    assert text(big).endswith("(The text stops here: it reached the limit of 100,000 characters.)")
    still_serving(project)


# 11. Undefined names, rows[99] ----------------------------------------------------------------


def test_11_undefined_names_fail_validate(tmp_path):
    spec = {
        "undefined": """
        description: Uses a name nobody defined.
        sql: SELECT 1 AS x
        sources: [https://example.org/]
        content: "{{ nope }} {{ rows[0].x }}"
        """
    }
    problems = [str(p) for p in load_project(write_project(tmp_path, spec)).errors]
    assert problems and "nope" in problems[0] and "undefined.yaml:" in problems[0]


def test_11_past_the_end_of_rows_is_a_clear_error(project):
    assert_clear_error(call(project, "short_result"), "undefined")
    still_serving(project)


# 12. YAML ---------------------------------------------------------------------------------------

YAML_CASES = {
    "duplicate_key": (
        "description: a\ndescription: b\nsql: SELECT 1 AS x\nsources: [https://e.org/]\ncontent: x\n",
        ":2:",
        "duplicate",
    ),
    "alias_bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\ndescription: x\n",
        ":2:",
        "alias",
    ),
    "python_tag": (
        "description: !!python/object/apply:os.system ['touch /tmp/mcpgen-pwned']\nsql: SELECT 1\n",
        ":1:",
        "tag",
    ),
    "tabs": ("description: x\nparameters:\n\tn: {type: integer}\n", ":3:", "tab"),
    "bad_indent": ("description: x\n  sql: SELECT 1\n sources: [https://e.org/]\n", ":", ""),
}


@pytest.mark.parametrize("case", sorted(YAML_CASES))
def test_12_bad_yaml_is_a_clear_error_with_file_and_line(tmp_path, case):
    source, where, word = YAML_CASES[case]
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / f"{case}.yaml").write_text(source)
    problems = [str(p) for p in load_project(specs).errors]
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{specs / case}.yaml{where}"), problems
    assert word in problems[0].lower()
    assert not Path("/tmp/mcpgen-pwned").exists()


def test_12_a_50_mb_file_is_refused_unread(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    with open(specs / "huge.yaml", "w") as f:
        f.write("description: x\ncontent: |\n")
        line = "  " + "y" * 1022 + "\n"
        for _ in range(50 * 1024):
            f.write(line)
    start = time.monotonic()
    problems = [str(p) for p in load_project(specs).errors]
    assert time.monotonic() - start < 2
    assert len(problems) == 1 and problems[0].startswith(str(specs / "huge.yaml")) and "larger" in problems[0]


# 13. Names, charts, sources, DSN passwords ----------------------------------------------------


def test_13_duplicate_tool_names_across_files(tmp_path):
    specs = write_project(
        tmp_path, {"a": SPECS["count_cities"], "b": "name: a\n" + textwrap.dedent(SPECS["count_cities"])}
    )
    problems = [str(p) for p in load_project(specs).errors]
    assert any("b.yaml:1:" in p and "'a'" in p and "already used" in p for p in problems), problems


@pytest.mark.parametrize("name", ["1abc", "has space", "x" * 65, "semi;colon", "../up"])
def test_13_invalid_tool_names(tmp_path, name):
    specs = write_project(tmp_path, {"t": f"name: {json.dumps(name)}\n" + textwrap.dedent(SPECS["count_cities"])})
    problems = [str(p) for p in load_project(specs).errors]
    assert problems and "t.yaml:1:" in problems[0] and "name" in problems[0], problems


@pytest.mark.parametrize(
    "source",
    ["ftp://example.org/x", "example.org", "/relative/path", "javascript:alert(1)", "https://{{ q }}.evil.example/"],
)
def test_13_sources_must_be_absolute_http_urls(tmp_path, source):
    spec = textwrap.dedent(SPECS["url_source"]).replace('"https://example.org/search/{{ q }}"', json.dumps(source))
    problems = [str(p) for p in load_project(write_project(tmp_path, {"s": spec})).errors]
    assert problems and "s.yaml:" in problems[0] and "source" in problems[0].lower(), problems


def test_13_chart_column_the_query_does_not_return(project, tmp_path):
    spec = textwrap.dedent(SPECS["count_cities"]) + "chart: {type: bar, x: n, y: populaton}\n"
    specs = write_project(tmp_path, {"chart": spec})
    cwd = os.getcwd()
    try:
        with pytest.raises(SpecError) as info:  # described at start: serve refuses, naming the column
            open_project(specs)
        assert "chart.y names column 'populaton'" in info.value.problems[0].message
        p = open_project(specs, columns=False)  # and behind that, at call time: a clear error, never a bad chart
        try:
            assert_clear_error(p.registry.call_sync("chart", {}), "populaton")
        finally:
            p.close()
    finally:
        os.chdir(cwd)


def test_13_a_literal_password_is_never_echoed(tmp_path, capsys):
    config = (
        "connections:\n  default:\n    duckdb: ':memory:'\n"
        "  wh:\n    url: postgresql://reader:Sup3rS3cret@db.example:5432/x\n"
    )
    specs = write_project(tmp_path, {"count_cities": SPECS["count_cities"]}, config=config)
    from click.testing import CliRunner

    from mcpgen.cli import main

    result = CliRunner().invoke(main, ["validate", str(specs)])
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Sup3rS3cret" not in output
    loaded = load_project(specs)
    assert any("password" in str(p).lower() for p in loaded.problems), [str(p) for p in loaded.problems]
    assert all("Sup3rS3cret" not in str(p) for p in loaded.problems)


# 14. Awkward result types -----------------------------------------------------------------------


def test_14_awkward_types_give_a_valid_result(project):
    result = call(project, "odd_types")
    assert not result.is_error, text(result)
    payload = result.structured_content
    jsonschema.validate(payload, output_schema())
    json.dumps(payload, allow_nan=False)  # no NaN or Infinity on the wire
    header, row = payload["table"]
    cells = dict(zip(header, row))
    assert cells["nothing"] is None and cells["nan"] is None and cells["pinf"] is None and cells["ninf"] is None
    assert cells["huge"] == "170141183460469231731687303715884105727"
    assert cells["i64"] == "9223372036854775807"
    assert cells["dec"] == "123456789012345678.1234567890"
    assert cells["tz"].startswith("2024-01-01T") and cells["d"] == "2024-02-29"
    for chart in payload["charts"]:
        json.dumps(chart, allow_nan=False)


def test_14_duplicate_column_names_are_a_clear_error(project):
    assert_clear_error(call(project, "dup_columns"), "column a")


def test_14_duplicate_column_names_stop_serve_before_any_call(tmp_path):
    specs = write_project(tmp_path, {"dup_columns": SPECS["dup_columns"]})
    cwd = os.getcwd()
    try:
        with pytest.raises(SpecError) as info:
            open_project(specs)
    finally:
        os.chdir(cwd)
    assert [p.message for p in info.value.problems] == [
        "the query returns column a more than once; give each column its own name with AS"
    ]


def test_14_a_python_tool_breaking_the_schema_is_a_clear_error(project):
    assert_clear_error(call(project, "broken_output"), "schema")
    still_serving(project)


# 15. Ten million rows -----------------------------------------------------------------------------


def test_15_ten_million_rows_are_capped_and_memory_stays_flat(project):
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    call(project, "many_rows")  # warm up
    before = me.memory_info().rss
    start = time.monotonic()
    result = call(project, "many_rows")
    elapsed = time.monotonic() - start
    grown = me.memory_info().rss - before
    assert not result.is_error
    assert len(result.structured_content["table"]) == 51
    assert "cut at 50" in text(result) and "Only the first 50 rows" in text(result)
    assert grown < 100 * 1024 * 1024, f"RSS grew by {grown / 2**20:.0f} MiB"
    assert elapsed < 5


# 16. Timeouts -------------------------------------------------------------------------------------


def test_16_a_query_past_its_timeout_is_cancelled_and_the_connection_reusable(project):
    start = time.monotonic()
    message = assert_clear_error(call(project, "runaway"), "longer than 0.3 s")
    elapsed = time.monotonic() - start
    assert elapsed < 0.3 + 1.5, elapsed
    assert "cancel" in message.lower()
    still_serving(project)
    assert city_count(project) == len(CITIES)


# 17. The database away and back (DuckDB: a missing file at start; a file going away mid-run) ------


def test_17_missing_database_file_at_start(tmp_path):
    config = "connections:\n  default:\n    duckdb: data/gone.duckdb\n"
    specs = write_project(tmp_path, {"count_cities": SPECS["count_cities"]}, config=config)
    cwd = os.getcwd()
    try:
        with pytest.raises(SpecError) as caught:
            open_project(specs)
    finally:
        os.chdir(cwd)
    message = str(caught.value)
    assert "gone.duckdb" in message and "does not exist" in message and "Traceback" not in message
    # created later: the next start (or reload) succeeds
    import duckdb

    con = duckdb.connect(str(tmp_path / "data" / "gone.duckdb"))
    con.execute("CREATE TABLE cities AS SELECT 1 AS id")
    con.close()
    try:
        p = open_project(specs)
        assert p.registry.call_sync("count_cities", {}).structured_content["table"] == [["n"], [1]]
        p.close()
    finally:
        os.chdir(cwd)


def test_17_data_file_away_mid_run_and_back(project):
    path = Path.cwd() / "data" / "ext.csv"
    assert call(project, "ext_file").structured_content["table"][1] == [2]
    path.rename(path.with_suffix(".away"))
    try:
        message = assert_clear_error(call(project, "ext_file"), "query failed")
        # the file named as the spec wrote it, relative: no absolute path of the server's disk
        assert "data/ext.csv" in message and str(Path.cwd()) not in message
        still_serving(project)
    finally:
        path.with_suffix(".away").rename(path)
    assert call(project, "ext_file").structured_content["table"][1] == [2]  # no restart needed


# 18. Concurrency ---------------------------------------------------------------------------------


async def _timed(project, tool, arguments):
    start = time.monotonic()
    result = await project.registry.call(tool, arguments)
    return result, time.monotonic() - start


def _gather(project, calls):
    from mcpgen.serve.server import ToolServer

    async def main():
        ToolServer.raise_thread_limit()
        out = [None] * len(calls)

        async def one(i, tool, arguments):
            out[i] = await _timed(project, tool, arguments)

        async with anyio.create_task_group() as tg:
            for i, (tool, arguments) in enumerate(calls):
                tg.start_soon(one, i, tool, arguments)
        return out

    return anyio.run(main)


def test_18_cursors_on_one_connection_run_in_parallel(project):
    start = time.monotonic()
    results = _gather(project, [("slow", {"ms": 500})] * 3)
    assert all(not r.is_error for r, _ in results)
    assert time.monotonic() - start < 1.2  # 3 x 0.5 s in parallel, not 1.5 s in a row


def test_18_a_slow_query_does_not_hold_up_fast_ones(project):
    calls = [("slow", {"ms": 2000})] + [("find_city", {"name": n}) for _, n, _ in CITIES] * 12
    results = _gather(project, calls)
    (slow, slow_time), fast = results[0], results[1:]
    assert not slow.is_error and slow_time >= 2
    assert all(not r.is_error for r, _ in fast)
    assert max(t for _, t in fast) < 1.5, sorted(t for _, t in fast)[-5:]
    # no state shared between calls: every call got the city it asked for
    for (result, _), (_, arguments) in zip(fast, calls[1:]):
        assert result.structured_content["table"][1][1] == arguments["name"]


def test_18_past_the_bound_a_short_wait_then_a_clear_error(project):
    # max_concurrent is 3 and queue_timeout 400 ms in this project's mcpgen.yaml
    start = time.monotonic()
    results = _gather(project, [("slow", {"ms": 1500})] * 5)
    busy = [r for r, t in results if r.is_error]
    assert len(busy) == 2
    for result, took in results:
        if result.is_error:
            assert_clear_error(result, "busy", "3 queries")
            assert took < 1.2
    assert time.monotonic() - start < 2.5
    still_serving(project)


def test_18_callers_waiting_for_a_busy_connection_do_not_starve_other_tools(project):
    # 45 calls on one connection (3 run, 42 wait for a slot in worker threads) and one Python tool:
    # with anyio's default 40 threads the Python tool would queue behind the waiters.
    calls = [("slow", {"ms": 1000})] * 45 + [("broken_output", {})]
    results = _gather(project, calls)
    python_tool, took = results[-1]
    assert "schema" in text(python_tool) and took < 0.3, took


def test_18_fifty_at_once_all_answered(project):
    calls = [("find_city", {"name": CITIES[i % 4][1]}) for i in range(47)] + [("slow", {"ms": 300})] * 3
    results = _gather(project, calls)
    errors = [text(r) for r, _ in results if r.is_error]
    assert not errors, errors


# 19. An invalid edit while reloading -----------------------------------------------------------


def test_19_invalid_edit_keeps_the_last_good_tools(tmp_path, caplog):
    from mcpgen.serve.reload import Reloader
    from mcpgen.serve.server import ToolServer

    cwd = os.getcwd()
    specs = write_project(tmp_path, {"count_cities": SPECS["count_cities"]})
    p = open_project(specs)
    server = ToolServer(p.registry)
    reloader = Reloader(server, p, specs)
    try:
        (specs / "count_cities.yaml").write_text(
            "description: x\nsql: DROP TABLE cities\nsources: [https://e.org/]\ncontent: x\n"
        )
        with caplog.at_level("ERROR", logger="mcpgen"):
            assert anyio.run(reloader.reload) is False
        assert server.registry is p.registry
        assert not anyio.run(server.registry.call, "count_cities", {}).is_error
        assert f"{specs / 'count_cities.yaml'}:2:" in caplog.text
        (specs / "count_cities.yaml").write_text(textwrap.dedent(SPECS["count_cities"]))
        (specs / "notes.yaml").write_text(textwrap.dedent(SPECS["notes"]))
        assert anyio.run(reloader.reload) is True
        assert sorted(server.registry.names()) == ["count_cities", "notes"]
    finally:
        reloader.close()
        os.chdir(cwd)


# 6 (faults): an exception in a Python tool, a template error at run time --------------------------


def test_python_tool_exception_is_a_clear_error_without_secrets(project, caplog):
    message = assert_clear_error(call(project, "explode"), "explode", "RuntimeError")
    assert "hunter2" not in message
    still_serving(project)


# 20-22. HTTP, in process (tests/http/test_app.py does the same against a real server process) -------------

TOKEN = "t0k-" + "x" * 28


def _asgi(project, **options):
    from mcpgen.http.app import build_app
    from mcpgen.http.options import HTTPOptions
    from mcpgen.serve.server import ToolServer

    return build_app(ToolServer(project.registry), HTTPOptions(port=8000, **options))


def _post(make_app, body, headers=None):
    app = make_app()  # an app's lifespan runs once

    async def main():
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
                h = {
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                    "host": "127.0.0.1:8000",
                    **(headers or {}),
                }
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                return await client.post("/mcp", content=data, headers=h)

    return anyio.run(main)


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "find_city", "arguments": {}}}
MODERN = {"mcp-protocol-version": "2025-06-18"}


@pytest.mark.parametrize(
    "headers, status",
    [
        ({}, 401),
        ({"authorization": "Bearer wrong"}, 401),
        ({"authorization": f"Basic {TOKEN}"}, 401),
        ({"authorization": f"Bearer {TOKEN}", "host": "evil.example:8000"}, 421),
        ({"authorization": f"Bearer {TOKEN}", "host": "127.0.0.1:9999"}, 421),
        ({"authorization": f"Bearer {TOKEN}", "origin": "http://evil.example"}, 403),
        ({"authorization": f"Bearer {TOKEN}", "origin": "http://127.0.0.1:8000"}, 200),
        ({"authorization": f"Bearer {TOKEN}"}, 200),
    ],
)
def test_20_host_origin_and_token_checked_before_any_tool(project, sql_runs, headers, status):
    response = _post(lambda: _asgi(project, tokens=[TOKEN]), CALL, {**MODERN, **headers})
    assert response.status_code == status, response.text
    assert len(sql_runs) == (1 if status == 200 else 0)
    if status == 401:
        assert response.headers["www-authenticate"].lower().startswith("bearer")


def test_21_non_loopback_without_token_refuses(project):
    from mcpgen.http.options import HTTPOptions, HTTPSetupError, check_options

    for host in ("0.0.0.0", "::", "10.1.2.3", "example.org"):
        with pytest.raises(HTTPSetupError, match="--insecure-no-auth"):
            check_options(HTTPOptions(host=host))
        check_options(HTTPOptions(host=host, tokens=[TOKEN]))
        check_options(HTTPOptions(host=host, insecure_no_auth=True))
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_options(HTTPOptions(host=host))


@pytest.mark.parametrize(
    "body, status",
    [
        (b"{" + b" " * (2 * 1024 * 1024) + b"}", 413),
        (b"{not json", 400),
        (b'{"jsonrpc": "2.0", "id": 1}', 400),
        (b"[]", 400),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}).encode(), 200),
    ],
    ids=["over_cap", "not_json", "no_method", "empty_batch", "unknown_tool"],
)
def test_22_oversized_malformed_and_unknown_are_protocol_errors(project, body, status):
    app = lambda: _asgi(project)  # noqa: E731
    response = _post(app, body, MODERN)
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json()["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    assert _post(app, CALL, MODERN).status_code == 200  # and it goes on serving


@pytest.mark.parametrize("request_id", ['{"n": 1}', "1.5", "null", "true"], ids=["object", "fraction", "null", "bool"])
def test_22_a_request_whose_id_is_no_id_is_refused_not_taken_for_a_notification(project, request_id):
    """The SDK reads such a request as a notification and answers 202 with nothing: its client would wait."""
    app = lambda: _asgi(project)  # noqa: E731
    body = b'{"jsonrpc": "2.0", "id": %s, "method": "tools/list"}' % request_id.encode()
    response = _post(app, body, MODERN)
    assert response.status_code == 400, response.text
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Invalid Request: not one JSON-RPC 2.0 message (a batch, or a field missing or of the wrong type)",
        },
    }
    notification = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
    assert _post(app, notification, MODERN).status_code == 202  # a real notification is still accepted
    assert _post(app, CALL, MODERN).status_code == 200


# Logs: secrets never reach a log line, tracebacks included --------------------------------------


def test_log_lines_redact_secrets():
    import logging

    from mcpgen import logs

    try:
        raise RuntimeError("connect to postgresql+psycopg://reader:Sup3rS3cret@db:5432/x failed (password=hunter2)")
    except RuntimeError:
        record = logging.LogRecord(
            "mcpgen", logging.ERROR, __file__, 1, "tool %s raised with %s", ("t", "Bearer abc.def"), sys.exc_info()
        )
    assert logs.RedactingFilter().filter(record)
    for formatter in (logging.Formatter("%(message)s"), logs.JSONFormatter()):
        line = formatter.format(record)
        assert "Sup3rS3cret" not in line and "hunter2" not in line and "abc.def" not in line, line
        assert "reader:***@db" in line and "RuntimeError" in line
