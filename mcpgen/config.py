"""The project file, mcpgen.yaml: named connections and defaults.

>>> expand_env("postgresql://u@${MCPGEN_DOC_HOST:-localhost}/db", {})
'postgresql://u@localhost/db'
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from pydantic import Discriminator, Field, StrictInt, Tag, field_validator

from .spec import Strict, parse_cache, parse_duration

CONFIG_NAME = "mcpgen.yaml"
DEFAULT_MAX_ROWS = 1000
DEFAULT_TIMEOUT = 30.0
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024  # all cached answers of a project together
DEFAULT_MAX_BYTES = 1_000_000  # one answer: prose, table, charts and force text, as JSON characters
_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(text: str, environ=None) -> str:
    """Replace ${VAR} and ${VAR:-default} with values from the environment."""
    environ = os.environ if environ is None else environ

    def value(match: re.Match) -> str:
        name, default = match[1], match[2]
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ValueError(f"environment variable {name} is not set")

    return _ENV_RE.sub(value, text)


class DuckDBConnection(Strict):
    """An embedded DuckDB: a database file opened read-only, or ":memory:"."""

    duckdb: str = ":memory:"
    init: list[str] = []
    # One thread per query: a tool server runs many small queries at once, and they run in parallel with
    # each other (bench/bench_duckdb.py: 5-8% lower latency, more calls/s). null: DuckDB's default (all cores).
    threads: StrictInt | None = Field(1, ge=1)
    max_concurrent: StrictInt = Field(8, ge=1)  # queries at once; more wait up to queue_timeout
    queue_timeout: float | str = 10.0

    @field_validator("queue_timeout", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)


class URLConnection(Strict):
    """Any database SQLAlchemy reaches, by URL."""

    url: str
    password: str | None = None
    pool_size: StrictInt = Field(5, ge=1)
    max_overflow: StrictInt = Field(5, ge=0)
    pool_timeout: float | str = 10.0
    connect_args: dict[str, Any] = {}

    @field_validator("pool_timeout", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)


# The model is chosen by key, so that errors name the fields of the right kind.
Connection = Annotated[
    Annotated[DuckDBConnection, Tag("duckdb")] | Annotated[URLConnection, Tag("url")],
    Discriminator(lambda v: "url" if isinstance(v, dict) and "url" in v else "duckdb"),
]


class Defaults(Strict):
    max_rows: StrictInt = Field(DEFAULT_MAX_ROWS, ge=1)
    timeout: float | str = DEFAULT_TIMEOUT
    cache: float | str | bool | None = None  # a spec's `cache:` when it sets none; None or false: off
    cache_max_bytes: StrictInt = Field(DEFAULT_CACHE_BYTES, ge=0)
    max_bytes: StrictInt = Field(DEFAULT_MAX_BYTES, ge=1000)  # a spec's `max_bytes` when it sets none

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)

    @field_validator("cache", mode="before")
    @classmethod
    def _cache(cls, value):
        return parse_cache(value)


class HTTPSettings(Strict):
    """`serve --http` settings: token values are read from these environment variables."""

    tokens_env: list[str] = []
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []


class CursorSettings(Strict):
    """Cursors of paged tools: signed with the key in `secret_env` (replicas that share it accept each
    other's cursors), else with a random key per process; valid for `ttl`."""

    secret_env: str | None = None
    ttl: float | str = 3600.0

    @field_validator("ttl", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)


class ProjectConfig(Strict):
    connections: dict[str, Connection] = {"default": DuckDBConnection()}
    defaults: Defaults = Defaults()
    http: HTTPSettings = HTTPSettings()
    cursors: CursorSettings = CursorSettings()
