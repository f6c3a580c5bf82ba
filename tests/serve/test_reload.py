"""`mcpgen serve --reload`: edit specs in a temporary project while it serves (stdio and HTTP)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from servers import JSON_HEADERS, free_port, stop, wait_healthy

from mcpgen.serve.project import open_project
from mcpgen.serve.reload import Reloader
from mcpgen.serve.server import ToolServer

pytestmark = pytest.mark.slow

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE cities AS SELECT * FROM (VALUES (1, 'Oslo'), (2, 'Bergen')) t(id, name)
"""

COUNT = """\
description: How many cities there are.
sql: SELECT count(*) AS n FROM cities
sources: [https://example.org/]
content: "{{ rows[0].n }} cities"
"""

NAMES = """\
description: The names of the cities.
sql: SELECT name FROM cities ORDER BY id
sources: [https://example.org/]
content: "{{ rows | map(attribute='name') | join_names }}"
"""

# line 2 holds the write: the error must point there
BROKEN = """\
description: How many cities there are.
sql: DELETE FROM cities
sources: [https://example.org/]
content: "{{ rows[0].n }} cities"
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text(CONFIG)
    (tmp_path / "specs" / "count_cities.yaml").write_text(COUNT)
    return tmp_path


def wait_for(predicate, seconds: float = 15, what: str = "condition"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_stdio_reload_valid_then_invalid(project):
    specs = project / "specs"
    errlog_path = project / "stderr.log"

    async def main():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcpgen.cli", "serve", str(specs), "--reload"], cwd=str(project)
        )
        with open(errlog_path, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as c:
                assert c.server_capabilities.tools.list_changed
                assert [t.name for t in (await c.list_tools()).tools] == ["count_cities"]
                await anyio.sleep(0.5)  # let the watcher start
                with anyio.fail_after(20):
                    async with c.listen(tools_list_changed=True) as sub:
                        (specs / "names.yaml").write_text(NAMES)
                        async for _event in sub:  # tools/list_changed arrived
                            break
                names = sorted(t.name for t in (await c.list_tools(cache_mode="refresh")).tools)
                assert names == ["count_cities", "names"]
                result = await c.call_tool("names", {})
                assert not result.is_error and result.content[0].text == "Oslo and Bergen"

                # an invalid edit: the last good tools keep serving, the error is logged with file:line
                (specs / "count_cities.yaml").write_text(BROKEN)
                pattern = re.compile(re.escape(str(specs / "count_cities.yaml")) + r":2:\d+: .*(DELETE|read)")
                with anyio.fail_after(20):
                    while not pattern.search(errlog_path.read_text()):
                        await anyio.sleep(0.1)
                names = sorted(t.name for t in (await c.list_tools(cache_mode="refresh")).tools)
                assert names == ["count_cities", "names"]
                result = await c.call_tool("count_cities", {})
                assert not result.is_error and result.content[0].text == "2 cities"

    anyio.run(main)
    log = errlog_path.read_text()
    assert "still serving the last good 2 tools" in log
    assert "call tool=names ms=" in log  # per-call lines go to stderr; stdout carried only the protocol


def test_http_reload_serves_new_tools_and_keeps_the_last_good_set(project):
    specs = project / "specs"
    port = free_port()
    log = project / "stderr.log"
    url = f"http://127.0.0.1:{port}/mcp"

    def tool_names():
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        return sorted(t["name"] for t in httpx2.post(url, content=body, headers=JSON_HEADERS).json()["result"]["tools"])

    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpgen.cli", "serve", str(specs), "--http", "--port", str(port), "--reload"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=project,
        )
    try:
        assert wait_healthy(proc, port)["tools"] == 1
        wait_for(lambda: "watching" in log.read_text(), what="the watcher")
        (specs / "names.yaml").write_text(NAMES)
        wait_for(lambda: tool_names() == ["count_cities", "names"], what="the new tool")
        assert httpx2.get(f"http://127.0.0.1:{port}/healthz").json()["tools"] == 2

        (specs / "names.yaml").write_text(textwrap.dedent(NAMES).replace("sql: SELECT", "sql: SELEC"))
        wait_for(lambda: f"{specs / 'names.yaml'}:2:" in log.read_text(), what="the logged error")
        assert tool_names() == ["count_cities", "names"]
        call = json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "names", "arguments": {}}}
        )
        result = httpx2.post(url, content=call, headers=JSON_HEADERS).json()["result"]
        assert not result["isError"] and result["content"][0]["text"] == "Oslo and Bergen"

        (specs / "names.yaml").unlink()  # removing a spec removes its tool
        wait_for(lambda: tool_names() == ["count_cities"], what="the removed tool")
    finally:
        stop(proc)  # SIGINT, then killed if it outlives the wait: a failure leaves no server behind
    assert proc.returncode == 0, log.read_text()[-2000:]


def test_reload_in_process_notifies_a_handshake_era_client_and_keeps_the_last_good_tools(project, monkeypatch):
    """Reloader and server in this process, the client on the SDK's in-memory transport; the file
    watcher that triggers `reload()` in `serve --reload` is exercised by the stdio test above."""
    specs = project / "specs"
    monkeypatch.chdir(project)  # open_project changes directory
    opened = open_project(specs)
    server = ToolServer(opened.registry)
    reloader = Reloader(server, opened, specs)
    notifications = []

    async def on_message(message):
        notifications.append(message)

    def changed() -> int:
        return sum(getattr(m, "method", "") == "notifications/tools/list_changed" for m in notifications)

    async def main():
        # (the in-memory transport announces the SDK's default capabilities; the stdio test above
        # checks that `serve` announces tools.listChanged)
        async with Client(server.server, mode="legacy", message_handler=on_message) as c:
            assert [t.name for t in (await c.list_tools()).tools] == ["count_cities"]
            (specs / "names.yaml").write_text(NAMES)
            assert await reloader.reload() is True
            with anyio.fail_after(10):
                while not changed():
                    await anyio.sleep(0.01)
            assert sorted(t.name for t in (await c.list_tools()).tools) == ["count_cities", "names"]
            result = await c.call_tool("names", {})
            assert not result.is_error and result.content[0].text == "Oslo and Bergen"

            (specs / "count_cities.yaml").write_text(BROKEN)
            assert await reloader.reload() is False
            assert changed() == 1
            assert sorted(t.name for t in (await c.list_tools()).tools) == ["count_cities", "names"]
            result = await c.call_tool("count_cities", {})
            assert not result.is_error and result.content[0].text == "2 cities"

    try:
        anyio.run(main)
    finally:
        reloader.live.project.close()  # the first project was closed by the reload


SLOW = """\
description: A query that takes a moment (a hundred million rows).
sql: SELECT sum(a.range * b.range) AS n FROM range(10000) a, range(10000) b
sources: [https://example.org/]
content: "{{ rows[0].n }}"
"""


def test_a_replaced_project_closes_only_once_its_calls_have_returned(project, monkeypatch):
    from mcpgen.serve.project import open_project
    from mcpgen.serve.reload import LiveProject

    (project / "specs" / "slow.yaml").write_text(SLOW)
    monkeypatch.chdir(project)  # open_project changes the working directory
    old, new = open_project(project / "specs"), open_project(project / "specs")
    live = LiveProject(old)

    async def call_while_replacing():
        results = []

        async def call():
            results.append(await old.registry.call("slow", {}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            while not old.registry.active:
                await anyio.sleep(0.01)
            assert live.replace(new) is old
            assert (live.project, live.draining) == (new, 1)  # the call still runs on the old engines
            await live.drain()
        return results

    [result] = anyio.run(call_while_replacing)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["table"][1][0] == sum(range(10000)) ** 2
    assert live.draining == 0
    assert anyio.run(old.registry.call, "count_cities", {}).is_error  # closed once idle
    assert anyio.run(new.registry.call, "count_cities", {}).content[0].text == "2 cities"
    live.close()


def test_prompt_files_reload_like_specs(project, monkeypatch):
    """A new prompt file is served after a reload, with prompts/list_changed; a broken one keeps the last good."""
    specs = project / "specs"
    monkeypatch.chdir(project)
    opened = open_project(specs)
    server = ToolServer(opened.registry)
    reloader = Reloader(server, opened, specs)
    notifications = []

    async def on_message(message):
        notifications.append(getattr(message, "method", ""))

    prompt = "description: Count them.\ntools: [count_cities]\ntemplate: Count the cities with count_cities.\n"

    async def main():
        async with Client(server.server, mode="legacy", message_handler=on_message) as c:
            assert (await c.list_prompts()).prompts == []
            (specs / "count.prompt.yaml").write_text(prompt)
            assert await reloader.reload() is True
            with anyio.fail_after(10):
                while "notifications/prompts/list_changed" not in notifications:
                    await anyio.sleep(0.01)
            assert [p.name for p in (await c.list_prompts()).prompts] == ["count"]
            (specs / "count.prompt.yaml").write_text(prompt.replace("[count_cities]", "[nope]"))
            assert await reloader.reload() is False  # names a tool that does not exist: the last good set stays
            text = (await c.get_prompt("count", {})).messages[0].content.text
            assert text == "Count the cities with count_cities."

    try:
        anyio.run(main)
    finally:
        reloader.live.project.close()
