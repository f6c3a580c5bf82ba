"""DuckDB init statements: tables and views over the project's files, nothing that widens the reach."""

import pytest

from mcpgen.checks.init_statements import init_problem


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t AS SELECT * FROM read_csv('data/t.csv')",
        "CREATE VIEW v AS SELECT 1; CREATE TABLE u AS SELECT 2",
        "SET VARIABLE x = 1",
        "SET threads = 2",
        "SELECT 'SET temp_directory'",  # words in a string are not a statement
    ],
)
def test_allowed(sql):
    assert init_problem(sql) is None


@pytest.mark.parametrize(
    ("sql", "starts"),
    [
        ("SET GLOBAL enable_external_access = true", "changes the setting enable_external_access"),
        ("RESET allowed_directories", "changes the setting allowed_directories"),
        ("PRAGMA autoload_known_extensions", "changes the setting autoload_known_extensions"),
        ("FORCE INSTALL httpfs", "installs or loads an extension (FORCE)"),
        ("LOAD spatial", "installs or loads an extension (LOAD)"),
        ("COPY t TO 'out.csv'", "writes files (COPY)"),
        ("EXPORT DATABASE 'dump'", "writes files (EXPORT)"),
        ("CREATE TABLE t AS SELECT * FROM read_csv('/etc/passwd')", "reads the absolute path '/etc/passwd'"),
    ],
)
def test_refused(sql, starts):
    assert init_problem(sql).startswith(starts)
