"""Describing a spec's query on its engine, and the columns a spec names that it does not return."""

import pytest

from mcpgen.engines.factory import create_engine
from mcpgen.load.columns import check_spec_live, checked_by_default, describe, duplicate_columns
from mcpgen.load.project import load_project
from mcpgen.spec.config import DuckDBConnection, SparkConnection, URLConnection

CONFIG = """
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE cities AS SELECT * FROM (VALUES ('Oslo', 709000), ('Bergen', 285000)) t(city, population)
"""

SPEC = """\
description: Cities
parameters:
  kind: {type: string, description: k, enum: [big, small], required: false}
sql: SELECT city, population, :kind AS kind FROM cities
sources: [https://example.org/]
content: "{% for r in rows %}{{ r.cty }}{% endfor %}"
table: {columns: [city, country], headers: {pop: Population}}
chart: {type: bar, x: city, y: populaton}
"""


@pytest.fixture
def loaded(tmp_path, monkeypatch):
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "cities.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    project = load_project(tmp_path / "specs")
    engine = create_engine("default", project.config.connections["default"], tmp_path)
    yield project.specs[0], engine
    engine.close()


def test_describe_gives_columns_and_types_without_running_the_query(loaded):
    spec, engine = loaded
    assert describe(engine, spec) == [("city", "VARCHAR"), ("population", "INTEGER"), ("kind", "VARCHAR")]


def test_every_column_the_spec_names_and_the_query_does_not_return(loaded):
    spec, engine = loaded
    have = "(the query returns city, population, kind)"
    assert [(p.line, p.col, p.message) for p in check_spec_live(spec, engine)] == [
        (
            8,
            32,
            f"chart.y names column 'populaton', which the query does not return {have}; did you mean 'population'?",
        ),
        (7, 25, f"table.columns names column 'country', which the query does not return {have}"),
        (7, 45, f"table.headers labels column 'pop', which the query does not return {have}"),
        (
            6,
            35,
            f"content: the template reads column 'cty' of a row, which the query does not return {have}; did you mean 'city'?",
        ),
    ]


def test_a_query_that_does_not_run_is_one_problem_at_the_sql(loaded):
    spec, engine = loaded
    spec.sql = "SELECT nope FROM cities"
    ((line, message),) = [(p.line, p.message) for p in check_spec_live(spec, engine)]
    assert line == 4 and message.startswith("the query does not run on connection 'default': Binder Error")


def test_the_duplicate_column_rule_has_one_wording():
    assert duplicate_columns(["a", "b", "a", "b", "c"]) == (
        "the query returns column a, b more than once; give each column its own name with AS"
    )
    assert duplicate_columns([]) is None


def test_only_duckdb_connections_are_described_by_default():
    assert checked_by_default(DuckDBConnection()) is True
    assert checked_by_default(URLConnection(url="sqlite://")) is False
    assert checked_by_default(SparkConnection(spark="sc://127.0.0.1:15002")) is False


def test_an_integer_parameter_is_described_with_its_default_as_mariadb_takes_no_limit_null(
    tmp_path, monkeypatch, mariadb_url, mariadb_cities
):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "top.yaml").write_text(
        "description: Top\nparameters:\n  top_n: {type: integer, description: n, default: 5}\n"
        f"sql: SELECT name FROM {mariadb_cities} ORDER BY population DESC, name LIMIT :top_n\n"
        "sources: [https://example.org/]\ncontent: x\n"
    )
    monkeypatch.chdir(tmp_path)
    project = load_project(tmp_path / "specs")
    engine = create_engine("default", URLConnection(url=mariadb_url), tmp_path)
    try:
        assert [name for name, _ in describe(engine, project.specs[0])] == ["name"]
    finally:
        engine.close()
