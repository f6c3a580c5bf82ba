import logging

from mcp.types import CallToolResult, TextContent

from mcpgen import DataToolOutput, Registry


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
