"""`mcpgen draft`: a spec to start from, drafted from a data file (CSV, TSV, Parquet, JSON), a table
of a DuckDB or SQLite file, of a database URL or of a connection of mcpgen.yaml, or a SQL query.

The columns are read on the real connection (`profile`): text with few distinct values becomes an
enum parameter, the first date column a range with the data's first and last day as bounds, the
measure a lower bound within the data's range, and `top_n` a LIMIT. The query orders by a total
order (the measure, or the time, then a column whose values are all different, else every other
column), so each call, and each page if `page_size` is added, holds the same rows. A content
template, a chart guess (a time column: a line; a label and a measure: a bar) and a `tests:` block
whose expected rows were read by running the drafted query come with it.

Sources cannot be guessed from data: they are the `--source` URLs given, else one placeholder line
that is not a URL, so `mcpgen validate` names its file:line and the tool is not served until the
analyst writes where the data comes from (the platform's rule: a tool without real sources is not
registered). Everything else validates and answers as written.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..answer.results import to_cell
from ..checks import literal_password
from ..engines.factory import create_engine
from ..load.discovery import project_folder
from ..load.project import load_config
from ..redaction import redact
from ..spec.config import Connection, DuckDBConnection, ProjectConfig, URLConnection
from ..text import one_of
from .profile import Column, DraftError, Profile, ident, profile, run

__all__ = ["Draft", "DraftError", "draft", "write"]

DATA_READERS = {".csv": "read_csv", ".tsv": "read_csv", ".parquet": "read_parquet", ".json": "read_json"}
DATA_READERS |= {".jsonl": "read_json", ".ndjson": "read_json"}
DUCKDB_FILES = (".duckdb", ".ddb")
SQLITE_FILES = (".sqlite", ".sqlite3", ".db")
TOP_N = 10  # the default of top_n; its maximum is 100 or the project's max_rows
PLACEHOLDER = "TODO: the page this data comes from, as an https:// URL"
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*){0,2}")
_TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_TEMPLATE_NAMES = {"rows", "columns", "row_count", "truncated", "max_rows", "cursor", "top_n"}


@dataclass
class Origin:
    """Where the rows come from: a connection (of the project, or one the draft adds) and a FROM item."""

    name: str  # the connection's name in mcpgen.yaml
    connection: Connection
    relation: str  # the FROM item, in the project's dialect
    label: str  # what the prose calls the rows
    stem: str  # the tool's name unless --name says

    @property
    def title(self) -> str:
        return self.stem.replace("_", " ").capitalize()

    config_text: str | None = None  # the mcpgen.yaml to write, for a connection the project lacks


@dataclass
class Draft:
    path: Path  # where the spec goes: SPECS/NAME.yaml
    text: str
    config_path: Path | None  # the mcpgen.yaml to write beside the specs folder, when one is needed
    config_text: str | None
    placeholder_line: int | None  # the line of the sources placeholder, when no --source was given


def draft(
    specs: Path,
    source: str | None = None,
    table: str | None = None,
    sql: str | None = None,
    connection: str | None = None,
    name: str | None = None,
    sources: Sequence[str] = (),
    password_env: str | None = None,
) -> Draft:
    """Draft a spec for SPECS/NAME.yaml from `source` (a file or a URL), `table` or `sql`."""
    for url in sources:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise DraftError(f"--source: {url!r} is not an absolute http(s) URL")
    config_path, root = project_folder(specs)
    config = _config(config_path)
    origin = _origin(root, config, config_path, source, table, sql, connection, password_env)
    tool = name or origin.stem
    if not _TOOL_NAME.fullmatch(tool):
        raise DraftError(f"--name: {tool!r} is not a tool name (a letter, then letters, digits, _ . -)")
    cwd = os.getcwd()
    os.chdir(root)  # DuckDB (its `init` too) and SQLite read relative paths from the working directory
    try:
        try:
            engine = create_engine(origin.name, origin.connection, root)
        except Exception as exc:  # a bad URL, an unknown driver, a file DuckDB cannot open
            raise DraftError(f"{_where(source, table)}: {_sentence(exc, origin)}") from None
        try:
            data = _profiled(engine, origin, config.dialect, source, table)
            text, placeholder = _spec(origin, data, config, engine, list(sources))
        finally:
            engine.close()
    finally:
        os.chdir(cwd)
    new_config = root / "mcpgen.yaml" if origin.config_text else None
    return Draft(specs / f"{tool}.yaml", text, new_config, origin.config_text, placeholder)


def write(drafted: Draft, force: bool = False) -> list[Path]:
    """Write the spec (and the mcpgen.yaml it needs); a file in the way is kept unless `force`."""
    files = {drafted.path: drafted.text}
    if drafted.config_path and drafted.config_text:
        files[drafted.config_path] = drafted.config_text
    in_the_way = [p for p in files if p.exists()]
    if in_the_way and not force:
        raise DraftError(f"{in_the_way[0]} exists already; draft again with --force to replace it, or --name another")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def _config(path: Path | None) -> ProjectConfig:
    if path is None:
        return ProjectConfig()
    problems: list = []
    config = load_config(path, problems)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise DraftError(str(errors[0]))
    return config


def _origin(
    root: Path,
    config: ProjectConfig,
    config_path: Path | None,
    source: str | None,
    table: str | None,
    sql: str | None,
    connection: str | None,
    password_env: str | None,
) -> Origin:
    if table is not None and sql is not None:
        raise DraftError("give --table or --sql, not both")
    if table is not None and not _TABLE.fullmatch(table):
        raise DraftError(f"--table: {table!r} is not a table name (letters, digits and _, as schema.table if need be)")
    if password_env is not None and password_env not in os.environ:
        raise DraftError(f"--password-env: the environment variable {password_env} is not set")
    name = connection or "default"
    relation, label, stem = _rows(table, sql, config.dialect)
    if source is None:
        if relation is None:
            raise DraftError(
                "say what to draft from: a data file, a DuckDB or SQLite file or a database URL, or --table or --sql"
            )
        if name not in config.connections:
            raise DraftError(f"--connection: mcpgen.yaml has no connection named {name!r}")
        return Origin(name, config.connections[name], relation, label, stem)
    if "://" in source:
        if literal_password(source):
            raise DraftError(
                "the URL holds a password: leave it out, and name the environment variable that holds it with --password-env"
            )
        added = URLConnection(url=source, password=f"${{{password_env}}}" if password_env else None)
        return _added(name, added, config_path, relation, label, stem)
    return _file_origin(Path(source), root, config, config_path, relation, label, stem, name)


def _file_origin(path: Path, root, config, config_path, relation, label, stem, name) -> Origin:
    """The origin of a data file (read by the project's DuckDB) or of a DuckDB or SQLite database file."""
    source = str(path)
    _readable(path)
    suffix = path.suffix.lower()
    within = _within(path, root, source)
    if suffix in DATA_READERS:
        if relation is not None:
            raise DraftError(f"{source} is a data file: it is drafted as a whole, without --table or --sql")
        connection_of = config.connections.get(name, DuckDBConnection()) if config_path else DuckDBConnection()
        if not isinstance(connection_of, DuckDBConnection):
            raise DraftError(f"--connection: {name!r} is not a DuckDB connection, which is what reads data files")
        quoted = within.replace("'", "''")
        return Origin(name, connection_of, f"{DATA_READERS[suffix]}('{quoted}')", path.name, _stem(path.stem))
    if suffix not in DUCKDB_FILES + SQLITE_FILES:
        raise DraftError(f"{source}: not a file draft reads (CSV, TSV, Parquet, JSON, or a DuckDB or SQLite database)")
    if relation is None:
        raise DraftError(f"{source} is a database: say which table with --table, or give a query with --sql")
    sqlite = suffix in SQLITE_FILES and path.read_bytes()[:16] == b"SQLite format 3\x00"
    database: DuckDBConnection | URLConnection = (
        URLConnection(url=f"sqlite:///{within}") if sqlite else DuckDBConnection(duckdb=within)
    )
    return _added(name, database, config_path, relation, label, stem)


def _rows(table: str | None, sql: str | None, dialect: str) -> tuple[str | None, str, str]:
    """The FROM item of `--table` or `--sql`, how prose names it, and the tool name it suggests."""
    if table is not None:
        return ".".join(ident(part, dialect) for part in table.split(".")), table, _stem(table.split(".")[-1])
    if sql is not None:
        query = sql.strip().rstrip(";").strip()
        if not query:
            raise DraftError("--sql: the query is empty")
        return f"(\n{query}\n) AS q", "the query", "query"
    return None, "", ""


def _added(name, connection, config_path, relation, label, stem) -> Origin:
    """An origin on a connection the project does not have yet, written into a new mcpgen.yaml."""
    lines = [f"  {name}:"]
    if isinstance(connection, URLConnection):
        lines.append(f"    url: {json.dumps(connection.url)}")
        if connection.password:
            lines.append(f"    password: {json.dumps(connection.password)}")
    else:
        lines.append(f"    duckdb: {json.dumps(connection.duckdb)}")
    entry = "\n".join(lines)
    if config_path is not None:
        oneline = " ".join(line.strip() for line in lines)
        raise DraftError(
            f"{config_path} exists already: add the connection to its connections: ({oneline}), then draft "
            f"with --connection {name} and the same --table or --sql"
        )
    header = "# mcpgen project file, written by `mcpgen draft`: where the data comes from, and defaults.\n"
    text = f"{header}connections:\n{entry}\ndefaults:\n  max_rows: 1000\n  timeout: 30s\n"
    return Origin(name, connection, relation, label, stem, text)


def _readable(path: Path) -> Path:
    if not path.exists():
        raise DraftError(f"{path}: no such file")
    if not path.is_file():
        raise DraftError(f"{path}: not a file")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise DraftError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return path


def _within(path: Path, root: Path, source: str) -> str:
    """The file's path from the project folder, which is all the server reads."""
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        raise DraftError(
            f"{source} is outside the project folder {root}, and the server reads only the files under it: "
            "copy it there, or draft into specs of a project that holds it"
        ) from None


def _stem(text: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_").lower()
    return stem if stem[:1].isalpha() else f"t_{stem}"


def _where(source: str | None, table: str | None) -> str:
    if source and "://" in source:
        return redact(source)
    return source or (f"--table {table}" if table else "--sql")


def _sentence(exc: BaseException, origin: Origin) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    password = getattr(origin.connection, "password", None)  # ${VAR}, as the draft writes it
    return redact(text, [os.environ.get(password[2:-1]) if isinstance(password, str) else None])


def _profiled(engine, origin: Origin, dialect: str, source: str | None, table: str | None) -> Profile:
    try:
        return profile(engine, origin.relation, dialect)
    except DraftError as exc:
        raise DraftError(f"{_where(source, table)}: {_sentence(exc, origin)}") from None


# --- the spec ------------------------------------------------------------------------------------


@dataclass
class _Roles:
    enums: list[Column]
    category: Column | None
    time: Column | None
    measure: Column | None
    label: Column | None
    unique: Column | None


def _roles(data: Profile) -> _Roles:
    n = data.rows

    def id_like(c: Column) -> bool:
        return c.kind == "integer" and c.distinct == n and c.name.lower().endswith("id")

    numeric = [c for c in data.columns if c.kind in ("integer", "number") and not id_like(c)]
    measure = next((c for c in numeric if c.distinct > 31 or c.distinct == n), None)
    times = [c for c in data.columns if c.kind in ("date", "datetime") and c.distinct > 1]
    enums = [c for c in data.columns if c.values][:3]
    texts = [c for c in data.columns if c.kind == "string" and c not in enums and c.distinct > 1]
    label = max(texts, key=lambda c: c.distinct, default=None)
    # text that repeats (a code, a category) but has too many values for an enum: an exact-match filter
    category = None if enums else next((c for c in texts if c is not label and c.distinct <= min(1000, n // 2)), None)
    orderable = ("integer", "number", "string", "date", "datetime", "boolean")
    unique = next((c for c in data.columns if c.distinct == n and not c.nulls and c.kind in orderable), None)
    return _Roles(enums, category, times[0] if times else None, measure, label, unique)


def _param_name(column: str, taken: set[str], suffix: str = "") -> str:
    base = re.sub(r"[^a-z0-9_]+", "_", column.lower()).strip("_") or "value"
    base = base if base[0].isalpha() else f"c_{base}"
    name = f"{base}{suffix}"
    while name in taken or name in _TEMPLATE_NAMES:
        name += "_"
    taken.add(name)
    return name


def _spec(origin: Origin, data: Profile, config: ProjectConfig, engine, sources: list[str]) -> tuple[str, int | None]:
    dialect = config.dialect
    roles = _roles(data)
    q = {c.name: ident(c.name, dialect) for c in data.columns}
    taken: set[str] = set()
    params: list[str] = []  # YAML lines of `parameters:`
    filters: list[str] = []
    said: list[str] = []  # the filters, in the prose's words
    phrases: list[str] = []  # the filters, in the description's words
    types: dict[str, str] = {}

    def param(name: str, kind: str, description: str, **extra: Any) -> None:
        types[name] = kind
        params.append(f"  {name}:\n    type: {kind}\n    description: {json.dumps(description)}")
        params.extend(f"    {key}: {json.dumps(value, ensure_ascii=False)}" for key, value in extra.items())

    for column in [*roles.enums, *([roles.category] if roles.category else [])]:
        name = _param_name(column.name, taken)
        if column.values:  # an enum: its values are said in the description too
            what, extra = f"is this ({one_of(column.values)})", {"enum": column.values}
        else:
            what, extra = "is this", {"examples": [column.low]}
        param(name, "string", f"Only rows whose {column.name} {what}; leave it out for all", **extra, required=False)
        filters.append(f"(:{name} IS NULL OR {q[column.name]} = :{name})")
        said.append(f"{{% if {name} is not none %}}, {column.name} {{{{ {name} }}}}{{% endif %}}")
        phrases.append(f"a given {column.name}")
    if roles.time is not None:
        column = roles.time
        start, end = _param_name(column.name, taken, "_from"), _param_name(column.name, taken, "_to")
        bounds = {"minimum": column.low, "maximum": column.high, "required": False}
        param(
            start, column.kind, f"Only rows with {column.name} on or after this; leave it out for the first", **bounds
        )
        param(end, column.kind, f"Only rows with {column.name} on or before this; leave it out for the last", **bounds)
        filters.append(f"(:{start} IS NULL OR {q[column.name]} >= :{start})")
        filters.append(f"(:{end} IS NULL OR {q[column.name]} <= :{end})")
        said.append(f"{{% if {start} is not none %}}, {column.name} from {{{{ {start} }}}}{{% endif %}}")
        said.append(f"{{% if {end} is not none %}}, {column.name} up to {{{{ {end} }}}}{{% endif %}}")
        phrases.append(f"{column.name} within given dates")
    if roles.measure is not None:
        column = roles.measure
        least = _param_name(f"min_{column.name}", taken)
        bounds = {"minimum": column.low, "maximum": column.high, "required": False}
        param(least, column.kind, f"Only rows with {column.name} at least this; leave it out for all", **bounds)
        filters.append(f"(:{least} IS NULL OR {q[column.name]} >= :{least})")
        said.append(
            f"{{% if {least} is not none %}}, {column.name} at least {{{{ {least} | thousands }}}}{{% endif %}}"
        )
        phrases.append(f"{column.name} of at least a given value")
    limit = min(100, config.defaults.max_rows)
    param("top_n", "integer", "How many rows to return", default=min(TOP_N, limit), minimum=1, maximum=limit)

    keys, order, chart = _order(roles, data, q)
    select = ",\n       ".join(q[c.name] for c in data.columns)
    where = ("\nWHERE " + "\n  AND ".join(filters)) if filters else ""
    sql = f"SELECT {select}\nFROM {origin.relation}{where}\nORDER BY {', '.join(keys)}\nLIMIT :top_n"

    what = f"Rows of {origin.label} ({data.rows:,} in the data when it was drafted), {order}"
    description = what + (f", optionally only those with {_join(phrases)}." if phrases else ".")
    lines = [
        f"# Drafted by `mcpgen draft` from {origin.label}: the bounds and enum values are what the data held then.",
        "# Say in the description what the data is and when the model should use the tool; edit the prose.",
        f"title: {json.dumps(origin.title)}",
        "description: >",
        *(f"  {line}" for line in _wrap(description)),
    ]
    if origin.name != "default":
        lines.append(f"connection: {origin.name}")
    lines += ["parameters:", *params, "sql: |", *(f"  {line}" for line in sql.splitlines())]
    placeholder = None
    if sources:
        lines += ["sources:", *(f"  - {json.dumps(url)}" for url in sources)]
    else:
        lines += [
            "# Where the data comes from: a tool without real sources is not served. Replace the line below",
            "# with the page (or pages) the data is published on; `mcpgen validate` points at it until then.",
            "sources:",
        ]
        lines.append(f"  - {json.dumps(PLACEHOLDER)}")
    count = "{{ row_count }} row{% if row_count != 1 %}s{% endif %}"
    lines += ["content: |", f"  {count} of {origin.label}{''.join(said)}:"]
    lines.append(f"  {{% for r in rows %}}- {_row_line(roles, data)}")
    lines.append("  {% endfor %}")
    lines.append(f"empty: {json.dumps(f'No rows of {origin.label} match these arguments.')}")
    lines += chart
    lines += _tests(sql, dialect, engine, types, roles)
    text = "\n".join(lines) + "\n"
    if not sources:
        placeholder = text.splitlines().index(f"  - {json.dumps(PLACEHOLDER)}") + 1
    return text, placeholder


def _order(roles: _Roles, data: Profile, q: dict[str, str]) -> tuple[list[str], str, list[str]]:
    """The ORDER BY keys (a total order), the order in words, and the chart guess."""
    chart: list[str] = []
    if roles.time is not None:
        first = [roles.time]
        keys, order = [q[roles.time.name]], f"earliest {roles.time.name} first"
        if roles.measure is not None:
            chart = [
                "chart:",
                "  type: line",
                f"  x: {json.dumps(roles.time.name)}",
                f"  y: {json.dumps(roles.measure.name)}",
            ]
    elif roles.measure is not None:
        first = [roles.measure]
        keys, order = [f"{q[roles.measure.name]} DESC"], f"largest {roles.measure.name} first"
        if roles.label is not None:
            chart = [
                "chart:",
                "  type: bar",
                f"  x: {json.dumps(roles.label.name)}",
                f"  y: {json.dumps(roles.measure.name)}",
            ]
    else:
        first = [roles.label or data.columns[0]]
        keys, order = [q[first[0].name]], f"by {first[0].name}"
    if roles.unique is not None and roles.unique not in first:
        keys.append(q[roles.unique.name])
    elif roles.unique is None:  # no column tells rows apart: every other one, so only equal rows tie
        keys += [q[c.name] for c in data.columns if c not in first and c.kind != "other"]
    return keys, order, chart


def _row_line(roles: _Roles, data: Profile) -> str:
    """One row of the prose: its label, time, enum values and measure (else its first columns)."""
    shown: list[Column] = []
    for column in (roles.label, roles.time, *roles.enums, roles.category, roles.measure):
        if column is not None and column not in shown:
            shown.append(column)
    shown = shown or data.columns[:3]
    parts = []
    for i, column in enumerate(shown):
        ref = (
            f"r.{column.name}"
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", column.name)
            else f"r[{json.dumps(column.name)}]"
        )
        value = f"{{{{ {ref} | thousands }}}}" if column.kind in ("integer", "number") else f"{{{{ {ref} }}}}"
        text = value if i == 0 else f", {column.name} {value}"
        parts.append(f"{{% if {ref} is not none %}}{text}{{% endif %}}" if column.nulls else text)
    return "".join(parts)


def _tests(sql: str, dialect: str, engine, types: dict[str, str], roles: _Roles) -> list[str]:
    """A `tests:` block whose expected rows are what the drafted query answers now."""
    nulls = {name: None for name in types if name != "top_n"}
    first = run(engine, sql, dialect, params={**nulls, "top_n": 3}, types=types)
    lines = ["tests:", "  - name: the first rows", "    args: {top_n: 3}", "    expect:", "      rows:"]
    lines += [f"        - {_flow(first.columns, row)}" for row in first.rows]
    if roles.enums:
        column = roles.enums[0]
        name = next(iter(types))  # the first parameter is the first enum's
        value = column.values[0]
        one = run(engine, sql, dialect, params={**nulls, name: value, "top_n": 3}, types=types)
        lines += [
            f"  - name: only {column.name} {value}",
            f"    args: {{{name}: {json.dumps(value, ensure_ascii=False)}, top_n: 3}}",
            "    expect:",
            f"      row_count: {len(one.rows)}",
            f"      first_row: {_flow(one.columns, one.rows[0])}",
        ]
    lines += ["  - name: top_n 0 is refused", "    args: {top_n: 0}", "    expect: {error_contains: top_n}"]
    return lines


def _flow(columns: list[str], row: tuple) -> str:
    """A row as a YAML flow mapping (JSON scalars are YAML 1.2)."""
    cells = (
        f"{json.dumps(c, ensure_ascii=False)}: {json.dumps(to_cell(v), ensure_ascii=False)}"
        for c, v in zip(columns, row)
    )
    return "{" + ", ".join(cells) + "}"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _wrap(text: str, width: int = 96) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line]
