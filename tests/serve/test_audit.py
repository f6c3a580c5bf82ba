"""The audit log: one JSON line per call, sensitive arguments hashed, the file rotated."""

from __future__ import annotations

import json

import anyio
from callers import as_token
from mcp.server.auth.middleware.auth_context import auth_context_var

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
