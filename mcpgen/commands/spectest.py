"""`mcpgen test`: run the `tests:` of every spec against the real connections.

Each test calls its tool through the registry, exactly as a client would, and checks
the expectations:

* `row_count`, `min_rows`: the number of result rows (after the `max_rows` cap);
* `rows`: the exact list of rows, in order, as dicts of column -> value;
* `first_row`: the first row has at least these columns with these values;
* `content_contains`: each string is in the prose;
* `error_contains`: the call is an error and its text contains each string.

Rows are the query's result rows with every column (not only those `table:` shows,
and also when `table: false`), each value as in `structuredContent` (dates as ISO
strings, decimals as numbers). A tool that is not a spec is checked against its table.

>>> check_expectations(Expect(row_count=1, content_contains=["Tokyo"]),
...                    Outcome(False, "Tokyo is big.", [{"city": "Tokyo"}]))
[]
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problem
from ..spec.models import Expect
from ..text import plural


@dataclass
class Outcome:
    """What one call gave back: error or not, the prose, and the rows as dicts."""

    is_error: bool
    text: str
    rows: list[dict[str, Any]] | None


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class

    tool: str
    label: str  # the test's name, or its index
    reasons: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.reasons

    def line(self) -> str:
        head = f"{self.tool}[{self.label}]"
        return f"PASS {head}" if self.passed else f"FAIL {head}: {'; '.join(self.reasons)}"


class _Recorder:
    """Wraps an engine for the length of a test run and keeps the last result it returned."""

    def __init__(self, engine: Any):
        self._engine = engine
        self.last = None

    def run(self, *args, **kwargs):
        self.last = None
        self.last = self._engine.run(*args, **kwargs)
        return self.last

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def run_tests(
    specs_dir: str | Path, select: str | None = None, warn: Callable[[Problem], None] | None = None
) -> list[TestResult]:
    """Run every spec test whose tool name or test name contains `select` (all when None).

    With `select`, only the specs it picks need to load: another spec's error is a warning, given to
    `warn`, and that spec is left out. Raises SpecError when the project does not load."""
    from ..identity import local_user
    from ..load.project import load_project
    from ..serve.project import left_out_warning, open_project

    cwd = os.getcwd()
    read = load_project(specs_dir)
    needed = _selected(read, select) if select else None
    project = open_project(specs_dir, loaded=read, needed=needed)  # changes to the project root
    for problem in project.loaded.left_out:
        if warn is not None:
            warn(left_out_warning(problem))
    results: list[TestResult] = []
    try:
        for loaded in project.loaded.specs:
            for index, test in enumerate(loaded.spec.tests):
                label = test.name or str(index)
                if select and select not in loaded.name and select not in (test.name or ""):
                    continue
                tool = project.registry.get(loaded.name)
                with local_user(project.loaded.config.stdio_claims):  # claims for from_claim parameters
                    outcome = _call(project.registry, tool, test.args)
                results.append(TestResult(loaded.name, label, check_expectations(test.expect, outcome)))
    finally:
        project.close()
        os.chdir(cwd)
    return results


def _selected(loaded: Any, select: str) -> Callable[[str], bool]:
    """Whether `test -k select` runs a spec file's tests (a file too broken to read: by its stem)."""
    picked = {
        str(s.path) for s in loaded.specs if select in s.name or any(select in (t.name or "") for t in s.spec.tests)
    }
    read = {str(s.path) for s in loaded.specs}
    return lambda path: path in picked or (path not in read and select in Path(path).stem)


def _call(registry: Any, tool: Any, args: dict[str, Any]) -> Outcome:
    from ..answer.results import to_cell

    handler = tool.handler
    recorder = None
    if hasattr(handler, "engine") and hasattr(handler, "query"):
        recorder = _Recorder(handler.engine)
        handler.engine = recorder
    try:
        result = registry.call_sync(tool.name, dict(args))
    finally:
        if recorder is not None:
            handler.engine = recorder._engine
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    rows = None
    if recorder is not None and recorder.last is not None:
        columns = recorder.last.columns
        rows = [dict(zip(columns, (to_cell(v) for v in row))) for row in recorder.last.rows]
    elif result.structured_content and result.structured_content.get("table"):
        header, *body = result.structured_content["table"]
        rows = [dict(zip(header, row)) for row in body]
    return Outcome(bool(result.is_error), text, rows)


def check_expectations(expect: Expect, outcome: Outcome) -> list[str]:
    """Every way `outcome` misses `expect`, as short reasons; empty when it passes."""
    if expect.error_contains is not None:
        return _error_reasons(expect.error_contains, outcome)
    if outcome.is_error:
        return [f"the call failed: {_short(outcome.text)}"]
    rows = outcome.rows
    if rows is None:
        if any(v is not None for v in (expect.row_count, expect.min_rows, expect.rows, expect.first_row)):
            return ["the result has no rows to check (no table)"]
        rows = []  # no row expectation to check
    reasons = _count_reasons(expect, rows) + _row_reasons(expect, rows)
    return reasons + [
        f"the prose does not contain {t!r}" for t in expect.content_contains or [] if t not in outcome.text
    ]


def _error_reasons(error_contains: str | list[str], outcome: Outcome) -> list[str]:
    wanted = [error_contains] if isinstance(error_contains, str) else error_contains
    if not outcome.is_error:
        return [f"expected an error containing {', '.join(map(repr, wanted))}, but the call succeeded"]
    return [
        f"the error does not contain {w!r} (it says: {_short(outcome.text)})" for w in wanted if w not in outcome.text
    ]


def _count_reasons(expect: Expect, rows: list[dict]) -> list[str]:
    reasons = []
    if expect.row_count is not None and len(rows) != expect.row_count:
        reasons.append(f"expected {plural(expect.row_count, 'row')}, got {len(rows)}")
    if expect.min_rows is not None and len(rows) < expect.min_rows:
        reasons.append(f"expected at least {plural(expect.min_rows, 'row')}, got {len(rows)}")
    return reasons


def _row_reasons(expect: Expect, rows: list[dict]) -> list[str]:
    reasons = []
    if expect.rows is not None:
        if len(rows) != len(expect.rows):
            reasons.append(f"expected {plural(len(expect.rows), 'row')}, got {len(rows)}")
        for i, (want, got) in enumerate(zip(expect.rows, rows)):
            if not _same(want, got, exact=True):
                reasons.append(f"row {i + 1}: expected {_show(want)}, got {_show(got)}")
                break
    if expect.first_row is not None:
        if not rows:
            reasons.append("expected a first row, got no rows")
        elif not _same(expect.first_row, rows[0], exact=False):
            diff = {k: rows[0].get(k, "<missing>") for k in expect.first_row}
            reasons.append(f"first row: expected {_show(expect.first_row)}, got {_show(diff)}")
    return reasons


def _same(want: dict, got: dict, exact: bool) -> bool:
    if exact and set(want) != set(got):
        return False
    return all(k in got and _equal(v, got[k]) for k, v in want.items())


def _equal(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return want == got or abs(want - got) <= 1e-9 * max(abs(want), abs(got))
    return want == got


def _show(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in row.items()) + "}"


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(results: list[TestResult], select: str | None = None) -> str:
    """The last line of `mcpgen test`; when nothing ran, why."""
    if not results:
        return f"no test ran: no tool or test name contains {select!r}" if select else "no test ran: no spec has tests:"
    passed = sum(r.passed for r in results)
    return f"{passed} passed, {len(results) - passed} failed"
