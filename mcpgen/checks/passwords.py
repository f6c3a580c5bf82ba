"""Passwords written out in `mcpgen.yaml` connection URLs.

>>> literal_password("postgresql://reader:secret@db/analytics"), literal_password("postgresql://reader:${PW}@db/x")
(True, False)
"""

from __future__ import annotations

import re


def literal_password(url: str) -> bool:
    """Whether a connection URL carries a password written out (not ${VAR})."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0] if "@" not in rest else rest.rpartition("@")[0]
    if "@" not in rest or ":" not in netloc:
        return False
    password = netloc.split(":", 1)[1]
    return bool(password) and not re.fullmatch(r"(\$\{[^}]*\})+", password)
