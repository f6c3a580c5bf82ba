"""The static checks of one spec, beyond its schema: the tool name, the SQL (one read-only statement,
placeholders against parameters, files inside the project), parameter defaults, templates, charts,
and what paging and long prose need. Nothing connects to a database. (The checks of single
constructs, shared with the engines, are in `mcpgen.checks`.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from sqlglot.errors import SqlglotError

from ..checks import (
    caller_paths,
    chart_sense,
    default_catalogue,
    filter_problems,
    function_problems,
    outside_paths,
    source_problem,
    template_hazards,
)
from ..errors import ArgumentError, MCPGenError, Problem, UnsafeSQL
from ..identity import local_user
from ..limits import MAX_OUTPUT
from ..spec.config import CONFIG_NAME, ProjectConfig
from ..spec.models import CURSOR, NAME_RE, TEMPLATE_VARIABLES, EmptyAnswer
from ..spec.params import Arguments
from ..spec.yamlload import Located
from ..sql.dialects import Columns
from ..sql.pages import limits_rows, orders_rows, row_bound
from ..sql.statements import DIALECTS, check_read_only, find_placeholders, is_null_test
from ..sql.transpile import NeedsColumnTypes, caveats, transpile
from ..templates.render import Template
from ..text import column_of, did_you_mean, first_line, line_col
from .icons import as_mcp_icons
from .specs import LoadedProject, LoadedSpec


def check_spec(
    loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem], root: Path, columns: Columns | None = None
) -> None:
    """Every static check of one spec (its name, SQL, parameters, templates, charts, answer size);
    what is wrong is added to `problems`. `loaded.sql` ends up in its connection's dialect (`columns`:
    its database's column types, where the translation needs them)."""
    _check_name(loaded, problems)
    sql = _read_sql(loaded, config, problems, root)
    if sql is not None:
        loaded.sql = sql
        _check_sql(loaded, config, problems, root, columns)
    _check_parameters(loaded, problems)
    _check_templates(loaded, problems, root)
    _check_charts(loaded, problems)
    _check_answer_size(loaded, config, problems)
    _check_icons(loaded, problems, root)
    _check_completions(loaded, config, problems, columns)
    _check_tests(loaded, config, problems)
    if sql is not None:
        _check_count(loaded, problems)


def _check_count(loaded: LoadedSpec, problems: list[Problem]) -> None:
    """`confirm.when_rows_over`: the query counted is one read-only statement on the connection (kept in
    `loaded.count_sql`); a paged query is counted whole, its cursor left out."""
    confirm = loaded.spec.confirm
    if confirm is None or confirm.when_rows_over is None:
        return
    from ..sql.counts import bounded_count  # only for the specs that say so: serve's imports stay few

    node = loaded.data.get("confirm")
    line, col = node.where("when_rows_over") if isinstance(node, Located) else (None, None)
    try:
        count = bounded_count(loaded.sql, loaded.dialect)
        check_read_only(count, loaded.dialect)
    except (UnsafeSQL, SqlglotError) as exc:
        problems.append(
            Problem(str(loaded.path), line, col, f"confirm.when_rows_over: the query cannot be counted ({exc})")
        )
        return
    loaded.count_sql = count


def learn_column_types(loaded: LoadedProject, columns_of: Callable[[str], Columns | None]) -> None:
    """Check again, with their database's column types, the specs whose translation waits for them (date
    arithmetic on MariaDB/MySQL on a column the SQL does not type: an error; a select alias that may be a
    table's column, translated as none: a warning): `columns_of(connection)` reads them from the
    database's catalogue (None: that connection is not open here; an MCPGenError: it failed), as serve,
    call, test and validate --live do; plain validate, which connects nowhere, keeps the problem (and a
    warning's translation)."""
    for spec in loaded.specs:
        waiting = spec.untyped
        if not waiting:
            continue
        try:
            columns = columns_of(spec.spec.connection)
        except MCPGenError as exc:
            reason = f"; the column types could not be read: {first_line(exc)}"
            loaded.problems[:] = [
                replace(p, message=p.message + reason) if p in waiting else p for p in loaded.problems
            ]
            continue
        if columns is None:
            continue
        found: list[Problem] = []
        check_spec(spec, loaded.config, found, loaded.root, columns)
        loaded.problems[:] = [p for p in loaded.problems if p not in waiting and p not in found] + found


def _check_completions(
    loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem], columns: Columns | None = None
) -> None:
    """Each parameter's `complete:` query: one read-only statement whose placeholders are :prefix and
    the spec's parameters, in the connection's dialect (kept in `loaded.completions`)."""
    spec = loaded.spec
    if spec.connection not in config.connections or not any(p.complete for p in spec.parameters.values()):
        return  # an unknown connection is its own problem
    target = _dialect(config.connections[spec.connection])
    source = spec.dialect or config.dialect
    for name, param in spec.parameters.items():
        if param.complete is None:
            continue
        node = loaded.data["parameters"][name]
        line, col = node.where("complete") if isinstance(node, Located) else (None, None)
        sql = param.complete
        try:
            check_read_only(param.complete, source)
            unknown = sorted(
                {p.name for p in find_placeholders(param.complete, source)} - {"prefix"} - set(spec.parameters)
            )
            if unknown:
                known = ", ".join([":prefix", *(f":{p}" for p in spec.parameters)])
                raise UnsafeSQL(f"uses :{unknown[0]}, which is neither :prefix nor a parameter ({known})")
            if target is not None and target != source:
                sql = transpile(param.complete, source, target, columns=columns)
            check_read_only(sql, target or source)
        except UnsafeSQL as exc:
            if exc.position and isinstance(node, Located) and sql is param.complete:  # not in its translation
                line, col = node.at("complete", *exc.position)
            problems.append(Problem(str(loaded.path), line, col, f"parameters.{name}.complete: {exc}"))
            continue
        loaded.completions[name] = sql


def _check_icons(loaded: LoadedSpec, problems: list[Problem], root: Path) -> None:
    """`icons:` in wire form, image files beside the spec read and inlined."""
    if loaded.spec.icons is None:
        return
    try:
        loaded.icons = as_mcp_icons(loaded.spec.icons, loaded.path.parent, root)
    except ValueError as exc:
        problems.append(_problem(loaded, "icons", f"icons: {exc}"))


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


def _read_sql(loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem], root: Path) -> str | None:
    """The spec's SQL, from `sql` or its `sql_file`; None (and a problem) when there is none to check."""
    spec = loaded.spec
    if spec.connection not in config.connections:
        message = f"connection '{spec.connection}' is not defined in {CONFIG_NAME} (defined: {', '.join(config.connections) or 'none'})"
        if not (root / CONFIG_NAME).is_file():  # the newcomer's case: mcpgen.yaml forgotten, or put elsewhere
            message = (
                f"connection '{spec.connection}' is not defined: there is no {CONFIG_NAME} in the project folder "
                f"{root}, so the only connection is 'default' (DuckDB on the project's files)"
            )
        problems.append(_problem(loaded, "connection", message))
        return None
    if spec.sql_file is None:
        return spec.sql
    sql_path = loaded.path.parent / spec.sql_file
    if not sql_path.is_file():
        problems.append(_problem(loaded, "sql_file", f"sql_file {spec.sql_file} does not exist"))
        return None
    return sql_path.read_text(encoding="utf-8")


def _translate(
    loaded: LoadedSpec, key: str, source: str, target: str, problems: list[Problem], columns: Columns | None
) -> None:
    """`loaded.sql` translated to `target`, once (a call runs the translation), with its warnings: where
    the answers may differ, and a select alias read as no table's column without the tables' columns
    (the warnings `learn_column_types` checks again with them)."""
    written = loaded.sql
    dates = frozenset(n for n, p in loaded.spec.parameters.items() if p.type == "date")
    guessed: list[tuple[int | None, int | None, str]] = []
    loaded.sql = transpile(written, source, target, dates, columns, guessed)
    loaded.translated = True
    guessed = list(dict.fromkeys(guessed))  # an alias two rewrites read is one warning
    for line, col, message in caveats(written, source, target) + guessed:
        problems.append(loaded.sql_problem(message, (line, col or 1) if line else None, "warning"))
    loaded.untyped = tuple(problems[len(problems) - len(guessed) :])


def _check_sql(
    loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem], root: Path, columns: Columns | None
) -> None:
    """One read-only statement, placeholders against parameters, no file outside the project,
    no file chosen by the caller."""
    spec = loaded.spec
    loaded.untyped, loaded.translated = (), False
    key = "sql" if spec.sql is not None else "sql_file"
    target = _dialect(config.connections[spec.connection])
    source = spec.dialect or config.dialect
    written = loaded.sql
    try:
        check_read_only(loaded.sql, source)
        used = {p.name: p for p in find_placeholders(loaded.sql, source)}
        if target is not None and target != source:
            _translate(loaded, key, source, target, problems, columns)
            check_read_only(loaded.sql, target)  # what the database runs: its own side effects and comments
        loaded.dialect = target or source
    except UnsafeSQL as exc:
        inline = loaded.data.where(("value", key))[0] == loaded.data.where(key)[0]  # `sql: SELECT ...` on one line
        # A position in the translation (its own check failed) is not one in the spec's SQL.
        position = exc.position or (None if inline else _locate(written, str(exc)))
        problems.append(loaded.sql_problem(f"{exc}", None if loaded.translated else position))
        if isinstance(exc, NeedsColumnTypes) and columns is None:
            loaded.untyped = (problems[-1],)
        return
    if target == "duckdb":
        found = outside_paths(loaded.sql) + caller_paths(loaded.sql, spec.parameters, root)
        for line, col, reason in found + function_problems(loaded.sql, default_catalogue):
            problems.append(loaded.sql_problem(f"the SQL {reason}", (line, col) if source == target else None))
    for name, p in used.items():
        if name not in spec.parameters:
            problems.append(
                loaded.sql_problem(
                    f"the SQL uses :{name}, which is not a declared parameter"
                    + did_you_mean(name, spec.parameters, prefix=":"),
                    (p.line, p.col),
                )
            )
        elif p.after_in and spec.parameters[name].type != "array":
            problems.append(
                loaded.sql_problem(
                    f"IN :{name} needs an array parameter, but {name} is {spec.parameters[name].type}", (p.line, p.col)
                )
            )
    _check_optional_lists(loaded, key, source, problems)
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


def _check_optional_lists(loaded: LoadedSpec, key: str, dialect: str | None, problems: list[Problem]) -> None:
    """An optional array with no default matches nothing when left out (`IN :xs` of no values): say
    how to write "all values when omitted", unless the SQL already tests `:xs IS NULL`."""
    sql = loaded.spec.sql if key == "sql" and loaded.spec.sql is not None else loaded.sql
    placeholders = find_placeholders(sql, dialect)
    tested = {p.name for p in placeholders if not p.after_in and is_null_test(sql, p)}
    warned: set[str] = set()
    for p in placeholders:
        param = loaded.spec.parameters.get(p.name)
        if not p.after_in or p.name in tested | warned or param is None or param.type != "array":
            continue
        if param.is_required or param.default is not None:
            continue
        warned.add(p.name)
        problems.append(
            _problem(
                loaded,
                key,
                f"{p.name} is optional with no default, so leaving it out makes IN :{p.name} match nothing; "
                f"for all values when it is left out, write (:{p.name} IS NULL OR <column> IN :{p.name}), "
                "or give it a default",
                "warning",
                offset=(p.line, p.col) if key == "sql" else None,
            )
        )


def _locate(sql: str, message: str) -> tuple[int, int] | None:
    """Where in `sql` an UnsafeSQL message points: the second statement, or the word it names."""
    if "exactly one statement" in message:
        match = re.search(r";\s*(?=\S)", sql.rstrip().rstrip(";"))
        index = match.end() if match else None
    else:
        word = re.search(r"(?:contains|not) ([A-Z]+)", message)
        match = word and re.search(rf"\b{word[1]}\b", sql, re.IGNORECASE)
        index = match.start() if match else None
    return None if index is None else line_col(sql, index)


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


def _check_tests(loaded: LoadedSpec, config: ProjectConfig, problems: list[Problem]) -> None:
    """Each `tests:` case's arguments pass the check a call's arguments pass (as `mcpgen test` calls them,
    with the project's `stdio_claims`), so a misspelt name or a wrong type shows here, not only at test time.
    A warning: a broken test case does not keep its tool from serving. A case that expects an error
    (`error_contains`) may mean its arguments' values to be refused, never an unknown name: only its names
    are checked (else the "did you mean" sentence may hold the expected text, and the case pass wrongly)."""
    arguments = Arguments(loaded.spec.parameters)
    for index, test in enumerate(loaded.spec.tests):
        try:
            if test.expect.error_contains is not None:
                arguments.check_names(test.args)
                continue
            with local_user(config.stdio_claims):
                arguments.validate(test.args)
        except ArgumentError as exc:
            case = loaded.data["tests"][index]
            where = case.where("args") if isinstance(case, Located) else loaded.where("tests")
            label = f"'{test.name}'" if test.name else str(index)
            problems.append(Problem(str(loaded.path), *where, f"test {label}: {exc}", "warning"))


def _check_templates(loaded: LoadedSpec, problems: list[Problem], root: Path) -> None:
    """Each template compiled into `loaded.templates`, knowing its place in the spec file (its path from the
    project folder `root`, as a caller may be told it), or a problem."""
    spec = loaded.spec
    try:
        shown = loaded.path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:  # a spec outside the project folder: its name alone
        shown = loaded.path.name
    allowed = set(spec.parameters) | set(TEMPLATE_VARIABLES)
    empty = spec.empty.content if isinstance(spec.empty, EmptyAnswer) else spec.empty
    fields = {"content": spec.content, "empty": empty, "force": spec.force}
    for key, source in fields.items():
        if source is not None:
            node = loaded.data.get(key) if key == "empty" and isinstance(spec.empty, EmptyAnswer) else None
            at = node.at("content") if isinstance(node, Located) else loaded.data.at(key)
            origin = (shown, at[0], "empty.content" if node is not None else key)
            template = _checked_template(loaded, key, source, False, allowed, problems, origin)
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
            origin = (shown, where[0], key)
            template = _checked_template(loaded, key, source, True, set(spec.parameters), problems, origin, where)
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
    origin: tuple[str, int | None, str],
    where: tuple[int | None, int | None] | None = None,
) -> Template | None:
    """The compiled template of field `key` (`origin`: see Template), or None when it has a problem (added
    to `problems`); `where`: the (line, col) of a source URL in its list."""
    field_key = key.split("[")[0]
    try:
        template = Template(source, url=url, origin=origin)
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
