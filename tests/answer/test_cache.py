"""The result cache: `cache:` in a spec keeps answers by tool, caller and validated arguments.

`random()` in the queries tells a cached answer (same number) from a fresh one."""

from __future__ import annotations

import json
import logging
import textwrap
import time

import anyio
import pytest
from click.testing import CliRunner
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from mcpgen import logs
from mcpgen.answer.cache import ENTRY_OVERHEAD, META_KEY, ResultCache
from mcpgen.answer.numbers import FORMATS_META
from mcpgen.answer.plain import TextContent, ToolResult, json_size
from mcpgen.cli import main
from mcpgen.serve.project import open_project
from mcpgen.serve.reload import Reloader
from mcpgen.serve.server import ToolServer

CONFIG = """\
connections:
  default:
    duckdb: ":memory:"
defaults: {cache: 60s}
"""

TOOL = """\
description: A fresh random number per query.
parameters:
  n: {type: integer, description: A number, default: 1, maximum: 100}
  slow: {type: boolean, description: Take a while, default: false}
sql: |
  SELECT :n AS n, random() AS r, (SELECT count(*) FROM range(CASE WHEN :slow THEN 20000000 ELSE 1 END)) AS c,
         CASE WHEN :n = 13 THEN error('thirteen') ELSE 0 END AS e
sources: [https://example.org/]
content: "{{ rows[0].r }}"
"""


@pytest.fixture
def make(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    opened = []

    def build(tool: str = TOOL, config: str = CONFIG):
        (tmp_path / "mcpgen.yaml").write_text(config)
        specs = tmp_path / "specs"
        specs.mkdir(exist_ok=True)
        (specs / "rand.yaml").write_text(textwrap.dedent(tool))
        project = open_project(specs)
        opened.append(project)
        return project

    yield build
    for project in opened:
        project.close()


def text(result: ToolResult) -> str:
    assert not result.is_error, result.content[0].text
    return result.content[0].text


def test_repeated_arguments_are_answered_from_the_cache(make):
    registry = make().registry
    first = registry.call_sync("rand", {"n": 3})
    second = registry.call_sync("rand", {"n": 3})
    assert text(first) == text(second)
    assert first.meta[META_KEY] == "miss" and second.meta[META_KEY] == "hit"
    assert first.meta[FORMATS_META] == second.meta[FORMATS_META]  # the formats are kept with the answer
    assert text(registry.call_sync("rand", {"n": 4})) != text(first)
    # the defaults and the same values spelled out are one key
    assert text(registry.call_sync("rand", {})) == text(registry.call_sync("rand", {"n": 1, "slow": False}))


def test_without_cache_every_call_runs_the_query(make):
    registry = make(TOOL + "cache: false\n").registry
    first, second = registry.call_sync("rand", {"n": 3}), registry.call_sync("rand", {"n": 3})
    assert text(first) != text(second)
    assert META_KEY not in (first.meta or {}) and len(registry.cache) == 0


def test_failures_are_never_kept(make):
    registry = make().registry
    for _ in range(2):
        with logs.call_stats() as stats:
            result, _ = anyio.run(registry._call, "rand", {"n": 13})  # the query raises
        assert result.is_error and "failed" in result.content[0].text
        assert stats.cache == "miss"
    bad = registry.call_sync("rand", {"n": 1000})  # refused by the argument check: no query, no entry
    assert bad.is_error and "'n'" in bad.content[0].text
    assert len(registry.cache) == 0


def test_entries_expire(make):
    registry = make(TOOL + "cache: 200ms\n").registry
    first = text(registry.call_sync("rand", {"n": 3}))
    assert text(registry.call_sync("rand", {"n": 3})) == first
    time.sleep(0.3)
    assert text(registry.call_sync("rand", {"n": 3})) != first


def test_identical_calls_in_flight_run_the_query_once(make):
    registry = make().registry
    answers = []

    async def main():
        async def one():
            answers.append(await registry.call("rand", {"n": 5, "slow": True}))

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(one)

    anyio.run(main)
    assert len({text(a) for a in answers}) == 1  # one random number: the query ran once
    assert sorted(a.meta[META_KEY] for a in answers) == ["miss"] * 6  # none was in the cache before


def test_callers_do_not_share_answers(make):
    registry = make().registry

    def as_caller(client_id: str) -> str:
        user = AuthenticatedUser(AccessToken(token="", client_id=client_id, scopes=[]))
        token = auth_context_var.set(user)
        try:
            return text(registry.call_sync("rand", {"n": 7}))
        finally:
            auth_context_var.reset(token)

    alice = as_caller("alice")
    assert as_caller("alice") == alice
    assert as_caller("bob") != alice
    assert text(registry.call_sync("rand", {"n": 7})) != alice  # no identity: a key of its own


def test_reload_starts_with_an_empty_cache(make, tmp_path):
    project = make()
    server = ToolServer(project.registry)
    before = text(project.registry.call_sync("rand", {"n": 3}))
    reloader = Reloader(server, project, tmp_path / "specs")
    assert anyio.run(reloader.reload)
    assert len(server.registry.cache) == 0
    assert len(project.registry.cache) == 0  # the replaced project's answers are dropped with it
    assert text(server.registry.call_sync("rand", {"n": 3})) != before
    reloader.close()


def test_the_call_log_says_hit_or_miss(make):
    registry = make().registry
    logs.flush_calls()  # lines of earlier calls are written before this test listens
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logs.CALLS.addHandler(handler)
    level = logs.CALLS.level
    logs.CALLS.setLevel(logging.INFO)
    try:
        registry.call_sync("rand", {"n": 9})
        registry.call_sync("rand", {"n": 9})
        logs.flush_calls()
    finally:
        logs.CALLS.setLevel(level)
        logs.CALLS.removeHandler(handler)
    lines = [r.getMessage() for r in records]
    assert lines[0].endswith("cache=miss") and lines[1].endswith("cache=hit"), lines
    assert [r.fields["cache"] for r in records] == ["miss", "hit"]


def test_call_json_says_whether_the_answer_came_from_the_cache(make, tmp_path):
    make()
    out = CliRunner().invoke(main, ["call", "rand", "-s", str(tmp_path / "specs"), "-a", "n=2", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["_meta"][META_KEY] == "miss"


def result_of(size: int) -> ToolResult:
    return ToolResult([TextContent("x" * size)])


def test_the_least_recently_used_go_first_past_the_byte_budget():
    one = json_size(result_of(1000)) + 1 + ENTRY_OVERHEAD  # key "a"
    cache = ResultCache(max_bytes=3 * one)
    for key in "abc":
        cache.put(key, result_of(1000), ttl=60)
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("d", result_of(1000), ttl=60)
    assert cache.get("b") is None and all(cache.get(k) is not None for k in "acd")
    assert cache.bytes == 3 * one
    cache.put("huge", result_of(10 * one), ttl=60)  # bigger than the whole budget: not kept
    assert cache.get("huge") is None and len(cache) == 3
    cache.put("e", ToolResult([], is_error=True), ttl=60)
    assert cache.get("e") is None


def test_keys_count_in_the_budget_and_a_key_bigger_than_it_is_not_kept():
    cache = ResultCache(max_bytes=65_536)
    small = result_of(10)
    cache.put(("t", None, "x" * 70_000), small, ttl=60)  # a tiny answer under a huge key
    assert len(cache) == 0 and cache.bytes == 0
    for i in range(50):
        cache.put(("t", None, f"{i}-" + "y" * 5_000), small, ttl=60)
    assert cache.bytes <= 65_536 and len(cache) <= 65_536 // 5_000


def test_expired_entries_are_dropped_without_being_looked_up(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("mcpgen.answer.cache.time.monotonic", lambda: now[0])
    cache = ResultCache(max_bytes=10_000_000)
    for i in range(100):
        cache.put(("t", None, str(i)), result_of(1000), ttl=1)
    assert len(cache) == 100
    now[0] += 2
    cache.put(("t", None, "fresh"), result_of(1000), ttl=60)  # any write sweeps what has expired
    assert len(cache) == 1 and cache.bytes < 2 * (1000 + ENTRY_OVERHEAD + 100)
    assert cache.get(("t", None, "fresh")) is not None


@pytest.mark.slow
def test_distinct_huge_arguments_do_not_grow_the_server_past_the_cache_budget(tmp_path, monkeypatch):
    """400 calls with distinct 65,000-character arguments and cache_max_bytes 65536: the process
    grows by what the calls themselves cost, not by 400 kept keys (measured, resident memory)."""
    import gc

    import psutil

    from mcpgen.serve.project import open_project

    (tmp_path / "mcpgen.yaml").write_text(
        "connections:\n  default:\n    duckdb: ':memory:'\ndefaults:\n  cache: 1h\n  cache_max_bytes: 65536\n"
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "echo_len.yaml").write_text(
        "description: Length.\nparameters:\n  q: {type: string, description: Text, max_length: 100000}\n"
        "sql: SELECT length(:q) AS n\nsources: [https://example.org/]\ncontent: '{{ rows[0].n }}'\n"
    )
    monkeypatch.chdir(tmp_path)
    project = open_project(tmp_path / "specs")
    try:
        registry = project.registry
        for i in range(20):  # warm up: first calls allocate what every call needs
            registry.call_sync("echo_len", {"q": f"{i:05d}" + "w" * 64_995})
        gc.collect()
        before = psutil.Process().memory_info().rss
        for i in range(400):
            assert registry.call_sync("echo_len", {"q": f"{i:05d}" + "z" * 64_995}).content[0].text == "65000"
        gc.collect()
        grown = psutil.Process().memory_info().rss - before
        assert registry.cache.bytes <= 65_536
        assert grown < 8 * 2**20, f"the server grew by {grown / 2**20:.1f} MiB"
    finally:
        project.close()
