"""Where a compiled query runs: DuckDB in process, any database SQLAlchemy reaches, or Spark Connect.

- `protocol`: the `Engine` protocol every engine implements, `Prepared`, `QueryResult`
- `factory`: `create_engine`, the engine for one connection (each driver imported only when used)
- `slots`: fair slots, the bound on queries at once per connection (DuckDB, Spark)
- `deadlines`: the one timer thread that cancels queries on time
- `file_reach`: which files a DuckDB connection may read (the project folder, never a link out of it)
- `duckdb`, `spark`, `sqlalchemy/`: the engines themselves
"""
