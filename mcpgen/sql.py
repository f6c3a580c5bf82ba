"""SQL checks and rewriting: `:name` placeholders, one read-only statement.

Placeholders are found with sqlglot's tokenizer, so `::int` casts, `':x'` in
strings and `-- :x` in comments are left alone.

>>> [p.name for p in find_placeholders("SELECT a::int, ':x' FROM t -- :y\\nWHERE b = :b")]
['b']
>>> rewrite("SELECT * FROM t WHERE id IN :ids AND n < :n", "$")
'SELECT * FROM t WHERE id IN (SELECT unnest($ids)) AND n < $n'
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from .errors import UnsafeSQL
from .text import first_line, line_col

# sqlglot dialect names by SQLAlchemy backend name; unknown backends parse as generic SQL.
DIALECTS = {
    "duckdb": "duckdb",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "sqlite": "sqlite",
    "mssql": "tsql",
    "oracle": "oracle",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "trino": "trino",
    "redshift": "redshift",
    "databricks": "databricks",
}

# Nodes that write, change state or reach outside the query, anywhere in the tree.
_WRITES = tuple(
    getattr(exp, n)
    for n in (
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "AlterColumn",
        "TruncateTable",
        "Command",
        "Copy",
        "Attach",
        "Detach",
        "Install",
        "Pragma",
        "Set",
        "Use",
        "Into",
        "Lock",
        "Transaction",
        "Commit",
        "Rollback",
        "Grant",
        "Revoke",
        "Analyze",
        "Export",
        "LoadData",
    )
    if hasattr(exp, n)
)
_READS = (exp.Query, exp.Values, exp.Pivot, exp.Table)
_WRITE_WORDS = {
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "CREATE",
    "DROP",
    "ALTER",
    "TRUNCATE",
    "COPY",
    "ATTACH",
    "DETACH",
    "INSTALL",
    "LOAD",
    "PRAGMA",
    "SET",
    "RESET",
    "CALL",
    "EXPORT",
    "IMPORT",
    "GRANT",
    "REVOKE",
    "VACUUM",
    "CHECKPOINT",
    "USE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "INTO",
    "EXECUTE",
    "PREPARE",
    "DEALLOCATE",
    "LOCK",
    "REPLACE",
    "UPSERT",
    "DO",
    "HANDLER",
    "RENAME",
    "COMMENT",
}


@dataclass(frozen=True)
class Placeholder:
    name: str
    start: int  # offset of the colon
    end: int  # offset just past the name
    line: int
    col: int
    after_in: bool  # written as `IN :name`


@lru_cache(maxsize=64)
def _tokens(sql: str, dialect: str | None):
    """Tokens of `sql`, shared by the read-only check and the placeholder scan (tokenizing is half of parsing)."""
    return tuple(sqlglot.Dialect.get_or_raise(dialect).tokenize(sql))


def _readable_tokens(sql: str, dialect: str | None):
    """`_tokens`, with sqlglot's failure as UnsafeSQL."""
    try:
        return _tokens(sql, dialect)
    except SqlglotError as exc:
        raise UnsafeSQL(f"the SQL cannot be read: {first_line(exc)}") from None


@lru_cache(maxsize=4096)
def find_placeholders(sql: str, dialect: str | None = "duckdb") -> tuple[Placeholder, ...]:
    """Every `:name` placeholder in order (a name may appear more than once)."""
    tokens = _readable_tokens(sql, dialect)
    found = []
    for i, tok in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        if tok.token_type != TokenType.COLON or nxt.start != tok.end + 1:
            continue
        if nxt.token_type == TokenType.STRING or sql[nxt.start] in "\"'`[":
            continue
        name = sql[nxt.start : nxt.end + 1]
        if not (name[:1].isalpha() or name[:1] == "_") or not name.replace("_", "").isalnum():
            continue
        after_in = i > 0 and tokens[i - 1].token_type == TokenType.IN
        line, col = line_col(sql, tok.start)
        found.append(Placeholder(name, tok.start, nxt.end + 1, line, col, after_in))
    return tuple(found)


def rewrite(sql: str, style: str, dialect: str | None = "duckdb") -> str:
    """Rewrite `:name` to the driver's style: "$" for DuckDB (arrays become a subquery),
    ":" to keep SQLAlchemy's `text()` form."""
    if style == ":":
        return sql
    out, last = [], 0
    for p in find_placeholders(sql, dialect):
        out.append(sql[last : p.start])
        out.append(f"(SELECT unnest(${p.name}))" if p.after_in else f"${p.name}")
        last = p.end
    out.append(sql[last:])
    return "".join(out)


@lru_cache(maxsize=4096)  # only passes are kept: loading checks a query, then its engine's prepare checks it again
def check_read_only(sql: str, dialect: str | None = "duckdb") -> None:
    """Raise UnsafeSQL unless `sql` is exactly one statement that only reads.

    >>> check_read_only("WITH gone AS (DELETE FROM t RETURNING *) SELECT count(*) FROM gone")
    Traceback (most recent call last):
    ...
    mcpgen.errors.UnsafeSQL: the query must only read, but it contains DELETE
    """
    try:
        tokens = list(_tokens(sql, dialect))
        if _plainly_reads(tokens):
            return
        statements = [s for s in sqlglot.Dialect.get_or_raise(dialect).parser().parse(tokens, sql) if s is not None]
    except SqlglotError:
        # sqlglot does not know every dialect's every corner: fall back to its tokens.
        return _check_tokens(sql, dialect)
    if len(statements) != 1:
        raise UnsafeSQL(f"the SQL must be exactly one statement, found {len(statements)}")
    tree = statements[0]
    for node in tree.walk():
        if isinstance(node, _WRITES):
            raise UnsafeSQL(f"the query must only read, but it contains {_describe(node)}")
    if not isinstance(tree, _READS):
        raise UnsafeSQL(
            f"the statement must be a query (SELECT, WITH ... SELECT, VALUES or TABLE), not {_describe(tree)}"
        )


# Every word that starts a writing statement or clause, and more: a query without any of
# them (not even inside a string or as a name) cannot contain a node of _WRITES.
_SUSPECT_WORDS = _WRITE_WORDS | {
    "FOR",
    "SHARE",
    "START",
    "ANALYZE",
    "FORCE",
    "RETURNING",
    "TRANSACTION",
    "ABORT",
    "SAVEPOINT",
    "RELEASE",
    "TRUNCATE",
    "DISCARD",
    "NOTIFY",
    "LISTEN",
    "REFRESH",
}
_QUERY_STARTS = {"SELECT", "WITH", "VALUES", "FROM", "("}


def _plainly_reads(tokens: list) -> bool:
    """True when the tokens alone prove one read-only query, so the full parse can be skipped:
    it starts like a query, has no semicolon but a final one, and no word in _SUSPECT_WORDS.
    Anything else gets the full parse (and its precise message)."""
    if not tokens or tokens[0].text.upper() not in _QUERY_STARTS:
        return False
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.SEMICOLON and i != len(tokens) - 1:
            return False
        text = tok.text.upper()
        if text in _SUSPECT_WORDS or (
            tok.token_type == TokenType.STRING and any(w in _SUSPECT_WORDS for w in text.replace("(", " ").split())
        ):
            return False
    return True


def _check_tokens(sql: str, dialect: str | None) -> None:
    tokens = _readable_tokens(sql, dialect)
    statements = 1 + sum(1 for i, t in enumerate(tokens) if t.token_type == TokenType.SEMICOLON and i < len(tokens) - 1)
    if statements != 1:
        raise UnsafeSQL(f"the SQL must be exactly one statement, found {statements}")
    if tokens and tokens[0].text.upper() not in ("SELECT", "WITH", "VALUES", "TABLE", "FROM", "(", "PIVOT", "UNPIVOT"):
        raise UnsafeSQL(
            f"the statement must be a query (SELECT, WITH ... SELECT, VALUES or TABLE), not {tokens[0].text.upper()}"
        )
    for tok in tokens:
        word = tok.text.upper()
        if word in _WRITE_WORDS and tok.token_type not in (TokenType.STRING, TokenType.IDENTIFIER, TokenType.VAR):
            raise UnsafeSQL(
                f"the query must only read, but it contains {word} "
                f"(line {tok.line}, column {tok.col - len(tok.text) + 1})",
                tok.line,
                tok.col - len(tok.text) + 1,
            )


def _describe(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Into):
        return "SELECT ... INTO"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE/SHARE"
    return node.key.upper().replace("TRUNCATETABLE", "TRUNCATE")


logging.getLogger("sqlglot").setLevel(logging.ERROR)
