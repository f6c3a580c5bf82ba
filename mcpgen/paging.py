"""Pages of a big answer: `page_size:` in a spec, and the signed cursors that continue it.

A paged tool takes an optional `cursor` argument. Each page is the query's rows from an
offset, in the query's own ORDER BY; when more remain, the answer carries a cursor for
the next page. A cursor is opaque to the caller: the offset and an expiry time, signed
(HMAC-SHA256) together with the tool, the arguments, the caller and the spec's version,
so it only continues the answer it came from, and no one can make one up.

>>> cursors = Cursors(b"k" * 32, ttl=60)
>>> token = cursors.issue("t", "args-digest", 500)
>>> cursors.read(token, "t", "args-digest")
500
>>> cursors.read(token, "t", "other-args")
Traceback (most recent call last):
...
mcpgen.paging.CursorError: Invalid argument 'cursor': it does not continue this tool's answer to these arguments; call again without cursor for the first page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time

from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from .errors import ArgumentError
from .spec.models import Parameter
from .sql import _tokens

CURSOR = "cursor"  # the argument a paged tool takes
NEXT_CURSOR_META = "mcpgen/next_cursor"  # in a page's _meta when more rows remain
LIMIT, OFFSET = "mcpgen_page_limit", "mcpgen_page_offset"  # bound by the paged query
DEFAULT_TTL = 3600.0
PROCESS_KEY = secrets.token_bytes(32)  # when mcpgen.yaml names no key: cursors live as long as the process


class CursorError(ArgumentError):
    """A cursor that is forged, altered, expired or from another answer."""


class Cursors:
    """Issues and checks cursors with one key (shared by every replica that should accept them)."""

    def __init__(self, key: bytes = PROCESS_KEY, ttl: float = DEFAULT_TTL, project: str = ""):
        self._key = key
        self.ttl = ttl
        self.project = project  # the project's version (its settings): a changed project refuses older cursors

    def _mac(self, tool: str, binding: str, body: str) -> bytes:
        message = "\x1f".join((self.project, tool, binding, body)).encode()
        return hmac.new(self._key, message, hashlib.sha256).digest()[:16]

    def issue(self, tool: str, binding: str, offset: int) -> str:
        body = f"{offset}.{int(time.time() + self.ttl)}"
        mac = self._mac(tool, binding, body)
        return _b64(body.encode()) + "." + _b64(mac)

    def read(self, token: str, tool: str, binding: str) -> int:
        """The offset a cursor continues from; CursorError in one sentence if it may not be used."""
        try:
            body_part, mac_part = token.split(".")
            body = base64.urlsafe_b64decode(body_part + "==").decode("ascii")
            mac = base64.urlsafe_b64decode(mac_part + "==")
            offset, expires = (int(n) for n in body.split("."))
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise CursorError(
                f"Invalid argument '{CURSOR}': it is not a cursor this server gave; "
                f"call again without {CURSOR} for the first page."
            ) from None
        if not hmac.compare_digest(mac, self._mac(tool, binding, body)) or offset < 0:
            raise CursorError(
                f"Invalid argument '{CURSOR}': it does not continue this tool's answer to these arguments; "
                f"call again without {CURSOR} for the first page."
            )
        if expires < time.time():
            raise CursorError(
                f"Invalid argument '{CURSOR}': the cursor has expired; call again without {CURSOR} for the first page."
            )
        return offset


def binding(values_key: str, identity: str | None, version: str) -> str:
    """What a cursor is bound to besides its tool: the arguments, the caller and the spec's version."""
    return hashlib.sha256("\x1f".join((values_key, identity or "", version)).encode()).hexdigest()


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
        tokens = _tokens(sql, dialect)  # cached: the read-only check has just tokenized the same SQL
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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
