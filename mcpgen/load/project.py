"""Reading a project: mcpgen.yaml and every spec in a folder, with every problem found at once.

Loading is static: nothing connects to a database. Each problem is a `Problem`
with file:line:col; a folder reports all of its problems, not the first. A spec whose
optional fields are broken is still checked without them (`_without_broken_extras`), so
one run reports the rest of its problems too.

    project = load_project("specs")      # LoadedProject: config, specs, python_files, problems
    project.raise_errors()               # SpecError listing every error
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import cachefile
from ..checks import (
    init_problem,
    literal_password,
)
from ..engines.file_reach import FileReachError, check_root
from ..errors import Problem, SpecError
from ..spec.config import CONFIG_NAME, DuckDBConnection, ProjectConfig, URLConnection
from ..spec.models import Spec
from ..spec.yamlload import Located, load_yaml
from . import checked
from .discovery import misnamed_config, project_folder, python_paths, spec_paths
from .icons import as_mcp_icons
from .messages import mapping_of, not_utf8, read_text, typos, validation_problems
from .prompts import load_prompts
from .specs import LoadedProject, LoadedSpec


def load_project(
    specs_dir: str | Path, paths: list[Path] | None = None, unique_names: bool = True, scope: tuple | None = None
) -> LoadedProject:
    """Read and check every spec under `specs_dir` (no database is touched).

    `paths` loads only those spec files, and `unique_names=False` leaves the check
    across files to the caller (`validate` shares a big project between processes).
    `scope` names the cache file used: by default the project's, or with `paths` one of their own
    (`mcpgen call` reads its one spec's); validate's workers share the project's (`scope=()`)."""
    specs_dir = Path(specs_dir)
    problems: list[Problem] = []
    scope = (() if paths is None else tuple(paths)) if scope is None else scope
    paths = spec_paths(specs_dir) if paths is None else paths
    config_path, root = project_folder(specs_dir)
    # Parsed templates, spec files and verdicts come from the cache of this project (or of this part of it).
    with cachefile.session(root, specs_dir.resolve(), *scope, within=(specs_dir.resolve(),) if scope else ()):
        config = load_config(config_path, problems) if config_path else ProjectConfig.model_construct()
        if config_path is None and (misnamed := misnamed_config(specs_dir)) is not None:
            problems.append(
                Problem(str(misnamed), None, None, f"is never read: the project file must be named {CONFIG_NAME}")
            )
        _check_root(root, config, config_path or specs_dir, problems)
        icons = _project_icons(config, config_path, root, problems)
        specs = []
        for path in paths:
            loaded = load_spec(path, config, problems, root)
            if loaded is not None:
                specs.append(loaded)
        if unique_names:
            check_unique_names(specs, problems)
        python_files = python_paths(specs_dir)
        # Prompts with the whole project (validate's workers load parts of it; it reads them once itself).
        names = None if python_files else {s.name for s in specs}  # Python tools are known once imported
        prompts = load_prompts(specs_dir, names, problems) if unique_names else []
    if not paths and not python_files:
        problems.append(Problem(str(specs_dir), None, None, f"no spec files (*.yaml, *.yml) in {specs_dir}"))
    project = LoadedProject(specs_dir, root, config, config_path, specs, python_files, problems, icons=icons)
    project.prompts = prompts
    return project


def unchecked(specs_dir: Path, paths: list[Path], described: bool = False) -> int:
    """How many of these spec files the cache of the project does not hold as checked as they are now;
    with `described`, all of them when their queries were not described in this state of the data."""
    config_path, root = project_folder(specs_dir)
    config = load_config(config_path, []) if config_path else ProjectConfig.model_construct()
    if described and not checked.described_in(root, specs_dir.resolve(), config):
        return len(paths)
    kept = cachefile.kept(root, specs_dir.resolve())
    texts = ((path, read_text(path, [])) for path in paths)
    return sum(text is None or checked.key(str(path), root, text, config) not in kept for path, text in texts)


def _project_icons(config: ProjectConfig, path: Path | None, root: Path, problems: list[Problem]) -> list[dict]:
    """mcpgen.yaml's icons in wire form (files beside it inlined); a broken one is a problem at `icons`."""
    if not config.icons or path is None:
        return []
    try:
        return as_mcp_icons(config.icons, path.parent, root)
    except ValueError as exc:
        data = load_yaml(path.read_text(encoding="utf-8"), str(path), [])
        line, col = data.where("icons") if isinstance(data, Located) else (None, None)
        problems.append(Problem(str(path), line, col, f"icons: {exc}"))
        return []


def load_config(path: Path, problems: list[Problem]) -> ProjectConfig:
    """mcpgen.yaml as loaded, its problems added to `problems`; while its text is unchanged, from the
    cache of checked specs (`checked.get_config`) without building any of the config's validators."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.append(not_utf8(path, exc))
        return ProjectConfig.model_construct()
    name = checked.config_key(str(path), text)
    found = checked.get_config(name)
    if found is None:
        found = _check_config(path, text)
        checked.put_config(name, *found)
    problems += found[1]
    return found[0]


def _check_config(path: Path, text: str) -> tuple[ProjectConfig, list[Problem]]:
    """(mcpgen.yaml as loaded from `text`, else the defaults, and what is wrong in it)."""
    problems: list[Problem] = []
    try:
        data = load_yaml(text, str(path), problems)
        config = ProjectConfig.model_validate(data if data is not None else {})
        _check_secrets(config, data, path, problems)
        _check_init(config, data, path, problems)
        return config, problems
    except SpecError as exc:
        problems.extend(exc.problems)
    except ValidationError as exc:
        problems.extend(validation_problems(exc, data, path, ProjectConfig))
    return ProjectConfig.model_construct(), problems


def _check_secrets(config: ProjectConfig, data: Any, path: Path, problems: list[Problem]) -> None:
    """A password written into mcpgen.yaml is a warning; the message never repeats it."""
    if not data or "connections" not in data:  # the default connection: nothing written, no password
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


def connection_where(
    config_path: Path | None, name: str, setting: tuple[str, ...] = ()
) -> tuple[int | None, int | None]:
    """(line, col) in mcpgen.yaml of connection `name`'s `setting` (keys under it, as a SettingError
    names them), else of the deepest of those keys it has, else of the connection; (None, None) unknown."""
    if config_path is None:
        return None, None
    try:
        node = load_yaml(config_path.read_text(encoding="utf-8"), str(config_path))["connections"]
    except Exception:  # not readable now: the error is said without a place
        return None, None
    where: tuple[int | None, int | None] = (None, None)
    for key in (name, *setting):
        if not isinstance(node, Located) or key not in node:
            break
        where, node = node.where(key), node[key]
    return where


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
    """Load and statically check one spec file; add what is wrong to `problems`. An unchanged file
    of an unchanged project comes from the cache of checked specs (`checked`), problems and all."""
    text = read_text(path, problems)
    if text is None:
        return None
    root = root or path.parent.parent.resolve()
    name = checked.key(str(path), root, text, config)
    found = checked.get(name)
    if found is not None:
        problems += found[1]
        return found[0]
    before = len(problems)
    data, loaded = _check(path, text, config, problems, root)
    if loaded is not None:
        loaded.digest = name
    checked.put(name, loaded, problems[before:], data, root, path)
    return loaded


def _check(
    path: Path, text: str, config: ProjectConfig, problems: list[Problem], root: Path
) -> tuple[Any, LoadedSpec | None]:
    """(the spec file's YAML, the spec if it has no error) of `text`, read from `path`."""
    data = mapping_of(
        text, str(path), problems, "a spec must be a YAML mapping of fields (name, description, sql, ...)"
    )
    if data is None:
        return None, None
    before = len(problems)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        problems.extend(validation_problems(exc, data, path))
        recovered = _without_broken_extras(exc, data)  # so the other checks still run and report too
        if recovered is None:
            return data, None
        spec, data = recovered
    from .spec_checks import check_spec  # here: a project whose specs are all kept loads no SQL checks

    loaded = LoadedSpec(path, spec, spec.name or path.stem, "", data)
    check_spec(loaded, config, problems, root)
    errors = [p for p in problems[before:] if p.severity == "error"]
    # kept when its one error waits for the database's column types (`learn_column_types`)
    return data, loaded if all(e in loaded.untyped for e in errors) else None


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
    renamed = {loc[0]: meant[0] for loc, meant in typos(errors, Spec).items() if len(loc) == 1}
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


def check_unique_names(specs: list, problems: list[Problem]) -> None:
    """A problem for each spec whose tool name an earlier one has (the SQL checks are not loaded for it)."""
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
