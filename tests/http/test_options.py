"""The options of `serve --http`: which are refused, and the Host and Origin values accepted."""

import logging

import pytest

from mcpgen.http.connections import ConnectionLimits
from mcpgen.http.options import (
    HTTPOptions,
    HTTPSetupError,
    allowed_hosts,
    allowed_origins,
    check_options,
    host_header,
    is_loopback,
    read_tokens,
)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("[::1]", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.7", False),
        ("mcp.example.com", False),
    ],
)
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_host_header_puts_ipv6_in_brackets():
    assert [host_header(h) for h in ("::1", "[::1]", "10.0.0.7", "name")] == ["[::1]", "[::1]", "10.0.0.7", "name"]


def test_accepted_hosts_and_origins():
    assert allowed_hosts("10.0.0.7", 8000, ["mcp.example.com", "proxy:8443", " "]) == [
        "127.0.0.1:8000",
        "localhost:8000",
        "[::1]:8000",
        "10.0.0.7:8000",
        "mcp.example.com",
        "mcp.example.com:*",
        "proxy:8443",
    ]
    assert "0.0.0.0:8000" not in allowed_hosts("0.0.0.0", 8000, [])  # a wildcard bind is no Host name
    assert allowed_origins("127.0.0.1", 9000, ["https://app.example.com/"])[-1] == "https://app.example.com"
    assert "http://localhost:9000" in allowed_origins("127.0.0.1", 9000, [])


def test_tokens_come_from_named_variables_and_a_short_one_is_warned_about(caplog):
    assert read_tokens(["A", "B"], {"A": "  tok-a-0123456789abc\n", "B": "x" * 32}) == ["tok-a-0123456789abc", "x" * 32]
    with caplog.at_level(logging.WARNING, "mcpgen"):
        assert read_tokens(["S"], {"S": "short"}) == ["short"]
    assert "the token in S is shorter than 16 characters" in caplog.text
    with pytest.raises(
        HTTPSetupError, match="environment variable MISSING \\(named for a bearer token\\) is not set or empty"
    ):
        read_tokens(["MISSING"], {"MISSING": "  "})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (HTTPOptions(port=0), "port 0 is not between 1 and 65535"),
        (HTTPOptions(max_body=0), "the request body cap must be a positive number of bytes"),
        (
            HTTPOptions(limits=ConnectionLimits(0, 30, 10)),
            "the header and body timeouts and the connection limit must be positive",
        ),
        (HTTPOptions(host="0.0.0.0"), "refusing to serve on 0.0.0.0 (not a loopback address) without a bearer token"),
    ],
)
def test_unsafe_or_impossible_options_are_refused(options, message):
    with pytest.raises(HTTPSetupError) as err:
        check_options(options)
    assert str(err.value).startswith(message)


def test_a_public_bind_with_a_token_or_explicitly_without_one_is_allowed():
    check_options(HTTPOptions(host="0.0.0.0", tokens=["x" * 32]))
    check_options(HTTPOptions(host="0.0.0.0", insecure_no_auth=True))
    assert "secret-token-value" not in repr(HTTPOptions(tokens=["secret-token-value"]))  # never in a log line
