"""Fixtures of the serving tests."""

import pytest
from callers import write_project
from longwork import IN_PROCESS_ROWS, write_long_project

from mcpgen.serve.project import open_project


@pytest.fixture
def orders_project(tmp_path, monkeypatch):
    """callers.PROJECT opened: my_orders (claim-bound), revenue (scoped, tagged finance)."""
    specs = write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    yield project
    project.close()


@pytest.fixture(scope="session")
def long_project(tmp_path_factory):
    """longwork's project opened once for the session (its table of millions of numbers takes a while to fill):
    the progress, cancellation and task tests only call it. Its scan lasts a few tenths of a second: a test
    that waits for progress shortens the progress poll (registry.PROGRESS_EVERY)."""
    root = tmp_path_factory.mktemp("long")
    specs = write_long_project(root, rows=IN_PROCESS_ROWS)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        project = open_project(specs)
    yield project
    project.close()
