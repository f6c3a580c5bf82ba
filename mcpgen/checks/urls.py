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
    if not _URL_HOST.match(head) and not (head == source and _URL_HOST.match(source)):
        if head != source:
            return "must spell out its host: a template may fill in the path or the query, not the host"
        return "is not a valid URL: it needs a host name and no spaces"
    if re.search(r"\s", head):
        return "is not a valid URL: it contains spaces"
    return None
