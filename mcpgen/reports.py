"""The validate report for people (text, grouped by file), machines (JSON, documented in
docs/validate.md) and GitHub (workflow annotations).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .errors import Problem

if TYPE_CHECKING:
    from .loading import LoadedProject
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
    """Problems grouped by file, then a summary line."""
    import click

    def style(text: str, **kw) -> str:
        return click.style(text, **kw) if color else text

    lines: list[str] = []
    by_file: dict[str, list[Problem]] = {}
    for p in report.problems:
        by_file.setdefault(p.path, []).append(p)
    for path, problems in by_file.items():
        lines.append(style(path, bold=True, underline=True))
        for p in problems:
            where = f"{p.line}:{p.col or 1}" if p.line is not None else "-"
            kind = style(f"{p.severity:<7}", fg="red" if p.severity == "error" else "yellow", bold=True)
            lines.append(f"  {style(f'{where:>7}', dim=True)}  {kind}  {p.message}")
        lines.append("")
    lines.extend(f"{style('note:', bold=True)} {note}" for note in report.notes)
    summary = _summary(report, strict)
    ok = report.exit_code(strict) == 0
    lines.append(style(("✓ " if ok else "✗ ") + summary, fg="green" if ok else "red", bold=True))
    return "\n".join(lines)


def _summary(report: Report, strict: bool) -> str:
    e, w = len(report.errors), len(report.warnings)
    mode = "static and live" if report.live else "static"
    return (
        f"{report.files} spec file{'s' if report.files != 1 else ''} checked ({mode}): "
        f"{e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"
        f"{' (warnings fail: --strict)' if strict and w else ''} in {report.seconds:.2f} s"
    )


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


FORMATS = {"text": format_text, "json": format_json, "github": format_github}
