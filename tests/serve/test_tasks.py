"""The tasks extension in process: the official client, declaring the extension through the SDK's
client extension interface (tests/longwork.py), against ToolServer over the in-memory transport.
Over the real `mcpgen serve` (stdio and HTTP): tests/e2e/test_long_work.py."""

import threading
import time

import anyio
import pytest
from longwork import IN_PROCESS_ROWS, TASKS, TasksClient, cancel_task, get_task, multiples, send
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolRequestParams, CallToolResult, ClientCapabilities, ElicitResult, TextContent

from mcpgen import DataToolOutput, Registry, identity
from mcpgen.answer.asking import ask as ask_person
from mcpgen.engines.control import attached
from mcpgen.serve import registry as registry_module
from mcpgen.serve import tasks as tasks_module
from mcpgen.serve.server import ToolServer
from mcpgen.serve.tasks import TaskStore

SEVENS = f"{multiples(7, IN_PROCESS_ROWS)} multiples of 7."  # the scan's answer
NUMBERS = f"{IN_PROCESS_ROWS} numbers."  # the quick count's


def assert_empty_ack(ack: dict) -> None:
    """tasks/cancel answers `resultType: complete` and nothing of the task (the SDK adds its serverInfo _meta)."""
    assert ack["resultType"] == "complete" and set(ack) <= {"resultType", "_meta"}, ack


def session(server, check, extensions=()):
    async def main():
        async with Client(server.server, extensions=list(extensions)) as client:
            await check(client)

    anyio.run(main)


def test_a_long_running_tool_answers_a_task_that_is_polled_to_the_same_answer(long_project):
    server, tasks = ToolServer(long_project.registry), TasksClient()

    async def check(client):
        discovered = await client.session.discover() if hasattr(client.session, "discover") else None
        if discovered is not None:
            assert TASKS in (discovered.capabilities.extensions or {})
        answer = await client.call_tool("scan", {"k": 7})
        assert answer.content[0].text == SEVENS
        assert answer.structured_content["table"] == [
            ["n", "h"],
            [multiples(7, IN_PROCESS_ROWS), answer.structured_content["table"][1][1]],
        ]
        created = tasks.created[0]
        assert created.status == "working" and created.ttl_ms == 3_600_000 and created.poll_interval_ms == 1000
        assert created.created_at.endswith("Z") and len(created.task_id) >= 24
        first, last = tasks.polls[0], tasks.polls[-1]
        assert first["status"] == "working" and "result" not in first and "error" not in first
        assert last["status"] == "completed" and last["taskId"] == created.task_id
        assert "requestState" not in last and set(last["result"].get("_meta", {})) <= {"mcpgen/formats"}
        again = await get_task(client.session, created.task_id)  # kept for its TTL, result inlined again
        assert again["status"] == "completed" and again["result"]["content"][0]["text"] == SEVENS

    session(server, check, [tasks])


def test_progress_of_a_task_shows_in_its_status_message(long_project, monkeypatch):
    monkeypatch.setattr(registry_module, "PROGRESS_EVERY", 0.02)  # several looks during the short scan
    tasks = TasksClient(poll=0.02)

    async def check(client):
        await client.call_tool("scan", {"k": 3})
        messages = [p.get("statusMessage") for p in tasks.polls if p["status"] == "working"]
        assert any(m and m.startswith("query ") and m.endswith("% done") for m in messages), messages

    session(ToolServer(long_project.registry), check, [tasks])


def test_without_the_extension_a_long_running_tool_answers_as_always_and_tasks_methods_refuse(long_project):
    server = ToolServer(long_project.registry)

    async def check(client):
        answer = await client.call_tool("scan", {"k": 7})
        assert answer.content[0].text == SEVENS and len(server.tasks) == 0
        for ask in (get_task, cancel_task):
            with pytest.raises(MCPError) as caught:
                await ask(client.session, "nope")
            assert caught.value.error.code == -32021
            assert caught.value.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}

    session(server, check)


def test_a_tool_not_marked_long_running_answers_at_once_even_to_a_tasks_client(long_project):
    server, tasks = ToolServer(long_project.registry), TasksClient()

    async def check(client):
        assert (await client.call_tool("quick", {})).content[0].text == NUMBERS
        assert tasks.created == [] and len(server.tasks) == 0

    session(server, check, [tasks])


def test_bad_arguments_complete_the_task_with_the_tools_one_sentence(long_project):
    tasks = TasksClient()

    async def check(client):
        answer = await client.call_tool("scan", {"k": 0})
        assert answer.is_error and answer.content[0].text.startswith("Invalid argument 'k': 0 is less than")
        assert tasks.polls[-1]["status"] == "completed" and tasks.polls[-1]["result"]["isError"] is True

    session(ToolServer(long_project.registry), check, [tasks])


def test_cancel_stops_the_query_acks_empty_and_is_idempotent(long_project):
    server = ToolServer(long_project.registry)
    tasks = TasksClient(resolve=False)

    async def check(client):
        raw = await client.session.call_tool("forever", {}, allow_claimed=True)
        task_id = raw.task_id
        assert (await get_task(client.session, task_id))["status"] == "working"
        await anyio.sleep(0.3)
        assert_empty_ack(await cancel_task(client.session, task_id))
        got = await get_task(client.session, task_id)
        assert got["status"] == "cancelled" and "result" not in got
        started = time.monotonic()
        with anyio.fail_after(10):  # one slot: the join has stopped, or this would wait minutes
            assert (await client.call_tool("quick", {})).content[0].text == NUMBERS
        assert time.monotonic() - started < 10
        assert_empty_ack(await cancel_task(client.session, task_id))  # terminal: the same ack
        assert (await get_task(client.session, task_id))["status"] == "cancelled"

    session(server, check, [tasks])


def test_unknown_tasks_and_input_they_never_asked_for_are_invalid_params(long_project):
    tasks = TasksClient(resolve=False)

    async def check(client):
        for ask in (get_task, cancel_task):
            with pytest.raises(MCPError, match="Unknown task: no-such-task") as caught:
                await ask(client.session, "no-such-task")
            assert caught.value.error.code == -32602
        raw = await client.session.call_tool("scan", {"k": 11}, allow_claimed=True)
        with pytest.raises(MCPError, match="is not waiting for input") as caught:
            await send(client.session, "tasks/update", {"taskId": raw.task_id, "inputResponses": {}})
        assert caught.value.error.code == -32602
        with pytest.raises(MCPError) as caught:
            await send(client.session, "tasks/get", {})  # no taskId
        assert caught.value.error.code == -32602
        for method in ("tasks/result", "tasks/list"):  # the extension has neither
            with pytest.raises(MCPError) as caught:
                await send(client.session, method, {"taskId": raw.task_id})
            assert caught.value.error.code == -32601
        await cancel_task(client.session, raw.task_id)

    session(ToolServer(long_project.registry), check, [tasks])


def test_a_task_is_its_callers_alone():
    async def main():
        store = TaskStore()

        async def run(progress):
            return "done"

        with identity.local_user({"sub": "alice"}):
            created = store.start("scan", run)
            await anyio.sleep(0)
            assert store.find(created["taskId"]).status in ("working", "completed")
        with identity.local_user({"sub": "bob"}), pytest.raises(MCPError, match="Unknown task"):
            store.find(created["taskId"])
        with pytest.raises(MCPError, match="Unknown task"):  # anonymous is nobody's alias either
            store.find(created["taskId"])

    anyio.run(main)


def test_past_max_tasks_a_long_running_call_answers_when_done(long_project, monkeypatch):
    monkeypatch.setattr(tasks_module, "MAX_TASKS", 0)
    server, tasks = ToolServer(long_project.registry), TasksClient()

    async def check(client):
        assert (await client.call_tool("scan", {"k": 7})).content[0].text == SEVENS
        assert tasks.created == []

    session(server, check, [tasks])


def test_the_extension_counts_when_declared_for_the_session_or_on_one_request():
    class Session:
        def __init__(self, extensions):
            self.client_capabilities = ClientCapabilities(extensions=extensions)

    class Ctx:
        def __init__(self, extensions):
            self.session = Session(extensions)

    per_request = CallToolRequestParams(
        name="scan", _meta={"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
    )
    plain = CallToolRequestParams(name="scan")
    assert tasks_module.declared(Ctx({TASKS: {}}), plain)
    assert tasks_module.declared(Ctx(None), per_request)
    assert not tasks_module.declared(Ctx(None), plain)
    assert not tasks_module.declared(Ctx({"io.modelcontextprotocol/ui": {}}), plain)


def hand_written() -> tuple[Registry, threading.Event]:
    """A registry of hand-written tools: `work` is long-running (it works until told to stop, or for
    `seconds`), `needs_name` has a required argument, `asks` asks the person inside its call."""
    registry, stopped = Registry(), threading.Event()

    def answer(text: str) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content={"sources": ["https://example.org/"]}
        )

    @registry.tool(app=False, long_running=True)
    def work(seconds: float = 0.2) -> DataToolOutput:
        """Works for a while."""
        stop = threading.Event()
        with attached(stop.set, lambda: 50.0):
            if stop.wait(seconds):
                stopped.set()
                return answer("stopped")
        return answer(f"worked {seconds} s")

    @registry.tool(app=False, long_running=True)
    def needs_name(name: str) -> DataToolOutput:
        """Greets after a while."""
        time.sleep(0.1)
        return answer(f"Hello, {name}!")

    @registry.tool(app=False, long_running=True)
    def asks() -> DataToolOutput:
        """Asks inside its call."""
        return answer(ask_person("colour", "Which colour?", {"colour": {"type": "string"}})["colour"])

    @registry.tool(app=False)
    def plain() -> DataToolOutput:
        """Answers at once."""
        return answer("plain")

    return registry, stopped


def test_a_hand_written_long_running_tool_is_offered_as_a_task_like_a_spec():
    registry, _ = hand_written()
    server, tasks = ToolServer(registry), TasksClient()

    assert registry.get("work").to_mcp().execution.task_support == "optional"
    assert registry.get("plain").to_mcp().execution is None

    async def check(client):
        assert (await client.call_tool("work", {"seconds": 0.2})).content[0].text == "worked 0.2 s"
        assert len(tasks.created) == 1 and tasks.polls[-1]["status"] == "completed"
        assert (await client.call_tool("plain", {})).content[0].text == "plain" and len(tasks.created) == 1
        refused = await client.call_tool("work", {"seconds": "soon"})  # checked in the task: one sentence
        assert refused.is_error and refused.content[0].text.startswith("Invalid argument 'seconds'")
        assert tasks.polls[-1]["status"] == "completed" and len(tasks.created) == 2

    session(server, check, [tasks])
    assert registry.call_sync("work", {"seconds": 0}).content[0].text == "worked 0.0 s"  # without a client: as always


def test_cancelling_a_hand_written_task_stops_its_work():
    registry, stopped = hand_written()
    tasks = TasksClient(resolve=False)

    async def check(client):
        raw = await client.session.call_tool("work", {"seconds": 60}, allow_claimed=True)
        await anyio.sleep(0.3)
        assert_empty_ack(await cancel_task(client.session, raw.task_id))
        with anyio.fail_after(10):
            while not stopped.is_set():
                await anyio.sleep(0.02)
        assert (await get_task(client.session, raw.task_id))["status"] == "cancelled"

    session(ToolServer(registry), check, [tasks])


def test_a_missing_argument_is_asked_before_the_task_starts_and_the_task_has_the_answer():
    registry, _ = hand_written()
    tasks, asked = TasksClient(), []

    async def person(context, params):
        asked.append((params.message, len(tasks.created)))
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def main():
        async with Client(ToolServer(registry).server, extensions=[tasks], elicitation_callback=person) as client:
            with anyio.fail_after(30):
                answer = await client.call_tool("needs_name", {})
        assert answer.content[0].text == "Hello, Ada!"
        assert asked == [("needs_name needs name.", 0)]  # asked first, while no task existed
        assert len(tasks.created) == 1 and tasks.polls[-1]["result"]["content"][0]["text"] == "Hello, Ada!"

    anyio.run(main)


def test_a_tool_that_asks_inside_its_task_completes_with_one_sentence():
    registry, _ = hand_written()
    tasks = TasksClient()

    async def person(context, params):
        return ElicitResult(action="accept", content={"colour": "red"})

    async def main():
        async with Client(ToolServer(registry).server, extensions=[tasks], elicitation_callback=person) as client:
            with anyio.fail_after(30):
                answer = await client.call_tool("asks", {})
        assert answer.is_error and answer.content[0].text.startswith("Tool 'asks' needs an answer from the person")
        assert tasks.polls[-1]["status"] == "completed"

    anyio.run(main)
