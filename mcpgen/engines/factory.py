"""The engine for one connection of mcpgen.yaml. Each driver is imported only when a project uses it:
SQLAlchemy for `url:`, pyspark for `spark:`, DuckDB otherwise.

>>> from mcpgen.spec.config import DuckDBConnection
>>> engine = create_engine("default", DuckDBConnection(duckdb=":memory:"), root=".")
>>> query = engine.prepare("SELECT x FROM range(5) t(x) WHERE x < :n")
>>> result = engine.run(query, {"n": 3}, max_rows=2, timeout=5)
>>> result.rows, result.truncated
([(0,), (1,)], True)
>>> engine.describe(query, timeout=5)
[('x', 'BIGINT')]
>>> engine.close()
"""

from __future__ import annotations

import os

from ..spec.config import DuckDBConnection, SparkConnection, URLConnection, expand_env
from .protocol import Engine


def create_engine(
    name: str,
    connection: DuckDBConnection | URLConnection | SparkConnection,
    root: str | os.PathLike,
    state: str | None = None,
    copy: bool = False,
) -> Engine:
    """The engine for one `connections:` entry of mcpgen.yaml; `state`: of the project's data, for a
    DuckDB connection to open the snapshot its `init` left in it (`snapshots`), or with `copy` to copy
    it into memory."""
    if isinstance(connection, URLConnection):
        from .sqlalchemy.engine import SQLAlchemyEngine  # SQLAlchemy is imported only when a project uses it

        return SQLAlchemyEngine(name, connection)
    if isinstance(connection, SparkConnection):
        from .spark import SparkEngine  # pyspark is imported only when a project uses it

        return SparkEngine(
            name,
            expand_env(connection.spark),
            connection.max_concurrent,
            float(connection.queue_timeout),
            connection.conf,
            connection.database,
        )
    from .duckdb import DuckDBEngine

    return DuckDBEngine(
        name,
        connection.duckdb,
        connection.init,
        root,
        connection.threads,
        connection.max_concurrent,
        float(connection.queue_timeout),
        state,
        copy,
    )
