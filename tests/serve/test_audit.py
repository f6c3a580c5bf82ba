"""The audit log: one JSON line per call, sensitive arguments hashed, the file rotated."""

from __future__ import annotations

import json

import anyio
import pytest
from callers import as_token
from mcp.server.auth.middleware.auth_context import auth_context_var

from mcpgen.limits import MAX_LOG_LINE, MAX_LOGGED_VALUE
from mcpgen.logs import CallStats
from mcpgen.serve import audit
from mcpgen.spec.config import AuditConfig


def test_audit_line_per_call_with_sensitive_arguments_hashed(orders_project, tmp_path):
    path = tmp_path / "audit.log"
    audit.setup(AuditConfig(sink="file", path=str(path)))
    token = as_token(["reports"], {"email": "alice@example.com"})
    try:
        anyio.run(orders_project.registry.call, "revenue", {"card": "4111 1111 1111 1111"})
        anyio.run(orders_project.registry.call, "my_orders", {"email": "x@y.z"})
    finally:
        auth_context_var.reset(token)
        audit.setup(None)
    first, second = [json.loads(line) for line in path.read_text().splitlines()]
    assert first["arguments"]["card"] == audit.digest("4111 1111 1111 1111", None)
    assert "4111" not in path.read_text()
    assert (first["subject"], first["client_id"], first["tool"], first["rows"], first["outcome"]) == (
        "alice",
        "web",
        "revenue",
        1,
        "ok",
    )
    assert (second["outcome"], second["error_class"]) == ("error", "ArgumentError")
    assert set(first) == {
        "time",
        "subject",
        "client_id",
        "tool",
        "arguments",
        "rows",
        "truncated",
        "duration_ms",
        "outcome",
        "error_class",
    }


def test_audit_file_rotates(orders_project, tmp_path):
    path = tmp_path / "audit.log"
    audit.setup(AuditConfig(sink="file", path=str(path), max_bytes=1024, backups=2))
    try:
        for _ in range(30):
            anyio.run(orders_project.registry.call, "revenue", {})
    finally:
        audit.setup(None)
    files = sorted(p.name for p in tmp_path.glob("audit.log*"))
    assert files == ["audit.log", "audit.log.1", "audit.log.2"]
    assert all(p.stat().st_size <= 1024 for p in tmp_path.glob("audit.log*"))


HASHED = ["password", "db_password", "passwd", "passphrase", "pwd", "secret", "client_secret", "token"]
HASHED += ["refresh_token", "key", "KEY", "api_key", "apiKey", "api-key", "license_key", "private_key"]
HASHED += ["privateKey", "ssh_key_path", "LicenseKey", "credential", "aws_credentials", "monkey"]
SHOWN = ["country", "top_n", "city", "limit", "email", "start_date", "kind", "ids", "query", "name"]


def test_names_that_say_key_secret_token_or_password_are_hashed(tmp_path):
    """The rule docs/auth.md states, on a table of names; the other names stay readable."""
    path = tmp_path / "audit.log"
    audit.setup(AuditConfig(sink="file", path=str(path)))
    try:
        audit.record("tool", {name: f"value-of-{name}" for name in HASHED + SHOWN}, CallStats(), frozenset())
    finally:
        audit.setup(None)
    text = path.read_text()
    logged = json.loads(text)["arguments"]
    for name in HASHED:
        assert logged[name] == audit.digest(f"value-of-{name}", None), name
        assert f'"value-of-{name}"' not in text, name
    for name in SHOWN:
        assert logged[name] == f"value-of-{name}", name


HOSTILE = {
    "long value": {"q": "x" * 1_000_000},
    "wide unicode": {"q": "\N{GRINNING FACE}" * 300_000, "city": "\N{CJK UNIFIED IDEOGRAPH-4E00}" * 5000},
    "control characters": {"q": "\x01" * 200_000},  # six bytes each once escaped as JSON
    "many arguments": {f"arg{i}": "v" * 60 for i in range(10_000)},
    "long names": {"n" * 100_000: 1, "\N{GRINNING FACE}" * 50_000: [1] * 50_000},
    "a lone surrogate": {"q": "\ud800" * 100_000},
}


@pytest.mark.parametrize("arguments", HOSTILE.values(), ids=HOSTILE.keys())
def test_an_audit_line_stays_within_its_cap_whatever_the_arguments(tmp_path, arguments):
    """One call's line, in real bytes in the file, is at most MAX_LOG_LINE however big the arguments are,
    is JSON still, and lets equal arguments be matched (a long one is written as its hash and size)."""
    path = tmp_path / "audit.log"
    audit.setup(AuditConfig(sink="file", path=str(path)))
    try:
        audit.record("t" * 200_000, arguments, CallStats(), frozenset())
        audit.record("short", {"country": "JP", "q": "x" * 2000}, CallStats(), frozenset())
    finally:
        audit.setup(None)
    first, second = path.read_bytes().splitlines()
    assert len(first) <= MAX_LOG_LINE, len(first)
    line = json.loads(first)
    assert line["tool"].startswith("ttt") and "bytes, cut" in line["tool"]
    shown = line["arguments"]
    assert isinstance(shown, str) or all(len(json.dumps(v).encode()) <= MAX_LOGGED_VALUE + 100 for v in shown.values())
    kept = json.loads(second)["arguments"]
    assert kept["country"] == "JP" and kept["q"] == f"{audit.digest('x' * 2000, None)} (2,002 bytes)"


def test_a_root_logger_at_info_leaves_the_audit_off_until_setup():
    """Another library of the process (the MCP SDK's MCPServer, say) may set the root logger to INFO:
    the audit stays off (no line is built for nowhere) until setup() names a sink."""
    import subprocess
    import sys

    code = (
        "import logging; logging.getLogger().setLevel(logging.INFO); from mcpgen.serve import audit; "
        "from mcpgen.spec.config import AuditConfig; print(audit.enabled()); "
        "audit.setup(AuditConfig(sink='stderr')); print(audit.enabled())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True"]
