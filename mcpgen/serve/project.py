"""A served project: engines for its connections, and a Registry of compiled tools.

    project = open_project("specs")      # raises SpecError listing every problem
    result = project.registry.call_sync("top_cities", {"n": 3})
    project.close()

DuckDB resolves relative file paths against the working directory, so opening a
project makes its root (the folder of mcpgen.yaml, else the specs folder's parent)
the working directory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import runpy
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from .. import cachefile
from ..answer.compile import SpecTool, compile_spec
from ..answer.cursors import OTHER_THAN_PROJECT, Cursors, project_key
from ..answer.prompts import Prompt
from ..engines.factory import create_engine
from ..engines.protocol import Engine
from ..errors import MCPGenError, Problem, QueryError, SettingError, SpecError, UnsafeSQL
from ..load import checked
from ..load.columns import check_spec_live, checked_by_default
from ..load.discovery import prompt_paths, spec_paths
from ..load.project import connection_where, load_project
from ..load.prompts import LoadedPrompt, check_prompt_tools
from ..load.specs import LoadedProject, LoadedSpec
from ..spec.models import AppSettings
from ..text import first_line
from .mcp_app import project_apps
from .registry import Registry, default_registry

logger = logging.getLogger("mcpgen")


@dataclass
class Project:
    loaded: LoadedProject
    registry: Registry
    engines: dict[str, Engine]

    def close(self) -> None:
        self.registry.cache.clear()  # a replaced project's answers go with it, not at garbage collection
        for engine in self.engines.values():
            engine.close()


def open_project(
    specs_dir: str | Path,
    columns: bool = True,
    loaded: LoadedProject | None = None,
    needed: Callable[[str], bool] | None = None,
    local_cursors: bool = False,
    positions: bool = True,
) -> Project:
    """Load, check and compile every tool under `specs_dir`; raise SpecError if anything is wrong.

    Queries on DuckDB connections are described, as `mcpgen validate` does, so a column that a
    chart, table or template names and the query does not return stops the start, not a call
    (`columns=False` skips that: the same checks still stand at call time). `loaded`: the
    project already read from `specs_dir` (`serve --http` reads its settings first), not read again.

    `needed` is for the commands that run some tools only (`call`, `test -k`, `preview`): given a
    spec file's path, whether the command runs it. A spec it does not need is left out when it has
    an error, which moves to `loaded.left_out` (they print it as a warning); the errors of the specs
    it needs, of mcpgen.yaml and of the connections still stop the project.

    `local_cursors` (`mcpgen call`): paged tools sign cursors with the project's own key, kept for the
    user (`project_key`), so that the next `mcpgen call` continues them; unless cursors.secret_env is set.

    `positions=False` (`serve`): a spec's YAML positions are let go once it is compiled, unless it is paged
    (its pages are planned, and their errors placed, at its first call): a server of many specs holds
    about half as much per spec, and start-up errors are all found by then."""
    loaded = loaded or load_project(specs_dir)
    engines = _checked_with_column_types(loaded, needed)
    os.chdir(loaded.root)  # DuckDB reads relative paths from the working directory
    problems: list[Problem] = []
    used = {s.spec.connection for s in loaded.specs}
    state = checked.data_state(loaded.root, loaded.config) if columns else None
    # An in-memory DuckDB starts from the snapshot its `init` left in this state of the data: the commands
    # that run a few tools once open the file; a server copies it into memory, since a query on the
    # read-only file takes longer (10 rows of 34,000 cities: about 3 ms against 1.6 ms).
    for name in used - engines.keys():
        try:
            connection = loaded.config.connections[name]
            engines[name] = create_engine(name, connection, loaded.root, state, copy=needed is None)
        except MCPGenError as exc:
            problems.append(_connection_problem(loaded, specs_dir, name, exc))
    _check_roles(engines, problems, lambda name, exc: _connection_problem(loaded, specs_dir, name, exc))
    defaults = loaded.config.defaults
    registry = Registry(defaults.cache_max_bytes)
    cursors = _cursors(loaded, problems, local_cursors)
    # The queries found prepared and described in this state are kept (`load.checked`), in a file of
    # their own per set of specs compiled (a command that needs a few keeps theirs apart).
    scope = (loaded.specs_dir.resolve(), "described", *(sorted(str(s.path) for s in loaded.specs) if needed else ()))
    with cachefile.session(loaded.root, *scope):
        for spec in loaded.specs:
            engine = engines.get(spec.spec.connection)
            if engine is None:
                continue
            found = _compile(spec, engine, loaded, registry, cursors, columns, state)
            if not positions and not found and not spec.spec.page_size:
                spec.forget_positions()  # freed while compiling, so the next specs' tools reuse the memory
            if found and needed is not None and not needed(str(spec.path)):
                loaded.left_out += found
            else:
                problems += found
    for path in loaded.python_files:
        problems.extend(_import_tools(path, registry))
    _attach_apps(loaded, registry)
    _attach_server_settings(loaded, registry)
    problems += _attach_prompts(loaded, registry)
    if problems:
        for engine in engines.values():
            engine.close()
        raise SpecError(problems)
    return Project(loaded, registry, engines)


def _compile(
    spec: LoadedSpec,
    engine: Engine,
    loaded: LoadedProject,
    registry: Registry,
    cursors: Cursors,
    columns: bool,
    state: str | None,
) -> list[Problem]:
    """Compile one spec into `registry` (once its columns are checked), or say what stops it. A query
    already prepared and described in this `state` of the data is not prepared again: the statement
    kept with that fact is the one it runs."""
    try:
        described = columns and checked_by_default(loaded.config.connections[spec.spec.connection])
        name = checked.described_key(spec, state) if described and state else None
        kept = checked.described(name, spec.sql) if name is not None else None
        tool = compile_spec(spec, engine, loaded.config.defaults, cursors, kept[1] if kept else None)
        if described and kept is None and isinstance(tool.handler, SpecTool):
            found = check_spec_live(spec, engine, prepared=tool.handler.query)
            if any(p.severity == "error" for p in found):
                return [p for p in found if p.severity == "error"]
            if name is not None:
                checked.keep_described(name, found, spec.sql, tool.handler.query)
        registry.add(tool)
    except UnsafeSQL as exc:
        return [spec.sql_problem(str(exc), None if spec.translated else exc.position)]
    except ValueError as exc:
        return [Problem(str(spec.path), *spec.where("name"), str(exc))]
    return []


COLUMN_TYPES_SECONDS = 10.0


def _checked_with_column_types(loaded: LoadedProject, needed: Callable[[str], bool] | None) -> dict[str, Engine]:
    """The specs waiting for their database's column types checked again with them (`learn_column_types`),
    read through engines opened here and returned for the project to use; then the errors of the specs
    not `needed` left out, and SpecError (those engines closed) while the project has errors."""
    engines: dict[str, Engine] = {}

    def columns_of(name: str):
        if name not in engines:
            engines[name] = create_engine(name, loaded.config.connections[name], loaded.root)
        read = getattr(engines[name], "column_types", None)
        return read(COLUMN_TYPES_SECONDS) if callable(read) else None

    waiting = any(s.untyped for s in loaded.specs)
    if waiting and not any(p.path == str(loaded.config_path) for p in loaded.errors):  # its connections can be trusted
        from ..load.spec_checks import learn_column_types  # here: the SQL checks only waiting specs need

        learn_column_types(loaded, columns_of)
    if needed is not None:
        _leave_out(loaded, needed)
    try:
        loaded.raise_errors()
    except SpecError:
        for engine in engines.values():
            engine.close()
        raise
    return engines


def left_out_warning(problem: Problem) -> Problem:
    """How `call` and `test -k` print the error of a spec they left out."""
    why = "this tool is left out here; serve and validate refuse the project until it is fixed"
    return replace(problem, severity="warning", message=f"{problem.message} ({why})")


def _leave_out(loaded: LoadedProject, needed: Callable[[str], bool]) -> None:
    """Errors in spec files that are not needed move to `left_out`, and those specs are dropped."""
    files = {str(p) for p in spec_paths(loaded.specs_dir) + prompt_paths(loaded.specs_dir)}
    files |= {str(s.path) for s in loaded.specs}
    kept = []
    for problem in loaded.problems:
        if problem.severity == "error" and problem.path in files and not needed(problem.path):
            loaded.left_out.append(problem)
        else:
            kept.append(problem)
    dropped = {p.path for p in loaded.left_out}
    loaded.problems[:] = kept
    loaded.specs = [s for s in loaded.specs if str(s.path) not in dropped]
    loaded.prompts = [p for p in loaded.prompts if str(p.path) not in dropped]


ROLE_CHECK_SECONDS = 5.0


def _check_roles(
    engines: dict[str, Engine], problems: list[Problem], problem: Callable[[str, Exception], Problem]
) -> None:
    """Refuse to start on a connection whose database role may do more than read (unless it says
    `privileged_role: warn`), or whose driver refused its settings (`SettingError`). A database that
    cannot be reached does not stop the start (within the connection's own connect timeout): its role
    is checked when the first call connects."""
    for name, engine in engines.items():
        check = getattr(engine, "check_role", None)
        if not callable(check):
            continue
        try:
            result = check(ROLE_CHECK_SECONDS)
        except SettingError as exc:
            problems.append(problem(name, exc))
            continue
        except Exception as exc:  # unreachable now: checked again on the first call
            logger.warning(
                "connection '%s': its database role could not be checked at start (%s); "
                "it is checked when the first call connects",
                name,
                first_line(exc),
            )
            continue
        if result is not None and result[0] == "error":
            problems.append(problem(name, QueryError(result[1])))


def _connection_problem(loaded: LoadedProject, specs_dir: str | Path, name: str, exc: Exception) -> Problem:
    """What stops connection `name`, said at its place in mcpgen.yaml (its setting's, for a SettingError)."""
    if loaded.config_path is None:
        return Problem(str(specs_dir), None, None, str(exc))
    config = Path(loaded.root, loaded.config_path.name)  # the working directory is the project's by now
    where = connection_where(config, name, getattr(exc, "setting", ()))
    return Problem(str(loaded.config_path), *where, str(exc))


def _cursors(loaded: LoadedProject, problems: list[Problem], local_cursors: bool = False) -> Cursors:
    """Cursors signed with the key from `cursors.secret_env`, else with this process's random key (with
    `local_cursors`, the project's own key kept for the user: `mcpgen call`), and bound to the
    project's settings (each tool's cursors are also bound to its own spec)."""
    settings = loaded.config.cursors
    version = hashlib.sha256(repr(loaded.config).encode()).hexdigest()
    if settings.secret_env is None:
        key = project_key(loaded.root) if local_cursors else None
        if key is not None:
            return Cursors(key, ttl=settings.ttl, project=version, other_key=OTHER_THAN_PROJECT)
        return Cursors(ttl=settings.ttl, project=version)
    secret = os.environ.get(settings.secret_env, "")
    if len(secret) < 16:
        problems.append(
            Problem(
                str(loaded.config_path),
                None,
                None,
                f"cursors.secret_env names {settings.secret_env}, which must hold a secret of 16 characters or more",
            )
        )
    return Cursors(secret.encode(), ttl=settings.ttl, project=version)


def _attach_apps(loaded: LoadedProject, registry: Registry) -> None:
    """Give each tool its MCP App (hand-written tools get the project's), unless `app: false`."""
    settings: dict[str, bool | AppSettings] = {tool.name: tool.wants_app for tool in registry}
    settings.update({s.name: s.spec.app for s in loaded.specs if s.name in settings})
    registry.apps, chosen = project_apps(loaded.config.app, settings, loaded.root)
    for name, uri in chosen.items():
        registry.get(name).app = uri


def _attach_prompts(loaded: LoadedProject, registry: Registry) -> list[Problem]:
    """The project's prompts; with Python tool files, their `tools:` are checked here, against every tool."""
    found: list[Problem] = []
    prompts = loaded.prompts
    if loaded.python_files:
        prompts = check_prompt_tools(prompts, set(registry.names()), found)
    kept = {}
    for loaded_prompt in prompts:
        prompt = Prompt.from_loaded(loaded_prompt)
        wrong = _completion_problems(loaded_prompt, prompt, registry)
        found += wrong
        if not wrong:
            kept[prompt.name] = prompt
    registry.prompts = kept
    return found


def _completion_problems(loaded: LoadedPrompt, prompt: Prompt, registry: Registry) -> list[Problem]:
    """An argument's `complete: TOOL.PARAMETER` must name a tool of the project and one of its parameters."""
    out = []
    for argument, (tool, parameter) in prompt.completes_from.items():
        line, col = loaded.data["arguments"][argument].where("complete")
        if tool not in registry:
            out.append(
                Problem(
                    str(loaded.path),
                    line,
                    col,
                    f"arguments.{argument}.complete: '{tool}' is not a tool of this project",
                )
            )
        elif parameter not in registry.get(tool).parameters:
            known = ", ".join(registry.get(tool).parameters) or "no parameters"
            message = f"arguments.{argument}.complete: tool '{tool}' has no parameter '{parameter}' ({known})"
            out.append(Problem(str(loaded.path), line, col, message))
    return out


def _attach_server_settings(loaded: LoadedProject, registry: Registry) -> None:
    """mcpgen.yaml's instructions and icons; a tool without icons of its own gets the project's."""
    registry.instructions, registry.icons = loaded.config.instructions, loaded.icons
    own = {s.name: s.icons for s in loaded.specs}
    for tool in registry:
        mine = own.get(tool.name)
        tool.icons = mine if mine is not None else (loaded.icons or None)


def _import_tools(path: Path, registry: Registry) -> list[Problem]:
    """Run a specs/*.py file and move the tools it registered into `registry`."""
    default_registry.take_all()
    try:
        runpy.run_path(str(path), run_name=f"mcpgen_specs_{path.stem}")
    except SyntaxError as exc:
        return [Problem(str(path), exc.lineno, exc.offset, f"syntax error: {exc.msg}")]
    except Exception as exc:
        logger.exception("importing %s failed", path)
        return [
            Problem(str(path), _line_in(exc, path), None, f"importing the file failed: {type(exc).__name__}: {exc}")
        ]
    problems = []
    for tool in default_registry.take_all():
        try:
            registry.add(tool)
        except ValueError as exc:
            problems.append(Problem(str(path), None, None, str(exc)))
    return problems


def _line_in(exc: BaseException, path: Path) -> int | None:
    tb, line = exc.__traceback__, None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
