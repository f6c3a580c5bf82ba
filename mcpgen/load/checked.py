"""Checked specs kept between runs: what loading one spec file found (the spec with its templates,
or nothing, and every problem at file:line:col), so that restarting an unchanged project neither
parses nor checks its specs again.

An entry lives in the project's cache file (`cachefile`, whose header holds the versions
of mcpgen, Jinja2, Python and sqlglot) under the sha256 of everything the checks read: the spec
file's text and its path as shown, the project folder, mcpgen.yaml as loaded, and the versions of
pydantic and (with a DuckDB connection, whose function catalogue the checks read) DuckDB. A
`sql_file` is read again on every load and its sha256 compared with the one the entry recorded. A
spec whose checks read other files (icons beside it, a parameter whose enum names the files a
query reads) is checked on every load: it is never kept.

mcpgen.yaml itself is kept the same way (`config_key`, `get_config`, `put_config`): the config as
loaded and its problems, under the sha256 of its text and path and the pydantic version, so that
loading an unchanged project builds none of the config's validators.

Serving and validating keep one more fact per spec: that its query, on its DuckDB connection, was
prepared and described without an error, with the warnings that found and the statement preparing
made (`described_key`, `described`, `keep_described`), and that validate described a project's
queries in a state of its data (`state_key`: it then reads them all here rather than in workers).
The statement is the verdict of the checks preparing runs (one read-only query, only the functions
DuckDB's catalogue allows) with the text DuckDB runs: a call of a kept spec uses it and runs no check
that needs sqlglot. That entry is named by the sha256 of the spec as checked, its SQL and dialect,
the functions the checks allow, mcpgen.yaml, the versions and the state of the data (`data_state`:
the name, size, time and inode of every visible file in the project folder, which is all a DuckDB
connection may read, and of each DuckDB database file): any file that changes, appears or goes makes
every query described again. The entry also holds the SQL it was made from, compared when it is read.

Every entry is signed in the cache file (`cachefile`): one damaged or edited in any part, the
positions included, is checked again from scratch, never trusted. Reading an entry builds mcpgen's
own spec classes, prepared statements, Jinja's nodes, YAML's mappings, paths and plain values only;
an entry that cannot be read is checked again, as if there were none. The spec's YAML with its
positions is kept apart in the entry and read only when something asks where a key is (placing an
error): a warm start that finds none never reads it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import os
import pickle
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pydantic
from jinja2 import nodes

from .. import cachefile
from ..checks import HARMLESS_SIDE_EFFECTS, TABLE_FUNCTIONS, reads_files
from ..engines.protocol import Prepared
from ..errors import Problem
from ..spec import config as project_models
from ..spec import models, yamlload
from ..spec.config import DuckDBConnection, ProjectConfig
from ..templates.render import PROSE, URL, Template
from .specs import LoadedSpec

_ENVS = {"prose": PROSE, "url": URL}
_FORMAT = "checked-spec 3"


def key(shown: str, root: Path, text: str, config: ProjectConfig) -> str:
    """The name of the entry for a spec file with this text, path and project."""
    digest = hashlib.sha256(_project(config).encode())
    digest.update("\0".join((shown, str(root), text)).encode())
    return "checked:" + digest.hexdigest()


_LAST: list[Any] = []  # the last project's config and its text: every spec of a project shares them


def _project(config: ProjectConfig) -> str:
    """What the checks of every spec read besides the spec: mcpgen.yaml as loaded and the versions."""
    if _LAST and _LAST[0] is config:
        return _LAST[1]
    parts = [_FORMAT, repr(config), pydantic.VERSION]
    if any(isinstance(c, DuckDBConnection) for c in config.connections.values()):
        import duckdb  # the checks read its function catalogue (loaded for them anyway)

        parts.append(duckdb.__version__)
    _LAST[:] = [config, "\0".join(parts)]
    return _LAST[1]


def get(name: str) -> tuple[LoadedSpec | None, list[Problem]] | None:
    """(the loaded spec or None, the problems) kept under `name`, when its files are unchanged."""
    data = cachefile.get(name)
    if data is None:
        return None
    try:
        files, loaded, positions, problems = _Unpickler(io.BytesIO(data)).load()
    except Exception:  # foreign, corrupt or from classes that changed: checked again
        return None
    if not (loaded is None or isinstance(loaded, LoadedSpec)) or not all(isinstance(p, Problem) for p in problems):
        return None
    if loaded is not None and not isinstance(positions, bytes):
        return None
    if any(_digest(Path(path)) != digest for path, digest in files):
        return None
    if loaded is not None:
        loaded.positions_later(functools.partial(_positions, positions))
    return loaded, problems


def _positions(data: bytes) -> yamlload.Located:
    """A spec's YAML with the positions of its keys, kept apart in its entry: the entry was read whole
    and its signature matched, so these are the very bytes `put` pickled."""
    return _Unpickler(io.BytesIO(data)).load()


def put(name: str, loaded: LoadedSpec | None, problems: list[Problem], data: Any, root: Path, path: Path) -> None:
    """Keep what checking a spec found, unless its checks read files the entry cannot follow."""
    if isinstance(data, yamlload.Located) and data.get("icons") is not None:
        return
    if loaded is not None and any(p.enum for p in loaded.spec.parameters.values()) and reads_files(loaded.sql):
        return
    sql_file = data.get("sql_file") if isinstance(data, yamlload.Located) else None
    files = [(str(path.parent / sql_file), _digest(path.parent / sql_file))] if isinstance(sql_file, str) else []
    try:
        positions = _pickled(loaded.data) if loaded is not None else None
        if loaded is not None:  # the positions apart, read only by what asks where a key is
            loaded = copy.copy(loaded)
            del loaded.data
        cachefile.put(name, _pickled((files, loaded, positions, problems)))
    except Exception:  # something in it cannot be kept: it is checked on every load
        return


def config_key(shown: str, text: str) -> str:
    """The name of the entry for mcpgen.yaml with this text and path (as its problems show it). Its
    checks read nothing else: `${VAR}` is read from the environment when a connection opens, not here."""
    parts = (_FORMAT, pydantic.VERSION, shown, text)
    return "config:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def get_config(name: str) -> tuple[ProjectConfig, list[Problem]] | None:
    """(mcpgen.yaml as loaded, its problems) kept under `name` (None: not kept, or not readable)."""
    data = cachefile.get(name)
    if data is None:
        return None
    try:
        config, problems = _Unpickler(io.BytesIO(data)).load()
    except Exception:  # foreign, corrupt or from classes that changed: checked again
        return None
    if not isinstance(config, ProjectConfig) or not all(isinstance(p, Problem) for p in problems):
        return None
    return config, problems


def put_config(name: str, config: ProjectConfig, problems: list[Problem]) -> None:
    """Keep mcpgen.yaml as loaded with what checking it found."""
    try:
        cachefile.put(name, _pickled((config, problems)))
    except Exception:  # something in it cannot be kept: it is checked on every load
        return


def _pickled(value: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer).dump(value)
    return buffer.getvalue()


def data_state(root: Path, config: ProjectConfig) -> str | None:
    """The state of every file a DuckDB connection of the project may read (None: too many to tell)."""
    from ..engines.file_reach import MAX_ENTRIES

    skip = cachefile.cache_dir()
    skip_text = str(skip.resolve()) if skip is not None else None
    digest = hashlib.sha256()
    seen = 0
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and os.path.join(folder, d) != skip_text)
        seen += len(subfolders) + len(files)
        if seen > MAX_ENTRIES:
            return None
        for name in sorted(f for f in files if not f.startswith(".")):
            digest.update(_stat(os.path.join(folder, name)).encode())
    for connection in config.connections.values():
        if isinstance(connection, DuckDBConnection) and connection.duckdb != ":memory:":
            digest.update(_stat(str(root / connection.duckdb)).encode())
    return digest.hexdigest()


def _stat(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return f"{path} missing\n"
    return f"{path} {info.st_size} {info.st_mtime_ns} {info.st_ino}\n"


def state_key(state: str) -> str:
    """The name of the fact that the queries of a project were described in this state of its data."""
    return "state:" + state


def described_in(root: Path, specs_dir: Path, config: ProjectConfig) -> bool:
    """Whether the queries of the project were described in the current state of its data."""
    state = data_state(root, config)
    return state is not None and state_key(state) in cachefile.kept(root, specs_dir, "described")


_ALLOWED = "\0".join(sorted(TABLE_FUNCTIONS)) + "\0\0" + "\0".join(sorted(HARMLESS_SIDE_EFFECTS))


def described_key(loaded: LoadedSpec, state: str) -> str | None:
    """The name of the fact that this spec's query was prepared and described without an error
    (None for a spec not read from a file as checked: nothing is kept)."""
    if loaded.digest is None:
        return None
    parts = (loaded.digest, state, loaded.sql, str(loaded.dialect), _ALLOWED)
    return "described:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def described(name: str, sql: str) -> tuple[list[Problem], Prepared] | None:
    """(the warnings describing the query found, the statement preparing it made) when `sql` was
    prepared and described without an error in this very state (None: not kept)."""
    data = cachefile.get(name)
    if data is None:
        return None
    try:
        problems, kept_sql, statement = _Unpickler(io.BytesIO(data)).load()
    except Exception:
        return None
    if kept_sql != sql or not isinstance(statement, Prepared) or not isinstance(problems, list):
        return None
    return (problems, statement) if all(isinstance(p, Problem) for p in problems) else None


def keep_described(name: str, problems: list[Problem], sql: str, statement: Prepared) -> None:
    """Keep what describing a query found, with the statement it described, if it found no error (a
    timeout or an outage may pass)."""
    if not any(p.severity == "error" for p in problems):
        cachefile.put(name, _pickled((problems, sql, statement)))


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class _Pickler(pickle.Pickler):
    """Pickles templates without their environment (PROSE or URL), which the reader puts back."""

    def __init__(self, file: io.BytesIO):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)

    def persistent_id(self, obj: Any) -> str | None:
        return "prose" if obj is PROSE else "url" if obj is URL else None


_CLASSES: dict[tuple[str, str], type] = {
    (c.__module__, c.__qualname__): c
    for c in (
        LoadedSpec,
        Template,
        Problem,
        Prepared,
        yamlload.Located,
        yamlload.LocatedList,
        type(Path()),
        PurePosixPath,
    )
}


class _Unpickler(pickle.Unpickler):
    """Builds the classes of a loaded spec or project only: LoadedSpec, their pydantic models
    (mcpgen.spec.models, mcpgen.spec.config), templates, Jinja's nodes, YAML's positioned containers,
    problems, paths, and the prepared statements of engines (mcpgen.engines.protocol.Prepared and its kinds)."""

    def persistent_load(self, pid: Any) -> Any:
        if pid in _ENVS:
            return _ENVS[pid]
        raise pickle.UnpicklingError("unknown persistent id")

    def find_class(self, module: str, name: str) -> Any:
        found = _CLASSES.get((module, name))
        if found is None:
            found = _CLASSES[module, name] = _allowed(module, name)
        return found


def _allowed(module: str, name: str) -> type:
    if module.startswith("mcpgen.engines."):  # a prepared statement of an engine already running
        statement = getattr(sys.modules.get(module), name, None)
        if isinstance(statement, type) and issubclass(statement, Prepared):
            return statement
    if module in (models.__name__, project_models.__name__):
        model = getattr(sys.modules[module], name, None)
        if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
            return model
    if module == "jinja2.nodes":
        node = getattr(nodes, name, None)
        if isinstance(node, type) and issubclass(node, nodes.Node):
            return node
    raise pickle.UnpicklingError(f"{module}.{name} is not part of a loaded spec")
