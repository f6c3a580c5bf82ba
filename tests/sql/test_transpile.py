"""Specs written in one SQL dialect, run on a connection of another: translated once at load.

The shipped specs on every engine are in tests/portable/test_portable_specs.py (and test_spark.py)."""

from __future__ import annotations

import os
import sqlite3
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen.cli import main
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project
from mcpgen.sql.statements import find_placeholders
from mcpgen.sql.transpile import Untranslatable, transpile

TARGETS = ["postgres", "mysql", "sqlite", "spark"]


@pytest.fixture(autouse=True)
def _keep_cwd():
    cwd = os.getcwd()
    yield
    os.chdir(cwd)


@pytest.mark.parametrize("target", TARGETS)
def test_placeholders_stay_bound_values(target):
    """sqlglot writes a placeholder `%(x)s` for PostgreSQL; mcpgen keeps `:x` (bound by the engine)."""
    sql = "SELECT a FROM t WHERE b = :b AND c IN :codes AND ':x' <> d -- :y\nORDER BY a LIMIT :n"
    out = transpile(sql, "duckdb", target)
    found = [(p.name, p.after_in) for p in find_placeholders(out, target)]
    assert sorted(found) == [("b", False), ("codes", True), ("n", False)]
    assert "':x'" in out and "%(" not in out


@pytest.mark.parametrize(
    ("target", "spelling"),
    [
        ("postgres", "MAKE_DATE(CAST(y AS INT), CAST(m AS INT), CAST(d AS INT))"),
        ("mysql", "STR_TO_DATE(CONCAT_WS('-', y, m, d), '%Y-%c-%e')"),
        ("sqlite", "DATE(PRINTF('%04d-%02d-%02d', y, m, d))"),
        ("spark", "MAKE_DATE(y, m, d)"),
    ],
)
def test_each_dialect_gets_its_own_spelling(target, spelling):
    assert spelling in transpile("SELECT make_date(y, m, d) AS day FROM t", "duckdb", target)


def test_same_dialect_is_left_as_written():
    sql = "select  x::int  from t -- as written\n"
    assert transpile(sql, "duckdb", "duckdb") is sql


def test_untranslatable_function_has_its_place():
    sql = "SELECT a,\n       my_udf(b) AS c\nFROM t"
    with pytest.raises(Untranslatable) as caught:
        transpile(sql, "duckdb", "postgres")
    assert "my_udf() is not a function sqlglot knows in duckdb" in str(caught.value)
    assert (caught.value.line, caught.value.col) == (2, 8)


def _project(tmp_path: Path, config: str, specs: dict[str, str]) -> Path:
    (tmp_path / "mcpgen.yaml").write_text(textwrap.dedent(config))
    folder = tmp_path / "specs"
    folder.mkdir()
    for name, sql in specs.items():
        body = textwrap.indent(textwrap.dedent(sql).strip(), "  ")
        (folder / f"{name}.yaml").write_text(
            f"description: d\nsources: [https://example.org/]\ncontent: '{{{{ row_count }}}}'\nsql: |\n{body}\n"
        )
    return folder


def _sqlite(tmp_path: Path) -> str:
    con = sqlite3.connect(tmp_path / "t.db")
    con.execute("CREATE TABLE t (y INTEGER, m INTEGER, d INTEGER)")
    con.execute("INSERT INTO t VALUES (2013, 2, 3)")
    con.commit()
    con.close()
    return "connections:\n  default:\n    url: sqlite:///t.db\n"


def test_validate_reports_an_untranslatable_spec_with_file_and_line(tmp_path):
    specs = _project(tmp_path, _sqlite(tmp_path), {"odd": "SELECT y,\n  list_sort_desc(y) AS s\nFROM t"})
    problems = load_project(specs).errors
    assert len(problems) == 1
    # at the function's name in the file: the block's two spaces of indentation counted
    assert str(problems[0]).startswith(f"{specs / 'odd.yaml'}:6:5: list_sort_desc() is not a function")


def test_a_translated_spec_runs(tmp_path):
    specs = _project(
        tmp_path, _sqlite(tmp_path), {"days": "SELECT strftime(make_date(y, m, d), '%d/%m/%Y') AS day FROM t"}
    )
    project = open_project(specs)
    try:
        result = project.registry.call_sync("days", {})
        assert result.structured_content["table"] == [["day"], ["03/02/2013"]]
    finally:
        project.close()


def test_a_spec_may_say_its_dialect(tmp_path):
    """`dialect: sqlite` on a SQLite connection: nothing to translate, SQLite's own functions work."""
    specs = _project(tmp_path, _sqlite(tmp_path), {"own": "SELECT printf('%d-%d', y, m) AS ym FROM t"})
    path = specs / "own.yaml"
    path.write_text("dialect: sqlite\n" + path.read_text())
    loaded = load_project(specs)
    assert not loaded.errors
    assert loaded.specs[0].sql == "SELECT printf('%d-%d', y, m) AS ym FROM t\n"


def test_the_project_may_say_its_dialect(tmp_path):
    config = _sqlite(tmp_path) + "dialect: postgres\n"
    specs = _project(tmp_path, config, {"pg": "SELECT y::text || '-' || m AS ym FROM t"})
    loaded = load_project(specs)
    assert not loaded.errors
    assert "CAST(y AS TEXT)" in loaded.specs[0].sql


def test_an_unknown_dialect_is_one_sentence(tmp_path):
    specs = _project(tmp_path, "dialect: postgress\n", {"a": "SELECT 1 AS x"})
    (message,) = [str(p) for p in load_project(specs).errors]
    assert "mcpgen.yaml:1:1: dialect: unknown SQL dialect 'postgress'; write e.g. duckdb, postgres" in message


def test_validate_show_sql_prints_each_statement(tmp_path):
    specs = _project(tmp_path, _sqlite(tmp_path), {"days": "SELECT make_date(y, m, d) AS day FROM t WHERE y = :y"})
    path = specs / "days.yaml"
    path.write_text(path.read_text() + "parameters:\n  y: {type: integer, description: year}\n")
    result = CliRunner().invoke(main, ["validate", str(specs), "--show-sql"])
    assert result.exit_code == 0, result.output
    assert "-- days (days.yaml): connection 'default', sqlite, translated from duckdb" in result.output
    assert "DATE(PRINTF('%04d-%02d-%02d', y, m, d)) AS day" in result.output
    assert "y = :y" in result.output
