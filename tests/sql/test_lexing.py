"""The SQL checks lex no more permissively than each engine: where an engine may read comments,
strings, quoted names or statement boundaries differently from sqlglot, the text is refused.
Real servers showing the harm of these shapes: tests/hostile/test_lexing.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mcpgen.errors import UnsafeSQL
from mcpgen.sql.lexing import check_lexing
from mcpgen.sql.statements import check_read_only

REPO = Path(__file__).resolve().parents[2]
H = "0x2f6574632f686f73746e616d65"  # '/etc/hostname' without a quote

REFUSED = [
    # Characters other than ASCII outside strings and quoted names, on every engine.
    ("mysql", f"SELECT 1 --\u00a0, LOAD_FILE({H})", "U+00A0 (NO-BREAK SPACE) at line 1, column 12"),
    ("mysql", f"SELECT 1 --\u0085, LOAD_FILE({H})", "U+0085 at line 1, column 12"),
    ("mysql", f"SELECT 1 --\u2003, LOAD_FILE({H})", "U+2003 (EM SPACE)"),
    ("mysql", f"SELECT 1 --\u3000, LOAD_FILE({H})", "U+3000 (IDEOGRAPHIC SPACE)"),
    ("mysql", "SELECT 1 #\u2028\n, 2", "U+2028 (LINE SEPARATOR)"),
    ("postgres", "SELECT 1 -- \u2028, pg_read_file('x')", "U+2028"),
    ("postgres", "SELECT caf\u00e9 FROM t", "U+00E9 (LATIN SMALL LETTER E WITH ACUTE) at line 1, column 11"),
    ("duckdb", "SELECT 1 \u00a0+ 2", "U+00A0"),
    ("duckdb", "SELECT 1 /* \u00a0 */", "U+00A0"),
    ("sqlite", "SELECT 1\u200b+ 2", "U+200B (ZERO WIDTH SPACE)"),
    ("spark", "SELECT 1 -- \ufeff\n", "U+FEFF"),
    (None, "SELECT \u00a01", "U+00A0"),
    # Control characters and a carriage return that ends no line.
    ("mysql", "SELECT 1 --\x0b, 2", "control character U+000B at line 1, column 12"),
    ("postgres", "SELECT 1\x0c+1", "control character U+000C"),
    ("duckdb", "SELECT 1 -- \x00\n", "control character U+0000"),
    ("postgres", "SELECT 1 -- x\r, pg_read_file('x')\n", "carriage return without a line feed at line 1, column 14"),
    ("mysql", "SELECT 1 -- x\r, 2", "carriage return"),
    # A string whose end depends on whether backslashes escape (a server setting).
    ("mysql", f"SELECT 'a\\' AS s, LOAD_FILE({H}) AS f -- '", "backslashes escape quotes"),
    ("mysql", f'SELECT "a\\" AS s, LOAD_FILE({H}) AS f -- "', "backslashes escape quotes"),
    ("postgres", "SELECT 'a\\' AS s, ' , pg_read_file($$/etc/hostname$$) AS f -- '", "line 1, column 8"),
    ("spark", "SELECT 'it\\'s' FROM t", "backslashes escape quotes"),
    (None, "SELECT 'a\\' , 2 -- '", "backslashes escape quotes"),
    # Comments inside comments (nested on PostgreSQL, DuckDB and Spark, not on MariaDB and SQLite).
    ("mysql", "SELECT 1 /* a /* b */ , 2", "comment inside a comment at line 1, column 15"),
    ("postgres", "SELECT 1 /* a /* b */ , 2 */ , 3", "comment inside a comment"),
    ("duckdb", "SELECT 1 /* /* */ */", "comment inside a comment"),
    ("sqlite", "SELECT 1 /* /* */", "comment inside a comment"),
    ("spark", "SELECT 1 /* /* */ */", "comment inside a comment"),
    # A -- comment ending in a backslash: Spark continues it on the next line.
    ("spark", "SELECT 1 AS a -- x\\\n, 2 AS b", "ending in a backslash at line 1, column 15"),
    ("duckdb", "SELECT 1 -- x\\\r\n, 2", "ending in a backslash"),
    # Unterminated texts.
    ("postgres", "SELECT $a$ x $b$", None),
    ("sqlite", "SELECT 1 /* never", None),  # SQLite runs it; sqlglot cannot read it
    ("mysql", "SELECT `a FROM t", None),
    # Structure sqlglot reads differently from the engine.
    ("duckdb", "SELECT `a` FROM t", "read differently to the checks and to DuckDB at line 1, column 8"),
]


@pytest.mark.parametrize("dialect,sql,words", REFUSED)
def test_what_engines_may_read_differently_is_refused(dialect, sql, words):
    with pytest.raises(UnsafeSQL) as info:
        check_read_only(sql, dialect)
    message = str(info.value)
    assert words is None or words in message, message
    assert "\n" not in message and "Traceback" not in message
    if words and "line" in words:
        assert info.value.line == 1 and info.value.col


ACCEPTED = [
    ("mysql", "SELECT 1 -- a comment\n, 2 # another\n"),
    ("mysql", "SELECT 1 --\tcomment\n"),
    ("mysql", "SELECT 1 --"),
    ("mysql", "SELECT 'it''s', \"q\", `c`, X'41', _utf8mb4'x', N'y', b'1' FROM t"),
    ("mysql", "SELECT 'a\\\\b', 'naïve' FROM t /* c */"),
    ("mysql", "SELECT 1 --x"),  # 1 - (-x) to MariaDB and to sqlglot alike
    ("postgres", "SELECT $$a'b$$, $t$x$t$, E'\\n', U&'d\\0061t', a$b$ FROM t -- c\r\n"),
    ("postgres", "SELECT X'41', B'1', N'y', 'a''b', \"Straße\" FROM t WHERE x::int = :x"),
    ("postgres", "SELECT 1 # 2"),  # XOR to both
    ("postgres", "SELECT E'it\\'s'"),  # in E'' a backslash always escapes, whatever the settings
    ("duckdb", "SELECT 'café', \"naïve\", 'C:\\temp' FROM t WHERE x = :x::int"),
    ("duckdb", "SELECT e'a\\'b', $$x$$, 1;"),
    ("sqlite", "SELECT [a], `b`, \"c\", 'C:\\' FROM t"),
    ("spark", "SELECT \"it's\", 'a\\\\b', `a``b` FROM t"),
    ("spark", "SELECT 'it''s' FROM t"),  # two strings to Spark and to sqlglot alike
    (None, "SELECT 'x', \"y\" FROM t -- c\n"),
]


@pytest.mark.parametrize("dialect,sql", ACCEPTED)
def test_ordinary_sql_passes(dialect, sql):
    check_lexing(sql, dialect)
    check_read_only(sql, dialect)


def _project_sql() -> list[tuple[str, str]]:
    """The SQL of every shipped spec and of every spec file in the tests' projects."""
    found = []
    for path in sorted([*REPO.glob("specs/*.yaml"), *REPO.glob("tests/**/*.yaml")]):
        if ".artifacts" in path.parts or "node_modules" in path.parts:
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and isinstance(data.get("sql"), str):
            found.append((str(path.relative_to(REPO)), data["sql"]))
    return found


def test_every_shipped_and_test_spec_lexes_alike_on_every_engine():
    found = _project_sql()
    assert len([p for p, _ in found if p.startswith("specs/")]) >= 9
    for path, sql in found:
        for dialect in ("duckdb", "postgres", "mysql", "sqlite", "spark"):
            try:
                check_lexing(sql, dialect)
            except UnsafeSQL as exc:
                assert "read differently" in str(exc) or "backslash" in str(exc), f"{path} ({dialect}): {exc}"
        check_lexing(sql, "duckdb")  # their own dialect: nothing at all


def test_the_refusal_names_file_line_and_column(tmp_path):
    from mcpgen.load.project import load_project

    (tmp_path / "mcpgen.yaml").write_text(
        "dialect: mysql\nconnections:\n  default:\n    url: mariadb+pymysql://u@h/db\n"
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "tool.yaml").write_text(
        f"description: A tool.\nsql: |\n  SELECT 1\n    --\u00a0, LOAD_FILE({H})\nsources: [https://example.org/]\ncontent: x\n",
        encoding="utf-8",
    )
    errors = load_project(tmp_path / "specs").errors
    assert len(errors) == 1
    text = str(errors[0])
    assert "tool.yaml:4:7" in text and "U+00A0 (NO-BREAK SPACE)" in text, text
