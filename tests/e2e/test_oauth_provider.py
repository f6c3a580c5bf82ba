"""`mcpgen serve --http` behind a real OpenID provider (oidc-provider on loopback, see tests/oidc.py):
real tokens verified through the provider's JWKS, users whose rows differ, rotation and outage."""

from __future__ import annotations

import json
import time

import anyio
import httpx2
import jwt
import pytest
import services
from oidc import Provider, require, rsa_jwk
from servers import JSON_HEADERS, client, free_port, start, stop, wait_healthy
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.slow

STATIC = "static-token-" + "t" * 24
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ORDERS = services.ORDERS


def project_files(root, provider: Provider, audience: str, table: str, role: str) -> None:
    (root / "specs").mkdir()
    (root / "mcpgen.yaml").write_text(
        f"""
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE orders AS SELECT * FROM (VALUES {", ".join(f"('{e}', {i}, {a})" for e, i, a in ORDERS)}) t(email, id, amount)
  pg:
    url: {make_url(services.POSTGRES_URL).set(username=role).render_as_string()}
    claim_settings: {{app.email: email}}
auth:
  issuer: {provider.issuer}
  audience: {audience}
  jwks_url: {provider.jwks_url}
  scopes: [mcp:read]
  leeway: 0
  jwks_min_refresh: 1s
  jwks_max_age: 2s
http:
  tokens_env: [MCPGEN_TEST_TOKEN]
audit:
  sink: file
  path: {root / "audit.jsonl"}
"""
    )
    spec = "sources: ['https://example.org/orders']\ncontent: '{{ row_count }} orders'\n"
    (root / "specs" / "my_orders.yaml").write_text(
        "description: The caller's own orders.\n"
        "parameters:\n  email: {type: string, description: The caller, from_claim: email}\n"
        "sql: SELECT id, amount FROM orders WHERE email = :email ORDER BY id\n" + spec
    )
    (root / "specs" / "pg_orders.yaml").write_text(
        f"description: The orders the database's row-level security shows the caller.\nconnection: pg\n"
        f"sql: SELECT id, amount FROM {table} ORDER BY id\n" + spec
    )
    (root / "specs" / "revenue.yaml").write_text(
        "description: Revenue.\nscopes: {any: [reports]}\nsql: SELECT SUM(amount) AS total FROM orders\n" + spec
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory, rls_table):
    require()
    root = tmp_path_factory.mktemp("oidc-project")
    provider = Provider([rsa_jwk("k1")], free_port()).start()
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    project_files(root, provider, audience, *rls_table)
    log = root / "stderr.log"
    with open(log, "w") as err:
        proc = start(
            [str(root / "specs"), "--http", "--port", str(port)], env={"MCPGEN_TEST_TOKEN": STATIC}, stderr=err
        )
        try:
            wait_healthy(proc, port)
            yield {
                "provider": provider,
                "url": audience,
                "port": port,
                "log": log,
                "table": rls_table,
                "audit": root / "audit.jsonl",
            }
        finally:
            stop(proc)
            provider.stop()


def post_list(url: str, token: str | None) -> httpx2.Response:
    headers = {**JSON_HEADERS, **({"authorization": f"Bearer {token}"} if token else {})}
    return httpx2.post(url, content=json.dumps(LIST), headers=headers, timeout=30)


def use(url: str, token: str, tool: str | None = None, arguments: dict | None = None):
    """(tool names listed, the call's result or the error text) through the official client."""

    async def run():
        async with client(url, token) as c:
            names = sorted(t.name for t in (await c.list_tools()).tools)
            if tool is None:
                return names, None
            try:
                return names, await c.call_tool(tool, arguments or {})
            except Exception as exc:
                return names, str(exc)

    return anyio.run(run)


def test_metadata_and_401_point_clients_to_the_issuer(setup):
    port = setup["port"]
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        meta = httpx2.get(f"http://127.0.0.1:{port}{path}").json()
        assert meta["resource"] == setup["url"]
        # (the SDK's metadata model writes a path-less issuer URL with a trailing slash)
        assert [u.rstrip("/") for u in meta["authorization_servers"]] == [setup["provider"].issuer]
    response = post_list(setup["url"], None)
    assert response.status_code == 401
    assert (
        f'resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'
        in response.headers["www-authenticate"]
    )


def test_client_credentials_token_sees_the_tools_its_scopes_allow(setup):
    provider, url = setup["provider"], setup["url"]
    names, hidden = use(url, provider.client_token(url), "revenue")
    _, unknown = use(url, provider.client_token(url), "no_such_tool")
    assert names == ["my_orders", "pg_orders"]
    assert hidden == unknown.replace("no_such_tool", "revenue")
    names, result = use(url, provider.client_token(url, "mcp:read reports"), "revenue")
    assert names == ["my_orders", "pg_orders", "revenue"]
    assert result.structured_content["table"] == [["total"], [35.0]]
    # A service has no email: the claim-bound tool says so in one sentence.
    _, result = use(url, provider.client_token(url), "my_orders")
    assert result.is_error
    assert (
        result.content[0].text == "This tool needs the caller's 'email' claim, and the access token does not carry it."
    )


def test_a_shared_token_still_works_beside_oauth(setup):
    names, result = use(setup["url"], STATIC, "revenue")
    assert names == ["my_orders", "pg_orders"]  # the server-wide scopes, no tool's own
    assert "Unknown tool" in result


def test_token_without_the_required_scope_is_403(setup):
    provider, url = setup["provider"], setup["url"]
    response = post_list(url, provider.client_token(url, scope="reports"))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


def test_bad_tokens_are_401(setup, tmp_path):
    provider, url = setup["provider"], setup["url"]
    real = provider.client_token(url)
    header, payload, _ = real.split(".")
    unsigned = jwt.encode(jwt.decode(real, options={"verify_signature": False}), None, algorithm="none")
    other = Provider(provider.keys, free_port()).start()  # same keys, another issuer
    try:
        wrong_issuer = other.client_token(url)
    finally:
        other.stop()
    brief = provider.client_token(url, client="brief")  # lives 2 s
    assert post_list(url, brief).status_code == 200
    time.sleep(3.1)
    refused = {
        "wrong audience": provider.client_token("http://127.0.0.1:1/elsewhere"),
        "wrong issuer": wrong_issuer,
        "alg none": unsigned,
        "alg none, real kid": f"{_none_header(header)}.{payload}.",
        "expired": brief,
        "garbage": "a.b.c",
    }
    for why, token in refused.items():
        assert post_list(url, token).status_code == 401, why
    assert post_list(url, real).status_code == 200
    assert real not in setup["log"].read_text()  # no token ever reaches the log


def _none_header(header: str) -> str:
    fields = json.loads(jwt.utils.base64url_decode(header))
    return jwt.utils.base64url_encode(json.dumps({**fields, "alg": "none"}).encode()).decode()


def test_two_users_one_tool_different_rows(setup, postgres_url):
    provider, url = setup["provider"], setup["url"]
    table, role = setup["table"]
    for user in ("alice", "bob"):
        email = f"{user}@example.com"
        token = provider.user_token(user, url)
        with services.connect("postgresql") as con, con.transaction():
            con.execute(f"SET LOCAL ROLE {role}")
            con.execute("SELECT set_config('app.email', %s, true)", (email,))
            direct = [list(r) for r in con.execute(f"SELECT id, amount FROM {table} ORDER BY id").fetchall()]
        _, by_claim = use(url, token, "my_orders")
        _, by_rls = use(url, token, "pg_orders")
        assert direct == [[i, a] for e, i, a in ORDERS if e == email]
        assert by_claim.structured_content["table"][1:] == direct
        assert by_rls.structured_content["table"][1:] == direct
    # Without the setting, the policy shows nothing: RLS, not the query, picked the rows.
    with services.connect("postgresql") as con:
        con.execute(f"SET ROLE {role}")
        assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)


def test_claim_bound_parameter_passed_as_an_argument_is_refused(setup):
    provider, url = setup["provider"], setup["url"]
    _, result = use(url, provider.user_token("alice", url), "my_orders", {"email": "bob@example.com"})
    assert result.is_error
    assert result.content[0].text == "Argument 'email' is set from the caller's identity and cannot be passed."


def test_the_audit_log_names_the_caller_and_never_the_token(setup):
    provider, url = setup["provider"], setup["url"]
    token = provider.user_token("bob", url)
    use(url, token, "pg_orders")
    use(url, token, "revenue", {"secret_note": "hush"})  # hidden from bob: refused, still recorded
    lines = [json.loads(line) for line in setup["audit"].read_text().splitlines()]
    ok, refused = lines[-2:]
    assert (ok["subject"], ok["client_id"], ok["tool"], ok["rows"], ok["outcome"]) == (
        "bob",
        "web",
        "pg_orders",
        1,
        "ok",
    )
    assert (refused["tool"], refused["outcome"], refused["error_class"]) == ("revenue", "error", "UnknownTool")
    assert refused["arguments"]["secret_note"].startswith("sha256:")
    text = setup["audit"].read_text()
    assert token not in text and token.split(".")[2] not in text and "hush" not in text


def test_key_rotation_then_jwks_outage(setup):
    """Runs last in this module: it replaces the provider's keys and then stops it."""
    provider, url = setup["provider"], setup["url"]
    old = provider.client_token(url)
    assert post_list(url, old).status_code == 200
    provider.restart([rsa_jwk("k2")])  # k1 leaves the JWKS
    new = provider.client_token(url)
    time.sleep(1.1)  # jwks_min_refresh
    assert post_list(url, new).status_code == 200  # unknown kid: the JWKS is fetched again
    time.sleep(1.1)
    assert post_list(url, old).status_code == 401  # its key is gone
    unused = provider.client_token(url)
    provider.stop()  # the JWKS endpoint is down
    time.sleep(2.1)  # jwks_max_age: the next token makes mcpgen try to fetch the keys, and fail
    assert post_list(url, unused).status_code == 200  # the cached keys keep working
    stranger = rsa_jwk("k3")
    claims = {**jwt.decode(new, options={"verify_signature": False})}
    forged = jwt.encode(claims, jwt.PyJWK(stranger).key, algorithm="RS256", headers={"kid": "k3"})
    assert post_list(url, forged).status_code == 401  # an unknown kid fails closed
    assert "fetching the JWKS failed" in setup["log"].read_text()
