"""DuckDB `init:` statements that would widen what a connection may reach.

`init` runs once at start-up, inside the readable set but before the configuration is
locked. It may create tables and views over the project's files; it may not change where
files are read from or written to, load extensions, or write files.

Each statement's verdict is kept in the cache of the project being loaded (`cachefile`, signed,
under the sha256 of the statement; its header names mcpgen's code and sqlglot's version), and for
the rest of the process: loading an unchanged mcpgen.yaml, and opening its connections after,
read no SQL again.

>>> init_problem("CREATE TABLE t AS SELECT * FROM read_csv('data/t.csv')") is None
True
>>> init_problem("SET temp_directory = '/tmp'")
'changes the setting temp_directory, which mcpgen keeps locked (where DuckDB reads, writes and loads extensions from)'
>>> init_problem("CREATE VIEW v AS SELECT 1; INSTALL httpfs")
'installs or loads an extension (INSTALL); init may create tables and views only'
"""

from __future__ import annotations

import functools
import hashlib
import re

from .. import cachefile
from .sql_paths import outside_paths

# Settings that decide what DuckDB may read, write or load: only mcpgen sets them.
_LOCKED = re.compile(
    r"(temp_directory|allowed_\w+|enable_\w+|lock_configuration|\w*extension\w*|autoinstall_\w+|autoload_\w+"
    r"|allow_\w+|secret_directory|home_directory|disabled_filesystems|file_search_path|max_temp_directory_size)",
    re.IGNORECASE,
)
_SCOPES = {"GLOBAL", "SESSION", "LOCAL"}
_EXTENSIONS = {"INSTALL", "LOAD", "FORCE", "UPDATE"}
_WRITES = {"COPY", "EXPORT", "IMPORT", "CHECKPOINT", "VACUUM"}


@functools.lru_cache(maxsize=256)
def init_problem(sql: str) -> str | None:
    """Why an init statement is refused ("changes the setting ..."), or None when it may run."""
    key = "init:" + hashlib.sha256(sql.encode()).hexdigest()
    kept = cachefile.get(key)
    if kept is not None:
        return kept.decode() or None
    problem = _problem(sql)
    cachefile.put(key, (problem or "").encode())
    return problem


def _problem(sql: str) -> str | None:
    from sqlglot.errors import SqlglotError  # here: a kept verdict loads no sqlglot
    from sqlglot.tokens import TokenType

    from ..sql.statements import tokenize

    try:
        tokens = tokenize(sql, "duckdb")
    except SqlglotError:
        return None  # DuckDB itself will say what is wrong with it
    statements: list[list] = [[]]
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(tok)
    for words in (s for s in statements if s):
        first = words[0].text.upper()
        if first in ("SET", "RESET", "PRAGMA", "CALL"):
            rest = [w for w in words[1:] if w.text.upper() not in _SCOPES]
            if rest and rest[0].text.upper() != "VARIABLE" and _LOCKED.fullmatch(rest[0].text):
                return (
                    f"changes the setting {rest[0].text.lower()}, which mcpgen keeps locked "
                    "(where DuckDB reads, writes and loads extensions from)"
                )
        if first in _EXTENSIONS:
            return f"installs or loads an extension ({first}); init may create tables and views only"
        if first in _WRITES:
            return f"writes files ({first}); init may create tables and views only"
    for line, col, reason in outside_paths(sql):
        return f"{reason} (line {line}, column {col})"
    return None
