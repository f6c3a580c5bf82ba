"""One backend class per database: what each sets on a connection, and its SQL for a time limit."""

import datetime as dt
import threading
import time

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


@pytest.mark.parametrize("driver", ["psycopg", "pg8000"])
def test_the_driver_gets_the_sql_and_values_sqlalchemy_would_send(driver):
    """PostgreSQL's query goes to the driver's cursor as SQLAlchemy compiles it: lists expanded for
    this call's values, a NULL written inline, values through the types' bind processors, and
    positional parameters for a driver that takes them."""
    from sqlalchemy.dialects import postgresql

    from mcpgen.engines.sqlalchemy.backends import _on_driver
    from mcpgen.engines.sqlalchemy.statements import bindparam

    class Conn:
        dialect = getattr(postgresql, driver).dialect()

    binds = [bindparam("s", "string", False), bindparam("xs", "integer", True), bindparam("z", "null", False)]
    clause = sa.text("SELECT :s, :z FROM t WHERE x IN :xs").bindparams(*binds)
    cache: dict = {}
    for xs in ([1, 2], [3], [4, 5, 6]):  # one compiled clause, expanded anew for each call
        sql, params = _on_driver(Conn(), clause, {"s": "JP", "xs": xs, "z": None}, cache)
        marks = ", ".join(["%s::BIGINT" if driver == "pg8000" else f"%(xs_{i + 1})s::BIGINT" for i in range(len(xs))])
        first = "%s" if driver == "pg8000" else "%(s)s"
        assert sql == f"SELECT {first}::VARCHAR, NULL FROM t WHERE x IN ({marks})"
        named = {"s": "JP", **{f"xs_{i + 1}": x for i, x in enumerate(xs)}}
        assert params == (tuple(named.values()) if driver == "pg8000" else named)
    assert list(cache) == [clause]


@pytest.mark.parametrize("driver", ["psycopg", "pg8000"])
def test_a_clause_without_lists_keeps_its_sql_and_takes_each_calls_values(driver):
    """A clause whose SQL does not depend on the values keeps the SQL compiled once: every call
    still gets its own values (through the types' bind processors) in the driver's order."""
    from sqlalchemy.dialects import postgresql

    from mcpgen.engines.sqlalchemy.backends import _on_driver
    from mcpgen.engines.sqlalchemy.statements import bindparam

    class Conn:
        dialect = getattr(postgresql, driver).dialect()

    binds = [bindparam("s", "string", False), bindparam("n", "integer", False), bindparam("d", "date", False)]
    clause = sa.text("SELECT :n, :s WHERE :d IS NOT NULL AND :n > 0").bindparams(*binds)
    cache: dict = {}
    for values in ({"s": "JP", "n": 1, "d": dt.date(2024, 1, 2)}, {"s": "FR", "n": 7, "d": dt.date(1999, 12, 31)}):
        expected = clause.compile(dialect=Conn.dialect).construct_expanded_state(values)
        processors = expected.processors
        named = {k: processors[k](v) if k in processors else v for k, v in expected.parameters.items()}
        wanted = tuple(named[k] for k in expected.positiontup or ()) if driver == "pg8000" else named
        assert _on_driver(Conn(), clause, values, cache) == (expected.statement, wanted)
    assert list(cache) == [clause]


def test_the_generic_backend_takes_the_statement_as_written():
    statement = Statement(text="SELECT :n", lists=frozenset(), types=())
    assert Backend("oracle").text(statement, (), {"n": 1})[0] == "SELECT :n"


def test_postgres_reset_never_answered_costs_one_bounded_wait(postgres_url, monkeypatch):
    """A ROLLBACK sent on its own (after a call whose statements went through SQLAlchemy, here a
    describe; or whose query failed) is read at the next checkout (PostgreSQL.end sends it without
    waiting): if its reply never comes, the checkout waits PG_RESET_WAIT, with the GIL free,
    then drops the connection and the call answers through a new one."""
    from sqlalchemy.engine import make_url
    from tcpproxy import Proxy

    from mcpgen.engines.sqlalchemy import backends
    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.spec.config import URLConnection

    monkeypatch.setattr(backends, "PG_RESET_WAIT", 0.5)
    url = make_url(postgres_url)
    proxy = Proxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.start()
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine("pg", URLConnection(url=through, pool_size=1, max_overflow=0))

    def one(sql):
        query = engine.prepare(sql)
        return engine.run(query, {}, max_rows=10, timeout=5).rows

    try:
        assert one("SELECT 1") == [(1,)]
        # the reply to this connection's next reset sent alone is kept from it: "ROLLBACK" then the row
        # description of pg_advisory_unlock_all() (in a call's own message a ParseComplete comes between)
        proxy.hold(b"ROLLBACK\x00T")
        assert engine.describe(engine.prepare("SELECT 2 AS two")) == [("two", "integer")]
        accepted = proxy.accepted
        ticks, stop = [0], threading.Event()
        ticker = threading.Thread(target=lambda: [ticks.append(1) for _ in iter(lambda: stop.wait(0.01), True)])
        ticker.start()
        start = time.monotonic()
        try:
            assert one("SELECT 3") == [(3,)]
        finally:
            stop.set()
            ticker.join(5)
        assert 0.45 < time.monotonic() - start < 3
        # the other threads ran while the checkout waited: a wait holding the GIL for its 0.5 s
        # would leave a tick or two; a loaded machine wakes a 10 ms ticker late (29 of 50 seen)
        assert len(ticks) >= 10
        assert proxy.accepted == accepted + 1 and proxy.held > 0  # one new connection
    finally:
        engine.close()
        proxy.close()
