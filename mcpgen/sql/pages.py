"""Paged SQL, checked at load time: the query one page runs, and what its outermost level says.

A paged spec (`page_size:`) runs its own query with LIMIT and OFFSET appended to its ORDER BY;
it may not limit rows itself, and it must order them, or pages could repeat or skip rows.
The tokens outside every parenthesis are the outermost query's.

>>> limits_rows("SELECT a FROM t ORDER BY a LIMIT 5", "duckdb"), orders_rows("SELECT a FROM t", "duckdb")
(True, False)
"""

from __future__ import annotations

from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from ..spec.models import Parameter
from .statements import tokenize

LIMIT, OFFSET = "mcpgen_page_limit", "mcpgen_page_offset"  # bound by the paged query


def paged_sql(sql: str) -> str:
    """The query, one page of it: LIMIT and OFFSET appended to its own ORDER BY. (Not a sub-query
    wrapped in another SELECT: MariaDB drops the ORDER BY of a sub-query that has no LIMIT.)

    >>> paged_sql("SELECT a FROM t ORDER BY a;")
    'SELECT a FROM t ORDER BY a\\nLIMIT :mcpgen_page_limit OFFSET :mcpgen_page_offset'
    """
    return f"{sql.rstrip().rstrip(';').rstrip()}\nLIMIT :{LIMIT} OFFSET :{OFFSET}"


def limits_rows(sql: str, dialect: str | None) -> bool:
    """Whether the outermost query has its own LIMIT, OFFSET or FETCH (a paged query may not).

    >>> limits_rows("SELECT a FROM t ORDER BY a LIMIT 5", "duckdb")
    True
    >>> limits_rows("SELECT a FROM (SELECT a FROM t LIMIT 5) s", "duckdb")
    False
    """
    words = {TokenType.LIMIT, TokenType.OFFSET, TokenType.FETCH}
    return any(t.token_type in words for t in _outer_tokens(sql, dialect))


def orders_rows(sql: str, dialect: str | None) -> bool:
    """Whether the outermost query ends in ORDER BY (pages are stable only then).

    >>> orders_rows("SELECT a FROM t ORDER BY a", "duckdb")
    True
    >>> orders_rows("SELECT a FROM (SELECT a FROM t ORDER BY a)", "duckdb")
    False
    """
    return any(t.token_type == TokenType.ORDER_BY for t in _outer_tokens(sql, dialect))


def row_bound(sql: str, dialect: str | None, parameters: dict[str, Parameter], max_rows: int) -> int:
    """The most rows the query can return: `max_rows`, or less when its outermost LIMIT is a
    number or a parameter with a maximum.

    >>> from mcpgen.spec.models import Parameter
    >>> n = Parameter(type="integer", description="n", maximum=50)
    >>> row_bound("SELECT a FROM t ORDER BY a LIMIT :n", "duckdb", {"n": n}, 1000)
    50
    """
    tokens = _outer_tokens(sql, dialect)
    for i, token in enumerate(tokens[:-1]):
        if token.token_type != TokenType.LIMIT:
            continue
        after = tokens[i + 1]
        if after.token_type == TokenType.NUMBER and after.text.isdigit():
            return min(max_rows, int(after.text))
        if after.token_type == TokenType.COLON and i + 2 < len(tokens):
            param = parameters.get(tokens[i + 2].text)
            if param is not None and isinstance(param.maximum, int):
                return min(max_rows, param.maximum)
    return max_rows


def _outer_tokens(sql: str, dialect: str | None) -> list:
    """The tokens of `sql` outside every parenthesis (sub-queries, CTE bodies, window clauses)."""
    try:
        tokens = tokenize(sql, dialect)  # cached: the read-only check has just tokenized the same SQL
    except SqlglotError:
        return []
    depth, out = 0, []
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            out.append(token)
    return out
