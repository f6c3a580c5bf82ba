"""The validate report's forms: text, grouped, JSON and GitHub workflow annotations."""

import json

import pytest

from mcpgen.commands.reports import FORMATS, format_github, format_grouped, format_json, format_text
from mcpgen.commands.validate import Report
from mcpgen.errors import Problem


def report(*problems, **kw) -> Report:
    return Report("specs", 2, list(problems), seconds=0.5, **kw)


def test_github_escapes_what_would_end_or_split_a_workflow_command():
    """A message may hold `%`, newlines and carriage returns; a path `,` and `:` (GitHub's property separators)."""
    problem = Problem("specs/team,a:b.yaml", 3, 7, "50% of\nthe rows\r, and %0A as text")
    lines = format_github(report(problem, notes=["100% sure\nreally"])).splitlines()
    assert lines[0] == "::error file=specs/team%2Ca%3Ab.yaml,line=3,col=7::50%25 of%0Athe rows%0D, and %250A as text"
    assert lines[1] == "::notice::100%25 sure%0Areally"
    assert lines[2] == "2 spec files checked (static): 1 error, 0 warnings in 0.50 s"


def test_github_warnings_fail_as_errors_under_strict_and_a_line_without_position():
    warning = Problem("mcpgen.yaml", None, None, "odd", "warning")
    assert format_github(report(warning)).splitlines()[0] == "::warning file=mcpgen.yaml::odd"
    assert format_github(report(warning), strict=True).splitlines()[0] == "::error file=mcpgen.yaml::odd"


def test_text_is_one_line_per_problem_then_notes_and_the_summary():
    text = format_text(
        report(Problem("a.yaml", 2, 3, "bad"), Problem("b.yaml", None, None, "meh", "warning"), notes=["n"])
    )
    assert text.splitlines() == [
        "a.yaml:2:3: error: bad",
        "b.yaml: warning: meh",
        "",
        "note: n",
        "✗ 2 spec files checked (static): 1 error, 1 warning in 0.50 s",
    ]
    assert "\x1b[" in format_text(report(Problem("a.yaml", 1, 1, "x")), color=True)


def test_grouped_puts_problems_under_their_file():
    text = format_grouped(report(Problem("a.yaml", 2, None, "one"), Problem("a.yaml", None, None, "two", "warning")))
    assert text.splitlines()[:3] == ["a.yaml", "      2:1  error    one", "        -  warning  two"]


def test_json_is_the_documented_machine_form():
    data = json.loads(
        format_json(report(Problem("a.yaml", 1, 2, "x", "warning"), connections={"default": "ok"}), strict=True)
    )
    assert data == {
        "version": 1,
        "specs_dir": "specs",
        "live": False,
        "strict": True,
        "files": 2,
        "errors": 0,
        "warnings": 1,
        "ok": False,
        "exit_code": 1,
        "connections": {"default": "ok"},
        "notes": [],
        "problems": [{"file": "a.yaml", "line": 1, "column": 2, "severity": "warning", "message": "x"}],
    }


@pytest.mark.parametrize(
    ("connections", "live", "mode"),
    [
        ({}, False, "static"),
        ({"default": "ok"}, False, "static and columns"),
        ({"wh": "not checked"}, False, "static; columns not checked: run --live"),
        ({"default": "ok", "wh": "not checked"}, False, "static and columns; columns not checked on wh: run --live"),
        ({"wh": "ok"}, True, "static and live"),
    ],
)
def test_the_summary_says_what_was_checked(connections, live, mode):
    assert f"checked ({mode}):" in format_github(report(connections=connections, live=live))
    assert sorted(FORMATS) == ["github", "grouped", "json", "text"]
