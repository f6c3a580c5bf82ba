"""The validate report for people (text: one `path:line:col: severity: message` line per
problem, as compilers print them; or grouped by file), machines (JSON, documented in
docs/validate.md) and GitHub (workflow annotations).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..errors import Problem
from ..text import plural

if TYPE_CHECKING:
    from ..load.specs import LoadedProject
    from .validate import Report


JSON_VERSION = 1


def format_json(report: Report, strict: bool = False) -> str:
    """The stable machine form; see docs/validate.md."""
    return json.dumps(
        {
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
            "notes": report.notes,
            "problems": [
                {"file": p.path, "line": p.line, "column": p.col, "severity": p.severity, "message": p.message}
                for p in report.problems
            ],
        },
        indent=2,
        ensure_ascii=False,
    )


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
    lines.extend(f"::notice::{_gh_escape(note)}" for note in report.notes)
    lines.append(_summary(report, strict))
    return "\n".join(lines)


def format_text(report: Report, strict: bool = False, color: bool = False) -> str:
    """One `path:line:col: severity: message` line per problem (what editors, terminals and CI
    problem matchers read), then a summary line."""
    lines = [_line(p, color) for p in report.problems]
    return "\n".join([*lines, *([""] if lines else []), *_notes(report, color), _styled_summary(report, strict, color)])


def format_grouped(report: Report, strict: bool = False, color: bool = False) -> str:
    """Problems grouped under a header per file, then a summary line."""
    lines: list[str] = []
    by_file: dict[str, list[Problem]] = {}
    for p in report.problems:
        by_file.setdefault(p.path, []).append(p)
    for path, problems in by_file.items():
        lines.append(_style(path, color, bold=True, underline=True))
        for p in problems:
            where = f"{p.line}:{p.col or 1}" if p.line is not None else "-"
            kind = _style(f"{p.severity:<7}", color, fg=_COLOURS[p.severity], bold=True)
            lines.append(f"  {_style(f'{where:>7}', color, dim=True)}  {kind}  {p.message}")
        lines.append("")
    lines.extend(_notes(report, color))
    lines.append(_styled_summary(report, strict, color))
    return "\n".join(lines)


_COLOURS = {"error": "red", "warning": "yellow"}


def _style(text: str, color: bool, **kw) -> str:
    import click

    return click.style(text, **kw) if color else text


def _line(p: Problem, color: bool) -> str:
    """`path:line:col: severity: message`; `path: severity: message` when there is no line."""
    where = p.path + "".join(f":{n}" for n in (p.line, p.col if p.line is not None else None) if n is not None)
    severity = _style(f"{p.severity}:", color, fg=_COLOURS[p.severity], bold=True)
    return f"{_style(where, color, bold=True)}: {severity} {p.message}"


def _notes(report: Report, color: bool) -> list[str]:
    """`note: ...` lines: facts that pass or fail nothing."""
    return [f"{_style('note:', color, bold=True)} {note}" for note in report.notes]


def _styled_summary(report: Report, strict: bool, color: bool) -> str:
    ok = report.exit_code(strict) == 0
    return _style(("✓ " if ok else "✗ ") + _summary(report, strict), color, fg="green" if ok else "red", bold=True)


def _summary(report: Report, strict: bool) -> str:
    e, w = len(report.errors), len(report.warnings)
    return (
        f"{plural(report.files, 'spec file')} checked ({_mode(report)}): {plural(e, 'error')}, {plural(w, 'warning')}"
        f"{' (warnings fail: --strict)' if strict and w else ''} in {report.seconds:.2f} s"
    )


def _mode(report: Report) -> str:
    """What was checked: `static`, `static and columns`, `static and live`, and what was not."""
    if report.live:
        return "static and live"
    unchecked = [name for name, state in report.connections.items() if state == "not checked"]
    checked = [name for name in report.connections if name not in unchecked]
    if not unchecked:
        return "static and columns" if checked else "static"
    if not checked:
        return "static; columns not checked: run --live"
    return f"static and columns; columns not checked on {', '.join(unchecked)}: run --live"


def format_statements(project: LoadedProject) -> str:
    """`validate --show-sql`: per spec, its connection, the dialect and the statement sent there."""
    out = []
    for loaded in project.specs:
        written = loaded.spec.dialect or project.config.dialect
        translated = f", translated from {written}" if loaded.dialect != written else ""
        out.append(
            f"-- {loaded.name} ({loaded.path.name}): connection '{loaded.spec.connection}', {loaded.dialect}{translated}"
        )
        out.append(loaded.sql.strip() + "\n")
    return "\n".join(out)


FORMATS = {"text": format_text, "grouped": format_grouped, "json": format_json, "github": format_github}
