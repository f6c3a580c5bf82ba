"""Which files make a project: mcpgen.yaml, the spec files, the Python files `serve` imports."""

import pytest

from mcpgen.errors import SpecError
from mcpgen.load.discovery import find_config, python_paths, spec_paths


@pytest.fixture
def project(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in (
        "b.yaml",
        "a.yml",
        ".hidden.yaml",
        "mcpgen.yaml",
        "notes.txt",
        "tools.py",
        "_private.py",
        ".scratch.py",
    ):
        (specs / name).write_text("")
    (specs / "sub").mkdir()
    (specs / "sub" / "c.yaml").write_text("")
    return specs


def test_spec_files_in_name_order_without_hidden_files_subfolders_or_the_config(project):
    assert [p.name for p in spec_paths(project)] == ["a.yml", "b.yaml"]


def test_python_files_without_private_or_hidden_ones(project):
    assert python_paths(project) == [(project / "tools.py").resolve()]


def test_the_config_is_looked_for_in_the_specs_folder_then_its_parent(tmp_path, project):
    assert find_config(project) == project / "mcpgen.yaml"
    (project / "mcpgen.yaml").unlink()
    assert find_config(project) is None
    (tmp_path / "mcpgen.yaml").write_text("")
    assert find_config(project) == tmp_path / "mcpgen.yaml"


def test_a_missing_folder_is_one_problem(tmp_path):
    with pytest.raises(SpecError) as err:
        spec_paths(tmp_path / "nope")
    assert [str(p) for p in err.value.problems] == [f"{tmp_path / 'nope'}: no such folder"]
