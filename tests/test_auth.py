"""Identity without a provider: JWT checks against a JWKS file, claim-bound parameters, scopes,
toolsets, the audit log and telemetry. The real provider's tests are in test_auth_provider.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult, TextContent
from oidc import ec_jwk, ed_jwk, public, rsa_jwk

from mcpgen import identity
from mcpgen.answer.results import DataToolOutput
from mcpgen.errors import ArgumentError
from mcpgen.http.auth import AuthSetupError, JWTVerifier, KeySet
from mcpgen.http.options import HTTPOptions, HTTPSetupError, check_options
from mcpgen.serve import audit, telemetry
from mcpgen.serve.project import open_project
from mcpgen.serve.registry import Registry
from mcpgen.serve.server import ToolServer
from mcpgen.spec.config import AuditConfig, AuthConfig, TelemetryConfig
from mcpgen.spec.models import Parameter
from mcpgen.spec.params import Arguments

ISSUER = "https://id.example.com"
AUDIENCE = "https://mcp.example.com/mcp"
KEYS = [rsa_jwk("rsa-1"), ec_jwk("ec-1"), ed_jwk("ed-1")]

PROJECT = {
    "mcpgen.yaml": """
connections:
  default:
    duckdb: ":memory:"
    init:
      - >-
        CREATE TABLE orders AS SELECT * FROM (VALUES
          ('alice@example.com', 1, 10.0), ('alice@example.com', 2, 20.0), ('bob@example.com', 3, 5.0)
        ) t(email, id, amount)
stdio_claims:
  email: bob@example.com
toolsets:
  sales_only: [sales]
""",
    "specs/my_orders.yaml": """
description: The caller's own orders.
tags: [sales]
parameters:
  email: {type: string, description: The caller's email, from_claim: email}
  min_amount: {type: number, description: Smallest amount, default: 0}
sql: SELECT id, amount FROM orders WHERE email = :email AND amount >= :min_amount ORDER BY id
sources: ["https://example.org/orders"]
content: "{{ row_count }} orders"
""",
    "specs/revenue.yaml": """
description: Revenue of all customers.
tags: [finance]
scopes: {any: [reports, admin]}
app: {theme: dark}
parameters:
  card: {type: string, description: A card number, sensitive: true, required: false}
sql: SELECT SUM(amount) AS total FROM orders
sources: ["https://example.org/revenue"]
content: "{{ rows[0].total }}"
""",
}


def sign(claims: dict, key: dict, **header) -> str:
    algorithm = key["alg"]
    private = jwt.PyJWK(key).key
    return jwt.encode(claims, private, algorithm=algorithm, headers={"kid": key["kid"], **header})


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def good_claims(**changes) -> dict:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 300, "iat": now, "scope": "mcp:read"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


@pytest.fixture(scope="module")
def verifier(tmp_path_factory) -> JWTVerifier:
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_text(json.dumps(public(KEYS)))
    return JWTVerifier(ISSUER, AUDIENCE, KeySet(file=path), leeway=30)


def verify(verifier: JWTVerifier, token: str) -> AccessToken | None:
    return anyio.run(verifier.verify_token, token)


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k["alg"])
def test_each_allowed_algorithm_verifies(verifier, key):
    found = verify(verifier, sign(good_claims(client_id="web", email="alice@example.com"), key))
    assert found is not None
    assert (found.subject, found.client_id, found.scopes) == ("alice", "web", ["mcp:read"])
    assert found.claims["email"] == "alice@example.com"
    assert found.token == ""  # the token itself is not kept


@pytest.mark.parametrize(
    "changes",
    [
        {"exp": -60},  # expired beyond the 30 s leeway (seconds from now)
        {"nbf": 120},  # not valid yet
        {"aud": "https://other.example.com/mcp"},
        {"iss": "https://evil.example.com"},
        {"exp": None},  # no expiry at all
    ],
    ids=["expired", "not-yet-valid", "wrong-audience", "wrong-issuer", "no-exp"],
)
def test_bad_claims_are_refused(verifier, changes):
    now = int(time.time())  # when the test runs, not when it was collected
    claims = good_claims(**{k: now + v if isinstance(v, int) else v for k, v in changes.items()})
    assert verify(verifier, sign(claims, KEYS[0])) is None
    assert verify(verifier, sign(good_claims(), KEYS[0])) is not None  # the same token, unchanged, passes


def test_leeway_accepts_small_clock_skew(verifier):
    found = verify(verifier, sign(good_claims(exp=int(time.time()) - 5), KEYS[0]))
    assert found is not None
    assert found.expires_at >= time.time()  # else the SDK's bearer middleware would refuse it after all


def test_a_verified_token_is_remembered_until_it_expires(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(public(KEYS)))
    verifier = JWTVerifier(ISSUER, AUDIENCE, KeySet(file=path), leeway=0)
    token = sign(good_claims(exp=int(time.time()) + 3), KEYS[0])  # 2-3 s: time for the first check
    first = verify(verifier, token)
    assert first is not None and verify(verifier, token) is first  # the second call is a lookup
    time.sleep(max(0.0, first.expires_at - time.time()) + 0.1)
    assert verify(verifier, token) is None  # remembered, yet refused once expired


def test_a_non_loopback_bind_with_oauth_needs_no_shared_token():
    config = AuthConfig(issuer=ISSUER, audience=AUDIENCE, jwks_url="https://id.example.com/jwks")
    check_options(HTTPOptions(host="0.0.0.0", auth=config))
    with pytest.raises(HTTPSetupError, match="without a bearer token"):
        check_options(HTTPOptions(host="0.0.0.0"))


def test_an_unusable_jwks_file_is_one_sentence(tmp_path):
    with pytest.raises(AuthSetupError, match=r"jwks_file .*missing.json cannot be read: No such file or directory$"):
        KeySet(file=tmp_path / "missing.json")
    (tmp_path / "symmetric.json").write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}))
    with pytest.raises(AuthSetupError, match="holds no RSA, EC or OKP signing key"):  # HMAC keys are never used
        KeySet(file=tmp_path / "symmetric.json")


def test_auth_config_takes_exactly_one_key_source():
    with pytest.raises(ValueError, match="exactly one of jwks_url and jwks_file"):
        AuthConfig(issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(ValueError, match="algorithms"):
        AuthConfig(issuer=ISSUER, audience=AUDIENCE, jwks_file="k.json", algorithms=["HS256"])


def test_alg_none_and_hmac_with_the_public_key_are_refused(verifier):
    unsigned = jwt.encode(good_claims(), None, algorithm="none", headers={"kid": "rsa-1"})
    assert verify(verifier, unsigned) is None
    # The classic confusion attack: HS256 "signed" with the public key as the shared secret
    # (built by hand: PyJWT itself refuses to sign so).
    public_pem = jwt.PyJWK(public([KEYS[0]])["keys"][0]).key.public_bytes(
        Encoding.PEM, PublicFormat.SubjectPublicKeyInfo
    )
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    body = b64url(json.dumps(good_claims()).encode())
    signature = b64url(hmac.new(public_pem, f"{head}.{body}".encode(), hashlib.sha256).digest())
    forged = f"{head}.{body}.{signature}"
    assert verify(verifier, forged) is None


def test_unknown_key_and_tampered_signature_are_refused(verifier):
    assert verify(verifier, sign(good_claims(), rsa_jwk("stranger"))) is None
    stranger = rsa_jwk("rsa-1")  # claims the kid of a known key, signed by another
    assert verify(verifier, sign(good_claims(), stranger)) is None
    assert verify(verifier, "not a token") is None


# --- claim-bound parameters -----------------------------------------------------------------


def bound_arguments() -> Arguments:
    return Arguments(
        {
            "email": Parameter(type="string", description="d", from_claim="email"),
            "n": Parameter(type="integer", description="d", default=3),
        }
    )


def test_claim_bound_parameter_is_not_in_the_input_schema():
    assert list(bound_arguments().schema["properties"]) == ["n"]


def test_claim_bound_parameter_takes_the_claim_and_refuses_an_argument():
    args = bound_arguments()
    token = auth_context_var.set(
        AuthenticatedUser(AccessToken(token="", client_id="c", scopes=[], claims={"email": "a@x.org"}))
    )
    try:
        assert args.validate({"n": 1}) == {"n": 1, "email": "a@x.org"}
        with pytest.raises(
            ArgumentError, match="Argument 'email' is set from the caller's identity and cannot be passed."
        ):
            args.validate({"email": "bob@x.org"})
    finally:
        auth_context_var.reset(token)


def test_missing_claim_is_one_sentence():
    with pytest.raises(ArgumentError) as err:
        bound_arguments().validate({})
    assert str(err.value) == "This tool needs the caller's 'email' claim, and the access token does not carry it."


def test_from_claim_refuses_a_default():
    with pytest.raises(ValueError, match="from_claim parameter takes no default"):
        Parameter(type="string", description="d", from_claim="email", default="x")


# --- scopes, toolsets, stdio identity (in-process server, official client) -------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name, text in PROJECT.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    project = open_project(tmp_path / "specs")
    yield project
    project.close()


def as_token(scopes: list[str], claims: dict | None = None):
    access = AccessToken(token="", client_id="web", scopes=scopes, subject="alice", claims=claims or {})
    return auth_context_var.set(AuthenticatedUser(access))


async def list_and_call(server: ToolServer, name: str, arguments: dict | None = None):
    async with Client(server.server) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        try:
            result = await client.call_tool(name, arguments or {})
            return names, result
        except Exception as exc:  # the JSON-RPC error of an unknown tool
            return names, str(exc)


def test_a_tool_is_hidden_and_unknown_without_its_scope(project):
    server = ToolServer(project.registry)
    token = as_token(["mcp:read"], {"email": "alice@example.com"})
    try:
        names, answer = anyio.run(list_and_call, server, "revenue")
        _, unknown = anyio.run(list_and_call, server, "no_such_tool")
    finally:
        auth_context_var.reset(token)
    assert names == ["my_orders"]
    assert answer == unknown.replace("no_such_tool", "revenue")  # the same error as an unknown tool
    token = as_token(["admin"])  # any of [reports, admin]
    try:
        names, answer = anyio.run(list_and_call, server, "revenue")
    finally:
        auth_context_var.reset(token)
    assert names == ["my_orders", "revenue"] and answer.content[0].text == "35.0"


def test_an_app_of_hidden_tools_is_hidden_too(project):
    """revenue's own app settings give it its own ui:// resource, named after it."""
    server = ToolServer(project.registry)

    async def resources():
        async with Client(server.server) as client:
            uris = sorted(str(r.uri) for r in (await client.list_resources()).resources)
            own = next(u for u in map(str, project.registry.apps) if u.endswith("/revenue"))
            try:
                await client.read_resource(own)
                return uris, None
            except Exception as exc:
                return uris, str(exc)

    token = as_token(["mcp:read"])
    try:
        uris, refused = anyio.run(resources)
    finally:
        auth_context_var.reset(token)
    assert not any(u.endswith("/revenue") for u in uris) and len(uris) == 1
    assert "Unknown resource" in refused
    token = as_token(["reports"])
    try:
        uris, _ = anyio.run(resources)
    finally:
        auth_context_var.reset(token)
    assert any(u.endswith("/revenue") for u in uris) and len(uris) == 2


def test_claims_choose_the_rows(project):
    server = ToolServer(project.registry)
    expected = {"alice@example.com": [[1, 10.0], [2, 20.0]], "bob@example.com": [[3, 5.0]]}  # the init's rows
    for email, rows in expected.items():
        token = as_token([], {"email": email})
        try:
            _, result = anyio.run(list_and_call, server, "my_orders")
        finally:
            auth_context_var.reset(token)
        assert result.structured_content["table"][1:] == rows


def test_toolset_serves_tagged_tools_only(project):
    server = ToolServer(project.registry, tags=frozenset(project.loaded.config.toolsets["sales_only"]))
    token = as_token(["reports"], {"email": "bob@example.com"})
    try:
        names, answer = anyio.run(list_and_call, server, "revenue")
    finally:
        auth_context_var.reset(token)
    assert names == ["my_orders"] and "Unknown tool" in answer


@pytest.mark.slow  # a fresh interpreter
def test_stdio_user_takes_claims_from_the_config(tmp_path):
    for name, text in PROJECT.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "call", "my_orders", "-s", str(tmp_path / "specs"), "--json"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert json.loads(out.stdout)["structuredContent"]["table"] == [["id", "amount"], [3, 5.0]]


# --- audit and telemetry ---------------------------------------------------------------------


def test_audit_line_per_call_with_sensitive_arguments_hashed(project, tmp_path):
    path = tmp_path / "audit.log"
    audit.setup(AuditConfig(sink="file", path=str(path)))
    token = as_token(["reports"], {"email": "alice@example.com"})
    try:
        anyio.run(project.registry.call, "revenue", {"card": "4111 1111 1111 1111"})
        anyio.run(project.registry.call, "my_orders", {"email": "x@y.z"})
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


def test_telemetry_spans_and_metrics(project):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.setup(TelemetryConfig(), tracer_provider, MeterProvider(metric_readers=[reader]))
    token = as_token([], {"email": "alice@example.com"})
    try:
        anyio.run(project.registry.call, "my_orders", {})
        anyio.run(project.registry.call, "my_orders", {"min_amount": "x"})
        metrics = {
            m.name: m
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        }
    finally:
        telemetry.setup(None)
        auth_context_var.reset(token)
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == ["tools/call my_orders"] * 2
    assert finished[0].attributes["mcpgen.rows"] == 2
    assert finished[1].attributes["error.type"] == "ArgumentError"
    assert sum(p.value for p in metrics["mcpgen.tool.calls"].data.data_points) == 2
    assert sum(p.value for p in metrics["mcpgen.tool.errors"].data.data_points) == 1
    assert sum(p.count for p in metrics["mcpgen.tool.duration"].data.data_points) == 2
    assert sum(p.sum for p in metrics["mcpgen.tool.rows"].data.data_points) == 2


@pytest.mark.slow  # a fresh interpreter
def test_nothing_of_opentelemetry_sdk_is_imported_when_off(tmp_path):
    for name, text in PROJECT.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    code = (
        "import sys; from mcpgen.serve.project import open_project; from mcpgen import identity;"
        f"p = open_project({str(tmp_path / 'specs')!r}); u = identity.local_user({{'email': 'bob@example.com'}});"
        "u.__enter__(); p.registry.call_sync('my_orders', {}); p.close();"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk') or m.startswith('opentelemetry.exporter')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1]
    )
    assert out.stdout.strip() == "[]", out.stderr


# --- the PostgreSQL row-level security hook, on the engine itself ----------------------------


def test_claim_settings_are_transaction_local_and_keep_the_timeout(rls_table):
    import services
    from sqlalchemy.engine import make_url

    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.spec.config import URLConnection

    table, role = rls_table
    url = make_url(services.POSTGRES_URL).set(username=role).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine(
        "pg", URLConnection(url=url, pool_size=1, max_overflow=0, claim_settings={"app.email": "email"})
    )
    try:
        query = engine.prepare(f"SELECT id, current_setting('statement_timeout') AS limit_ FROM {table} ORDER BY id")
        seen = {}
        for email in ("alice@example.com", "bob@example.com", "alice@example.com"):
            token = as_token([], {"email": email})
            try:
                seen[email] = engine.run(query, {}, max_rows=10, timeout=7).rows
            finally:
                auth_context_var.reset(token)
        assert [r[0] for r in seen["alice@example.com"]] == [1, 2]
        assert [r[0] for r in seen["bob@example.com"]] == [3]
        assert {r[1] for rows in seen.values() for r in rows} == {"7s"}  # the ROLLBACK did not undo the timeout
        with engine._engine.connect() as con:  # the same pooled connection: nothing of the caller is left
            assert con.exec_driver_sql("SELECT current_setting('app.email', true)").scalar() in ("", None)
            assert con.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() == 0
        with pytest.raises(ArgumentError, match="'email' claim"):  # no claim: refused before any query
            engine.run(query, {}, max_rows=10, timeout=7)
    finally:
        engine.close()


@pytest.mark.slow
def test_over_stdio_claims_come_from_the_config_or_the_call_is_refused(tmp_path):
    from mcp import StdioServerParameters

    for name, text in PROJECT.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "specs" / "team_orders.yaml").write_text(
        PROJECT["specs/my_orders.yaml"].replace("from_claim: email", "from_claim: team")
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpgen.cli", "serve", str(tmp_path / "specs")],
        cwd=str(tmp_path),
        env=dict(os.environ),  # this checkout's mcpgen (PYTHONPATH), not only the SDK's default variables
    )

    async def run():
        async with Client(params) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            return names, await client.call_tool("my_orders", {}), await client.call_tool("team_orders", {})

    names, mine, team = anyio.run(run)
    assert names == ["my_orders", "revenue", "team_orders"]  # the local user may use every tool
    assert mine.structured_content["table"] == [["id", "amount"], [3, 5.0]]  # stdio_claims: bob
    assert team.is_error
    assert (
        team.content[0].text
        == "This tool needs the caller's 'team' claim, and mcpgen.yaml's stdio_claims does not set it."
    )


def test_audit_file_rotates(project, tmp_path):
    path = tmp_path / "audit.log"
    audit.setup(AuditConfig(sink="file", path=str(path), max_bytes=1024, backups=2))
    try:
        for _ in range(30):
            anyio.run(project.registry.call, "revenue", {})
    finally:
        audit.setup(None)
    files = sorted(p.name for p in tmp_path.glob("audit.log*"))
    assert files == ["audit.log", "audit.log.1", "audit.log.2"]
    assert all(p.stat().st_size <= 1024 for p in tmp_path.glob("audit.log*"))


def test_telemetry_exports_over_otlp(project):
    """A loopback HTTP receiver stands in for the collector: spans and metrics arrive as OTLP protobuf."""
    import http.server
    import threading

    received: list[tuple[str, str]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            received.append((self.path, self.headers["content-type"]))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    collector = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
        telemetry.setup(TelemetryConfig(otlp_endpoint=endpoint))
        anyio.run(project.registry.call, "revenue", {})
        telemetry.shutdown()  # flushes both exporters
    finally:
        telemetry.setup(None)
        collector.shutdown()
    assert ("/v1/traces", "application/x-protobuf") in received
    assert ("/v1/metrics", "application/x-protobuf") in received


def test_hand_written_tools_take_scopes_and_see_the_caller():
    registry = Registry()

    @registry.tool(scopes=["reports"], tags=["finance"])
    def whoami() -> DataToolOutput:
        """Who is calling."""
        caller = identity.current()
        return CallToolResult(
            content=[TextContent(type="text", text=f"{caller.subject} via {caller.client_id}")],
            structured_content={"sources": ["https://example.org/"]},
        )

    server = ToolServer(registry)
    token = as_token(["reports"])
    try:
        names, result = anyio.run(list_and_call, server, "whoami")
    finally:
        auth_context_var.reset(token)
    assert names == ["whoami"] and result.content[0].text == "alice via web"
    assert registry.get("whoami").tags == {"finance"}
    token = as_token([])
    try:
        names, _ = anyio.run(list_and_call, server, "whoami")
    finally:
        auth_context_var.reset(token)
    assert names == []
