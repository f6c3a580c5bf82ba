"""subscriptions/listen (2026-07-28) over `serve --http`: each caller holds at most two event
streams, every stream ends gracefully at --listen-timeout, and one caller's streams never keep
another caller out. Over stdio (one client) nothing is capped."""

from __future__ import annotations

import json
import threading
import time

import anyio
import httpx2
import pytest
from mcp import Client
from servers import ALICE, BOB, start_two_callers, stop
from shipped import SPECS

from mcpgen.serve.listen import LISTEN_PER_CALLER, BoundedListen
from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer

LISTEN = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "subscriptions/listen",
    "params": {
        "notifications": {"toolsListChanged": True},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}


def _headers(token: str, method: str, version: str = "2026-07-28") -> dict:
    return {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
        "mcp-method": method,
        "authorization": f"Bearer {token}",
    }


class Stream(threading.Thread):
    """One POSTed subscriptions/listen, read to its end: the status and every SSE data frame."""

    def __init__(self, port: int, token: str):
        super().__init__(daemon=True)
        self.port, self.token = port, token
        self.status: int | None = None
        self.frames: list[dict] = []
        self.ended: float | None = None
        self.opened = threading.Event()

    def run(self) -> None:
        url = f"http://127.0.0.1:{self.port}/mcp"
        try:
            with httpx2.stream(
                "POST", url, json=LISTEN, headers=_headers(self.token, LISTEN["method"]), timeout=20
            ) as r:
                self.status = r.status_code
                self.opened.set()
                if r.headers.get("content-type", "").startswith("application/json"):  # an answer, not a stream
                    self.frames.append(json.loads(r.read()))
                    return
                for line in r.iter_lines():
                    if line.startswith("data:"):
                        self.frames.append(json.loads(line[5:]))
        finally:
            self.ended = time.monotonic()
            self.opened.set()


def _call(port: int, token: str) -> httpx2.Response:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "top_cities", "arguments": {"top_n": 2}},
    }
    return httpx2.post(
        f"http://127.0.0.1:{port}/mcp", json=call, headers=_headers(token, "tools/call", "2025-06-18"), timeout=5
    )


@pytest.mark.slow
def test_ten_listen_streams_from_one_caller_leave_another_caller_answered():
    proc, port = start_two_callers("--max-connections", "8", "--listen-timeout", "3")
    try:
        streams = [Stream(port, ALICE) for _ in range(10)]
        started = time.monotonic()
        for s in streams:
            s.start()
        for s in streams:
            s.opened.wait(10)
        # Bob is answered at once while Alice holds what she may
        bob = _call(port, BOB)
        assert bob.status_code == 200 and not bob.json()["result"]["isError"], bob.text
        assert time.monotonic() - started < 3
        for s in streams:
            s.join(15)
        held = [
            s for s in streams if any(f.get("method") == "notifications/subscriptions/acknowledged" for f in s.frames)
        ]
        refused = [s for s in streams if s not in held]
        assert len(held) == LISTEN_PER_CALLER, [s.frames for s in streams]
        for s in refused:  # each ended at once: a clear sentence, or a surplus connection closed (408, 503)
            assert s.ended - started < 3, s.frames
            if s.status == 503 and s.frames:
                assert "requests in flight, the most one caller may have" in s.frames[0]["error"], s.frames
            elif s.frames:
                assert "subscriptions/listen streams, the most" in s.frames[0]["error"]["message"], s.frames
        for s in held:  # ended on purpose at --listen-timeout, with the listen's result as the last frame
            assert s.frames[-1].get("id") == 1 and "result" in s.frames[-1], s.frames
            assert 2.5 < s.ended - started < 8
        again = Stream(port, ALICE)  # the streams have ended: Alice may listen again
        again.start()
        again.opened.wait(10)
        assert again.status == 200
    finally:
        stop(proc)


def test_over_stdio_listen_is_not_capped(tmp_path, monkeypatch):
    monkeypatch.chdir(SPECS.parent)
    project = open_project(SPECS)
    server = ToolServer(project.registry)
    assert isinstance(server.listen, BoundedListen) and server.listen.per_caller is None

    async def main():
        with anyio.fail_after(10):
            return await listen_all()

    async def listen_all():
        async with Client(server.server) as client:
            async with anyio.create_task_group() as tg:
                opened = []

                async def listen_once():
                    async with client.listen(tools_list_changed=True):
                        opened.append(1)
                        await anyio.sleep(0.3)

                for _ in range(LISTEN_PER_CALLER + 2):
                    tg.start_soon(listen_once)
            return len(opened)

    try:
        assert anyio.run(main) == LISTEN_PER_CALLER + 2
    finally:
        project.close()
