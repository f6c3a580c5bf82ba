"""Paths in SQL that leave the project folder, and files the caller would choose."""

from pathlib import Path

import pytest

from mcpgen.checks.sql_paths import caller_paths, outside_paths
from mcpgen.spec.models import Parameter


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        ("SELECT * FROM read_csv('data/x.csv')", []),
        ("SELECT * FROM 'data/x.parquet'", []),
        (
            "SELECT * FROM read_parquet('/etc/x.parquet')",
            [(1, 28, "reads the absolute path '/etc/x.parquet'; paths must be relative to the project folder")],
        ),
        (
            "SELECT *\nFROM '../x.csv'",
            [
                (
                    2,
                    6,
                    "reads '../x.csv', which climbs out of the project folder with '..' (relative paths start at the project folder)",
                )
            ],
        ),
        (
            "SELECT * FROM read_json('https://evil.example/x.json')",
            [
                (
                    1,
                    25,
                    "reads 'https://evil.example/x.json' over the network; only files inside the project folder can be read",
                )
            ],
        ),
        (
            "SELECT * FROM read_csv(['a.csv', '/b.csv'])",
            [(1, 34, "reads the absolute path '/b.csv'; paths must be relative to the project folder")],
        ),
        ("-- read_csv('/etc/passwd')\nSELECT 1", []),  # comments are skipped
    ],
)
def test_outside_paths(sql, found):
    assert outside_paths(sql) == found


def test_a_parameter_may_choose_a_file_only_from_an_enum_of_project_files(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("x\n1\n")
    free = Parameter(type="string", description="f")
    listed = Parameter(type="string", description="f", enum=["data/a.csv"])
    hidden = Parameter(type="string", description="f", enum=["data/a.csv", ".env"])
    absolute = Parameter(type="string", description="f", enum=["/etc/passwd"])
    sql = "SELECT * FROM read_csv(:file)"
    assert caller_paths(sql, {"file": listed}, tmp_path) == []
    assert caller_paths(sql, {"file": free}, tmp_path)[0][2].endswith(
        "declare file with an enum of the project files it may read"
    )
    assert caller_paths(sql, {"file": hidden}, tmp_path)[0][2].endswith(
        "the enum of file holds '.env', which is not a visible file inside the project folder"
    )
    assert (
        "the enum of file reads the absolute path '/etc/passwd'"
        in caller_paths(sql, {"file": absolute}, tmp_path)[0][2]
    )


def test_a_path_built_from_an_expression_is_refused():
    ((line, col, reason),) = caller_paths("SELECT * FROM read_csv('data/' || :name)", {}, Path("."))
    assert (line, col) == (1, 24) and reason.startswith("builds the path read_csv reads from an expression")
