r"""Small text helpers shared by the loaders, checks and engines.

>>> line_col("SELECT 1\nFROM t", 11)
(2, 3)
>>> first_line(ValueError("  bad value\nmore detail")), first_line(KeyError())
('bad value', 'KeyError')
>>> first_line(""), first_line("one\ntwo")
('', 'one')
>>> did_you_mean("descripton", ["title", "description"]), did_you_mean("zzz", ["title"])
("; did you mean 'description'?", '')
>>> as_json(True), as_json(None), as_json(["JP"]), as_json("x" * 80, limit=10)
('true', 'null', '["JP"]', '"xxxxxx...')
>>> plural(1, "tool"), plural(2, "spec file"), plural(0, "query", "queries")
('1 tool', '2 spec files', '0 queries')
>>> cut_bytes("abcdefghij" * 10, 40), utf8_size("\N{SNOWMAN}" * 3)
('abcdefghijab ... (100 bytes, cut) ...hij', 9)
>>> inert("could not convert '![x](https://evil.example/x.png)' or '<img src=x>' or '[a](b)'")
"could not convert '! [x] (https://evil.example/x.png)' or '< img src=x>' or '[a] (b)'"
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

_LIVE = re.compile(r"!\[|<(?=[A-Za-z/!?])")
_LINK = re.compile(r"\]\(")


def neutralise(text: str) -> str:
    """Text with nothing a markdown viewer would fetch or run: images and raw HTML tags are broken up.

    Applied to a whole rendered text, so values that only form an image together (`!` then
    `[y](...)`, or a list printed as a whole) are caught as well as a template's own text.

    >>> neutralise('see ![logo](https://evil.example/x.png) and <img src=x onerror=alert(1)>, 1 < 2')
    'see ! [logo](https://evil.example/x.png) and < img src=x onerror=alert(1)>, 1 < 2'
    """
    if "![" not in text and "<" not in text:
        return text
    return _LIVE.sub(lambda m: "! [" if m[0] == "![" else "< ", text)


def clipped(name: str, limit: int = 60) -> str:
    """A name a client sent (an argument's, a tool's, a URI) as it may be shown: cut to `limit` characters.

    >>> clipped("n" * 100)
    'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...'
    """
    text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def inert(message: str) -> str:
    """An error sentence as it may reach the model and the user: as `neutralise`, and no live link
    either (a sentence of mcpgen's has none; one made of a row value or an argument might)."""
    text = neutralise(message)
    return _LINK.sub("] (", text) if "](" in text else text


def utf8_size(text: str) -> int:
    """The bytes `text` takes in UTF-8 as a stream writes it (a lone surrogate, which JSON can carry, as
    its six-character escape)."""
    return len(text.encode("utf-8", "backslashreplace"))


def cut_bytes(text: str, limit: int) -> str:
    """`text` in at most `limit` bytes of UTF-8: its start and its end (a traceback's last line says what
    went wrong), cut between whole characters, with how long it was."""
    data = text.encode("utf-8", "backslashreplace")
    if len(data) <= limit:
        return text
    note = f" ... ({len(data):,} bytes, cut) ..."
    room = max(0, limit - len(note))
    head, tail = data[: room - room // 4], data[len(data) - room // 4 :] if room // 4 else b""
    return head.decode("utf-8", "ignore") + note + tail.decode("utf-8", "ignore")


def line_col(text: str | bytes, index: int) -> tuple[int, int]:
    """The 1-based (line, column) of offset `index` in `text`."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return text.count(newline, 0, index) + 1, index - (text.rfind(newline, 0, index) + 1) + 1  # type: ignore[arg-type]


def first_line(error: BaseException | str) -> str:
    """The first line of a message, stripped; for an exception without one, its class name."""
    text = str(error).strip()
    line = text.splitlines()[0].strip() if text else ""
    return line or ("" if isinstance(error, str) else type(error).__name__)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and the noun, in the plural unless count is 1."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def closest(name: object, candidates: Iterable[object]) -> str | None:
    """The candidate nearest to `name` (difflib, case ignored), if any is near enough."""
    by_lower: dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(str(c).lower(), str(c))
    import difflib  # only a name that is not found loads it

    match = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match and by_lower[match[0]] != str(name) else None


def did_you_mean(name: object, candidates: Iterable[object], prefix: str = "") -> str:
    """`; did you mean 'x'?` to end a message with, or "" when nothing is near (`prefix`: ':' for SQL)."""
    match = closest(name, candidates)
    return f"; did you mean '{prefix}{match}'?" if match else ""


def one_of(values: Iterable[object], limit: int = 60) -> str:
    """ "one of" the values, each as JSON (`as_json`): a value's own comma stays inside its quotes.

    >>> one_of(["Europe, West", "Asia", 3, None])
    'one of "Europe, West", "Asia", 3, null'
    """
    return "one of " + ", ".join(as_json(v, limit) for v in values)


def as_json(value: object, limit: int = 60) -> str:
    """A value as JSON (`true`, `null`, `["JP"]`, `"7"`), as a client sent it, cut to `limit` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def column_of(source: str, line: int, word: str) -> int:
    """The 1-based column of `word` on line `line` of `source`, else 1.

    >>> column_of("Hello\\n{{ r.city | thousand }}", 2, "thousand")
    13
    """
    text = (source.splitlines()[line - 1 : line] or [""])[0]
    match = re.search(rf"\b{re.escape(word)}\b", text)
    return match.start() + 1 if match else 1
