"""A spec's query counted, not run for its rows: the SQL that `confirm: {when_rows_over: N}` runs to
decide whether to ask the person (mcpgen.answer.compile). It counts the rows the query's result would
have, stopping after `:mcpgen_count_limit` (N + 1): it is the tool's own query, so it reads what the
call would read, under the same read-only checks, connection, identity and timeout, and a plan that
streams stops early.

>>> print(bounded_count("SELECT a FROM t ORDER BY a;", "duckdb"))
SELECT count(*) AS mcpgen_rows FROM (SELECT 1 AS mcpgen_one FROM (
SELECT a FROM t ORDER BY a
) AS mcpgen_counted LIMIT :mcpgen_count_limit) AS mcpgen_bounded
"""

from __future__ import annotations

from sqlglot.tokens import TokenType

from .statements import tokenize

__all__ = ["LIMIT", "bounded_count"]

LIMIT = "mcpgen_count_limit"  # bound by the count query: the threshold plus one


def bounded_count(sql: str, dialect: str | None) -> str:
    """`sql` (one SELECT, checked) as a count of its result rows, at most :mcpgen_count_limit. The query
    sits on lines of its own, so a trailing `-- comment` cannot swallow the closing parenthesis."""
    tokens = tokenize(sql, dialect)
    if tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        sql = sql[: tokens[-1].start]
    inner = sql.rstrip()
    return (
        f"SELECT count(*) AS mcpgen_rows FROM (SELECT 1 AS mcpgen_one FROM (\n{inner}\n) AS mcpgen_counted "
        f"LIMIT :{LIMIT}) AS mcpgen_bounded"
    )
