"""mcpgen replicas behind HAProxy (bench/replicas.py): answers, a replica killed under load, a reload.

Skips without the haproxy binary (fails under MCPGEN_REQUIRE_SERVICES=1)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import duckdb
import httpx2
import pytest
import services
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from replicas import Replicas  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.replicas, pytest.mark.timeout(600)]


@pytest.fixture(autouse=True)
def _haproxy():
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        reason = "the replica tests need HAProxy: apt-get install haproxy"
        if services.services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)


def _client(replicas: Replicas, url: str | None = None) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {replicas.token}"}, timeout=60)
    return Client(streamable_http_client(url or replicas.url, http_client=http))


def _served(replicas: Replicas) -> dict[str, int]:
    """Requests each replica has answered, from HAProxy's counters."""
    import socket

    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(replicas.folder / "haproxy.sock"))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    rows = [line.split(",") for line in data.decode().splitlines() if line.startswith("replicas,r")]
    return {r[1]: int(r[7] or 0) for r in rows}


def test_both_replicas_answer_what_duckdb_answers():
    want = duckdb.sql(
        f"""SELECT ci.name, co.name, ci.population, ci.timezone
        FROM read_csv('{REPO}/examples/data/cities.csv') ci
        LEFT JOIN read_csv('{REPO}/examples/data/countries.csv') co ON co.iso = ci.country_code
        WHERE ci.country_code = 'JP' ORDER BY ci.population DESC, ci.name LIMIT 3"""
    ).fetchall()

    async def calls(replicas):
        for _ in range(10):
            async with _client(replicas) as client:
                result = await client.call_tool("top_cities", {"country": "JP", "top_n": 3})
                assert not result.is_error, result.content[0].text
                assert result.structured_content["table"][1:] == [list(row) for row in want]

    with Replicas(REPO / "specs", 2) as replicas:
        anyio.run(calls, replicas)
        served = _served(replicas)
        assert all(n > 0 for n in served.values()), f"the balancer skipped a replica: {served}"


def test_every_shipped_spec_answers_through_the_balancer_what_it_answers_in_process(monkeypatch):
    """The shipped specs on DuckDB behind two replicas: every `tests:` case that expects no error
    gives the structured content the same project gives in process."""
    from mcpgen.serve.project import open_project

    cases = []
    for path in sorted((REPO / "specs").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        for case in spec.get("tests") or []:
            if "error_contains" not in (case.get("expect") or {}):
                cases.append((spec.get("name", path.stem), case.get("args") or {}))
    monkeypatch.chdir(REPO)  # open_project moves to the project root; this puts the old folder back afterwards
    here = open_project(REPO / "specs")
    try:
        want = [here.registry.call_sync(name, dict(args)).structured_content for name, args in cases]
    finally:
        here.close()

    async def calls(replicas):
        async with _client(replicas) as client:
            for (name, args), expected in zip(cases, want):
                result = await client.call_tool(name, args)
                assert not result.is_error, f"{name} {args}: {result.content[0].text}"
                assert result.structured_content == json.loads(json.dumps(expected)), f"{name} {args}"

    with Replicas(REPO / "specs", 2) as replicas:
        anyio.run(calls, replicas)
        assert all(n > 0 for n in _served(replicas).values())


def test_a_replica_killed_under_load_loses_no_call():
    """The load benchmark's short version: 50 clients, one replica SIGKILLed a third of the way in."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_replicas.py"), "--calls", "300", "--rounds", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert proc.stdout.strip(), f"the benchmark printed no report (exit {proc.returncode}): {proc.stderr[-2000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["errors"] == 0, report
    killed = report["killed_round"]
    assert killed["errors"] == 0 and killed["calls"] == 300, killed
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_reload_on_one_replica_serves_the_old_or_the_new_tool_set_never_a_part():
    """Two specs added at once on replica 0 (--reload): every tools/list through the balancer, while
    that replica reloads, names the old tools or all the new ones."""
    seen: list[frozenset[str]] = []
    errors: list[str] = []
    stop = threading.Event()

    with Replicas(REPO / "specs", 2, reload=True, own_copies=True) as replicas:
        old = None

        async def lister():
            nonlocal old
            while not stop.is_set():
                try:
                    async with _client(replicas) as client:
                        # One or two lists a session: the balancer alternates per request, and a fixed
                        # count would send every tools/list to the same replica.
                        for _ in range(random.choice((1, 2))):
                            names = frozenset(t.name for t in (await client.list_tools()).tools)
                            old = old or names
                            seen.append(names)
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")

        thread = threading.Thread(target=anyio.run, args=(lister,))
        thread.start()
        time.sleep(1)
        folder = replicas.specs_of(0)
        for name in ("top_cities_copy_a", "top_cities_copy_b"):
            text = (folder / "top_cities.yaml").read_text()
            (folder / f".{name}.tmp").write_text(text)
        for name in ("top_cities_copy_a", "top_cities_copy_b"):
            (folder / f".{name}.tmp").rename(folder / f"{name}.yaml")

        async def direct_count() -> int:
            async with _client(replicas, f"http://127.0.0.1:{replicas.ports[0]}/mcp") as client:
                return len((await client.list_tools()).tools)

        deadline = time.monotonic() + 30
        while anyio.run(direct_count) != len(old) + 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        reloaded = anyio.run(direct_count)
        time.sleep(2)
        stop.set()
        thread.join(30)

    assert not errors, errors[:3]
    assert reloaded == len(old) + 2, f"replica 0 did not reload: {reloaded} tools"
    new = old | {"top_cities_copy_a", "top_cities_copy_b"}
    assert set(seen) == {old, new}, [sorted(s - old) for s in set(seen)]
