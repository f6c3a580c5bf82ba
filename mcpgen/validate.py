"""`mcpgen validate`: the checks the loader calls, the live checks, and the report.

Three parts:

* **Static checks** used by `loading` (no database): unsafe template constructs,
  chart settings that make no sense for their type, SQL that names files outside
  the project, source URLs, and literal passwords in `mcpgen.yaml`.
* **Live checks** (`validate --live`): open each connection, describe every query
  without running its work, and check every column that charts, `table:` and
  templates (`r.city`, `rows[0]['city']`, `sum(attribute="city")`) name.
* **The report**: text (grouped by file), JSON (documented in docs/validate.md) or
  GitHub annotations; exit code 0 clean, 1 problems found, 2 could not run.

>>> from mcpgen.render import PROSE
>>> row_references(PROSE.parse("{% for r in rows %}{{ r.city }}{% endfor %}"))
[(1, 'city')]
>>> template_hazards(PROSE.parse("{{ ''.__class__ }}"))[0][1]
"reads the internal attribute '__class__', which the sandbox refuses"
>>> literal_password("postgresql://reader:secret@db/analytics"), literal_password("postgresql://reader:${PW}@db/x")
(True, False)
"""
from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from jinja2 import nodes

from .errors import Problem

if TYPE_CHECKING:
    from .loading import LoadedProject, LoadedSpec
    from .spec import Chart

MAX_SEQUENCE = 100_000  # as in render.py: the longest string or list `*` may build
MAX_POWER = 10_000
MAX_RANGE = 100_000  # jinja2.sandbox.MAX_RANGE
LIVE_TIMEOUT = 10.0  # seconds per connection and per query description
PARALLEL_MIN = 200  # static validation forks workers from this many spec files on


# --------------------------------------------------------------------------------------------
# Templates: constructs the sandbox refuses or that would blow its limits


_UNSAFE_ATTRS = frozenset({
    "mro", "func_globals", "func_code", "func_closure", "f_globals", "f_locals", "f_builtins", "f_code",
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code",
    "tb_frame", "tb_next", "im_func", "im_self", "im_class", "co_code",
})


def template_hazards(ast: nodes.Template) -> list[tuple[int, str]]:
    """(line, what) for each construct a spec template may not use; `what` completes "the template ..."."""
    out: list[tuple[int, str]] = []
    kinds = (nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Call, nodes.Mul, nodes.Pow,
             nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)
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
                out.append((line, "uses the attr filter, which reaches attributes by name; "
                                  "write r.column or r['column'] instead"))
            elif node.name == "format" and not isinstance(node.node, nodes.Const):
                out.append((line, "uses the format filter, but its format string is not a literal (values must never act as "
                                  "templates); write e.g. '%s km' | format(r.distance)"))
        elif isinstance(node, nodes.Call):
            if isinstance(node.node, nodes.Getattr) and node.node.attr in ("format", "format_map"):
                out.append((line, f"calls .{node.node.attr}(), which can reach into objects; use the format "
                                  "filter ('%s' | format(x)), ~ or the thousands/round filters"))
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
                    length = len(seq.value) if isinstance(seq, nodes.Const) and isinstance(seq.value, str) else (
                        len(seq.items) if not isinstance(seq, nodes.Const) else None)
                    if length is not None and length * count > MAX_SEQUENCE:
                        size = f"{length * count:,}" if count < _HUGE else "an astronomical number of"
                        out.append((line, f"builds a sequence of {size} items with *; "
                                          f"templates may not build more than {MAX_SEQUENCE:,}"))
                        break
        else:  # include, import, extends
            word = {nodes.Include: "include", nodes.Import: "import", nodes.FromImport: "from ... import",
                    nodes.Extends: "extends"}[type(node)]
            out.append((line, f"uses {{% {word} %}}; spec templates cannot load other templates"))
    return list(dict.fromkeys(out))


_HUGE = 10 ** 30  # stands for any constant too big to compute


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
                value = left ** right
                return value if isinstance(value, (int, float)) else None
            if isinstance(node, nodes.Mul) and abs(left) > 1 and abs(right) > 1 and \
                    math.log2(abs(left)) + math.log2(abs(right)) > 4096:
                return _HUGE
            return {nodes.Add: lambda: left + right, nodes.Sub: lambda: left - right, nodes.Mul: lambda: left * right,
                    nodes.FloorDiv: lambda: left // right}[type(node)]()
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
        elif isinstance(node, nodes.Filter) and node.node is not None and kind(node.node, env) == _ROWS:
            if node.name in _ATTRIBUTE_FILTERS | {"selectattr", "rejectattr"}:
                found.extend((node.lineno, name) for name in attribute_names(node))

    def visit(node: nodes.Node, env: dict) -> None:
        if isinstance(node, nodes.For):
            visit(node.iter, env)
            inner = dict(env)
            names = [n.name for n in node.target.find_all(nodes.Name)] if not isinstance(node.target, nodes.Name) \
                else [node.target.name]
            for name in names:
                inner[name] = None
            over = kind(node.iter, env)
            if isinstance(node.target, nodes.Name) and over in (_ROWS, _GROUPS):
                inner[node.target.name] = _ROW if over == _ROWS else _GROUP
            elif isinstance(node.target, nodes.Tuple) and over == _GROUPS and len(node.target.items) == 2 and \
                    isinstance(node.target.items[1], nodes.Name):
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


CHART_JS_OPTIONS = frozenset({
    "responsive", "maintainAspectRatio", "aspectRatio", "onResize", "resizeDelay", "devicePixelRatio", "locale",
    "interaction", "events", "onHover", "onClick", "layout", "plugins", "scales", "indexAxis", "elements",
    "animation", "animations", "transitions", "datasets", "parsing", "normalized", "clip", "spanGaps", "hover",
    "cutout", "radius", "rotation", "circumference", "showLine", "borderColor", "backgroundColor", "color", "font",
})
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
        out.append(("error", "series", f"series '{chart.series}' is also the chart's "
                                       f"{'x' if chart.series == chart.x else 'y'} column"))
    if chart.type == "stacked_bar" and len(ys) == 1 and not chart.series:
        out.append(("warning", "type", "a stacked_bar with one y column and no series has nothing to stack; "
                                       "use bar, or give several y columns or a series"))
    options = chart.options or {}
    for key in options:
        if key not in CHART_JS_OPTIONS:
            out.append(("warning", "options", f"options.{key} is not a Chart.js 4 option"))
    if chart.type in ("pie", "doughnut") and "scales" in options:
        out.append(("warning", "options", f"a {chart.type} chart has no axes: options.scales has no effect"))
    if "indexAxis" in options and chart.type not in _BAR_TYPES:
        out.append(("warning", "options", f"options.indexAxis only applies to bar charts, not {chart.type}"))
    if chart.type == "horizontal_bar" and options.get("indexAxis") == "x":
        out.append(("warning", "options", "options.indexAxis: x turns a horizontal_bar back into a vertical bar; "
                                          "use type: bar"))
    return out


_FILE_FUNCTIONS = re.compile(
    r"\b(read_\w+|parquet_\w+|glob|sniff_csv|delta_scan|iceberg_\w+|st_read|open)\s*\(", re.IGNORECASE)
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
            while end != -1 and sql[end + 1:end + 2] == "'":
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
    if not _URL_HOST.match(head) and not (head == source and _URL_HOST.match(source)):
        if head != source:
            return "must spell out its host: a template may fill in the path or the query, not the host"
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


# --------------------------------------------------------------------------------------------
# Running the checks


@dataclass
class Report:
    """What one `validate` run found."""

    specs_dir: str
    files: int  # spec files read
    problems: list[Problem]
    live: bool = False
    seconds: float = 0.0
    connections: dict[str, str] = field(default_factory=dict)  # name -> "ok" or "unreachable"

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def exit_code(self, strict: bool = False) -> int:
        return 1 if self.errors or (strict and self.warnings) else 0


def run_validate(specs_dir: str | Path, live: bool = False, timeout: float = LIVE_TIMEOUT,
                 jobs: int | None = None) -> Report:
    """Check a project. Raises SpecError when it cannot run at all (no such folder)."""
    import gc

    start = time.perf_counter()
    collecting = gc.isenabled()
    gc.disable()  # loading makes many small objects and no garbage worth a collection (20% faster)
    try:
        return _run_validate(specs_dir, live, timeout, jobs, start)
    finally:
        if collecting:
            gc.enable()


def _run_validate(specs_dir, live, timeout, jobs, start) -> Report:
    from .loading import load_project, spec_paths

    specs_dir = Path(specs_dir)
    paths = spec_paths(specs_dir)  # raises SpecError for a missing folder
    jobs = _jobs(len(paths)) if jobs is None else jobs
    if live or jobs <= 1:
        loaded = load_project(specs_dir)
        problems = list(loaded.problems)
        problems += _python_syntax(loaded.python_files, specs_dir)
        report = Report(str(specs_dir), len(paths), problems, live)
        if live:
            _live(loaded, report, timeout)
    else:
        try:
            problems = _static_parallel(specs_dir, paths, jobs)
        except Exception:  # a worker died (or fork is unavailable): do it here instead
            return _run_validate(specs_dir, live, timeout, 1, start)
        report = Report(str(specs_dir), len(paths), problems, live)
    report.problems = _sorted(report.problems)
    report.seconds = time.perf_counter() - start
    return report


def _jobs(files: int) -> int:
    if files < PARALLEL_MIN or not hasattr(os, "fork"):
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8, files // 100))


def _static_parallel(specs_dir: Path, paths: list[Path], jobs: int) -> list[Problem]:
    """The static checks of a big project in `jobs` forked workers; names are checked for uniqueness here."""
    import multiprocessing

    from .loading import check_unique_names

    _static_chunk(specs_dir, paths[:1])  # warm up here (lazy imports: the SQL dialect, ...), not once per worker
    chunks = [paths[i::jobs] for i in range(jobs)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = pool.starmap(_static_chunk, [(specs_dir, chunk) for chunk in chunks])
    problems: list[Problem] = []
    named: list[_Named] = []
    for i, (chunk_problems, chunk_names) in enumerate(results):
        problems += [p for p in chunk_problems if i == 0 or not p.path.endswith("mcpgen.yaml")]
        named += chunk_names
    named.sort(key=lambda n: str(n.path))
    check_unique_names(named, problems)
    python_files = sorted(p.resolve() for p in specs_dir.glob("*.py") if not p.name.startswith("_"))
    return problems + _python_syntax(python_files, specs_dir)


@dataclass
class _Named:
    """What the unique-name check needs of a spec, cheap to send between processes."""

    name: str
    path: Path
    line: int | None
    col: int | None

    def where(self, key: str) -> tuple[int | None, int | None]:
        return self.line, self.col


def _static_chunk(specs_dir: Path, chunk: list[Path]) -> tuple[list[Problem], list[_Named]]:
    from .loading import load_project

    loaded = load_project(specs_dir, paths=chunk, unique_names=False)
    return loaded.problems, [_Named(s.name, s.path, *s.where("name")) for s in loaded.specs]


def _python_syntax(files: list[Path], specs_dir: Path) -> list[Problem]:
    """Syntax errors in specs/*.py, found by compiling (never running) them."""
    out = []
    for path in files:
        shown = str(specs_dir / path.name)
        try:
            compile(path.read_bytes(), shown, "exec", dont_inherit=True)
        except SyntaxError as exc:
            out.append(Problem(shown, exc.lineno, exc.offset, f"syntax error: {exc.msg}"))
        except (OSError, ValueError) as exc:
            out.append(Problem(shown, None, None, f"cannot read the file: {exc}"))
    return out


def _sorted(problems: list[Problem]) -> list[Problem]:
    unique = list(dict.fromkeys(problems))
    return sorted(unique, key=lambda p: (p.path, p.line or 0, p.col or 0))


# --------------------------------------------------------------------------------------------
# Live checks


def _live(loaded: LoadedProject, report: Report, timeout: float) -> None:
    """Open each connection the specs use, describe every query, and check the columns they name."""
    from .engines import create_engine

    secrets = secrets_of(loaded.config)
    config_path = str(loaded.config_path) if loaded.config_path else str(loaded.specs_dir)
    failed_names = {p.path for p in loaded.errors}
    if loaded.config_path is not None and str(loaded.config_path) in failed_names:
        return  # connections cannot be trusted until mcpgen.yaml itself is right
    specs = [s for s in loaded.specs if str(s.path) not in failed_names]
    cwd = os.getcwd()
    engines: dict[str, Any] = {}
    try:
        os.chdir(loaded.root)  # DuckDB reads relative paths from the working directory
        for name in dict.fromkeys(s.spec.connection for s in specs):
            conn = loaded.config.connections[name]
            try:
                engine = _bounded(lambda: create_engine(name, conn, loaded.root), timeout,
                                  f"connection '{name}' did not open within {timeout:g} s")
                engines[name] = engine
                _bounded(lambda: _probe(engine, timeout), timeout + 1,
                         f"connection '{name}' did not answer within {timeout:g} s")
                report.connections[name] = "ok"
            except Exception as exc:  # one clear error per connection, whatever went wrong
                report.connections[name] = "unreachable"
                broken = engines.pop(name, None)
                if broken is not None:
                    _close(broken)
                line, col = _config_where(Path(cwd, loaded.config_path) if loaded.config_path else None, name)
                message = _one_line(exc)
                if not message.startswith(f"connection '{name}'"):
                    message = f"connection '{name}' could not be opened: {message}"
                report.problems.append(Problem(config_path, line, col, redact(message, secrets)))
        for spec in specs:
            engine = engines.get(spec.spec.connection)
            if engine is not None:
                report.problems += [Problem(p.path, p.line, p.col, redact(p.message, secrets), p.severity)
                                    for p in check_spec_live(spec, engine, timeout)]
    finally:
        os.chdir(cwd)
        for engine in engines.values():
            _close(engine)


def _probe(engine: Any, timeout: float) -> None:
    """Reach the database once (engines that connect lazily would otherwise fail once per spec)."""
    if hasattr(engine, "describe"):
        engine.describe(engine.prepare("SELECT 1 AS ok"), timeout=timeout)


def _close(engine: Any) -> None:
    try:
        engine.close()
    except Exception:
        pass


def _config_where(config_path: Path | None, name: str) -> tuple[int | None, int | None]:
    from .yamlload import load_yaml

    if config_path is None:
        return None, None
    try:
        data = load_yaml(config_path.read_text(encoding="utf-8"), str(config_path))
        return data["connections"].where(name)
    except Exception:
        return None, None


def _bounded(fn, timeout: float, message: str):
    """fn() in a daemon thread, given up on after `timeout` seconds."""
    box: dict[str, Any] = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="mcpgen-validate")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(message)
    if "error" in box:
        raise box["error"]
    return box["value"]


def describe(engine: Any, loaded: LoadedSpec, timeout: float = LIVE_TIMEOUT) -> list[tuple[str, str]]:
    """Result columns and types of a spec's query, without doing the query's work.

    DuckDB: `DESCRIBE <query>` with every parameter bound to NULL binds and plans the
    query but reads no rows. SQLAlchemy engines: their own `describe` (LIMIT 0 with NULLs)."""
    from .errors import QueryError

    if hasattr(engine, "describe"):
        from .params import param_types

        prepared = engine.prepare(loaded.sql, param_types(loaded.spec.parameters))
        return [(str(n), str(t)) for n, t in engine.describe(prepared, timeout=timeout)]
    import duckdb

    prepared = engine.prepare(loaded.sql)  # UnsafeSQL if it is not one read-only query
    con = getattr(engine, "_con", None)
    if con is None:
        raise QueryError(f"connection '{engine.name}' cannot describe queries")
    cursor = con.cursor()
    timer = threading.Timer(timeout, cursor.interrupt)
    timer.start()
    try:
        rows = cursor.execute("DESCRIBE " + prepared.sql, {n: None for n in prepared.names}).fetchall()
    except duckdb.InterruptException:
        raise QueryError(f"describing the query took longer than {timeout:g} s") from None
    except duckdb.Error as exc:
        error = QueryError(f"the query does not run on connection '{engine.name}': {_duckdb_message(exc)}")
        error.position = _duckdb_position(str(exc), len("DESCRIBE "))
        raise error from None
    finally:
        timer.cancel()
        cursor.close()
    return [(r[0], r[1]) for r in rows]


def _duckdb_message(exc: BaseException) -> str:
    """The first line of a DuckDB error, with its "Did you mean" / "Candidate bindings" hint."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    hint = next((line for line in lines[1:] if line.startswith(("Did you mean", "Candidate bindings"))), None)
    return lines[0] + (f" ({hint})" if hint else "") if lines else type(exc).__name__


def _duckdb_position(text: str, prefix: int) -> tuple[int, int] | None:
    """(line, col) in the spec's SQL from DuckDB's "LINE n: ..." and caret lines."""
    match = re.search(r"^LINE (\d+): (.*)\n( *)\^", text, re.MULTILINE)
    if not match:
        return None
    line = int(match[1])
    col = len(match[3]) - len(f"LINE {match[1]}: ") + 1 - (prefix if line == 1 else 0)
    return line, max(col, 1)


def check_spec_live(loaded: LoadedSpec, engine: Any, timeout: float = LIVE_TIMEOUT) -> list[Problem]:
    """Describe one spec's query on its engine and check every column the spec names."""
    from .errors import MCPGenError

    path, spec, data = str(loaded.path), loaded.spec, loaded.data
    sql_key = "sql" if spec.sql is not None else "sql_file"
    try:
        columns = [name for name, _ in describe(engine, loaded, timeout)]
    except MCPGenError as exc:
        line, col = _value_where(data, sql_key)
        position = getattr(exc, "position", None)
        if position and line is not None and sql_key == "sql" and data.where(sql_key)[0] != line:
            line, col = line + position[0] - 1, position[1] if position[0] > 1 else (col or 1) + position[1] - 1
        return [Problem(path, line, col, _one_line(exc))]
    except Exception as exc:
        return [Problem(path, *_value_where(data, sql_key), f"describing the query failed: {_one_line(exc)}")]
    out: list[Problem] = []
    have = f"(the query returns {', '.join(columns)})"
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        out.append(Problem(path, *_value_where(data, sql_key),
                           f"the query returns column {', '.join(twice)} more than once; give each its own name with AS"))
    known = set(columns)
    # charts
    chart_data = data.get("chart")
    for i, chart in enumerate(spec.charts):
        node = chart_data[i] if isinstance(chart_data, list) else chart_data
        where = "chart" if not isinstance(chart_data, list) else f"chart[{i}]"
        for key in ("x", "y", "series"):
            value = getattr(chart, key)
            names = value if isinstance(value, list) else [value] if value else []
            for j, column in enumerate(names):
                if column not in known:
                    line, col = _item_where(node, key, j if isinstance(value, list) else None)
                    out.append(Problem(path, line, col, f"{where}.{key} names column '{column}', which the query "
                                                        f"does not return {have}"))
    # table
    if not isinstance(spec.table, bool):
        node = data.get("table")
        for j, column in enumerate(spec.table.columns or []):
            if column not in known:
                out.append(Problem(path, *_item_where(node, "columns", j),
                                   f"table.columns names column '{column}', which the query does not return {have}"))
        headers = node.get("headers") if hasattr(node, "get") else None
        for column in spec.table.headers:
            if column not in known:
                line, col = headers.where(column) if hasattr(headers, "where") else (None, None)
                out.append(Problem(path, line, col, f"table.headers labels column '{column}', which the query "
                                                    f"does not return {have}"))
    # templates
    for key, template in loaded.templates.items():
        if key.startswith("sources"):
            continue
        reported = set()
        for line, column in row_references(template.ast):
            if column not in known and (line, column) not in reported:
                reported.add((line, column))
                start, col = _value_where(data, key)
                out.append(Problem(path, None if start is None else start + line - 1, col if line == 1 else 1,
                                   f"{key}: the template reads column '{column}' of a row, which the query "
                                   f"does not return {have}"))
    return out


def _value_where(data: Any, key: str) -> tuple[int | None, int | None]:
    return data.where(("value", key)) if hasattr(data, "where") and key in data else (None, None)


def _item_where(node: Any, key: str, index: int | None) -> tuple[int | None, int | None]:
    if not hasattr(node, "where"):
        return None, None
    value = node.get(key)
    if index is not None and hasattr(value, "lines") and index < len(value.lines):
        return value.lines[index]
    return node.where(("value", key)) if key in node else node.where()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------------------
# Reports


JSON_VERSION = 1


def format_json(report: Report, strict: bool = False) -> str:
    """The stable machine form; see docs/validate.md."""
    return json.dumps({
        "version": JSON_VERSION,
        "specs_dir": report.specs_dir,
        "live": report.live,
        "strict": strict,
        "files": report.files,
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "ok": report.exit_code(strict) == 0,
        "exit_code": report.exit_code(strict),
        "connections": report.connections,
        "problems": [{"file": p.path, "line": p.line, "column": p.col, "severity": p.severity,
                      "message": p.message} for p in report.problems],
    }, indent=2, ensure_ascii=False)


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def format_github(report: Report, strict: bool = False) -> str:
    """GitHub Actions workflow commands: one ::error or ::warning line per problem."""
    lines = []
    for p in report.problems:
        props = [f"file={_gh_escape(p.path, True)}"]
        if p.line is not None:
            props.append(f"line={p.line}")
            if p.col is not None:
                props.append(f"col={p.col}")
        kind = "error" if p.severity == "error" or strict else "warning"
        lines.append(f"::{kind} {','.join(props)}::{_gh_escape(p.message)}")
    lines.append(_summary(report, strict))
    return "\n".join(lines)


def format_text(report: Report, strict: bool = False, color: bool = False) -> str:
    """Problems grouped by file, then a summary line."""
    import click

    def style(text: str, **kw) -> str:
        return click.style(text, **kw) if color else text

    lines: list[str] = []
    by_file: dict[str, list[Problem]] = {}
    for p in report.problems:
        by_file.setdefault(p.path, []).append(p)
    for path, problems in by_file.items():
        lines.append(style(path, bold=True, underline=True))
        for p in problems:
            where = f"{p.line}:{p.col or 1}" if p.line is not None else "-"
            kind = style(f"{p.severity:<7}", fg="red" if p.severity == "error" else "yellow", bold=True)
            lines.append(f"  {style(f'{where:>7}', dim=True)}  {kind}  {p.message}")
        lines.append("")
    summary = _summary(report, strict)
    ok = report.exit_code(strict) == 0
    lines.append(style(("✓ " if ok else "✗ ") + summary, fg="green" if ok else "red", bold=True))
    return "\n".join(lines)


def _summary(report: Report, strict: bool) -> str:
    e, w = len(report.errors), len(report.warnings)
    mode = "static and live" if report.live else "static"
    return (f"{report.files} spec file{'s' if report.files != 1 else ''} checked ({mode}): "
            f"{e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"
            f"{' (warnings fail: --strict)' if strict and w else ''} in {report.seconds:.2f} s")


FORMATS = {"text": format_text, "json": format_json, "github": format_github}
