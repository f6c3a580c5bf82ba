"""Static checks beyond the spec schema, used by `loading` (no database is touched).

Unsafe template constructs, the row columns templates read, chart settings that make
no sense for their type, SQL that names files outside the project, source URLs, and
literal passwords in `mcpgen.yaml`.

>>> from mcpgen.render import PROSE
>>> row_references(PROSE.parse("{% for r in rows %}{{ r.city }}{% endfor %}"))
[(1, 'city')]
>>> template_hazards(PROSE.parse("{{ ''.__class__ }}"))[0][1]
"reads the internal attribute '__class__', which the sandbox refuses"
>>> literal_password("postgresql://reader:secret@db/analytics"), literal_password("postgresql://reader:${PW}@db/x")
(True, False)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from jinja2 import nodes

if TYPE_CHECKING:
    from .spec import Chart

MAX_SEQUENCE = 100_000  # as in render.py: the longest string or list `*` may build
MAX_POWER = 10_000
MAX_RANGE = 100_000  # jinja2.sandbox.MAX_RANGE


# --------------------------------------------------------------------------------------------
# Templates: constructs the sandbox refuses or that would blow its limits


_UNSAFE_ATTRS = frozenset(
    {
        "mro",
        "func_globals",
        "func_code",
        "func_closure",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "im_func",
        "im_self",
        "im_class",
        "co_code",
    }
)


def template_hazards(ast: nodes.Template) -> list[tuple[int, str]]:
    """(line, what) for each construct a spec template may not use; `what` completes "the template ..."."""
    out: list[tuple[int, str]] = []
    kinds = (
        nodes.Getattr,
        nodes.Getitem,
        nodes.Filter,
        nodes.Call,
        nodes.Mul,
        nodes.Pow,
        nodes.Include,
        nodes.Import,
        nodes.FromImport,
        nodes.Extends,
    )
    for node in ast.find_all(kinds):
        line = node.lineno
        if isinstance(node, nodes.Getattr):
            if node.attr.startswith("_") or node.attr in _UNSAFE_ATTRS:
                out.append((line, f"reads the internal attribute '{node.attr}', which the sandbox refuses"))
        elif isinstance(node, nodes.Getitem):
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) and node.arg.value.startswith("_"):
                out.append((line, f"reads the internal item '{node.arg.value}', which the sandbox refuses"))
        elif isinstance(node, nodes.Filter):
            if node.name == "attr":
                out.append(
                    (
                        line,
                        "uses the attr filter, which reaches attributes by name; write r.column or r['column'] instead",
                    )
                )
            elif node.name == "format" and not isinstance(node.node, nodes.Const):
                out.append(
                    (
                        line,
                        "uses the format filter, but its format string is not a literal (values must never act as "
                        "templates); write e.g. '%s km' | format(r.distance)",
                    )
                )
        elif isinstance(node, nodes.Call):
            if isinstance(node.node, nodes.Getattr) and node.node.attr in ("format", "format_map"):
                out.append(
                    (
                        line,
                        f"calls .{node.node.attr}(), which can reach into objects; use the format "
                        "filter ('%s' | format(x)), ~ or the thousands/round filters",
                    )
                )
            elif isinstance(node.node, nodes.Name) and node.node.name == "range" and node.args:
                size = _const_number(node.args[-1] if len(node.args) < 3 else node.args[1])
                if isinstance(size, int) and abs(size) > MAX_RANGE:
                    out.append((line, f"calls range() with {size:,} items; the sandbox allows {MAX_RANGE:,}"))
        elif isinstance(node, nodes.Pow):
            exponent = _const_number(node.right)
            if isinstance(exponent, (int, float)) and abs(exponent) > MAX_POWER:
                out.append((line, f"raises to the power {exponent:,}; templates may not go above {MAX_POWER:,}"))
        elif isinstance(node, nodes.Mul):
            for seq, n in ((node.left, node.right), (node.right, node.left)):
                count = _const_number(n)
                if isinstance(seq, (nodes.Const, nodes.List, nodes.Tuple)) and isinstance(count, int):
                    length = (
                        len(seq.value)
                        if isinstance(seq, nodes.Const) and isinstance(seq.value, str)
                        else (len(seq.items) if not isinstance(seq, nodes.Const) else None)
                    )
                    if length is not None and length * count > MAX_SEQUENCE:
                        size = f"{length * count:,}" if count < _HUGE else "an astronomical number of"
                        out.append(
                            (
                                line,
                                f"builds a sequence of {size} items with *; "
                                f"templates may not build more than {MAX_SEQUENCE:,}",
                            )
                        )
                        break
        else:  # include, import, extends
            word = {
                nodes.Include: "include",
                nodes.Import: "import",
                nodes.FromImport: "from ... import",
                nodes.Extends: "extends",
            }[type(node)]
            out.append((line, f"uses {{% {word} %}}; spec templates cannot load other templates"))
    return list(dict.fromkeys(out))


_HUGE = 10**30  # stands for any constant too big to compute


def _const_number(node: nodes.Node) -> int | float | None:
    """The value of a constant numeric expression (ints, + - * ** //), never building a big value."""
    if isinstance(node, nodes.Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, nodes.Neg):
        value = _const_number(node.node)
        return None if value is None else -value
    if isinstance(node, (nodes.Add, nodes.Sub, nodes.Mul, nodes.Pow, nodes.FloorDiv)):
        left, right = _const_number(node.left), _const_number(node.right)
        if left is None or right is None:
            return None
        try:
            if isinstance(node, nodes.Pow):
                if abs(right) > MAX_POWER:
                    return None  # a power above the bound is its own hazard
                if abs(left) > 1 and abs(right) * math.log2(abs(left)) > 4096:
                    return _HUGE  # too big to compute here
                value = left**right
                return value if isinstance(value, (int, float)) else None
            if (
                isinstance(node, nodes.Mul)
                and abs(left) > 1
                and abs(right) > 1
                and math.log2(abs(left)) + math.log2(abs(right)) > 4096
            ):
                return _HUGE
            return {
                nodes.Add: lambda: left + right,
                nodes.Sub: lambda: left - right,
                nodes.Mul: lambda: left * right,
                nodes.FloorDiv: lambda: left // right,
            }[type(node)]()
        except (OverflowError, ZeroDivisionError, ValueError, TypeError):
            return None
    return None


# --------------------------------------------------------------------------------------------
# Templates: the result columns they name


_ROWS, _ROW, _GROUPS, _GROUP = "rows", "row", "groups", "group"  # groups: rows | groupby(...)
_LIST_FILTERS = {"sort", "reverse", "list", "unique", "selectattr", "rejectattr", "select", "reject"}
_ITEM_FILTERS = {"first", "last", "random", "min", "max"}
_ATTRIBUTE_FILTERS = {"sum", "map", "sort", "min", "max", "groupby", "unique"}
_DICT_METHODS = {"items", "keys", "values", "get"}


def row_references(ast: nodes.Template) -> list[tuple[int, str]]:
    """(line, column name) for every column of a result row the template reads.

    Rows are `rows` itself, filtered or sliced lists of it, `rows[0]`, `rows | first`,
    loop variables over those, the `list` of each `rows | groupby(...)` group, and
    `{% set %}` names bound to any of them."""
    found: list[tuple[int, str]] = []
    callees = {id(c.node) for c in ast.find_all(nodes.Call)}

    def kind(expr: nodes.Node, env: dict) -> str | None:
        if isinstance(expr, nodes.Name):
            return env.get(expr.name)
        if isinstance(expr, nodes.Filter) and expr.node is not None:
            base = kind(expr.node, env)
            if base == _ROWS and expr.name in _LIST_FILTERS:
                return _ROWS
            if base == _ROWS and expr.name in _ITEM_FILTERS:
                return _ROW
            if base == _ROWS and expr.name == "groupby":
                return _GROUPS
        if isinstance(expr, nodes.Getattr) and expr.attr == "list" and kind(expr.node, env) == _GROUP:
            return _ROWS
        if isinstance(expr, nodes.Getitem) and kind(expr.node, env) == _ROWS:
            if isinstance(expr.arg, nodes.Slice):
                return _ROWS
            if isinstance(expr.arg, (nodes.Const, nodes.Neg)) and not isinstance(getattr(expr.arg, "value", 0), str):
                return _ROW
        if isinstance(expr, nodes.CondExpr):
            a, b = kind(expr.expr1, env), kind(expr.expr2, env) if expr.expr2 is not None else None
            return a if a == b else None
        return None

    def attribute_names(node: nodes.Filter) -> Iterable[str]:
        values = [k.value for k in node.kwargs if k.key == "attribute"]
        if node.name in ("selectattr", "rejectattr", "groupby") and node.args:
            values.append(node.args[0])
        for v in values:
            if isinstance(v, nodes.Const) and isinstance(v.value, str):
                for part in v.value.split(","):
                    if part.strip():
                        yield part.strip().split(".")[0]

    def check(node: nodes.Node, env: dict) -> None:
        if isinstance(node, nodes.Getattr) and kind(node.node, env) == _ROW:
            if not (id(node) in callees and node.attr in _DICT_METHODS):
                found.append((node.lineno, node.attr))
        elif isinstance(node, nodes.Getitem) and kind(node.node, env) == _ROW:
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                found.append((node.lineno, node.arg.value))
        elif (
            isinstance(node, nodes.Filter)
            and node.node is not None
            and kind(node.node, env) == _ROWS
            and node.name in _ATTRIBUTE_FILTERS | {"selectattr", "rejectattr"}
        ):
            found.extend((node.lineno, name) for name in attribute_names(node))

    def visit(node: nodes.Node, env: dict) -> None:
        if isinstance(node, nodes.For):
            visit(node.iter, env)
            inner = dict(env)
            names = (
                [n.name for n in node.target.find_all(nodes.Name)]
                if not isinstance(node.target, nodes.Name)
                else [node.target.name]
            )
            for name in names:
                inner[name] = None
            over = kind(node.iter, env)
            if isinstance(node.target, nodes.Name) and over in (_ROWS, _GROUPS):
                inner[node.target.name] = _ROW if over == _ROWS else _GROUP
            elif (
                isinstance(node.target, nodes.Tuple)
                and over == _GROUPS
                and len(node.target.items) == 2
                and isinstance(node.target.items[1], nodes.Name)
            ):
                inner[node.target.items[1].name] = _ROWS  # {% for key, items in rows | groupby('x') %}
            for child in [node.test, *node.body]:
                if child is not None:
                    visit(child, inner)
            for child in node.else_:
                visit(child, env)
            return
        if isinstance(node, nodes.Assign):
            visit(node.node, env)
            if isinstance(node.target, nodes.Name):
                env[node.target.name] = kind(node.node, env)
            return
        if isinstance(node, (nodes.Macro, nodes.CallBlock)):
            return  # their own scope; not followed
        check(node, env)
        for child in node.iter_child_nodes():
            visit(child, env)

    visit(ast, {"rows": _ROWS})
    return found


# --------------------------------------------------------------------------------------------
# Charts, SQL file paths, sources, secrets


CHART_JS_OPTIONS = frozenset(
    {
        "responsive",
        "maintainAspectRatio",
        "aspectRatio",
        "onResize",
        "resizeDelay",
        "devicePixelRatio",
        "locale",
        "interaction",
        "events",
        "onHover",
        "onClick",
        "layout",
        "plugins",
        "scales",
        "indexAxis",
        "elements",
        "animation",
        "animations",
        "transitions",
        "datasets",
        "parsing",
        "normalized",
        "clip",
        "spanGaps",
        "hover",
        "cutout",
        "radius",
        "rotation",
        "circumference",
        "showLine",
        "borderColor",
        "backgroundColor",
        "color",
        "font",
    }
)
_BAR_TYPES = ("bar", "horizontal_bar", "stacked_bar")


def chart_sense(chart: Chart) -> list[tuple[str, str, str]]:
    """(severity, key, message) for chart settings that make no sense for the chart's type."""
    out = []
    ys = chart.y_columns
    twice = sorted({y for y in ys if ys.count(y) > 1})
    if twice:
        out.append(("error", "y", f"y names {', '.join(twice)} more than once"))
    if chart.x in ys:
        out.append(("error", "y", f"column '{chart.x}' is both x and y"))
    if chart.series and (chart.series == chart.x or chart.series in ys):
        out.append(
            (
                "error",
                "series",
                f"series '{chart.series}' is also the chart's {'x' if chart.series == chart.x else 'y'} column",
            )
        )
    if chart.type == "stacked_bar" and len(ys) == 1 and not chart.series:
        out.append(
            (
                "warning",
                "type",
                "a stacked_bar with one y column and no series has nothing to stack; "
                "use bar, or give several y columns or a series",
            )
        )
    options = chart.options or {}
    for key in options:
        if key not in CHART_JS_OPTIONS:
            out.append(("warning", "options", f"options.{key} is not a Chart.js 4 option"))
    if chart.type in ("pie", "doughnut") and "scales" in options:
        out.append(("warning", "options", f"a {chart.type} chart has no axes: options.scales has no effect"))
    if "indexAxis" in options and chart.type not in _BAR_TYPES:
        out.append(("warning", "options", f"options.indexAxis only applies to bar charts, not {chart.type}"))
    if chart.type == "horizontal_bar" and options.get("indexAxis") == "x":
        out.append(
            (
                "warning",
                "options",
                "options.indexAxis: x turns a horizontal_bar back into a vertical bar; use type: bar",
            )
        )
    return out


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
                end = _STRING.match(text, i)
                i = end.end() if end else len(text)
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
                line = text.count("\n", 0, lit.start()) + 1
                col = lit.start() - (text.rfind("\n", 0, lit.start()) + 1) + 1
                out.append((line, col, reason))
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


_URL_HOST = re.compile(r"^https?://[^\s/?#{}@]+(?=[/?#]|$)")


def source_problem(source: str) -> str | None:
    """Why a `sources:` entry is not an absolute http(s) URL with a literal host, or None."""
    if not re.match(r"^https?://", source):
        return "is not an absolute http(s) URL (write it with https:// or http://)"
    head = re.split(r"\{[{%#]", source, maxsplit=1)[0]
    if head != source and not re.match(r"^https?://[^\s/?#{}@]+[/?#]", head):
        # `https://data.example.org{{ p }}` with p = `.evil.example` is another host
        return "must spell out its host and end it with '/', '?' or '#' before the first template expression"
    if not _URL_HOST.match(head):
        return "is not a valid URL: it needs a host name and no spaces"
    if re.search(r"\s", head):
        return "is not a valid URL: it contains spaces"
    return None


def literal_password(url: str) -> bool:
    """Whether a connection URL carries a password written out (not ${VAR})."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0] if "@" not in rest else rest.rpartition("@")[0]
    if "@" not in rest or ":" not in netloc:
        return False
    password = netloc.split(":", 1)[1]
    return bool(password) and not re.fullmatch(r"(\$\{[^}]*\})+", password)


def secrets_of(config: Any) -> list[str]:
    """Every password in a project config (literal or from the environment), to redact from messages."""
    from urllib.parse import unquote

    from .config import expand_env

    found = []
    for conn in getattr(config, "connections", {}).values():
        values = [getattr(conn, "password", None)]
        url = getattr(conn, "url", None)
        if url and "@" in url.split("://", 1)[-1]:
            userinfo = url.split("://", 1)[-1].rpartition("@")[0]
            if ":" in userinfo:
                values.append(userinfo.split(":", 1)[1])
        for value in values:
            if not value:
                continue
            found.append(value)
            try:
                expanded = expand_env(value)
            except ValueError:
                continue
            found += [expanded, unquote(expanded)]
    return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
