"""File paths in SQL that leave the project folder (DuckDB file functions and replacement scans),
and files the caller would choose (a parameter, or an expression, as the path a function reads).

>>> outside_paths("SELECT * FROM read_csv('../secret.csv')")
[(1, 24, "reads '../secret.csv', which climbs out of the project folder with '..' (relative paths start at the project folder)")]
>>> caller_paths("SELECT * FROM read_csv(:file)", {}, Path("."))[0][2]
'lets the caller choose the file read_csv reads (:file); declare file with an enum of the project files it may read'
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..text import line_col

_FILE_FUNCTIONS = re.compile(
    r"\b(read_\w+|parquet_\w+|glob|sniff_csv|delta_scan|iceberg_\w+|st_read\w*|open|query|query_table)\s*\(",
    re.IGNORECASE,
)
_LITERALS = re.compile(r"\s*(?:'(?:[^']|'')*'|\[\s*'(?:[^']|'')*'(?:\s*,\s*'(?:[^']|'')*')*\s*,?\s*\])\s*")
_PLACEHOLDERS = re.compile(r"\s*(?:(:\w+)|\[\s*(:\w+(?:\s*,\s*:\w+)*)\s*,?\s*\])\s*")
_FROM_STRING = re.compile(r"\b(FROM|JOIN)\s+'", re.IGNORECASE)
_STRING = re.compile(r"'((?:[^']|'')*)'")


def reads_files(sql: str) -> bool:
    """Whether `sql` calls one of DuckDB's file functions (whose paths `caller_paths` looks up on disk).

    >>> reads_files("SELECT * FROM read_csv(:file)"), reads_files("SELECT 1")
    (True, False)
    """
    return _FILE_FUNCTIONS.search(sql) is not None


def outside_paths(sql: str) -> list[tuple[int, int, str]]:
    """(line, col, reason) for each file path in `sql` that leaves the project folder.

    Looks at string literals read by DuckDB's file functions (read_csv(...), glob(...))
    and replacement scans (FROM 'file.csv'); comments are skipped."""
    text = _blank_comments(sql)
    spans: list[tuple[int, int]] = []
    for match in _FILE_FUNCTIONS.finditer(text):
        depth, i = 1, match.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if text[i] == "'":  # skip a whole string, parentheses inside it do not count
                closing = _STRING.match(text, i)
                i = closing.end() if closing else len(text)
                continue
            i += 1
        spans.append((match.end(), i))
    for match in _FROM_STRING.finditer(text):
        spans.append((match.end() - 1, match.end()))
    out = []
    seen = set()
    for start, end in spans:
        for lit in _STRING.finditer(text, start):
            if lit.start() >= max(end, start + 1):
                break
            if lit.start() in seen:
                continue
            seen.add(lit.start())
            reason = _path_problem(lit[1].replace("''", "'"))
            if reason:
                out.append((*line_col(text, lit.start()), reason))
    return out


def caller_paths(sql: str, parameters: dict[str, Any], root: Path) -> list[tuple[int, int, str]]:
    """(line, col, reason) for each file function whose path (first argument) is not written out:
    a parameter is allowed only when declared with an `enum` of files inside the project;
    any other expression (concatenation, a column, a subquery) is refused. `query()` and
    `query_table()` take SQL and table names the same way."""
    text = _blank_comments(sql)
    out = []
    for match in _FILE_FUNCTIONS.finditer(text):
        function = match[1].lower()
        start, end = match.end(), _first_argument_end(text, match.end())
        argument = text[start:end]
        where = line_col(text, start)
        if not argument.strip() or _LITERALS.fullmatch(argument):
            continue
        names = _PLACEHOLDERS.fullmatch(argument)
        if not names:
            out.append(
                (
                    *where,
                    f"builds the path {function} reads from an expression; write it as a literal "
                    "'path', or pass a parameter declared with an enum of the project files",
                )
            )
            continue
        for name in re.findall(r":(\w+)", argument):
            reason = _enum_problem(name, parameters.get(name), root)
            if reason:
                out.append((*where, f"lets the caller choose the file {function} reads (:{name}); {reason}"))
    return out


def _first_argument_end(text: str, i: int) -> int:
    """The offset of the comma or parenthesis that ends the argument starting at `i`."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "'":
            closing = _STRING.match(text, i)
            i = closing.end() if closing else len(text)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        i += 1
    return i


def _enum_problem(name: str, parameter: Any, root: Path) -> str | None:
    enum = getattr(parameter, "enum", None)
    if not enum:
        return f"declare {name} with an enum of the project files it may read"
    for value in enum:
        if not isinstance(value, str):
            return f"the enum of {name} holds {value!r}, which is not a path"
        reason = _path_problem(value)
        if reason:
            return f"the enum of {name} {reason}"
        real = (root / value).resolve()
        if not real.is_relative_to(root.resolve()) or any(
            p.startswith(".") for p in real.relative_to(root.resolve()).parts
        ):
            return f"the enum of {name} holds '{value}', which is not a visible file inside the project folder"
    return None


def _path_problem(path: str) -> str | None:
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        return f"reads '{path}' over the network; only files inside the project folder can be read"
    if path.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return f"reads the absolute path '{path}'; paths must be relative to the project folder"
    if ".." in re.split(r"[\\/]", path):
        return f"reads '{path}', which climbs out of the project folder with '..' (relative paths start at the project folder)"
    return None


def _blank_comments(sql: str) -> str:
    """`sql` with -- and /* */ comments replaced by spaces (newlines kept), strings left alone."""
    if "--" not in sql and "/*" not in sql:
        return sql
    out, i, n = list(sql), 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "'":
            end = sql.find("'", i + 1)
            while end != -1 and sql[end + 1 : end + 2] == "'":
                end = sql.find("'", end + 2)
            i = n if end == -1 else end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end == -1 else end
            out[i:end] = " " * (end - i)
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out[i:end] = [ch if ch == "\n" else " " for ch in sql[i:end]]
            i = end
        else:
            i += 1
    return "".join(out)
