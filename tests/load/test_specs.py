"""What loading gives: a spec with its line numbers, and a project that raises only on errors."""

from pathlib import Path

import pytest

from mcpgen.errors import Problem, SpecError
from mcpgen.load.project import load_project
from mcpgen.load.specs import LoadedProject

REPO = Path(__file__).resolve().parents[2]


def test_a_loaded_spec_knows_where_each_key_is_written():
    project = load_project(REPO / "specs")
    spec = next(s for s in project.specs if s.name == "top_cities")
    assert spec.where("sql")[0] == spec.data.where("sql")[0] > 1
    assert spec.dialect == "duckdb" and "SELECT" in spec.sql
    assert set(spec.templates) >= {"content", "sources[0]"}


def test_a_project_raises_on_errors_and_not_on_warnings(tmp_path):
    warning = Problem("a.yaml", 1, 1, "odd", "warning")
    project = LoadedProject(tmp_path, tmp_path, None, None, [], [], [warning])
    project.raise_errors()
    error = Problem("a.yaml", 2, 1, "bad")
    project.problems.append(error)
    with pytest.raises(SpecError) as err:
        project.raise_errors()
    assert err.value.problems == [error]
