"""The SQL's structure as the database reads it: a conservative scan per engine, held against sqlglot.

The read-only checks reason over sqlglot's tokens. Where sqlglot's idea of a comment, a string, a
quoted name or a statement boundary differs from the engine's, a text can look harmless to the
checks and run something else (on MariaDB, `--` before a no-break space is a comment to sqlglot and
code to the server). So before any other check, `check_lexing` scans the text by the engine's rules,
refuses what engines disagree on, and refuses any text whose sqlglot tokens do not line up with
that scan. A difference can only cause a refusal, never a pass.

Refused, on every engine:

- any character that is not ASCII outside string literals and quoted names (comments included):
  engines differ on which of them are spaces (DuckDB takes U+00A0 as one, MariaDB as a name);
- ASCII control characters outside string literals and quoted names, other than tab and line
  breaks, and a carriage return not followed by a line feed (a `--` comment ends there on
  PostgreSQL, not on MariaDB);
- a string whose end depends on whether backslashes escape (a server setting on PostgreSQL and
  MariaDB, the default on Spark), a comment inside a comment (PostgreSQL, DuckDB and Spark nest
  them, MariaDB and SQLite do not), a `--` comment ending in a backslash (Spark continues it), and
  anything left unterminated.

>>> check_lexing("SELECT 1 -- a comment\\n", "mysql")
>>> check_lexing("SELECT 1 --\\u00a0, LOAD_FILE('/etc/hostname')", "mysql")
Traceback (most recent call last):
...
mcpgen.errors.UnsafeSQL: the SQL has U+00A0 (NO-BREAK SPACE) at line 1, column 12, outside any string or quoted name; databases disagree on what such characters mean, so only ASCII may be written there
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import sqlglot
from sqlglot.tokens import Token, TokenType

from ..errors import UnsafeSQL
from ..text import line_col


@dataclass(frozen=True)
class _Rules:
    engine: str  # for messages
    strings: str  # quote characters of string literals (a backslash may escape inside them)
    names: tuple[tuple[str, str], ...]  # quoted names: opening and closing character
    doubled_strings: bool = True  # '' stays inside a string (Spark reads two strings)
    hash_comments: bool = False  # `#` starts a comment (MySQL, MariaDB)
    dash_needs_space: bool = False  # `--` is a comment only before a space, a line break or the end
    dollar_quotes: bool = False  # $tag$ ... $tag$ (PostgreSQL, DuckDB)
    e_strings: bool = False  # in E'...' a backslash escapes (PostgreSQL, DuckDB)
    backslash_setting: bool = True  # a setting of the server decides whether backslashes escape in other strings


_POSTGRES = _Rules("PostgreSQL", "'", (('"', '"'),), dollar_quotes=True, e_strings=True)
_RULES = {
    "postgres": _POSTGRES,
    "redshift": _POSTGRES,
    "duckdb": _Rules(
        "DuckDB", "'", (('"', '"'), ("`", "`")), dollar_quotes=True, e_strings=True, backslash_setting=False
    ),
    "mysql": _Rules("MySQL and MariaDB", "'\"", (("`", "`"),), hash_comments=True, dash_needs_space=True),
    "sqlite": _Rules("SQLite", "'", (('"', '"'), ("`", "`"), ("[", "]")), backslash_setting=False),
    "spark": _Rules("Spark", "'\"", (("`", "`"),), doubled_strings=False),
    "databricks": _Rules("Spark", "'\"", (("`", "`"),), doubled_strings=False),
}
_GENERIC = _Rules("the database", "'", (('"', '"'),))

_SPACE = " \t\n\r"
# A run of code with nothing to look at: words (a `$` inside one is no dollar quote), numbers (DuckDB
# reads 1e'x' as 1 and e'x'), spaces and operators; the last one is the group, to find E'...'.
_RUN = re.compile(r"([A-Za-z_][A-Za-z0-9_$]*|[0-9][0-9_.]*|[ \t\n(),.*=<>+!%&|^~:;?@{}\]]|\r\n)+")
_BAD = re.compile(r"[^\t\n\x20-\x7e\r]|\r(?!\n)")  # what may not stand outside strings and quoted names

_DOLLAR = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


@dataclass(frozen=True)
class _Region:
    kind: str  # "comment" or "quoted"
    start: int
    end: int  # just past its last character


def _refuse(sql: str, at: int, problem: str) -> UnsafeSQL:
    line, col = line_col(sql, at)
    return UnsafeSQL(problem.format(where=f"line {line}, column {col}"), line, col)


def _char_problem(sql: str, at: int) -> UnsafeSQL | None:
    """A character that may not stand outside strings and quoted names, or None."""
    ch = sql[at]
    if ch in "\t\n" or " " <= ch <= "~":
        return None
    if ch == "\r":
        if sql[at + 1 : at + 2] == "\n":
            return None
        return _refuse(sql, at, "the SQL has a carriage return without a line feed at {where}; end lines with \\n")
    if ord(ch) < 0x80:
        return _refuse(
            sql,
            at,
            f"the SQL has the control character U+{ord(ch):04X} at {{where}}; remove it or write it in a string",
        )
    name = unicodedata.name(ch, "") if not 0xD800 <= ord(ch) <= 0xDFFF else ""
    named = f"U+{ord(ch):04X} ({name})" if name else f"U+{ord(ch):04X}"
    return _refuse(
        sql,
        at,
        f"the SQL has {named} at {{where}}, outside any string or quoted name; databases disagree on what "
        "such characters mean, so only ASCII may be written there",
    )


def _check_chars(sql: str, start: int, end: int) -> None:
    bad = _BAD.search(sql, start)
    if bad and bad.start() < end:
        raise _char_problem(sql, bad.start()) or AssertionError(bad)


def _quoted_end(sql: str, start: int, close: str, backslash: bool, doubled: bool) -> int:
    """Just past the closing quote of the quoted text opening at `start`, or -1."""
    i, n = start + 1, len(sql)
    while i < n:
        ch = sql[i]
        if backslash and ch == "\\":
            i += 2
        elif ch == close:
            if doubled and sql[i + 1 : i + 2] == close:
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return -1


def _block_comment_end(sql: str, start: int) -> int:
    inner = sql.find("/*", start + 2)
    end = sql.find("*/", start + 2)
    if end < 0:
        raise _refuse(sql, start, "the SQL has a comment that never ends, starting at {where}")
    if 0 <= inner < end:
        raise _refuse(
            sql,
            inner,
            "the SQL opens a comment inside a comment at {where}; databases disagree on where such a comment ends",
        )
    _check_chars(sql, start, end)
    return end + 2


def _line_comment_end(sql: str, start: int) -> int:
    end = sql.find("\n", start)
    end = len(sql) if end < 0 else end
    _check_chars(sql, start, end)
    if sql[:end].rstrip("\r").endswith("\\"):
        raise _refuse(
            sql, start, "the SQL has a -- comment ending in a backslash at {where}; Spark continues it on the next line"
        )
    return end


def _starts_line_comment(sql: str, i: int, rules: _Rules) -> bool:
    if sql.startswith("--", i):
        return not rules.dash_needs_space or i + 2 == len(sql) or sql[i + 2] in _SPACE
    return rules.hash_comments and sql[i] == "#"


def _quoted(sql: str, i: int, rules: _Rules, backslash: bool, after: str) -> int:
    """Just past the string, quoted name or dollar-quoted string at `i` (right `after` that word), or 0
    when none starts there. `backslash`: whether backslashes escape where a setting decides it."""
    ch = sql[i]
    if ch in rules.strings:
        escapes = (rules.e_strings and after in ("e", "E")) or (rules.backslash_setting and backslash)
        end = _quoted_end(sql, i, ch, escapes, rules.doubled_strings)
    elif any(ch == opening for opening, _ in rules.names):
        close = next(closing for opening, closing in rules.names if opening == ch)
        end = _quoted_end(sql, i, close, False, True)
    elif rules.dollar_quotes and ch == "$" and (tag := _DOLLAR.match(sql, i)):
        end = sql.find(tag.group(), tag.end())
        end = end + len(tag.group()) if end >= 0 else -1
    else:
        return 0
    if end < 0:
        raise _refuse(sql, i, "the SQL has a string or quoted name that never ends, starting at {where}")
    return end


def _scan(sql: str, rules: _Rules, backslash: bool) -> tuple[list[_Region], UnsafeSQL | None]:
    """The comments and quoted texts of `sql` as `rules` read them, and what engines disagree on
    (the first such thing, with the regions before it), or None."""
    regions: list[_Region] = []
    i, n, run_end, word = 0, len(sql), -1, ""
    try:
        while i < n:
            if sql.startswith("/*", i):
                end = _block_comment_end(sql, i)
                regions.append(_Region("comment", i, end))
            elif _starts_line_comment(sql, i, rules):
                end = _line_comment_end(sql, i)
                regions.append(_Region("comment", i, end))
            elif end := _quoted(sql, i, rules, backslash, word if run_end == i else ""):
                regions.append(_Region("quoted", i, end))
            elif match := _RUN.match(sql, i):
                end = run_end = match.end()
                word = match.group(1)
            else:
                problem = _char_problem(sql, i)
                if problem:
                    raise problem
                end = i + 1
            i = end
    except UnsafeSQL as exc:
        return regions, exc
    return regions, None


def _first_difference(one: list[_Region], other: list[_Region]) -> int:
    for a, b in zip(one, other, strict=False):
        if a != b:
            return min(a.start, b.start)
    longer = one if len(one) > len(other) else other
    return longer[min(len(one), len(other))].start if longer else 0


def _check_tokens_agree(sql: str, regions: list[_Region], tokens: list[Token], rules: _Rules) -> None:
    """Every token lies in code or is exactly one quoted text (with a prefix such as E, N, X or
    _utf8mb4), and every character of code that is not a space lies in a token."""
    left = bytearray(sql.encode("ascii", "replace"))  # one byte a character; covered ones become spaces
    for region in regions:
        left[region.start : region.end] = b" " * (region.end - region.start)
    r, count = 0, len(regions)
    for tok in tokens:
        start, end = tok.start, tok.end + 1
        while r < count and regions[r].end <= start:
            r += 1
        if r < count and regions[r].start < end:
            quoted = regions[r]
            if not (
                quoted.kind == "quoted"
                and quoted.end == end
                and (start == quoted.start or sql[start : quoted.start].replace("&", "_").isidentifier())
            ):
                raise _mismatch(sql, start, rules)
        left[start:end] = b" " * (end - start)
    uncovered = re.search(rb"[^ \t\n\r]", left)
    if uncovered:
        raise _mismatch(sql, uncovered.start(), rules)


def _mismatch(sql: str, at: int, rules: _Rules) -> UnsafeSQL:
    if rules.dash_needs_space and "--" in sql[max(0, at - 2) : at + 2]:
        return _refuse(
            sql,
            at,
            f"the SQL has -- without a space after it at {{where}}; {rules.engine} read that as code, "
            "not as a comment: write '-- ' to start a comment",
        )
    return _refuse(
        sql,
        at,
        f"the SQL's comments, quotes or statement boundaries read differently to the checks and to "
        f"{rules.engine} at {{where}}; write that part plainly",
    )


def check_lexing(sql: str, dialect: str | None, tokens: list[Token] | None = None) -> None:
    """Raise UnsafeSQL where the engine of `dialect` may read `sql`'s comments, strings, quoted names
    or statement boundaries differently from sqlglot's `tokens` (tokenized here when not given)."""
    rules = _RULES.get(dialect or "", _GENERIC)
    regions, problem = _scan(sql, rules, backslash=False)
    if "\\" in sql and rules.backslash_setting:
        escaped, escaped_problem = _scan(sql, rules, backslash=True)
        if (problem is None) != (escaped_problem is None) or (problem is None and escaped != regions):
            raise _refuse(
                sql,
                _first_difference(regions, escaped),
                "the SQL has a string at {where} whose end depends on whether backslashes escape quotes "
                "(a setting of the server); write a quote inside a string as two quotes, or on Spark "
                "inside a string of the other quote, not after a backslash",
            )
    if problem is not None:
        raise problem
    if tokens is None:
        tokens = list(sqlglot.Dialect.get_or_raise(dialect).tokenize(sql))
    if any(tok.token_type == TokenType.COMMAND for tok in tokens):
        return  # sqlglot keeps the rest of a command (CALL, SHOW...) as one text; the read-only check refuses it
    _check_tokens_agree(sql, regions, tokens, rules)
