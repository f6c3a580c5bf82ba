"""Where a compiled query runs: DuckDB in process (`duckdb`), or any database SQLAlchemy reaches (`sqlalchemy`).

`base` holds the `Engine` protocol they share and `create_engine`; `deadlines` cancels queries on time.
"""

from .base import Engine, Prepared, QueryResult, create_engine

__all__ = ["Engine", "Prepared", "QueryResult", "create_engine"]
