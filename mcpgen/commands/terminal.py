"""Printing data on a terminal (`call`, `list`, `test`): row values and error text are plain text,
never instructions.

A value may hold rich markup (`[link=https://evil.example]...[/link]` would become a live
OSC 8 hyperlink) or raw escape sequences (`ESC ] 0 ; title BEL` retitles the window, and
others move the cursor or rewrite what is on screen). `plain` drops every control character
but newline and tab, and the Unicode bidirectional overrides that reorder what is shown;
`text` wraps the result so rich prints it as it is; `json_text` escapes what `--json` output
would otherwise carry raw.

>>> plain("ok\\x1b]0;pwned\\x07 \\x1b[2J[link=https://evil.example]x[/link]\\u202eevil")
'ok]0;pwned [2J[link=https://evil.example]x[/link]evil'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.text import Text

from ..answer.numbers import FORMATS_META, format_number

# C0 controls but \t and \n, DEL, C1 controls, and the bidi embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# json.dumps escapes C0 controls itself; with ensure_ascii=False it leaves these raw.
_RAW_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def plain(value: Any) -> str:
    """`value` as a string with no control characters."""
    return _CONTROL.sub("", "" if value is None else str(value))


def json_text(encoded: str) -> str:
    """JSON text with the control characters JSON may carry raw (DEL, C1, bidi) written as escapes.

    >>> json_text('{"v": "a\u009b2Jb\u202e"}')
    '{"v": "a\\\\u009b2Jb\\\\u202e"}'
    """
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m[0]):04x}", encoded)


def text(value: Any, style: str = "") -> Text:
    """A rich Text of `plain(value)`: printed as is, never read as markup."""
    return Text(plain(value), style=style)


def print_result(result) -> None:
    """Prose, table, charts and sources as plain text: values are data, never markup or escapes."""
    import click
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    prose = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    if result.is_error:
        # One sentence per line as written: rich would otherwise wrap it at the console's width (80 in a pipe).
        Console(stderr=True, highlight=False, soft_wrap=True).print(text("error: ", "bold red") + text(prose))
        return
    data = result.structured_content or {}
    # The prose exactly as the model reads it (no wrapping, markup or emoji codes), control characters dropped.
    if isinstance(data.get("force"), str) and data["force"].strip():
        click.echo(plain(data["force"]))
        click.echo()
    click.echo(plain(prose))
    if data.get("table"):
        header, *rows = data["table"]
        # Numbers as the app shows them: each column in the one format the server chose for it.
        formats = (result.meta or {}).get(FORMATS_META) or [None] * len(header)
        table = Table()
        for h, fmt in zip(header, formats):
            table.add_column(text(h), justify="right" if fmt else "left")
        for row in rows:
            table.add_row(*[text(_cell(v, fmt)) for v, fmt in zip(row, formats)])
        console.print(table)
    for chart in data.get("charts") or []:
        sets = ", ".join(str(d.get("label")) for d in chart["data"]["datasets"])
        console.print(text(f"chart: {chart['type']} ({sets})"))
    for url in data.get("sources", []):
        console.print(text(f"source: {url}"))


def _cell(value: Any, fmt: dict | None) -> Any:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return format_number(value, fmt) if number and fmt else value


def tool_table(tools: Iterable[Any]):
    """`mcpgen list`: a rich Table of each tool's name, title, parameters (`name?: type` when
    optional) and the file it comes from."""
    from rich.table import Table

    table = Table("tool", "title", "parameters", "from")
    for tool in tools:
        props = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        params = ", ".join(f"{n}{'' if n in required else '?'}: {_type_label(p)}" for n, p in props.items())
        table.add_row(*map(text, (tool.name, tool.title, params, Path(tool.source or "").name)))
    return table


def _type_label(schema: dict) -> str:
    """`string`, `date-time`, `string[]` for a property's JSON Schema; `any` when it has no one type."""
    if schema.get("type") == "array":
        return f"{_type_label(schema.get('items') or {})}[]"
    kind = schema.get("format") or schema.get("type", "any")
    return kind if isinstance(kind, str) else " | ".join(kind)
