"""Reading a project: mcpgen.yaml and every spec in a folder, with every problem found at once.

Loading is static: nothing connects to a database. Each problem is a `Problem`
with file:line:col; a folder reports all of its problems, not the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from jinja2 import TemplateSyntaxError, nodes
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .checks import (
    caller_paths,
    chart_sense,
    filter_problems,
    init_problem,
    literal_password,
    outside_paths,
    source_problem,
    template_hazards,
)
from .engines.file_reach import FileReachError, check_root
from .errors import ArgumentError, Findings, Problem, SpecError, UnsafeSQL
from .limits import MAX_FILE_BYTES, MAX_OUTPUT
from .spec.config import CONFIG_NAME, DuckDBConnection, ProjectConfig, URLConnection
from .spec.models import CURSOR, NAME_RE, TEMPLATE_VARIABLES, EmptyAnswer, Spec, is_union_tag
from .spec.params import Arguments
from .spec.yamlload import Located, load_yaml
from .sql.pages import limits_rows, orders_rows, row_bound
from .sql.statements import DIALECTS, check_read_only, find_placeholders
from .sql.transpile import transpile
from .templates.render import Template
from .text import closest, did_you_mean, line_col


@dataclass
class LoadedSpec:
    """A spec that passed the static checks, with what compiling it needs."""

    path: Path
    spec: Spec
    name: str
    sql: str
    data: Located  # the raw mapping, for line numbers
    templates: dict[str, Template] = field(default_factory=dict)
    dialect: str | None = None  # the dialect of `sql` (None: a database sqlglot does not know)

    def where(self, key: str) -> tuple[int | None, int | None]:
        return self.data.where(key)


@dataclass
class LoadedProject(Findings):
    specs_dir: Path
    root: Path  # paths in SQL are relative to this folder
    config: ProjectConfig
    config_path: Path | None
    specs: list[LoadedSpec]
    python_files: list[Path]
    problems: list[Problem]

    def raise_errors(self) -> None:
        if self.errors:
            raise SpecError(self.errors)


def find_config(specs_dir: Path) -> Path | None:
    """mcpgen.yaml in the specs folder, else in its parent."""
    for folder in (specs_dir, specs_dir.parent):
        if (folder / CONFIG_NAME).is_file():
            return folder / CONFIG_NAME
    return None


def spec_paths(specs_dir: str | Path) -> list[Path]:
    """The spec files of a folder, in name order; SpecError if there is no such folder."""
    specs_dir = Path(specs_dir)
    if not specs_dir.is_dir():
        raise SpecError([Problem(str(specs_dir), None, None, "no such folder")])
    return [p for p in _visible(specs_dir, (".yaml", ".yml")) if p.name != CONFIG_NAME]


def python_paths(specs_dir: Path) -> list[Path]:
    """The Python files `serve` imports: visible `*.py` files, not `_private.py` nor `.scratch.py`."""
    return [p.resolve() for p in _visible(specs_dir, (".py",)) if not p.name.startswith("_")]


def _visible(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Files of `folder` (not its subfolders) ending in one of `suffixes`, hidden ones left out, in name order."""
    return sorted(p for p in folder.iterdir() if p.suffix in suffixes and not p.name.startswith("."))


def load_project(specs_dir: str | Path, paths: list[Path] | None = None, unique_names: bool = True) -> LoadedProject:
    """Read and check every spec under `specs_dir` (no database is touched).

    `paths` loads only those spec files, and `unique_names=False` leaves the check
    across files to the caller (`validate` shares a big project between processes)."""
    specs_dir = Path(specs_dir)
    problems: list[Problem] = []
    paths = spec_paths(specs_dir) if paths is None else paths
    config_path = find_config(specs_dir)
    root = (config_path.parent if config_path else specs_dir.parent).resolve()
    config = _load_config(config_path, problems) if config_path else ProjectConfig()
    _check_root(root, config, config_path or specs_dir, problems)
    specs = []
    for path in paths:
        loaded = load_spec(path, config, problems, root)
        if loaded is not None:
            specs.append(loaded)
    if unique_names:
        check_unique_names(specs, problems)
    python_files = python_paths(specs_dir)
    if not paths and not python_files:
        problems.append(Problem(str(specs_dir), None, None, f"no spec files (*.yaml, *.yml) in {specs_dir}"))
    return LoadedProject(specs_dir, root, config, config_path, specs, python_files, problems)


def _load_config(path: Path, problems: list[Problem]) -> ProjectConfig:
    try:
        data = load_yaml(path.read_text(encoding="utf-8"), str(path), problems)
        config = ProjectConfig.model_validate(data if data is not None else {})
        _check_secrets(config, data, path, problems)
        _check_init(config, data, path, problems)
        return config
    except SpecError as exc:
        problems.extend(exc.problems)
    except ValidationError as exc:
        problems.extend(_validation_problems(exc, data, path, ProjectConfig))
    except UnicodeDecodeError as exc:
        problems.append(_not_utf8(path, exc))
    return ProjectConfig()


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> Problem:
    line, col = line_col(exc.object, exc.start)
    return Problem(str(path), line, col, f"the file is not UTF-8 text (byte 0x{exc.object[exc.start]:02x})")


def _check_secrets(config: ProjectConfig, data: Any, path: Path, problems: list[Problem]) -> None:
    """A password written into mcpgen.yaml is a warning; the message never repeats it."""
    if "connections" not in data:  # the default connection: nothing written, no password
        return
    for name, conn in config.connections.items():
        node: Located = data["connections"][name]
        if isinstance(conn, URLConnection) and literal_password(conn.url):
            problems.append(
                Problem(
                    str(path),
                    *node.where("url"),
                    f"connection '{name}': the URL contains a literal password; write password: ${{ENV_VAR}} instead",
                    "warning",
                )
            )
        if isinstance(conn, URLConnection) and conn.password and "${" not in conn.password:
            problems.append(
                Problem(
                    str(path),
                    *node.where("password"),
                    f"connection '{name}': the password is written out; write password: ${{ENV_VAR}} instead",
                    "warning",
                )
            )


def _check_root(root: Path, config: ProjectConfig, where: Path, problems: list[Problem]) -> None:
    """A DuckDB connection reads the project folder: it may not be `/` or the home folder."""
    if any(isinstance(c, DuckDBConnection) for c in config.connections.values()):
        try:
            check_root(root)
        except FileReachError as exc:
            problems.append(Problem(str(where), None, None, str(exc)))


def _check_init(config: ProjectConfig, data: Any, path: Path, problems: list[Problem]) -> None:
    """DuckDB init statements may create tables and views over the project's files, nothing more."""
    for name, conn in config.connections.items():
        if not isinstance(conn, DuckDBConnection) or not conn.init:
            continue
        node = data["connections"][name].get("init")
        for i, statement in enumerate(conn.init):
            problem = init_problem(statement)
            if problem:
                line, col = node.lines[i] if hasattr(node, "lines") and i < len(node.lines) else (None, None)
                problems.append(Problem(str(path), line, col, f"connection '{name}': init statement {i + 1} {problem}"))


def load_spec(
    path: Path, config: ProjectConfig, problems: list[Problem], root: Path | None = None
) -> LoadedSpec | None:
    """Load and statically check one spec file; add what is wrong to `problems`."""
    shown = str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            problems.append(Problem(shown, None, None, f"the file is larger than {MAX_FILE_BYTES // 1024} KiB"))
            return None
        data = load_yaml(path.read_text(encoding="utf-8"), shown, problems)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None
    except UnicodeDecodeError as exc:
        problems.append(_not_utf8(path, exc))
        return None
    if not isinstance(data, Located):
        problems.append(Problem(shown, 1, 1, "a spec must be a YAML mapping of fields (name, description, sql, ...)"))
        return None
    before = len(problems)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        problems.extend(_validation_problems(exc, data, path))
        recovered = _without_broken_extras(exc, data)  # so the other checks still run and report too
        if recovered is None:
            return None
        spec, data = recovered
    loaded = LoadedSpec(path, spec, spec.name or path.stem, "", data)
    _check_name(loaded, problems)
    sql = _read_sql(loaded, config, problems)
    if sql is not None:
        loaded.sql = sql
        _check_sql(loaded, config, problems, root or path.parent.parent.resolve())
    _check_parameters(loaded, problems)
    _check_templates(loaded, problems)
    _check_charts(loaded, problems)
    _check_answer_size(loaded, config, problems)
    return loaded if len([p for p in problems[before:] if p.severity == "error"]) == 0 else None


# Fields whose errors do not stop the other checks: leave them out and check the rest.
_SEPARABLE = {
    "title",
    "chart",
    "table",
    "tests",
    "annotations",
    "empty",
    "force",
    "max_rows",
    "timeout",
    "cache",
    "page_size",
    "max_bytes",
    "name",
    "app",
}


def _without_broken_extras(exc: ValidationError, data: Located) -> tuple[Spec, Located] | None:
    """The spec without the optional fields (and unknown keys) that broke it, with a typo'd key read
    as the field it was meant to be, or None when a field the other checks need (parameters,
    sql, sources, content) is itself broken."""
    errors = exc.errors()
    renamed = {loc[0]: meant[0] for loc, meant in _typos(errors, Spec).items() if len(loc) == 1}
    broken = {err["loc"][0] for err in errors if err["loc"]} - set(renamed) - set(renamed.values())
    if any(key in Spec.model_fields and key not in _SEPARABLE for key in broken):
        return None
    kept = Located({renamed.get(k, k): v for k, v in data.items() if k not in broken})
    kept.line, kept.col = data.line, data.col
    kept.lines = {}
    for key, where in data.lines.items():
        if isinstance(key, tuple):
            kept.lines[(key[0], renamed.get(key[1], key[1]))] = where
        else:
            kept.lines[renamed.get(key, key)] = where
    try:
        return Spec.model_validate(kept), kept
    except ValidationError:
        return None


def _problem(
    loaded: LoadedSpec, key: str, message: str, severity: str = "error", offset: tuple[int, int] | None = None
) -> Problem:
    """A problem at `key`, or at (line, col) `offset` inside its text."""
    line, col = loaded.data.at(key, *offset) if offset else loaded.data.where(key)
    return Problem(str(loaded.path), line, col, message, severity)


def _culprit(what: str) -> str | None:
    """The word of the template a hazard message names: `__class__`, `attr`, `format`, `include`, `range`."""
    match = re.search(r"'(\w+)'|\{% (\w+)|\.(\w+)\(\)|the (\w+) filter|calls (\w+)\(\)", what)
    return next((g for g in match.groups() if g), None) if match else None


def column_of(source: str, line: int, word: str) -> int:
    """The 1-based column of `word` on line `line` of `source`, else 1.

    >>> column_of("Hello\\n{{ r.city | thousand }}", 2, "thousand")
    13
    """
    text = (source.splitlines()[line - 1 : line] or [""])[0]
    match = re.search(rf"\b{re.escape(word)}\b", text)
    return match.start() + 1 if match else 1


def _check_name(loaded: LoadedSpec, problems: list[Problem]) -> None:
    if loaded.spec.name is None and not re.match(NAME_RE, loaded.name):
        problems.append(
            Problem(
                str(loaded.path),
                1,
                1,
                f"the file name gives the tool name '{loaded.name}', which is not a valid tool name; "
                "rename the file or set name:",
            )
        )


def _read_sql(loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem]) -> str | None:
    """The spec's SQL, from `sql` or its `sql_file`; None (and a problem) when there is none to check."""
    spec = loaded.spec
    if spec.connection not in config.connections:
        problems.append(
            _problem(
                loaded,
                "connection",
                f"connection '{spec.connection}' is not defined in "
                f"{CONFIG_NAME} (defined: {', '.join(config.connections) or 'none'})",
            )
        )
        return None
    if spec.sql_file is None:
        return spec.sql
    sql_path = loaded.path.parent / spec.sql_file
    if not sql_path.is_file():
        problems.append(_problem(loaded, "sql_file", f"sql_file {spec.sql_file} does not exist"))
        return None
    return sql_path.read_text(encoding="utf-8")


def _check_sql(loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem], root: Path) -> None:
    """One read-only statement, placeholders against parameters, no file outside the project,
    no file chosen by the caller."""
    spec = loaded.spec
    key = "sql" if spec.sql is not None else "sql_file"
    target = _dialect(config.connections[spec.connection])
    source = spec.dialect or config.dialect
    try:
        check_read_only(loaded.sql, source)
        used = {p.name: p for p in find_placeholders(loaded.sql, source)}
        if target is not None and target != source:
            loaded.sql = transpile(loaded.sql, source, target)  # once, here: a call runs the translation
            check_read_only(loaded.sql, target)  # what the database runs: its own side effects and comments
        loaded.dialect = target or source
    except UnsafeSQL as exc:
        inline = loaded.data.where(("value", key))[0] == loaded.data.where(key)[0]  # `sql: SELECT ...` on one line
        line, col = (exc.line, exc.col) if exc.line else _locate(loaded.sql, str(exc)) if not inline else (None, None)
        offset = (line, col or 1) if line and key == "sql" else None
        problems.append(_problem(loaded, key, f"{exc}", offset=offset))
        return
    if target == "duckdb":
        for line, col, reason in outside_paths(loaded.sql) + caller_paths(loaded.sql, spec.parameters, root):
            at = (line, col) if key == "sql" and source == target else None
            problems.append(_problem(loaded, key, f"the SQL {reason}", offset=at))
    for name, p in used.items():
        if name not in spec.parameters:
            problems.append(
                _problem(
                    loaded,
                    key,
                    f"the SQL uses :{name}, which is not a declared parameter"
                    + did_you_mean(name, spec.parameters, prefix=":"),
                    offset=(p.line, p.col) if key == "sql" else None,
                )
            )
        elif p.after_in and spec.parameters[name].type != "array":
            problems.append(
                _problem(
                    loaded,
                    key,
                    f"IN :{name} needs an array parameter, but {name} is {spec.parameters[name].type}",
                    offset=(p.line, p.col) if key == "sql" else None,
                )
            )
    for name in spec.parameters:
        if name not in used:
            problems.append(
                Problem(
                    str(loaded.path),
                    *Located.where(loaded.data["parameters"], name),
                    f"parameter '{name}' is declared but the SQL never uses :{name}",
                    "warning",
                )
            )


def _locate(sql: str, message: str) -> tuple[int | None, int | None]:
    """Where in `sql` an UnsafeSQL message points: the second statement, or the word it names."""
    if "exactly one statement" in message:
        match = re.search(r";\s*(?=\S)", sql.rstrip().rstrip(";"))
        index = match.end() if match else None
    else:
        word = re.search(r"(?:contains|not) ([A-Z]+)", message)
        match = word and re.search(rf"\b{word[1]}\b", sql, re.IGNORECASE)
        index = match.start() if match else None
    if index is None:
        return None, None
    return line_col(sql, index)


def _dialect(connection: Any) -> str | None:
    """The sqlglot dialect a connection speaks (None: one sqlglot does not know)."""
    if hasattr(connection, "spark"):
        return "spark"
    if not hasattr(connection, "url"):
        return "duckdb"
    backend = connection.url.split(":", 1)[0].split("+", 1)[0].lower()
    return DIALECTS.get(backend)


LOOP_ROWS_WARNING = 1000  # a `content` loop over more rows than this (~100 characters each) passes the prose cap


def _check_answer_size(loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem]) -> None:
    """Paged specs need a stable row order; prose that loops over many rows gets a warning."""
    spec = loaded.spec
    if spec.connection not in config.connections or not loaded.sql:
        return
    dialect = loaded.dialect  # `loaded.sql` is in the connection's dialect by now
    key = "sql" if spec.sql is not None else "sql_file"
    if spec.page_size:
        if CURSOR in spec.parameters:
            problems.append(
                _problem(loaded, "page_size", f"a paged spec takes '{CURSOR}' itself: rename the parameter")
            )
        if limits_rows(loaded.sql, dialect):
            problems.append(
                _problem(
                    loaded,
                    key,
                    "page_size and a LIMIT, OFFSET or FETCH of the query's own do not go together: "
                    "remove it (each page is the next page_size rows)",
                )
            )
        if not orders_rows(loaded.sql, dialect):
            problems.append(
                _problem(
                    loaded,
                    key,
                    "page_size needs the query to end with ORDER BY (on columns that give each row one place), "
                    "or pages could repeat or skip rows",
                )
            )
        return
    content = loaded.templates.get("content")
    if content is None or not content.loops_over("rows"):
        return
    bound = row_bound(loaded.sql, dialect, spec.parameters, spec.max_rows or config.defaults.max_rows)
    if bound > LOOP_ROWS_WARNING:
        problems.append(
            _problem(
                loaded,
                "content",
                f"content loops over every row, and up to {bound:,} rows can come back: long prose is cut at "
                f"{MAX_OUTPUT:,} characters; set page_size, a lower max_rows or LIMIT, or summarise",
                "warning",
            )
        )


def _check_parameters(loaded: LoadedSpec, problems: list[Problem]) -> None:
    """Each default must satisfy its own parameter's constraints."""
    for name, param in loaded.spec.parameters.items():
        if "default" in param.model_fields_set and param.default is not None:
            try:
                Arguments({name: param}).validate({name: param.default})
            except ArgumentError as exc:
                reason = str(exc).split(": ", 1)[-1]
                problems.append(
                    Problem(
                        str(loaded.path),
                        *Located.where(loaded.data["parameters"], name),
                        f"the default of '{name}' is invalid: {reason}",
                    )
                )


def _check_templates(loaded: LoadedSpec, problems: list[Problem]) -> None:
    spec = loaded.spec
    allowed = set(spec.parameters) | set(TEMPLATE_VARIABLES)
    empty = spec.empty.content if isinstance(spec.empty, EmptyAnswer) else spec.empty
    fields = {"content": spec.content, "empty": empty, "force": spec.force}
    for key, source in fields.items():
        if source is not None:
            template = _checked_template(loaded, key, source, False, allowed, problems)
            if template is not None:
                loaded.templates[key] = template
    empty_node = loaded.data.get("empty")
    url_lists = [("sources", spec.sources, loaded.data)]
    if isinstance(spec.empty, EmptyAnswer) and spec.empty.sources is not None and isinstance(empty_node, Located):
        url_lists.append(("empty.sources", spec.empty.sources, empty_node))
    for name, sources, node in url_lists:
        for i, source in enumerate(sources):
            key = f"{name}[{i}]"
            where = node["sources"].lines[i]
            template = _checked_template(loaded, key, source, True, set(spec.parameters), problems, where)
            if template is not None:
                loaded.templates[key] = template
    if (
        spec.sources
        and all("{" in s for s in spec.sources)
        and not (isinstance(spec.empty, EmptyAnswer) and spec.empty.sources)
    ):
        problems.append(
            _problem(
                loaded,
                "sources",
                "every source is a template, so an answer with no rows would cite pages made from the "
                "arguments, which may not exist; add the dataset's own URL to sources, or give "
                "empty: {content: ..., sources: [...]}",
                "warning",
            )
        )


def _checked_template(
    loaded: LoadedSpec,
    key: str,
    source: str,
    url: bool,
    allowed: set[str],
    problems: list[Problem],
    where: tuple[int | None, int | None] | None = None,
) -> Template | None:
    """The compiled template of field `key`, or None when it has a problem (added to `problems`);
    `where`: the (line, col) of a source URL in its list."""
    field_key = key.split("[")[0]
    try:
        template = Template(source, url=url)
    except TemplateSyntaxError as exc:
        problems.append(
            _problem(loaded, field_key, f"{key}: template syntax error: {exc.message}", offset=(exc.lineno, 1))
        )
        return None
    hazards = template_hazards(template.ast)
    for line, what in hazards:
        word = _culprit(what)
        offset = (line, column_of(source, line, word) if word else 1)
        problems.append(_problem(loaded, field_key, f"{key}: the template {what}", offset=offset))
    if url:
        reason = source_problem(source)
        if reason:
            problems.append(Problem(str(loaded.path), *(where or (None, None)), f"{key}: {source!r} {reason}"))
            return None
    if hazards:
        return None
    unknown = sorted(template.names() - allowed - {"range", "loop", "lipsum", "cycler", "joiner", "namespace", "dict"})
    if unknown:
        first = min((n.lineno for n in template.ast.find_all(nodes.Name) if n.name in unknown), default=1)
        hint = did_you_mean(unknown[0], allowed) if len(unknown) == 1 else ""
        problems.append(
            _problem(
                loaded,
                field_key,
                f"{key}: the template uses {', '.join(unknown)}, which "
                f"{'is' if len(unknown) == 1 else 'are'} neither a parameter nor one of "
                f"{', '.join(sorted(allowed))}{hint}",
                offset=(first, column_of(source, first, unknown[0])),
            )
        )
    filters = filter_problems(template.ast, template.env)
    for line, name, what in filters:
        offset = (line, column_of(source, line, name))
        problems.append(_problem(loaded, field_key, f"{key}: the template {what}", offset=offset))
    return None if unknown or filters else template


def _check_charts(loaded: LoadedSpec, problems: list[Problem]) -> None:
    node: Any = loaded.data.get("chart")
    for i, chart in enumerate(loaded.spec.charts):
        item = node[i] if isinstance(node, list) else node
        for severity, key, message in chart_sense(chart):
            where: tuple[int | None, int | None] = item.where(key) if key in item else item.where()
            prefix = "chart" if not isinstance(node, list) else f"chart[{i}]"
            problems.append(Problem(str(loaded.path), *where, f"{prefix}: {message}", severity))


def check_unique_names(specs: list, problems: list[Problem]) -> None:
    seen: dict[str, LoadedSpec] = {}
    for loaded in specs:
        if loaded.name in seen:
            line, col = loaded.where("name")
            problems.append(
                Problem(
                    str(loaded.path),
                    line,
                    col,
                    f"tool name '{loaded.name}' is already used by {seen[loaded.name].path}",
                )
            )
        else:
            seen[loaded.name] = loaded


def _validation_problems(exc: ValidationError, data: Any, path: Path, model: type[BaseModel] = Spec) -> list[Problem]:
    """One problem per pydantic error; an unknown key that is a typo of a missing required field is
    one problem ("unknown key 'descripton'; did you mean 'description'?"), not two."""
    errors = exc.errors()
    typos = _typos(errors, model)
    out = []
    for err in errors:
        loc = [p for p in err["loc"] if not is_union_tag(p)]  # unions are tagged by shape or kind, not keys
        if err["type"] == "missing" and tuple(loc) in typos.values():
            continue  # reported as the unknown key that was meant to be it
        line, col, node, shown = None, None, data, []
        parent = data
        for i, part in enumerate(loc):
            last = i == len(loc) - 1
            parent = node
            if isinstance(node, Located) and part in node:
                line, col = node.where(part)
                node = node[part]
                shown.append(str(part))
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                line, col = getattr(node, "lines", [(line, col)] * (part + 1))[part]
                node = node[part]
                shown.append(f"[{part}]")
            elif isinstance(node, Located) and (
                err["type"] == "extra_forbidden" or (err["type"] == "missing" and last)
            ):
                line, col = node.where(part) if part in node.lines else (line, col)
                shown.append(str(part))
        where = ".".join(shown).replace(".[", "[") or "spec"
        if line is None and isinstance(data, Located):
            line, col = data.line, data.col
        present = set(parent) if isinstance(parent, dict) else set()
        out.append(Problem(str(path), line, col, _message(err, where, model, present)))
    return out


def _typos(errors: list[ErrorDetails], model: type[BaseModel]) -> dict[tuple, tuple]:
    """Unknown keys whose nearest field is missing: {location of the key: location of the field}."""
    missing = {tuple(p for p in e["loc"] if not is_union_tag(p)) for e in errors if e["type"] == "missing"}
    out = {}
    for err in errors:
        loc = tuple(p for p in err["loc"] if not is_union_tag(p))
        if err["type"] == "extra_forbidden" and loc:
            meant = closest(loc[-1], fields_at(model, loc[:-1]))
            if meant is not None and (*loc[:-1], meant) in missing:
                out[loc] = (*loc[:-1], meant)
    return out


def fields_at(model: Any, loc: tuple | list) -> list[str]:
    """The keys a mapping at `loc` inside `model` may have: `fields_at(Spec, ("parameters", "n"))`
    gives a Parameter's fields."""
    kinds = [model]
    for part in loc:
        kinds = [step for kind in kinds for step in _step(kind, part)]
    return list(dict.fromkeys(name for kind in kinds for name in _model_fields(kind)))


def _unwrap(kind: Any) -> list[Any]:
    """The concrete types behind Annotated, Optional and unions."""
    origin = get_origin(kind)
    if origin is Annotated:
        return _unwrap(get_args(kind)[0])
    if origin in (Union, UnionType):
        return [t for arg in get_args(kind) for t in _unwrap(arg)]
    return [kind]


def _step(kind: Any, part: Any) -> list[Any]:
    out = []
    for t in _unwrap(kind):
        origin, args = get_origin(t), get_args(t)
        if isinstance(t, type) and issubclass(t, BaseModel) and isinstance(part, str) and part in t.model_fields:
            out.append(t.model_fields[part].annotation)
        elif origin is list and isinstance(part, int):
            out.append(args[0])
        elif origin is dict and isinstance(part, str):
            out.append(args[1])
    return out


def _model_fields(kind: Any) -> list[str]:
    return [n for t in _unwrap(kind) if isinstance(t, type) and issubclass(t, BaseModel) for n in t.model_fields]


def _message(
    err: ErrorDetails, where: str, model: type[BaseModel] = Spec, present: frozenset | set = frozenset()
) -> str:
    kind, msg = err["type"], err["msg"]
    loc = [p for p in err["loc"] if not is_union_tag(p)]
    if kind == "extra_forbidden":
        key = where.rsplit(".", 1)[-1]
        inside = f" in {where.rsplit('.', 1)[0]}" if "." in where else ""
        fields = [f for f in fields_at(model, loc[:-1]) if f not in present]  # not one that is already there
        return f"unknown key '{key}'{inside}" + did_you_mean(loc[-1], fields)
    if kind == "missing":
        return f"missing required field '{where}'"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if kind == "literal_error":
        expected = re.findall(r"'([^']*)'", msg)
        shown = repr(err["input"]) if isinstance(err["input"], str) else err["input"]
        msg = f"{shown} is not one of {', '.join(expected)}" + did_you_mean(err["input"], expected)
    return f"{where}: {msg}"
