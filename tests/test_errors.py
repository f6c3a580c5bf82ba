"""The named exceptions and problems: one sentence each, with file:line:col where known."""

import pytest

from mcpgen.errors import (
    ArgumentError,
    Findings,
    MCPGenError,
    Problem,
    QueryError,
    QueryTimeout,
    RenderError,
    SpecError,
    UnsafeSQL,
)


@pytest.mark.parametrize(
    ("problem", "shown"),
    [
        (Problem("a.yaml", 3, 5, "unknown key 'x'"), "a.yaml:3:5: unknown key 'x'"),
        (Problem("a.yaml", 3, None, "bad"), "a.yaml:3: bad"),
        (Problem("a.yaml", None, 5, "bad"), "a.yaml: bad"),  # a column without its line says nothing
        (Problem("a.yaml", 1, 1, "odd", "warning"), "a.yaml:1:1: warning: odd"),
    ],
)
def test_a_problem_reads_as_compilers_print_them(problem, shown):
    assert str(problem) == shown


def test_findings_split_errors_from_warnings():
    class Report(Findings):
        def __init__(self, problems):
            self.problems = problems

    error, warning = Problem("a", 1, 1, "e"), Problem("a", 2, 1, "w", "warning")
    report = Report([warning, error])
    assert report.errors == [error] and report.warnings == [warning]


def test_spec_error_lists_every_problem_one_per_line():
    problems = [Problem("a.yaml", 1, 1, "first"), Problem("b.yaml", 2, 3, "second")]
    error = SpecError(problems)
    assert error.problems == problems
    assert str(error) == "a.yaml:1:1: first\nb.yaml:2:3: second"


def test_every_error_is_an_mcpgen_error_and_timeouts_are_query_errors():
    for kind in (ArgumentError, QueryError, RenderError, SpecError, UnsafeSQL):
        assert issubclass(kind, MCPGenError)
    assert issubclass(QueryTimeout, QueryError)
    assert QueryError("x").position is None


def test_unsafe_sql_keeps_where_it_points():
    error = UnsafeSQL("the query must only read, but it contains DELETE", line=2, col=7)
    assert (str(error), error.line, error.col) == ("the query must only read, but it contains DELETE", 2, 7)
    assert (UnsafeSQL("x").line, UnsafeSQL("x").col) == (None, None)
