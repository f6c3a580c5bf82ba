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
# A key that names a secret (sslpassword, PGPASSWORD, client_secret, api_key, access_token) and its value.
_KEY = r"[A-Za-z_]*(?:password|passwd|pwd|secret|token|api_key)"
_QUOTED = r"'(?:[^'\\\n]|\\.|'')*'|\"(?:[^\"\\\n]|\\.)*\""
_VALUE = rf"{_QUOTED}|\$?\{{[^}}\n]*\}}|[^\s\"',;&)}}]+"
_SECRET_VALUES = [
    # password=s3cret, PWD={a;b}, password='two words', ?token=x&  (libpq and ODBC strings, DSNs, URL queries)
    re.compile(rf"(?i)(?P<key>\b{_KEY}\s*=\s*)(?:{_VALUE})"),
    # "password": "s3cret", 'passwd': 's3cret'  (JSON, Python's reprs of driver options)
    re.compile(rf"(?i)(?P<key>([\"']){_KEY}\2\s*:\s*)(?:{_QUOTED}|[^\s,}}\]]+)"),
    # `key: value` whose value is one word or quoted and ends the line or its clause, wherever the key stands
    # (a YAML line, `file:3:5:   password: s3cret`, `failed: password: s3cret, retry`); not prose that goes on
    # after a colon ("using password: YES)", "connections.db.password: Input should be a valid string")
    re.compile(
        rf"(?im)(?P<key>(?<![A-Za-z0-9_]){_KEY}[ \t]*:[ \t]+)(?:{_QUOTED}|[^\s#'\",;)\]}}]+)(?=[ \t]*(?:#.*)?$|[ \t]*[,;])"
    ),
    # SQL that a driver's message quotes: PASSWORD 'pw', SECRET 'key', IDENTIFIED BY 'pw'
    re.compile(rf"(?i)(?P<key>\b(?:{_KEY}|identified\s+by)\s+)'(?:[^'\\\n]|\\.|'')*'"),
]
# Authorization: Bearer xyz
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with the values of passwords in URLs, key=value pairs (libpq, ODBC, JSON, a YAML line, SQL)
    and bearer tokens, and every given secret, as ***; the words around them stay.

    Secrets shorter than three characters are left alone (they would blank out ordinary words);
    each is also looked for URL-quoted and unquoted."""
    text = _URL_USERINFO.sub(lambda m: f"{m['head']}:***@", str(text))
    for shape in _SECRET_VALUES:
        text = shape.sub(lambda m: f"{m['key']}***", text)
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
