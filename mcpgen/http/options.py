"""The options of `serve --http`, and what makes them safe: a bind to anything but a loopback address
refuses to start without a token, unless the user passes `--insecure-no-auth`; the Host and Origin
values accepted against DNS rebinding.

>>> allowed_hosts("127.0.0.1", 8000, ["mcp.example.com"])[:3]
['127.0.0.1:8000', 'localhost:8000', '[::1]:8000']
>>> is_loopback("0.0.0.0"), is_loopback("::1"), is_loopback("localhost")
(False, True, True)
"""

from __future__ import annotations

import ipaddress
import logging
import os
from dataclasses import dataclass, field

from ..errors import MCPGenError
from ..limits import MAX_BODY_BYTES
from ..spec.config import AuthConfig
from .connections import ConnectionLimits

logger = logging.getLogger("mcpgen")

MIN_TOKEN_LENGTH = 16
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class HTTPSetupError(MCPGenError):
    """The HTTP options cannot be served safely (the message says what to change)."""


@dataclass
class HTTPOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    tokens: list[str] = field(default_factory=list, repr=False)
    allow_hosts: list[str] = field(default_factory=list)
    allow_origins: list[str] = field(default_factory=list)
    insecure_no_auth: bool = False
    max_body: int = MAX_BODY_BYTES
    path: str = "/mcp"
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    auth: AuthConfig | None = None  # OAuth: JWT access tokens (mcpgen.yaml's `auth:`)
    root: str = "."  # the project root, for auth.jwks_file


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_header(host: str) -> str:
    """A bind address as it appears in a Host header (IPv6 in brackets)."""
    bare = host.strip("[]")
    try:
        return f"[{bare}]" if ipaddress.ip_address(bare).version == 6 else bare
    except ValueError:
        return bare


def allowed_hosts(host: str, port: int, extra: list[str]) -> list[str]:
    """Host header values accepted: loopback names on our port, the bind address, and `extra`.

    An `extra` name without a port is accepted on any port and with no port at all."""
    out = [f"{name}:{port}" for name in _LOOPBACK_NAMES]
    wildcard = host in ("0.0.0.0", "::", "[::]", "")
    if not wildcard and not is_loopback(host):
        out.append(f"{host_header(host)}:{port}")
    for name in extra:
        name = name.strip()
        if not name:
            continue
        if (name.startswith("[") and "]:" in name) or (not name.startswith("[") and ":" in name):
            out.append(name)  # already has a port (or a :* wildcard)
        else:
            out += [name, f"{name}:*"]
    return list(dict.fromkeys(out))


def allowed_origins(host: str, port: int, extra: list[str]) -> list[str]:
    """Origin header values accepted (requests without Origin, i.e. not from a browser, always pass)."""
    hosts = [f"{name}:{port}" for name in _LOOPBACK_NAMES]
    if host not in ("0.0.0.0", "::", "[::]", "") and not is_loopback(host):
        hosts.append(f"{host_header(host)}:{port}")
    out = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    out += [o.strip().rstrip("/") for o in extra if o.strip()]
    return list(dict.fromkeys(out))


def read_tokens(env_names: list[str], environ=None) -> list[str]:
    """Token values from environment variables; a named variable that is unset or empty is an error."""
    environ = os.environ if environ is None else environ
    tokens = []
    for name in env_names:
        value = environ.get(name, "").strip()
        if not value:
            raise HTTPSetupError(f"environment variable {name} (named for a bearer token) is not set or empty")
        if len(value) < MIN_TOKEN_LENGTH:
            logger.warning(
                "the token in %s is shorter than %d characters; use a long random value", name, MIN_TOKEN_LENGTH
            )
        tokens.append(value)
    return tokens


def check_options(options: HTTPOptions) -> None:
    """Refuse settings that would expose the tools to anyone who can reach the port."""
    if not 0 < options.port < 65536:
        raise HTTPSetupError(f"port {options.port} is not between 1 and 65535")
    if options.max_body <= 0:
        raise HTTPSetupError("the request body cap must be a positive number of bytes")
    if min(options.limits.header_timeout, options.limits.body_timeout) <= 0 or options.limits.max_connections < 1:
        raise HTTPSetupError("the header and body timeouts and the connection limit must be positive")
    if not is_loopback(options.host) and not options.tokens and not options.auth and not options.insecure_no_auth:
        raise HTTPSetupError(
            f"refusing to serve on {options.host} (not a loopback address) without a bearer token: "
            "set --auth-token-env VAR (or http.tokens_env in mcpgen.yaml), or pass --insecure-no-auth "
            "if something in front of mcpgen already authenticates every request"
        )
