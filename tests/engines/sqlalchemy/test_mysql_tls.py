"""TLS on MariaDB/MySQL connections (PyMySQL), on the real MariaDB test service: what the URL or
`connect_args` asks for is what PyMySQL gets, and then required; a URL that asks for none keeps the
driver's own choice (TLS where the server offers it, plain text where it does not).

The test service has no TLS (`have_ssl` DISABLED): a connection that asks for TLS must then fail
rather than go on in plain text. On a server with TLS the same tests check `Ssl_cipher` instead, with
the CA that signed its certificate in MCPGEN_TEST_MARIADB_CA."""

from __future__ import annotations

import os
import ssl

import certifi
import pytest
import services
from sqlalchemy.engine import make_url

from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
from mcpgen.errors import QueryError
from mcpgen.spec.config import URLConnection

CA = os.environ.get("MCPGEN_TEST_MARIADB_CA") or certifi.where()  # without TLS, any PEM bundle will do


@pytest.fixture
def contexts(monkeypatch):
    """The TLS contexts built while the test runs (PyMySQL builds them with ssl.create_default_context)."""
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counted(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    return made


def server_has_tls() -> bool:
    with services.connect("mariadb") as con:
        cur = con.cursor()
        cur.execute("SHOW VARIABLES LIKE 'have_ssl'")
        return cur.fetchone()[1] == "YES"


def cipher(engine: SQLAlchemyEngine) -> str:
    """The TLS cipher of one of the engine's pooled connections ('' in plain text); opens it."""
    with engine._engine.connect() as conn:
        return conn.exec_driver_sql("SHOW SESSION STATUS LIKE 'Ssl_cipher'").fetchone()[1]


def test_a_url_without_tls_options_keeps_the_drivers_tls_where_offered(mariadb_url, contexts):
    """mcpgen does not turn TLS off: PyMySQL, asked for nothing, tries it (a context is built, not required)."""
    engine = SQLAlchemyEngine("maria", URLConnection(url=mariadb_url))
    try:
        for _ in range(3):
            assert engine.run(engine.prepare("SELECT 1 AS one"), {}, 10, 5).rows == [(1,)]
        with engine._engine.connect() as conn:
            driver = conn.connection.dbapi_connection
            assert driver.ssl is True and driver._ssl_required is False  # tried where offered, never required
        assert (cipher(engine) != "") == server_has_tls()
    finally:
        engine.close()
    assert contexts  # PyMySQL's own preferred-TLS context, not one of mcpgen's


ASKED = {
    "ssl_ca in the URL": (f"?ssl_ca={CA}", {}),
    "ssl_ca and ssl_check_hostname in the URL": (f"?ssl_ca={CA}&ssl_check_hostname=false", {}),
    "ssl_ca in connect_args": ("", {"ssl_ca": CA}),
    "an ssl mapping in connect_args": ("", {"ssl": {"ca": CA}}),
    "ssl_verify_identity in connect_args": ("", {"ssl_ca": CA, "ssl_verify_identity": True}),
    "ssl_verify_cert in connect_args": ("", {"ssl_ca": CA, "ssl_verify_cert": True}),
}


@pytest.mark.parametrize("query, connect_args", list(ASKED.values()), ids=list(ASKED))
def test_tls_asked_for_is_never_dropped(mariadb_url, contexts, query, connect_args):
    url = make_url(mariadb_url).render_as_string(hide_password=False) + query
    engine = SQLAlchemyEngine("maria", URLConnection(url=url, connect_args=connect_args))
    try:
        if server_has_tls():
            assert cipher(engine) != ""
        else:  # plain text is refused, never fallen back to
            with pytest.raises(QueryError, match="SSL is required but the server doesn't support it"):
                engine.run(engine.prepare("SELECT 1"), {}, 10, 5)
    finally:
        engine.close()
    assert contexts, "PyMySQL built no TLS context: TLS was not asked of it"


def test_tls_set_in_an_option_file_is_left_to_the_driver(mariadb_url, contexts, tmp_path):
    """`read_default_file` (a my.cnf whose [client] section may set ssl-ca) is the driver's to read: the
    TLS it sets is kept."""
    option_file = tmp_path / "my.cnf"
    option_file.write_text(f"[client]\nssl-ca = {CA}\n")
    engine = SQLAlchemyEngine(
        "maria", URLConnection(url=mariadb_url, connect_args={"read_default_file": str(option_file)})
    )
    try:
        if server_has_tls():
            assert cipher(engine) != ""
        else:
            with pytest.raises(QueryError, match="SSL is required"):
                engine.run(engine.prepare("SELECT 1"), {}, 10, 5)
    finally:
        engine.close()
    assert contexts


REFUSED = {
    "ssl_mode in the URL": ("?ssl_mode=REQUIRED", {}),
    "ssl_mode in connect_args": ("", {"ssl_mode": "VERIFY_IDENTITY"}),
    "ssl=true in the URL": ("?ssl=true", {}),
    "ssl: true in connect_args": ("", {"ssl": True}),
}


@pytest.mark.parametrize("query, connect_args", list(REFUSED.values()), ids=list(REFUSED))
def test_tls_spellings_pymysql_cannot_take_are_refused_in_one_sentence(mariadb_url, query, connect_args):
    """PyMySQL has no ssl_mode, and takes `ssl` as a mapping only: rather than fail at the first query (a
    TypeError from the driver), the connection is refused at once, in one sentence that says what to write."""
    url = make_url(mariadb_url).render_as_string(hide_password=False) + query
    with pytest.raises(QueryError) as info:
        SQLAlchemyEngine("maria", URLConnection(url=url, connect_args=connect_args))
    assert str(info.value).startswith("connection 'maria': ") and "\n" not in str(info.value)
    assert "ssl_ca" in str(info.value)
