"""Which spec file defines which tool, kept between runs, so that `mcpgen call NAME` reads the one
spec file that defines NAME and no other.

What reading the whole project found is recorded (`record`): the tool name of each spec file (None
for a file too broken to name one), and every problem at file:line:col. It is kept in the cache
folder (`cachefile.cache_file`: one file per project folder, as spelled and as resolved,
and per version of mcpgen's code), with the state (size, time, inode) of every file that reading
the project reads: mcpgen.yaml, the spec, prompt and Python files of the folder. `defining` answers
from it only while every one of those files is as recorded and no file came or went; otherwise
(and when the cache is off) the caller reads the whole project again, and records it.

The versions of pydantic, sqlglot and DuckDB are not part of that state: after an upgrade, the
problems recorded for the *other* spec files (which `call` prints as warnings) may be stale until
the project is read whole again; the spec that is called is always loaded and checked as usual.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import cachefile
from ..errors import Problem
from . import project
from .discovery import find_config, prompt_paths, python_paths, spec_paths
from .specs import LoadedProject

_FORMAT = "tools-index 1"


def defines(names: dict[str, str | None], tool: str) -> Callable[[str], bool]:
    """Whether a spec file defines TOOL: by its name, or, for a file too broken to name one
    (`names` maps it to None, or lacks it), by its stem."""
    named = {path for path, name in names.items() if name == tool}
    return lambda path: path in named or (Path(path).stem == tool and names.get(path) is None)


def load_whole(specs_dir: Path) -> LoadedProject:
    """`load_project(specs_dir)`, recorded for the next `defining` (raises SpecError as it does)."""
    states = _states(specs_dir)  # before reading: a file edited meanwhile makes the record stale
    loaded = project.load_project(specs_dir)
    record(loaded, states)
    return loaded


def load_defining(specs_dir: Path, tool: str) -> LoadedProject | None:
    """The project with only the spec that defines TOOL read, and no Python file, or, for a tool
    that the folder's Python files define, no spec at all and those files (`defining`); the other
    files' errors in `left_out`. None when the record cannot tell: read the whole project."""
    found = defining(specs_dir, tool)
    if found is None:
        return None
    path, left_out = found
    loaded = project.load_project(specs_dir, [path] if path is not None else [], unique_names=False)
    if path is not None:
        loaded.python_files = []
    loaded.left_out = left_out
    return loaded


def record_python_tools(specs_dir: Path, names: list[str]) -> None:
    """Add the tools that the folder's Python files registered when they ran to its record, while
    it is current: the next call of one of them imports those files and reads no spec."""
    entry, where = _read(specs_dir), _index_file(specs_dir)
    if entry is None or where is None:
        return
    entry["python_tools"] = sorted(names)
    _write(entry, where)


def record(loaded: LoadedProject, states: dict[str, list[int] | None] | None = None) -> None:
    """Keep which file of the whole project `loaded` defines which tool, and what reading it found
    (`states`: of its files when it was read; default: now)."""
    where = _index_file(loaded.specs_dir)
    if where is None:
        return
    names: dict[str, str | None] = {str(p): None for p in spec_paths(loaded.specs_dir)}
    names.update({str(s.path): s.name for s in loaded.specs})
    problems = [[p.path, p.line, p.col, p.message, p.severity] for p in loaded.problems]
    entry = {"format": _FORMAT, "files": states or _states(loaded.specs_dir), "names": names, "problems": problems}
    _write(entry, where)


def _write(entry: dict, where: Path) -> None:
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entry, out)
        os.replace(tmp, where)
    except (OSError, ValueError):  # a read-only or full disk: the next call reads the whole project
        return


def defining(specs_dir: Path, tool: str) -> tuple[Path | None, list[Problem]] | None:
    """(the one spec file that defines TOOL, the errors of the other files that `call` leaves out)
    when the record is current and says that exactly one file defines TOOL and that nothing else
    stops a call of it; the file is None when no spec defines TOOL and the folder's Python files
    did when they last ran. None: read the whole project."""
    entry = _read(specs_dir)
    if entry is None:
        return None
    names: dict[str, str | None] = entry["names"]
    mine = [path for path, name in names.items() if name == tool]
    python = not mine and tool in entry.get("python_tools", [])
    if len(mine) != 1 and not python:
        return None
    # as `call` of the whole project: TOOL's file, or a file too broken to name a tool, by its stem
    needed = defines({mine[0]: tool} if mine else {}, tool)
    files = set(names) | {str(p) for p in prompt_paths(specs_dir)}
    left_out = []
    for path, line, col, message, severity in entry["problems"]:
        if severity != "error":
            continue
        if path not in files or needed(path):  # mcpgen.yaml's, the folder's or TOOL's own: read it all
            return None
        left_out.append(Problem(path, line, col, message, severity))
    return (Path(mine[0]) if mine else None), left_out


def _index_file(specs_dir: Path) -> Path | None:
    return cachefile.cache_file("tools", ".json", str(specs_dir), specs_dir.resolve())


def _read(specs_dir: Path) -> dict | None:
    """The record of `specs_dir` while its files are as recorded (None: none, stale or unreadable)."""
    where = _index_file(specs_dir)
    if where is None:
        return None
    try:
        entry = json.loads(where.read_text(encoding="utf-8"))
        if entry.get("format") != _FORMAT or entry.get("files") != _states(specs_dir):
            return None
        if not isinstance(entry["names"], dict) or not isinstance(entry["problems"], list):
            return None
        if not isinstance(entry.get("python_tools", []), list):
            return None
    except (OSError, ValueError, KeyError, AttributeError):  # missing, corrupt or foreign
        return None
    return entry


def _states(specs_dir: Path) -> dict[str, list[int] | None]:
    """The state of each file reading the project reads, by path (None: mcpgen.yaml is missing)."""
    config = find_config(specs_dir)
    paths = [*spec_paths(specs_dir), *prompt_paths(specs_dir), *python_paths(specs_dir)]
    states: dict[str, list[int] | None] = {f"config {config}": _state(config) if config else None}
    states.update({str(p): _state(p) for p in paths})
    return states


def _state(path: Path) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ino]
