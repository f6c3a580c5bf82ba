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
