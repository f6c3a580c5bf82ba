"""The database services the tests use: PostgreSQL and MariaDB on 127.0.0.1, and CSV loading.

A service that does not answer skips the tests that need it, with the reason; under
MCPGEN_REQUIRE_SERVICES=1 (set by .ci/run) it fails them instead.

URLs can be overridden with MCPGEN_TEST_POSTGRES_URL and MCPGEN_TEST_MARIADB_URL.
"""

from __future__ import annotations

import csv
import os
import secrets
import sqlite3
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_URL = os.environ.get("MCPGEN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MARIADB_URL = os.environ.get("MCPGEN_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
URLS = {"postgresql": POSTGRES_URL, "mariadb": MARIADB_URL}

# cities.csv: geonameid,name,country_code,admin1_code,population,latitude,longitude,timezone
CITY_COLUMNS = ["geonameid", "name", "country_code", "admin1_code", "population", "latitude", "longitude", "timezone"]
_CITY_TYPES = {
    "postgresql": ["BIGINT", "TEXT", "TEXT", "TEXT", "BIGINT", "DOUBLE PRECISION", "DOUBLE PRECISION", "TEXT"],
    "mariadb": ["BIGINT", "VARCHAR(200)", "VARCHAR(8)", "VARCHAR(32)", "BIGINT", "DOUBLE", "DOUBLE", "VARCHAR(64)"],
    "sqlite": ["INTEGER", "TEXT", "TEXT", "TEXT", "INTEGER", "REAL", "REAL", "TEXT"],
}


# (email, id, amount): the orders of two users, for the row-level security and claim tests
ORDERS = [("alice@example.com", 1, 10.0), ("alice@example.com", 2, 20.0), ("bob@example.com", 3, 5.0)]


def services_required() -> bool:
    return os.environ.get("MCPGEN_REQUIRE_SERVICES") == "1"


@cache
def _absent(service: str) -> str | None:
    """Why `service` cannot be used, or None when it answers."""
    try:
        with connect(service) as con:
            cur = con.cursor()
            cur.execute("SELECT 1")
            cur.fetchall()
    except ImportError as exc:
        return f"{service}: the driver is not installed ({exc.name}); pip install -e '.[test]'"
    except Exception as exc:  # any failure to connect means: not available here
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"{service} is not reachable at {_where(service)}: {first}"
    return None


def require(service: str) -> str:
    """The SQLAlchemy URL of a running `service`, else skip (or fail under MCPGEN_REQUIRE_SERVICES=1)."""
    reason = _absent(service)
    if reason:
        if services_required():
            pytest.fail(f"MCPGEN_REQUIRE_SERVICES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return URLS[service]


def _where(service: str) -> str:
    from sqlalchemy.engine import make_url

    url = make_url(URLS[service])
    return f"{url.host}:{url.port}/{url.database}"


def connect(service: str):
    """A plain DB-API connection (psycopg or pymysql) to `service`, autocommit on."""
    from sqlalchemy.engine import make_url

    url = make_url(URLS[service])
    if service == "postgresql":
        import psycopg

        return psycopg.connect(
            host=url.host,
            port=url.port or 5432,
            user=url.username,
            password=url.password,
            dbname=url.database,
            autocommit=True,
            connect_timeout=3,
        )
    import pymysql

    return pymysql.connect(
        host=url.host,
        port=url.port or 3306,
        user=url.username,
        password=url.password or "",
        database=url.database,
        autocommit=True,
        connect_timeout=3,
        charset="utf8mb4",
        ssl_disabled=True,  # the test service has no TLS: PyMySQL would build a TLS context per connection (~40 ms)
    )


@contextmanager
def granting():
    """A PostgreSQL connection in a transaction that holds the test sessions' one advisory lock on grants: a
    GRANT or REVOKE on the database or on schema public (DROP OWNED too) rewrites that one catalogue row, and
    two sessions doing so at once fail ("tuple concurrently updated")."""
    with connect("postgresql") as con, con.transaction():
        con.execute("SET LOCAL lock_timeout = '60s'")
        con.execute("SELECT pg_advisory_xact_lock(hashtext('mcpgen tests: grants'))")
        yield con


CITIES_CSV = ROOT / "examples" / "data" / "cities.csv"


def read_cities(path: Path) -> list[tuple]:
    with open(path, newline="", encoding="utf-8") as f:
        return [
            (
                int(r["geonameid"]),
                r["name"],
                r["country_code"],
                r["admin1_code"],
                int(r["population"]),
                float(r["latitude"]),
                float(r["longitude"]),
                r["timezone"],
            )
            for r in csv.DictReader(f)
        ]


def unique_name(prefix: str) -> str:
    """A table name no concurrent test session uses."""
    return f"{prefix}_{secrets.token_hex(4)}"


def load_cities(service: str, table: str, rows: list[tuple], sqlite_path: Path | None = None) -> None:
    """Create `table` with the cities columns in `service` ("postgresql", "mariadb" or "sqlite") and fill it."""
    columns = ", ".join(f"{c} {t}" for c, t in zip(CITY_COLUMNS, _CITY_TYPES[service]))
    if service == "sqlite":
        con = sqlite3.connect(sqlite_path)
        with con:
            con.execute(f"CREATE TABLE {table} ({columns})")
            con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(CITY_COLUMNS))})", rows)
        con.close()
        return
    with connect(service) as con:
        cur = con.cursor()
        if service == "postgresql":
            cur.execute(f"CREATE TABLE {table} ({columns})")
            with cur.copy(f"COPY {table} ({', '.join(CITY_COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cur.execute(f"CREATE TABLE {table} ({columns}) CHARACTER SET utf8mb4")
            cur.executemany(f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(CITY_COLUMNS))})", rows)


def drop_table(service: str, table: str) -> None:
    try:
        with connect(service) as con:
            con.cursor().execute(f"DROP TABLE IF EXISTS {table}")
    except Exception:  # the service went away: nothing left to clean
        pass
