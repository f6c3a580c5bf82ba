"""Hostile: SQL that the checks would read one way and the server another (real MariaDB and
PostgreSQL). Each text below, run straight on the server, really reads a server file; mcpgen
refuses it in `validate` (file:line:col) and in the engine's own check. The shapes the servers
need not show: tests/sql/test_lexing.py."""

from __future__ import annotations

import textwrap

import pytest
import services

from mcpgen.errors import UnsafeSQL
from mcpgen.load.project import load_project
from mcpgen.sql.statements import check_read_only

HOSTNAME = "0x2f6574632f686f73746e616d65"  # '/etc/hostname', written without a quote

# (text, the session's sql_mode on the server): the server runs LOAD_FILE, sqlglot sees a comment or a string.
MARIADB = [
    (f"SELECT 1 --{space}, LOAD_FILE({HOSTNAME}) AS f\nFROM (SELECT 1 AS `{space}`) AS t", None)
    for space in ("\u00a0", "\u0085", "\u2003", "\u3000")
] + [
    (f"SELECT 'a\\' AS s, LOAD_FILE({HOSTNAME}) AS f -- '", "NO_BACKSLASH_ESCAPES"),
    (f'SELECT "a\\" AS s, LOAD_FILE({HOSTNAME}) AS f -- "', "NO_BACKSLASH_ESCAPES"),
]
# (text, settings): the server runs pg_read_file, sqlglot sees it inside a string.
POSTGRES = [
    ("SELECT 'a\\' AS s, ' , pg_read_file($$/etc/hostname$$) AS f -- '", "SET standard_conforming_strings = off"),
    ("SELECT 'a\\' AS s, ' , pg_read_file($$/etc/passwd$$, 0, 8) AS f -- '", "SET standard_conforming_strings = off"),
]


def _project(tmp_path, url: str, dialect: str, sql: str):
    (tmp_path / "mcpgen.yaml").write_text(f"dialect: {dialect}\nconnections:\n  default:\n    url: {url}\n")
    specs = tmp_path / "specs"
    specs.mkdir()
    body = textwrap.indent(sql, "  ")
    (specs / "tool.yaml").write_text(
        f"description: A tool.\nsql: |\n{body}\nsources: [https://example.org/]\ncontent: x\n", encoding="utf-8"
    )
    return load_project(specs)


@pytest.mark.parametrize("sql,mode", MARIADB)
def test_mariadb_texts_that_read_a_server_file_are_refused(mariadb_url, tmp_path, sql, mode):
    with services.connect("mariadb") as con, con.cursor() as cur:
        if mode:
            cur.execute("SET SESSION sql_mode = %s", [mode])
        cur.execute(sql)
        row = cur.fetchone()
    assert row[-1], f"the server did not read the file: {row}"  # the harm is real
    with pytest.raises(UnsafeSQL):
        check_read_only(sql, "mysql")
    errors = _project(tmp_path, "mariadb+pymysql://u@h/db", "mysql", sql).errors
    assert errors and errors[0].path.endswith("tool.yaml") and errors[0].line, errors


@pytest.mark.parametrize("sql,setting", POSTGRES)
def test_postgres_texts_that_read_a_server_file_are_refused(postgres_url, tmp_path, sql, setting):
    with services.connect("postgresql") as con:
        con.execute(setting)
        row = con.execute(sql).fetchone()
    assert row[-1], f"the server did not read the file: {row}"
    with pytest.raises(UnsafeSQL, match="backslashes"):
        check_read_only(sql, "postgres")
    errors = _project(tmp_path, "postgresql+psycopg://u@h/db", "postgres", sql).errors
    assert errors and "backslashes" in str(errors[0]) and errors[0].line == 3, errors


def test_the_same_texts_with_plain_spaces_and_doubled_quotes_pass(tmp_path):
    """What the refusals ask for is accepted: ASCII spaces after --, quotes doubled."""
    for sql in ("SELECT 1 -- , LOAD_FILE(x)\nFROM t", "SELECT 'a''' AS s, 1 AS f -- '", 'SELECT "a""" AS s'):
        check_read_only(sql, "mysql")
    check_read_only("SELECT 'a\\' AS s, 1 AS f -- ", "duckdb")  # no setting makes DuckDB read backslashes there
