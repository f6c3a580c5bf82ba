"""File paths in SQL that leave the project folder (DuckDB file functions and replacement scans).

>>> outside_paths("SELECT * FROM read_csv('../secret.csv')")
[(1, 24, "reads '../secret.csv', which climbs out of the project folder with '..'")]
"""

from __future__ import annotations

import re

from ..text import line_col

_FILE_FUNCTIONS = re.compile(
    r"\b(read_\w+|parquet_\w+|glob|sniff_csv|delta_scan|iceberg_\w+|st_read|open)\s*\(", re.IGNORECASE
)
_FROM_STRING = re.compile(r"\b(FROM|JOIN)\s+'", re.IGNORECASE)
_STRING = re.compile(r"'((?:[^']|'')*)'")


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


def _path_problem(path: str) -> str | None:
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        return f"reads '{path}' over the network; only files inside the project folder can be read"
    if path.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return f"reads the absolute path '{path}'; paths must be relative to the project folder"
    if ".." in re.split(r"[\\/]", path):
        return f"reads '{path}', which climbs out of the project folder with '..'"
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
