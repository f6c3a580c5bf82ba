"""What a connection's database role may do beyond reading (PostgreSQL, MariaDB/MySQL).

A read-only transaction and the SQL checks are defence in depth; the role is the boundary. So
`serve` (at start) and `validate --live` ask the database what the role may do, and refuse the
connection (or warn, with `privileged_role: warn`) when it is a superuser, may replicate, read or
write the server's files or run programs there, may write to a table or a sequence, or create
objects. Each power is one short phrase, named so the operator knows which GRANT to take back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Roles whose members reach the server's files or programs, or write everywhere (PostgreSQL 11+ / 14+).
_PG_ROLES = {
    "pg_read_server_files": "may read the server's files (pg_read_server_files)",
    "pg_write_server_files": "may write the server's files (pg_write_server_files)",
    "pg_execute_server_program": "may run programs on the server (pg_execute_server_program)",
    "pg_write_all_data": "may write every table (pg_write_all_data)",
    "pg_signal_backend": "may stop other sessions (pg_signal_backend)",
}
_PG_ROLE = """
SELECT r.rolname, r.rolsuper, r.rolreplication, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
       has_database_privilege(current_database(), 'CREATE')
FROM pg_roles r WHERE r.rolname = current_user
"""
_PG_MEMBER = "SELECT name FROM unnest(%(names)s::text[]) AS name WHERE to_regrole(name) IS NOT NULL AND pg_has_role(current_user, name, 'MEMBER')"
_PG_WRITABLE = """
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'f', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_'
  AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE')
       OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE'))
ORDER BY 1 LIMIT 4
"""
_PG_SEQUENCES = """
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'S' AND n.nspname !~ '^pg_'
  AND (has_sequence_privilege(c.oid, 'UPDATE') OR has_sequence_privilege(c.oid, 'USAGE'))
ORDER BY 1 LIMIT 4
"""
_PG_SCHEMAS = """
SELECT quote_ident(nspname) FROM pg_namespace
WHERE has_schema_privilege(oid, 'CREATE') AND nspname !~ '^pg_' AND nspname <> 'information_schema'
ORDER BY 1 LIMIT 4
"""

# MariaDB/MySQL privileges that write, replicate, reach the server's files or administer it.
_MYSQL_POWERS = {
    "FILE": "may read and write the server's files (FILE)",
    "SUPER": "is a superuser (SUPER)",
    "REPLICATION SLAVE": "may replicate (REPLICATION SLAVE)",
    "REPLICA": "may replicate (REPLICATION REPLICA)",
    "REPLICATION MASTER ADMIN": "may administer replication (REPLICATION MASTER ADMIN)",
    "REPLICATION SLAVE ADMIN": "may administer replication (REPLICATION SLAVE ADMIN)",
    "BINLOG ADMIN": "may administer the binary log (BINLOG ADMIN)",
    "SHUTDOWN": "may stop the server (SHUTDOWN)",
    "CONNECTION ADMIN": "may stop other sessions (CONNECTION ADMIN)",
    "CREATE USER": "may create users (CREATE USER)",
    "GRANT OPTION": "may grant privileges (GRANT OPTION)",
}
_MYSQL_WRITES = (
    "INSERT",
    "UPDATE",
    "DELETE",
    "DELETE HISTORY",
    "CREATE",
    "DROP",
    "ALTER",
    "INDEX",
    "CREATE VIEW",
    "CREATE ROUTINE",
    "ALTER ROUTINE",
    "EXECUTE",
    "EVENT",
    "TRIGGER",
    "CREATE TEMPORARY TABLES",
    "LOCK TABLES",
    "CREATE TABLESPACE",
)
_MYSQL_GRANTEES = """
SELECT CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')
"""


def postgres_powers(conn: Any) -> tuple[str, list[str]]:
    """The role's name and what it may do beyond reading, on a SQLAlchemy connection to PostgreSQL."""
    name, superuser, replication, createrole, createdb, bypassrls, createschema = conn.exec_driver_sql(_PG_ROLE).one()
    powers = []
    if superuser:
        powers.append("is a superuser")
    if replication:
        powers.append("may replicate (REPLICATION)")
    if createrole:
        powers.append("may create roles (CREATEROLE)")
    if createdb:
        powers.append("may create databases (CREATEDB)")
    if bypassrls:
        powers.append("bypasses row-level security (BYPASSRLS)")
    if superuser:
        return name, powers  # it may do everything below as well
    members = {row[0] for row in conn.exec_driver_sql(_PG_MEMBER, {"names": list(_PG_ROLES)})}
    powers += [why for role, why in _PG_ROLES.items() if role in members]
    if createschema:
        powers.append("may create schemas in the database (CREATE)")
    for query, what in (
        (_PG_WRITABLE, "may write to tables (INSERT, UPDATE, DELETE or TRUNCATE on {})"),
        (_PG_SEQUENCES, "may advance sequences ({})"),
        (_PG_SCHEMAS, "may create objects in schemas ({})"),
    ):
        found = [row[0] for row in conn.exec_driver_sql(query)]
        if found:
            powers.append(what.format(_few(found)))
    return name, powers


def mysql_powers(conn: Any) -> tuple[str, list[str]]:
    """The account's name and what it may do beyond reading, on a SQLAlchemy connection to MariaDB/MySQL."""
    # A bound on every statement below; COM_RESET_CONNECTION at the call's end takes it away.
    if conn.dialect.is_mariadb:
        conn.exec_driver_sql("SET SESSION max_statement_time = 10")
    else:
        conn.exec_driver_sql("SET SESSION max_execution_time = 10000")
    grantee = conn.exec_driver_sql(_MYSQL_GRANTEES).scalar_one()
    grantees = [grantee]
    try:  # MariaDB roles: the privileges of the enabled ones count too
        grantees += [
            f"'{r[0]}'" for r in conn.exec_driver_sql("SELECT ROLE_NAME FROM information_schema.ENABLED_ROLES")
        ]
    except Exception:
        pass
    params = {"grantees": tuple(grantees)}
    powers = []
    found: dict[str, list[str]] = {}
    for table, scope in (
        ("USER_PRIVILEGES", "'every database'"),
        ("SCHEMA_PRIVILEGES", "TABLE_SCHEMA"),
        ("TABLE_PRIVILEGES", "CONCAT(TABLE_SCHEMA, '.', TABLE_NAME)"),
    ):
        rows = conn.exec_driver_sql(
            f"SELECT DISTINCT PRIVILEGE_TYPE, {scope} FROM information_schema.{table} WHERE GRANTEE IN %(grantees)s",
            params,
        )
        for privilege, where in rows:
            found.setdefault(privilege.upper(), []).append(where)
    global_ = {p for p, where in found.items() if "every database" in where}
    powers += [why for privilege, why in _MYSQL_POWERS.items() if privilege in global_]
    writes = sorted({w for p in _MYSQL_WRITES for w in found.get(p, [])})
    if writes:
        kinds = [p for p in _MYSQL_WRITES if p in found]
        powers.append(f"may write ({', '.join(kinds[:4])}{', ...' if len(kinds) > 4 else ''} on {_few(writes)})")
    return grantee, powers


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


# The check for each SQLAlchemy backend name that has roles to ask about.
POWERS: dict[str, Callable[[Any], tuple[str, list[str]]]] = {
    "postgresql": postgres_powers,
    "mysql": mysql_powers,
    "mariadb": mysql_powers,
}
