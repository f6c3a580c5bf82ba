"""Connection settings an operator can get wrong, on every engine, through the CLI on the real databases:
`mcpgen validate --live`, `mcpgen call` and `mcpgen serve` each say it in one sentence, with no traceback,
no password and no DSN.

A setting the driver cannot take (an unknown option, a value of the wrong type, a TLS file that is not
there, a driver that is wrong or missing) is said at its place in mcpgen.yaml (file:line) and stops the
start. A database that does not answer as asked (unreachable, wrong database, wrong password, TLS it
cannot give) is said too, but a server still starts: the database may come back (checked at the first call).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

SECRET = "hunter2-opt5-s3cret"
ROOT = Path(__file__).resolve().parents[2]


def _with(url: str, **parts) -> str:
    return make_url(url).set(**parts).render_as_string(hide_password=False)


def _project(tmp_path: Path, connection: str) -> Path:
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  db:\n" + textwrap.indent(connection.strip(), "    ") + "\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        "description: One row.\nconnection: db\nsql: SELECT 1 AS x\n"
        "sources: [https://example.org/]\ncontent: '{{ row_count }} rows'\n"
    )
    (tmp_path / "bad.duckdb").write_text("not a database\n")
    (tmp_path / "lite.db").write_bytes(b"")
    return tmp_path


def _cli(project: Path) -> dict[str, tuple[int, str]]:
    """(exit code, stdout and stderr) of validate --live, call and serve (stdin closed at once: a server that
    starts stops at once, exit 0)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCPGEN_PRIVILEGED_ROLE": "warn", "OPT_PASSWORD": SECRET}
    commands = {
        "validate": ["validate", "--live", "specs"],
        "call": ["call", "one", "-s", "specs"],
        "serve": ["serve", "specs"],
    }
    out = {}
    for name, args in commands.items():
        done = subprocess.run(
            [sys.executable, "-m", "mcpgen.cli", *args],
            cwd=project,
            env=env,
            input="",
            capture_output=True,
            text=True,
            timeout=120,
        )
        out[name] = (done.returncode, done.stdout + done.stderr)
    return out


def _assert_safe(out: dict[str, tuple[int, str]], *secrets: str) -> None:
    for name, (_, text) in out.items():
        assert "Traceback" not in text and 'File "' not in text, (name, text)
        for secret in (SECRET, *secrets):
            assert secret not in text, (name, text)


# (id, service, changes to its URL, the connection's YAML ({url}: that URL), the line the sentence is at,
# what it says). Line 3 is the url, line 4 a setting under it.
WRONG_SETTINGS = [
    (
        "pg-unknown-key",
        "postgresql",
        {},
        "url: {url}\nconnect_args: {{conect_timeout: 3}}",
        4,
        "connect_args: the psycopg driver takes no option 'conect_timeout'; did you mean 'connect_timeout'?",
    ),
    (
        "pg-url-unknown-key",
        "postgresql",
        {},
        "url: {url}?sslmod=require",
        3,
        "url: the psycopg driver takes no option 'sslmod'; did you mean 'sslmode'?",
    ),
    (
        "pg-wrong-number",
        "postgresql",
        {},
        "url: {url}\nconnect_args: {{connect_timeout: soon}}",
        4,
        "connect_args: connect_timeout takes a whole number, not 'soon'",
    ),
    (
        "pg-url-wrong-choice",
        "postgresql",
        {},
        "url: {url}?sslmode=requir",
        3,
        "url: sslmode is one of disable, allow, prefer, require, verify-ca, verify-full, not 'requir'; did you mean 'require'?",
    ),
    (
        "pg-list",
        "postgresql",
        {},
        "url: {url}\nconnect_args: {{options: [-c, x=1]}}",
        4,
        "connect_args: the psycopg driver takes text or a number for options, not a list",
    ),
    (
        "pg-tls-file",
        "postgresql",
        {},
        "url: {url}\nconnect_args: {{sslmode: verify-full, sslrootcert: /nonexistent/ca.pem}}",
        4,
        "connect_args: the file /nonexistent/ca.pem that sslrootcert names does not exist",
    ),
    (
        "pg-wrong-driver",
        "postgresql",
        {"drivername": "postgresql+psycopj"},
        "url: {url}",
        3,
        "connection 'db': no SQLAlchemy dialect for postgresql+psycopj is installed",
    ),
    (
        "maria-driver-missing",
        "mariadb",
        {"drivername": "mysql+mysqldb"},
        "url: {url}",
        3,
        "connection 'db' needs the Python package MySQLdb",
    ),
    (
        "maria-unknown-key",
        "mariadb",
        {},
        "url: {url}\npassword: ${{OPT_PASSWORD}}\nconnect_args: {{conect_timeout: 3}}",
        5,
        "connect_args: the pymysql driver takes no option 'conect_timeout'; did you mean 'connect_timeout'?",
    ),
    (
        "maria-url-unknown-key",
        "mariadb",
        {},
        "url: {url}?chrset=utf8mb4",
        3,
        "url: the pymysql driver takes no option 'chrset'; did you mean 'charset'?",
    ),
    (
        "maria-wrong-type",
        "mariadb",
        {},
        "url: {url}\nconnect_args: {{connect_timeout: soon}}",
        4,
        "connect_args: the pymysql driver takes a whole number for connect_timeout, not 'soon'",
    ),
    (
        "maria-list",
        "mariadb",
        {},
        "url: {url}\nconnect_args: {{read_timeout: [5]}}",
        4,
        "connect_args: the pymysql driver takes a single value for read_timeout, not a list",
    ),
    (
        "maria-secret-wrong-type",
        "mariadb",
        {},
        "url: {url}\nconnect_args: {{password: 987654321}}",
        4,
        "connect_args: the pymysql driver takes text for password, not a value of type int",
    ),
    (
        "maria-url-wrong-type",
        "mariadb",
        {},
        "url: {url}?connect_timeout=soon",
        3,
        "url: a query parameter's value is not one the driver takes: invalid literal for int()",
    ),
    (
        "maria-url-unknown-charset",
        "mariadb",
        {},
        "url: {url}?charset=nosuchcharset",
        3,
        "connection 'db': its driver could not take the options of the url and connect_args",
    ),
    (
        "maria-tls-file",
        "mariadb",
        {},
        "url: {url}\nconnect_args: {{ssl: {{ca: /nonexistent/ca.pem}}}}",
        4,
        "connect_args: the file /nonexistent/ca.pem that ssl.ca names does not exist",
    ),
    (
        "maria-url-tls-file",
        "mariadb",
        {},
        "url: {url}?ssl_ca=/nonexistent/ca.pem",
        3,
        "url: the file /nonexistent/ca.pem that ssl.ca names does not exist",
    ),
    (
        "maria-wrong-driver",
        "mariadb",
        {"drivername": "mysql+pymysqll"},
        "url: {url}",
        3,
        "connection 'db': no SQLAlchemy dialect for mysql+pymysqll is installed",
    ),
    (
        "sqlite-unknown-key",
        "sqlite",
        {},
        "url: sqlite:///lite.db\nconnect_args: {{timeot: 5}}",
        4,
        "connect_args: the pysqlite driver takes no option 'timeot'; did you mean 'timeout'?",
    ),
    (
        "sqlite-url-unknown-key",
        "sqlite",
        {},
        "url: sqlite:///lite.db?timeot=5",
        3,
        "url: the pysqlite driver takes no option 'timeot'; did you mean 'timeout'?",
    ),
    (
        "sqlite-wrong-type",
        "sqlite",
        {},
        "url: sqlite:///lite.db\nconnect_args: {{timeout: soon}}",
        4,
        "connect_args: the pysqlite driver takes a number for timeout, not 'soon'",
    ),
    (
        "duckdb-not-a-database",
        "duckdb",
        {},
        "duckdb: bad.duckdb",
        3,
        "connection 'db': the DuckDB file bad.duckdb cannot be opened: IO Error",
    ),
]


def _url(service: str, request, changes: dict) -> str:
    """The service's URL (PostgreSQL's with a password it ignores: it trusts 127.0.0.1) with `changes`."""
    if service not in ("postgresql", "mariadb"):
        return ""
    url = request.getfixturevalue("postgres_url" if service == "postgresql" else "mariadb_url")
    return _with(url, **({"password": SECRET} if service == "postgresql" else {}), **changes)


def _cases(cases: list[tuple]) -> list:
    """One case per engine in the default run; every case under MCPGEN_SLOW=1 (three commands each)."""
    quick = {"pg-unknown-key", "maria-url-unknown-charset", "sqlite-url-unknown-key", "duckdb-not-a-database"}
    quick |= {"pg-unreachable", "maria-wrong-password"}
    return [pytest.param(*c[1:], id=c[0], marks=() if c[0] in quick else pytest.mark.slow) for c in cases]


@pytest.mark.parametrize(("service", "changes", "connection", "line", "sentence"), _cases(WRONG_SETTINGS))
def test_a_wrong_setting_is_one_sentence_at_its_line_and_stops_the_start(
    tmp_path, request, service, changes, connection, line, sentence
):
    url = _url(service, request, changes)
    out = _cli(_project(tmp_path, connection.format(url=url)))
    for name, (code, text) in out.items():
        assert code != 0, (name, text)
        said = [x for x in text.splitlines() if sentence in x]
        assert len(said) == 1 and re.search(rf"mcpgen\.yaml:{line}:\d+: ", said[0]), (name, text)
    _assert_safe(out, *([url] if url else []), "987654321")


# (id, service, changes to its URL, the connection's YAML, what every command says); a server starts.
UNANSWERED = [
    ("pg-unreachable", "postgresql", {"port": 9}, "url: {url}", "connection 'db' is unavailable: Connection refused"),
    (
        "pg-wrong-database",
        "postgresql",
        {"database": "mcpgen_no_such_db"},
        "url: {url}",
        'database "mcpgen_no_such_db" does not exist',
    ),
    ("pg-wrong-user", "postgresql", {"username": "mcpgen_nobody"}, "url: {url}", 'role "mcpgen_nobody" does not exist'),
    (
        "pg-tls-unmet",
        "postgresql",
        {},
        "url: {url}?sslmode=require",
        "server does not support SSL, but SSL was required",
    ),
    ("maria-unreachable", "mariadb", {"port": 9}, "url: {url}\npassword: ${{OPT_PASSWORD}}", "Connection refused"),
    (
        "maria-wrong-password",
        "mariadb",
        {"username": "mcpgen_nobody"},
        "url: {url}\npassword: ${{OPT_PASSWORD}}",
        "Access denied for user 'mcpgen_nobody'",
    ),
    (
        "maria-tls-unmet",
        "mariadb",
        {},
        "url: {url}\nconnect_args: {{ssl_verify_cert: true}}",
        "SSL is required but the server doesn't support it",
    ),
    (
        "sqlite-missing-file",
        "sqlite",
        {},
        "url: sqlite:///nosuch.db",
        "connection 'db' is unavailable: unable to open database file",
    ),
]


@pytest.mark.parametrize(("service", "changes", "connection", "sentence"), _cases(UNANSWERED))
def test_a_database_that_does_not_answer_is_one_sentence_and_the_server_starts(
    tmp_path, request, service, changes, connection, sentence
):
    url = _url(service, request, changes)
    out = _cli(_project(tmp_path, connection.format(url=url)))
    assert out["validate"][0] == 1 and out["call"][0] == 1 and out["serve"][0] == 0, out
    for name, (_, text) in out.items():
        assert sentence in text, (name, text)
    assert "mcpgen.yaml:2:3: error: connection 'db'" in out["validate"][1]
    _assert_safe(out, *([url] if url else []))
