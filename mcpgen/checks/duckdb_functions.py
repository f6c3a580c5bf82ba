"""The DuckDB functions a query may call, decided from DuckDB's own catalogue (`duckdb_functions()`)
rather than from a list of names to refuse, which new versions and extensions would outgrow.

- A table function (or table macro) of DuckDB's is allowed only when it is named in `TABLE_FUNCTIONS`:
  generators, the file readers that file reach checks (their paths must be written out or be an
  `enum` of project files), and views of the catalogue's tables and columns. Everything else is
  refused: `query()`, `query_table()` and `json_execute_serialized_sql()` run SQL given as text,
  others change the database or the session (`checkpoint`, `enable_logging`), or show what the
  caller should not see (`duckdb_secrets`, `duckdb_settings`, `duckdb_databases` and its paths).
- A scalar function the catalogue marks `has_side_effects` is refused unless it is one that only
  reads or draws a random value (`HARMLESS_SIDE_EFFECTS`): `nextval`, `setval`, `setseed` and
  `write_log` are refused, and so is any such function a later DuckDB adds.
- Functions the project defines itself (macros created by the connection's `init`, which the
  operator writes) and names the catalogue does not hold (DuckDB refuses those when binding) are
  left to DuckDB.

>>> function_problems("SELECT * FROM query('SELECT 1')", default_catalogue())
[(1, 15, 'calls query(), a DuckDB table function mcpgen does not allow: it runs SQL given as text')]
>>> function_problems("SELECT * FROM range(3) JOIN read_csv('data/a.csv') ON true", default_catalogue())
[]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..text import line_col

# Table functions a query may use: generators; the file readers whose paths file reach checks;
# the catalogue's tables, views, columns, types and functions.
TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "repeat",
        "repeat_row",
        "json_each",
        "json_tree",
        "histogram",
        "histogram_values",
        "pg_timezone_names",
        "icu_calendar_names",
        "read_csv",
        "read_csv_auto",
        "read_parquet",
        "parquet_scan",
        "parquet_metadata",
        "parquet_schema",
        "parquet_file_metadata",
        "parquet_kv_metadata",
        "read_json",
        "read_json_auto",
        "read_json_objects",
        "read_json_objects_auto",
        "read_ndjson",
        "read_ndjson_auto",
        "read_ndjson_objects",
        "read_text",
        "read_blob",
        "glob",
        "sniff_csv",
        "duckdb_tables",
        "duckdb_views",
        "duckdb_columns",
        "duckdb_schemas",
        "duckdb_types",
        "duckdb_functions",
        "duckdb_keywords",
        "duckdb_constraints",
        "duckdb_indexes",
        "pragma_table_info",
        "pragma_version",
    }
)
# Functions the catalogue marks as having side effects that only read or draw random values.
HARMLESS_SIDE_EFFECTS = frozenset(
    {
        "random",
        "uuid",
        "uuidv4",
        "uuidv7",
        "gen_random_uuid",
        "error",
        "sleep_ms",
        "currval",
        "current_connection_id",
        "current_query",
        "current_query_id",
        "current_transaction_id",
        "stats",
        "vector_type",
    }
)
_WHY = {
    "query": "it runs SQL given as text",
    "query_table": "it runs SQL given as text",
    "json_execute_serialized_sql": "it runs SQL given as text",
}


@dataclass(frozen=True)
class Entry:
    table: bool  # a table function or table macro
    side_effects: bool
    own: bool  # defined by the project (a macro of `init`), not by DuckDB


Catalogue = dict[str, Entry]


def catalogue_of(con: Any) -> Catalogue:
    """What `con`'s DuckDB says of each function name."""
    rows = con.execute(
        "SELECT lower(function_name), bool_or(function_type IN ('table', 'table_macro')), "
        "bool_or(coalesce(has_side_effects, false)), NOT bool_or(internal) FROM duckdb_functions() GROUP BY 1"
    ).fetchall()
    return {name: Entry(bool(table), bool(effects), bool(own)) for name, table, effects, own in rows}


@lru_cache(maxsize=1)
def default_catalogue() -> Catalogue:
    """The catalogue of a bare in-memory DuckDB, for `validate` (the engine asks its own connection)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        return catalogue_of(con)
    finally:
        con.close()


def function_problems(sql: str, catalogue: Catalogue | Callable[[], Catalogue]) -> list[tuple[int, int, str]]:
    """(line, col, reason) for each call in `sql` (DuckDB's SQL) to a function the rules above refuse.
    `catalogue` may be a function that reads it: SQL that calls no function never reads it.

    >>> function_problems("SELECT 1 AS n", lambda: 1 / 0)
    []
    """
    from sqlglot.errors import SqlglotError  # here: a call of a kept spec runs no check and loads no sqlglot
    from sqlglot.tokens import TokenType

    from ..sql.statements import tokenize

    try:
        tokens = tokenize(sql, "duckdb")
    except SqlglotError:
        return []  # the read-only check refuses what cannot be read
    calls = [tok for tok, after in itertools.pairwise(tokens) if after.token_type == TokenType.L_PAREN]
    if not calls:
        return []
    entries = catalogue() if callable(catalogue) else catalogue
    out = []
    for tok in calls:
        name = tok.text.lower()
        entry = entries.get(name)
        if entry is None or entry.own:
            continue
        line, col = line_col(sql, tok.start)
        if entry.table and name not in TABLE_FUNCTIONS:
            why = _WHY.get(name, "it could run SQL, change the database or show what a tool should not")
            out.append((line, col, f"calls {name}(), a DuckDB table function mcpgen does not allow: {why}"))
        elif entry.side_effects and name not in HARMLESS_SIDE_EFFECTS:
            out.append((line, col, f"calls {name}(), which DuckDB's catalogue says has side effects; it is refused"))
    return out
