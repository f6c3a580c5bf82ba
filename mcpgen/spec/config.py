"""The project file, mcpgen.yaml: named connections and defaults.

>>> expand_env("postgresql://u@${MCPGEN_DOC_HOST:-localhost}/db", {})
'postgresql://u@localhost/db'
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, StrictInt, Tag, field_validator, model_validator

from .models import AppChoice, CacheTTL, DownloadChoice, Duration, Icon, SQLDialect, Strict

CONFIG_NAME = "mcpgen.yaml"
DEFAULT_MAX_ROWS = 1000
DEFAULT_TIMEOUT = 30.0
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024  # all cached answers of a project together
DEFAULT_MAX_BYTES = 1_000_000  # one answer: prose, table, charts and force text, as UTF-8 JSON bytes
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


def required_names(text: str) -> list[str]:
    """The environment variables `text` reads with no default (`${VAR}`, not `${VAR:-default}`).

    >>> required_names("postgresql://${PGUSER}@${PGHOST:-localhost}/db?password=${PGPASSWORD}")
    ['PGUSER', 'PGPASSWORD']
    """
    return [m[1] for m in _ENV_RE.finditer(text) if m[2] is None]


class DuckDBConnection(Strict):
    """An embedded DuckDB: a database file opened read-only, or ":memory:"."""

    duckdb: str = Field(
        default=":memory:",
        description="Path of a DuckDB database file (opened read-only), relative to mcpgen.yaml, or :memory:.",
    )
    init: list[str] = Field(
        default=[], description="Statements run once at start-up, before lock-down (e.g. CREATE VIEW over files)."
    )
    # "auto" is DuckDB's default, every core: served over stdio, even a 10-row query on a small table
    # answers sooner on every core than on one once other processes want the CPU, alone or 8 at once
    # (bench/bench_vs_handwritten.py --busy 2), and a big scan gains them (bench/bench_duckdb_threads.py).
    threads: Annotated[StrictInt, Field(ge=1)] | Literal["auto"] | None = Field(
        default="auto",
        description="DuckDB threads per query: auto (the default) or null for DuckDB's default, every core; "
        "or a number.",
    )
    max_concurrent: StrictInt = Field(
        default=8, ge=1, description="Queries at once on this connection; more wait up to queue_timeout."
    )
    queue_timeout: Duration = Field(
        default=10.0,
        description="How long the queue for a free slot may stand still (no query finishing) before a waiting call gets a clear error, e.g. 10s.",
    )


class URLConnection(Strict):
    """Any database SQLAlchemy reaches, by URL."""

    url: str = Field(description="SQLAlchemy URL of the database; ${VAR} and ${VAR:-default} read the environment.")
    password: str | None = Field(
        default=None, description="The password, kept out of the URL; ${VAR} reads it from the environment."
    )
    pool_size: StrictInt = Field(default=5, ge=1, description="Connections kept open in the pool.")
    max_overflow: StrictInt = Field(default=5, ge=0, description="Extra connections opened when the pool is busy.")
    pool_timeout: Duration = Field(default=10.0, description="How long a call waits for a pooled connection, e.g. 10s.")
    connect_args: dict[str, Any] = Field(default={}, description="Passed to the database driver.")
    claim_settings: dict[str, str] = Field(
        default={},
        description="PostgreSQL row-level security: {setting: claim}, set per call with set_config(setting, claim, true).",
    )
    privileged_role: Literal["refuse", "warn"] | None = Field(
        default=None,
        description="PostgreSQL, MariaDB/MySQL: when the database role may write, replicate, reach the server's "
        "files or is a superuser, refuse the connection (the default) or warn and serve anyway. "
        "Unset: the MCPGEN_PRIVILEGED_ROLE environment variable, else refuse.",
    )

    @field_validator("claim_settings")
    @classmethod
    def _setting_names(cls, value):
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"claim setting {name!r} must be a custom setting name with a prefix, e.g. app.email")
        return value


class SparkConnection(Strict):
    """An Apache Spark cluster through Spark Connect (see docs/databases.md)."""

    spark: str = Field(
        description="Spark Connect URL, sc://host:15002; ${VAR} and ${VAR:-default} read the environment."
    )
    database: str | None = Field(
        default=None, description="The database (schema) unqualified table names are read from; default: the server's."
    )
    max_concurrent: StrictInt = Field(
        default=4, ge=1, description="Queries at once on this connection; more wait up to queue_timeout."
    )
    queue_timeout: Duration = Field(
        default=10.0,
        description="How long the queue for a free slot may stand still (no query finishing) before a waiting call gets a clear error, e.g. 10s.",
    )
    conf: dict[str, str] = Field(default={}, description="Spark SQL settings for mcpgen's session.")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return next((f"<{key}>" for key in ("url", "spark") if key in value), "<duckdb>")
    return "<duckdb>"


# The model is chosen by key, so that errors name the fields of the right kind.
Connection = Annotated[
    Annotated[DuckDBConnection, Tag("<duckdb>")]
    | Annotated[URLConnection, Tag("<url>")]
    | Annotated[SparkConnection, Tag("<spark>")],
    Discriminator(_kind),
]


class Defaults(Strict):
    max_rows: StrictInt = Field(
        default=DEFAULT_MAX_ROWS, ge=1, description="Cap on rows a tool returns, unless its spec sets max_rows."
    )
    timeout: Duration = Field(
        default=DEFAULT_TIMEOUT, description="Query time limit, unless a spec sets timeout, e.g. 30s."
    )
    cache: CacheTTL | None = Field(
        default=None, description="The cache of specs that set none, e.g. 60s; default: off."
    )
    cache_max_bytes: StrictInt = Field(
        default=DEFAULT_CACHE_BYTES, ge=0, description="Budget of all cached answers together, in JSON bytes."
    )
    max_bytes: StrictInt = Field(
        default=DEFAULT_MAX_BYTES, ge=1000, description="The max_bytes of specs that set none."
    )
    download: DownloadChoice | None = Field(
        default=None,
        description="The download of specs that set none: true, or {formats, ttl, max_rows, max_bytes}; default: off.",
    )


class HTTPSettings(Strict):
    """`serve --http` settings: token values are read from these environment variables."""

    tokens_env: list[str] = Field(
        default=[], description="Names of environment variables holding bearer tokens for serve --http."
    )
    allowed_hosts: list[str] = Field(default=[], description="Extra Host values accepted over HTTP.")
    allowed_origins: list[str] = Field(default=[], description="Extra browser Origin values accepted over HTTP.")


class CursorSettings(Strict):
    """Cursors of paged tools: signed with the key in `secret_env` (replicas that share it accept each
    other's cursors), else with a random key per process; valid for `ttl`."""

    secret_env: str | None = Field(
        default=None, description="Environment variable holding the key (16+ characters) that signs cursors."
    )
    ttl: Duration = Field(default=3600.0, description="How long a cursor stays valid, e.g. 1h.")


class AuthConfig(Strict):
    """`serve --http` as an OAuth 2.1 resource server: JWT access tokens from `issuer` (see docs/auth.md)."""

    issuer: str = Field(pattern=r"^https?://", description="The token issuer: exactly the tokens' iss claim.")
    audience: str = Field(
        pattern=r"^https?://", description="This server's resource URL, e.g. https://mcp.example.com/mcp: the aud."
    )
    jwks_url: str | None = Field(default=None, pattern=r"^https?://", description="Where the issuer's JWKS is.")
    jwks_file: str | None = Field(default=None, description="A JWKS file instead, relative to mcpgen.yaml.")
    scopes: list[str] = Field(default=[], description="Scopes every request needs (403 insufficient_scope).")
    algorithms: list[Literal["RS256", "ES256", "EdDSA"]] = Field(
        default=["RS256", "ES256", "EdDSA"], min_length=1, description="Signature algorithms accepted."
    )
    leeway: StrictInt | float = Field(
        default=30, ge=0, le=300, description="Seconds of clock skew allowed on exp and nbf."
    )
    jwks_max_age: Duration = Field(default=300.0, description="Fetch the JWKS again after this long, e.g. 5m.")
    jwks_min_refresh: Duration = Field(
        default=10.0, description="Tokens with unknown key ids fetch the JWKS at most this often."
    )

    @model_validator(mode="after")
    def _one_key_source(self):
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise ValueError("give exactly one of jwks_url and jwks_file")
        return self


class AuditConfig(Strict):
    """One JSON line per tool call: on stderr, or in a file rotated at `max_bytes`."""

    sink: Literal["stderr", "file"] = Field(default="stderr", description="stderr, or file (with path).")
    path: str | None = Field(default=None, description="The audit file, for sink: file.")
    max_bytes: StrictInt = Field(default=10 * 1024 * 1024, ge=1024, description="Rotate the file at this size.")
    backups: StrictInt = Field(default=5, ge=0, description="Rotated files kept.")
    hash_key_env: str | None = Field(
        default=None, description="Environment variable with a key: sensitive arguments are HMAC-SHA256, else SHA-256."
    )

    @model_validator(mode="after")
    def _file_has_path(self):
        if (self.sink == "file") != (self.path is not None):
            raise ValueError("sink: file takes a path (and only it does)")
        return self


class TelemetryConfig(Strict):
    """OpenTelemetry traces and metrics (pip install 'mcpgen[otel]'), exported over OTLP/HTTP."""

    otlp_endpoint: str | None = Field(
        default=None, pattern=r"^https?://", description="OTLP/HTTP endpoint; else OTEL_EXPORTER_OTLP_ENDPOINT."
    )
    service_name: str = Field(default="mcpgen", description="The service.name resource attribute.")
    enabled: StrictBool = Field(default=True, description="false: configured but off.")


# Defaults are built with model_construct (their fields' own defaults, nothing to check): building them
# by validation would build each model's validator at import, which a call of a kept project never needs.
class ProjectConfig(Strict):
    dialect: SQLDialect = Field(
        default="duckdb", description="The SQL dialect specs are written in, unless a spec says otherwise."
    )
    connections: dict[str, Connection] = Field(
        default={"default": DuckDBConnection.model_construct()},
        description="Named connections: an embedded DuckDB, or any database by SQLAlchemy URL.",
    )
    defaults: Defaults = Field(default=Defaults.model_construct(), description="Defaults for every spec.")
    http: HTTPSettings = Field(default=HTTPSettings.model_construct(), description="serve --http settings.")
    cursors: CursorSettings = Field(
        default=CursorSettings.model_construct(), description="How page cursors are signed."
    )
    auth: AuthConfig | None = Field(
        default=None, description="serve --http as an OAuth resource server: JWT access tokens from your IdP."
    )
    stdio_claims: dict[str, Any] = Field(
        default={}, description="The local user's claims over stdio, for from_claim parameters."
    )
    toolsets: dict[str, list[str]] = Field(default={}, description="Named sets of tags, for serve --toolset NAME.")
    audit: AuditConfig | None = Field(default=None, description="One JSON line per call: stderr or a rotating file.")
    telemetry: TelemetryConfig | None = Field(
        default=None, description="OpenTelemetry traces and metrics over OTLP (pip install 'mcpgen[otel]')."
    )
    app: AppChoice = Field(
        default=True, description="The MCP App for every tool: true, false, or {chart_height, theme}."
    )
    instructions: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        description="What clients tell the model about this server; default: a summary of the tools.",
    )
    icons: list[Icon] = Field(default=[], description="The server's icons, and those of every tool that sets none.")


# A name that says its value is a secret (an environment variable's, a driver option's, an audited argument's):
# license_key, privateKey, api-key, KEY, passwd, pwd, ...
SECRET_NAME = re.compile(r"PASS|PWD|SECRET|TOKEN|KEY|CREDENTIAL", re.IGNORECASE)
# Driver options whose value names a file (TLS certificates and keys, libpq's passfile): a path, not a secret,
# though some are named `key`.
FILE_OPTIONS = ("ssl_ca", "ssl_cert", "ssl_key", "sslrootcert", "sslcert", "sslkey", "sslcrl", "passfile")


def secret_options(connect_args: dict[str, Any]) -> list[str]:
    """The values of the driver options named like a secret, to keep out of messages.

    >>> secret_options({"password": "hunter2", "ssl_key": "/etc/k.pem", "api_token": 1234, "charset": "utf8"})
    ['hunter2', '1234']
    """
    return [
        str(value)
        for name, value in connect_args.items()
        if SECRET_NAME.search(name)
        and name not in FILE_OPTIONS
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
    ]


def environment_needed(config: ProjectConfig) -> dict[str, bool]:
    """The environment variables serving this project needs set, each with whether it holds a secret:
    those its connections read without a default, the cursor key and the audit key (a client that
    starts the server must pass them). `serve --http`'s tokens are the server's, not a client's.

    >>> environment_needed(ProjectConfig.model_validate(
    ...     {"connections": {"db": {"url": "postgresql://app@${DB_HOST}/x", "password": "${DB_PASSWORD}"}},
    ...      "cursors": {"secret_env": "CURSOR_KEY"}}))
    {'DB_HOST': False, 'DB_PASSWORD': True, 'CURSOR_KEY': True}
    """
    needed: dict[str, bool] = {}
    for connection in config.connections.values():
        for field_name in ("url", "spark", "password"):
            for name in required_names(getattr(connection, field_name, None) or ""):
                needed[name] = needed.get(name, False) or field_name == "password" or bool(SECRET_NAME.search(name))
    for key in (config.cursors.secret_env, config.audit.hash_key_env if config.audit else None):
        if key:
            needed[key] = True
    return needed
