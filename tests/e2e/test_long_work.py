"""End to end: long work on the real `mcpgen serve`, with the official client. Over stdio, progress
notifications arrive while DuckDB scans and a cancelled call stops its query (the project has one
slot, so the next call answering at once proves the join is no longer running); over HTTP the same
for a 2026-07-28 call that asks for progress, which gets its notifications on an event stream inside
its POST and is cancelled by closing it (docs/long-work.md). Over both, the tasks extension: a task
started, polled and its result fetched, and a task cancelled."""

import os
import sys

import anyio
import httpx2
import pytest
from longwork import TASKS, TasksClient, cancel_task, get_task, write_long_project
from mcp import Client, StdioServerParameters
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from servers import TOKEN, client, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    return write_long_project(tmp_path_factory.mktemp("long"))


@pytest.fixture(scope="module")
def http_url(specs):
    with serving(specs) as url:
        yield url


def _stdio(specs, extensions=()) -> Client:
    command = ["-m", "mcpgen.cli", "serve", str(specs)]  # this checkout's mcpgen, whatever is installed
    params = StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))
    return Client(params, extensions=list(extensions))


async def _tasks(session: Client, tasks: TasksClient) -> None:
    with anyio.fail_after(60):
        answer = await session.call_tool("scan", {"k": 7})
    assert answer.content[0].text == "1428572 multiples of 7."
    created = tasks.created[-1]
    assert created.status == "working" and tasks.polls[-1]["status"] == "completed"
    later = await get_task(session.session, created.task_id)  # fetched again, later
    assert later["result"]["structuredContent"] == answer.structured_content
    raw = await session.session.call_tool("forever", {}, allow_claimed=True)
    await anyio.sleep(0.5)
    ack = await cancel_task(session.session, raw.task_id)
    assert ack["resultType"] == "complete" and "status" not in ack
    assert (await get_task(session.session, raw.task_id))["status"] == "cancelled"
    with anyio.fail_after(15):  # one slot: the join has stopped
        assert (await session.call_tool("quick", {})).content[0].text == "20000000 numbers."


def test_tasks_over_stdio(specs):
    async def main():
        tasks = TasksClient()
        async with _stdio(specs, [tasks]) as session:
            await _tasks(session, tasks)

    anyio.run(main)


def test_tasks_over_http(http_url):
    async def main():
        tasks = TasksClient()
        async with client(http_url, extensions=[tasks]) as session:
            await _tasks(session, tasks)

    anyio.run(main)


def test_tasks_get_with_an_mcp_name_of_another_task_is_refused_over_http(http_url):
    async def main():
        tasks = TasksClient()
        async with client(http_url, extensions=[tasks]) as session:
            await session.call_tool("quick", {})
            raw = await session.session.call_tool("scan", {"k": 5}, allow_claimed=True)
            task_id = raw.task_id
        meta = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {"extensions": {TASKS: {}}}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta}}
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tasks/get",
        }
        async with httpx2.AsyncClient(timeout=30) as http:
            named = {}
            for name in (task_id, "another-task"):
                answer = await http.post(http_url, json=body, headers={**headers, "Mcp-Name": name})
                named[name] = answer.json()
            unnamed = (await http.post(http_url, json=body, headers=headers)).json()
        assert named[task_id]["result"]["taskId"] == task_id
        assert named["another-task"]["error"]["code"] == -32020 and "result" not in named["another-task"]
        assert unnamed["result"]["taskId"] == task_id  # the SDK's own client sends no Mcp-Name for tasks/*

    anyio.run(main)


async def _progress_then_cancel(session: Client) -> None:
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    with anyio.fail_after(60):
        result = await session.call_tool("scan", {"k": 7}, progress_callback=on_progress)
    assert not result.is_error and result.content[0].text.endswith("multiples of 7.")
    assert seen and seen == sorted(set(seen)) and all(0 <= p <= 100 for p in seen), seen
    with anyio.move_on_after(1.0) as scope:  # over HTTP, a call that asks for progress is cancelled by closing it
        await session.call_tool("forever", {}, progress_callback=on_progress)
    assert scope.cancelled_caught
    with anyio.fail_after(15):
        quick = await session.call_tool("quick", {})
    assert quick.content[0].text == "20000000 numbers."


def test_progress_and_cancel_over_stdio(specs):
    async def main():
        async with _stdio(specs) as session:
            await _progress_then_cancel(session)

    anyio.run(main)


def test_progress_and_cancel_over_http(http_url):
    async def main():
        async with client(http_url) as session:
            await _progress_then_cancel(session)

    anyio.run(main)
