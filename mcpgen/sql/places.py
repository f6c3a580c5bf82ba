"""Where a database's error points, found in the spec's SQL as written.

PostgreSQL and MariaDB/MySQL point into the statement as it was sent: translated, with `$1` or the
values in place of `:name`, wrapped in a line or two of mcpgen's own. What they point at is the text
from the offending token on (`Near`); that token is the spec's where the text that follows it agrees
with the spec's SQL further than anywhere else, and nowhere else as far.

>>> spec = "SELECT t.x AS a\\nFROM (SELECT 1 AS x) AS t\\nWHERE t.x = :n AND t.x IS 1"
>>> find_near(spec, Near("1", None, True))  # the last 1: the text ends after it there only
(3, 27)
>>> find_near(spec, Near("t.x IS 1", 3, True)), find_near(spec, Near("1 AS", None, False))
((3, 20), (2, 14))
>>> find_near(spec, Near("t.x", None, False)) is None  # three places agree as far
True
>>> find_near(spec, Near("$1 AND t.x", 3, False)), find_near(spec, Near("AND t.x", 3, False))
((3, 13), (3, 16))
"""

from __future__ import annotations

import re

from ..errors import Near
from ..text import line_col

__all__ = ["Near", "find_near"]


# Strings and quoted names, bound values ($1, %(n)s), :name placeholders, words, any other character.
_TOKEN = re.compile(r"""'(?:[^']|'')*'?|"(?:[^"]|"")*"?|`[^`]*`?|\$\d+|%\(\w+\)s|:\w+|\w+|\S""")
_END = ("", -1)  # after the last token
_PLACEHOLDER = ":name"  # any `:name`, which agrees with one value sent in its place (`_VALUE`)
_REACH = 64  # tokens compared from each place
_VALUE = re.compile(r"\$\d+|%\(\w+\)s|'.*|[\d.]+|null|true|false", re.DOTALL)


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token as compared, offset): names unquoted and lower case, placeholders `_PLACEHOLDER`."""
    out = []
    for match in _TOKEN.finditer(text):
        token = match[0]
        if token[0] in '"`' and len(token) > 1:
            token = token[1:-1] if token[-1] == token[0] else token[1:]
        out.append((_PLACEHOLDER if re.fullmatch(r":\w+", token) else token.lower(), match.start()))
    return out


def find_near(sql: str, near: Near) -> tuple[int, int] | None:
    """(line, col) in `sql` of the token `near` points at, on `near.line` when given; None unless one place
    agrees with `near.text` furthest (a placeholder of `sql` agreeing with a value), over `_REACH` tokens
    at most (a long query costs no more than a short one for each of its tokens)."""
    sent = _tokens(near.text)
    sent = sent[:_REACH] + ([_END] if near.whole and len(sent) <= _REACH else [])
    written = [*_tokens(sql), _END]
    if not sent:
        return None
    reach: dict[int, int] = {}
    line = 1
    for start, (_, offset) in enumerate(written[:-1]):
        line += sql.count("\n", written[start - 1][1] if start else 0, offset)
        if near.line is not None and line != near.line:
            continue
        agree = 0
        while agree < len(sent) and start + agree < len(written):
            token, mine = sent[agree][0], written[start + agree][0]
            if token != mine and not (mine == _PLACEHOLDER and _VALUE.fullmatch(token)):
                break
            agree += 1
        if agree:
            reach[offset] = agree
    furthest = max(reach.values(), default=0)
    found = [offset for offset, agree in reach.items() if agree == furthest]
    return line_col(sql, found[0]) if len(found) == 1 else None
