"""Printing on a terminal: values are plain text, never markup or escape sequences."""

from mcp.types import CallToolResult, TextContent
from rich.console import Console

from mcpgen.answer.tool import Tool, check_result
from mcpgen.commands.terminal import json_text, plain, print_result, text, tool_table


def test_plain_drops_control_characters_and_bidi_overrides():
    assert plain("a\x1b[2Jb\tc\nd\u202ee\x9b") == "a[2Jb\tc\nde"
    assert plain(None) == "" and plain(3) == "3"


def test_json_text_escapes_what_json_would_carry_raw():
    assert json_text('{"v": "a\u009bb\u202e"}') == '{"v": "a\\u009bb\\u202e"}'


def test_text_is_never_read_as_markup():
    rendered = text("[link=https://evil.example]x[/link]", "bold")
    assert rendered.plain == "[link=https://evil.example]x[/link]" and str(rendered.style) == "bold"


def test_print_result_shows_force_prose_table_charts_and_sources(capsys):
    result = CallToolResult(
        content=[TextContent(type="text", text="Two cities.\x1b]0;pwned\x07")],
        structured_content={
            "force": "Read this first.",
            "sources": ["https://www.geonames.org/"],
            "table": [["city", "population"], ["Oslo", 709000], ["[b]Bergen[/b]", 285000]],
            "charts": [{"type": "bar", "data": {"datasets": [{"label": "population"}]}}],
        },
    )
    print_result(result)
    out = capsys.readouterr().out
    assert out.startswith("Read this first.\n\nTwo cities.]0;pwned\n")
    assert "[b]Bergen[/b]" in out and "709000" in out
    assert "chart: bar (population)" in out and "source: https://www.geonames.org/" in out


def test_print_result_writes_numbers_in_their_columns_format(capsys):
    table = [["city", "population", "share", "year"], ["Oslo", 709037, 50, 2024], ["Bergen", 285911, 52.25, 2023]]
    result = check_result(
        "t", CallToolResult(content=[], structured_content={"sources": ["https://x.org/"], "table": table})
    )
    print_result(result)
    rows = [line.strip("│ ").split(" │ ") for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["Oslo", "709,037", "50.00", "2024"],
        ["Bergen", "285,911", "52.25", "2023"],
    ]
    assert result.structured_content["table"] == table  # the answer keeps the numbers the query computed


def test_print_result_of_an_error_goes_to_stderr(capsys):
    print_result(CallToolResult(content=[TextContent(type="text", text="No such city.")], is_error=True))
    captured = capsys.readouterr()
    assert captured.out == "" and "error: No such city." in captured.err


def test_print_result_of_a_long_error_keeps_its_sentence_on_one_line(capsys):
    sentence = "Unknown argument 'regoin': this tool takes region, product, sold_from, sold_to and top_n (did you mean 'region'?)."
    print_result(CallToolResult(content=[TextContent(type="text", text=sentence)], is_error=True))
    assert capsys.readouterr().err == f"error: {sentence}\n"


def test_tool_table_lists_parameters_with_their_types():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "day": {"type": "string", "format": "date"},
            "ids": {"type": "array", "items": {"type": "string"}},
            "x": {"type": ["string", "null"]},
        },
        "required": ["n"],
    }
    tool = Tool(name="t", description="d", input_schema=schema, handler=lambda a: None, title="T", source="/x/t.yaml")
    console = Console(width=200, record=True)
    console.print(tool_table([tool]))
    row = next(line for line in console.export_text().splitlines() if " t " in line)
    assert "n: integer, day?: date, ids?: string[], x?: string | null" in row and "t.yaml" in row
