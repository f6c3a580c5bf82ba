"""What the connection's database role may do, asked at the start of `serve`, in `validate --live`
and on the first connection: a role that may write, replicate, reach the server's files or is a
superuser is refused (or served with a warning under `privileged_role: warn`). Real PostgreSQL and
MariaDB; each test creates its roles and drops them after. The role docs/security.md asks for
(the GRANTs written there) passes and serves."""

from __future__ import annotations

import textwrap

import pytest
import services
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from mcpgen.cli import main
from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
from mcpgen.errors import QueryError, SpecError
from mcpgen.serve.project import open_project
from mcpgen.spec.config import URLConnection


@pytest.fixture(autouse=True)
def refuse_by_default(monkeypatch):
    monkeypatch.delenv("MCPGEN_PRIVILEGED_ROLE", raising=False)  # conftest.py sets warn for the other tests


def engine_for(url: str, **settings) -> SQLAlchemyEngine:
    return SQLAlchemyEngine("db", URLConnection(url=url, pool_size=1, max_overflow=0, **settings))


def one_value(engine: SQLAlchemyEngine, sql: str):
    return engine.run(engine.prepare(sql), {}, 10, 5).rows[0][0]


# -- PostgreSQL --------------------------------------------------------------------------------


@pytest.fixture
def pg_reader(postgres_url):
    """A role made with docs/security.md's statements, a table it reads, and a table and sequence it does not."""
    role, table = services.unique_name("mcpgen_reader"), services.unique_name("mcpgen_priv")
    with services.granting() as con:
        for statement in (
            f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION CONNECTION LIMIT 20",
            f"ALTER ROLE {role} SET default_transaction_read_only = on",
            f"GRANT CONNECT ON DATABASE {make_url(postgres_url).database} TO {role}",
            f"GRANT USAGE ON SCHEMA public TO {role}",
            f"CREATE TABLE {table} (x int)",
            f"INSERT INTO {table} VALUES (7)",
            f"CREATE SEQUENCE {table}_seq",
            f"GRANT SELECT ON {table} TO {role}",
        ):
            con.execute(statement)
    try:
        yield role, table, make_url(postgres_url).set(username=role, password=None).render_as_string(False)
    finally:
        with services.granting() as con:
            con.execute(f"DROP TABLE IF EXISTS {table}")
            con.execute(f"DROP SEQUENCE IF EXISTS {table}_seq")
            con.execute(f"DROP OWNED BY {role}")
            con.execute(f"DROP ROLE {role}")


def test_the_documented_reader_role_passes_and_serves(pg_reader):
    role, table, url = pg_reader
    engine = engine_for(url)
    try:
        assert engine.check_role() is None
        assert one_value(engine, f"SELECT x FROM {table}") == 7
        assert one_value(engine, "SELECT current_user") == role
    finally:
        engine.close()


@pytest.mark.parametrize(
    "grant,words",
    [
        ("ALTER ROLE {role} SUPERUSER", "is a superuser"),
        ("ALTER ROLE {role} REPLICATION", "may replicate (REPLICATION)"),
        ("GRANT pg_read_server_files TO {role}", "may read the server's files (pg_read_server_files)"),
        ("GRANT pg_write_server_files TO {role}", "pg_write_server_files"),
        ("GRANT pg_execute_server_program TO {role}", "may run programs on the server"),
        ("GRANT INSERT ON {table} TO {role}", "may write to tables (INSERT, UPDATE, DELETE or TRUNCATE on public."),
        ("GRANT DELETE ON {table} TO {role}", "may write to tables"),
        ("GRANT USAGE ON SEQUENCE {table}_seq TO {role}", "may advance sequences"),
        ("GRANT CREATE ON SCHEMA public TO {role}", "may create objects in schemas (public)"),
        ("ALTER ROLE {role} CREATEROLE", "may create roles"),
        ("ALTER ROLE {role} BYPASSRLS", "bypasses row-level security"),
    ],
)
def test_a_role_that_may_do_more_than_read_is_refused(pg_reader, grant, words):
    role, table, url = pg_reader
    with services.granting() as con:
        con.execute(grant.format(role=role, table=table))
    engine = engine_for(url)
    try:
        severity, message = engine.check_role()
        assert severity == "error" and words in message and role in message, message
        assert "docs/security.md" in message and "privileged_role: warn" in message
        with pytest.raises(QueryError, match="connect as a role that may only read"):
            engine.run(engine.prepare("SELECT 1"), {}, 10, 5)  # and every call after
    finally:
        engine.close()
    warned = engine_for(url, privileged_role="warn")
    try:
        severity, message = warned.check_role()
        assert severity == "warning" and words in message
        assert one_value(warned, "SELECT 1") == 1
    finally:
        warned.close()


def test_the_superuser_is_refused_unless_the_environment_says_warn(postgres_url, monkeypatch):
    engine = engine_for(postgres_url)
    try:
        assert engine.check_role()[0] == "error"
    finally:
        engine.close()
    monkeypatch.setenv("MCPGEN_PRIVILEGED_ROLE", "warn")
    for settings, expected in (({}, "warning"), ({"privileged_role": "refuse"}, "error")):
        engine = engine_for(postgres_url, **settings)  # the connection's own setting wins over the environment
        try:
            assert engine.check_role()[0] == expected
        finally:
            engine.close()


def _project(tmp_path, url: str, extra: str = ""):
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: {url}\n{extra}")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        textwrap.dedent(
            """\
            description: One.
            sql: SELECT 1 AS one
            sources: [https://example.org/]
            content: "{{ rows[0].one }}"
            """
        )
    )
    return tmp_path / "specs"


def test_serve_does_not_start_on_a_superuser_and_validate_live_says_why(postgres_url, tmp_path, monkeypatch):
    specs = _project(tmp_path, postgres_url)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as info:
        open_project(specs)
    assert "connection 'default': the database role postgres is a superuser" in str(info.value)
    result = CliRunner().invoke(main, ["validate", "--live", str(specs)])
    assert result.exit_code == 1 and "is a superuser" in result.output and "mcpgen.yaml:2" in result.output, (
        result.output
    )


def test_serve_starts_as_the_reader_role(pg_reader, tmp_path, monkeypatch):
    specs = _project(tmp_path, pg_reader[2])
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)
    try:
        assert not project.registry.call_sync("one", {}).is_error
    finally:
        project.close()
    result = CliRunner().invoke(main, ["validate", "--live", str(specs)])
    assert result.exit_code == 0, result.output


def test_a_database_down_at_start_is_checked_on_the_first_call(tmp_path, monkeypatch, caplog):
    specs = _project(tmp_path, "postgresql+psycopg://postgres@127.0.0.1:1/test", "    pool_timeout: 1s\n")
    monkeypatch.chdir(tmp_path)
    project = open_project(specs)  # starts; says the role is checked later
    try:
        assert "checked when the first call connects" in caplog.text
    finally:
        project.close()


# -- MariaDB -----------------------------------------------------------------------------------


@pytest.fixture
def maria_reader(mariadb_url):
    user = services.unique_name("mcpgen_reader")
    database = make_url(mariadb_url).database
    with services.connect("mariadb") as con, con.cursor() as cur:
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'change-me' WITH MAX_USER_CONNECTIONS 20")
        cur.execute(f"GRANT SELECT ON {database}.* TO '{user}'@'%'")
    try:
        yield user, make_url(mariadb_url).set(username=user, password="change-me").render_as_string(False)
    finally:
        with services.connect("mariadb") as con, con.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")


def test_the_documented_mariadb_reader_passes(maria_reader):
    user, url = maria_reader
    engine = engine_for(url)
    try:
        assert engine.check_role() is None
        assert one_value(engine, "SELECT CURRENT_USER()").startswith(user)
    finally:
        engine.close()


@pytest.mark.parametrize(
    "grant,words",
    [
        ("GRANT FILE ON *.* TO '{user}'@'%'", "may read and write the server's files (FILE)"),
        ("GRANT SUPER ON *.* TO '{user}'@'%'", "is a superuser (SUPER)"),
        ("GRANT REPLICATION SLAVE ON *.* TO '{user}'@'%'", "may replicate"),
        ("GRANT INSERT ON {database}.* TO '{user}'@'%'", "may write (INSERT on {database})"),
        ("GRANT CREATE, DROP ON {database}.* TO '{user}'@'%'", "may write (CREATE, DROP on {database})"),
    ],
)
def test_a_mariadb_account_that_may_do_more_than_read_is_refused(maria_reader, mariadb_url, grant, words):
    user, url = maria_reader
    database = make_url(mariadb_url).database
    with services.connect("mariadb") as con, con.cursor() as cur:
        cur.execute(grant.format(user=user, database=database))
    engine = engine_for(url)
    try:
        severity, message = engine.check_role()
        assert severity == "error" and words.format(database=database) in message, message
    finally:
        engine.close()


def test_mariadb_root_is_refused(mariadb_url):
    engine = engine_for(mariadb_url)
    try:
        severity, message = engine.check_role()
        assert severity == "error" and "SUPER" in message and "FILE" in message
    finally:
        engine.close()
