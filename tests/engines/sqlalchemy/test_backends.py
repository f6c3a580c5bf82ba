"""One backend class per database: what each sets on a connection, and its SQL for a time limit."""

import pytest
import sqlalchemy as sa

from mcpgen.engines.sqlalchemy.backends import BACKENDS, Backend, MySQL, PostgreSQL, SQLite, backend_for
from mcpgen.engines.sqlalchemy.statements import Statement


def test_each_url_backend_has_its_class_and_others_the_generic_one():
    assert [type(backend_for(n)) for n in ("postgresql", "mysql", "mariadb", "sqlite", "oracle")] == [
        PostgreSQL,
        MySQL,
        MySQL,
        SQLite,
        Backend,
    ]
    assert backend_for("oracle").name == "oracle" and set(BACKENDS) == {"postgresql", "mysql", "mariadb", "sqlite"}


def test_sqlite_binds_dates_as_text_and_reads_only(tmp_path):
    db = tmp_path / "x.db"
    with sa.create_engine(f"sqlite:///{db}").begin() as con:
        con.exec_driver_sql("CREATE TABLE t (a INTEGER)")
        con.exec_driver_sql("INSERT INTO t VALUES (1), (2), (3)")
    backend = backend_for("sqlite")
    assert backend.bind_type("date") == "string" and backend.bind_type("integer") == "integer"
    options: dict = {"pool_size": 1, "max_overflow": 0, "pool_timeout": 5}
    connect_args: dict = {}
    url = backend.configure(sa.engine.make_url(f"sqlite:///{db}"), options, connect_args)
    assert connect_args == {"check_same_thread": False} and "mode=ro" in str(url)
    engine = sa.create_engine(url, **options, connect_args=connect_args)
    sa.event.listen(engine, "connect", backend.on_connect)
    try:
        with engine.connect() as con:
            backend.begin(con, timeout=5)
            columns, rows = backend.fetch(
                con,
                lambda values, prefix, suffix="": sa.text(prefix + "SELECT a FROM t ORDER BY a" + suffix),
                {},
                fetch=2,
                timeout=5,
            )
            assert (columns, rows) == (["a"], [(1,), (2,)])
            with pytest.raises(sa.exc.OperationalError, match="readonly"):
                con.exec_driver_sql("INSERT INTO t VALUES (4)")
            backend.end(con)
    finally:
        engine.dispose()


def test_the_generic_backend_takes_the_statement_as_written():
    statement = Statement(text="SELECT :n", lists=frozenset(), types=())
    assert Backend("oracle").text(statement, (), {"n": 1})[0] == "SELECT :n"
