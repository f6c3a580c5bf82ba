"""Big results as files (`download:` in a spec): each answer links to the whole result of its arguments.

The answer the model reads stays short; a person gets every row. With `download:` on, an answer with
rows carries one `resource_link` per format (CSV as text/csv, Parquet as a blob) to a URI such as

    mcpgen://download/cities.csv?args=eyJjYyI6IkpQIn0&link=1765000000.o89SKOp_hCjkScCA-7nQ-w.FQqqvnaS

`args` holds the call's arguments; `link` is the expiry time, signed with the key of the project's
cursors (`mcpgen.answer.cursors`, one home for the key and the MAC) together with the tool, the
arguments, the caller and the spec's version, as a cursor is. The format is the URI's own: both links
of an answer carry one token, and a link is read only in a format its tool offers. resources/read
of the URI runs the tool's query again, for that caller (scopes, identity, row-level security) under
its timeout, with the download's row and byte caps; any link that may not be read is refused in one
sentence (DownloadError). Links are made per call, so resources/list does not list them.

>>> link = parse("mcpgen://download/cities.csv?args=eyJjYyI6IkpQIn0&link=t")
>>> link.tool, link.format, link.arguments
('cities', 'csv', {'cc': 'JP'})
>>> csv_text(["n", "d"], [(1, None), (2.5, True)], 1000)
'n,d\\r\\n1,\\r\\n2.5,true\\r\\n'
"""

from __future__ import annotations

import base64
import binascii
import csv
import datetime as dt
import functools
import io
import json
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from pydantic_core import to_json

from ..errors import ArgumentError
from ..spec.models import DownloadSettings
from .cursors import Cursors, SealError, b64, expiry
from .plain import ResourceLink
from .results import to_cell

__all__ = ["MIME_TYPES", "PREFIX", "DownloadError", "Downloads", "Link", "csv_text", "is_download", "parse"]

PREFIX = "mcpgen://download/"
MIME_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
TITLES = {"csv": "CSV", "parquet": "Parquet"}
LINK_ENVELOPE = 160  # {"type":"resource_link","name":"","title":"","uri":"","description":"","mimeType":"..."},
NOT_OURS = "This is not a download link this server gave; call the tool again for a new link."


class DownloadError(ArgumentError):
    """A download link that may not be read (bad, foreign, expired, altered), or a download past its caps."""


def is_download(uri: str) -> bool:
    return uri.startswith(PREFIX)


@dataclass(frozen=True)
class Link:
    """What a download URI says: the tool, the format, the call's arguments and the signed token."""

    tool: str
    format: str
    arguments: dict[str, Any]
    token: str


def parse(uri: str) -> Link:
    """The parts of a download URI; DownloadError if it is not one this server could have made."""
    try:
        parts = urlsplit(uri)
        tool, _, fmt = parts.path.lstrip("/").rpartition(".")
        query = parse_qs(parts.query, strict_parsing=True)
        (encoded,), (token,) = query.pop("args"), query.pop("link")
        arguments = json.loads(base64.urlsafe_b64decode(encoded + "==").decode("utf-8"))
    except (ValueError, KeyError, UnicodeDecodeError, binascii.Error, RecursionError):  # deep JSON: recursion
        raise DownloadError(NOT_OURS) from None
    if not is_download(uri) or parts.netloc != "download" or fmt not in MIME_TYPES or not tool or query:
        raise DownloadError(NOT_OURS)
    if not isinstance(arguments, dict):
        raise DownloadError(NOT_OURS)
    return Link(tool, fmt, arguments, token)


class Downloads:
    """The download links of one tool: made for each answer, checked at each read."""

    def __init__(self, tool: str, settings: DownloadSettings, cursors: Cursors):
        self.tool = tool
        self.settings = settings
        self._cursors = cursors
        self._about = f"The whole result for these arguments, up to {settings.max_rows:,} rows; the link holds until "
        # each format's URI without its query, name, title and MIME type
        self._templates = [
            (f"{PREFIX}{quote(tool)}.{fmt}", f"{tool}.{fmt}", f"Every row as {TITLES[fmt]}", MIME_TYPES[fmt])
            for fmt in settings.formats
        ]

    def links(self, arguments: dict[str, Any], binding: str) -> list[ResourceLink]:
        """One resource_link per format, for the whole result of `arguments` (bound as `binding` says)."""
        expires = expiry(self.settings.ttl)
        token = self._cursors.stamp(self.tool, binding, expires)
        # pydantic-core's JSON: compact, UTF-8, a sixth of the json module's instructions for a small object
        query = f"?args={b64(to_json(arguments, fallback=str))}&link={token}"
        description = self._about + _until(expires)
        return [ResourceLink(uri + query, name, title, description, mime) for uri, name, title, mime in self._templates]

    @staticmethod
    def size(links: list[ResourceLink]) -> int:
        """A bound on the bytes `links` take in an answer's JSON: their text is ASCII (tool names, base64, our
        words), and each link's keys and quotes take under LINK_ENVELOPE bytes."""
        return sum(
            len(x.uri) + len(x.name) + len(x.title or "") + len(x.description or "") + LINK_ENVELOPE for x in links
        )

    def check(self, link: Link, binding: str) -> None:
        """DownloadError in one sentence unless this key signed `link` for this tool and binding, in a format
        the tool offers, and it has not expired."""
        if link.tool != self.tool or link.format not in self.settings.formats:
            raise DownloadError(NOT_OURS)
        try:
            ends = self._cursors.unstamp(link.token, self.tool, binding)
        except SealError as exc:
            if exc.why is None:
                raise DownloadError(NOT_OURS) from None
            raise DownloadError(
                f"This download link is not for this caller and these arguments ({exc.why}); "
                "call the tool again for a new link."
            ) from None
        if ends < time.time():
            raise DownloadError("This download link has expired; call the tool again for a new link.")

    def contents(self, link: Link, uri: str, columns: list[str], rows: list[tuple]) -> Any:
        """The file of `rows` in the link's format as resources/read carries it; DownloadError past max_bytes."""
        from mcp_types import BlobResourceContents, TextResourceContents

        cap = self.settings.max_bytes
        if link.format == "csv":
            text = csv_text(columns, rows, cap)
            if text is None:
                raise self._too_big("CSV")
            return TextResourceContents(uri=uri, mime_type=MIME_TYPES["csv"], text=text)
        data = parquet_bytes(columns, rows)
        if len(data) > cap:
            raise self._too_big("Parquet")
        return BlobResourceContents(
            uri=uri, mime_type=MIME_TYPES["parquet"], blob=base64.b64encode(data).decode("ascii")
        )

    def too_many_rows(self) -> DownloadError:
        return DownloadError(
            f"The download of '{self.tool}' would hold more than {self.settings.max_rows:,} rows (its download "
            "max_rows); call the tool with narrower arguments for a smaller one."
        )

    def _too_big(self, kind: str) -> DownloadError:
        return DownloadError(
            f"The download of '{self.tool}' as {kind} would pass {self.settings.max_bytes:,} bytes (its download "
            "max_bytes); call the tool with narrower arguments for a smaller one."
        )


def csv_cell(value: Any) -> str:
    """One value as CSV text: empty for NULL, true/false, numbers in full, dates in ISO 8601."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # every digit of an integer; a float's shortest exact form
    if isinstance(value, Decimal):
        return format(value, "f") if value.is_finite() else ""  # as the database wrote it: 1.50 stays 1.50
    cell = to_cell(value)
    return cell if isinstance(cell, str) else csv_cell(cell)


def csv_text(columns: list[str], rows: list[tuple], max_bytes: int) -> str | None:
    """The CSV file (RFC 4180: a header, CRLF line ends, quotes where needed); None past `max_bytes` of UTF-8."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for i, row in enumerate(rows):
        writer.writerow([csv_cell(v) for v in row])
        if i % 1000 == 999 and out.tell() > max_bytes:  # characters: never more than the bytes they take
            return None
    text = out.getvalue()
    return None if len(text) > max_bytes and len(text.encode("utf-8")) > max_bytes else text


def parquet_bytes(columns: list[str], rows: list[tuple]) -> bytes:
    """The Parquet file of `rows`, each column typed as pyarrow reads its values (a column of mixed
    types, as SQLite may give, is written as text)."""
    import pyarrow as pa  # only a Parquet download loads it
    import pyarrow.parquet as pq

    arrays = []
    for i in range(len(columns)):
        values = [row[i] for row in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else csv_cell(v) for v in values], pa.string()))
    table = pa.Table.from_arrays(arrays, names=list(columns))
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


@functools.lru_cache(maxsize=1)  # calls within one second share it
def _until(expires: int) -> str:
    """The end of a link's description: when it expires, to the minute."""
    return dt.datetime.fromtimestamp(expires, dt.UTC).isoformat(" ", "minutes")[:16] + " UTC."
