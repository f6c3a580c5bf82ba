"""The signed cursors that continue a paged answer (`page_size:` in a spec; the paged SQL is in `sql.pages`).

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
mcpgen.answer.cursors.CursorError: Invalid argument 'cursor': it does not continue this tool's answer to these arguments; call again without cursor for the first page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time

from ..errors import ArgumentError
from ..spec.models import CURSOR

NEXT_CURSOR_META = "mcpgen/next_cursor"  # in a page's _meta when more rows remain
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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
