"""Secrets kept out of every message and log line.

>>> redact("postgresql+psycopg://reader:s3cret@db:5432/x failed")
'postgresql+psycopg://reader:***@db:5432/x failed'
>>> redact("password=hunter2 sslmode=require")
'password=*** sslmode=require'
>>> redact("login as hunter22 refused", ["hunter22"])
'login as *** refused'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

from .spec.config import expand_env, secret_options

# scheme://user:password@host  ->  scheme://user:***@host
_URL_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'\"]*):(?P<pw>[^\s@]*)@")
# libpq / ODBC pairs whose value may be quoted: password='a b'
_QUOTED_PASSWORD = re.compile(r"(?i)\b(?P<key>password|passwd|pwd)\s*=\s*(?P<pw>'[^']*'|\"[^\"]*\")")
# password=..., pwd: ..., "password": "..."  (libpq DSNs, connect_args, JSON)
_KEY_VALUE = re.compile(
    r"""((?:password|passwd|pwd|secret|token|api_key)["']?\s*[=:]\s*["']?)[^\s"',;&)}]+""", re.IGNORECASE
)
# Authorization: Bearer xyz
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with passwords in URLs, key=value pairs and bearer tokens, and every given secret, as ***.

    Secrets shorter than three characters are left alone (they would blank out ordinary words);
    each is also looked for URL-quoted and unquoted."""
    text = _URL_USERINFO.sub(lambda m: f"{m['head']}:***@", str(text))
    text = _QUOTED_PASSWORD.sub(lambda m: f"{m['key']}=***", text)
    text = _KEY_VALUE.sub(r"\1***", text)
    text = _BEARER.sub(r"\1***", text)
    for secret in sorted({s for s in secrets if s and len(s) >= 3}, key=len, reverse=True):
        for form in {secret, quote(secret, safe=""), quote(secret), unquote(secret)}:
            if form:
                text = text.replace(form, "***")
    return text


def secrets_of(config: Any) -> list[str]:
    """Every password in a project config (literal or from the environment; in the url, the password
    field, or a connect_args option named like one), to redact from messages."""
    found = []
    for conn in getattr(config, "connections", {}).values():
        values = [getattr(conn, "password", None)]
        values += secret_options(getattr(conn, "connect_args", {}))
        url = getattr(conn, "url", None)
        if url and "@" in url.split("://", 1)[-1]:
            userinfo = url.split("://", 1)[-1].rpartition("@")[0]
            if ":" in userinfo:
                values.append(userinfo.split(":", 1)[1])
        for value in values:
            if not value:
                continue
            found.append(value)
            try:
                expanded = expand_env(value)
            except ValueError:
                continue
            found += [expanded, unquote(expanded)]
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)
