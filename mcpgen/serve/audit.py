"""The audit log: one JSON line per tool call, on stderr or in a rotating file.

    audit.setup(config.audit)   # mcpgen.yaml's `audit:` section; None leaves it off

A line holds who called (subject and client id from the verified token), which tool,
the arguments, rows, truncated, duration, outcome and error class:

    {"time": "2026-01-05T09:30:00.123Z", "subject": "alice", "client_id": "web",
     "tool": "my_orders", "arguments": {"card": "sha256:9f86d0..."}, "rows": 3,
     "truncated": false, "duration_ms": 4.2, "outcome": "ok", "error_class": null}

Arguments marked `sensitive: true` in the spec, and any whose name says password (or pwd), secret,
token, key or credential, are written as a hash (HMAC-SHA256 when `hash_key_env` names a key). Tokens
never reach this module: the verifier keeps none. An argument longer than MAX_LOGGED_VALUE bytes (as
JSON) is written as its hash and size too, and no line is longer than MAX_LOG_LINE bytes (`logs.json_line`:
arguments that still do not fit are written as one hash).

>>> digest("4111 1111 1111 1111", None)[:7], len(digest("4111 1111 1111 1111", None))
('sha256:', 71)
>>> digest("4111", b"key") == digest("4111", b"key") != digest("4111", b"other key")
True
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import logging.handlers
import os
import sys
import time
from typing import Any

from ..errors import MCPGenError
from ..identity import current
from ..limits import MAX_LOG_LINE, MAX_LOGGED_VALUE
from ..logs import CallStats, json_line
from ..spec.config import SECRET_NAME
from ..text import utf8_size

AUDIT = logging.getLogger("mcpgen.audit")
AUDIT.propagate = False  # its own sink, whatever the root logger does
AUDIT.setLevel(logging.WARNING)  # off until setup() names a sink: a root logger at INFO does not switch it on
_key: bytes | None = None


class AuditSetupError(MCPGenError):
    """The audit sink cannot be opened."""


def setup(config, environ=None) -> None:
    """Send audit lines where `config` (a `config.AuditConfig`, or None for off) says."""
    global _key
    environ = os.environ if environ is None else environ
    for old in list(AUDIT.handlers):
        AUDIT.removeHandler(old)
        old.close()
    AUDIT.setLevel(logging.WARNING)
    if config is None:
        return
    if config.hash_key_env:
        value = environ.get(config.hash_key_env, "")
        if not value:
            raise AuditSetupError(f"environment variable {config.hash_key_env} (audit.hash_key_env) is not set")
        _key = value.encode()
    else:
        _key = None
    if config.sink == "file":
        try:
            handler: logging.Handler = logging.handlers.RotatingFileHandler(
                config.path, maxBytes=config.max_bytes, backupCount=config.backups, encoding="utf-8"
            )
        except OSError as exc:
            raise AuditSetupError(f"the audit file {config.path} cannot be opened: {exc.strerror or exc}") from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    AUDIT.addHandler(handler)
    AUDIT.setLevel(logging.INFO)


def enabled() -> bool:
    return AUDIT.isEnabledFor(logging.INFO)


def digest(value: Any, key: bytes | None) -> str:
    """A stable hash of a JSON value: equal arguments can be matched, the value is not written."""
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    if key is not None:
        return "hmac:" + hmac.new(key, data, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def record(tool: str, arguments: Any, stats: CallStats, sensitive: frozenset[str]) -> None:
    """Write the line for one finished call."""
    caller = current()
    shown: dict[str, Any] | str | None
    if isinstance(arguments, dict):
        shown = {
            k: digest(v, _key) if k in sensitive or SECRET_NAME.search(str(k)) else _shown(v)
            for k, v in arguments.items()
        }
        size = utf8_size(json.dumps(shown, ensure_ascii=False, default=str))
        if size > MAX_LOG_LINE // 2:  # many arguments: the line keeps room for the rest
            shown = f"{digest(arguments, _key)} ({len(arguments):,} arguments, {size:,} bytes)"
    else:
        shown = None if arguments is None else digest(arguments, _key)
    line = {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "subject": caller.subject,
        "client_id": caller.client_id,
        "tool": tool,
        "arguments": shown,
        "rows": stats.rows,
        "truncated": stats.truncated,
        "duration_ms": round((time.perf_counter() - stats.started) * 1000, 1),
        "outcome": "error" if stats.error else "ok",
        "error_class": stats.error,
    }
    AUDIT.info(json_line(line))


def _shown(value: Any) -> Any:
    """An argument as the line shows it: itself, or its hash and size when longer than MAX_LOGGED_VALUE."""
    size = utf8_size(json.dumps(value, ensure_ascii=False, default=str))
    return value if size <= MAX_LOGGED_VALUE else f"{digest(value, _key)} ({size:,} bytes)"
