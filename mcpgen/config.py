"""The project file, mcpgen.yaml: named connections and defaults.

>>> expand_env("postgresql://u@${MCPGEN_DOC_HOST:-localhost}/db", {})
'postgresql://u@localhost/db'
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, StrictInt, Tag, field_validator, model_validator

from .spec import Strict, parse_duration

CONFIG_NAME = "mcpgen.yaml"
DEFAULT_MAX_ROWS = 1000
DEFAULT_TIMEOUT = 30.0
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
    threads: StrictInt | None = Field(None, ge=1)
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
    # PostgreSQL row-level security: setting name -> claim, set per call with set_config(..., true)
    claim_settings: dict[str, str] = {}

    @field_validator("claim_settings")
    @classmethod
    def _setting_names(cls, value):
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"claim setting {name!r} must be a custom setting name with a prefix, e.g. app.email")
        return value

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

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)


class HTTPSettings(Strict):
    """`serve --http` settings: token values are read from these environment variables."""

    tokens_env: list[str] = []
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []


class AuthConfig(Strict):
    """`serve --http` as an OAuth 2.1 resource server: JWT access tokens from `issuer` (see docs/auth.md)."""

    issuer: str = Field(pattern=r"^https?://")
    audience: str = Field(pattern=r"^https?://")  # this server's resource URL, e.g. https://mcp.example.com/mcp
    jwks_url: str | None = Field(None, pattern=r"^https?://")
    jwks_file: str | None = None
    scopes: list[str] = []  # every request needs all of these (403 insufficient_scope otherwise)
    algorithms: list[Literal["RS256", "ES256", "EdDSA"]] = Field(["RS256", "ES256", "EdDSA"], min_length=1)
    leeway: StrictInt | float = Field(30, ge=0, le=300)  # seconds of clock skew allowed on exp and nbf
    jwks_max_age: float | str = 300.0  # fetch the JWKS again after this long
    jwks_min_refresh: float | str = 10.0  # tokens with unknown key ids fetch it at most this often

    @field_validator("jwks_max_age", "jwks_min_refresh", mode="before")
    @classmethod
    def _duration(cls, value):
        return parse_duration(value)

    @model_validator(mode="after")
    def _one_key_source(self):
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise ValueError("give exactly one of jwks_url and jwks_file")
        return self


class AuditConfig(Strict):
    """One JSON line per tool call: on stderr, or in a file rotated at `max_bytes`."""

    sink: Literal["stderr", "file"] = "stderr"
    path: str | None = None
    max_bytes: StrictInt = Field(10 * 1024 * 1024, ge=1024)
    backups: StrictInt = Field(5, ge=0)
    hash_key_env: str | None = None  # sensitive arguments: HMAC-SHA256 with this key, else SHA-256

    @model_validator(mode="after")
    def _file_has_path(self):
        if (self.sink == "file") != (self.path is not None):
            raise ValueError("sink: file takes a path (and only it does)")
        return self


class TelemetryConfig(Strict):
    """OpenTelemetry traces and metrics (pip install 'mcpgen[otel]'), exported over OTLP/HTTP."""

    otlp_endpoint: str | None = Field(None, pattern=r"^https?://")  # else OTEL_EXPORTER_OTLP_ENDPOINT
    service_name: str = "mcpgen"
    enabled: StrictBool = True


class ProjectConfig(Strict):
    connections: dict[str, Connection] = {"default": DuckDBConnection()}
    defaults: Defaults = Defaults()
    http: HTTPSettings = HTTPSettings()
    auth: AuthConfig | None = None
    stdio_claims: dict[str, Any] = {}  # the one local user's claims, for from_claim parameters over stdio
    toolsets: dict[str, list[str]] = {}  # name -> tags; `serve --toolset NAME` serves tools with any of them
    audit: AuditConfig | None = None
    telemetry: TelemetryConfig | None = None
