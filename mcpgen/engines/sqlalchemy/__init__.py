"""Any database SQLAlchemy reaches, for `url:` connections; imported only when a project has one.

- `engine`: the engine (pooled connections, time limits, read-only sessions)
- `backends`: one `Backend` class per database (PostgreSQL, MySQL/MariaDB, SQLite, others)
- `statements`: the SQL as `text()` takes it, and the bind types
- `rls`: PostgreSQL row-level security, the caller's claims as session settings
"""
