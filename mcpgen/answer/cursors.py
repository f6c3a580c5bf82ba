"""The signed cursors that continue a paged answer (`page_size:` in a spec; the paged SQL is in `sql.pages`).

A paged tool takes an optional `cursor` argument. Each page is the query's next rows in its
order made total (`sql.pages`); when more remain, the answer carries a cursor for the next
page. A cursor is opaque to the caller: where the page starts (the count of rows before it and,
for keyset pages, the last row's sort key and, when the page ends among copies of one row, how
many of them were given; and the read-ahead that holds the page, if one does: `answer.readahead`)
and an expiry time, signed (HMAC-SHA256) together with the tool, the arguments, the caller and
the spec's version, so it only continues the answer it came from, and no one can make one up. A
sort key longer than MAX_CURSOR_KEY bytes as JSON is not carried: that cursor continues by
OFFSET, so no cursor is longer than about a kilobyte whatever the rows hold.

>>> cursors = Cursors(b"k" * 32, ttl=60)
>>> token = cursors.issue("t", "args-digest", Position(500, ("Tokyo", 3), 1))
>>> cursors.read(token, "t", "args-digest")
Position(offset=500, key=('Tokyo', 3), skip=1, batch='')
>>> cursors.read(token, "t", "other-args")
Traceback (most recent call last):
...
mcpgen.answer.cursors.CursorError: Invalid argument 'cursor': it does not continue this tool's answer to these arguments (it came from other arguments, another caller, or a spec or mcpgen.yaml since changed); call again without cursor for the first page.

A cursor also names its key (a short fingerprint, not the key), so one signed with another key
is refused saying so: without `cursors.secret_env` each `mcpgen serve` process signs with a
random key of its own, while `mcpgen call` keeps a key per project (`project_key`) in a private
file of the user's, so one `mcpgen call` continues the cursor another printed.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import math
import secrets
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..errors import ArgumentError
from ..keys import kept_key
from ..limits import MAX_CURSOR_KEY
from ..spec.models import CURSOR

NEXT_CURSOR_META = "mcpgen/next_cursor"  # in a page's _meta when more rows remain
DEFAULT_TTL = 3600.0
PROCESS_KEY = secrets.token_bytes(32)  # when mcpgen.yaml names no key: cursors live as long as the process


OTHER_PROCESS = (
    "it was signed by another mcpgen process: without cursors.secret_env in mcpgen.yaml, each server "
    "process signs its cursors with a key of its own"
)
OTHER_THAN_PROJECT = (
    "it was signed with another key than this project's: mcpgen call keeps one per project and user, "
    "and each server process signs with its own; set cursors.secret_env in mcpgen.yaml for one key everywhere"
)


def project_key(root: Path) -> bytes | None:
    """The cursor key of the project at `root` for `mcpgen call`, kept for the user (`keys.kept_key`) in
    `$XDG_STATE_HOME/mcpgen/cursor-keys/`. None when it cannot be kept: cursors then hold for the one process."""
    return kept_key("cursor-keys", hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:32] + ".key")


class CursorError(ArgumentError):
    """A cursor that is forged, altered, expired or from another answer."""


@dataclass(frozen=True)
class Position:
    """Where a page starts: `offset` rows come before it; for keyset pages, `key` is the sort key of
    the last of them (None: pages use OFFSET) and `skip`, when the row after them is a copy of that
    last one, how many rows at their end have that key (0: the page is the rows after the key);
    `batch`, the read-ahead that holds the page (`answer.readahead`; "": none)."""

    offset: int
    key: tuple | None = None
    skip: int = 0
    batch: str = ""


class Cursors:
    """Issues and checks cursors with one key (shared by every replica that should accept them)."""

    def __init__(self, key: bytes = PROCESS_KEY, ttl: float = DEFAULT_TTL, project: str = "", other_key: str = ""):
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)  # copied for each MAC rather than keyed again
        self.ttl = ttl
        self.project = project  # the project's version (its settings): a changed project refuses older cursors
        self._kid = b64(hmac.new(key, b"mcpgen cursor key", hashlib.sha256).digest()[:6])
        # Why a cursor signed with another key is refused, in the words of this key's origin.
        self.other_key = other_key or (
            OTHER_PROCESS if key == PROCESS_KEY else "it was signed with another key than this server's"
        )

    def _mac(self, tool: str, binding: str, body: str) -> bytes:
        mac = self._keyed.copy()
        mac.update("\x1f".join((self.project, tool, binding, body)).encode())
        return mac.digest()[:16]

    def seal(self, tool: str, binding: str, body: str) -> str:
        """`body`, signed for `tool` and `binding`, as URL-safe text (a cursor)."""
        return b64(body.encode()) + "." + b64(self._mac(tool, binding, body)) + "." + self._kid

    def unseal(self, token: str, tool: str, binding: str) -> str:
        """The body of a token this key sealed for `tool` and `binding`; SealError saying why not."""
        try:
            body_part, mac_part, kid = token.split(".")
            body = base64.urlsafe_b64decode(body_part + "==").decode("utf-8")
            mac = base64.urlsafe_b64decode(mac_part + "==")
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise SealError(None) from None
        self._verify(mac, kid, tool, binding, body)
        return body

    def stamp(self, tool: str, binding: str, expires: int) -> str:
        """A token that holds only its expiry time, signed for `tool` and `binding` (a download link, whose URI
        says the rest): `expires.mac.kid`, URL-safe. What it signs starts with `link.`, where a cursor's body
        starts with a number, so neither kind of token passes for the other."""
        return f"{expires}.{b64(self._mac(tool, binding, f'link.{expires}'))}.{self._kid}"

    def unstamp(self, token: str, tool: str, binding: str) -> int:
        """The expiry time of a token this key stamped for `tool` and `binding`; SealError saying why not."""
        try:
            expires, mac_part, kid = token.split(".")
            ends = int(expires)
            mac = base64.urlsafe_b64decode(mac_part + "==")
        except (ValueError, binascii.Error):
            raise SealError(None) from None
        self._verify(mac, kid, tool, binding, f"link.{expires}")  # the text as given: "+1" is not "1"
        return ends

    def _verify(self, mac: bytes, kid: str, tool: str, binding: str, body: str) -> None:
        if not hmac.compare_digest(mac, self._mac(tool, binding, body)):
            raise SealError(
                "it came from other arguments, another caller, or a spec or mcpgen.yaml since changed"
                if kid == self._kid  # the key's public fingerprint: any text may be compared with it
                else self.other_key
            )

    def issue(self, tool: str, binding: str, position: Position) -> str:
        body = f"{position.offset}.{expiry(self.ttl)}" + (f".b{position.batch}" if position.batch else "")
        key = None if position.key is None else json.dumps([_encode(v) for v in position.key], separators=(",", ":"))
        if key is not None and len(key.encode()) <= MAX_CURSOR_KEY:  # a longer key: the next page by OFFSET
            body += f".{position.skip}." + key
        return self.seal(tool, binding, body)

    def read(self, token: str, tool: str, binding: str) -> Position:
        """Where a cursor continues from; CursorError in one sentence if it may not be used."""
        try:
            body = self.unseal(token, tool, binding)
            fields = body.split(".", 2)
            batch = ""
            if len(fields) == 3 and fields[2].startswith("b"):  # the read-ahead's name comes before the key
                batch, _, rest = fields[2][1:].partition(".")
                fields[2:] = [rest] if rest else []
            fields[2:] = fields[2].split(".", 1) if len(fields) == 3 else []
            if len(fields) not in (2, 4):
                raise ValueError(body)
            offset, expires = int(fields[0]), int(fields[1])
            if offset < 0:
                raise ValueError(body)
        except (ValueError, SealError) as exc:
            if isinstance(exc, SealError) and exc.why is not None:
                raise CursorError(
                    f"Invalid argument '{CURSOR}': it does not continue this tool's answer to these arguments "
                    f"({exc.why}); call again without {CURSOR} for the first page."
                ) from None
            raise CursorError(
                f"Invalid argument '{CURSOR}': it is not a cursor this server gave; "
                f"call again without {CURSOR} for the first page."
            ) from None
        if expires < time.time():
            raise CursorError(
                f"Invalid argument '{CURSOR}': the cursor has expired; call again without {CURSOR} for the first page."
            )
        if len(fields) == 2:
            return Position(offset, batch=batch)
        return Position(offset, tuple(_decode(v) for v in json.loads(fields[3])), int(fields[2]), batch)


class SealError(Exception):
    """A token this key did not seal for this tool and binding: `why` says what it came from (None: it is
    no token at all, or not one of ours)."""

    def __init__(self, why: str | None):
        super().__init__(why or "not a token this server gave")
        self.why = why


def expiry(ttl: float) -> int:
    """The expiry time of a token valid for `ttl` seconds from now (rounded up: valid for at least `ttl`)."""
    return math.ceil(time.time() + ttl)


def binding(values_key: str, identity: str | None, version: str) -> str:
    """What a cursor is bound to besides its tool: the arguments, the caller and the spec's version."""
    return hashlib.sha256("\x1f".join((values_key, identity or "", version)).encode()).hexdigest()


def b64(data: bytes) -> str:
    """`data` as unpadded URL-safe base64 text (tokens, download links' arguments)."""
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


# Key values as JSON: numbers, strings, booleans and null as they are; the rest tagged.
_TAGS: dict[str, Any] = {
    "f": float,
    "n": Decimal,
    "d": dt.date.fromisoformat,
    "t": dt.datetime.fromisoformat,
    "h": dt.time.fromisoformat,
    "x": lambda s: base64.urlsafe_b64decode(s + "=="),
}


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"f": repr(value)}
    if isinstance(value, Decimal):
        return {"n": str(value)}
    if isinstance(value, dt.datetime):
        return {"t": value.isoformat()}
    if isinstance(value, dt.date):
        return {"d": value.isoformat()}
    if isinstance(value, dt.time):
        return {"h": value.isoformat()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"x": b64(bytes(value))}
    raise TypeError(f"a {type(value).__name__} cannot be carried in a cursor")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        ((tag, text),) = value.items()
        return _TAGS[tag](text)
    return value
