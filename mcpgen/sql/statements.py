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
import re
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from ..errors import UnsafeSQL
from ..text import first_line, line_col
from .lexing import check_lexing

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


# Functions a SELECT may call that change the session or the server, read the server's files,
# or run SQL given as text, by sqlglot dialect: why each is refused. A name ending in "*" is a prefix.
_SETTINGS = "changes a setting of the session"
_LOCKS = "takes a lock that outlives the query"
_SERVER_FILES = "reads files on the database server"
_SEQUENCES = "advances a sequence"
_TEXT_SQL = "runs SQL given as text"
_REPLICATION = "changes replication slots or origins"
_SIDE_EFFECTS: dict[str, dict[str, str]] = {
    "postgres": {
        "set_config": _SETTINGS,
        "lo_*": "creates, changes or reads large objects",
        "lowrite": "changes large objects",
        "loread": "reads large objects",
        "pg_advisory_*": _LOCKS,
        "pg_try_advisory_*": _LOCKS,
        "pg_read_file": _SERVER_FILES,
        "pg_read_binary_file": _SERVER_FILES,
        "pg_stat_file": _SERVER_FILES,
        "pg_ls_*": _SERVER_FILES,
        "nextval": _SEQUENCES,
        "setval": _SEQUENCES,
        "dblink*": "opens a connection to another database",
        "query_to_xml*": _TEXT_SQL,
        "cursor_to_xml*": _TEXT_SQL,
        "ts_stat": _TEXT_SQL,
        "pg_notify": "sends a notification",
        "pg_cancel_backend": "stops other sessions",
        "pg_terminate_backend": "stops other sessions",
        "pg_reload_conf": "changes the server",
        "pg_rotate_logfile": "changes the server",
        "pg_switch_wal": "changes the server",
        "pg_logical_emit_message": "writes to the server's log",
        "pg_create_*": "creates replication slots or restore points that outlive the call",
        "pg_drop_replication_slot": _REPLICATION,
        "pg_copy_*": _REPLICATION,
        "pg_replication_*": _REPLICATION,
        "pg_backup_*": "puts the server in or out of backup mode",
        "pg_start_backup": "puts the server in backup mode",
        "pg_stop_backup": "takes the server out of backup mode",
        "pg_promote": "changes the server",
        "pg_wal_replay_*": "changes the server",
        "pg_stat_reset*": "changes the server's statistics",
        "pg_file_*": "writes files on the database server",
        "pg_logdir_ls": _SERVER_FILES,
        "pg_log_backend_memory_contexts": "writes to the server's log",
        "pg_import_system_collations": "changes the catalogue",
        "brin_summarize_*": "changes an index",
        "brin_desummarize_range": "changes an index",
        "gin_clean_pending_list": "changes an index",
    },
    "mysql": {
        "get_lock": _LOCKS,
        "release_lock": _LOCKS,
        "release_all_locks": _LOCKS,
        "load_file": _SERVER_FILES,
        "nextval": _SEQUENCES,
        "setval": _SEQUENCES,
        "last_insert_id": "sets the session's last insert id",
        "master_pos_wait": "waits on replication",
        "source_pos_wait": "waits on replication",
        "master_gtid_wait": "waits on replication",
        "wait_for_executed_gtid_set": "waits on replication",
        "sys_exec": "runs a program on the database server",
        "sys_eval": "runs a program on the database server",
    },
    "duckdb": {"nextval": _SEQUENCES, "setval": _SEQUENCES, "setseed": _SETTINGS},
    "sqlite": {"load_extension": "loads code into the database"},
}
# MySQL and MariaDB run what is inside these "comments": /*! ... */ and /*M! ... */ as SQL,
# /*+ ... */ as optimizer hints, which can lift the time limit (MAX_EXECUTION_TIME, SET_VAR).
_EXECUTED_COMMENTS = ("/*!", "/*M!", "/*m!", "/*+")


@dataclass(frozen=True)
class Placeholder:
    name: str
    start: int  # offset of the colon
    end: int  # offset just past the name
    line: int
    col: int
    after_in: bool  # written as `IN :name`


@lru_cache(maxsize=64)
def tokenize(sql: str, dialect: str | None) -> tuple[Token, ...]:
    """The tokens of `sql` in `dialect`, cached: the read-only check, the placeholder scan, the paged-SQL
    checks and the engines read the same SQL, and tokenizing is half of parsing. SqlglotError if unreadable.

    >>> [t.text for t in tokenize("SELECT a FROM t WHERE b = :n", "duckdb")]
    ['SELECT', 'a', 'FROM', 't', 'WHERE', 'b', '=', ':', 'n']
    """
    return tuple(sqlglot.Dialect.get_or_raise(dialect).tokenize(sql))


def unreadable(dialect: str | None, exc: SqlglotError) -> UnsafeSQL:
    """sqlglot's failure to read SQL in `dialect`, as UnsafeSQL at the token it stopped on, its class names left out.

    >>> sql = "SELECT a FROM t WHERE b AND AND c"
    >>> try:
    ...     sqlglot.parse_one(sql, read="duckdb")
    ... except SqlglotError as exc:
    ...     error = unreadable("duckdb", exc)
    >>> str(error), error.position
    ("the SQL cannot be read as duckdb: required keyword: 'expression' missing for And, at 'AND'", (1, 29))
    """
    reading = f"the SQL cannot be read as {dialect}" if dialect else "the SQL cannot be read"
    found = getattr(exc, "errors", None)
    if not found or not found[0].get("line"):
        return UnsafeSQL(f"{reading}: {first_line(exc)}")
    error, token = found[0], found[0].get("highlight") or ""
    what = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", error["description"]).replace("Required", "required")
    if not token or "\n" in token:
        return UnsafeSQL(f"{reading}: {what}", error["line"], error["col"])
    return UnsafeSQL(f"{reading}: {what}, at '{token}'", error["line"], error["col"] - len(token) + 1)


def _readable_tokens(sql: str, dialect: str | None):
    """`tokenize`, with sqlglot's failure as UnsafeSQL."""
    try:
        return tokenize(sql, dialect)
    except SqlglotError as exc:
        raise unreadable(dialect, exc) from None


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


_NULL_TEST = re.compile(r"(?i)\s*IS\s+(?:NOT\s+)?NULL\b")


def is_null_test(sql: str, placeholder: Placeholder) -> bool:
    """Whether the placeholder is tested for NULL: `:xs IS NULL`, `:xs IS NOT NULL`.

    >>> sql = "SELECT 1 WHERE :xs IS  NOT null OR :xs = 1"
    >>> [is_null_test(sql, p) for p in find_placeholders(sql)]
    [True, False]
    """
    return _NULL_TEST.match(sql, placeholder.end) is not None


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
    if dialect == "mysql":
        for marker in _EXECUTED_COMMENTS:
            if marker in sql:
                line, col = line_col(sql, sql.index(marker))
                raise UnsafeSQL(
                    f"MySQL and MariaDB execute what is inside {marker} ... */ comments; "
                    f"remove it (line {line}, column {col})",
                    line,
                    col,
                )
    try:
        tokens = list(tokenize(sql, dialect))
    except SqlglotError:
        return _check_tokens(sql, dialect)
    check_lexing(sql, dialect, tokens)
    _check_side_effects(sql, tokens, dialect)
    try:
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


def _check_side_effects(sql: str, tokens: list, dialect: str | None) -> None:
    """Refuse calls to the dialect's functions that outlive the query (`_SIDE_EFFECTS`), and
    MySQL's `:=` assignments to user variables."""
    refused = _SIDE_EFFECTS.get(dialect or "", {})
    for i, tok in enumerate(tokens):
        if dialect == "mysql" and tok.token_type == TokenType.COLON_EQ:
            line, col = line_col(sql, tok.start)
            raise UnsafeSQL(
                f"the query assigns a user variable with := (line {line}, column {col}), which outlives the query",
                line,
                col,
            )
        if tok.text.upper() == "NEXT" and [t.text.upper() for t in tokens[i + 1 : i + 3]] == ["VALUE", "FOR"]:
            line, col = line_col(sql, tok.start)
            raise UnsafeSQL(
                f"the query calls NEXT VALUE FOR, which {_SEQUENCES}; it is refused (line {line}, column {col})",
                line,
                col,
            )
        if tok.token_type == TokenType.STRING or i + 1 == len(tokens) or tokens[i + 1].token_type != TokenType.L_PAREN:
            continue
        name = tok.text.lower()
        why = refused.get(name) or next(
            (v for k, v in refused.items() if k.endswith("*") and name.startswith(k[:-1])), None
        )
        if why:
            line, col = line_col(sql, tok.start)
            raise UnsafeSQL(
                f"the query calls {name}(), which {why}; it is refused (line {line}, column {col})", line, col
            )


def _check_tokens(sql: str, dialect: str | None) -> None:
    tokens = _readable_tokens(sql, dialect)
    _check_side_effects(sql, list(tokens), dialect)
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
