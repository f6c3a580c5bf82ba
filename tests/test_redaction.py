"""Secrets kept out of messages: passwords in URLs and key=value pairs, bearer tokens, named secrets."""

import pytest

from mcpgen.redaction import redact, secrets_of
from mcpgen.spec.config import ProjectConfig


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("mysql+pymysql://root:pa:ss@db/x", "mysql+pymysql://root:***@db/x"),
        ("password='two words' host=db", "password=*** host=db"),
        ("PWD=abc123;Server=db", "PWD=***;Server=db"),
        ("Authorization: Bearer eyJ.abc-def_1", "Authorization: Bearer ***"),
        ("nothing secret here", "nothing secret here"),
    ],
)
def test_redact_finds_secrets_by_their_shape(text, shown):
    assert redact(text) == shown


def test_named_secrets_are_hidden_quoted_or_not_and_short_ones_left_alone():
    assert redact("user p@ss/w0rd and p%40ss%2Fw0rd", ["p@ss/w0rd"]) == "user *** and ***"
    assert redact("a b", ["a"]) == "a b"  # a one-letter secret would blank out ordinary words


def test_secrets_of_a_config_include_expanded_environment_passwords(monkeypatch):
    monkeypatch.setenv("WAREHOUSE_PW", "s3cr%2Ft")
    config = ProjectConfig.model_validate(
        {
            "connections": {
                "a": {"url": "postgresql://u:literal-pw@db/x"},
                "b": {"url": "postgresql://u@db/x", "password": "${WAREHOUSE_PW}"},
            }
        }
    )
    found = secrets_of(config)
    assert {"literal-pw", "${WAREHOUSE_PW}", "s3cr%2Ft", "s3cr/t"} <= set(found)
    assert found == sorted(found, key=len, reverse=True)  # longest first: no partial replacement
    message = redact("connect to postgresql://u:literal-pw@db/x with s3cr/t failed", found)
    assert "literal-pw" not in message and "s3cr/t" not in message


def test_secrets_of_a_config_include_driver_options_named_like_passwords():
    config = ProjectConfig.model_validate(
        {
            "connections": {
                "a": {"url": "mysql+pymysql://u@db/x", "connect_args": {"passwd": "opt-s3cret", "read_timeout": 30}},
                "b": {"url": "postgresql+psycopg://u@db/x", "connect_args": {"sslpassword": "key-s3cret"}},
            }
        }
    )
    found = secrets_of(config)
    assert {"opt-s3cret", "key-s3cret"} <= set(found) and "30" not in found
    assert "opt-s3cret" not in redact("login with opt-s3cret refused", found)


def test_a_key_files_path_is_no_secret_and_stays_in_the_sentence_that_names_it():
    """`ssl_key` and `sslkey` name a file, not a secret: the sentence about a missing one shows its path."""
    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.errors import SettingError
    from mcpgen.spec.config import URLConnection

    for url, option in (("mysql+pymysql://u@db/x", "ssl_key"), ("postgresql+psycopg://u@db/x", "sslkey")):
        connection = URLConnection(url=url, connect_args={option: "/nonexistent/client-key.pem", "passwd": "s3cret"})
        with pytest.raises(SettingError) as raised:
            SQLAlchemyEngine("db", connection)
        assert str(raised.value).endswith(f"the file /nonexistent/client-key.pem that {option} names does not exist")


# Each shape a secret's value takes, with the words around it: only the value goes.
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # libpq keyword strings: quoted, with an escaped quote, spaces around =
        ("host=db password='it\\'s two' user=u", "host=db password=*** user=u"),
        ("host=db password = s3cret dbname=x", "host=db password = *** dbname=x"),
        ("sslpassword=k3y sslmode=require", "sslpassword=*** sslmode=require"),
        # ODBC: a braced value may hold ;
        ("DRIVER={x};PWD={a;b};UID=u", "DRIVER={x};PWD=***;UID=u"),
        # a URL's query, an environment variable's reference
        ("https://h/x?token=abc&page=2", "https://h/x?token=***&page=2"),
        ("password=${PG_PASSWORD} host=db", "password=*** host=db"),
        # JSON and Python's reprs of driver options
        ('{"password": "two words", "host": "db"}', '{"password": ***, "host": "db"}'),
        ("{'passwd': 's3cret', 'port': 3306}", "{'passwd': ***, 'port': 3306}"),
        # YAML lines: plain, quoted, in a list, with a comment
        ("  password: hunter2", "  password: ***"),
        ('password: "two words"  # the reader', "password: ***  # the reader"),
        ("  - api_key: k-123", "  - api_key: ***"),
        # the same one-word value after text: a quoted YAML line, a sentence that ends with it or its clause
        ("mcpgen.yaml:5:5:   password: hunter2", "mcpgen.yaml:5:5:   password: ***"),
        ("connect failed: password: hunter2", "connect failed: password: ***"),
        ("login refused (password: hunter2, user: bob)", "login refused (password: ***, user: bob)"),
        # SQL a driver's message quotes
        (
            "LINE 1: CREATE SECRET (TYPE s3, KEY_ID 'AKIA', SECRET 'wJal''r')",
            "LINE 1: CREATE SECRET (TYPE s3, KEY_ID 'AKIA', SECRET ***)",
        ),
        ("CREATE USER u IDENTIFIED BY 'pw' REQUIRE SSL", "CREATE USER u IDENTIFIED BY *** REQUIRE SSL"),
        # prose after "password:" is no value
        ("password: is wrong", "password: is wrong"),
        ("mcpgen.yaml:4:5: connections.db.password: Input should be a valid string", None),
        ("the password: is wrong for user x", None),
    ],
)
def test_only_the_value_is_redacted(text, shown):
    assert redact(text) == (text if shown is None else shown)


# What the drivers say to a wrong password (psycopg 3.3 and psycopg2 2.9 against PostgreSQL 17 with
# scram-sha-256; PyMySQL against MariaDB, also run live below; DuckDB 2.0 for a wrong encryption key):
# nothing in them is a secret, so redacting them leaves every word.
DRIVER_MESSAGES = [
    'connection failed: connection to server at "127.0.0.1", port 55432 failed: '
    'FATAL:  password authentication failed for user "postgres"',
    'connection to server at "127.0.0.1", port 55432 failed: FATAL:  password authentication failed for user "postgres"',
    'connection to server at "127.0.0.1", port 55432 failed: fe_sendauth: no password supplied',
    "(1045, \"Access denied for user 'reader'@'127.0.0.1' (using password: YES)\")",
    "(1045, \"Access denied for user 'reader'@'127.0.0.1' (using password: NO)\")",
    "Invalid Input Error: Wrong encryption key used to open the database file",
]


@pytest.mark.parametrize("message", DRIVER_MESSAGES)
def test_a_drivers_wrong_password_message_keeps_every_word(message):
    assert redact(message) == message
    dsn = "host=127.0.0.1 user=reader password='wrong pw' dbname=test"
    assert redact(f"{dsn}: {message}") == f"host=127.0.0.1 user=reader password=*** dbname=test: {message}"


def test_a_wrong_password_on_mariadb_reads_whole_and_hides_the_password(tmp_path):
    """PyMySQL's own message, live, through `mcpgen validate --live`: the sentence names the user and that a
    password was used, and the password appears nowhere."""
    from click.testing import CliRunner
    from services import MARIADB_URL, require

    from mcpgen.cli import main

    require("mariadb")
    url = MARIADB_URL.replace("://root@", "://errors_nobody:wr0ng-s3cret@")
    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text(f"connections:\n  default:\n    url: {url}\n")
    spec = "title: t\ndescription: d\nsql: SELECT 1 AS a\nsources: [https://example.org/]\ncontent: x\n"
    (tmp_path / "specs" / "t.yaml").write_text(spec)
    result = CliRunner().invoke(main, ["validate", "--live", str(tmp_path / "specs")])
    assert "wr0ng-s3cret" not in result.output
    assert "Access denied for user 'errors_nobody'@" in result.output and "(using password: YES)" in result.output


def test_duckdb_quoting_a_secret_in_its_parser_error_hides_only_the_secret():
    import duckdb

    with pytest.raises(duckdb.ParserException) as raised:
        duckdb.connect().execute("CREATE SECRET s (TYPE postgres, PASSWORD 'pw-s3cret', HOST 'h' PORT 1)")
    shown = redact(str(raised.value))
    assert "pw-s3cret" not in shown and "PASSWORD ***, HOST 'h' PORT 1" in shown
    assert shown.startswith('Parser Error: syntax error at or near "PORT"')
