"""Small named exceptions. Each carries one sentence meant for a person.

>>> str(Problem("specs/a.yaml", 3, 5, "unknown key 'titel'"))
"specs/a.yaml:3:5: unknown key 'titel'"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class MCPGenError(Exception):
    """Base class: the message is one clear sentence, safe to show a user."""


@dataclass(frozen=True)
class Problem:
    """One finding in a spec or project file: an error, or a warning with severity="warning"."""

    path: str
    line: int | None
    col: int | None
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{where}: {prefix}{self.message}"


class Findings:
    """Mixin for whatever holds `problems`: split into errors and warnings."""

    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


class SpecError(MCPGenError):
    """One or more errors in spec or project files."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class Near(NamedTuple):
    """What a database's error points at: the sent text from its token on (`whole`: to the end of the
    spec's statement; else cut short), and the line of the spec's statement it is on (None: not known)."""

    text: str
    line: int | None
    whole: bool


class ArgumentError(MCPGenError):
    """A tool argument broke the tool's input schema."""


class QueryError(MCPGenError):
    """The query failed on the database; `position`: the (line, col) in the SQL it points at, if known;
    `near`: what it points at in the statement as sent, if the database said (`mcpgen.sql.places`)."""

    position: tuple[int, int] | None = None
    near: Near | None = None


class SettingError(QueryError):
    """A connection's setting its driver cannot take; `setting`: the keys that lead to it under the
    connection in mcpgen.yaml (("connect_args", "ssl", "ca"), ("url",)), to say where it is."""

    def __init__(self, message: str, setting: tuple[str, ...] = ()):
        super().__init__(message)
        self.setting = setting


class QueryTimeout(QueryError):
    """The query ran past its time limit and was cancelled."""


class QueryCancelled(QueryError):
    """The client cancelled the call while its query ran; the engine stopped the query."""


class RenderError(MCPGenError):
    """A template failed while rendering a result; `line`: the template's line that failed, if known;
    `place`: where the template is (`specs/x.yaml:14: content`), which then starts the message."""

    def __init__(self, message: str, line: int | None = None, place: str | None = None):
        super().__init__(f"{place}: {message}" if place else message)
        self.line, self.place = line, place


class UnsafeSQL(MCPGenError):
    """A statement is not exactly one read-only query; `line` and `col` in the SQL where it points, if known."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.line, self.col = line, col

    @property
    def position(self) -> tuple[int, int] | None:
        """(line, col) as `QueryError.position` says it (None: not known)."""
        return (self.line, self.col or 1) if self.line else None
