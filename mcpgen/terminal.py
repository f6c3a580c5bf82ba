"""Printing data on a terminal: row values and error text are plain text, never instructions.

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
from typing import Any

from rich.text import Text

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
