"""`mcpgen serve --http` as a real process on loopback, driven by the official MCP client and raw HTTP."""

from __future__ import annotations

import gc
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from servers import JSON_HEADERS, TOKEN, client, free_port, start, stop, wait_healthy

from mcpgen.cli import main

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "specs"
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("http") / "stderr.log"
    with open(log, "w") as err:
        proc = start(
            [
                str(SPECS),
                "--http",
                "--port",
                str(port),
                "--auth-token-env",
                "MCPGEN_TEST_TOKEN",
                "--max-body-bytes",
                str(MAX_BODY),
                "--log-format",
                "json",
            ],
            env={"MCPGEN_TEST_TOKEN": TOKEN},
            stderr=err,
        )
        try:
            health = wait_healthy(proc, port)
            yield {"port": port, "url": f"http://127.0.0.1:{port}/mcp", "proc": proc, "log": log, "health": health}
        finally:
            stop(proc)


def post(server, body, **headers) -> httpx2.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(
        server["url"], content=data, timeout=30, headers={**JSON_HEADERS, "authorization": f"Bearer {TOKEN}", **headers}
    )


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_healthz_reports_the_tool_count(server):
    assert server["health"] == {"status": "ok", "tools": 10}
    assert httpx2.get(f"http://127.0.0.1:{server['port']}/healthz").headers["cache-control"] == "no-store"


def test_the_official_client_with_the_right_token(server):
    async def main():
        async with client(server["url"]) as c:
            tools = await c.list_tools()
            result = await c.call_tool("top_cities", {"top_n": 3, "country": "JP"})
            bad = await c.call_tool("top_cities", {"top_n": 500})
            return tools, result, bad

    tools, result, bad = anyio.run(main)
    assert len(tools.tools) == 10 and "top_cities" in {t.name for t in tools.tools}
    assert not result.is_error
    assert result.structured_content["table"][1][0] == "Tokyo"
    assert bad.is_error and "top_n" in bad.content[0].text


def test_no_or_wrong_token_is_401(server):
    for auth in (None, "Bearer nope", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN):
        headers = {**JSON_HEADERS, **({"authorization": auth} if auth else {})}
        response = httpx2.post(server["url"], content=json.dumps(LIST), headers=headers)
        assert response.status_code == 401, (auth, response.status_code)
        assert response.headers["www-authenticate"].startswith("Bearer")

    async def main():
        async with client(server["url"], token="wrong"):
            pass

    with pytest.raises(BaseException):
        anyio.run(main)


def test_dns_rebinding_host_and_origin_are_rejected(server):
    port = server["port"]
    assert post(server, LIST, host=f"evil.example:{port}").status_code == 421
    assert post(server, LIST, host="127.0.0.1:1").status_code == 421
    assert post(server, LIST, origin="http://evil.example").status_code == 403
    assert post(server, LIST, origin=f"http://evil.example:{port}").status_code == 403
    assert post(server, LIST, origin=f"http://localhost:{port}").status_code == 200
    assert post(server, LIST, host=f"localhost:{port}").status_code == 200


def test_a_body_over_the_cap_is_413_and_the_server_lives(server):
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "top_cities", "arguments": {"country": "x" * (MAX_BODY * 2)}},
    }
    assert post(server, big).status_code == 413
    assert post(server, LIST).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"",
        b"[]",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "1.0", "id": 1}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
        b"\xff\xfe\x00",
        b'[{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]',
        b'{"id": 4, "method": "tools/list"}',
    ],
)
def test_malformed_json_rpc_is_a_protocol_error_and_the_server_lives(server, body):
    response = post(server, body)
    assert 400 <= response.status_code < 500, response.status_code
    message = response.json()["error"]["message"]  # one sentence: not pydantic's report, nor the body echoed
    assert "\n" not in message and "input_value" not in message and len(message) < 200, message
    assert server["proc"].poll() is None
    assert post(server, LIST).status_code == 200


DEEP = b"[" * 300 + b"]" * 300  # JSON to Python's reader, nested deeper than the SDK's reads
LIST_ID = b'{"jsonrpc": "2.0", "id": %s, "method": "tools/list"}'
CALL_WITH = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "top_cities", "arguments": %s}}'


@pytest.mark.parametrize(
    "body, code, request_id",
    [
        (LIST_ID % (b"9" * 5000), -32600, None),  # an id past 4,300 digits is no id
        (CALL_WITH % b'{"limit": %s}' % (b"9" * 5000), -32600, 7),
        (CALL_WITH % b'{"limit": %s.5}' % (b"9" * 5000), -32600, 7),
        (CALL_WITH % b'{"country": %s}' % DEEP, -32700, 7),
        (CALL_WITH % b'{"country": %s}' % (b"[" * 20_000 + b"]" * 20_000), -32700, None),  # too deep for both
        (CALL_WITH % b'{"country": "\\ud800"}', -32700, 7),  # a lone surrogate, which the SDK's reader refuses
        (LIST_ID % b'"l"' + b"x", -32700, None),
        (b'{"id": 4, "method": "tools/list"}', -32600, 4),  # no "jsonrpc": its id is read all the same
        (b'[{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]', -32600, None),
    ],
    ids=[
        "long-id",
        "long-number",
        "long-fraction",
        "deep",
        "deeper",
        "lone-surrogate",
        "not-json",
        "no-jsonrpc",
        "batch",
    ],
)
def test_what_the_sdk_cannot_parse_gets_the_stdio_sentence_and_the_id_when_readable(server, body, code, request_id):
    """The SDK would answer with its parser's words ("number out of range at line 1 column 4324") or pydantic's
    report: the answer is the one stdio gives, a 400, and the server goes on serving."""
    from mcpgen.serve.frames import NOT_JSON, NOT_ONE_MESSAGE

    response = post(server, body)
    assert response.status_code == 400, response.text
    sentence = NOT_JSON if code == -32700 else NOT_ONE_MESSAGE
    assert response.json() == {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": sentence}}
    assert post(server, LIST).status_code == 200


@pytest.mark.parametrize(
    "body, code, request_id",
    [
        (LIST_ID % (b"9" * 5000), -32600, None),
        (LIST_ID % b'"l"' + b"x", -32700, None),
        (b'{"id": 4, "method": "tools/list"}', -32600, 4),
        (b'[{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]', -32600, None),
        (b'{"jsonrpc": "2.0", "id": 5, "result": {}}', -32600, None),  # a response posted to the server
    ],
    ids=["long-id", "not-json", "no-jsonrpc", "batch", "a-response"],
)
def test_the_2026_wire_refuses_with_the_same_sentences(server, body, code, request_id):
    from mcpgen.serve.frames import NOT_JSON, NOT_ONE_MESSAGE

    response = post(server, body, **{"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"})
    assert response.status_code == 400, response.text
    sentence = NOT_JSON if code == -32700 else NOT_ONE_MESSAGE
    assert response.json() == {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": sentence}}


def test_unknown_tool_and_bad_arguments(server):
    response = post(server, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "drop_tables"}})
    assert response.status_code == 200
    answer = response.json()
    assert "error" in answer and "drop_tables" in answer["error"]["message"]
    response = post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "top_cities", "arguments": {"country": "'; DROP TABLE cities; --"}},
        },
    )
    result = response.json()["result"]
    assert result["isError"] and "country" in result["content"][0]["text"]
    assert post(server, LIST).status_code == 200


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize("uri", ["ui://mcpgen/nope", "file:///etc/passwd"])
def test_an_unknown_resource_on_each_wire_over_http(server, uri):
    """-32602 on 2026-07-28, -32002 on the handshake-era wire; error.data.uri on both."""
    modern = post(
        server,
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri, "_meta": MODERN_META}},
        **{"mcp-protocol-version": "2026-07-28", "mcp-method": "resources/read", "mcp-name": uri},
    ).json()
    legacy = post(server, {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": uri}}).json()
    assert (modern["error"]["code"], modern["error"]["data"]) == (-32602, {"uri": uri})
    assert (legacy["error"]["code"], legacy["error"]["data"]) == (-32002, {"uri": uri})
    assert post(server, LIST).status_code == 200


def test_the_handshake_era_initialize_declares_the_ui_extension_over_http(server):
    for version in ("2025-11-25", "2025-06-18"):
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        answer = post(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).json()
        extensions = answer["result"]["capabilities"]["extensions"]
        assert extensions == {
            "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
            "io.modelcontextprotocol/tasks": {},  # mcpgen.serve.tasks
        }, version


def test_one_json_log_line_per_call_on_stderr(server):
    post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "top_cities", "arguments": {"top_n": 0}},
        },
    )
    post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 10,
            "method": "tools/call",
            "params": {"name": "top_cities", "arguments": {"top_n": 2}},
        },
    )
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in server["log"].read_text().splitlines() if line.startswith("{")]
        calls = [line for line in lines if line.get("event") == "call"]
        if any(c["tool"] == "top_cities" and c["rows"] == 2 for c in calls):
            break
        time.sleep(0.1)
    call = next(c for c in calls if c["tool"] == "top_cities" and c["rows"] == 2)
    assert call["error"] is None and call["truncated"] is False and call["duration_ms"] >= 0
    assert any(c["error"] == "ArgumentError" for c in calls)
    assert TOKEN not in server["log"].read_text()


# Refusals happen before anything listens: the CLI runs in process.
@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_non_loopback_without_a_token_refuses_to_start(host):
    result = CliRunner().invoke(main, ["serve", str(SPECS), "--http", "--host", host, "--port", str(free_port())])
    assert result.exit_code == 2, result.output
    assert "--insecure-no-auth" in result.stderr and "token" in result.stderr and not result.stdout
    assert gc.isenabled()  # start-up turns the collector off for a while, and on again when it refuses


def test_a_named_token_variable_that_is_unset_refuses_to_start(monkeypatch):
    monkeypatch.delenv("MCPGEN_UNSET_TOKEN", raising=False)
    args = ["serve", str(SPECS), "--http", "--port", str(free_port()), "--auth-token-env", "MCPGEN_UNSET_TOKEN"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "MCPGEN_UNSET_TOKEN" in result.stderr and gc.isenabled()


def test_non_loopback_with_insecure_no_auth_starts():
    port = free_port()
    proc = start([str(SPECS), "--http", "--host", "0.0.0.0", "--port", str(port), "--insecure-no-auth"])
    try:
        assert wait_healthy(proc, port)["tools"] == 10
        # the Host check still applies on a wildcard bind: only loopback names and --allow-host
        response = httpx2.post(
            f"http://127.0.0.1:{port}/mcp",
            content=json.dumps(LIST),
            headers={**JSON_HEADERS, "host": "attacker.example"},
        )
        assert response.status_code == 421
    finally:
        stop(proc)


def test_short_load_run_has_no_errors():
    """The load benchmark's short version: a few hundred calls from many clients."""
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_http_load.py"), "--calls", "300", "--clients", "20", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["calls"] == 300 and report["errors"] == 0
    assert report["p50_ms"] > 0 and report["calls_per_s"] > 0


def test_a_taken_port_is_one_clear_sentence():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = start([str(SPECS), "--http", "--port", str(taken.getsockname()[1])])
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and b"cannot listen on 127.0.0.1:" in err and b"Traceback" not in err


def test_accepted_connections_have_tcp_nodelay():
    """Without it, kept-alive responses wait for the client's delayed ACK (see docs/benchmarks.md)."""
    from mcpgen.http.app import _listen

    listener = _listen("127.0.0.1", free_port())
    try:
        with socket.create_connection(listener.getsockname()):
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        listener.close()
