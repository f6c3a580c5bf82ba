"""Fixtures of the serving tests."""

import pytest
from callers import write_project

from mcpgen.serve.project import open_project


@pytest.fixture
def orders_project(tmp_path, monkeypatch):
    """callers.PROJECT opened: my_orders (claim-bound), revenue (scoped, tagged finance)."""
    specs = write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    yield project
    project.close()
