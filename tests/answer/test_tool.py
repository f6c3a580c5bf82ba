"""A tool as the server holds it, and the results every call ends in."""

import json
import math

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent
from mcp_types.methods import SERVER_RESULTS, serialize_server_result

from mcpgen import logs
from mcpgen.answer.numbers import FORMATS_META
from mcpgen.answer.plain import ResourceLink, ToolResult, json_size, sent, wire
from mcpgen.answer.plain import TextContent as Text
from mcpgen.answer.results import published_schema
from mcpgen.answer.tool import READ_ONLY, Answer, Tool, check_result, error_result
from mcpgen.engines.protocol import QueryResult


def ok(structured) -> ToolResult:
    return ToolResult([Text("prose")], structured)


def test_error_result_is_one_sentence_and_notes_the_exception_for_the_call_log():
    with logs.call_stats() as stats:
        try:
            raise KeyError("x")
        except KeyError:
            result = error_result("Nothing matched.")
    assert result.is_error and [c.text for c in result.content] == ["Nothing matched."]
    assert stats.error == "KeyError"
    with logs.call_stats() as stats:
        error_result("Outside an except block.")
    assert stats.error == "ToolError"


def test_check_result_passes_a_valid_result_and_an_error_as_they_are():
    good = ok({"sources": ["https://example.org/"], "table": [["a"], ["x"]]})
    assert check_result("t", good) is good
    numbers = ok({"sources": ["https://example.org/"], "table": [["a", "b"], ["x", 50], ["y", 52.2]]})
    checked = check_result("t", numbers)  # the same answer, and how to write its numbers
    assert checked.structured_content == numbers.structured_content and numbers.meta is None
    assert checked.meta == {FORMATS_META: [None, {"decimals": 1, "grouping": True}]}
    own = ok({"sources": ["https://example.org/"], "table": [["b"], [50]]})
    own.meta = {FORMATS_META: [{"decimals": 2, "grouping": False}]}
    assert check_result("t", own) is own  # a tool's own formats are kept
    refused = error_result("No.")
    assert check_result("t", refused) is refused


def test_check_result_holds_a_hand_written_tools_result_as_it_reads_it():
    """A hand-written tool returns the protocol's CallToolResult: it is held as mcpgen's own result, its
    content items as they are, and leaves the server as the same CallToolResult."""
    given = CallToolResult(
        content=[TextContent(type="text", text="prose")],
        structured_content={"sources": ["https://example.org/"]},
        _meta={"k": 1},
    )
    held = check_result("t", given)
    assert isinstance(held, ToolResult) and held.content[0] is given.content[0]
    assert (held.structured_content, held.is_error, held.meta) == (given.structured_content, False, {"k": 1})
    assert held.to_mcp() == given
    broken = CallToolResult(content=[], structured_content={"table": []})
    assert check_result("t", broken).is_error


def test_check_result_turns_a_broken_result_into_a_clear_error():
    assert check_result("t", {"content": []}).content[0].text == "Tool 't' returned dict, not a CallToolResult."
    no_sources = check_result("t", ok({"table": []}))
    assert no_sources.is_error and no_sources.content[0].text.startswith(
        "Tool 't' returned a result that breaks its output schema (sources: Field required"
    )
    nan_chart = check_result("t", ok({"sources": ["https://example.org/"], "charts": [{"data": [math.nan]}]}))
    assert nan_chart.is_error and "breaks its output schema" in nan_chart.content[0].text


def test_a_table_mcpgen_built_is_checked_by_its_header_and_every_other_by_each_cell():
    """A spec's table is made by results.build_table, its cells JSON scalars by construction; a hand-written
    tool's table may hold anything, and each of its cells is checked."""
    odd = ok({"sources": ["https://example.org/"], "table": [["a"], [1.5], [{"nested": 1}]]})
    assert check_result("t", odd).is_error  # not built here: every cell is held to the schema
    assert Answer(odd).built is False  # only a spec tool's answer says its table is built
    built = check_result("t", odd, built=True)
    assert not built.is_error and built.structured_content is odd.structured_content  # the cells are not looked at
    assert built.meta == {FORMATS_META: [{"decimals": 1, "grouping": True}]}  # and the formats are still found
    for broken in (
        {"sources": ["ftp://example.org/"], "table": [["a"], [1]]},  # a source rendered from an argument
        {"sources": ["https://example.org/"], "table": [[{"h": 1}], [1]]},  # the header
        {"sources": ["https://example.org/"], "table": [["a"], [1]], "charts": [{"data": [math.nan]}]},
        {"sources": ["https://example.org/"], "table": "a"},
    ):
        assert check_result("t", ok(broken), built=True).is_error, broken


def test_a_tool_publishes_its_schemas_and_its_app():
    tool = Tool(name="t", description="d", input_schema={"type": "object", "properties": {}}, handler=lambda a: None)
    plain = tool.to_mcp()
    assert (plain.name, plain.output_schema, plain.meta) == ("t", published_schema(), None)
    tool.app, tool.annotations = "ui://mcpgen/answer", READ_ONLY
    published = tool.to_mcp()
    assert published.meta == {"ui": {"resourceUri": "ui://mcpgen/answer"}}
    assert published.annotations.read_only_hint is True and published.annotations.open_world_hint is False


def test_an_answer_carries_the_query_behind_it():
    query = QueryResult(columns=["a"], rows=[(1,)], truncated=True, seconds=0.01)
    answer = Answer(ok({"sources": ["https://example.org/"]}), query)
    assert answer.query.truncated and Answer(answer.result).query is None


def test_mcpgens_result_leaves_as_the_protocol_writes_it():
    """`to_mcp` gives the protocol's CallToolResult of every field, and `wire` (what the cache counts) is
    its JSON but for the result type the protocol adds."""
    link = ResourceLink(uri="mcpgen://download/t.csv?x=1", name="t.csv", title="CSV", mime_type="text/csv")
    result = ToolResult([Text("prose"), link], {"sources": ["https://example.org/"]}, meta={"k": 1})
    sent = result.to_mcp()
    assert isinstance(sent, CallToolResult) and sent.content[1].mime_type == "text/csv"
    assert sent.model_dump(mode="json", by_alias=True, exclude_none=True) == {**wire(result), "resultType": "complete"}
    assert wire(result)["content"][1] == {
        "type": "resource_link",
        "uri": "mcpgen://download/t.csv?x=1",
        "name": "t.csv",
        "title": "CSV",
        "mimeType": "text/csv",
    }
    assert json_size(result) == len(json.dumps(wire(result), separators=(",", ":")))
    assert error_result("No.").to_mcp().is_error


LINK = ResourceLink(uri="mcpgen://download/t.csv?args=e30&link=x", name="t.csv", title="CSV", description="d")


@pytest.mark.parametrize("version", sorted(v for m, v in SERVER_RESULTS if m == "tools/call"))
@pytest.mark.parametrize(
    "result",
    [
        ToolResult([Text("prose"), LINK], {"sources": ["https://example.org/"], "table": [["a"], [None]]}),
        ToolResult([Text("prose")], {"sources": []}, meta={"mcpgen/formats": [None]}),
        error_result("Nothing matched."),
        ToolResult([TextContent(type="text", text="hand"), ImageContent(type="image", data="AA==", mime_type="x")]),
    ],
    ids=["links", "meta", "error", "hand-written"],
)
def test_what_serve_hands_the_sdk_goes_out_as_the_protocol_s_result_would(result, version):
    """serve gives the SDK `sent(result)`, not `result.to_mcp()`: the SDK validates and dumps either for the
    client's protocol version, and the JSON it writes is the same to the byte (or both are refused alike)."""

    def written(data):
        try:
            return json.dumps(serialize_server_result("tools/call", version, data), ensure_ascii=False)
        except ValueError as exc:  # pydantic's ValidationError: this version has no such content
            return type(exc).__name__

    dumped = result.to_mcp().model_dump(by_alias=True, mode="json", exclude_none=True)  # what the SDK did with it
    assert written(sent(result)) == written(dumped)
