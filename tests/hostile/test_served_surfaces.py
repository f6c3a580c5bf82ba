"""Hostile callers of the newest surfaces, on the real `mcpgen serve` over stdio with the official client:
download links, page cursors, tasks, asking, completions and prompt arguments, and malformed frames. Each is
refused with one JSON-RPC error or isError sentence (never an internal error or a traceback on stderr), and
the server keeps serving: a normal call answers after each group."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import sys
import time
import urllib.parse

import anyio
import pytest
from asking import write_asking_project
from longwork import TasksClient, cancel_task, get_task, send
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult

pytestmark = pytest.mark.slow

NUMS = """\
description: Numbers below a bound, ten at a time, every row downloadable.
parameters:
  below: {type: integer, description: Upper bound, default: 5000}
  label:
    type: string
    description: One label
    required: false
    complete: SELECT label FROM nums WHERE label LIKE :prefix || '%' ORDER BY label LIMIT 20
sql: SELECT n, label FROM nums WHERE n < :below AND (:label IS NULL OR label = :label) ORDER BY n
sources: [https://example.org/]
content: "{{ row_count }} numbers"
page_size: 10
download: true
"""
SLOW = """\
description: Counts the multiples of k among many numbers (a second or so).
parameters:
  k: {type: integer, description: the divisor, default: 7, minimum: 1}
sql: SELECT count(*) AS c FROM range(60000000) t(x) WHERE x % :k = 0
sources: [https://example.org/]
content: "{{ rows[0].c }} multiples."
long_running: true
"""
LABELS = """\
description: Look at the numbers with one label.
tools: [nums]
arguments:
  label: {description: a label, complete: nums.label}
template: "Use nums for {{ label }}."
"""


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("surfaces")
    specs = write_asking_project(root)  # life (asks for missing arguments), everything (confirm), greet, compare
    config = (root / "mcpgen.yaml").read_text()
    nums = "CREATE TABLE nums AS SELECT range AS n, 'row ' || range AS label FROM range(5000)"
    (root / "mcpgen.yaml").write_text(config.replace("    init:\n", f"    init:\n      - {nums}\n"))
    for name, text in {"nums.yaml": NUMS, "slow.yaml": SLOW, "labels.prompt.yaml": LABELS}.items():
        (specs / name).write_text(text)
    return specs


def served(specs, tmp_path, **options):
    """The official client of `mcpgen serve specs` over stdio; its stderr goes to tmp_path/stderr.log."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcpgen.cli", "serve", str(specs)], env=dict(os.environ)
    )
    errlog = open(tmp_path / "stderr.log", "w")  # noqa: SIM115  closed by the test's `quiet`
    return Client(stdio_client(params, errlog=errlog), **options), errlog


def quiet(tmp_path, errlog) -> None:
    errlog.close()
    log = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in log and "Internal" not in log, log[-2000:]


async def refused(request) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await request
    return caught.value


def one_sentence(message: str, limit: int = 400) -> bool:
    return "\n" not in message and len(message) < limit and "Traceback" not in message


async def still_serving(client) -> None:
    answer = await client.call_tool("nums", {"below": 3})
    assert not answer.is_error and answer.content[0].text == "3 numbers"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_forged_and_twisted_download_links_are_one_invalid_params_sentence(specs, tmp_path):
    client, errlog = served(specs, tmp_path)
    errors: dict[str, MCPError] = {}

    async def main():
        async with client:
            answer = await client.call_tool("nums", {"below": 50})
            uri = next(str(c.uri) for c in answer.content if c.type == "resource_link")
            base, query = uri.split("?", 1)
            link = dict(urllib.parse.parse_qsl(query))["link"]
            expires, mac, kid = link.split(".")
            own, other = _b64(b'{"below":50}'), _b64(b'{"below":4999}')
            twisted = {
                "forged signature": f"{base}?args={own}&link={expires}.{'A' * len(mac)}.{kid}",
                "expiry moved": f"{base}?args={own}&link=1000000000.{mac}.{kid}",
                "other arguments": f"{base}?args={other}&link={link}",
                "other tool": uri.replace("download/nums.", "download/life."),
                "unknown format": uri.replace("nums.csv", "nums.exe"),
                "huge arguments": f"{base}?args={'A' * 2_000_000}&link={link}",
                "arguments not UTF-8": f"{base}?args={_b64(bytes([0xFF, 0xFE]))}&link={link}",
                "percent-encoded bytes": f"{base}?args=%ff%fe&link={link}",
                "percent-encoded name": uri.replace("download/nums", "download/%6eums"),
                "climbing name": uri.replace("download/nums", "download/..%2Fnums"),
                "arguments twice": uri + "&args=e30",
                "arguments not an object": f"{base}?args={_b64(b'[1,2]')}&link={link}",
                "arguments nested too deep": f"{base}?args={_b64(b'[' * 100_000 + b']' * 100_000)}&link={link}",
                "no query": base,
            }
            for how, bad in twisted.items():
                errors[how] = await refused(client.read_resource(bad))
            await still_serving(client)

    anyio.run(main)
    quiet(tmp_path, errlog)
    assert {how: e.error.code for how, e in errors.items()} == dict.fromkeys(errors, -32602)
    assert all(one_sentence(e.error.message) for e in errors.values()), errors
    assert all(e.error.message.startswith("This ") for e in errors.values()), errors
    assert len(errors) == 14


def test_forged_and_replayed_cursors_are_one_invalid_argument_sentence(specs, tmp_path):
    client, errlog = served(specs, tmp_path)
    said: dict[str, str] = {}

    async def main():
        async with client:
            first = await client.call_tool("nums", {"below": 50})
            cursor = first.meta["mcpgen/next_cursor"]
            body, mac, kid = cursor.split(".")
            bad = {
                "truncated": {"below": 50, "cursor": cursor[: len(body) // 2]},
                "signature altered": {"below": 50, "cursor": f"{body}.{'A' * len(mac)}.{kid}"},
                "body altered": {"below": 50, "cursor": f"{_b64(b'0.9999999999')}.{mac}.{kid}"},
                "other arguments": {"below": 40, "cursor": cursor},
                "huge": {"below": 50, "cursor": "A" * 3_000_000},
                "not ASCII": {"below": 50, "cursor": "é" * 100},
                "a number": {"below": 50, "cursor": 5},
                "an object": {"below": 50, "cursor": {"a": 1}},
            }
            for how, arguments in bad.items():
                answer = await client.call_tool("nums", arguments)
                assert answer.is_error, how
                said[how] = answer.content[0].text
            other_tool = await client.call_tool("life", {"country": "FR", "since": 2000, "cursor": cursor})
            said["another tool"] = other_tool.content[0].text
            replayed = await client.call_tool("nums", {"below": 50, "cursor": cursor})
            again = await client.call_tool("nums", {"below": 50, "cursor": cursor})  # a replay is the same page
            assert replayed.structured_content == again.structured_content and not again.is_error
            await still_serving(client)

    anyio.run(main)
    quiet(tmp_path, errlog)
    assert all(one_sentence(text) for text in said.values()), said
    assert all(text.startswith("Invalid argument 'cursor'") for how, text in said.items() if how != "another tool")
    assert said["another tool"] == "Unknown argument 'cursor': this tool takes country, since."
    assert len(said) == 9


def test_tasks_of_no_one_and_cancel_races_are_answered_and_the_task_stays_as_it_ended(specs, tmp_path):
    client, errlog = served(specs, tmp_path, extensions=[TasksClient(resolve=False)])
    out: dict = {}

    async def main():
        async with client:
            session = client.session
            for how, task_id in {"unknown": "nope", "huge": "x" * 1_000_000, "empty": ""}.items():
                out[f"get {how}"] = (await refused(get_task(session, task_id))).error
                out[f"cancel {how}"] = (await refused(cancel_task(session, task_id))).error
            out["get a number"] = (await refused(send(session, "tasks/get", {"taskId": 5}))).error
            started = await send(session, "tools/call", {"name": "slow", "arguments": {"k": 3}})
            task_id = started["taskId"]
            polled = []

            async def poll():
                polled.append((await get_task(session, task_id))["status"])

            async with anyio.create_task_group() as group:  # cancels and polls at once, as racing clients do
                for _ in range(5):
                    group.start_soon(cancel_task, session, task_id)
                    group.start_soon(poll)
            out["polled"] = polled
            out["after the race"] = await get_task(session, task_id)
            done = await send(session, "tools/call", {"name": "slow", "arguments": {"k": 0}})  # bad k: at once
            with anyio.fail_after(60):
                while (await get_task(session, done["taskId"]))["status"] == "working":
                    await anyio.sleep(0.1)
            await cancel_task(session, done["taskId"])  # too late: it has ended
            out["cancelled after it ended"] = await get_task(session, done["taskId"])
            await still_serving(client)

    anyio.run(main)
    quiet(tmp_path, errlog)
    refusals = {k: v for k, v in out.items() if k.startswith(("get ", "cancel "))}
    assert {k: e.code for k, e in refusals.items()} == dict.fromkeys(refusals, -32602)
    assert all(one_sentence(e.message) for e in refusals.values()), refusals
    assert out["get unknown"].message == "Unknown task: nope"
    assert out["get a number"].message == "Invalid tasks/get params: 'taskId' must be a string."
    assert out["after the race"]["status"] == "cancelled" and set(out["polled"]) <= {"working", "cancelled"}
    ended = out["cancelled after it ended"]
    assert ended["status"] == "completed" and ended["result"]["isError"] is True
    assert ended["result"]["content"][0]["text"] == "Invalid argument 'k': 0 is less than the minimum of 1."


class Answers:
    """An elicitation callback that accepts every form with `content`, whatever it asked for."""

    def __init__(self, content):
        self.content, self.asked = content, 0

    async def __call__(self, context, params) -> ElicitResult:
        self.asked += 1
        return ElicitResult(action="accept", content=self.content)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"since": "two thousand"}, "Invalid argument 'since': expected an integer, got string \"two thousand\"."),
        ({"since": True}, "Invalid argument 'since': expected an integer, got true."),
        ({"since": 2005.5}, "Invalid argument 'since': expected an integer, got number 2005.5."),
        ({"since": 10**40}, "Invalid argument 'since': 10000000000000000000000000000000000000000 is greater"),
        ({}, "Missing required argument 'since'."),
        ({"elsewhere": 2005}, "Missing required argument 'since'."),
    ],
)
def test_answers_of_the_wrong_type_or_shape_are_the_sentence_a_bad_argument_gets(specs, tmp_path, content, says):
    person = Answers(content)
    client, errlog = served(specs, tmp_path, elicitation_callback=person)
    out = {}

    async def main():
        async with client:
            out["life"] = await client.call_tool("life", {"country": "DE"})
            out["confirm"] = await client.call_tool("everything", {})  # its one boolean is not in `content`
            await still_serving(client)

    anyio.run(main)
    quiet(tmp_path, errlog)
    assert out["life"].is_error and out["life"].content[0].text.startswith(says)
    assert out["confirm"].is_error and out["confirm"].content[0].text == "Not run: the person did not confirm it."
    assert person.asked == 2  # once each: never asked again for what the form came back without


def test_hostile_completions_and_prompt_arguments_are_values_or_one_sentence(specs, tmp_path):
    client, errlog = served(specs, tmp_path)
    values: dict[str, list] = {}
    errors: dict[str, MCPError] = {}
    ref = {"type": "ref/prompt", "name": "labels"}

    async def main():
        async with client:
            for how, prefix in {
                "huge": "x" * 2_000_000,
                "quote": "'; DROP TABLE nums; --",
                "NUL": "\x00",
                "backslash": "\\",
                "wildcard": "%",
                "a real start": "row 12",
            }.items():
                values[how] = (await client.complete(ref, {"name": "label", "value": prefix})).completion.values
            raw = {
                "value not text": {"ref": ref, "argument": {"name": "label", "value": 5}},
                "no argument": {"ref": ref},
                "unknown argument": {"ref": ref, "argument": {"name": "n" * 100_000, "value": ""}},
                "unknown prompt": {
                    "ref": {"type": "ref/prompt", "name": "p" * 100_000},
                    "argument": {"name": "a", "value": ""},
                },
            }
            for how, params in raw.items():
                errors[f"complete: {how}"] = await refused(send(client.session, "completion/complete", params))
            for how, arguments in {
                "a number": {"label": 5},
                "a list": {"label": ["row 1"]},
                "huge": {"label": "x" * 2_000_000},
                "NUL": {"label": "\x00"},
                "unknown": {"label": "row 1", "n" * 100_000: "1"},
            }.items():
                params = {"name": "labels", "arguments": arguments}
                errors[f"prompt: {how}"] = await refused(send(client.session, "prompts/get", params))
            injected = await client.get_prompt("labels", {"label": "{{ 7 * 7 }}"})
            values["template in an argument"] = [injected.messages[0].content.text]
            await still_serving(client)

    anyio.run(main)
    quiet(tmp_path, errlog)
    assert values["huge"] == values["quote"] == values["NUL"] == values["backslash"] == []
    assert values["a real start"][:2] == ["row 12", "row 120"]
    assert len(values["wildcard"]) == 20  # the author's LIKE reads % as any text: within the query's own LIMIT
    assert values["template in an argument"] == ["Use nums for {{ 7 * 7 }}."]  # text, never run as a template
    assert {how: e.error.code for how, e in errors.items()} == dict.fromkeys(errors, -32602)
    assert all(one_sentence(e.error.message) for e in errors.values()), errors
    assert errors["complete: value not text"].error.message == (
        "Invalid completion/complete params: 'argument.value' must be a string."
    )
    assert errors["prompt: a number"].error.message == "Invalid prompts/get params: 'arguments.label' must be a string."
    assert errors["prompt: NUL"].error.message == "Invalid argument 'label': the string contains a NUL character."


HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
HUGE = b"9" * 5000
CALL = b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"nums","arguments":{"below":%s}}}'
NOT_JSON = [
    b"{not json",
    CALL % (b"1", b"[" * 100_000 + b"]" * 100_000),  # nested past what a decoder reads
    CALL % (b"10", b"[" * 300 + b"]" * 300),  # JSON to Python's reader, too deep for the SDK's: its id is read
    CALL % (b"11", b'"\\ud800"'),  # a lone surrogate: JSON to Python's reader, not to the SDK's
    b"\x00\xff\xfe",
]
UNREADABLE_ID = [
    b'[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]',  # a batch
    b'"tools/list"',
    CALL % (b'{"n":1}', b"3"),
    CALL % (b"1.5", b"3"),
    CALL % (b"null", b"3"),
    CALL % (b"true", b"3"),
    CALL % (HUGE, b"3"),
]
READABLE_ID = {
    3: b'{"id":3,"method":"tools/list"}',  # no "jsonrpc"
    6: CALL.replace(b"2.0", b"1.0") % (b"6", b"3"),
    "seven": b'{"jsonrpc":"2.0","id":"seven","method":5}',
    8: b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}',
    9: CALL % (b"9", HUGE),
    12: CALL % (b"12", HUGE + b".5"),
}
FRAMES = [
    json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}).encode(),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
    *NOT_JSON,
    *UNREADABLE_ID,
    *READABLE_ID.values(),
    b"   ",  # a blank line is no frame: no answer
    b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":null}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nums","arguments":{"below":3}}}',
]
NOT_JSON_ERROR = {"code": -32700, "message": "Parse error: the message is not JSON, or is nested too deep to read"}
NOT_ONE = {
    "code": -32600,
    "message": "Invalid Request: not one JSON-RPC 2.0 message (a batch, or a field missing or of the wrong type)",
}


def assert_every_frame_answered(answers: list[dict], err: bytes, ended: bool = False) -> None:
    """FRAMES' answers: each malformed one refused in one sentence, the id when readable; the rest served. When
    stdin `ended` right after the last frame (a file), the SDK may answer the call still running then with
    its own error (-32000 Connection closed) rather than a result."""
    by_id = {a["id"]: a for a in answers if a["id"] is not None}
    nulls = [a["error"] for a in answers if a["id"] is None]
    assert nulls == [NOT_JSON_ERROR] * (len(NOT_JSON) - 2) + [NOT_ONE] * len(UNREADABLE_ID), answers
    assert set(by_id) == {0, 4, 5, 10, 11, *READABLE_ID}
    assert by_id[10]["error"] == by_id[11]["error"] == NOT_JSON_ERROR
    assert all(by_id[i]["error"] == NOT_ONE for i in READABLE_ID)
    assert by_id[4]["error"] == {"code": -32602, "message": "Invalid tools/call params: 'params' is missing."}
    closed = {"code": -32000, "message": "Connection closed"}
    assert by_id[5].get("result", {}).get("content", [{}])[0].get("text") == "3 numbers" or (
        ended and by_id[5]["error"] == closed
    ), by_id[5]
    assert b"Traceback" not in err


def test_malformed_frames_are_answered_and_leave_the_stdio_server_serving(specs, tmp_path):
    """Every frame the SDK cannot read gets its JSON-RPC error in one sentence, never the input echoed: -32700
    for what is not JSON (or too deep to read), -32600 for JSON that is not one message, with the request's id
    when it can be read, else null. The server neither dies nor writes a traceback: the next request is
    answered."""
    server = subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: what select says is ready is what readline reads
    )
    server.stdin.write(b"\n".join(FRAMES) + b"\n")
    server.stdin.flush()
    answers: list = []
    deadline = time.monotonic() + 120
    while 5 not in [a["id"] for a in answers] and time.monotonic() < deadline:  # stdin open until the last answer
        if select.select([server.stdout], [], [], 1)[0]:
            line = server.stdout.readline()
            if not line:
                break
            answers.append(json.loads(line))
    out, err = server.communicate(b"", timeout=60)
    assert_every_frame_answered(answers + list(map(json.loads, out.splitlines())), err)
    assert server.returncode == 0


@pytest.mark.parametrize("stdout", ["pipe", "file"])
def test_malformed_frames_from_a_file_are_answered_too(specs, tmp_path, stdout):
    """stdin a regular file (which the event loop cannot watch), stdout a pipe or a file: the same answers."""
    (tmp_path / "frames.jsonl").write_bytes(b"\n".join(FRAMES) + b"\n")
    with open(tmp_path / "frames.jsonl", "rb") as frames, open(tmp_path / "out.jsonl", "wb") as out:
        server = subprocess.run(
            [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)],
            stdin=frames,
            stdout=subprocess.PIPE if stdout == "pipe" else out,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    written = server.stdout if stdout == "pipe" else (tmp_path / "out.jsonl").read_bytes()
    assert_every_frame_answered(list(map(json.loads, written.splitlines())), server.stderr, ended=True)
    assert server.returncode == 0
