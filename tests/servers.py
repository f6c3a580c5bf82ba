"""`mcpgen serve --http` processes on loopback for the tests: start one, wait until it is healthy, talk to it
with the official client, stop it (SIGINT, then a kill after 10 s)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from shipped import REPO

TOKEN = "test-token-" + "k" * 24  # the bearer token the test servers are started with


JSON_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], env: dict | None = None, stderr=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=stderr or subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )


def wait_healthy(proc: subprocess.Popen, port: int, seconds: float = 60) -> dict:  # a loaded machine starts slowly
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        try:
            response = httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            if response.status_code == 200:
                return response.json()
        except httpx2.TransportError:
            pass
        time.sleep(0.1)
    stop(proc)  # not left running after the test that started it fails
    raise AssertionError("server did not become healthy")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)  # a graceful stop takes well under a second; a loaded machine under -n 2 may take ten
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def client(url: str, token: str | None = TOKEN, extensions=(), **options) -> Client:
    """The official client of `url`; `options` go to Client (mode, elicitation_callback, ...)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http), extensions=list(extensions), **options)


ALICE, BOB = "alice-token-" + "a" * 24, "bob-token-" + "b" * 24  # two callers of one server


def start_two_callers(*flags: str) -> tuple[subprocess.Popen, int]:
    """`serve --http` on the shipped specs accepting ALICE's and BOB's tokens (two callers); healthy."""
    from shipped import SPECS

    port = free_port()
    proc = start(
        [str(SPECS), "--http", "--port", str(port), "--auth-token-env", "A", "--auth-token-env", "B", *flags],
        env={"A": ALICE, "B": BOB},
    )
    wait_healthy(proc, port)
    return proc, port


@contextmanager
def serving(specs) -> Iterator[str]:
    """`serve --http` on `specs` accepting TOKEN, healthy; yields its /mcp URL and stops it afterwards."""
    port = free_port()
    proc = start(
        [str(specs), "--http", "--port", str(port), "--auth-token-env", "MCPGEN_TEST_TOKEN"],
        env={"MCPGEN_TEST_TOKEN": TOKEN},
    )
    try:
        wait_healthy(proc, port, seconds=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)
