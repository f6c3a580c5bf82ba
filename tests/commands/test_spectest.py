"""`mcpgen test`: spec tests run through the registry against real DuckDB."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen.cli import main
from mcpgen.commands.spectest import Outcome, check_expectations, run_tests, summary
from mcpgen.spec.models import Expect

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "specs"

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    init:
      - >-
        CREATE TABLE cities AS SELECT * FROM (VALUES
        ('Tokyo', 'JP', 37000000, DATE '1457-01-01', 12.5::DECIMAL(5,2)),
        ('Delhi', 'IN', 30000000, DATE '1052-01-01', 7.25::DECIMAL(5,2)),
        ('Osaka', 'JP', 19000000, NULL, 3.00::DECIMAL(5,2)))
        t(name, country_code, population, founded, score)
"""

SPEC = """\
description: The largest cities
parameters:
  n: {type: integer, description: How many, default: 2, minimum: 1, maximum: 3}
  country: {type: string, description: Code, required: false}
sql: |
  SELECT name AS city, country_code, population, founded, score FROM cities
  WHERE :country IS NULL OR country_code = :country
  ORDER BY population DESC LIMIT :n
sources: [https://example.org/]
content: "{% for r in rows %}{{ r.city }} has {{ r.population | thousands }} people. {% endfor %}"
empty: No city in {{ country }}.
table: {columns: [city, population], headers: {city: City}}
tests:
"""

TESTS = """\
  - name: two largest
    expect:
      rows:
        - {city: Tokyo, country_code: JP, population: 37000000, founded: "1457-01-01", score: 12.5}
        - {city: Delhi, country_code: IN, population: 30000000, founded: "1052-01-01", score: 7.25}
      content_contains: ["Tokyo has 37,000,000 people."]
  - args: {country: JP, n: 3}
    expect: {row_count: 2, min_rows: 1, first_row: {city: Tokyo}}
  - name: nobody in France
    args: {country: FR}
    expect: {row_count: 0, content_contains: [No city in FR.]}
  - name: n too big
    args: {n: 4}
    expect: {error_contains: ["n", "maximum"]}
  - name: WRONG row count
    expect: {row_count: 5}
  - name: WRONG first row
    expect: {first_row: {city: Delhi, founded: null}}
  - name: WRONG rows
    expect: {rows: [{city: Tokyo}]}
  - name: WRONG content
    expect: {content_contains: [Paris]}
  - name: WRONG error expected
    expect: {error_contains: nope}
  - name: WRONG unexpected error
    args: {n: 0}
    expect: {min_rows: 1}
  - name: WRONG error text
    args: {n: 0}
    expect: {error_contains: "maximum"}
"""


@pytest.fixture(autouse=True)
def _keep_cwd():
    cwd = os.getcwd()
    yield
    os.chdir(cwd)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "cities.yaml").write_text(SPEC + TESTS)
    (specs / "other.yaml").write_text(
        textwrap.dedent("""\
        description: Count
        sql: SELECT count(*) AS n FROM cities
        sources: [https://example.org/]
        content: "{{ rows[0].n }} cities"
        table: false
        tests:
          - name: three
            expect: {row_count: 1, first_row: {n: 3}, content_contains: [3 cities]}
        """)
    )
    return specs


def test_every_shipped_spec_test_passes():
    results = run_tests(SPECS)
    assert len(results) >= 27
    assert [r.line() for r in results if not r.passed] == []


def test_results_lines_and_summary(project):
    lines = [r.line() for r in run_tests(project)]
    assert lines[:4] == [
        "PASS cities[two largest]",
        "PASS cities[1]",
        "PASS cities[nobody in France]",
        "PASS cities[n too big]",
    ]
    assert lines[4:] == [
        "FAIL cities[WRONG row count]: expected 5 rows, got 2",
        "FAIL cities[WRONG first row]: first row: expected {city: 'Delhi', founded: None}, "
        "got {city: 'Tokyo', founded: '1457-01-01'}",
        "FAIL cities[WRONG rows]: expected 1 row, got 2; row 1: expected {city: 'Tokyo'}, got {city: 'Tokyo', "
        "country_code: 'JP', population: 37000000, founded: '1457-01-01', score: 12.5}",
        "FAIL cities[WRONG content]: the prose does not contain 'Paris'",
        "FAIL cities[WRONG error expected]: expected an error containing 'nope', but the call succeeded",
        "FAIL cities[WRONG unexpected error]: the call failed: Invalid argument 'n': 0 is less than the minimum of 1.",
        "FAIL cities[WRONG error text]: the error does not contain 'maximum' (it says: Invalid argument 'n': 0 is "
        "less than the minimum of 1.)",
        "PASS other[three]",
    ]


def test_cli_prints_a_line_per_test_then_the_summary_and_exits_1_on_failure(project):
    result = CliRunner().invoke(main, ["test", str(project)])
    lines = result.output.strip().splitlines()
    assert lines[-1] == "5 passed, 7 failed"
    assert sum(line.startswith(("PASS ", "FAIL ")) for line in lines) == 12
    assert result.exit_code == 1


def test_k_selects_by_tool_or_test_name(project):
    runner = CliRunner()
    by_tool = runner.invoke(main, ["test", str(project), "-k", "other"])
    assert by_tool.output.strip().splitlines() == ["PASS other[three]", "1 passed, 0 failed"]
    assert by_tool.exit_code == 0
    by_test = runner.invoke(main, ["test", str(project), "-k", "largest"])
    assert by_test.output.strip().splitlines() == ["PASS cities[two largest]", "1 passed, 0 failed"]
    nothing = runner.invoke(main, ["test", str(project), "-k", "zzz"])
    assert nothing.output.strip() == "no test ran: no tool or test name contains 'zzz'" and nothing.exit_code == 0


def test_cli_on_the_shipped_specs_exits_0():
    result = CliRunner().invoke(main, ["test", str(SPECS), "-k", "top_cities"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "3 passed, 0 failed"


def test_a_project_that_does_not_load_exits_2(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text("description: d\nsql: DROP TABLE t\nsources: [https://x.org/]\ncontent: x\n")
    result = CliRunner().invoke(main, ["test", str(specs)])
    assert result.exit_code == 2
    assert "bad.yaml" in result.output


def test_check_expectations_units():
    ok = Outcome(False, "Tokyo is big", [{"city": "Tokyo", "n": 1.0}])
    assert check_expectations(Expect(rows=[{"city": "Tokyo", "n": 1}]), ok) == []
    assert check_expectations(Expect(first_row={"n": True}), ok) == ["first row: expected {n: True}, got {n: 1.0}"]
    assert check_expectations(Expect(min_rows=2), ok) == ["expected at least 2 rows, got 1"]
    assert check_expectations(Expect(error_contains="x"), Outcome(True, "x is wrong", None)) == []
    assert check_expectations(Expect(row_count=1), Outcome(False, "hi", None)) == [
        "the result has no rows to check (no table)"
    ]
    assert summary([]) == "no test ran: no spec has tests:"
    assert summary([], "citys") == "no test ran: no tool or test name contains 'citys'"
