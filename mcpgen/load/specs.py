"""What loading gives: a spec that passed the static checks, and a whole project.

>>> from mcpgen.load.project import load_project
>>> project = load_project("specs")
>>> sorted(s.name for s in project.specs)[:2], project.errors
(['busiest_routes', 'carrier_performance'], [])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Findings, Problem, SpecError
from ..spec.config import ProjectConfig
from ..spec.models import Spec
from ..spec.yamlload import Located
from ..templates.render import Template


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
    translated: bool = False  # `sql` is the spec's SQL translated to its connection's dialect
    icons: list[dict] | None = None  # `icons:` in wire form, files inlined (None: the project's)
    completions: dict[str, str] = field(default_factory=dict)  # parameter -> its `complete:` SQL, checked
    count_sql: str | None = None  # `confirm.when_rows_over`: the query counted (mcpgen.sql.counts), checked
    digest: str | None = None  # names everything its checks read (`load.checked`); None: not from a file
    # The problems of SQL whose translation waits for the database's columns (`NeedsColumnTypes`, an error;
    # each select alias translated as no table's column, a warning): `learn_column_types` checks them again.
    untyped: tuple[Problem, ...] = ()

    def where(self, key: str) -> tuple[int | None, int | None]:
        return self.data.where(key)

    def sql_problem(self, message: str, position: tuple[int, int] | None = None, severity: str = "error") -> Problem:
        """A problem in the spec's SQL at `position`, (line, col) inside the SQL as written if known: that spot
        of the `sql:` text, or `sql_file:` with the file's own path:line:col starting the sentence; else the
        key. (A position in `sql` once `translated` is none in what the spec says: leave it out.)"""
        key = "sql" if self.spec.sql is not None else "sql_file"
        if position is not None and key == "sql":
            return Problem(str(self.path), *self.data.at(key, *position), message, severity)
        if position is not None:
            message = f"{self.path.parent / str(self.spec.sql_file)}:{position[0]}:{position[1]}: {message}"
        return Problem(str(self.path), *self.data.where(key), message, severity)

    def forget_positions(self) -> None:
        """Let go of the raw mapping the spec was read from (`data`: about half of what a loaded spec holds,
        kept only to say where in the file a key is). What asks later gets no line and column."""
        self.__dict__.pop("_read_positions", None)
        self.data = NO_POSITIONS

    def positions_later(self, read: Callable[[], Located]) -> None:
        """`data` made by `read()` when first asked for (the cache of checked specs keeps it apart: a warm
        start that finds no error never reads it)."""
        self.__dict__.pop("data", None)
        self.__dict__["_read_positions"] = read

    if not TYPE_CHECKING:  # hidden from mypy, which would take any attribute for one

        def __getattr__(self, name: str) -> Any:
            read = self.__dict__.get("_read_positions")
            if name != "data" or read is None:
                raise AttributeError(name)
            self.data = read()
            del self.__dict__["_read_positions"]
            return self.data


NO_POSITIONS = Located()  # a spec's `data` once its positions are forgotten: `where` answers (None, None)
NO_POSITIONS.lines = {}


@dataclass
class LoadedProject(Findings):
    specs_dir: Path
    root: Path  # paths in SQL are relative to this folder
    config: ProjectConfig
    config_path: Path | None
    specs: list[LoadedSpec]
    python_files: list[Path]
    problems: list[Problem]
    # The errors of the specs that `open_project(needed=...)` left out (no longer in `problems`).
    left_out: list[Problem] = field(default_factory=list)
    icons: list[dict] = field(default_factory=list)  # mcpgen.yaml's icons in wire form
    prompts: list = field(default_factory=list)  # mcpgen.load.prompts.LoadedPrompt, checked

    def raise_errors(self) -> None:
        if self.errors:
            raise SpecError(self.errors)
