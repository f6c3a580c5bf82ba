"""`sources:` entries: absolute http(s) URLs with a literal host.

>>> source_problem("https://example.org/{{ city }}") is None, source_problem("example.org")
(True, 'is not an absolute http(s) URL (write it with https:// or http://)')
"""

from __future__ import annotations

import re

_URL_HOST = re.compile(r"^https?://[^\s/?#{}@]+(?=[/?#]|$)")


def source_problem(source: str) -> str | None:
    """Why a `sources:` entry is not an absolute http(s) URL with a literal host, or None."""
    if not re.match(r"^https?://", source):
        return "is not an absolute http(s) URL (write it with https:// or http://)"
    head = re.split(r"\{[{%#]", source, maxsplit=1)[0]
    if head != source and not re.match(r"^https?://[^\s/?#{}@]+[/?#]", head):
        # `https://data.example.org{{ p }}` with p = `.evil.example` is another host
        return "must spell out its host and end it with '/', '?' or '#' before the first template expression"
    if not _URL_HOST.match(head):
        return "is not a valid URL: it needs a host name and no spaces"
    if re.search(r"\s", head):
        return "is not a valid URL: it contains spaces"
    return None
