"""Shared fixtures and helpers: database services (tests/services.py) and `mcpgen serve` processes."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
import services

REPO = Path(__file__).resolve().parent.parent

# --- `mcpgen serve --http` processes on loopback ---------------------------------------------------
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


def wait_healthy(proc: subprocess.Popen, port: int, seconds: float = 20) -> dict:
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
    raise AssertionError("server did not become healthy")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- database services: PostgreSQL, MariaDB, and the cities table in each ----------------------------


@pytest.fixture(scope="session")
def postgres_url():
    """URL of the PostgreSQL test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("postgresql")


@pytest.fixture(scope="session")
def mariadb_url():
    """URL of the MariaDB test service; skips (or fails under MCPGEN_REQUIRE_SERVICES=1) when absent."""
    return services.require("mariadb")


@pytest.fixture(scope="session")
def city_rows():
    """Every row of examples/data/cities.csv as typed tuples."""
    return services.read_cities(services.CITIES_CSV)


def _cities_table(service, rows):
    table = services.unique_name("cities")
    services.load_cities(service, table, rows)
    return table


@pytest.fixture(scope="session")
def postgres_cities(postgres_url, city_rows):
    """A cities table of this session's own in PostgreSQL (name: cities_<random>), dropped at the end."""
    table = _cities_table("postgresql", city_rows)
    yield table
    services.drop_table("postgresql", table)


@pytest.fixture(scope="session")
def mariadb_cities(mariadb_url, city_rows):
    """A cities table of this session's own in MariaDB (name: cities_<random>), dropped at the end."""
    table = _cities_table("mariadb", city_rows)
    yield table
    services.drop_table("mariadb", table)
