"""A PostgreSQL that goes away and comes back costs only the calls made while it was down.

The shared PostgreSQL service is never stopped (other tests use it). This test's connection
goes through a small TCP proxy of its own (127.0.0.1:<free port> -> the service), so taking
"the database" down means: stop the proxy listening (new connections are refused, as by a
stopped server) and terminate this connection's backends with pg_terminate_backend (its
sessions die, as in a crash). Bringing it back means: listen again on the same port.

Two ways in: open_project + registry.call_sync in process, and the real `mcpgen serve` over
stdio driven by the official MCP client, with the database down when the server starts.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path

import anyio
import pytest
import services
import yaml
from mcp import Client, StdioServerParameters
from sqlalchemy.engine import make_url
from tcpproxy import Proxy

from mcpgen.serve.project import open_project

SECRET = "0utage-Pa55word"  # trust auth accepts any password; it must never show up in a message


@pytest.fixture
def proxy(postgres_url):
    url = make_url(postgres_url)
    p = Proxy(url.host or "127.0.0.1", url.port or 5432)
    yield p
    p.close()


def kill_backends(application_name: str) -> int:
    """pg_terminate_backend for every session of this test's connection (through the direct service port)."""
    with services.connect("postgresql") as con:
        return con.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            [application_name],
        ).fetchone()[0]


def go_down(proxy: Proxy, application_name: str) -> None:
    proxy.stop()
    kill_backends(application_name)
    deadline = time.monotonic() + 5
    while proxy.open_connections and time.monotonic() < deadline:  # the killed sessions' sockets close
        time.sleep(0.02)
    assert proxy.open_connections == 0


def write_project(folder: Path, postgres_url: str, proxy: Proxy, table: str, application_name: str) -> Path:
    """A project whose `default` connection reaches PostgreSQL through the proxy, with one spec."""
    url = make_url(postgres_url).set(host="127.0.0.1", port=proxy.port, password=None)
    config = {
        "connections": {
            "default": {
                "url": url.render_as_string(hide_password=False),
                "password": "${MCPGEN_TEST_OUTAGE_PW}",
                "pool_size": 2,
                "max_overflow": 2,
                "connect_args": {"application_name": application_name, "connect_timeout": 3},
            }
        }
    }
    (folder / "mcpgen.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    specs = folder / "specs"
    specs.mkdir()
    (specs / "largest_cities.yaml").write_text(
        yaml.safe_dump(
            {
                "description": "The largest cities of one country.",
                "parameters": {"country": {"type": "string", "description": "ISO code", "default": "JP"}},
                "sql": f"SELECT name, population FROM {table} WHERE country_code = :country "
                "ORDER BY population DESC, name LIMIT 3",
                "sources": ["https://www.geonames.org/"],
                "content": "{% for r in rows %}{{ r.name }} {% endfor %}",
            },
            sort_keys=False,
        )
    )
    return specs


def assert_clear_outage(text: str, proxy: Proxy) -> None:
    assert text.lower().startswith("connection 'default' is unavailable: "), text
    for leak in (SECRET, "postgresql", "psycopg", "postgres@", "://", f":{proxy.port}"):
        assert leak not in text, f"{leak!r} in {text!r}"
    assert "Traceback" not in text and "\n" not in text.strip()


EXPECTED = [["name", "population"], ["Tokyo", 9733276], ["Yokohama", 3777491], ["Osaka", 2753862]]


def test_postgres_killed_and_back_in_process(postgres_cities, postgres_url, proxy, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MCPGEN_TEST_OUTAGE_PW", SECRET)
    app = f"mcpgen_outage_{secrets.token_hex(4)}"
    specs = write_project(tmp_path, postgres_url, proxy, postgres_cities, app)
    proxy.start()
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    try:
        good = project.registry.call_sync("largest_cities", {})
        assert not good.is_error, good.content[0].text
        assert good.structured_content["table"] == EXPECTED

        go_down(proxy, app)
        for _ in range(3):  # every call while it is down fails clearly, and fast
            start = time.monotonic()
            down = project.registry.call_sync("largest_cities", {"country": "FR"})
            assert down.is_error and time.monotonic() - start < 5
            assert_clear_outage(down.content[0].text, proxy)

        accepted = proxy.accepted
        proxy.start()  # the database is back: same project, same engine, nothing restarted
        back = project.registry.call_sync("largest_cities", {})
        assert not back.is_error, back.content[0].text
        assert proxy.accepted > accepted  # a new session, through the proxy
        assert back.structured_content["table"] == EXPECTED
        assert (
            project.registry.call_sync("largest_cities", {"country": "JP"}).structured_content
            == good.structured_content
        )
    finally:
        project.close()
    assert SECRET not in caplog.text


@pytest.mark.slow
def test_serve_starts_with_postgres_down_then_recovers_twice(postgres_cities, postgres_url, proxy, tmp_path):
    """`mcpgen serve` over stdio: starts while the database is down, fails those calls clearly,
    answers once it is up, then survives a kill (sessions terminated, port closed) and answers
    again when it is back: the same server process throughout."""
    app = f"mcpgen_outage_{secrets.token_hex(4)}"
    specs = write_project(tmp_path, postgres_url, proxy, postgres_cities, app)
    params = StdioServerParameters(
        command=shutil.which("mcpgen"),
        args=["serve", str(specs)],
        cwd=str(tmp_path),
        env={**os.environ, "MCPGEN_TEST_OUTAGE_PW": SECRET},
    )

    async def session():
        with anyio.fail_after(60):
            await check()

    async def check():
        async with Client(params) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["largest_cities"]

            down = await client.call_tool("largest_cities", {})  # down since before the server started
            assert down.is_error
            assert_clear_outage(down.content[0].text, proxy)

            proxy.start()
            up = await client.call_tool("largest_cities", {})
            assert not up.is_error, up.content[0].text
            assert up.structured_content["table"] == EXPECTED

            go_down(proxy, app)
            for country in ("JP", "FR"):
                again = await client.call_tool("largest_cities", {"country": country})
                assert again.is_error
                assert_clear_outage(again.content[0].text, proxy)
            assert [t.name for t in (await client.list_tools()).tools] == ["largest_cities"]  # still serving

            proxy.start()
            back = await client.call_tool("largest_cities", {})
            assert not back.is_error, back.content[0].text
            assert back.structured_content["table"] == EXPECTED

    anyio.run(session)
