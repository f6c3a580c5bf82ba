import logging

import pytest
from mcp.types import CallToolResult, TextContent

from mcpgen import DataToolOutput, Registry
from mcpgen.answer.plain import TextContent as Text
from mcpgen.answer.plain import ToolResult


def test_the_seed_example_runs_with_only_its_import_changed():
    registry = Registry()

    @registry.tool()
    def list_cities() -> DataToolOutput:
        """Return the top 3 cities by population."""
        return CallToolResult(
            content=[
                TextContent(
                    type="text",
                    text=(
                        "The 3 most populated cities are Tokyo (37,400,068), "
                        "Delhi (30,290,936) and Shanghai (27,058,479)."
                    ),
                )
            ],
            structuredContent={
                "sources": ["https://example.org/cities-data"],
                "table": [
                    ["City", "Population"],
                    ["Tokyo", "37400068"],
                    ["Delhi", "30290936"],
                    ["Shanghai", "27058479"],
                ],
            },
        )

    tool = registry.get("list_cities").to_mcp()
    assert tool.description == "Return the top 3 cities by population."
    assert tool.output_schema["required"] == ["sources"]
    result = registry.call_sync("list_cities")
    assert not result.is_error
    assert result.structured_content["table"][1] == ["Tokyo", "37400068"]


def test_a_function_without_data_tool_output_is_warned_about_and_not_registered(caplog):
    registry = Registry()
    with caplog.at_level(logging.WARNING, logger="mcpgen"):

        @registry.tool()
        def no_sources() -> CallToolResult:
            return CallToolResult(content=[])

    assert "no_sources" not in registry
    assert callable(no_sources)
    assert "no_sources is not registered" in caplog.text


def test_a_result_that_breaks_the_schema_is_an_error_not_a_success():
    registry = Registry()

    @registry.tool()
    def bad(kind: str = "ftp") -> DataToolOutput:
        data = {
            "ftp": {"sources": ["ftp://x"]},
            "none": {"table": []},
            "nan": {"sources": ["https://x.org"], "table": [["a"], [float("nan")]]},
            "chart": {"sources": ["https://x.org"], "charts": [{"data": {"datasets": [{"data": [float("inf")]}]}}]},
        }[kind]
        return CallToolResult(content=[TextContent(type="text", text="x")], structured_content=data)

    for kind, words in [
        ("ftp", "sources.0"),
        ("none", "sources"),
        ("nan", "table.1.0"),
        ("chart", "Out of range float"),
    ]:
        result = registry.call_sync("bad", {"kind": kind})
        assert result.is_error and words in result.content[0].text
    assert "Unknown argument 'other'" in registry.call_sync("bad", {"other": 1}).content[0].text
    assert registry.call_sync("bad", {"kind": 3}).content[0].text == (
        "Invalid argument 'kind': Input should be a valid string, got 3."
    )
    assert registry.call_sync("bad", {"kind": ["JP"]}).content[0].text.endswith('got ["JP"].')  # as JSON, as sent


def test_an_exception_in_a_python_tool_is_a_clear_error_without_a_trace():
    registry = Registry()

    @registry.tool()
    def boom() -> DataToolOutput:
        raise RuntimeError("secret detail")

    result = registry.call_sync("boom")
    assert result.is_error
    assert result.content[0].text == "Tool 'boom' failed (RuntimeError); the details are in the server log."


def test_optional_python_parameters_publish_a_plain_type_and_still_take_null():
    registry = Registry()

    @registry.tool()
    def find(query: str | None = None, limit: int | None = 3) -> DataToolOutput:
        """Find things."""
        text = f"{query!r} {limit!r}"
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content={"sources": ["https://x.org/"]}
        )

    props = registry.get("find").input_schema["properties"]
    assert props["query"]["type"] == "string" and "anyOf" not in props["query"] and "default" not in props["query"]
    assert props["limit"]["type"] == "integer" and props["limit"]["default"] == 3
    assert registry.call_sync("find", {"query": None, "limit": None}).content[0].text == "None None"
    assert registry.call_sync("find", {"query": "x"}).content[0].text == "'x' 3"


@pytest.mark.slow
def test_a_saturated_connection_leaves_calls_to_another_connection_fast(tmp_path, monkeypatch, postgres_url):
    """250 calls at once to a slow tool on a PostgreSQL pool of one: they wait for its slot in the
    event loop (64 of them, besides the two in threads; the rest are told at once it is busy), so no worker thread is held
    and a tool on the DuckDB connection keeps answering in milliseconds meanwhile."""
    import time

    import anyio

    from mcpgen.serve.project import open_project
    from mcpgen.serve.server import ToolServer

    (tmp_path / "mcpgen.yaml").write_text(
        "connections:\n"
        "  default:\n    duckdb: ':memory:'\n"
        f"  pg:\n    url: {postgres_url}\n    pool_size: 1\n    max_overflow: 0\n    pool_timeout: 10s\n"
    )
    specs = tmp_path / "specs"
    specs.mkdir()
    common = "sources: [https://example.org/]\ncontent: '{{ rows[0].v }}'\n"
    (specs / "slow_pg.yaml").write_text(
        "description: Slow.\nconnection: pg\ndialect: postgres\nsql: SELECT 'slept' AS v FROM pg_sleep(0.05)\n" + common
    )
    (specs / "fast_duck.yaml").write_text("description: Fast.\nsql: SELECT 1 AS v\n" + common)
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    registry = project.registry
    slow_texts: list[str] = []
    fast_seconds: list[float] = []

    async def slow():
        slow_texts.append((await registry.call("slow_pg", {})).content[0].text)

    async def fast_calls():
        await anyio.sleep(0.3)  # the PostgreSQL connection is saturated by now
        for _ in range(20):
            start = time.monotonic()
            result = await registry.call("fast_duck", {})
            fast_seconds.append(time.monotonic() - start)
            assert not result.is_error and result.content[0].text == "1"

    async def main():
        ToolServer.raise_thread_limit()  # as `serve` does
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for _ in range(250):
                    tg.start_soon(slow)
                tg.start_soon(fast_calls)

    try:
        anyio.run(main)
    finally:
        project.close()
    assert len(slow_texts) == 250
    busy = [t for t in slow_texts if t != "slept"]
    assert busy and all(t.startswith("Connection 'pg' is busy: ") and t.endswith(".") for t in busy), set(busy)
    # the two let into threads (one querying, one waiting for the pool) and the 64 queued: served in time
    assert slow_texts.count("slept") == 2 + 64
    assert "64 more are waiting, the most it queues" in busy[0]
    assert max(fast_seconds) < 0.5, fast_seconds


class _CountedRepr(ToolResult):
    """A result that counts how often its repr is made (a 1,000-row table's costs milliseconds)."""

    def __repr__(self) -> str:
        REPRS.append(1)
        return "counted"


REPRS: list[int] = []


def test_call_sync_never_makes_the_results_repr():
    """asyncio's runner swaps the main thread's SIGINT handler around a run, and Python reads the old
    handler through a failing Enum lookup whose message reprs the finished task, its result included."""
    registry = Registry()

    @registry.tool()
    def rows() -> DataToolOutput:
        """Rows."""
        return _CountedRepr([Text("x")], {"sources": ["https://e.org/"]})

    REPRS.clear()
    result = registry.call_sync("rows")
    assert isinstance(result, _CountedRepr) and not result.is_error
    assert REPRS == []
