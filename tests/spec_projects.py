"""Small projects written for a test: a spec of one query on a PostgreSQL connection, loaded as `validate` loads it."""

from __future__ import annotations

from pathlib import Path


def postgres_project(folder: Path, sql: str, name: str = "q"):
    """The project in `folder` whose one spec, `specs/NAME.yaml`, runs `sql` on PostgreSQL (never connected to
    here), loaded; the query's first line is line 5 of the spec file, its text from column 3.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     [spec.spec.sql for spec in postgres_project(Path(folder), "SELECT 1 AS one").specs]
    ['SELECT 1 AS one\\n']
    """
    from mcpgen.load.project import load_project

    (folder / "mcpgen.yaml").write_text("connections:\n  default:\n    url: postgresql://127.0.0.1:5432/test\n")
    (folder / "specs").mkdir()
    query = "".join(f"  {line}\n" for line in sql.splitlines())
    (folder / "specs" / f"{name}.yaml").write_text(
        f"description: d\nsources: [https://example.org/]\ncontent: '{{{{ row_count }}}}'\nsql: |\n{query}"
    )
    return load_project(folder / "specs")
